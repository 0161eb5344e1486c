//! Importing Alibaba's `cluster-trace-gpu-v2023` ("openb") CSV files as Kubernetes objects.
//!
//! Nodes (`sn,cpu_milli,memory_mib,gpu,model`) become Nodes with allocatable `cpu`, `memory`,
//! `pods: 110`, `nvidia.com/gpu` (device count) and `alibabacloud.com/gpu-milli`
//! (1000 per device), labelled `alibabacloud.com/gpu-card-model=<model>`.
//! Pods (`name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]`) become pending Pods in
//! namespace `default` with one container requesting `cpu` and `memory`, plus either
//! `nvidia.com/gpu: num_gpu` (whole GPUs, `gpu_milli == 1000`) or
//! `alibabacloud.com/gpu-milli: gpu_milli` (a share of one GPU); a non-empty `gpu_spec`
//! (`V100M16|V100M32`) becomes required node affinity `alibabacloud.com/gpu-card-model In (...)`.
//! Times, QoS and phase are not used: every pod is pending, as in the FGD paper's replay.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{Cluster, SimError};
use crate::model::{LABEL_GPU_MODEL, RESOURCE_GPU, RESOURCE_GPU_MILLI};

/// Pod capacity given to imported nodes (the kubelet's default `maxPods`).
pub const OPENB_NODE_MAX_PODS: i64 = 110;

struct Csv<'a> {
    file: &'a str,
    header: Vec<&'a str>,
    rows: Vec<(usize, Vec<&'a str>)>,
}

/// The rows of a CSV file, or `None` (and a warning in `cluster`) when it has none.
fn read_csv<'a>(
    cluster: &mut Cluster,
    file: &'a str,
    text: &'a str,
) -> Result<Option<Csv<'a>>, SimError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some(header) = lines
        .next()
        .map(|(_, l)| l.trim().split(',').collect::<Vec<_>>())
    else {
        cluster
            .warnings
            .push(format!("{file}: nothing read: the file is empty"));
        return Ok(None);
    };
    let mut rows = Vec::new();
    for (i, l) in lines {
        let cols: Vec<&str> = l.trim().split(',').collect();
        if cols.len() != header.len() {
            return Err(SimError::Csv {
                file: file.into(),
                line: i + 1,
                message: format!("{} columns, the header has {}", cols.len(), header.len()),
            });
        }
        rows.push((i + 1, cols));
    }
    if rows.is_empty() {
        cluster.warnings.push(format!(
            "{file}: nothing read: the file has a header and no rows"
        ));
        return Ok(None);
    }
    Ok(Some(Csv { file, header, rows }))
}

impl Csv<'_> {
    fn col(&self, name: &str) -> Result<usize, SimError> {
        self.header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| SimError::Csv {
                file: self.file.into(),
                line: 1,
                message: format!("missing column {name:?}"),
            })
    }

    fn int(&self, line: usize, row: &[&str], col: usize) -> Result<i64, SimError> {
        let v = row[col].trim();
        v.parse::<i64>()
            .ok()
            .filter(|x| *x >= 0)
            .ok_or_else(|| SimError::Csv {
                file: self.file.into(),
                line,
                message: format!(
                    "column {}: {v:?} is not a non-negative integer",
                    self.header[col]
                ),
            })
    }
}

fn quantities(pairs: &[(&str, String)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity(v.clone())))
        .collect()
}

/// Parse an openb node list into Nodes. A file without rows adds a warning.
///
/// # Errors
/// [`SimError::Csv`] naming the file, line and column of a malformed row; [`SimError::Node`]
/// for a node name read twice (naming both places).
pub fn parse_nodes(cluster: &mut Cluster, file: &str, text: &str) -> Result<(), SimError> {
    let Some(csv) = read_csv(cluster, file, text)? else {
        return Ok(());
    };
    let (sn, cpu, mem, gpu, model) = (
        csv.col("sn")?,
        csv.col("cpu_milli")?,
        csv.col("memory_mib")?,
        csv.col("gpu")?,
        csv.col("model")?,
    );
    for (line, row) in &csv.rows {
        let name = row[sn].trim().to_string();
        let gpus = csv.int(*line, row, gpu)?;
        let mut labels = BTreeMap::from([("kubernetes.io/hostname".to_string(), name.clone())]);
        let m = row[model].trim();
        if !m.is_empty() && m != "nan" {
            labels.insert(LABEL_GPU_MODEL.to_string(), m.to_string());
        }
        let mut res = vec![
            ("cpu", format!("{}m", csv.int(*line, row, cpu)?)),
            ("memory", format!("{}Mi", csv.int(*line, row, mem)?)),
            ("pods", OPENB_NODE_MAX_PODS.to_string()),
        ];
        if gpus > 0 {
            let milli = gpus.checked_mul(1000).ok_or_else(|| SimError::Csv {
                file: file.into(),
                line: *line,
                message: format!("column gpu: {gpus} GPUs is out of range"),
            })?;
            res.push((RESOURCE_GPU, gpus.to_string()));
            res.push((RESOURCE_GPU_MILLI, milli.to_string()));
        }
        let q = quantities(&res);
        let here = format!("{file}:{line}");
        if let Some(first) = cluster.node_origins.get(&name) {
            return Err(SimError::Node(format!(
                "{here}: node {name} already exists (first read from {first})"
            )));
        }
        cluster.node_origins.insert(name.clone(), here);
        cluster.nodes.push(core::Node {
            metadata: ObjectMeta {
                name: Some(name),
                labels: Some(labels),
                ..Default::default()
            },
            spec: Some(core::NodeSpec::default()),
            status: Some(core::NodeStatus {
                capacity: Some(q.clone()),
                allocatable: Some(q),
                ..Default::default()
            }),
        });
    }
    Ok(())
}

