//! PreBind of `VolumeBinding` in cluster mode: the API writes of kube-scheduler v1.22's volume
//! binder (`BindPodVolumes`), each behind the leadership fence, then the wait for the PV
//! controller to finish.
//!
//! Follows kubernetes/kubernetes `pkg/scheduler/framework/plugins/volumebinding/binder.go`
//! (v1.22 shape, read from commit 01aa0f3f6052c9866dcb69054d8924fa8c96e3cb):
//! - `bindAPIUpdate`: every PV chosen for a claim is updated (`PUT persistentvolumes/{name}`)
//!   with the `claimRef` Reserve assumed; every claim to provision is updated (`PUT
//!   persistentvolumeclaims/{name}`) with `volume.kubernetes.io/selected-node`; the first
//!   failure stops (no rollback: the PV controller takes it from there);
//! - `wait.Poll(1s, bindTimeout)`: after each interval, `checkBindings` — the pod still exists;
//!   each bound PV still fits the node and keeps its `claimRef` uid; each claim to provision
//!   keeps the selected node (the provisioner removes it to ask for rescheduling) and its PV, once
//!   there, fits the node; done when every claim is fully bound (`spec.volumeName` and
//!   `pv.kubernetes.io/bind-completed`). `bindTimeout` is 600 s
//!   ([`DEFAULT_BIND_TIMEOUT`](crate::framework::plugins::volume_binding::DEFAULT_BIND_TIMEOUT)).
//!
//! Differences: the pod, PVs and claims are read with GETs (upstream reads its informer and
//! assume caches; a 404 is reported with the caches' words, `could not find
//! v1.PersistentVolume "name"`, `pod "name" not found`); the node's labels and CSINode are those
//! the scheduling cycle saw (upstream re-reads the node and CSINode listers on every poll, so a
//! node relabelled during the wait fails its check there, not here). Any failure is returned;
//! the caller undoes the assumption (forget + Unreserve) and requeues the pod, as every failure
//! after assume.
//!
//! RBAC: `persistentvolumes` and `persistentvolumeclaims`: get, update; `pods`: get.

use std::sync::Arc;
use std::time::Duration;

use election::LeadershipGuard;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::storage::v1 as storage;
use kube::Client;
use kube::api::{Api, PostParams};

use super::ratelimit::RateLimiter;
use crate::labels::Labels;
use crate::model::PodInfo;
use crate::volume::AssumedPodVolumes;
use crate::volume::binder::{BindCheck, NodeRef, check_provisioned_claim, check_static_binding};
use crate::volume::csi::MigrationGates;
use crate::volume::helpers::claim_volume_name;

/// `wait.Poll`'s interval in `BindPodVolumes`.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// What PreBind needs, captured when the volumes were assumed (Reserve).
#[derive(Debug, Clone)]
pub struct VolumeBindJob {
    /// The pod being bound.
    pub pod: Arc<PodInfo>,
    /// The assumed bindings and provisionings (`all_bound` false).
    pub assumed: AssumedPodVolumes,
    /// The node's labels as the cycle saw them.
    pub node_labels: Labels,
    /// The node's CSINode as the cycle saw it.
    pub csi_node: Option<Arc<storage::CSINode>>,
    /// Migration gates (v1.22 defaults).
    pub gates: MigrationGates,
}

/// Why PreBind did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreBindError {
    /// The leadership fence did not hold before a write: nothing more was written.
    #[error("not leading: {0}")]
    NotLeading(String),
    /// An API write failed, the PV controller undid the binding, or the wait timed out: the
    /// message of the Error status (`binding volumes: ...`).
    #[error("{0}")]
    Failed(String),
}

fn kube_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// The error v1.22 reads from its caches where this module GETs: a 404 becomes the assume
/// cache's `errNotFound` (`could not find v1.PersistentVolume "name"`), other errors keep the
/// API server's message.
fn cache_error(e: &kube::Error, description: &str, key: &str) -> String {
    if is_not_found(e) {
        format!("could not find {description} {key:?}")
    } else {
        kube_message(e)
    }
}

