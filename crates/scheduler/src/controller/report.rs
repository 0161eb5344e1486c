//! Failure reporting, as kube-scheduler's `recordSchedulingFailure` and the `Scheduled` event:
//! `FailedScheduling` events (aggregated into series by [`events::EventRecorder`]), the
//! `PodScheduled=False` condition, and the event series' housekeeping. Every write takes a token
//! from its client's bucket, then checks the leadership fence: a replica that does not lead
//! writes nothing.

use std::sync::Arc;

use election::{LeaderWatch, LeadershipGuard};
use k8s_openapi::api::core::v1 as core;
use kube::Client;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use tokio::sync::mpsc;
use tracing::debug;

use super::events;
use super::ratelimit::RateLimiter;
use super::watch::Msg;
use crate::model::PodInfo;

/// `PodScheduled` condition reason after a failed binding (`SchedulerError`, v1.22
/// `scheduler.go`).
pub const REASON_SCHEDULER_ERROR: &str = "SchedulerError";
/// `PodScheduled` condition reason of a pod that fits no node.
pub(super) const REASON_UNSCHEDULABLE: &str = "Unschedulable";

/// Writes the scheduler's reports about pods, each in the background, behind the fence.
#[derive(Clone)]
pub(super) struct Reporter {
    /// The scheduling client (status patches).
    pub(super) client: Client,
    /// Its bucket.
    pub(super) limiter: Arc<RateLimiter>,
    /// The event recorder (the event client).
    pub(super) recorder: events::EventRecorder,
    /// The event client's own bucket (kube-scheduler's `eventClient`): events never take a
    /// binding's token.
    pub(super) event_limiter: Arc<RateLimiter>,
    /// Leadership: no lead, no write.
    pub(super) leader: LeaderWatch,
}

/// What a successful `DefaultPreemption` PostFilter leaves `PrepareCandidate` to write: the
/// victims to delete on `node`, then the lower-priority nominations there to clear.
pub(super) struct Preempting {
    /// The node the preemptor is nominated to.
    pub(super) node: String,
    /// The victims, in deletion order (the PostFilter's order).
    pub(super) victims: Vec<Arc<core::Pod>>,
    /// Pods nominated to `node` with a lower priority than the preemptor.
    pub(super) lower_priority_nominated: Vec<Arc<core::Pod>>,
}

impl Reporter {
    /// `FailedScheduling` event and `PodScheduled=False` with `reason` (`recordSchedulingFailure`'s
    /// `reason`: [`REASON_UNSCHEDULABLE`] or [`REASON_SCHEDULER_ERROR`]), written in the
    /// background; each write only if the leadership fence still holds right before it.
    pub(super) fn failure(&self, pod: Arc<core::Pod>, message: String, reason: &'static str) {
        let Some(guard) = self.leader.leadership() else {
            return;
        };
        let r = self.clone();
        tokio::spawn(async move {
            r.write_failure(&pod, message, reason, None, &guard).await;
        });
    }

    /// v1.22's `PrepareCandidate` then `recordSchedulingFailure` for a pod whose PostFilter
    /// nominated `p.node`, in that order, in the background: the victims deleted one by one
    /// (each with its `Preempted` event), `victims_metric` observed, the lower-priority
    /// nominations on the node cleared, and then the `FailedScheduling` report with
    /// `status.nominatedNodeName` set to the node. When a deletion fails (or the fence stops
    /// it), PrepareCandidate's error makes v1.22's PostFilter fail and nothing is nominated:
    /// earlier victims stay deleted, no metric, no clearing, the report goes without a
    /// nomination, and `withdraw` is sent on `tx` so that the scheduling task drops the
    /// in-memory nomination it made at once.
    pub(super) fn preempt_then_report(
        &self,
        pod: Arc<core::Pod>,
        message: String,
        p: Preempting,
        victims_metric: prometheus::Histogram,
        tx: mpsc::Sender<Msg>,
        withdraw: Msg,
    ) {
        let guard = self.leader.leadership();
        let r = self.clone();
        tokio::spawn(async move {
            let deleted = match &guard {
                Some(g) => r.delete_victims(&pod, &p.node, &p.victims, g).await,
                None => false,
            };
            if !deleted {
                let _ = tx.send(withdraw).await;
                if let Some(g) = &guard {
                    r.write_failure(&pod, message, REASON_UNSCHEDULABLE, None, g)
                        .await;
                }
                return;
            }
            let Some(guard) = guard else { return };
            victims_metric.observe(p.victims.len() as f64);
            r.clear_nominated(p.lower_priority_nominated, &guard).await;
            r.write_failure(&pod, message, REASON_UNSCHEDULABLE, Some(p.node), &guard)
                .await;
        });
    }

