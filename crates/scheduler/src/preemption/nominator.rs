//! The nominator (v1.22 `internal/queue/scheduling_queue.go` `nominator`): which pending pods
//! are nominated to which node (`status.nominatedNodeName`, or an in-memory nomination made by
//! preemption before the status patch lands), so that the filters of other pods count them on
//! that node ([`crate::Framework::run_filter_plugins_with_nominated_pods`]).

use std::collections::HashMap;
use std::sync::Arc;

use crate::framework::NominatedPods;
use crate::model::PodInfo;

/// `status.nominatedNodeName` of a pod, or `""`.
pub fn nominated_node_name(pod: &PodInfo) -> &str {
    &pod.nominated_node_name
}

/// Nominated pods by node and the node of each nominated pod by UID.
#[derive(Debug, Default, Clone)]
pub struct Nominator {
    nominated_pods: HashMap<String, Vec<Arc<PodInfo>>>,
    nominated_pod_to_node: HashMap<String, String>,
}

impl Nominator {
    /// An empty nominator.
    pub fn new() -> Nominator {
        Nominator::default()
    }

    /// `AddNominatedPod`: record `pod` as nominated to `node`, or, when `node` is empty, to its
    /// `status.nominatedNodeName` (both empty: nothing is recorded). Any earlier entry of the
    /// pod is removed first, so a pod is never stored twice.
    pub fn add_nominated_pod(&mut self, pod: Arc<PodInfo>, node: &str) {
        self.delete_nominated_pod_if_exists(&pod.uid);
        let nnn = if node.is_empty() {
            nominated_node_name(&pod).to_string()
        } else {
            node.to_string()
        };
        if nnn.is_empty() {
            return;
        }
        self.nominated_pod_to_node
            .insert(pod.uid.clone(), nnn.clone());
        let list = self.nominated_pods.entry(nnn).or_default();
        if !list.iter().any(|p| p.uid == pod.uid) {
            list.push(pod);
        }
    }

    /// `DeleteNominatedPodIfExists`: forget the nomination of the pod with this UID.
    pub fn delete_nominated_pod_if_exists(&mut self, uid: &str) {
        let Some(node) = self.nominated_pod_to_node.remove(uid) else {
            return;
        };
        if let Some(list) = self.nominated_pods.get_mut(&node) {
            list.retain(|p| p.uid != uid);
            if list.is_empty() {
                self.nominated_pods.remove(&node);
            }
        }
    }

    /// `UpdateNominatedPod`: replace the stored object. When neither the old nor the new object
    /// carries a `nominatedNodeName`, an in-memory nomination is kept (the update raced the
    /// status patch that preemption is about to write).
    pub fn update_nominated_pod(&mut self, old: &PodInfo, new: Arc<PodInfo>) {
        let mut node = String::new();
        if nominated_node_name(old).is_empty()
            && nominated_node_name(&new).is_empty()
            && let Some(n) = self.nominated_pod_to_node.get(&old.uid)
        {
            node = n.clone();
        }
        self.delete_nominated_pod_if_exists(&old.uid);
        self.add_nominated_pod(new, &node);
    }

    /// The node the pod with this UID is nominated to.
    pub fn nominated_node(&self, uid: &str) -> Option<&str> {
        self.nominated_pod_to_node.get(uid).map(String::as_str)
    }
}

impl NominatedPods for Nominator {
    /// The pods nominated to `node`, in nomination order.
    fn nominated_pods_for_node(&self, node: &str) -> &[Arc<PodInfo>] {
        self.nominated_pods.get(node).map_or(&[], |v| v.as_slice())
    }

    fn is_empty(&self) -> bool {
        self.nominated_pod_to_node.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::framework::plugins::testutil::pod;

    fn with_nnn(name: &str, uid: &str, nnn: Option<&str>) -> Arc<PodInfo> {
        let mut p = pod(name).0;
        p.metadata.uid = Some(uid.into());
        p.status = Some(k8s_openapi::api::core::v1::PodStatus {
            nominated_node_name: nnn.map(String::from),
            ..Default::default()
        });
        Arc::new(PodInfo::from_pod(p).unwrap())
    }

    #[test]
    fn add_uses_status_when_node_is_empty_and_replaces_earlier_entries() {
        let mut n = Nominator::new();
        n.add_nominated_pod(with_nnn("a", "ua", None), "");
        assert!(n.is_empty(), "no node and no status: nothing stored");
        n.add_nominated_pod(with_nnn("a", "ua", Some("n1")), "");
        assert_eq!(n.nominated_node("ua"), Some("n1"));
        n.add_nominated_pod(with_nnn("a", "ua", Some("n1")), "n2");
        assert!(n.nominated_pods_for_node("n1").is_empty());
        assert_eq!(n.nominated_pods_for_node("n2").len(), 1);
        n.delete_nominated_pod_if_exists("ua");
        assert!(n.is_empty());
        assert!(n.nominated_pods_for_node("n2").is_empty());
    }

    #[test]
    fn update_keeps_an_in_memory_nomination_only_when_both_objects_have_none() {
        let mut n = Nominator::new();
        let old = with_nnn("a", "ua", None);
        n.add_nominated_pod(old.clone(), "n1");
        n.update_nominated_pod(&old, with_nnn("a", "ua", None));
        assert_eq!(n.nominated_node("ua"), Some("n1"));
        // The status patch landed: the object's node wins.
        let patched = with_nnn("a", "ua", Some("n2"));
        n.update_nominated_pod(&with_nnn("a", "ua", None), patched.clone());
        assert_eq!(n.nominated_node("ua"), Some("n2"));
        // The nomination was cleared through the API.
        n.update_nominated_pod(&patched, with_nnn("a", "ua", None));
        assert_eq!(n.nominated_node("ua"), None);
    }
}