/// `BindPodVolumes`: write the assumed objects with `client` (each write takes a rate-limit token,
/// then checks the fence), then poll with `read_client` (rate limited by its own layer, see
/// [`super::ratelimit`]) every `poll` until the PV controller has bound every claim, for at most
/// `timeout`.
///
/// # Errors
/// [`PreBindError::NotLeading`] when the fence failed before a write;
/// [`PreBindError::Failed`] for a failed write, a binding the PV controller undid or that does
/// not fit the node any more, a deleted pod, or the timeout
/// (`binding volumes: timed out waiting for the condition`).
pub async fn bind_pod_volumes(
    client: &Client,
    read_client: &Client,
    guard: &LeadershipGuard,
    limiter: &RateLimiter,
    job: &VolumeBindJob,
    timeout: Duration,
    poll: Duration,
) -> Result<(), PreBindError> {
    let pvs: Api<core::PersistentVolume> = Api::all(client.clone());
    let ns = job.pod.namespace.clone();
    let pvcs: Api<core::PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
    // bindAPIUpdate.
    let mut written_pvs = Vec::new();
    for b in &job.assumed.volumes.static_bindings {
        limiter.acquire().await;
        guard
            .check()
            .map_err(|e| PreBindError::NotLeading(e.to_string()))?;
        let name = b.pv.metadata.name.clone().unwrap_or_default();
        let new = pvs
            .replace(&name, &PostParams::default(), &b.pv)
            .await
            .map_err(|e| PreBindError::Failed(kube_message(&e)))?;
        tracing::debug!(pod = %job.pod.key(), pv = %name, "PersistentVolume bound to claim");
        written_pvs.push((new, b.pvc.clone()));
    }
    let mut written_pvcs = Vec::new();
    for c in &job.assumed.volumes.dynamic_provisions {
        limiter.acquire().await;
        guard
            .check()
            .map_err(|e| PreBindError::NotLeading(e.to_string()))?;
        let name = c.metadata.name.clone().unwrap_or_default();
        let new = pvcs
            .replace(&name, &PostParams::default(), c)
            .await
            .map_err(|e| PreBindError::Failed(kube_message(&e)))?;
        tracing::debug!(pod = %job.pod.key(), pvc = %name, "Claim annotated for provisioning");
        written_pvcs.push(new);
    }
    // wait.Poll: the interval comes first.
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        tokio::time::sleep(poll).await;
        match check_bindings(read_client, job, &written_pvs, &written_pvcs).await {
            BindCheck::Done => return Ok(()),
            BindCheck::Failed(m) => {
                return Err(PreBindError::Failed(format!("binding volumes: {m}")));
            }
            BindCheck::Pending => {}
        }
        if tokio::time::Instant::now() + poll > deadline {
            return Err(PreBindError::Failed(
                "binding volumes: timed out waiting for the condition".into(),
            ));
        }
    }
}

/// `checkBindings` over freshly read API objects.
async fn check_bindings(
    client: &Client,
    job: &VolumeBindJob,
    written_pvs: &[(core::PersistentVolume, Arc<core::PersistentVolumeClaim>)],
    written_pvcs: &[core::PersistentVolumeClaim],
) -> BindCheck {
    let ns = job.pod.namespace.as_str();
    let pods: Api<core::Pod> = Api::namespaced(client.clone(), ns);
    match pods.get(&job.pod.name).await {
        Err(e) if is_not_found(&e) => {
            // The pod lister's NotFound: `pod "name" not found`.
            return BindCheck::Failed(format!(
                "pod does not exist any more: pod {:?} not found",
                job.pod.name
            ));
        }
        Err(e) => tracing::warn!(pod = %job.pod.key(), error = %e, "Failed to get pod"),
        Ok(_) => {}
    }
    let pvs: Api<core::PersistentVolume> = Api::all(client.clone());
    let pvcs: Api<core::PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
    let node = NodeRef {
        name: &job.assumed.node,
        labels: &job.node_labels,
    };
    let csi_node = job.csi_node.as_deref();
    for (written, claim) in written_pvs {
        let name = written.metadata.name.clone().unwrap_or_default();
        let api_pv = match pvs.get(&name).await {
            Ok(pv) => Arc::new(pv),
            Err(e) => {
                return BindCheck::Failed(format!(
                    "failed to check binding: {}",
                    cache_error(&e, "v1.PersistentVolume", &name)
                ));
            }
        };
        let claim_name = claim.metadata.name.clone().unwrap_or_default();
        let api_pvc = match pvcs.get(&claim_name).await {
            Ok(c) => c,
            Err(e) => {
                return BindCheck::Failed(format!(
                    "failed to check binding: {}",
                    cache_error(
                        &e,
                        "v1.PersistentVolumeClaim",
                        &format!("{ns}/{claim_name}")
                    )
                ));
            }
        };
        match check_static_binding(written, &api_pv, &api_pvc, node, csi_node, job.gates) {
            BindCheck::Done => {}
            other => return other,
        }
    }
    for written in written_pvcs {
        let name = written.metadata.name.clone().unwrap_or_default();
        let api_pvc = match pvcs.get(&name).await {
            Ok(c) => c,
            Err(e) => {
                return BindCheck::Failed(format!(
                    "failed to check provisioning pvc: {}",
                    cache_error(&e, "v1.PersistentVolumeClaim", &format!("{ns}/{name}"))
                ));
            }
        };
        let volume = claim_volume_name(&api_pvc).to_string();
        let api_pv = if volume.is_empty() {
            None
        } else {
            match pvs.get(&volume).await {
                Ok(pv) => Some(Arc::new(pv)),
                // Not visible yet: check again next time.
                Err(e) if is_not_found(&e) => None,
                Err(e) => {
                    return BindCheck::Failed(format!(
                        "failed to get pv {volume:?} from cache: {}",
                        kube_message(&e)
                    ));
                }
            }
        };
        match check_provisioned_claim(
            written,
            &api_pvc,
            api_pv.as_ref(),
            node,
            csi_node,
            job.gates,
        ) {
            BindCheck::Done => {}
            other => return other,
        }
    }
    BindCheck::Done
}