    /// The `FailedScheduling` event, then one `pods/status` patch with `PodScheduled=False`
    /// and, when given and new, `status.nominatedNodeName` (v1.22 `updatePod`: written with the
    /// condition, or alone when only the nomination changes; nothing when neither changes).
    async fn write_failure(
        &self,
        pod: &Arc<core::Pod>,
        message: String,
        reason: &'static str,
        nominated: Option<String>,
        guard: &LeadershipGuard,
    ) {
        self.recorder
            .for_pod(pod)
            .publish(
                pod,
                "Warning",
                "FailedScheduling",
                "Scheduling",
                message.clone(),
                || admit(&self.event_limiter, guard),
            )
            .await;
        let (ns, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
        let condition =
            pod_scheduled_false_patch(pod, reason, &message, k8s_openapi::jiff::Timestamp::now());
        let current = pod
            .status
            .as_ref()
            .and_then(|s| s.nominated_node_name.as_deref());
        let nominate = nominated.filter(|n| Some(n.as_str()) != current);
        let patch = match (condition, nominate) {
            (None, None) => return,
            (Some(c), None) => c,
            (c, Some(n)) => {
                let mut p = c.unwrap_or_else(|| serde_json::json!({"status": {}}));
                p["status"]["nominatedNodeName"] = serde_json::Value::String(n);
                p
            }
        };
        self.limiter.acquire().await;
        if guard.check().is_err() {
            return;
        }
        if let Err(e) = Api::<core::Pod>::namespaced(self.client.clone(), &ns)
            .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
        {
            debug!(pod = %format!("{ns}/{name}"), error = %e, "Updating PodScheduled condition failed");
        }
    }

    /// `util.ClearNominatedNodeName`: a `pods/status` patch removing `nominatedNodeName` from
    /// each pod that has one, behind the rate limiter and the fence, in the background; errors
    /// are only logged.
    pub(super) fn clear_nominated_node_names(&self, pods: Vec<Arc<core::Pod>>) {
        let Some(guard) = self.leader.leadership() else {
            return;
        };
        let r = self.clone();
        tokio::spawn(async move {
            r.clear_nominated(pods, &guard).await;
        });
    }

    /// [`Reporter::clear_nominated_node_names`]'s writes, in order.
    async fn clear_nominated(&self, pods: Vec<Arc<core::Pod>>, guard: &LeadershipGuard) {
        for pod in pods {
            let has = pod
                .status
                .as_ref()
                .and_then(|s| s.nominated_node_name.as_deref())
                .is_some_and(|n| !n.is_empty());
            if !has {
                continue;
            }
            self.limiter.acquire().await;
            if guard.check().is_err() {
                return;
            }
            let (ns, name) = (pod.namespace().unwrap_or_default(), pod.name_any());
            let patch = serde_json::json!({"status": {"nominatedNodeName": null}});
            if let Err(e) = Api::<core::Pod>::namespaced(self.client.clone(), &ns)
                .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await
            {
                debug!(pod = %format!("{ns}/{name}"), error = %e, "Cannot clear nominatedNodeName");
            }
        }
    }

    /// `PrepareCandidate`'s deletions: each victim in turn, a plain `DELETE` (graceful, no UID
    /// precondition, not an eviction) behind the rate limiter and the fence, then its
    /// `Preempted` event naming the preemptor. The first failure stops: earlier victims stay
    /// deleted. Returns whether every victim was deleted.
    async fn delete_victims(
        &self,
        preemptor: &Arc<core::Pod>,
        node: &str,
        victims: &[Arc<core::Pod>],
        guard: &LeadershipGuard,
    ) -> bool {
        let preemptor_key = format!(
            "{}/{}",
            preemptor.namespace().unwrap_or_default(),
            preemptor.name_any()
        );
        for victim in victims {
            self.limiter.acquire().await;
            if guard.check().is_err() {
                return false;
            }
            let (ns, name) = (victim.namespace().unwrap_or_default(), victim.name_any());
            if let Err(e) = Api::<core::Pod>::namespaced(self.client.clone(), &ns)
                .delete(&name, &kube::api::DeleteParams::default())
                .await
            {
                tracing::error!(pod = %format!("{ns}/{name}"), preemptor = %preemptor_key, error = %e, "Error preempting victim");
                return false;
            }
            let note = format!("Preempted by {preemptor_key} on node {node}");
            self.recorder
                .publish_related(
                    victim,
                    preemptor,
                    "Normal",
                    "Preempted",
                    "Preempting",
                    note,
                    || admit(&self.event_limiter, guard),
                )
                .await;
        }
        true
    }

    /// Write the event series' periodic updates, each behind the rate limiter and the
    /// leadership fence (a replica that does not lead writes nothing).
    pub(super) fn housekeeping(&self, refresh: bool) {
        let writes = self.recorder.housekeeping(refresh);
        let Some(guard) = self.leader.leadership() else {
            return;
        };
        if writes.is_empty() {
            return;
        }
        let r = self.clone();
        tokio::spawn(async move {
            for w in writes {
                if !guard.is_valid() {
                    return;
                }
                r.recorder
                    .write(w, || admit(&r.event_limiter, &guard))
                    .await;
            }
        });
    }
}

/// The `v1.Pod` the reports about `pod` are written from: its object while it is pending
/// ([`PodInfo::object`]: the preemptor, a pod that failed, nominated pods); for a pod the cache
/// holds as bound (a preemption victim), an object carrying only what a DELETE, an Event's
/// `regarding` and a status patch name: namespace, name, uid, resourceVersion, schedulerName
/// and nominatedNodeName.
pub(super) fn object_of(pod: &PodInfo) -> Arc<core::Pod> {
    if let Some(o) = pod.object.arc() {
        return o;
    }
    let some = |s: &str| Some(s.to_string()).filter(|s| !s.is_empty());
    Arc::new(core::Pod {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            namespace: Some(pod.namespace.clone()),
            name: Some(pod.name.clone()),
            uid: some(&pod.uid),
            resource_version: some(&pod.resource_version),
            ..Default::default()
        },
        spec: Some(core::PodSpec {
            scheduler_name: some(&pod.scheduler_name),
            node_name: some(&pod.node_name),
            ..Default::default()
        }),
        status: Some(core::PodStatus {
            nominated_node_name: some(&pod.nominated_node_name),
            ..Default::default()
        }),
    })
}

