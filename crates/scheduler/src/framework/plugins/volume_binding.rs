//! `VolumeBinding` (legacy predicate `CheckVolumeBinding`): a pod's PersistentVolumeClaims must
//! be bound, or bindable on the node — to an available PV whose node affinity fits, or by
//! dynamic provisioning allowed there — and the bound PVs' node affinity must fit the node.
//!
//! Follows kubernetes/kubernetes `pkg/scheduler/framework/plugins/volumebinding/volume_binding.go`
//! (v1.22; PreFilter/Filter/Reserve/Unreserve/PreBind as in index id 218315902, the binder in
//! [`crate::volume::binder`]):
//! - **PreFilter**: Skip for a pod without claims (`persistentVolumeClaim` or generic ephemeral
//!   volumes); each claim must exist, not be terminating, and an ephemeral claim must be
//!   controlled by the pod (else UnschedulableAndUnresolvable with the lister's message); an
//!   unbound claim of an Immediate class (or pre-bound to a PV) fails the pod with
//!   `pod has unbound immediate PersistentVolumeClaims` — the PV controller binds those;
//! - **Filter**: bound claims' PVs must exist (`pvc(s) bound to non-existent pv(s)`) and their
//!   node affinity fit (`node(s) had volume node affinity conflict`); WaitForFirstConsumer claims
//!   need an available PV matching class, size, access modes, volume mode, selector and node
//!   affinity, or a class that provisions (not `kubernetes.io/no-provisioner`) within its
//!   `allowedTopologies` (`node(s) didn't find available persistent volumes to bind`); all
//!   UnschedulableAndUnresolvable;
//! - **Reserve** ([`FilterPlugin::reserve`]): the bindings chosen for the node go out as
//!   [`Reservation::Volumes`]; the caller assumes them in the
//!   [`VolumeIndex`] with the pod so the next pods see the PVs taken;
//! - **Unreserve**: forgetting the pod reverts the assumption
//!   ([`Cache::forget_pod`](crate::cache::Cache::forget_pod));
//! - **PreBind** (cluster mode, `controller::volume_binding` (feature `cluster`)): the PV and PVC updates,
//!   then the wait for the PV controller.
//!
//! Reserve recomputes the chosen node's decision from the cycle state instead of keeping one per
//! node from Filter (v1.22's `podVolumesByNode`): same snapshot, same result, no per-node
//! allocation. The VolumeCapacityPriority score (alpha, off in v1.22) is not implemented.

use std::sync::Arc;

use k8s_openapi::api::core::v1 as core;

use crate::framework::NodeInfo;
use crate::framework::{Code, CycleState, FilterPlugin, PodInfo, Reservation, Status};
use crate::snapshot::Snapshot;
use crate::volume::binder::{
    ERR_UNBOUND_IMMEDIATE_PVC, NodeRef, find_pod_volumes, get_pod_volumes, pod_has_pvcs,
};
use crate::volume::csi::MigrationGates;
use crate::volume::{PodVolumes, VolumeError, VolumeIndex};

/// Plugin name.
pub const NAME: &str = "VolumeBinding";
/// `DefaultBindTimeoutSeconds`: how long PreBind waits for the PV controller (v1.22; a Policy
/// cannot change `VolumeBindingArgs`).
pub const DEFAULT_BIND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// The VolumeBinding plugin.
#[derive(Debug, Clone, Copy, Default)]
pub struct VolumeBinding {
    gates: MigrationGates,
}

impl VolumeBinding {
    /// The plugin with these migration gates (v1.22's: [`MigrationGates::default`]).
    pub fn new(gates: MigrationGates) -> VolumeBinding {
        VolumeBinding { gates }
    }
}

/// PreFilter state (`stateData`).
struct State {
    index: Arc<VolumeIndex>,
    bound: Vec<Arc<core::PersistentVolumeClaim>>,
    to_bind: Vec<Arc<core::PersistentVolumeClaim>>,
}

impl VolumeBinding {
    fn find(
        &self,
        s: &State,
        node: &NodeInfo,
    ) -> Result<(PodVolumes, Vec<&'static str>), VolumeError> {
        find_pod_volumes(
            &s.index,
            self.gates,
            &s.bound,
            &s.to_bind,
            NodeRef {
                name: &node.name,
                labels: &node.labels,
            },
        )
    }
}

