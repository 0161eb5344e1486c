//! Preemption: the `DefaultPreemption` PostFilter of kube-scheduler v1.22
//! (`pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`; the same code
//! moved to `pkg/scheduler/framework/preemption` in v1.23), run when a pod fits on no node.
//!
//! [`DefaultPreemption::post_filter`] follows `preempt`: eligibility
//! ([`pod_eligible_to_preempt_others`]), the nodes where preemption might help
//! ([`nodes_where_preemption_might_help`]), a dry run from a random offset over at least
//! `numCandidates` of them ([`dry_run_preemption`], [`select_victims_on_node`]), the extenders
//! with a `preemptVerb` ([`call_extenders`]), and the choice of one node ([`select_candidate`],
//! [`pick_one_node_for_preemption`]). It returns a plan
//! ([`PostFilterResult`]): the caller (`simulate`, or cluster mode) deletes the victims, records
//! the nomination and clears the lower-priority nominations on the chosen node
//! (`PrepareCandidate`), as only it can talk to the API.
//!
//! Differences from upstream, none of them visible in upstream's test tables:
//! * the dry run is sequential (upstream's parallelism 16 makes the candidate set depend on
//!   goroutine timing; its tests set parallelism 1, which this matches);
//! * victims of equal importance keep the node's pod order (Rust's stable sort; Go's
//!   `sort.Slice` is unstable), and full ties in [`pick_one_node_for_preemption`] go to the
//!   first candidate in dry-run order, which starts at the random offset (upstream: Go map
//!   order, also random);
//! * a pod without `status.startTime` counts as started *now*, later than every recorded
//!   start, and two such pods tie (upstream calls `time.Now()` at each comparison);
//! * PreFilter state after removing or adding pods is recomputed by running PreFilter on the
//!   changed snapshot, where upstream updates it with the plugins' `AddPod`/`RemovePod`
//!   extensions.

mod nominator;
mod pdb;

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::SeedableRng;
use rand::rngs::StdRng;

pub use nominator::{Nominator, nominated_node_name};
pub use pdb::{Pdb, filter_pods_with_pdb_violation};

use crate::extender::{Extender, Victims};
use crate::framework::{Code, Framework, NominatedPods, Status};
use crate::model::PodInfo;
use crate::schedule_one::{FitError, NodeStatuses};
use crate::snapshot::Snapshot;

/// The plugin name.
pub const NAME: &str = "DefaultPreemption";

/// Status reason of nodes where preemption cannot help (`nodesWherePreemptionMightHelp`).
pub const REASON_NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// `DefaultPreemptionArgs` with v1.22's defaults (`SetDefaults_DefaultPreemptionArgs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreemptionArgs {
    /// `minCandidateNodesPercentage`: percentage of the potential nodes to dry-run at least
    /// (0..=100; default 10).
    pub min_candidate_nodes_percentage: i32,
    /// `minCandidateNodesAbsolute`: number of potential nodes to dry-run at least (≥ 0;
    /// default 100).
    pub min_candidate_nodes_absolute: i32,
}

impl Default for PreemptionArgs {
    fn default() -> Self {
        PreemptionArgs {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100,
        }
    }
}

impl PreemptionArgs {
    /// The profile's `DefaultPreemption` arguments, or `None` when its configuration disables
    /// the plugin.
    pub fn of_profile(args: &crate::policy::PluginArgs) -> Option<PreemptionArgs> {
        let a = args.default_preemption.unwrap_or_default();
        a.enabled.then_some(PreemptionArgs {
            min_candidate_nodes_percentage: a.min_candidate_nodes_percentage,
            min_candidate_nodes_absolute: a.min_candidate_nodes_absolute,
        })
    }
}

/// A node where preemption makes the pod fit, with its victims (`candidate`).
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The node.
    pub name: String,
    /// What has to go.
    pub victims: Victims,
}

/// `corev1helpers.PodPriority`: `spec.priority`, 0 when unset.
pub fn pod_priority(pod: &PodInfo) -> i32 {
    pod.priority
}

/// `status.startTime` of a pod (`util.GetPodStartTime`; `None` stands for *now*).
fn start_time(pod: &PodInfo) -> Option<k8s_openapi::jiff::Timestamp> {
    pod.start_time
}

/// Start times ordered with `None` (now) after every recorded time.
fn start_key(pod: &PodInfo) -> (bool, Option<k8s_openapi::jiff::Timestamp>) {
    let t = start_time(pod);
    (t.is_none(), t)
}