/// The `Scheduled` event after a successful binding (v1.22 `scheduleOne`'s
/// `fwk.EventRecorder().Eventf(..., "Scheduled", "Binding", "Successfully assigned %v/%v to
/// %v", ...)`), written through the event client with a token from the event client's own
/// bucket (`event_limiter`) and behind the fence.
pub(super) async fn record_scheduled(
    recorder: &events::EventRecorder,
    event_limiter: &RateLimiter,
    guard: &LeadershipGuard,
    pod: &PodInfo,
    node: &str,
) {
    let note = format!(
        "Successfully assigned {}/{} to {node}",
        pod.namespace, pod.name
    );
    // The pod's identity is all the Event names: no `v1.Pod` is built or decoded for it.
    let identity = events::PodIdentity {
        namespace: &pod.namespace,
        name: &pod.name,
        uid: &pod.uid,
        scheduler_name: &pod.scheduler_name,
    };
    recorder
        .publish_for_pod_named(identity, "Normal", "Scheduled", "Binding", note, || {
            admit(event_limiter, guard)
        })
        .await;
}

/// The strategic-merge patch of `pods/status` that sets `PodScheduled=False` with `reason` and
/// `message`, or `None` when `pod` (the version the scheduler holds) already carries exactly that
/// condition — v1.22 `updatePod` writes nothing then (`podutil.UpdatePodCondition` reports no
/// change). As there, `lastTransitionTime` is `now` when the status changes and the old one when
/// it was already `False`.
fn pod_scheduled_false_patch(
    pod: &core::Pod,
    reason: &str,
    message: &str,
    now: k8s_openapi::jiff::Timestamp,
) -> Option<serde_json::Value> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    let old = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"));
    let mut transition = Time(now);
    if let Some(old) = old.filter(|c| c.status == "False") {
        if old.reason.as_deref() == Some(reason)
            && old.message.as_deref() == Some(message)
            && old.last_probe_time.is_none()
        {
            return None;
        }
        if let Some(t) = &old.last_transition_time {
            transition = t.clone();
        }
    }
    let mut condition = serde_json::json!({
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition,
    });
    // The condition is replaced whole, as upstream's two-way merge patch does: a probe time
    // someone else wrote is removed (`null` deletes a field in a strategic merge patch).
    if old.is_some_and(|c| c.last_probe_time.is_some()) {
        condition["lastProbeTime"] = serde_json::Value::Null;
    }
    Some(serde_json::json!({"status": {"conditions": [condition]}}))
}

