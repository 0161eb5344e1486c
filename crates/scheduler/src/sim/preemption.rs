//! `simulate`'s side of preemption: a pod that fits nowhere runs the profile's
//! `DefaultPreemption` PostFilter, its victims leave the simulated cluster, and the preemptor
//! is retried on its nominated node ([`Simulation::schedule`]).

use super::*;

impl Simulation {
    /// Schedules one queued pod: the scheduling cycle, then the assumption and Reserve
    /// ([`Cache::assume`], as in cluster mode), then the binding cycle at once: PreBind's
    /// writes and the PV controller's completion ([`crate::volume::VolumeIndex::commit_pod_volumes`])
    /// and the watch's confirmation ([`Cache::add_pod`]).
    ///
    /// A pod that fits nowhere runs the profile's `DefaultPreemption` PostFilter
    /// ([`crate::preemption`]). When it nominates a node, the victims leave the cluster at once
    /// (deletion takes no time here; each gets a `Preempted` outcome, queued in
    /// [`Simulation::pending`] before the preemptor's), the PDBs that covered them lose one
    /// allowed disruption each (as the disruption controller would recount), lower-priority
    /// nominations on the node are cleared, and the preemptor, now carrying
    /// `status.nominatedNodeName`, is tried again at once (kube-scheduler requeues it and retries
    /// it when the victims' deletions arrive; the pods after it in this queue have lower or
    /// equal priority, and the nomination keeps them off its room meanwhile). Its outcome is
    /// that second attempt's.
    pub(super) fn schedule(&mut self, profile: usize, pod: PodInfo) -> PodOutcome {
        let first = self.attempt(profile, &pod);
        let fe = match first {
            Ok(r) => return self.bind(pod, r),
            Err(ScheduleError::Fit(fe)) => fe,
            Err(e) => return self.failed(pod, e),
        };
        let Some(args) = crate::preemption::PreemptionArgs::of_profile(
            &self.profiles[profile].profile.policy.args,
        ) else {
            return self.failed(pod, ScheduleError::Fit(fe));
        };
        self.preemption.args = args;
        let prof = &self.profiles[profile];
        let framework = prof.profile.framework.clone();
        let extenders = prof.profile.extenders.clone();
        if let Some(clear_own_nomination) = self.no_victims_anywhere(profile, &pod, &fe) {
            let mut pod = pod;
            if clear_own_nomination {
                self.nominator.delete_nominated_pod_if_exists(&pod.uid);
                pod = with_nominated_node_name(pod, None);
            }
            return self.failed(pod, ScheduleError::Fit(fe));
        }
        let pf = self.preemption.post_filter(
            &framework,
            self.cache.snapshot(),
            &pod,
            &fe.node_to_status(self.cache.snapshot()),
            &self.pdbs,
            &self.nominator,
            &extenders,
        );
        let explained = self.explain.then(|| preemption_json(&pf));
        let Some(node) = pf.nominated_node.clone() else {
            let mut pod = pod;
            if pf.clear_own_nomination {
                self.nominator.delete_nominated_pod_if_exists(&pod.uid);
                pod = with_nominated_node_name(pod, None);
            }
            let nominated = nominated_node_name(&pod);
            let mut o = self.failed(pod, ScheduleError::Fit(fe));
            o.nominated_node_name = nominated;
            o.preemption = explained;
            return o;
        };
        let preemptor = pod.key();
        for v in &pf.victims {
            // The victim is on the node (the dry run found it there), so this cannot fail.
            let _ = self.cache.remove_pod(v);
            for pdb in &mut self.pdbs {
                if pdb_covers(pdb, v) {
                    pdb.disruptions_allowed = (pdb.disruptions_allowed - 1).max(0);
                }
            }
            self.nominator.delete_nominated_pod_if_exists(&v.uid);
            self.pending.push_back(PodOutcome {
                namespace: v.namespace.clone(),
                name: v.name.clone(),
                status: PodStatus::Preempted,
                node: Some(node.clone()),
                message: format!("Preempted by {preemptor} on node {node}"),
                gpu_indexes: None,
                diagnosis: None,
                scores: None,
                nominated_node_name: None,
                preemption: None,
            });
        }
        for p in &pf.lower_priority_nominated {
            self.nominator.delete_nominated_pod_if_exists(&p.uid);
        }
        let pod = with_nominated_node_name(pod, Some(&node));
        self.nominator
            .add_nominated_pod(Arc::new(pod.clone()), &node);
        let mut o = match self.attempt(profile, &pod) {
            Ok(r) => self.bind(pod, r),
            Err(e) => self.failed(pod, e),
        };
        o.nominated_node_name = Some(node);
        o.preemption = explained;
        o
    }
}

