//! `VolumeZone` (legacy predicate `NoVolumeZoneConflict`): the zone and region labels of the PVs
//! a pod's claims are bound to must include the node's values for the same labels.
//!
//! Follows kubernetes/kubernetes `pkg/scheduler/framework/plugins/volumezone/volume_zone.go`
//! (v1.22, Filter only; lookup failures UnschedulableAndUnresolvable since
//! kubernetes/kubernetes#102306, May 2021):
//! - the labels considered are `failure-domain.beta.kubernetes.io/{zone,region}` and
//!   `topology.kubernetes.io/{zone,region}`, each key compared with the *same* key on the node
//!   (v1.22 does not equate the beta and GA keys); a PV label value may list several zones
//!   separated by `__` (`LabelZonesToSet`; a value with an empty element is ignored);
//! - a node with none of those labels passes at once;
//! - only `persistentVolumeClaim` volumes count (generic ephemeral volumes do not: "volume zone
//!   is deprecated", kubernetes/kubernetes#100482); an unbound claim of a WaitForFirstConsumer
//!   class is skipped (VolumeBinding handles it); an unbound claim of any other class fails;
//! - the first volume that fails decides, in `spec.volumes` order.
//!
//! Lookups read the lister view of the [`VolumeIndex`](crate::volume::VolumeIndex) and are done
//! once per pod in PreFilter (v1.22 repeats them per node; the outcome is the same); PreFilter
//! returns Skip for a pod without claims. Not-found messages are the informer listers'
//! (`persistentvolumeclaim "X" not found`, `storageclass.storage.k8s.io "X" not found`,
//! `persistentvolume "X" not found`).

use std::collections::BTreeSet;

use crate::framework::{Code, CycleState, FilterPlugin, Status};
use crate::model::NodeInfo;
use crate::model::PodInfo;
use crate::snapshot::Snapshot;
use crate::volume::helpers::{WAIT_FOR_FIRST_CONSUMER, claim_class, claim_volume_name};

/// Plugin name.
pub const NAME: &str = "VolumeZone";
/// `ErrReasonConflict`.
pub const ERR_REASON_CONFLICT: &str = "node(s) had no available volume zone";