/// `util.MoreImportantPod`: higher priority first; at equal priority, the one that started
/// earlier.
pub fn more_important_pod(a: &PodInfo, b: &PodInfo) -> std::cmp::Ordering {
    pod_priority(b)
        .cmp(&pod_priority(a))
        .then_with(|| start_key(a).cmp(&start_key(b)))
}

/// Whether `spec.preemptionPolicy` is `Never`.
fn preempt_never(pod: &PodInfo) -> bool {
    pod.preempt_never
}

/// `PodEligibleToPreemptOthers`: a pod with `preemptionPolicy: Never` may not preempt; a pod
/// already nominated to a node may not preempt again while that node holds a terminating pod
/// of lower priority (its earlier victims are still leaving), unless this cycle found that node
/// `UnschedulableAndUnresolvable` (`nominated_node_status`; `None` reads as Success).
pub fn pod_eligible_to_preempt_others(
    pod: &PodInfo,
    snapshot: &Snapshot,
    nominated_node_status: Option<&Status>,
) -> bool {
    if preempt_never(pod) {
        return false;
    }
    let nom = nominated_node_name(pod);
    if !nom.is_empty() {
        if nominated_node_status.is_some_and(|s| s.code == Code::UnschedulableAndUnresolvable) {
            return true;
        }
        if let Some(node) = snapshot.node(nom) {
            let prio = pod_priority(pod);
            if node
                .pods
                .iter()
                .any(|p| p.terminating && pod_priority(p) < prio)
            {
                return false;
            }
        }
    }
    true
}

/// `nodesWherePreemptionMightHelp`: the nodes (snapshot indexes, in snapshot order) whose
/// status in `m` is not `UnschedulableAndUnresolvable` (a node absent from `m` might help), and
/// the others with the status `UnschedulableAndUnresolvable: Preemption is not helpful for
/// scheduling`.
pub fn nodes_where_preemption_might_help(
    snapshot: &Snapshot,
    m: &BTreeMap<String, Status>,
) -> (Vec<u32>, BTreeMap<String, Status>) {
    let mut potential = Vec::new();
    let mut unresolvable = BTreeMap::new();
    for (i, n) in snapshot.nodes().iter().enumerate() {
        if m.get(&n.name)
            .is_some_and(|s| s.code == Code::UnschedulableAndUnresolvable)
        {
            unresolvable.insert(
                n.name.clone(),
                Status::new(Code::UnschedulableAndUnresolvable, REASON_NOT_HELPFUL),
            );
        } else {
            potential.push(i as u32);
        }
    }
    (potential, unresolvable)
}

/// `calculateNumCandidates`: `num_nodes × percentage / 100` (integer division), at least
/// `minCandidateNodesAbsolute`, at most `num_nodes`.
pub fn calculate_num_candidates(args: &PreemptionArgs, num_nodes: i32) -> i32 {
    let mut n = num_nodes * args.min_candidate_nodes_percentage / 100;
    if n < args.min_candidate_nodes_absolute {
        n = args.min_candidate_nodes_absolute;
    }
    n.min(num_nodes)
}

/// `selectVictimsOnNode`: on node `node` of `snapshot`, remove every pod of lower priority
/// than `pod`; if `pod` then fits (filters with the node's nominated pods), add back as many
/// of them as possible, the PDB-violating ones first, each group most important first. Returns
/// the victims (in that order) and how many violate a PDB.
///
/// `snapshot` is restored before returning.
///
/// # Errors
/// `UnschedulableAndUnresolvable` `No victims found on node <node> for preemptor pod <name>`
/// when no pod has lower priority; the filters' status when the pod does not fit even with all
/// of them gone.
pub fn select_victims_on_node(
    fwk: &Framework,
    snapshot: &mut Snapshot,
    pod: &PodInfo,
    node: u32,
    pdbs: &[Pdb],
    nominator: &dyn NominatedPods,
) -> Result<(Vec<Arc<PodInfo>>, i64), Status> {
    let ni = &snapshot.nodes()[node as usize];
    let node_name = ni.name.clone();
    let prio = pod_priority(pod);
    // (pod, its GPU devices) of every lower-priority pod, to put back exactly.
    let potential: Vec<(Arc<PodInfo>, Option<Vec<u32>>)> = ni
        .pods
        .iter()
        .filter(|p| pod_priority(p) < prio)
        .map(|p| (p.clone(), ni.gpu_assignments.get(&p.key()).cloned()))
        .collect();
    if potential.is_empty() {
        return Err(Status::new(
            Code::UnschedulableAndUnresolvable,
            format!(
                "No victims found on node {node_name} for preemptor pod {}",
                pod.name
            ),
        ));
    }
    for (p, _) in &potential {
        snapshot.remove_pod(&node_name, &p.namespace, &p.name);
    }
    let nominated = nominator.nominated_pods_for_node(&node_name);
    let result = reprieve(
        fwk, snapshot, pod, node, &node_name, &potential, pdbs, nominated,
    );
    // Whatever is still off the node (the victims, or everything on failure) goes back.
    let back: Vec<&(Arc<PodInfo>, Option<Vec<u32>>)> = match &result {
        Ok((victims, _)) => potential
            .iter()
            .filter(|(p, _)| victims.iter().any(|v| Arc::ptr_eq(v, p)))
            .collect(),
        Err(_) => potential.iter().collect(),
    };
    for (p, gpu) in back {
        let _ = snapshot.add_pod(p.clone(), Some(&node_name), gpu.clone());
    }
    result
}

