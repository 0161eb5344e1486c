//! The RBAC manifests grant exactly what the scheduler calls.
//!
//! Three replicas (leader election on, Lease in the manifests' namespace) run a scenario that
//! takes every API path of `mini-scheduler run` with every plugin of kube-scheduler v1.22's
//! default profile: the watches, a binding, a binding answered 409 (someone else bound the pod
//! first), a `Scheduled` event, a `FailedScheduling` event and `PodScheduled=False` status
//! patch, the same failure again (an event series patch), a preemption (a victim deleted, the
//! PodDisruptionBudget watch), VolumeBinding's PreBind (a PV bound to
//! a claim, a claim annotated for provisioning, both completed by a miniature PV controller),
//! Lease acquire, renew, release and takeover. The API test double records every request with the
//! verb, group, resource, subresource, namespace and name an authorizer checks; the requests of
//! the replicas (not of the test's own client) are then compared with the ClusterRole and the
//! Role in `manifests/rbac.yaml`:
//!
//! - every request must be allowed (a Role only in its own namespace, `resourceNames` only for
//!   those names);
//! - every (group, resource, verb) a rule grants must have been used at least once.
//!
//! A new API call in the code fails the first check with the rule to add; the fix is one line
//! in `manifests/rbac.yaml` (this test needs no change). Real time: waits poll conditions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use scheduler::controller::RunOutcome;
use scheduler::controller::replica::ReplicaConfig;
use scheduler::policy::default_provider;
use tests::apiserver::{ApiServer, RequestRecord};
use tests::manifests::{Kustomization, Manifest, manifests_dir};
use tests::objects::{self, wait_for};
use tests::replica::{
    LEASE_NAME, ReplicaHandle, fast_election, run_config, spawn_replica_with_config,
};
use tests::volumes::{self, claim, class, fake_pv_controller, local_pv, pod_with_claim};

const WAIT: Duration = Duration::from_secs(20);
const TESTER: &str = "tester";

/// One RBAC rule and where it applies (`None`: every namespace and cluster-scoped objects).
#[derive(Debug, Clone)]
struct Grant {
    from: String,
    namespace: Option<String>,
    rule: PolicyRule,
}

impl Grant {
    fn allows(&self, r: &RequestRecord) -> bool {
        let (Some(group), Some(resource)) = (&r.api_group, r.rbac_resource()) else {
            return false;
        };
        let has =
            |list: &Option<Vec<String>>, v: &str| list.iter().flatten().any(|x| x == v || x == "*");
        self.namespace
            .as_ref()
            .is_none_or(|ns| r.namespace.as_ref() == Some(ns))
            && has(&self.rule.api_groups, group)
            && has(&self.rule.resources, &resource)
            && self.rule.verbs.iter().any(|v| *v == r.verb || v == "*")
            && self
                .rule
                .resource_names
                .as_ref()
                .is_none_or(|names| r.name.as_ref().is_some_and(|n| names.contains(n)))
    }
}

/// The grants bound to the scheduler's ServiceAccount.
fn grants(objects: &[Manifest]) -> Vec<Grant> {
    let mut out = Vec::new();
    for o in objects {
        match o {
            Manifest::ClusterRole(r) => {
                for rule in r.rules.iter().flatten() {
                    out.push(Grant {
                        from: o.describe(),
                        namespace: None,
                        rule: rule.clone(),
                    });
                }
            }
            Manifest::Role(r) => {
                for rule in r.rules.iter().flatten() {
                    out.push(Grant {
                        from: o.describe(),
                        namespace: r.metadata.namespace.clone(),
                        rule: rule.clone(),
                    });
                }
            }
            _ => {}
        }
    }
    // No wildcards anywhere.
    for g in &out {
        let r = &g.rule;
        let all = r
            .api_groups
            .iter()
            .flatten()
            .chain(r.resources.iter().flatten())
            .chain(r.verbs.iter())
            .chain(r.resource_names.iter().flatten());
        for v in all {
            assert!(!v.contains('*'), "{}: wildcard in {r:?}", g.from);
        }
        assert!(r.non_resource_urls.is_none(), "{}: nonResourceURLs", g.from);
    }
    out
}

fn describe(r: &RequestRecord) -> String {
    match r.rbac_resource() {
        Some(res) => format!(
            "{} {}/{}{}{}",
            r.verb,
            r.api_group.clone().unwrap_or_default(),
            res,
            r.namespace
                .as_ref()
                .map(|n| format!(" in namespace {n}"))
                .unwrap_or_default(),
            r.name
                .as_ref()
                .map(|n| format!(" named {n}"))
                .unwrap_or_default()
        ),
        None => format!("{} non-resource {}", r.verb, r.path),
    }
}