impl FilterPlugin for VolumeBinding {
    fn name(&self) -> &'static str {
        NAME
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snapshot: &Snapshot) -> Status {
        if !pod.volumes.has_claims() {
            return Status::skip();
        }
        let index = snapshot.volumes().clone();
        match pod_has_pvcs(&index, pod) {
            Err(e) => return Status::new(Code::UnschedulableAndUnresolvable, e.to_string()),
            Ok(false) => return Status::skip(),
            Ok(true) => {}
        }
        let claims = match get_pod_volumes(&index, pod) {
            Ok(c) => c,
            Err(e) => return Status::error(e.to_string()),
        };
        if !claims.immediate.is_empty() {
            return Status::new(
                Code::UnschedulableAndUnresolvable,
                ERR_UNBOUND_IMMEDIATE_PVC,
            );
        }
        state.write(
            NAME,
            State {
                index,
                bound: claims.bound,
                to_bind: claims.to_bind,
            },
        );
        Status::success()
    }

    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<State>(NAME) else {
            return Status::error("VolumeBinding: no PreFilter state");
        };
        match self.find(s, node) {
            Err(e) => Status::error(e.to_string()),
            Ok((_, reasons)) if reasons.is_empty() => Status::success(),
            Ok((_, reasons)) => Status {
                code: Code::UnschedulableAndUnresolvable,
                reasons: reasons.into_iter().map(Into::into).collect(),
                plugin: "",
            },
        }
    }

    fn reserve(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<Option<Reservation>, Status> {
        let Some(s) = state.read::<State>(NAME) else {
            return Ok(None);
        };
        let (volumes, _) = self
            .find(s, node)
            .map_err(|e| Status::error(e.to_string()))?;
        Ok(Some(Reservation::Volumes(Arc::new(volumes))))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::{NodeB, PodB, node, outcome, pod, want};
    use crate::volume::binder::{
        ERR_REASON_BIND_CONFLICT, ERR_REASON_NODE_CONFLICT, ERR_REASON_PV_NOT_EXIST,
    };
    use crate::volume::helpers::WAIT_FOR_FIRST_CONSUMER;
    use crate::volume::testutil::{make_pv, make_pvc, make_sc, with_node_affinity};

    const HOSTNAME: &str = "kubernetes.io/hostname";
    const WAIT_SC: &str = "wait-sc";
    const IMMEDIATE_SC: &str = "immediate-sc";
    const WAIT_HDD_SC: &str = "wait-hdd-sc";

    /// `makeNode(name)`: labelled with its hostname.
    fn make_node(name: &str) -> NodeB {
        node(name).label(HOSTNAME, name)
    }

    /// `makePod(name, pvcNames)`.
    fn make_pod(name: &str, claims: &[&str]) -> PodB {
        claims.iter().fold(pod(name), |p, c| {
            p.volume(core::Volume {
                name: c.to_string(),
                persistent_volume_claim: Some(core::PersistentVolumeClaimVolumeSource {
                    claim_name: c.to_string(),
                    ..Default::default()
                }),
                ..Default::default()
            })
        })
    }

    struct Case {
        name: &'static str,
        pod: PodB,
        nodes: Vec<NodeB>,
        pvcs: Vec<core::PersistentVolumeClaim>,
        pvs: Vec<core::PersistentVolume>,
        want_pre_filter: (Code, Vec<String>),
        want_filter: Vec<(Code, Vec<String>)>,
    }

    fn ok() -> (Code, Vec<String>) {
        want(Code::Success, &[])
    }

    fn unresolvable(reasons: &[&str]) -> (Code, Vec<String>) {
        want(Code::UnschedulableAndUnresolvable, reasons)
    }

    fn run(cases: Vec<Case>) {
        for c in cases {
            let mut snap = Snapshot::new();
            let infos: Vec<NodeInfo> = c.nodes.into_iter().map(|n| n.info()).collect();
            for n in &infos {
                snap.add_node(n.clone()).unwrap();
            }
            {
                let idx = snap.volumes_mut();
                idx.upsert_storage_class(make_sc(IMMEDIATE_SC, Some("Immediate"), ""));
                idx.upsert_storage_class(make_sc(WAIT_SC, Some(WAIT_FOR_FIRST_CONSUMER), ""));
                idx.upsert_storage_class(make_sc(WAIT_HDD_SC, Some(WAIT_FOR_FIRST_CONSUMER), ""));
                for p in &c.pvcs {
                    idx.upsert_pvc(p.clone());
                }
                for p in &c.pvs {
                    idx.upsert_pv(p.clone());
                }
            }
            let plugin = VolumeBinding::default();
            let p = c.pod.info();
            let mut state = CycleState::new();
            let pre = plugin.pre_filter(&mut state, &p, &snap);
            // A Skip is upstream's nil PreFilter status with `skip` in the state.
            let pre_outcome = if pre.is_skip() { ok() } else { outcome(&pre) };
            assert_eq!(pre_outcome, c.want_pre_filter, "{}: PreFilter", c.name);
            if !(pre.is_success()) {
                continue;
            }
            for (n, w) in infos.iter().zip(&c.want_filter) {
                let got = plugin.filter(&state, &p, n);
                assert_eq!(&outcome(&got), w, "{}: Filter on {}", c.name, n.name);
            }
        }
    }

    /// Upstream `volume_binding_test.go` `TestVolumeBinding` (v1.21 copy, index id 1551450310;
    /// the v1.22 table has the same rows). Only PreFilter and Filter: the scores of the
    /// VolumeCapacityPriority rows belong to an alpha feature that is off in v1.22.
    #[test]
    fn test_volume_binding() {
        let gi = |n: &'static str| Some(n);
        let hostname_pv = |name: &str, class: &str, cap: &str, host: &str| {
            with_node_affinity(make_pv(name, class, cap), &[(HOSTNAME, &[host])])
        };
        let zonal_pv = |name: &str, cap: &str, region: &str, zone: &str| {
            with_node_affinity(
                make_pv(name, WAIT_SC, cap),
                &[
                    ("topology.kubernetes.io/region", &[region]),
                    ("topology.kubernetes.io/zone", &[zone]),
                ],
            )
        };
        let zonal_node = |name: &str, region: &str, zone: &str| {
            make_node(name)
                .label("topology.kubernetes.io/region", region)
                .label("topology.kubernetes.io/zone", zone)
        };
        let zonal_nodes = || {
            vec![
                zonal_node("zone-a-node-a", "region-a", "zone-a"),
                zonal_node("zone-a-node-b", "region-a", "zone-a"),
                zonal_node("zone-b-node-a", "region-b", "zone-b"),
                zonal_node("zone-b-node-b", "region-b", "zone-b"),
                zonal_node("zone-c-node-a", "region-c", "zone-c"),
                zonal_node("zone-c-node-b", "region-c", "zone-c"),
            ]
        };
        let zonal_pvs = || {
            vec![
                zonal_pv("pv-a-0", "200Gi", "region-a", "zone-a"),
                zonal_pv("pv-a-1", "200Gi", "region-a", "zone-a"),
                zonal_pv("pv-b-0", "100Gi", "region-b", "zone-b"),
                zonal_pv("pv-b-1", "100Gi", "region-b", "zone-b"),
            ]
        };
        let bind_conflict = || unresolvable(&[ERR_REASON_BIND_CONFLICT]);
        let cases = vec![
            Case {
                name: "pod has not pvcs",
                pod: make_pod("pod-a", &[]),
                nodes: vec![make_node("node-a")],
                pvcs: vec![],
                pvs: vec![],
                want_pre_filter: ok(),
                want_filter: vec![ok()],
            },
            Case {
                name: "all bound",
                pod: make_pod("pod-a", &["pvc-a"]),
                nodes: vec![make_node("node-a")],
                pvcs: vec![make_pvc("pvc-a", "pv-a", WAIT_SC, None)],
                pvs: vec![make_pv("pv-a", WAIT_SC, "")],
                want_pre_filter: ok(),
                want_filter: vec![ok()],
            },
            Case {
                name: "PVC does not exist",
                pod: make_pod("pod-a", &["pvc-a"]),
                nodes: vec![make_node("node-a")],
                pvcs: vec![],
                pvs: vec![],
                want_pre_filter: unresolvable(&["persistentvolumeclaim \"pvc-a\" not found"]),
                want_filter: vec![],
            },
            Case {
                name: "Part of PVCs do not exist",
                pod: make_pod("pod-a", &["pvc-a", "pvc-b"]),
                nodes: vec![make_node("node-a")],
                pvcs: vec![make_pvc("pvc-a", "pv-a", WAIT_SC, None)],
                pvs: vec![],
                want_pre_filter: unresolvable(&["persistentvolumeclaim \"pvc-b\" not found"]),
                want_filter: vec![],
            },
            Case {
                name: "immediate claims not bound",
                pod: make_pod("pod-a", &["pvc-a"]),
                nodes: vec![make_node("node-a")],
                pvcs: vec![make_pvc("pvc-a", "", IMMEDIATE_SC, None)],
                pvs: vec![],
                want_pre_filter: unresolvable(&[ERR_UNBOUND_IMMEDIATE_PVC]),
                want_filter: vec![],
            },
            Case {
                name: "unbound claims no matches",
                pod: make_pod("pod-a", &["pvc-a"]),
                nodes: vec![make_node("node-a")],
                pvcs: vec![make_pvc("pvc-a", "", WAIT_SC, None)],
                pvs: vec![],
                want_pre_filter: ok(),
                want_filter: vec![bind_conflict()],
            },
            Case {
                name: "bound and unbound unsatisfied",
                pod: make_pod("pod-a", &["pvc-a", "pvc-b"]),
                nodes: vec![make_node("node-a").label("foo", "barbar")],
                pvcs: vec![
                    make_pvc("pvc-a", "pv-a", WAIT_SC, None),
                    make_pvc("pvc-b", "", WAIT_SC, None),
                ],
                pvs: vec![with_node_affinity(
                    make_pv("pv-a", WAIT_SC, ""),
                    &[("foo", &["bar"])],
                )],
                want_pre_filter: ok(),
                want_filter: vec![unresolvable(&[
                    ERR_REASON_NODE_CONFLICT,
                    ERR_REASON_BIND_CONFLICT,
                ])],
            },
            Case {
                name: "pvc not found",
                pod: make_pod("pod-a", &["pvc-a"]),
                nodes: vec![make_node("node-a")],
                pvcs: vec![],
                pvs: vec![],
                want_pre_filter: unresolvable(&["persistentvolumeclaim \"pvc-a\" not found"]),
                want_filter: vec![],
            },
            Case {
                name: "pv not found",
                pod: make_pod("pod-a", &["pvc-a"]),
                nodes: vec![make_node("node-a")],
                pvcs: vec![make_pvc("pvc-a", "pv-a", WAIT_SC, None)],
                pvs: vec![],
                want_pre_filter: ok(),
                want_filter: vec![unresolvable(&[ERR_REASON_PV_NOT_EXIST])],
            },
            Case {
                name: "local volumes with close capacity are preferred",
                pod: make_pod("pod-a", &["pvc-a"]),
                nodes: vec![
                    make_node("node-a"),
                    make_node("node-b"),
                    make_node("node-c"),
                ],
                pvcs: vec![make_pvc("pvc-a", "", WAIT_SC, gi("50Gi"))],
                pvs: vec![
                    hostname_pv("pv-a-0", WAIT_SC, "200Gi", "node-a"),
                    hostname_pv("pv-a-1", WAIT_SC, "200Gi", "node-a"),
                    hostname_pv("pv-b-0", WAIT_SC, "100Gi", "node-b"),
                    hostname_pv("pv-b-1", WAIT_SC, "100Gi", "node-b"),
                ],
                want_pre_filter: ok(),
                want_filter: vec![ok(), ok(), bind_conflict()],
            },
            Case {
                name: "local volumes with close capacity are preferred (multiple pvcs)",
                pod: make_pod("pod-a", &["pvc-0", "pvc-1"]),
                nodes: vec![
                    make_node("node-a"),
                    make_node("node-b"),
                    make_node("node-c"),
                ],
                pvcs: vec![
                    make_pvc("pvc-0", "", WAIT_SC, gi("50Gi")),
                    make_pvc("pvc-1", "", WAIT_HDD_SC, gi("100Gi")),
                ],
                pvs: vec![
                    hostname_pv("pv-a-0", WAIT_SC, "200Gi", "node-a"),
                    hostname_pv("pv-a-1", WAIT_SC, "200Gi", "node-a"),
                    hostname_pv("pv-a-2", WAIT_HDD_SC, "200Gi", "node-a"),
                    hostname_pv("pv-a-3", WAIT_HDD_SC, "200Gi", "node-a"),
                    hostname_pv("pv-b-0", WAIT_SC, "100Gi", "node-b"),
                    hostname_pv("pv-b-1", WAIT_SC, "100Gi", "node-b"),
                    hostname_pv("pv-b-2", WAIT_HDD_SC, "100Gi", "node-b"),
                    hostname_pv("pv-b-3", WAIT_HDD_SC, "100Gi", "node-b"),
                ],
                want_pre_filter: ok(),
                want_filter: vec![ok(), ok(), bind_conflict()],
            },
            Case {
                name: "zonal volumes with close capacity are preferred",
                pod: make_pod("pod-a", &["pvc-a"]),
                nodes: zonal_nodes(),
                pvcs: vec![make_pvc("pvc-a", "", WAIT_SC, gi("50Gi"))],
                pvs: zonal_pvs(),
                want_pre_filter: ok(),
                want_filter: vec![ok(), ok(), ok(), ok(), bind_conflict(), bind_conflict()],
            },
            Case {
                name: "zonal volumes with close capacity are preferred (custom shape)",
                pod: make_pod("pod-a", &["pvc-a"]),
                nodes: zonal_nodes(),
                pvcs: vec![make_pvc("pvc-a", "", WAIT_SC, gi("50Gi"))],
                pvs: zonal_pvs(),
                want_pre_filter: ok(),
                want_filter: vec![ok(), ok(), ok(), ok(), bind_conflict(), bind_conflict()],
            },
        ];
        run(cases);
    }

    /// Cost guards: with the default provider's volume filters (VolumeBinding, VolumeZone, the
    /// limits plugins), a pod without claims or inline attachable volumes gets Skip from each
    /// PreFilter and leaves nothing in the cycle state; after a cycle of a pod with claims the
    /// copy-on-write index is shared by no plugin state, so the Reserve that follows
    /// (`volumes_mut`) does not copy it.
    #[test]
    fn volume_filters_cost_nothing_for_pods_without_volumes_and_index_is_not_copied() {
        use crate::framework::Framework;
        use crate::schedule_one::Algorithm;
        let fwk = Framework::from_policy(&crate::policy::default_provider()).unwrap();
        let volume_filters = [
            NAME,
            super::super::volume_zone::NAME,
            super::super::node_volume_limits::NAME,
            "EBSLimits",
            "GCEPDLimits",
            "AzureDiskLimits",
        ];
        let mut snap = Snapshot::new();
        snap.add_node(
            make_node("node-a")
                .allocatable(&[("cpu", "4"), ("memory", "8Gi"), ("pods", "10")])
                .info(),
        )
        .unwrap();
        {
            let idx = snap.volumes_mut();
            idx.upsert_storage_class(make_sc(WAIT_SC, Some(WAIT_FOR_FIRST_CONSUMER), ""));
            idx.upsert_pvc(make_pvc("pvc-a", "", WAIT_SC, None));
            idx.upsert_pv(make_pv("pv-a", WAIT_SC, "1Gi"));
        }
        let plain = pod("plain").info();
        let mut state = CycleState::new();
        let mut seen = 0;
        for f in fwk
            .filters
            .iter()
            .filter(|f| volume_filters.contains(&f.name()))
        {
            seen += 1;
            assert!(
                f.pre_filter(&mut state, &plain, &snap).is_skip(),
                "{}",
                f.name()
            );
        }
        assert_eq!(seen, volume_filters.len());
        assert_eq!(
            Arc::strong_count(snap.volumes()),
            1,
            "no PreFilter kept the index"
        );

        let with_claim = make_pod("claims", &["pvc-a"]).info();
        // The algorithm (and its cycle state) lives on, as in the controller.
        let mut algo = Algorithm::new(100, 1);
        let r = algo.schedule(&fwk, &snap, &with_claim, false).unwrap();
        assert!(matches!(
            r.reservations.as_slice(),
            [Reservation::Volumes(_)]
        ));
        assert_eq!(
            Arc::strong_count(snap.volumes()),
            1,
            "the cycle state was released"
        );
        let before = Arc::as_ptr(snap.volumes());
        let Reservation::Volumes(v) = &r.reservations[0];
        crate::volume::binder::assume_pod_volumes(snap.volumes_mut(), &with_claim, &r.node, v)
            .unwrap();
        assert_eq!(
            Arc::as_ptr(snap.volumes()),
            before,
            "Reserve did not copy the index"
        );
    }
}
