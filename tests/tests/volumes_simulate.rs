//! `simulate` over a cluster file with PersistentVolumes, PersistentVolumeClaims,
//! StorageClasses and CSINodes: the volume predicates of the default provider (v1.22 order)
//! with their FailedScheduling texts, and VolumeBinding's Reserve making a PV taken for the pods
//! scheduled after it.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use scheduler::policy::default_provider;
use scheduler::sim::{self, Cluster, PodOutcome, PodStatus, SimulationConfig};

const CLUSTER: &str = r#"
# Three nodes: two in zone a (node-a1 is an m5 with the EBS Nitro limit), one in zone b.
apiVersion: v1
kind: Node
metadata:
  name: node-a1
  labels: {kubernetes.io/hostname: node-a1, topology.kubernetes.io/zone: a, node.kubernetes.io/instance-type: m5.large}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110", attachable-volumes-aws-ebs: "2"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-a2
  labels: {kubernetes.io/hostname: node-a2, topology.kubernetes.io/zone: a}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-b1
  labels: {kubernetes.io/hostname: node-b1, topology.kubernetes.io/zone: b}
status:
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
---
apiVersion: v1
kind: List
items:
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata: {name: local}
  provisioner: kubernetes.io/no-provisioner
  volumeBindingMode: WaitForFirstConsumer
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata: {name: zonal}
  provisioner: ebs.csi.aws.com
  volumeBindingMode: WaitForFirstConsumer
  allowedTopologies:
  - matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [b]}]
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata: {name: immediate}
  provisioner: ebs.csi.aws.com
---
# Local PVs: one on node-a1 (10Gi), one on node-a2 (10Gi); none on node-b1.
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-a1}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/disk}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-a1]}]
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-a2}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/disk}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-a2]}]
---
# A bound EBS PV labelled for zone b, and the claim bound to it.
apiVersion: v1
kind: PersistentVolume
metadata:
  name: ebs-b
  labels: {topology.kubernetes.io/zone: b}
spec:
  capacity: {storage: 5Gi}
  accessModes: [ReadWriteOnce]
  awsElasticBlockStore: {volumeID: vol-b}
  claimRef: {namespace: default, name: data-b}
status: {phase: Bound}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-b
  namespace: default
  annotations: {pv.kubernetes.io/bind-completed: "yes"}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
  volumeName: ebs-b
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: local-1, namespace: default},
   spec: {accessModes: [ReadWriteOnce], storageClassName: local, resources: {requests: {storage: 5Gi}}}}
- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: local-2, namespace: default},
   spec: {accessModes: [ReadWriteOnce], storageClassName: local, resources: {requests: {storage: 5Gi}}}}
- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: local-3, namespace: default},
   spec: {accessModes: [ReadWriteOnce], storageClassName: local, resources: {requests: {storage: 5Gi}}}}
- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: fresh, namespace: default},
   spec: {accessModes: [ReadWriteOnce], storageClassName: zonal, resources: {requests: {storage: 1Gi}}}}
- {apiVersion: v1, kind: PersistentVolumeClaim, metadata: {name: waiting, namespace: default},
   spec: {accessModes: [ReadWriteOnce], storageClassName: immediate, resources: {requests: {storage: 1Gi}}}}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node-b1}
spec:
  drivers:
  - {name: ebs.csi.aws.com, nodeID: i-b1, allocatable: {count: 25}}
---
# node-a1 already has two EBS volumes attached: its limit of 2 is reached.
apiVersion: v1
kind: Pod
metadata: {name: ebs-user, namespace: default}
spec:
  nodeName: node-a1
  containers: [{name: c, image: app}]
  volumes:
  - {name: v1, awsElasticBlockStore: {volumeID: vol-1}}
  - {name: v2, awsElasticBlockStore: {volumeID: vol-2}}
---
apiVersion: v1
kind: List
items:
# Three pods, one local claim each: two local PVs, so the third finds none. The first
# takes local-a1 or local-a2; the second must take the other one.
- {apiVersion: v1, kind: Pod, metadata: {name: local-1, namespace: default, creationTimestamp: "2024-01-01T00:00:01Z"},
   spec: {schedulerName: mini-scheduler, containers: [{name: c, image: app}],
          volumes: [{name: d, persistentVolumeClaim: {claimName: local-1}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: local-2, namespace: default, creationTimestamp: "2024-01-01T00:00:02Z"},
   spec: {schedulerName: mini-scheduler, containers: [{name: c, image: app}],
          volumes: [{name: d, persistentVolumeClaim: {claimName: local-2}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: local-3, namespace: default, creationTimestamp: "2024-01-01T00:00:03Z"},
   spec: {schedulerName: mini-scheduler, containers: [{name: c, image: app}],
          volumes: [{name: d, persistentVolumeClaim: {claimName: local-3}}]}}
# Bound to a zone-b PV: only node-b1 (VolumeZone).
- {apiVersion: v1, kind: Pod, metadata: {name: zoned, namespace: default, creationTimestamp: "2024-01-01T00:00:04Z"},
   spec: {schedulerName: mini-scheduler, containers: [{name: c, image: app}],
          volumes: [{name: d, persistentVolumeClaim: {claimName: data-b}}]}}
# Dynamic provisioning allowed only in zone b.
- {apiVersion: v1, kind: Pod, metadata: {name: provisioned, namespace: default, creationTimestamp: "2024-01-01T00:00:05Z"},
   spec: {schedulerName: mini-scheduler, containers: [{name: c, image: app}],
          volumes: [{name: d, persistentVolumeClaim: {claimName: fresh}}]}}
# An unbound claim of an Immediate class: the PV controller's job, not ours.
- {apiVersion: v1, kind: Pod, metadata: {name: immediate, namespace: default, creationTimestamp: "2024-01-01T00:00:06Z"},
   spec: {schedulerName: mini-scheduler, containers: [{name: c, image: app}],
          volumes: [{name: d, persistentVolumeClaim: {claimName: waiting}}]}}
# A claim that does not exist.
- {apiVersion: v1, kind: Pod, metadata: {name: missing, namespace: default, creationTimestamp: "2024-01-01T00:00:07Z"},
   spec: {schedulerName: mini-scheduler, containers: [{name: c, image: app}],
          volumes: [{name: d, persistentVolumeClaim: {claimName: nope}}]}}
# One more inline EBS volume: node-a1 is at its attach limit (EBSLimits).
- {apiVersion: v1, kind: Pod, metadata: {name: ebs-more, namespace: default, creationTimestamp: "2024-01-01T00:00:08Z"},
   spec: {schedulerName: mini-scheduler, containers: [{name: c, image: app}],
          affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [
            {matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [node-a1]}]}]}}},
          volumes: [{name: e, awsElasticBlockStore: {volumeID: vol-3}}]}}