/// The check: every request allowed, every grant used. Returns the problems.
fn compare(grants: &[Grant], used: &[RequestRecord]) -> Vec<String> {
    let mut problems = BTreeSet::new();
    for r in used {
        if !grants.iter().any(|g| g.allows(r)) {
            problems.insert(format!("not granted: {} ({})", describe(r), r.client));
        }
    }
    for g in grants {
        for group in g.rule.api_groups.iter().flatten() {
            for resource in g.rule.resources.iter().flatten() {
                for verb in &g.rule.verbs {
                    let single = Grant {
                        from: g.from.clone(),
                        namespace: g.namespace.clone(),
                        rule: PolicyRule {
                            api_groups: Some(vec![group.clone()]),
                            resources: Some(vec![resource.clone()]),
                            verbs: vec![verb.clone()],
                            resource_names: g.rule.resource_names.clone(),
                            non_resource_urls: None,
                        },
                    };
                    if !used.iter().any(|r| single.allows(r)) {
                        problems.insert(format!(
                            "granted but never used: {verb} {group}/{resource} ({})",
                            g.from
                        ));
                    }
                }
            }
        }
    }
    problems.into_iter().collect()
}

fn node(name: &str, cpu: &str) -> Node {
    objects::node(name, &[("cpu", cpu), ("memory", "32Gi"), ("pods", "110")])
}

fn pod(name: &str, cpu: &str) -> Pod {
    objects::pod(name, &[("cpu", cpu), ("memory", "128Mi")])
}

fn used_by(api: &ApiServer, client: &str, verb: &str, resource: &str) -> bool {
    api.requests().iter().any(|r| {
        r.client == client && r.verb == verb && r.rbac_resource().as_deref() == Some(resource)
    })
}

async fn create_pod(api: &ApiServer, p: &Pod) {
    Api::<Pod>::namespaced(api.client(TESTER), "default")
        .create(&PostParams::default(), p)
        .await
        .unwrap();
}

