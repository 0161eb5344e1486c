//! The whole Alibaba openb default trace (the repository's `data/openb/`, 1,213 GPU nodes, 8,152 pods)
//! through `simulate` with the sample policy: every pod is accounted for and, after the last
//! placement, no node exceeds its allocatable on any resource nor any GPU device its 1000
//! milli-GPU; the per-pod GPU device choices add up to each device's recorded use.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use scheduler::framework::GPU_MILLI_PER_DEVICE;
use scheduler::policy;
use scheduler::sim::{self, Cluster, PodStatus, SimulationConfig};

fn openb_dir() -> PathBuf {
    // The copy shipped in the repository (`data/openb/SOURCE.md`), found from this package's
    // directory so that the test passes from any working directory.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/openb");
    assert!(
        dir.join("openb_pod_list_default.csv").exists(),
        "the openb trace is expected at {} (the repository's data/openb/)",
        dir.display()
    );
    dir
}

#[test]
fn openb_default_trace_fits_allocatable_everywhere() {
    let dir = openb_dir();
    let mut cluster = Cluster::default();
    sim::openb::read_nodes(&mut cluster, &dir.join("openb_node_list_gpu_node.csv")).unwrap();
    sim::openb::read_pods(
        &mut cluster,
        &dir.join("openb_pod_list_default.csv"),
        "mini-scheduler",
    )
    .unwrap();
    assert_eq!(cluster.nodes.len(), 1213);
    assert_eq!(cluster.pods.len(), 8152);
    let loaded = policy::load_policy_file(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../config/policy-config-file.json"),
    )
    .unwrap();
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed: 42,
        percentage_of_nodes_to_score: 100,
        explain: false,
    };
    let out = sim::simulate(cluster, &loaded.resolved, &cfg).unwrap();
    let report = &out.report;

    // Every pod is accounted for exactly once.
    assert_eq!(report.pods.len(), 8152);
    let scheduled = report
        .pods
        .iter()
        .filter(|p| p.status == PodStatus::Scheduled)
        .count();
    let unschedulable = report
        .pods
        .iter()
        .filter(|p| p.status == PodStatus::Unschedulable)
        .count();
    assert_eq!(scheduled + unschedulable, 8152);
    assert!(scheduled > 7000, "only {scheduled} pods scheduled");
    assert_eq!(report.summary.by_status["Scheduled"], scheduled);

    // No node exceeds allocatable on any resource, and no GPU device exceeds 1000 milli.
    let mut placed = 0;
    for n in out.snapshot.nodes() {
        let a = &n.allocatable;
        let r = &n.requested;
        assert!(
            r.milli_cpu <= a.milli_cpu,
            "{}: cpu {} > {}",
            n.name,
            r.milli_cpu,
            a.milli_cpu
        );
        assert!(r.memory <= a.memory, "{}: memory", n.name);
        assert!(
            r.ephemeral_storage <= a.ephemeral_storage,
            "{}: ephemeral-storage",
            n.name
        );
        assert!(
            n.pods.len() as i64 <= a.allowed_pod_number,
            "{}: pods",
            n.name
        );
        for (name, v) in &r.scalar {
            assert!(
                *v <= a.scalar(name),
                "{}: {name} {v} > {}",
                n.name,
                a.scalar(name)
            );
        }
        // Device use recomputed from the per-pod choices matches and stays within a device.
        let mut per_device = vec![0u32; n.gpu_used.len()];
        for p in &n.pods {
            if p.gpu.count == 0 {
                continue;
            }
            let idx = &n.gpu_assignments[&p.key()];
            assert_eq!(
                idx.len() as u32,
                p.gpu.count,
                "{}: {} devices",
                n.name,
                p.key()
            );
            for &i in idx {
                per_device[i as usize] += p.gpu.milli;
            }
        }
        assert_eq!(per_device, n.gpu_used, "{}: device accounting", n.name);
        for (i, u) in n.gpu_used.iter().enumerate() {
            assert!(
                *u <= GPU_MILLI_PER_DEVICE,
                "{}: GPU {i} at {u} milli",
                n.name
            );
        }
        placed += n.pods.len();
    }
    assert_eq!(placed, scheduled);

    // The reported GPU indexes are the ones recorded on the nodes, and GPU models are honoured.
    let by_node: BTreeMap<&str, _> = out
        .snapshot
        .nodes()
        .iter()
        .map(|n| (n.name.as_str(), n))
        .collect();
    for p in report
        .pods
        .iter()
        .filter(|p| p.status == PodStatus::Scheduled)
    {
        let node = by_node[p.node.as_deref().unwrap()];
        let key = format!("{}/{}", p.namespace, p.name);
        assert_eq!(p.gpu_indexes.as_ref(), node.gpu_assignments.get(&key));
    }
    let g = &report.summary.gpu;
    assert_eq!(g.devices, 6212);
    assert!(g.allocation_ratio > 0.5 && g.allocation_ratio <= 1.0);
}