/// The fit check and the reprieve loop of [`select_victims_on_node`], with the potential
/// victims already off the node; reprieved pods are left on it.
#[allow(clippy::too_many_arguments)]
fn reprieve(
    fwk: &Framework,
    snapshot: &mut Snapshot,
    pod: &PodInfo,
    node: u32,
    node_name: &str,
    potential: &[(Arc<PodInfo>, Option<Vec<u32>>)],
    pdbs: &[Pdb],
    nominated: &[Arc<PodInfo>],
) -> Result<(Vec<Arc<PodInfo>>, i64), Status> {
    let s = fwk.run_filter_plugins_with_nominated_pods(pod, snapshot, node, nominated);
    if !s.is_success() {
        return Err(s);
    }
    let mut sorted: Vec<Arc<PodInfo>> = potential.iter().map(|(p, _)| p.clone()).collect();
    sorted.sort_by(|a, b| more_important_pod(a, b));
    let (violating, non_violating) = filter_pods_with_pdb_violation(&sorted, pdbs);
    let gpu_of = |p: &Arc<PodInfo>| {
        potential
            .iter()
            .find(|(q, _)| Arc::ptr_eq(p, q))
            .and_then(|(_, g)| g.clone())
    };
    let mut victims = Vec::new();
    let mut num_violating = 0i64;
    for (group, is_violating) in [(violating, true), (non_violating, false)] {
        for p in group {
            let _ = snapshot.add_pod(p.clone(), Some(node_name), gpu_of(&p));
            let fits = fwk
                .run_filter_plugins_with_nominated_pods(pod, snapshot, node, nominated)
                .is_success();
            if !fits {
                snapshot.remove_pod(node_name, &p.namespace, &p.name);
                victims.push(p);
                if is_violating {
                    num_violating += 1;
                }
            }
        }
    }
    Ok((victims, num_violating))
}

/// `dryRunPreemption`: [`select_victims_on_node`] on the nodes `potential` (snapshot indexes)
/// from index `offset` on, wrapping around, until at least one candidate violates no PDB and
/// there are `num_candidates` candidates in all (each of the two lists holds at most
/// `num_candidates`; further ones are dropped). Returns the non-violating candidates then the
/// violating ones, each in scan order, and the status of each node that failed.
#[allow(clippy::too_many_arguments)]
pub fn dry_run_preemption(
    fwk: &Framework,
    snapshot: &Snapshot,
    pod: &PodInfo,
    potential: &[u32],
    pdbs: &[Pdb],
    offset: usize,
    num_candidates: usize,
    nominator: &dyn NominatedPods,
) -> (Vec<Candidate>, BTreeMap<String, Status>) {
    let mut non_violating: Vec<Candidate> = Vec::new();
    let mut violating: Vec<Candidate> = Vec::new();
    let mut statuses = BTreeMap::new();
    let n = potential.len();
    if n == 0 {
        return (Vec::new(), statuses);
    }
    // One copy for the whole run: each node's evaluation restores it.
    let mut work = snapshot.clone();
    for i in 0..n {
        let node = potential[(offset + i) % n];
        let name = work.nodes()[node as usize].name.clone();
        match select_victims_on_node(fwk, &mut work, pod, node, pdbs, nominator) {
            Ok((pods, num_pdb_violations)) => {
                let c = Candidate {
                    name,
                    victims: Victims {
                        pods,
                        num_pdb_violations,
                    },
                };
                let list = if num_pdb_violations == 0 {
                    &mut non_violating
                } else {
                    &mut violating
                };
                if list.len() < num_candidates {
                    list.push(c);
                }
                if !non_violating.is_empty()
                    && non_violating.len() + violating.len() >= num_candidates
                {
                    break;
                }
            }
            Err(s) => {
                statuses.insert(name, s);
            }
        }
    }
    non_violating.extend(violating);
    (non_violating, statuses)
}