fn leader(replicas: &[ReplicaHandle]) -> Option<usize> {
    let leading: Vec<usize> = (0..replicas.len())
        .filter(|i| replicas[*i].is_leading())
        .collect();
    assert!(leading.len() <= 1, "two leaders at once");
    leading.first().copied()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_grants_exactly_what_the_scheduler_calls() {
    let k = Kustomization::load(&manifests_dir()).unwrap();
    let objects = k.build().unwrap_or_else(|e| panic!("{e}"));
    let grants = grants(&objects);
    let namespace = k.namespace.clone().unwrap();

    let api = ApiServer::start().await;
    api.seed(&node("small", "2")).unwrap();
    api.seed(&node("big", "16")).unwrap();
    // Storage for VolumeBinding: a local PV on `vol-node`, a class that provisions there.
    api.seed(&volumes::node("vol-node")).unwrap();
    api.seed(&class("local", "kubernetes.io/no-provisioner", None))
        .unwrap();
    api.seed(&class("fast", "csi.example.com", Some("vol-node")))
        .unwrap();
    api.seed(&local_pv("local-pv", "vol-node")).unwrap();
    api.seed(&claim("static", "local")).unwrap();
    api.seed(&claim("dynamic", "fast")).unwrap();

    // Three replicas electing through the Lease in the scheduler's own namespace.
    let ids = ["replica-1", "replica-2", "replica-3"];
    let mut replicas = Vec::new();
    for id in ids {
        let mut election = fast_election(id);
        election.lease_namespace = namespace.clone();
        assert_eq!(election.lease_name, LEASE_NAME);
        let mut run = run_config(id);
        run.profile =
            scheduler::profile::Profile::from_resolved(default_provider(), "DefaultProvider")
                .unwrap();
        let cfg = ReplicaConfig {
            run,
            election: Some(election),
            election_client: None,
        };
        replicas.push(spawn_replica_with_config(&api, id, cfg, prometheus::Registry::new()).await);
    }
    let mut li = None;
    wait_for("a leader with synced caches", WAIT, || {
        li = leader(&replicas);
        li.is_some_and(|i| {
            replicas[i]
                .probes
                .status
                .caches_synced
                .load(std::sync::atomic::Ordering::Relaxed)
        })
    })
    .await;
    let li = li.unwrap();
    let lead = replicas[li].id.clone();

    // Bound, with a Scheduled event.
    create_pod(&api, &pod("fits", "500m")).await;
    wait_for("the Scheduled event", WAIT, || {
        used_by(&api, &lead, "create", "events")
            && api
                .get::<Pod>("default", "fits")
                .and_then(|p| p.spec?.node_name)
                .is_some()
    })
    .await;

    // VolumeBinding's PreBind: static binding (the PV's claimRef) and provisioning (the claim's
    // selected-node annotation), each completed by the miniature PV controller.
    let pv_controller = tokio::spawn(fake_pv_controller(
        api.client("pv-controller"),
        std::sync::Arc::new(std::sync::Mutex::new(std::collections::HashSet::new())),
    ));
    for p in [
        pod_with_claim("uses-static", "static"),
        pod_with_claim("uses-dynamic", "dynamic"),
    ] {
        create_pod(&api, &p).await;
    }
    wait_for("the pods with claims bound", WAIT, || {
        ["uses-static", "uses-dynamic"].iter().all(|p| {
            api.get::<Pod>("default", p)
                .and_then(|p| p.spec?.node_name)
                .is_some()
        })
    })
    .await;
    pv_controller.abort();

    // Unschedulable: FailedScheduling event and PodScheduled=False; then a node that does not
    // help either is added, the pod is retried and fails again: the event becomes a series.
    create_pod(&api, &pod("too-big", "100")).await;
    wait_for("the PodScheduled status patch", WAIT, || {
        used_by(&api, &lead, "patch", "pods/status")
    })
    .await;
    Api::<Node>::all(api.client(TESTER))
        .create(&PostParams::default(), &node("medium", "4"))
        .await
        .unwrap();
    wait_for("the FailedScheduling series patch", WAIT, || {
        used_by(&api, &lead, "patch", "events")
    })
    .await;
    // One Event object for both failures, carrying the series (client-go's aggregation).
    let failed: Vec<_> = api
        .list::<k8s_openapi::api::events::v1::Event>()
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some("FailedScheduling")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("too-big")
        })
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].series.as_ref().map(|s| s.count), Some(2));

    // A binding answered 409: the test binds the pod first while the leader's request is slow.
    let before = replicas[li].metric(
        "scheduler_schedule_attempts_total",
        &[("result", "scheduled")],
    );
    api.faults(&lead).latency(Duration::from_millis(1500));
    create_pod(&api, &pod("contested", "500m")).await;
    wait_for("the scheduler picked a node", WAIT, || {
        replicas[li].metric(
            "scheduler_schedule_attempts_total",
            &[("result", "scheduled")],
        ) > before
    })
    .await;
    let other = Binding {
        metadata: ObjectMeta {
            name: Some("contested".into()),
            ..Default::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some("small".into()),
            ..Default::default()
        },
    };
    Api::<Pod>::namespaced(api.client(TESTER), "default")
        .create_subresource::<_, kube::core::Status>(
            "binding",
            "contested",
            &PostParams::default(),
            &other,
        )
        .await
        .unwrap();
    wait_for("the leader's Binding answered 409", WAIT, || {
        api.writes().iter().any(|w| {
            w.client == lead
                && w.subresource.as_deref() == Some("binding")
                && w.name.as_deref() == Some("contested")
                && w.code == 409
        })
    })
    .await;
    api.faults(&lead).heal();

    // Preemption: a priority-1000 pod that fits only where a priority-0 filler runs; the
    // filler is deleted (DELETE pods, a Preempted event), the preemptor nominated and bound.
    create_pod(&api, &pod("filler", "15")).await;
    wait_for("the filler bound", WAIT, || {
        api.get::<Pod>("default", "filler")
            .and_then(|p| p.spec?.node_name)
            .is_some()
    })
    .await;
    let mut preemptor = pod("preemptor", "15");
    preemptor.spec.as_mut().unwrap().priority = Some(1000);
    create_pod(&api, &preemptor).await;
    wait_for("the victim deleted and the preemptor bound", WAIT, || {
        used_by(&api, &lead, "delete", "pods")
            && api
                .get::<Pod>("default", "preemptor")
                .and_then(|p| p.spec?.node_name)
                .is_some()
    })
    .await;

    // Renewals, then a graceful shutdown (release) and a takeover by another replica.
    wait_for("a renewal", WAIT, || {
        used_by(&api, &lead, "update", "leases")
    })
    .await;
    let mut old = replicas.remove(li);
    old.shutdown();
    let outcome = tokio::time::timeout(Duration::from_secs(15), old.join)
        .await
        .expect("graceful shutdown")
        .unwrap()
        .unwrap();
    assert_eq!(outcome, RunOutcome::Shutdown);
    let mut next = None;
    wait_for("a new leader", WAIT, || {
        next = leader(&replicas);
        next.is_some()
    })
    .await;
    for mut r in replicas {
        r.shutdown();
        let _ = tokio::time::timeout(Duration::from_secs(15), r.join).await;
    }

    let used: Vec<RequestRecord> = api
        .requests()
        .into_iter()
        .filter(|r| ids.contains(&r.client.as_str()))
        .collect();
    // The scenario did take every path (so an unused grant is the manifest's fault).
    for (verb, resource) in [
        ("list", "pods"),
        ("watch", "pods"),
        ("delete", "pods"),
        ("list", "poddisruptionbudgets"),
        ("watch", "poddisruptionbudgets"),
        ("create", "pods/binding"),
        ("patch", "pods/status"),
        ("create", "events"),
        ("patch", "events"),
        ("get", "leases"),
        ("create", "leases"),
        ("update", "leases"),
        ("list", "leases"),
        ("watch", "leases"),
        ("update", "persistentvolumes"),
        ("update", "persistentvolumeclaims"),
    ] {
        assert!(
            used.iter()
                .any(|r| r.verb == verb && r.rbac_resource().as_deref() == Some(resource)),
            "the scenario did not {verb} {resource}"
        );
    }
    // Lease calls stay in the scheduler's namespace.
    assert!(
        used.iter()
            .filter(|r| r.resource.as_deref() == Some("leases"))
            .all(|r| r.namespace.as_deref() == Some(namespace.as_str()))
    );
    let problems = compare(&grants, &used);
    assert!(
        problems.is_empty(),
        "manifests/rbac.yaml does not match what the scheduler calls:\n  {}",
        problems.join("\n  ")
    );
    api.shutdown().await;
}

