//! The live cluster as `simulate` and `explain` read it: read-only LISTs of every kind the
//! scheduling plugins need, turned into one `v1 List` document (what `kubectl get -o json`
//! of those kinds prints), so that a live run decodes exactly as `simulate --cluster` on a dump
//! of the same objects; and the side-by-side comparison of several policies.

use std::collections::BTreeMap;
use std::io::{self, Write};

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::api::{Api, ListParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use scheduler::escape::escape_control_line;
use scheduler::sim::{PodStatus, Simulation, Summary};

/// Every object of kind `K` (cluster-wide), as JSON with `apiVersion` and `kind`.
async fn list_all<K>(client: &kube::Client) -> Result<Vec<Value>, kube::Error>
where
    K: kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .iter()
        .filter_map(|o| serde_json::to_value(o).ok())
        .collect())
}

/// The live cluster as one `v1 List` JSON document: nodes and pods (required: an error names
/// the kind), then Services, ReplicationControllers, ReplicaSets, StatefulSets, Namespaces,
/// PersistentVolumes, PersistentVolumeClaims, StorageClasses and CSINodes. A kind that cannot be
/// listed, e.g. for lack of RBAC, is left out with a warning in the returned list. Live pods
/// carry `spec.priority` (set at admission), so PriorityClasses are not needed; PodDisruption-
/// Budgets are not read yet, so a what-if preemption ignores them.
///
/// # Errors
/// The kind and the API error when nodes or pods cannot be listed.
pub async fn snapshot(client: &kube::Client) -> Result<(String, Vec<String>), String> {
    let mut items = Vec::new();
    let mut warnings = Vec::new();
    items.extend(
        list_all::<Node>(client)
            .await
            .map_err(|e| format!("listing nodes: {e}"))?,
    );
    items.extend(
        list_all::<Pod>(client)
            .await
            .map_err(|e| format!("listing pods: {e}"))?,
    );
    macro_rules! optional {
        ($k:ty, $what:expr) => {
            match list_all::<$k>(client).await {
                Ok(v) => items.extend(v),
                Err(e) => warnings.push(format!("listing {}: {e}; left out", $what)),
            }
        };
    }
    optional!(Service, "services");
    optional!(ReplicationController, "replicationcontrollers");
    optional!(ReplicaSet, "replicasets");
    optional!(StatefulSet, "statefulsets");
    optional!(Namespace, "namespaces");
    optional!(PersistentVolume, "persistentvolumes");
    optional!(PersistentVolumeClaim, "persistentvolumeclaims");
    optional!(StorageClass, "storageclasses");
    optional!(CSINode, "csinodes");
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    Ok((list.to_string(), warnings))
}

/// One policy's run in a comparison.
pub struct PolicyRun {
    /// The policy's name (its file name).
    pub name: String,
    /// Pod (`namespace/name`) → node it went to, for the pods this run scheduled or that were
    /// already assigned; `None` when it stayed pending.
    pub placements: BTreeMap<String, Option<String>>,
    /// The run's summary.
    pub summary: Summary,
    /// Per resource (`cpu`, `memory`): the standard deviation over nodes of each node's
    /// allocation ratio (requested / allocatable), in percentage points.
    pub imbalance: BTreeMap<String, f64>,
}