/// The labels compared (`volumeZoneLabels`).
pub const VOLUME_ZONE_LABELS: [&str; 4] = [
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// `LabelZonesToSet`: the `__`-separated zones of a label value, trimmed; `None` when an
/// element is empty (upstream logs "Failed to parse label, ignoring the label").
pub fn label_zones_to_set(value: &str) -> Option<BTreeSet<String>> {
    let mut set = BTreeSet::new();
    for z in value.split("__") {
        let z = z.trim();
        if z.is_empty() {
            return None;
        }
        set.insert(z.to_string());
    }
    Some(set)
}

/// One volume of the pod, resolved in PreFilter.
#[derive(Debug, Clone)]
enum Step {
    /// The volume's lookup failed: the status every zoned node gets.
    Fail(Status),
    /// The bound PV's zone labels: `(label key, zones)`.
    Pv(Vec<(&'static str, BTreeSet<String>)>),
}

/// PreFilter state: the pod's volumes in order, up to the first failing one.
#[derive(Debug, Clone)]
struct State {
    steps: Vec<Step>,
}

/// The VolumeZone filter.
#[derive(Debug, Default, Clone, Copy)]
pub struct VolumeZone;

fn unresolvable(msg: impl Into<std::borrow::Cow<'static, str>>) -> Status {
    Status::new(Code::UnschedulableAndUnresolvable, msg)
}

impl FilterPlugin for VolumeZone {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        if !pod.volumes.claims().any(|(_, ephemeral, _)| !ephemeral) {
            return Status::skip();
        }
        let idx = snapshot.volumes();
        let mut steps = Vec::new();
        for (claim, ephemeral, _) in pod.volumes.claims() {
            if ephemeral {
                continue;
            }
            let step = (|| {
                if claim.is_empty() {
                    return Some(Step::Fail(unresolvable(
                        "PersistentVolumeClaim had no name",
                    )));
                }
                let Some(pvc) = idx.pvc(&pod.namespace, claim) else {
                    return Some(Step::Fail(unresolvable(format!(
                        "persistentvolumeclaim {claim:?} not found"
                    ))));
                };
                let pv_name = claim_volume_name(pvc);
                if pv_name.is_empty() {
                    let class = claim_class(pvc);
                    if class.is_empty() {
                        return Some(Step::Fail(unresolvable(
                            "PersistentVolumeClaim had no pv name and storageClass name",
                        )));
                    }
                    let Some(sc) = idx.storage_class(class) else {
                        return Some(Step::Fail(unresolvable(format!(
                            "storageclass.storage.k8s.io {class:?} not found"
                        ))));
                    };
                    return match sc.volume_binding_mode.as_deref() {
                        None => Some(Step::Fail(unresolvable(format!(
                            "VolumeBindingMode not set for StorageClass {class:?}"
                        )))),
                        // Skip unbound volumes: VolumeBinding places them.
                        Some(WAIT_FOR_FIRST_CONSUMER) => None,
                        Some(_) => Some(Step::Fail(unresolvable("PersistentVolume had no name"))),
                    };
                }
                let Some(pv) = idx.pv(pv_name) else {
                    return Some(Step::Fail(unresolvable(format!(
                        "persistentvolume {pv_name:?} not found"
                    ))));
                };
                let labels = pv
                    .metadata
                    .labels
                    .iter()
                    .flatten()
                    .filter_map(|(k, v)| {
                        let key = VOLUME_ZONE_LABELS.iter().find(|l| **l == k)?;
                        Some((*key, label_zones_to_set(v)?))
                    })
                    .collect();
                Some(Step::Pv(labels))
            })();
            match step {
                Some(s @ Step::Fail(_)) => {
                    steps.push(s);
                    break;
                }
                Some(s) => steps.push(s),
                None => {}
            }
        }
        state.write(NAME, State { steps });
        Status::success()
    }

    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<State>(NAME) else {
            return Status::error("VolumeZone: no PreFilter state");
        };
        if !VOLUME_ZONE_LABELS
            .iter()
            .any(|k| node.labels.contains_key(*k))
        {
            // The node has no zone constraints.
            return Status::success();
        }
        for step in &s.steps {
            match step {
                Step::Fail(status) => return status.clone(),
                Step::Pv(labels) => {
                    for (key, zones) in labels {
                        let node_value = node.labels.get(*key).map_or("", String::as_str);
                        if !zones.contains(node_value) {
                            return unresolvable(ERR_REASON_CONFLICT);
                        }
                    }
                }
            }
        }
        Status::success()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::framework::plugins::testutil::{PodB, filter_via_batch, node, outcome, pod, want};
    use crate::volume::testutil::make_sc;

    const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
    const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
    const ZONE: &str = "topology.kubernetes.io/zone";
    const REGION: &str = "topology.kubernetes.io/region";

    fn pv(name: &str, labels: &[(&str, &str)]) -> core::PersistentVolume {
        core::PersistentVolume {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            spec: Some(Default::default()),
            status: None,
        }
    }

    fn pvc(name: &str, volume: &str, class: Option<&str>) -> core::PersistentVolumeClaim {
        core::PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(core::PersistentVolumeClaimSpec {
                volume_name: (!volume.is_empty()).then(|| volume.to_string()),
                storage_class_name: class.map(str::to_string),
                ..Default::default()
            }),
            status: None,
        }
    }

    /// `createPodWithVolume(pod, pv, pvc)`.
    fn pod_with_claim(name: &str, volume: &str, claim: &str) -> PodB {
        pod(name).volume(core::Volume {
            name: volume.into(),
            persistent_volume_claim: Some(core::PersistentVolumeClaimVolumeSource {
                claim_name: claim.into(),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    struct Case {
        name: &'static str,
        pod: PodB,
        node_labels: &'static [(&'static str, &'static str)],
        want: (Code, Vec<String>),
    }

    fn run(
        test: &str,
        pvs: Vec<core::PersistentVolume>,
        pvcs: Vec<core::PersistentVolumeClaim>,
        classes: Vec<k8s_openapi::api::storage::v1::StorageClass>,
        cases: Vec<Case>,
    ) {
        for c in cases {
            let mut n = node("host1");
            for (k, v) in c.node_labels {
                n = n.label(k, v);
            }
            let ni = n.info();
            let mut snap = Snapshot::new();
            snap.add_node(ni.clone()).unwrap();
            for p in &pvs {
                snap.volumes_mut().upsert_pv(p.clone());
            }
            for p in &pvcs {
                snap.volumes_mut().upsert_pvc(p.clone());
            }
            for sc in &classes {
                snap.volumes_mut().upsert_storage_class(sc.clone());
            }
            let p = Arc::new(c.pod.info());
            let mut state = CycleState::new();
            let pre = VolumeZone.pre_filter(&mut state, &p, &snap);
            let got = if pre.is_skip() {
                Status::success()
            } else {
                assert!(pre.is_success(), "{test}: {}: prefilter {pre:?}", c.name);
                let batch = filter_via_batch(&VolumeZone, &state, &p, &ni);
                let s = VolumeZone.filter(&state, &p, &ni);
                assert_eq!(
                    outcome(&batch),
                    outcome(&s),
                    "{test}: {}: filter_nodes",
                    c.name
                );
                s
            };
            assert_eq!(outcome(&got), c.want, "{test}: {}", c.name);
        }
    }

    fn ok() -> (Code, Vec<String>) {
        want(Code::Success, &[])
    }

    fn conflict() -> (Code, Vec<String>) {
        want(Code::UnschedulableAndUnresolvable, &[ERR_REASON_CONFLICT])
    }

    /// Upstream `volume_zone_test.go` `TestSingleZone` (table as in the v1.19 copy, index id
    /// 409185018, unchanged through v1.22; the "Stable" labels are the GA
    /// `topology.kubernetes.io` ones).
    #[test]
    fn test_single_zone() {
        let pvs = vec![
            pv("Vol_1", &[(BETA_ZONE, "us-west1-a")]),
            pv(
                "Vol_2",
                &[(BETA_REGION, "us-west1"), ("uselessLabel", "none")],
            ),
            pv("Vol_3", &[(BETA_REGION, "us-west1")]),
            pv("Vol_Stable_1", &[(ZONE, "us-west1-a")]),
            pv(
                "Vol_Stable_2",
                &[(REGION, "us-west1"), ("uselessLabel", "none")],
            ),
        ];
        let pvcs = vec![
            pvc("PVC_1", "Vol_1", None),
            pvc("PVC_2", "Vol_2", None),
            pvc("PVC_3", "Vol_3", None),
            pvc("PVC_4", "Vol_not_exist", None),
            pvc("PVC_Stable_1", "Vol_Stable_1", None),
            pvc("PVC_Stable_2", "Vol_Stable_2", None),
        ];
        let cases = vec![
            Case {
                name: "pod without volume",
                pod: pod("pod_1"),
                node_labels: &[(BETA_ZONE, "us-west1-a")],
                want: ok(),
            },
            Case {
                name: "node without labels",
                pod: pod_with_claim("pod_1", "vol_1", "PVC_1"),
                node_labels: &[],
                want: ok(),
            },
            Case {
                name: "beta zone label matched",
                pod: pod_with_claim("pod_1", "vol_1", "PVC_1"),
                node_labels: &[(BETA_ZONE, "us-west1-a"), ("uselessLabel", "none")],
                want: ok(),
            },
            Case {
                name: "beta region label matched",
                pod: pod_with_claim("pod_1", "vol_1", "PVC_2"),
                node_labels: &[(BETA_REGION, "us-west1"), ("uselessLabel", "none")],
                want: ok(),
            },
            Case {
                name: "beta region label doesn't match",
                pod: pod_with_claim("pod_1", "vol_1", "PVC_2"),
                node_labels: &[(BETA_REGION, "no_us-west1"), ("uselessLabel", "none")],
                want: conflict(),
            },
            Case {
                name: "beta zone label doesn't match",
                pod: pod_with_claim("pod_1", "vol_1", "PVC_1"),
                node_labels: &[(BETA_ZONE, "no_us-west1-a"), ("uselessLabel", "none")],
                want: conflict(),
            },
            Case {
                name: "zone label matched",
                pod: pod_with_claim("pod_1", "Vol_Stable_1", "PVC_Stable_1"),
                node_labels: &[(ZONE, "us-west1-a"), ("uselessLabel", "none")],
                want: ok(),
            },
            Case {
                name: "region label matched",
                pod: pod_with_claim("pod_1", "Vol_Stable_2", "PVC_Stable_2"),
                node_labels: &[(REGION, "us-west1"), ("uselessLabel", "none")],
                want: ok(),
            },
            Case {
                name: "region label doesn't match",
                pod: pod_with_claim("pod_1", "Vol_Stable_2", "PVC_Stable_2"),
                node_labels: &[(REGION, "no_us-west1"), ("uselessLabel", "none")],
                want: conflict(),
            },
            Case {
                name: "zone label doesn't match",
                pod: pod_with_claim("pod_1", "Vol_Stable_1", "PVC_Stable_1"),
                node_labels: &[(ZONE, "no_us-west1-a"), ("uselessLabel", "none")],
                want: conflict(),
            },
        ];
        run("TestSingleZone", pvs, pvcs, vec![], cases);
    }

    /// Upstream `volume_zone_test.go` `TestMultiZone` (index id 409185018): `__`-separated zone
    /// lists.
    #[test]
    fn test_multi_zone() {
        let pvs = vec![
            pv("Vol_1", &[(BETA_ZONE, "us-west1-a")]),
            pv(
                "Vol_2",
                &[(BETA_ZONE, "us-west1-b"), ("uselessLabel", "none")],
            ),
            pv("Vol_3", &[(BETA_ZONE, "us-west1-c__us-west1-a")]),
            pv("Vol_Stable_1", &[(ZONE, "us-west1-a")]),
            pv("Vol_Stable_2", &[(ZONE, "us-west1-c__us-west1-a")]),
        ];
        let pvcs = vec![
            pvc("PVC_1", "Vol_1", None),
            pvc("PVC_2", "Vol_2", None),
            pvc("PVC_3", "Vol_3", None),
            pvc("PVC_4", "Vol_not_exist", None),
            pvc("PVC_Stable_1", "Vol_Stable_1", None),
            pvc("PVC_Stable_2", "Vol_Stable_2", None),
        ];
        let cases = vec![
            Case {
                name: "node without labels",
                pod: pod_with_claim("pod_1", "Vol_3", "PVC_3"),
                node_labels: &[],
                want: ok(),
            },
            Case {
                name: "beta zone label matched",
                pod: pod_with_claim("pod_1", "Vol_3", "PVC_3"),
                node_labels: &[(BETA_ZONE, "us-west1-a"), ("uselessLabel", "none")],
                want: ok(),
            },
            Case {
                name: "beta zone label doesn't match",
                pod: pod_with_claim("pod_1", "vol_1", "PVC_1"),
                node_labels: &[(BETA_ZONE, "us-west1-b"), ("uselessLabel", "none")],
                want: conflict(),
            },
            Case {
                name: "zone label matched",
                pod: pod_with_claim("pod_1", "Vol_Stable_2", "PVC_Stable_2"),
                node_labels: &[(ZONE, "us-west1-a"), ("uselessLabel", "none")],
                want: ok(),
            },
            Case {
                name: "zone label doesn't match",
                pod: pod_with_claim("pod_1", "Vol_Stable_1", "PVC_Stable_1"),
                node_labels: &[(ZONE, "us-west1-b"), ("uselessLabel", "none")],
                want: conflict(),
            },
        ];
        run("TestMultiZone", pvs, pvcs, vec![], cases);
    }

    /// Upstream `volume_zone_test.go` `TestWithBinding` (index id 409185018) with v1.22's
    /// statuses (UnschedulableAndUnresolvable instead of Error, kubernetes/kubernetes#102306).
    /// Deviation: upstream's fake lister words the missing class `storageclasses.storage.k8s.io
    /// "Class_0" not found`; the real informer lister, reproduced here, says `storageclass`.
    #[test]
    fn test_with_binding() {
        let classes = vec![
            make_sc("Class_Immediate", None, ""),
            make_sc("Class_Wait", Some(WAIT_FOR_FIRST_CONSUMER), ""),
        ];
        let pvs = vec![pv("Vol_1", &[(BETA_ZONE, "us-west1-a")])];
        let pvcs = vec![
            pvc("PVC_1", "Vol_1", None),
            pvc("PVC_NoSC", "", Some("Class_0")),
            pvc("PVC_EmptySC", "", None),
            pvc("PVC_WaitSC", "", Some("Class_Wait")),
            pvc("PVC_ImmediateSC", "", Some("Class_Immediate")),
        ];
        let node_labels: &[(&str, &str)] = &[(BETA_ZONE, "us-west1-a"), ("uselessLabel", "none")];
        let cases = vec![
            Case {
                name: "label zone failure domain matched",
                pod: pod_with_claim("pod_1", "vol_1", "PVC_1"),
                node_labels,
                want: ok(),
            },
            Case {
                name: "unbound volume empty storage class",
                pod: pod_with_claim("pod_1", "vol_1", "PVC_EmptySC"),
                node_labels,
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &["PersistentVolumeClaim had no pv name and storageClass name"],
                ),
            },
            Case {
                name: "unbound volume no storage class",
                pod: pod_with_claim("pod_1", "vol_1", "PVC_NoSC"),
                node_labels,
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &["storageclass.storage.k8s.io \"Class_0\" not found"],
                ),
            },
            Case {
                name: "unbound volume immediate binding mode",
                pod: pod_with_claim("pod_1", "vol_1", "PVC_ImmediateSC"),
                node_labels,
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &["VolumeBindingMode not set for StorageClass \"Class_Immediate\""],
                ),
            },
            Case {
                name: "unbound volume wait binding mode",
                pod: pod_with_claim("pod_1", "vol_1", "PVC_WaitSC"),
                node_labels,
                want: ok(),
            },
        ];
        run("TestWithBinding", pvs, pvcs, classes, cases);
    }

    /// Not an upstream table: v1.22 behaviours the tables above do not reach — a missing PVC or
    /// PV, the first failing volume deciding, generic ephemeral volumes ignored, an
    /// unparsable zone label ignored, and a node without zone labels passing a missing claim.
    #[test]
    fn lookups_order_and_ignored_volumes() {
        let pvs = vec![
            pv("zoned", &[(ZONE, "a")]),
            pv("bad-label", &[(ZONE, "a__")]),
        ];
        let pvcs = vec![
            pvc("zoned", "zoned", None),
            pvc("bad", "bad-label", None),
            pvc("orphan", "gone", None),
        ];
        let zoned: &[(&str, &str)] = &[(ZONE, "b")];
        let cases = vec![
            Case {
                name: "missing claim",
                pod: pod_with_claim("p", "v", "nope"),
                node_labels: zoned,
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &["persistentvolumeclaim \"nope\" not found"],
                ),
            },
            Case {
                name: "missing claim on a node without zone labels",
                pod: pod_with_claim("p", "v", "nope"),
                node_labels: &[],
                want: ok(),
            },
            Case {
                name: "missing volume",
                pod: pod_with_claim("p", "v", "orphan"),
                node_labels: zoned,
                want: want(
                    Code::UnschedulableAndUnresolvable,
                    &["persistentvolume \"gone\" not found"],
                ),
            },
            Case {
                name: "zone conflict before a later missing claim",
                pod: pod_with_claim("p", "v", "zoned").volume(core::Volume {
                    name: "w".into(),
                    persistent_volume_claim: Some(core::PersistentVolumeClaimVolumeSource {
                        claim_name: "nope".into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                node_labels: zoned,
                want: conflict(),
            },
            Case {
                name: "unparsable zone label ignored",
                pod: pod_with_claim("p", "v", "bad"),
                node_labels: zoned,
                want: ok(),
            },
            Case {
                name: "generic ephemeral volumes are not checked",
                pod: pod("p").volume(core::Volume {
                    name: "e".into(),
                    ephemeral: Some(Default::default()),
                    ..Default::default()
                }),
                node_labels: zoned,
                want: ok(),
            },
        ];
        run("lookups", pvs, pvcs, vec![], cases);
        assert_eq!(
            label_zones_to_set(" a __b"),
            Some(BTreeSet::from(["a".to_string(), "b".to_string()]))
        );
        assert_eq!(label_zones_to_set(""), None);
    }
}