/// Admission of one fenced write (see [`ratelimit`]): the rate-limit token first, then the
/// leadership fence; `true` when the request may be sent at once.
async fn admit(limiter: &RateLimiter, guard: &LeadershipGuard) -> bool {
    limiter.acquire().await;
    guard.check().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod_with_condition(c: Option<core::PodCondition>) -> core::Pod {
        core::Pod {
            status: Some(core::PodStatus {
                conditions: c.map(|c| vec![c]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn ts(s: &str) -> k8s_openapi::jiff::Timestamp {
        s.parse().expect("timestamp")
    }

    /// v1.22 `updatePod`: no write when the pod already says `PodScheduled=False` with the same
    /// reason and message; a new message keeps the old `lastTransitionTime`; a change of status
    /// takes `now`.
    #[test]
    fn pod_scheduled_patch_follows_update_pod_condition() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let now = ts("2026-11-24T10:00:00Z");
        let then = ts("2026-11-24T09:00:00Z");
        let cond = |status: &str, reason: &str, message: &str| core::PodCondition {
            type_: "PodScheduled".into(),
            status: status.into(),
            reason: Some(reason.into()),
            message: Some(message.into()),
            last_transition_time: Some(Time(then)),
            ..Default::default()
        };
        let msg = "0/1 nodes are available: 1 Insufficient cpu.";

        // Nothing yet: written, transition now.
        let p = pod_scheduled_false_patch(&pod_with_condition(None), "Unschedulable", msg, now)
            .expect("a first failure is written");
        let c = &p["status"]["conditions"][0];
        assert_eq!(c["type"], "PodScheduled");
        assert_eq!(c["status"], "False");
        assert_eq!(c["reason"], "Unschedulable");
        assert_eq!(c["message"], msg);
        assert_eq!(c["lastTransitionTime"], "2026-11-24T10:00:00Z");
        assert!(c.get("lastProbeTime").is_none());

        // The same condition again: nothing to write.
        let same = pod_with_condition(Some(cond("False", "Unschedulable", msg)));
        assert_eq!(
            pod_scheduled_false_patch(&same, "Unschedulable", msg, now),
            None
        );

        // Another message (or reason) while still False: written, old transition time.
        let p = pod_scheduled_false_patch(&same, "Unschedulable", "0/2 nodes are available", now)
            .expect("a new message is written");
        assert_eq!(
            p["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-24T09:00:00Z"
        );
        let p = pod_scheduled_false_patch(&same, REASON_SCHEDULER_ERROR, msg, now)
            .expect("a new reason is written");
        assert_eq!(
            p["status"]["conditions"][0]["reason"],
            REASON_SCHEDULER_ERROR
        );

        // From another status: transition now.
        let other = pod_with_condition(Some(cond("Unknown", "Unschedulable", msg)));
        let p = pod_scheduled_false_patch(&other, "Unschedulable", msg, now)
            .expect("a status change is written");
        assert_eq!(
            p["status"]["conditions"][0]["lastTransitionTime"],
            "2026-11-24T10:00:00Z"
        );

        // A probe time set by someone else makes the condition differ, and is removed.
        let mut probed = cond("False", "Unschedulable", msg);
        probed.last_probe_time = Some(Time(then));
        let p =
            pod_scheduled_false_patch(&pod_with_condition(Some(probed)), "Unschedulable", msg, now)
                .expect("a probed condition is rewritten");
        assert_eq!(
            p["status"]["conditions"][0]["lastProbeTime"],
            serde_json::Value::Null
        );
        assert!(p["status"]["conditions"][0].get("lastProbeTime").is_some());
    }
}
