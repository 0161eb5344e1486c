//! The live cluster as `simulate` and `explain` read it: read-only LISTs of every kind the
//! scheduling plugins need, turned into one `v1 List` document (what `kubectl get -o json`
//! of those kinds prints), so that a live run decodes exactly as `simulate --cluster` on a dump
//! of the same objects; `explain` (why one pod is pending) and the side-by-side comparison of
//! several policies (`simulate --policy A --policy B`).

use std::collections::BTreeMap;
use std::io::{self, Write};

use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController, Service,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{CSINode, StorageClass};
use kube::api::{Api, ListParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use std::process::ExitCode;

use scheduler::escape::{escape_control, escape_control_line};
use scheduler::policy::FeatureGates;
use scheduler::profile::{PolicySource, SchedulerProfile};
use scheduler::sim::{self, Cluster, PodStatus, Simulation, SimulationConfig, Summary};

use crate::{
    EXIT_BAD_INPUT, ExplainArgs, OutputFormat, SimulateArgs, finish_output, load_profile_or_exit,
    print_error, simulate_profiles,
};

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
/// PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes and PodDisruptionBudgets
/// (which preemption reads). A kind that cannot be listed, e.g. for lack of RBAC, is left out
/// with a warning in the returned list. PriorityClasses are not listed: live pods carry
/// `spec.priority`, set at admission.
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
    optional!(PodDisruptionBudget, "poddisruptionbudgets");
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

/// The live cluster of `kubeconfig` (`None`: in-cluster or $KUBECONFIG) as a `v1 List`
/// document and the server it came from; the snapshot's warnings are logged.
pub(crate) fn live_snapshot(
    kubeconfig: Option<&std::path::Path>,
) -> Result<(String, String), ExitCode> {
    let rt = tokio::runtime::Runtime::new().map_err(|e| {
        print_error(format_args!("starting the async runtime: {e}"));
        ExitCode::FAILURE
    })?;
    rt.block_on(async {
        let config = match kubeconfig {
            Some(path) => crate::run::kubeconfig_file(path).await,
            None => kube::Config::infer()
                .await
                .map_err(|e| format!("no --kubeconfig and no in-cluster configuration: {e}")),
        }
        .map_err(|e| {
            print_error(e);
            ExitCode::from(EXIT_BAD_INPUT)
        })?;
        let server = config.cluster_url.to_string();
        let client = kube::Client::try_from(config).map_err(|e| {
            print_error(format_args!("building the API client: {e}"));
            ExitCode::from(EXIT_BAD_INPUT)
        })?;
        let (text, warnings) = snapshot(&client).await.map_err(|e| {
            print_error(format_args!("{server}: {e}"));
            ExitCode::FAILURE
        })?;
        for w in warnings {
            tracing::warn!("{server}: {}", escape_control_line(&w));
        }
        Ok((text, server))
    })
}

/// `simulate` with two or more `--policy` files: each schedules a copy of `cluster`.
pub(crate) fn compare_policies(
    args: &SimulateArgs,
    cluster: Cluster,
    gates: &FeatureGates,
) -> ExitCode {
    let mut runs = Vec::new();
    for policy in &args.policy {
        let (profiles, percentage, parallelism) = match simulate_profiles(args, Some(policy), gates)
        {
            Ok(p) => p,
            Err(code) => return code,
        };
        let cfg = SimulationConfig {
            scheduler_name: args.scheduler_name.clone(),
            seed: args.seed,
            percentage_of_nodes_to_score: percentage,
            explain: false,
        };
        let mut run = match Simulation::with_profiles_replay(
            cluster.clone(),
            profiles,
            &cfg,
            args.replay.options(args.seed),
        ) {
            Ok(r) => r,
            Err(e) => {
                print_error(e);
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        };
        run.set_parallelism(parallelism);
        let name = policy.file_name().map_or_else(
            || policy.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        runs.push(finish(name, run));
    }
    let mut out = io::stdout().lock();
    finish_output(match args.output {
        OutputFormat::Json => serde_json::to_writer_pretty(&mut out, &comparison_json(&runs))
            .map_err(io::Error::from)
            .and_then(|()| writeln!(out)),
        OutputFormat::Table => write_comparison(&mut out, &runs),
    })
}

/// `mini-scheduler explain NAMESPACE/NAME`.
pub(crate) fn explain(args: ExplainArgs, gates: &FeatureGates) -> ExitCode {
    let Some((namespace, name)) = args
        .pod
        .split_once('/')
        .filter(|(ns, n)| !ns.is_empty() && !n.is_empty() && !n.contains('/'))
    else {
        print_error(format_args!("pod {:?}: expected NAMESPACE/NAME", args.pod));
        return ExitCode::from(EXIT_BAD_INPUT);
    };
    // The profiles: the configuration's, or the Policy's (DefaultProvider without one).
    let profiles = if let Some(path) = &args.config {
        let loaded = match scheduler::config::load_config_file(path) {
            Ok(l) => l,
            Err(e) => {
                print_error(e);
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        };
        match SchedulerProfile::from_config(&loaded, &path.display().to_string()) {
            // explain scores every node, whatever the file's percentageOfNodesToScore.
            Ok(profiles) => profiles
                .into_iter()
                .map(|p| SchedulerProfile {
                    percentage_of_nodes_to_score: Some(100),
                    ..p
                })
                .collect(),
            Err(e) => {
                print_error(e);
                return ExitCode::from(EXIT_BAD_INPUT);
            }
        }
    } else {
        let source = match &args.policy {
            Some(p) => PolicySource::File(p),
            None => PolicySource::DefaultProvider,
        };
        match load_profile_or_exit(source, gates) {
            Ok(l) => vec![SchedulerProfile {
                scheduler_name: "mini-scheduler".into(),
                profile: l.profile,
                percentage_of_nodes_to_score: Some(100),
            }],
            Err(code) => return code,
        }
    };
    let (text, server) = match live_snapshot(args.kubeconfig.as_deref()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let mut cluster = Cluster::default();
    if let Err(e) = sim::files::parse_cluster_text(&mut cluster, &server, &text) {
        print_error(e);
        return ExitCode::FAILURE;
    }
    let is_target = |p: &k8s_openapi::api::core::v1::Pod| {
        p.metadata.namespace.as_deref() == Some(namespace)
            && p.metadata.name.as_deref() == Some(name)
    };
    let Some(target) = cluster.pods.iter().find(|p| is_target(p)).cloned() else {
        print_error(format_args!("pod {namespace}/{name} not found on {server}"));
        return ExitCode::FAILURE;
    };
    if let Some(node) = target.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
        let line = format!("{namespace}/{name} is bound to node {node}: not pending\n");
        return finish_output(
            io::stdout()
                .lock()
                .write_all(escape_control(&line).as_bytes()),
        );
    }
    // The pod alone against the assigned pods: other pending pods hold no resources yet. It
    // is scheduled by the profile its schedulerName names, else the first.
    let wanted = target
        .spec
        .as_ref()
        .and_then(|s| s.scheduler_name.clone())
        .unwrap_or_default();
    let profile_name = profiles
        .iter()
        .find(|p| p.scheduler_name == wanted)
        .or(profiles.first())
        .map(|p| p.scheduler_name.clone())
        .unwrap_or_default();
    cluster
        .pods
        .retain(|p| is_target(p) || p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some());
    for p in cluster.pods.iter_mut().filter(|p| is_target(p)) {
        p.spec.get_or_insert_with(Default::default).scheduler_name = Some(profile_name.clone());
    }
    let cfg = SimulationConfig {
        scheduler_name: profile_name,
        seed: 0,
        percentage_of_nodes_to_score: 100,
        explain: true,
    };
    let run = match Simulation::with_profiles(cluster, profiles, &cfg) {
        Ok(r) => r,
        Err(e) => {
            print_error(e);
            return ExitCode::from(EXIT_BAD_INPUT);
        }
    };
    let Some(outcome) = run
        .into_iter()
        .find(|o| o.namespace == namespace && o.name == name)
    else {
        print_error(format_args!(
            "{namespace}/{name}: not scheduled by the simulation"
        ));
        return ExitCode::FAILURE;
    };
    let mut out = io::stdout().lock();
    finish_output(match args.output {
        OutputFormat::Json => serde_json::to_writer_pretty(&mut out, &outcome)
            .map_err(io::Error::from)
            .and_then(|()| writeln!(out)),
        OutputFormat::Table => crate::output::write_explain(&mut out, &outcome),
    })
}