/// `CallExtenders`: each extender that supports preemption and is interested in `pod`, in
/// order, gets the candidates as a node → victims map and returns the map the next one gets
/// ([`Extender::process_preemption`]); an empty map ends the loop. An extender error is skipped
/// when the extender is ignorable, and is otherwise this attempt's `Error` status. Without
/// extenders, the candidates are returned as they are.
///
/// The result keeps the dry-run order for the nodes that remain, followed by nodes the
/// extenders added, by name (upstream rebuilds the list from a Go map: in random order, which
/// only decides full ties in [`pick_one_node_for_preemption`]). Their victims are the
/// extenders': an HTTP extender's answer carries no PDB count into v1.22
/// (`convertToNodeNameToVictims` leaves `NumPDBViolations` 0; PR #105853 restored it after
/// v1.22), so the choice among them then ignores PDBs.
///
/// # Errors
/// `Error` with the message of a non-ignorable extender's failure.
pub fn call_extenders(
    extenders: &[Arc<dyn Extender>],
    pod: &PodInfo,
    snapshot: &Snapshot,
    candidates: Vec<Candidate>,
) -> Result<Vec<Candidate>, Status> {
    if extenders.is_empty() {
        return Ok(candidates);
    }
    let order: Vec<String> = candidates.iter().map(|c| c.name.clone()).collect();
    let mut victims: BTreeMap<String, Victims> = candidates
        .into_iter()
        .map(|c| (c.name, c.victims))
        .collect();
    if victims.is_empty() {
        return Ok(Vec::new());
    }
    for e in extenders {
        if !e.supports_preemption() || !e.is_interested(pod) {
            continue;
        }
        match e.process_preemption(pod, &victims, snapshot) {
            Ok(m) => victims = m,
            Err(err) if e.is_ignorable() => {
                tracing::info!(
                    extender = e.name(),
                    err = %err,
                    "Skipping extender as it returned error and has ignorable flag set"
                );
                continue;
            }
            Err(err) => return Err(Status::error(err.message).with_plugin(NAME)),
        }
        // If the node list becomes empty, no preemption can happen regardless of the other
        // extenders.
        if victims.is_empty() {
            break;
        }
    }
    let mut out = Vec::with_capacity(victims.len());
    for name in order {
        if let Some(v) = victims.remove(&name) {
            out.push(Candidate { name, victims: v });
        }
    }
    out.extend(
        victims
            .into_iter()
            .map(|(name, victims)| Candidate { name, victims }),
    );
    Ok(out)
}

/// `SelectCandidate`: none → `None`; exactly one → it, without criteria; otherwise
/// [`pick_one_node_for_preemption`].
pub fn select_candidate(candidates: &[Candidate]) -> Option<&Candidate> {
    match candidates.len() {
        0 => None,
        1 => candidates.first(),
        _ => pick_one_node_for_preemption(candidates).map(|i| &candidates[i]),
    }
}

