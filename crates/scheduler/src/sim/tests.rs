#![allow(clippy::unwrap_used)]

use super::*;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn resources(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> core::ResourceRequirements {
    let list = |l: &[(&str, &str)]| {
        (!l.is_empty()).then(|| {
            l.iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                .collect()
        })
    };
    core::ResourceRequirements {
        requests: list(requests),
        limits: list(limits),
        ..Default::default()
    }
}

#[test]
fn requests_default_from_limits_per_resource() {
    let container = |name: &str, r| core::Container {
        name: name.into(),
        resources: Some(r),
        ..Default::default()
    };
    let mut pod = core::Pod {
        spec: Some(core::PodSpec {
            containers: vec![
                container(
                    "a",
                    resources(&[("cpu", "100m")], &[("cpu", "1"), ("nvidia.com/gpu", "1")]),
                ),
                container("b", resources(&[("memory", "1Gi")], &[])),
            ],
            init_containers: Some(vec![container("init", resources(&[], &[("cpu", "2")]))]),
            ..Default::default()
        }),
        ..Default::default()
    };
    default_requests_from_limits(&mut pod);
    let spec = pod.spec.unwrap();
    let requests = |c: &core::Container| {
        c.resources
            .as_ref()
            .and_then(|r| r.requests.clone())
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect::<Vec<_>>()
    };
    // A request present is kept; a resource only limited is requested at its limit.
    assert_eq!(
        requests(&spec.containers[0]),
        [
            ("cpu".to_string(), "100m".to_string()),
            ("nvidia.com/gpu".to_string(), "1".to_string())
        ]
    );
    assert_eq!(
        requests(&spec.containers[1]),
        [("memory".to_string(), "1Gi".to_string())]
    );
    let init = &spec.init_containers.unwrap()[0];
    assert_eq!(requests(init), [("cpu".to_string(), "2".to_string())]);
}

#[test]
fn generated_names_follow_the_api_server() {
    let mut g = NameGenerator::new(1);
    let name = g.generate("web-");
    assert_eq!(name.len(), 4 + NameGenerator::RANDOM_LENGTH);
    assert!(
        name[4..]
            .bytes()
            .all(|c| NameGenerator::ALPHABET.contains(&c))
    );
    let long = "x".repeat(70);
    assert_eq!(g.generate(&long).len(), 63);
    assert_eq!(NameGenerator::new(1).generate("web-"), name);
}

/// A malformed pod keeps its place among the pods decided before scheduling.
#[test]
fn malformed_pods_keep_their_input_order() {
    let pod = |name: &str, node: &str| core::Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(core::PodSpec {
            node_name: Some(node.into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let malformed = |position, name: &str| MalformedPod {
        position,
        namespace: String::new(),
        name: name.into(),
        generate_name: String::new(),
        node_name: String::new(),
        scheduler_name: String::new(),
        phase: String::new(),
        deleting: false,
        message: format!("{name} is malformed"),
    };
    let cluster = Cluster {
        pods: vec![pod("run-0", "gone"), pod("run-1", "gone")],
        malformed_pods: vec![malformed(1, "bad-a"), malformed(2, "bad-b")],
        ..Default::default()
    };
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed: 0,
        percentage_of_nodes_to_score: 0,
        explain: false,
    };
    let out = simulate(cluster, &crate::policy::default_provider(), &cfg).unwrap();
    let order: Vec<(&str, PodStatus)> = out
        .report
        .pods
        .iter()
        .map(|o| (o.name.as_str(), o.status))
        .collect();
    assert_eq!(
        order,
        [
            ("run-0", PodStatus::Skipped),
            ("bad-a", PodStatus::Unschedulable),
            ("run-1", PodStatus::Skipped),
            ("bad-b", PodStatus::Unschedulable),
        ]
    );
    assert_eq!(out.report.pods[1].message, "bad-a is malformed");
    assert_eq!(out.report.summary.pods, 4);
}

fn class(
    name: &str,
    value: i32,
    global: bool,
    policy: Option<&str>,
) -> k8s_openapi::api::scheduling::v1::PriorityClass {
    k8s_openapi::api::scheduling::v1::PriorityClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        value: Some(value),
        global_default: Some(global),
        preemption_policy: policy.map(String::from),
        ..Default::default()
    }
}

fn pod_with(class: Option<&str>, priority: Option<i32>, policy: Option<&str>) -> core::Pod {
    core::Pod {
        metadata: ObjectMeta {
            name: Some("p".into()),
            ..Default::default()
        },
        spec: Some(core::PodSpec {
            priority_class_name: class.map(String::from),
            priority,
            preemption_policy: policy.map(String::from),
            ..Default::default()
        }),
        status: None,
    }
}

#[test]
fn priority_admission_resolves_classes_as_the_admission_plugin() {
    let none = PriorityClasses::new(&[]);
    let spec = |p: &core::Pod| {
        let s = p.spec.as_ref().unwrap();
        (
            s.priority,
            s.preemption_policy.clone(),
            s.priority_class_name.clone(),
        )
    };
    // No class, no global default: 0 and PreemptLowerPriority.
    let mut p = pod_with(None, None, None);
    admit_priority(&mut p, &none).unwrap();
    assert_eq!(
        spec(&p),
        (Some(0), Some("PreemptLowerPriority".into()), None)
    );
    // The built-in system classes exist.
    let mut p = pod_with(Some("system-node-critical"), None, None);
    admit_priority(&mut p, &none).unwrap();
    assert_eq!(spec(&p).0, Some(2_000_001_000));
    // The global default with the lowest value names the pod's class.
    let classes = PriorityClasses::new(&[
        class("high", 1000, true, None),
        class("low", 10, true, None),
        class("quiet", 500, false, Some("Never")),
    ]);
    let mut p = pod_with(None, None, None);
    admit_priority(&mut p, &classes).unwrap();
    assert_eq!(
        spec(&p),
        (
            Some(10),
            Some("PreemptLowerPriority".into()),
            Some("low".into())
        )
    );
    // The class's preemptionPolicy is copied; a different one in the pod is refused.
    let mut p = pod_with(Some("quiet"), None, None);
    admit_priority(&mut p, &classes).unwrap();
    assert_eq!(spec(&p).1.as_deref(), Some("Never"));
    let mut p = pod_with(Some("quiet"), None, Some("PreemptLowerPriority"));
    assert_eq!(
        admit_priority(&mut p, &classes).unwrap_err(),
        "pods \"p\" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must \
         not be provided in pod spec; priority admission controller computed Never from the given \
         PriorityClass name"
    );
    // An unknown class is refused.
    let mut p = pod_with(Some("missing"), None, None);
    assert_eq!(
        admit_priority(&mut p, &classes).unwrap_err(),
        "pods \"p\" is forbidden: no PriorityClass with name missing was found"
    );
    // A pod that carries spec.priority was admitted already: kept as stored.
    let mut p = pod_with(Some("missing"), Some(7), None);
    admit_priority(&mut p, &classes).unwrap();
    assert_eq!(spec(&p).0, Some(7));
}