/// The comparison itself: a missing grant and an unused grant are both reported; a Role
/// does not reach other namespaces; `resourceNames` limit by name.
#[test]
fn compare_reports_missing_and_unused_grants() {
    let req = |verb: &str, group: &str, resource: &str, ns: Option<&str>, name: Option<&str>| {
        RequestRecord {
            seq: 0,
            client: "r".into(),
            verb: verb.into(),
            api_group: Some(group.into()),
            resource: Some(resource.into()),
            subresource: None,
            namespace: ns.map(str::to_string),
            name: name.map(str::to_string),
            path: String::new(),
        }
    };
    let rule = |group: &str, resource: &str, verbs: &[&str], names: Option<&[&str]>| PolicyRule {
        api_groups: Some(vec![group.into()]),
        resources: Some(vec![resource.into()]),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        resource_names: names.map(|n| n.iter().map(|v| v.to_string()).collect()),
        non_resource_urls: None,
    };
    let grants = vec![
        Grant {
            from: "ClusterRole c".into(),
            namespace: None,
            rule: rule("", "pods", &["list", "watch"], None),
        },
        Grant {
            from: "Role ns/r".into(),
            namespace: Some("ns".into()),
            rule: rule("coordination.k8s.io", "leases", &["get"], Some(&["l"])),
        },
    ];
    let ok = vec![
        req("list", "", "pods", None, None),
        req("watch", "", "pods", None, None),
        req(
            "get",
            "coordination.k8s.io",
            "leases",
            Some("ns"),
            Some("l"),
        ),
    ];
    assert!(compare(&grants, &ok).is_empty());
    let mut extra = ok.clone();
    extra.push(req("list", "", "persistentvolumes", None, None));
    extra.push(req(
        "get",
        "coordination.k8s.io",
        "leases",
        Some("other"),
        Some("l"),
    ));
    extra.push(req(
        "get",
        "coordination.k8s.io",
        "leases",
        Some("ns"),
        Some("m"),
    ));
    let p = compare(&grants, &extra);
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(
        p.iter()
            .any(|m| m.contains("not granted: list /persistentvolumes"))
    );
    let p = compare(&grants, &ok[..2]);
    assert_eq!(
        p,
        vec!["granted but never used: get coordination.k8s.io/leases (Role ns/r)".to_string()]
    );
}
