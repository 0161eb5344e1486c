//! One fuzz test per input decoder (see the module above for the method and the long run).

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use proptest::prelude::*;

use super::{Counter, fuzz, inputs, repo_files};
use crate::sim::{self, Cluster, SimulationConfig};

/// A rejected input's error must name its source and say something.
fn names_source(err: &str, source: &str) -> Result<(), TestCaseError> {
    prop_assert!(!err.trim().is_empty(), "empty error");
    prop_assert!(err.contains(source), "error does not name {source}: {err}");
    Ok(())
}

const POLICY_TOKENS: &[&str] = &[
    "\"kind\"",
    "\"Policy\"",
    "\"apiVersion\"",
    "\"v1\"",
    "\"predicates\"",
    "\"priorities\"",
    "\"name\"",
    "\"weight\"",
    "\"argument\"",
    "\"extenders\"",
    "\"urlPrefix\"",
    "\"hardPodAffinitySymmetricWeight\"",
    "\"alwaysCheckAllPredicates\"",
    "\"labelsPresence\"",
    "\"labels\"",
    "\"presence\"",
    "\"serviceAffinity\"",
    "\"requestedToCapacityRatioArguments\"",
    "\"shape\"",
    "\"utilization\"",
    "\"score\"",
    "\"resources\"",
    "\"PodFitsResources\"",
    "\"LeastRequestedPriority\"",
    "\"NodeLabelPriority\"",
    "\"RequestedToCapacityRatioPriority\"",
    "\"EqualPriority\"",
    "\"MatchInterPodAffinity\"",
    "kind: Policy",
    "predicates:",
    "- name: ",
    "weight: ",
    "argument:",
    "managedResources:",
    "ignoredByScheduler: true",
];

#[test]
fn policy_json_and_yaml() {
    static C: Counter = Counter::new("Policy (JSON and YAML)");
    let mut seeds = repo_files("config", &["json"]);
    seeds.extend(repo_files("config/policies/pass", &["json", "yaml", "yml"]));
    seeds.extend(repo_files("config/policies/fail", &["json", "yaml", "yml"]));
    assert!(
        seeds.len() > 40,
        "the policy corpus is the repository's policy files"
    );
    fuzz(&C, inputs(seeds, POLICY_TOKENS), |text| {
        match crate::policy::parse_policy("fuzz/policy-config-file", text) {
            Ok(loaded) => {
                // A policy that loads must build its profile or say why not.
                let resolved = loaded
                    .resolved
                    .with_feature_gates(&crate::policy::FeatureGates::default());
                let _ = crate::framework::Framework::from_policy(&resolved);
                Ok(())
            }
            Err(e) => names_source(&e.to_string(), "fuzz/policy-config-file"),
        }
    });
}

const CLUSTER_TOKENS: &[&str] = &[
    "kind: Node",
    "kind: Pod",
    "kind: List",
    "items:",
    "metadata:",
    "name: x",
    "namespace: ",
    "spec:",
    "status:",
    "allocatable:",
    "capacity:",
    "cpu: ",
    "memory: ",
    "pods: ",
    "nvidia.com/gpu: ",
    "containers:",
    "- name: c",
    "resources:",
    "requests:",
    "limits:",
    "nodeName: ",
    "schedulerName: ",
    "affinity:",
    "nodeAffinity:",
    "podAntiAffinity:",
    "topologySpreadConstraints:",
    "maxSkew: 0",
    "tolerations:",
    "taints:",
    "hostPort: ",
    "labels:",
    "nodeSelector:",
    "initContainers:",
    "overhead:",
    "volumes:",
    "persistentVolumeClaim:",
    "claimName: ",
    "priority: ",
    "1Ei",
    "-1",
    "100000000000000P",
    "0.0001m",
    "apiVersion: v1",
    "\"kind\": \"Node\"",
];