/// `pickOneNodeForPreemption`: the index of the candidate chosen by, in turn, the fewest PDB
/// violations; the lowest priority of the first victim (the highest-priority one, unless a
/// PDB-violating victim of lower priority comes first, as upstream); the smallest sum of
/// victim priorities, each offset by 2³¹ so that fewer victims win even at negative
/// priorities; the fewest victims; the latest start time among the highest-priority victims.
/// Each step keeps the candidates tying for the best value, in order; a full tie goes to the
/// first. A candidate without victims ranks best at the second step (upstream would index an
/// empty list; it cannot happen after a failed cycle on the same snapshot).
pub fn pick_one_node_for_preemption(candidates: &[Candidate]) -> Option<usize> {
    if candidates.is_empty() {
        return None;
    }
    let keep_min = |from: Vec<usize>, key: &dyn Fn(&Victims) -> i64| -> Vec<usize> {
        let mut best = i64::MAX;
        let mut out = Vec::new();
        for i in from {
            let k = key(&candidates[i].victims);
            if k < best {
                best = k;
                out.clear();
                out.push(i);
            } else if k == best {
                out.push(i);
            }
        }
        out
    };
    let all: Vec<usize> = (0..candidates.len()).collect();
    let s1 = keep_min(all, &|v| v.num_pdb_violations.min(i64::from(i32::MAX)));
    if s1.len() == 1 {
        return Some(s1[0]);
    }
    let s2 = keep_min(s1, &|v| {
        v.pods
            .first()
            .map_or(i64::from(i32::MIN), |p| i64::from(pod_priority(p)))
    });
    if s2.len() == 1 {
        return Some(s2[0]);
    }
    let s3 = keep_min(s2, &|v| {
        v.pods
            .iter()
            .map(|p| i64::from(pod_priority(p)) + (1i64 << 31))
            .sum()
    });
    if s3.len() == 1 {
        return Some(s3[0]);
    }
    let s4 = keep_min(s3, &|v| v.pods.len() as i64);
    if s4.len() == 1 {
        return Some(s4[0]);
    }
    // The latest "earliest start time of the highest-priority victims" wins; ties keep the
    // earlier candidate (strictly After).
    let mut chosen = s4[0];
    let mut latest = earliest_pod_start_time(&candidates[chosen].victims);
    for &i in &s4[1..] {
        let t = earliest_pod_start_time(&candidates[i].victims);
        if t > latest {
            latest = t;
            chosen = i;
        }
    }
    Some(chosen)
}

/// `util.GetEarliestPodStartTime`: the earliest start time among the victims of the highest
/// priority, as a [`start_key`] (`None` = now).
fn earliest_pod_start_time(v: &Victims) -> (bool, Option<k8s_openapi::jiff::Timestamp>) {
    let Some(first) = v.pods.first() else {
        return (true, None);
    };
    let mut max_prio = pod_priority(first);
    let mut earliest = start_key(first);
    for p in &v.pods {
        let prio = pod_priority(p);
        if prio == max_prio {
            earliest = earliest.min(start_key(p));
        } else if prio > max_prio {
            max_prio = prio;
            earliest = start_key(p);
        }
    }
    earliest
}

/// `getLowerPriorityNominatedPods`: the pods nominated to `node` with lower priority than
/// `pod`, whose nominations the preemptor takes over.
pub fn lower_priority_nominated_pods(
    nominator: &dyn NominatedPods,
    pod: &PodInfo,
    node: &str,
) -> Vec<Arc<PodInfo>> {
    nominator
        .nominated_pods_for_node(node)
        .iter()
        .filter(|p| pod_priority(p) < pod_priority(pod))
        .cloned()
        .collect()
}

/// What one PostFilter call decided, for the caller to carry out (`PrepareCandidate` and
/// `recordSchedulingFailure`).
#[derive(Debug, Clone)]
pub struct PostFilterResult {
    /// `Success` when a node was nominated; `Unschedulable` (with the `FitError` text of the
    /// dry run when there were no candidates, else no message) or `Error` otherwise.
    pub status: Status,
    /// The node the pod is nominated to (`PostFilterResult.NominatedNodeName`).
    pub nominated_node: Option<String>,
    /// The pods to delete, in deletion order (empty unless nominated).
    pub victims: Vec<Arc<PodInfo>>,
    /// How many of them violate a PDB.
    pub num_pdb_violations: i64,
    /// Pods nominated to the chosen node with lower priority: their nominations are cleared.
    pub lower_priority_nominated: Vec<Arc<PodInfo>>,
    /// No node could help: the pod's own `status.nominatedNodeName` is cleared.
    pub clear_own_nomination: bool,
    /// The candidates the dry run found, in dry-run order (for `--explain`).
    pub candidates: Vec<Candidate>,
    /// The candidates the extenders with a `preemptVerb` left ([`call_extenders`]), when one
    /// was called successfully (for `--explain`).
    pub after_extenders: Option<Vec<Candidate>>,
    /// False when `PodEligibleToPreemptOthers` refused the pod (nothing else was tried).
    pub eligible: bool,
}

impl PostFilterResult {
    fn unschedulable(message: Option<String>) -> PostFilterResult {
        PostFilterResult {
            status: match message {
                Some(m) => Status::new(Code::Unschedulable, m),
                None => Status {
                    code: Code::Unschedulable,
                    reasons: Vec::new(),
                    plugin: NAME,
                },
            }
            .with_plugin(NAME),
            nominated_node: None,
            victims: Vec::new(),
            num_pdb_violations: 0,
            lower_priority_nominated: Vec::new(),
            clear_own_nomination: false,
            candidates: Vec::new(),
            after_extenders: None,
            eligible: true,
        }
    }
}

