//! The short chaos run (`tests::chaos`): three replicas, pods arriving continuously, a seeded
//! schedule of faults of every kind; no invariant may break. The full run (≥ 100 faults) is the
//! bench binary `benches/src/bin/chaos.rs`.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use tests::chaos::{ChaosConfig, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_chaos_run_keeps_every_invariant() {
    let cfg = ChaosConfig {
        seed: 15,
        faults: 24,
        fault_spacing: (Duration::from_millis(500), Duration::from_millis(2500)),
        pod_interval: Duration::from_millis(100),
        unfit_one_in: 40,
        settle_timeout: Duration::from_secs(45),
    };
    let report = run(&cfg).await;
    eprintln!("{}", report.line());
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert_eq!(report.fault_count(), cfg.faults);
    assert!(report.bound > 100, "{}", report.line());
    assert!(report.terms >= 2, "no failover happened: {}", report.line());
}

/// The checker itself: a Binding from a replica that does not hold the Lease (also an
/// interleaving of two clients' Bindings in one term), a pod never bound and an over-committed
/// node are each reported.
#[tokio::test]
async fn the_checker_reports_each_violation() {
    use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
    use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube::api::{Api, PostParams};
    use tests::apiserver::ApiServer;
    use tests::chaos::{ChaosReport, check};
    use tests::objects;

    let api = ApiServer::start().await;
    api.seed(&objects::node(
        "n",
        &[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")],
    ))
    .unwrap();
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(tests::replica::LEASE_NAME.into()),
            namespace: Some(tests::replica::LEASE_NAMESPACE.into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("a".into()),
            lease_duration_seconds: Some(6),
            ..Default::default()
        }),
    };
    Api::<Lease>::namespaced(api.client("a"), tests::replica::LEASE_NAMESPACE)
        .create(&PostParams::default(), &lease)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(api.client("t"), "default");
    for name in ["p1", "p2"] {
        pods.create(
            &PostParams::default(),
            &objects::pod(name, &[("cpu", "800m")]),
        )
        .await
        .unwrap();
    }
    let bind = |client: &str, pod: &str| {
        let pods: Api<Pod> = Api::namespaced(api.client(client), "default");
        let b = Binding {
            metadata: ObjectMeta {
                name: Some(pod.into()),
                ..Default::default()
            },
            target: ObjectReference {
                kind: Some("Node".into()),
                name: Some("n".into()),
                ..Default::default()
            },
        };
        let pod = pod.to_string();
        async move {
            pods.create_subresource::<_, kube::core::Status>(
                "binding",
                &pod,
                &PostParams::default(),
                &b,
            )
            .await
            .unwrap();
        }
    };
    bind("a", "p1").await;
    bind("b", "p2").await; // not the holder; and n is now over-committed (1600m of 1000m)
    let mut report = ChaosReport::default();
    let created = vec!["p1".to_string(), "p2".to_string(), "p3".to_string()];
    check(&api, &created, &Default::default(), &mut report);
    let v = report.violations.join("\n");
    assert!(
        v.contains("Binding of p2 by b while Some(\"a\") held the Lease"),
        "{v}"
    );
    assert!(v.contains("p3: 0 accepted Bindings (expected 1)"), "{v}");
    assert!(
        v.contains("Binding of p2 by b in term -1 after one by a in term -1"),
        "{v}"
    );
    assert!(v.contains("n over allocatable"), "{v}");
    assert_eq!(report.violations.len(), 4, "{v}");
    api.shutdown().await;
}