impl Simulation {
    /// The PostFilter's outcome without its dry run, when it is known: no pod in the cluster
    /// has a lower priority than `pod`, so no node has a victim and `DefaultPreemption` can
    /// only fail (the openb replay: every pod has priority 0 and a full cluster fails thousands
    /// of pods). Only for a pod without a nomination, node statuses by index, no `--explain`
    /// (which shows the dry run) and a `profile` without extenders (which see the PostFilter's
    /// candidates). The PostFilter's draw of the candidates' offset
    /// is made as it makes it, so later preemptions choose as they would have. `Some(clear)`:
    /// the pod stays unschedulable, and `clear` says whether the PostFilter would clear its
    /// own nomination (no node where preemption might help); `None`: run the PostFilter.
    fn no_victims_anywhere(
        &mut self,
        profile: usize,
        pod: &PodInfo,
        fe: &crate::schedule_one::FitError,
    ) -> Option<bool> {
        use crate::preemption::{pod_eligible_to_preempt_others, pod_priority};
        if !self.profiles[profile].profile.extenders.is_empty() {
            return None;
        }
        let snapshot = self.cache.snapshot();
        if self.explain || nominated_node_name(pod).is_some() || snapshot.is_empty() {
            return None;
        }
        let crate::schedule_one::NodeStatuses::Indexed(statuses) = fe.statuses() else {
            return None;
        };
        let prio = pod_priority(pod);
        if snapshot
            .nodes()
            .iter()
            .any(|n| n.pods.iter().any(|p| pod_priority(p) < prio))
        {
            return None;
        }
        if !pod_eligible_to_preempt_others(pod, snapshot, None) {
            return Some(false);
        }
        // nodesWherePreemptionMightHelp: the nodes not UnschedulableAndUnresolvable.
        let unresolvable = statuses
            .iter()
            .filter(|(_, s)| s.code == crate::framework::Code::UnschedulableAndUnresolvable)
            .count();
        let potential = snapshot.len().saturating_sub(unresolvable);
        if potential == 0 {
            return Some(true);
        }
        let _ = self.preemption.get_offset_and_num_candidates(potential);
        Some(false)
    }
}

/// `status.nominatedNodeName` of a pod, when set.
fn nominated_node_name(pod: &PodInfo) -> Option<String> {
    Some(crate::preemption::nominated_node_name(pod).to_string()).filter(|n| !n.is_empty())
}

/// `pod` with `status.nominatedNodeName` set to `node` (or cleared), as the status patch
/// leaves it.
fn with_nominated_node_name(mut pod: PodInfo, node: Option<&str>) -> PodInfo {
    if let Some(obj) = pod.object() {
        let mut obj = obj.clone();
        obj.status
            .get_or_insert_with(Default::default)
            .nominated_node_name = node.map(String::from);
        pod.object = crate::model::PodObject::decoded(Arc::new(obj));
    }
    pod.nominated_node_name = node.unwrap_or_default().to_string();
    pod
}

/// Whether `pdb` covers `pod` (same namespace, a non-empty selector matching its labels), as
/// the disruption controller counts it.
fn pdb_covers(pdb: &crate::preemption::Pdb, pod: &PodInfo) -> bool {
    pdb.namespace == pod.namespace
        && !pod.labels.is_empty()
        && matches!(&pdb.selector, Some(crate::model::Selector::Match(ls))
            if !ls.requirements.is_empty() && ls.matches(&pod.labels))
}

/// The `--explain` view of a PostFilter result.
fn preemption_json(pf: &crate::preemption::PostFilterResult) -> PreemptionJson {
    let keys = |pods: &[Arc<PodInfo>]| pods.iter().map(|p| p.key()).collect::<Vec<_>>();
    let json = |c: &[crate::preemption::Candidate]| -> Vec<PreemptionCandidateJson> {
        c.iter()
            .map(|c| PreemptionCandidateJson {
                node: c.name.clone(),
                victims: keys(&c.victims.pods),
                num_pdb_violations: c.victims.num_pdb_violations,
            })
            .collect()
    };
    PreemptionJson {
        candidates: json(&pf.candidates),
        after_extenders: pf.after_extenders.as_deref().map(json),
        nominated_node: pf.nominated_node.clone(),
        victims: keys(&pf.victims),
        message: if !pf.eligible {
            "not eligible to preempt (preemptionPolicy Never, or its nominated node still has \
             lower-priority pods terminating)"
                .into()
        } else if pf.status.is_success() {
            String::new()
        } else {
            pf.status.message()
        },
    }
}