/// Runs `run` to the end and collects what the comparison shows.
pub fn finish(name: String, mut run: Simulation) -> PolicyRun {
    let mut placements = BTreeMap::new();
    for p in run.by_ref() {
        let key = format!("{}/{}", p.namespace, p.name);
        let node = match p.status {
            PodStatus::Scheduled => p.node,
            PodStatus::Skipped => match p.node {
                Some(n) => Some(n),
                None => continue,
            },
            _ => None,
        };
        placements.insert(key, node);
    }
    let mut imbalance = BTreeMap::new();
    let nodes = run.snapshot().nodes();
    for resource in ["cpu", "memory"] {
        let ratios: Vec<f64> = nodes
            .iter()
            .filter_map(|n| {
                let (req, alloc) = match resource {
                    "cpu" => (n.requested.milli_cpu, n.allocatable.milli_cpu),
                    _ => (n.requested.memory, n.allocatable.memory),
                };
                (alloc > 0).then(|| req as f64 / alloc as f64 * 100.0)
            })
            .collect();
        if ratios.is_empty() {
            continue;
        }
        let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
        let var = ratios.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / ratios.len() as f64;
        imbalance.insert(resource.to_string(), var.sqrt());
    }
    PolicyRun {
        name,
        placements,
        summary: run.summary(),
        imbalance,
    }
}

/// The side-by-side table: one row per pod (the node under each policy, `-` when pending),
/// then scheduled / unschedulable counts, allocation per resource and imbalance.
pub fn write_comparison(out: &mut impl Write, runs: &[PolicyRun]) -> io::Result<()> {
    let pods: std::collections::BTreeSet<&String> =
        runs.iter().flat_map(|r| r.placements.keys()).collect();
    let w_first = pods
        .iter()
        .map(|p| p.chars().count())
        .chain(["unschedulable".len(), "memory imbalance (pp)".len()])
        .max()
        .unwrap_or(3);
    let w_col = runs
        .iter()
        .map(|r| r.name.chars().count())
        .chain(runs.iter().flat_map(|r| {
            r.placements
                .values()
                .map(|n| n.as_deref().unwrap_or("-").chars().count())
        }))
        .max()
        .unwrap_or(1)
        .max(8);
    let row = |out: &mut dyn Write, first: &str, cells: Vec<String>| -> io::Result<()> {
        write!(out, "{:<w_first$}", escape_control_line(first))?;
        for c in cells {
            write!(out, "  {:<w_col$}", escape_control_line(&c))?;
        }
        writeln!(out)
    };
    row(out, "POD", runs.iter().map(|r| r.name.clone()).collect())?;
    for p in &pods {
        let cells = runs
            .iter()
            .map(|r| {
                r.placements
                    .get(*p)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| "-".into())
            })
            .collect();
        row(out, p, cells)?;
    }
    writeln!(out)?;
    let count = |r: &PolicyRun, s: &str| r.summary.by_status.get(s).copied().unwrap_or(0);
    row(
        out,
        "scheduled",
        runs.iter()
            .map(|r| count(r, "Scheduled").to_string())
            .collect(),
    )?;
    row(
        out,
        "unschedulable",
        runs.iter()
            .map(|r| count(r, "Unschedulable").to_string())
            .collect(),
    )?;
    let resources: std::collections::BTreeSet<&String> = runs
        .iter()
        .flat_map(|r| r.summary.resources.iter().map(|u| &u.resource))
        .collect();
    for res in resources {
        let cells = runs
            .iter()
            .map(|r| {
                r.summary
                    .resources
                    .iter()
                    .find(|u| &u.resource == res)
                    .map_or("-".into(), |u| format!("{:.1}%", u.ratio * 100.0))
            })
            .collect();
        row(out, &format!("{res} allocated"), cells)?;
    }
    for res in ["cpu", "memory"] {
        let cells = runs
            .iter()
            .map(|r| {
                r.imbalance
                    .get(res)
                    .map_or("-".into(), |v| format!("{v:.1}"))
            })
            .collect();
        row(out, &format!("{res} imbalance (pp)"), cells)?;
    }
    Ok(())
}

/// The comparison as JSON: one object per policy with its placements, summary and imbalance.
pub fn comparison_json(runs: &[PolicyRun]) -> Value {
    Value::Array(
        runs.iter()
            .map(|r| {
                serde_json::json!({
                    "policy": r.name,
                    "placements": r.placements,
                    "summary": r.summary,
                    "imbalance": r.imbalance,
                })
            })
            .collect(),
    )
}