/// Parse an openb pod list into pending Pods for `scheduler_name`. A file without rows adds a
/// warning.
///
/// # Errors
/// [`SimError::Csv`] naming the file, line and column of a malformed row (including a share of
/// a GPU requested on more than one device, which the trace never does).
pub fn parse_pods(
    cluster: &mut Cluster,
    file: &str,
    text: &str,
    scheduler_name: &str,
) -> Result<(), SimError> {
    let Some(csv) = read_csv(cluster, file, text)? else {
        return Ok(());
    };
    let (name_c, cpu, mem, num_gpu, gpu_milli) = (
        csv.col("name")?,
        csv.col("cpu_milli")?,
        csv.col("memory_mib")?,
        csv.col("num_gpu")?,
        csv.col("gpu_milli")?,
    );
    let spec_c = csv.col("gpu_spec").ok();
    for (line, row) in &csv.rows {
        let n = csv.int(*line, row, num_gpu)?;
        let milli = csv.int(*line, row, gpu_milli)?;
        let mut res = vec![
            ("cpu", format!("{}m", csv.int(*line, row, cpu)?)),
            ("memory", format!("{}Mi", csv.int(*line, row, mem)?)),
        ];
        if n > 0 && milli >= 1000 {
            res.push((RESOURCE_GPU, n.to_string()));
        } else if n == 1 && milli > 0 {
            res.push((RESOURCE_GPU_MILLI, milli.to_string()));
        } else if n > 1 {
            return Err(SimError::Csv {
                file: file.into(),
                line: *line,
                message: format!(
                    "num_gpu {n} with gpu_milli {milli}: a GPU share must be on one GPU"
                ),
            });
        }
        let q = quantities(&res);
        let affinity = spec_c
            .map(|c| row[c].trim())
            .filter(|s| !s.is_empty() && *s != "nan")
            .map(|s| core::Affinity {
                node_affinity: Some(core::NodeAffinity {
                    required_during_scheduling_ignored_during_execution: Some(core::NodeSelector {
                        node_selector_terms: vec![core::NodeSelectorTerm {
                            match_expressions: Some(vec![core::NodeSelectorRequirement {
                                key: LABEL_GPU_MODEL.into(),
                                operator: "In".into(),
                                values: Some(s.split('|').map(|m| m.trim().to_string()).collect()),
                            }]),
                            match_fields: None,
                        }],
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            });
        cluster.pods.push(core::Pod {
            metadata: ObjectMeta {
                name: Some(row[name_c].trim().to_string()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(core::PodSpec {
                scheduler_name: Some(scheduler_name.to_string()),
                affinity,
                containers: vec![core::Container {
                    name: "main".into(),
                    image: Some("openb-task".into()),
                    resources: Some(core::ResourceRequirements {
                        limits: Some(
                            q.iter()
                                .filter(|(k, _)| k.contains('/'))
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect(),
                        ),
                        requests: Some(q),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: None,
        });
    }
    Ok(())
}

/// Read an openb node list file.
///
/// # Errors
/// [`SimError::Read`] or [`SimError::Csv`].
pub fn read_nodes(cluster: &mut Cluster, path: &Path) -> Result<(), SimError> {
    let text = super::read_text(path)?;
    parse_nodes(cluster, &path.display().to_string(), &text)
}

/// Read an openb pod list file.
///
/// # Errors
/// [`SimError::Read`] or [`SimError::Csv`].
pub fn read_pods(cluster: &mut Cluster, path: &Path, scheduler_name: &str) -> Result<(), SimError> {
    let text = super::read_text(path)?;
    parse_pods(cluster, &path.display().to_string(), &text, scheduler_name)
}