#[test]
fn cluster_files() {
    static C: Counter = Counter::new("cluster files (YAML and JSON)");
    let mut seeds = repo_files("config", &["yaml"]);
    seeds.push(
        r#"{"kind":"List","items":[{"kind":"Node","metadata":{"name":"n"},"status":{"allocatable":{"cpu":"2","memory":"4Gi","pods":"10"}}},
            {"kind":"Pod","metadata":{"name":"p"},"spec":{"schedulerName":"mini-scheduler","containers":[{"name":"c","resources":{"requests":{"cpu":"1"}}}]}}]}"#
            .to_string(),
    );
    seeds.push("apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  schedulerName: mini-scheduler\n  containers: [{name: c, ports: [{containerPort: 80, hostPort: 80}]}]\n".to_string());
    let policy = crate::policy::default_provider();
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed: 1,
        percentage_of_nodes_to_score: 0,
        explain: true,
    };
    fuzz(&C, inputs(seeds, CLUSTER_TOKENS), |text| {
        let mut cluster = Cluster::default();
        match sim::files::parse_cluster_text(&mut cluster, "fuzz/cluster.yaml", text) {
            Ok(()) => {
                // What decodes also schedules without a panic (small clusters only).
                if cluster.nodes.len() + cluster.pods.len() <= 80 {
                    let _ = sim::simulate(cluster, &policy, &cfg);
                }
                Ok(())
            }
            Err(e) => names_source(&e.to_string(), "fuzz/cluster.yaml"),
        }
    });
}

const CSV_TOKENS: &[&str] = &[
    ",",
    ",,",
    "\n",
    "\"",
    "\"\"",
    "openb-node-0000",
    "openb-pod-0000",
    "P100",
    "V100M16",
    "T4",
    "A10",
    "LS",
    "BE",
    "Running",
    "Pending",
    "1000",
    "0",
    "-5",
    "64000",
    "262144",
    "8",
    "460",
    "1.5",
    "99999999999999999999",
    "sn,cpu_milli,memory_mib,gpu,model",
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time",
    "V100M16|V100M32",
    "|",
];

fn csv_head(file: &str, lines: usize) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/openb")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().take(lines).collect::<Vec<_>>().join("\n") + "\n"
}

#[test]
fn openb_csvs() {
    static C: Counter = Counter::new("openb CSVs (node and pod lists)");
    let seeds = vec![
        csv_head("openb_node_list_gpu_node.csv", 12),
        csv_head("openb_node_list_all_node.csv", 12),
        csv_head("openb_pod_list_default.csv", 12),
        csv_head("openb_pod_list_gpuspec33.csv", 12),
        csv_head("openb_pod_list_gpushare40.csv", 12),
        csv_head("openb_pod_list_multigpu50.csv", 12),
    ];
    fuzz(&C, inputs(seeds, CSV_TOKENS), |text| {
        let mut cluster = Cluster::default();
        if let Err(e) = sim::openb::parse_nodes(&mut cluster, "fuzz/nodes.csv", text) {
            names_source(&e.to_string(), "fuzz/nodes.csv")?;
        }
        let mut cluster = Cluster::default();
        if let Err(e) =
            sim::openb::parse_pods(&mut cluster, "fuzz/pods.csv", text, "mini-scheduler")
        {
            names_source(&e.to_string(), "fuzz/pods.csv")?;
        }
        Ok(())
    });
}

const QUANTITY_TOKENS: &[&str] = &[
    "0",
    "1",
    "9",
    ".",
    "+",
    "-",
    "e",
    "E",
    "i",
    "n",
    "u",
    "m",
    "k",
    "K",
    "M",
    "G",
    "T",
    "P",
    "Ki",
    "Mi",
    "Gi",
    "Ti",
    "Pi",
    "Ei",
    "e18",
    "e-9",
    "E+3",
    "99999999999999999999",
    "0.000000001",
    "1e308",
    "1e-308",
];

#[test]
fn quantities() {
    static C: Counter = Counter::new("quantities");
    let seeds = [
        "1",
        "100m",
        "1.5Gi",
        "64Mi",
        "2e3",
        "0.5",
        "1Ki",
        "-1",
        "9223372036854775807",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    fuzz(&C, inputs(seeds, QUANTITY_TOKENS), |text| {
        let v = crate::quantity::value(text);
        let m = crate::quantity::milli_value(text);
        // What is too big or malformed in units is so in milli-units.
        prop_assert!(v.is_ok() || m.is_err(), "{:?}: {:?} vs {:?}", text, v, m);
        if let Err(e) = v {
            prop_assert!(!e.to_string().is_empty());
        }
        // A quantity inside a pod decodes through the same parser without a panic.
        let pod: Result<core::Pod, _> = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": text, "memory": text}}}],
                     "overhead": {"cpu": text}}
        }));
        if let Ok(pod) = pod {
            let _ = crate::framework::PodInfo::from_pod(pod);
        }
        Ok(())
    });
}