"#;

fn run(
    seed: u64,
) -> (
    BTreeMap<String, PodOutcome>,
    Vec<String>,
    scheduler::snapshot::Snapshot,
) {
    let mut cluster = Cluster::default();
    sim::files::parse_cluster_text(&mut cluster, "volumes.yaml", CLUSTER).unwrap();
    assert_eq!(cluster.persistent_volumes.len(), 3);
    assert_eq!(cluster.persistent_volume_claims.len(), 6);
    assert_eq!(cluster.storage_classes.len(), 3);
    assert_eq!(cluster.csi_nodes.len(), 1);
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed,
        percentage_of_nodes_to_score: 100,
        explain: false,
    };
    let out = sim::simulate(cluster, &default_provider(), &cfg).unwrap();
    let pods = out
        .report
        .pods
        .iter()
        .map(|p| (p.name.clone(), p.clone()))
        .collect();
    (pods, out.report.warnings, out.snapshot)
}

#[test]
fn volume_predicates_in_simulate() {
    for seed in 0..8 {
        let (pods, warnings, snapshot) = run(seed);
        assert!(warnings.is_empty(), "{warnings:?}");
        // Reserve: each local claim takes a different local PV.
        let n1 = pods["local-1"].node.clone().unwrap();
        let n2 = pods["local-2"].node.clone().unwrap();
        assert!(["node-a1", "node-a2"].contains(&n1.as_str()), "{n1}");
        assert!(["node-a1", "node-a2"].contains(&n2.as_str()), "{n2}");
        assert_ne!(
            n1, n2,
            "seed {seed}: the second pod must not get the PV the first took"
        );
        // The bindings were assumed and, in a simulation, completed as the PV controller would:
        // each local PV names the claim of the pod on its node.
        let volumes = snapshot.volumes();
        for (claim, node) in [("local-1", &n1), ("local-2", &n2)] {
            let pv_name = format!("local-{}", &node[5..]);
            let pv = volumes.pv(&pv_name).unwrap();
            let claim_ref = pv.spec.as_ref().unwrap().claim_ref.as_ref().unwrap();
            assert_eq!(claim_ref.name.as_deref(), Some(claim), "seed {seed}");
            let pvc = volumes.pvc("default", claim).unwrap();
            assert_eq!(
                pvc.spec.as_ref().unwrap().volume_name.as_deref(),
                Some(pv_name.as_str())
            );
        }
        // The provisioned claim carries the node the scheduler selected.
        let fresh = volumes.pvc("default", "fresh").unwrap();
        assert_eq!(
            fresh.metadata.annotations.as_ref().unwrap()["volume.kubernetes.io/selected-node"],
            "node-b1"
        );
        assert_eq!(pods["local-3"].status, PodStatus::Unschedulable);
        assert_eq!(
            pods["local-3"].message,
            "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."
        );
        assert_eq!(pods["zoned"].node.as_deref(), Some("node-b1"));
        assert_eq!(pods["provisioned"].node.as_deref(), Some("node-b1"));
        assert_eq!(
            pods["immediate"].message,
            "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims."
        );
        assert_eq!(
            pods["missing"].message,
            "0/3 nodes are available: 3 persistentvolumeclaim \"nope\" not found."
        );
        assert_eq!(
            pods["ebs-more"].message,
            "0/3 nodes are available: 1 node(s) exceed max volume count, 2 node(s) didn't match Pod's node affinity/selector."
        );
    }
}

/// The same `zoned` pod fails everywhere but on zone b, with VolumeZone's text.
#[test]
fn volume_zone_conflict_text() {
    let text = CLUSTER.replace(
        "claimName: data-b}}]}}",
        "claimName: data-b}}], nodeSelector: {topology.kubernetes.io/zone: a}}}",
    );
    let mut cluster = Cluster::default();
    sim::files::parse_cluster_text(&mut cluster, "volumes.yaml", &text).unwrap();
    let cfg = SimulationConfig {
        scheduler_name: "mini-scheduler".into(),
        seed: 0,
        percentage_of_nodes_to_score: 100,
        explain: true,
    };
    let out = sim::simulate(cluster, &default_provider(), &cfg).unwrap();
    let zoned = out.report.pods.iter().find(|p| p.name == "zoned").unwrap();
    assert_eq!(zoned.status, PodStatus::Unschedulable);
    // node-b1 fails the node selector; node-a1 is at its EBS attach limit (EBSLimits runs
    // before VolumeZone); node-a2 fails VolumeZone.
    assert_eq!(
        zoned.message,
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) exceed max volume count, 1 node(s) had no available volume zone."
    );
}