/// The `DefaultPreemption` plugin: its arguments and the RNG that draws the dry run's offset.
pub struct DefaultPreemption {
    /// Arguments.
    pub args: PreemptionArgs,
    rng: StdRng,
}

impl DefaultPreemption {
    /// The plugin with `args`, its offset RNG seeded with `seed`.
    pub fn new(args: PreemptionArgs, seed: u64) -> DefaultPreemption {
        DefaultPreemption {
            args,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// `getOffsetAndNumCandidates`: a random offset in `0..num_nodes` and
    /// [`calculate_num_candidates`].
    pub fn get_offset_and_num_candidates(&mut self, num_nodes: usize) -> (usize, usize) {
        use rand::RngExt;
        let n = i32::try_from(num_nodes).unwrap_or(i32::MAX);
        let offset = if num_nodes == 0 {
            0
        } else {
            self.rng.random_range(0..num_nodes)
        };
        let num = calculate_num_candidates(&self.args, n).max(0) as usize;
        (offset, num)
    }

    /// `PostFilter` → `preempt` for `pod`, which failed on every node of `snapshot` with the
    /// statuses `m` (`FitError.Diagnosis.NodeToStatusMap`): eligibility, candidates, the
    /// profile's `extenders` ([`call_extenders`]; HTTP ones block on their calls), choice.
    /// `pdbs` are the cluster's PodDisruptionBudgets; `nominator` the nominated pods.
    #[allow(clippy::too_many_arguments)]
    pub fn post_filter(
        &mut self,
        fwk: &Framework,
        snapshot: &Snapshot,
        pod: &PodInfo,
        m: &BTreeMap<String, Status>,
        pdbs: &[Pdb],
        nominator: &dyn NominatedPods,
        extenders: &[Arc<dyn Extender>],
    ) -> PostFilterResult {
        // 1) Ensure the preemptor is eligible to preempt other pods.
        if !pod_eligible_to_preempt_others(pod, snapshot, m.get(nominated_node_name(pod))) {
            let mut r = PostFilterResult::unschedulable(None);
            r.eligible = false;
            return r;
        }
        // 2) Find all preemption candidates.
        if snapshot.is_empty() {
            let mut r = PostFilterResult::unschedulable(None);
            r.status = Status::error("no nodes available").with_plugin(NAME);
            return r;
        }
        let (potential, mut statuses) = nodes_where_preemption_might_help(snapshot, m);
        let mut clear_own_nomination = false;
        let mut candidates = Vec::new();
        if potential.is_empty() {
            clear_own_nomination = true;
        } else {
            let (offset, num) = self.get_offset_and_num_candidates(potential.len());
            let (c, s) =
                dry_run_preemption(fwk, snapshot, pod, &potential, pdbs, offset, num, nominator);
            candidates = c;
            statuses.extend(s);
        }
        if candidates.is_empty() {
            let fit = FitError::new(pod.key(), statuses.len(), NodeStatuses::Named(statuses));
            let mut r = PostFilterResult::unschedulable(Some(fit.to_string()));
            r.clear_own_nomination = clear_own_nomination;
            return r;
        }
        // 3) Interact with registered Extenders to filter out some candidates if needed.
        let called = extenders
            .iter()
            .any(|e| e.supports_preemption() && e.is_interested(pod));
        let kept = match call_extenders(extenders, pod, snapshot, candidates.clone()) {
            Ok(kept) => kept,
            Err(status) => {
                let mut r = PostFilterResult::unschedulable(None);
                r.status = status;
                r.candidates = candidates;
                return r;
            }
        };
        // 4) Find the best candidate.
        let Some(best) = select_candidate(&kept).cloned() else {
            // The extenders removed every candidate: Unschedulable without a message.
            let mut r = PostFilterResult::unschedulable(None);
            r.candidates = candidates;
            r.after_extenders = Some(kept);
            return r;
        };
        // 5) What PrepareCandidate does with it.
        PostFilterResult {
            status: Status::success(),
            lower_priority_nominated: lower_priority_nominated_pods(nominator, pod, &best.name),
            nominated_node: Some(best.name),
            victims: best.victims.pods,
            num_pdb_violations: best.victims.num_pdb_violations,
            clear_own_nomination: false,
            candidates,
            after_extenders: called.then_some(kept),
            eligible: true,
        }
    }
}

#[cfg(test)]
mod tests;