const SELECTOR_TOKENS: &[&str] = &[
    "\"matchLabels\"",
    "\"matchExpressions\"",
    "\"key\"",
    "\"operator\"",
    "\"values\"",
    "\"In\"",
    "\"NotIn\"",
    "\"Exists\"",
    "\"DoesNotExist\"",
    "\"Gt\"",
    "\"Lt\"",
    "\"app\"",
    "\"\"",
    "\"kubernetes.io/hostname\"",
    "\"a/b/c\"",
    "\"-x\"",
    "\"1\"",
    "\"nodeSelectorTerms\"",
    "\"matchFields\"",
    "\"metadata.name\"",
];

#[test]
fn label_selectors() {
    static C: Counter = Counter::new("label and node selectors");
    let seeds = vec![
        r#"{"matchLabels":{"app":"web","tier":"db"},"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]},{"key":"x","operator":"Exists"}]}"#.to_string(),
        r#"{"matchExpressions":[{"key":"k","operator":"NotIn","values":[]},{"key":"d","operator":"DoesNotExist"}]}"#.to_string(),
        r#"{"nodeSelectorTerms":[{"matchExpressions":[{"key":"cpu","operator":"Gt","values":["4"]}],"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]}"#.to_string(),
    ];
    let node_labels: crate::labels::Labels = [("app", "web"), ("zone", "a"), ("cpu", "8")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    fuzz(&C, inputs(seeds, SELECTOR_TOKENS), |text| {
        if let Ok(sel) = serde_json::from_str::<meta::LabelSelector>(text) {
            match crate::labels::LabelSelector::from_label_selector(&sel) {
                Ok(s) => {
                    let _ = s.matches(&node_labels);
                }
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
        if let Ok(ns) = serde_json::from_str::<core::NodeSelector>(text) {
            let _ = crate::labels::NodeSelector::compile(&ns).matches("n1", &node_labels);
        }
        Ok(())
    });
}

#[cfg(feature = "http-extender")]
const EXTENDER_TOKENS: &[&str] = &[
    "\"NodeNames\"",
    "\"nodenames\"",
    "\"Nodes\"",
    "\"items\"",
    "\"metadata\"",
    "\"Name\"",
    "\"FailedNodes\"",
    "\"FailedAndUnresolvableNodes\"",
    "\"Error\"",
    "\"Host\"",
    "\"Score\"",
    "1.5",
    "-9223372036854775809",
    "1e3",
];

#[cfg(feature = "http-extender")]
#[test]
fn extender_responses() {
    static C: Counter = Counter::new("extender responses (filter, prioritize, bind)");
    let seeds = vec![
        r#"{"NodeNames":["a","b"],"FailedNodes":{"c":"no"},"FailedAndUnresolvableNodes":{"d":"never"},"Error":""}"#.to_string(),
        r#"{"Nodes":{"items":[{"metadata":{"name":"x"}},{"Metadata":{"Name":"y"}}]},"Error":"boom"}"#.to_string(),
        r#"[{"Host":"a","Score":3},{"host":"b","score":10}]"#.to_string(),
        r#"{"Error":"taken"}"#.to_string(),
    ];
    fuzz(&C, inputs(seeds, EXTENDER_TOKENS), |text| {
        let b = text.as_bytes();
        for r in [
            crate::extender::wire::decode_filter_result(b).map(|_| ()),
            crate::extender::wire::decode_host_priority_list(b).map(|_| ()),
            crate::extender::wire::decode_binding_result(b).map(|_| ()),
        ] {
            if let Err(e) = r {
                prop_assert!(!e.to_string().is_empty());
            }
        }
        Ok(())
    });
}
