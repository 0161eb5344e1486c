//! Scheduler extenders: external processes the scheduling cycle asks to filter and score nodes,
//! and optionally to bind the pod, over HTTP (the Policy's `extenders` list).
//!
//! Follows kube-scheduler v1.22:
//! - the interface: `pkg/scheduler/framework/extender.go` (`Extender`: Name, Filter, Prioritize,
//!   Bind, IsBinder, IsInterested, ProcessPreemption, SupportsPreemption, IsIgnorable);
//! - preemption's use of it: `DefaultPreemption`'s `CallExtenders`
//!   ([`crate::preemption::call_extenders`]) and `HTTPExtender.ProcessPreemption` (see
//!   `HttpExtender`);
//! - the scheduling cycle's use of it: `pkg/scheduler/core/generic_scheduler.go`
//!   `findNodesThatPassExtenders` and `prioritizeNodes` (extender part), and
//!   `pkg/scheduler/scheduler.go` `extendersBinding`; read from kubernetes/kubernetes
//!   `pkg/scheduler/core/generic_scheduler.go` framework-era copies (index ids 59009874,
//!   42508161496) and `pkg/scheduler/factory.go` @ index id 254615618 (`create`: ignorable
//!   extenders go to the tail, `ignoredByScheduler` resources become NodeResourcesFit's
//!   `IgnoredResources`);
//! - the wire types: `k8s.io/kube-scheduler/extender/v1/types.go` (kubernetes/kubernetes
//!   `staging/src/k8s.io/kube-scheduler/extender/v1/types.go`
//!   @2d58ef7868e6efda493e876aeaf72fb7dfea7c44), see `HttpExtender`.
//!
//! The trait is synchronous, like the scheduling cycle that calls it: kube-scheduler also calls
//! extenders synchronously inside the cycle. `HttpExtender` (feature `http-extender`) is the HTTP
//! implementation; tests use fakes.

#[cfg(feature = "http-extender")]
mod client;
pub(crate) mod gourl;
#[cfg(feature = "http-extender")]
mod http;
#[cfg(feature = "http-extender")]
pub(crate) mod wire;

#[cfg(test)]
pub(crate) mod fake;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, info};

use crate::framework::{Code, Status};
use crate::model::{NodeInfo, PodInfo};
use crate::policy::LegacyExtender;
use crate::snapshot::Snapshot;

#[cfg(feature = "http-extender")]
pub use http::HttpExtender;

/// Highest score an extender gives a node (`extenderv1.MaxExtenderPriority`). Extender scores
/// are multiplied by `MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY` = 10 before they are added to the
/// plugin total.
pub const MAX_EXTENDER_PRIORITY: i64 = 10;
/// Lowest score an extender gives a node (`extenderv1.MinExtenderPriority`).
pub const MIN_EXTENDER_PRIORITY: i64 = 0;
/// Timeout of one extender call when the Policy's `httpTimeout` is 0
/// (`DefaultExtenderTimeout = 5 * time.Second` in v1.22 `pkg/scheduler/core/extender.go`).
pub const DEFAULT_EXTENDER_TIMEOUT: Duration = Duration::from_secs(5);

/// Failed nodes and their failure messages (`extenderv1.FailedNodesMap`).
pub type FailedNodesMap = BTreeMap<String, String>;

/// An extender's configuration that cannot be used: bad URL, unreadable or malformed TLS
/// material. Names the entry (`extenders[<index>]`), its URL prefix and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("policy extenders[{index}] ({url_prefix:?}): {field}: {message}")]
pub struct ExtenderConfigError {
    /// Position in the Policy's `extenders`.
    pub index: usize,
    /// Its `urlPrefix`.
    pub url_prefix: String,
    /// The field at fault, e.g. `tlsConfig.caFile`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// An extender call that failed: transport error, non-200 answer, undecodable answer, or the
/// `Error` text the extender returned. `Display` is the message alone, as upstream passes the
/// error on unwrapped (it becomes the `FailedScheduling` message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ExtenderError {
    /// The message.
    pub message: String,
}

impl ExtenderError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> ExtenderError {
        ExtenderError {
            message: message.into(),
        }
    }
}

/// What an extender's filter returned (`Filter`'s results; `ExtenderFilterResult` decoded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtenderFilterResult {
    /// Names of the nodes that pass, in the extender's order.
    pub nodes: Vec<String>,
    /// Nodes that fail, with messages (`FailedNodes`).
    pub failed_nodes: FailedNodesMap,
    /// Nodes that fail and that preemption cannot help (`FailedAndUnresolvableNodes`); they take
    /// precedence over `failed_nodes`.
    pub failed_and_unresolvable_nodes: FailedNodesMap,
}

/// One node's score from an extender (`extenderv1.HostPriority`), nominally
/// `MIN_EXTENDER_PRIORITY..=MAX_EXTENDER_PRIORITY` (not checked, as upstream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPriority {
    /// Node name.
    pub host: String,
    /// Score.
    pub score: i64,
}

/// The pod and node an extender binds (`extenderv1.ExtenderBindingArgs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtenderBindingArgs {
    /// Pod name.
    pub pod_name: String,
    /// Pod namespace.
    pub pod_namespace: String,
    /// Pod UID.
    pub pod_uid: String,
    /// The node chosen by the scheduler.
    pub node: String,
}

impl ExtenderBindingArgs {
    /// The binding of `pod` to `node` (`extendersBinding` builds a `v1.Binding` with the pod's
    /// namespace, name and UID).
    pub fn new(pod: &PodInfo, node: &str) -> ExtenderBindingArgs {
        ExtenderBindingArgs {
            pod_name: pod.name.clone(),
            pod_namespace: pod.namespace.clone(),
            pod_uid: pod.uid.clone(),
            node: node.to_string(),
        }
    }
}

/// The pods to evict on one node (`extenderv1.Victims`): what a preemption candidate costs, as
/// `DefaultPreemption` computes it and as a preempting extender may rewrite it.
#[derive(Debug, Clone, Default)]
pub struct Victims {
    /// Victims, in eviction order. From the dry run: the PDB-violating ones first, then the
    /// others, each group most important first; from an extender: its order.
    pub pods: Vec<Arc<PodInfo>>,
    /// How many of them violate a PodDisruptionBudget.
    pub num_pdb_violations: i64,
}

/// A scheduler extender (`framework.Extender`, v1.22), called synchronously from the scheduling
/// cycle (filter, prioritize), from `DefaultPreemption` (process preemption) and from the
/// binding task (bind).
pub trait Extender: Send + Sync {
    /// A unique name (the URL prefix for HTTP extenders).
    fn name(&self) -> &str;

    /// Filter `nodes` for `pod`. The returned names should be a subset of `nodes`' names.
    ///
    /// # Errors
    /// A failed call or the extender's `Error` text.
    fn filter(
        &self,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
    ) -> Result<ExtenderFilterResult, ExtenderError>;

    /// Score `nodes` for `pod`: the scores and the extender's weight.
    ///
    /// # Errors
    /// A failed call (the scheduler ignores it).
    fn prioritize(
        &self,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
    ) -> Result<(Vec<HostPriority>, i64), ExtenderError>;

    /// Bind the pod to the node instead of the scheduler's `pods/binding` write.
    ///
    /// # Errors
    /// A failed call or the extender's `Error` text.
    fn bind(&self, binding: &ExtenderBindingArgs) -> Result<(), ExtenderError>;

    /// Whether this extender binds (`bindVerb` set).
    fn is_binder(&self) -> bool;

    /// Whether the extender wants to see this pod (managed resources).
    fn is_interested(&self, pod: &PodInfo) -> bool;

    /// Failures of this extender are skipped instead of failing the attempt.
    fn is_ignorable(&self) -> bool;

    /// Whether the extender implements preemption (`preemptVerb` set): `DefaultPreemption`
    /// calls [`Extender::process_preemption`] only on those.
    fn supports_preemption(&self) -> bool {
        false
    }

    /// `nodeCacheCapable`: the extender caches nodes and is sent their names only. One that is
    /// not is sent the snapshot's `v1.Node` objects, which cluster mode then keeps
    /// (`NodeInfo::object`).
    fn node_cache_capable(&self) -> bool {
        true
    }

    /// `ProcessPreemption`: the preemption candidates the extender keeps for `pod`, given the
    /// candidates `victims` (node name → its victims) found on `snapshot`, the snapshot of the
    /// scheduling cycle. The extender may drop nodes, replace a node's victims with any pods on
    /// that node, or name nodes of `snapshot` absent from `victims`; an empty map ends
    /// preemption for this attempt.
    ///
    /// # Errors
    /// A failed call, or an answer naming a node or a pod (by UID) that `snapshot` does not
    /// have. The default, for extenders without preemption, is upstream's `preempt verb is not
    /// defined for extender <name> but run into ProcessPreemption`.
    fn process_preemption(
        &self,
        pod: &PodInfo,
        victims: &BTreeMap<String, Victims>,
        snapshot: &Snapshot,
    ) -> Result<BTreeMap<String, Victims>, ExtenderError> {
        let _ = (pod, victims, snapshot);
        Err(ExtenderError::new(format!(
            "preempt verb is not defined for extender {} but run into ProcessPreemption",
            self.name()
        )))
    }

    /// Whether [`Extender::filter`] can remove nodes. `false` when it returns its input
    /// unchanged without a call (no `filterVerb`); the scheduler then skips it, with the same
    /// outcome as calling it. Not part of upstream's interface.
    fn is_filter(&self) -> bool {
        true
    }

    /// Whether [`Extender::prioritize`] can score. `false` when it gives every node 0 with
    /// weight 0 without a call (no `prioritizeVerb`); the scheduler then skips it, with the same
    /// outcome as calling it. Not part of upstream's interface.
    fn is_prioritizer(&self) -> bool {
        true
    }
}

/// The HTTP extenders of a Policy, in the order kube-scheduler calls them: the non-ignorable ones
/// in Policy order, then the ignorable ones ("place ignorable extenders to the tail of
/// extenders", v1.22 `factory.go` `create`).
///
/// # Errors
/// [`ExtenderConfigError`] when an extender's URL or TLS settings cannot be used.
#[cfg(feature = "http-extender")]
pub fn build_extenders(
    configs: &[LegacyExtender],
) -> Result<Vec<Arc<dyn Extender>>, ExtenderConfigError> {
    let mut extenders: Vec<Arc<dyn Extender>> = Vec::new();
    let mut ignorable: Vec<Arc<dyn Extender>> = Vec::new();
    for (i, c) in configs.iter().enumerate() {
        info!(extender = %c.url_prefix, "Creating extender");
        let e = Arc::new(HttpExtender::new(i, c)?);
        if e.is_ignorable() {
            ignorable.push(e);
        } else {
            extenders.push(e);
        }
    }
    extenders.extend(ignorable);
    Ok(extenders)
}

/// The HTTP extenders of a Policy, in a build without the HTTP client (the scheduler crate's
/// `http-extender` feature off): none.
///
/// # Errors
/// [`ExtenderConfigError`] naming the first entry (`urlPrefix`) when the Policy lists any: they
/// cannot be called.
#[cfg(not(feature = "http-extender"))]
pub fn build_extenders(
    configs: &[LegacyExtender],
) -> Result<Vec<Arc<dyn Extender>>, ExtenderConfigError> {
    match configs.first() {
        None => Ok(Vec::new()),
        Some(c) => Err(ExtenderConfigError {
            index: 0,
            url_prefix: c.url_prefix.clone(),
            field: "urlPrefix".into(),
            message: "this build has no HTTP extender client (the scheduler crate's \
                      `http-extender` feature is off)"
                .into(),
        }),
    }
}

/// The managed resources with `ignoredByScheduler: true`, in Policy order: NodeResourcesFit does
/// not check them (v1.22 `factory.go` `create` passes them as `NodeResourcesFitArgs
/// .IgnoredResources`).
pub fn ignored_extended_resources(configs: &[LegacyExtender]) -> Vec<String> {
    configs
        .iter()
        .flat_map(|c| &c.managed_resources)
        .filter(|r| r.ignored_by_scheduler)
        .map(|r| r.name.clone())
        .collect()
}

/// `findNodesThatPassExtenders` (v1.22): each extender interested in the pod filters the nodes
/// that passed the previous ones, in order, until none is left. Its `FailedAndUnresolvableNodes`
/// replace the node's status by an `UnschedulableAndUnresolvable` one carrying the previous
/// reasons plus the message; its `FailedNodes` (unless also unresolvable) add the message to the
/// node's status, or create an `Unschedulable` one. These reasons are what the FitError message
/// counts.
///
/// `feasible` holds indexes into `snapshot.nodes()`; `statuses` maps node names to the statuses of
/// the nodes that failed so far.
///
/// # Errors
/// The first error of an extender that is not ignorable (errors of ignorable extenders are
/// logged and the extender skipped), with the extender's name; also when an extender returns a
/// node that was not in its input ("extender %q claims a filtered node %q which is not found in
/// the input node list", which v1.22 checks for `nodeCacheCapable` extenders only).
pub fn find_nodes_that_pass_extenders(
    extenders: &[Arc<dyn Extender>],
    pod: &PodInfo,
    snapshot: &Snapshot,
    feasible: &mut Vec<u32>,
    statuses: &mut BTreeMap<String, Status>,
) -> Result<(), (String, ExtenderError)> {
    let all = snapshot.nodes();
    for extender in extenders {
        if feasible.is_empty() {
            break;
        }
        if !extender.is_filter() || !extender.is_interested(pod) {
            continue;
        }
        let input: Vec<&NodeInfo> = feasible.iter().map(|&i| &all[i as usize]).collect();
        let result = extender.filter(pod, &input).and_then(|r| {
            let by_name: HashMap<&str, u32> = feasible
                .iter()
                .map(|&i| (all[i as usize].name.as_str(), i))
                .collect();
            let passed = r
                .nodes
                .iter()
                .map(|n| {
                    by_name.get(n.as_str()).copied().ok_or_else(|| {
                        ExtenderError::new(format!(
                            "extender {:?} claims a filtered node {:?} which is not found in the input node list",
                            extender.name(),
                            n
                        ))
                    })
                })
                .collect::<Result<Vec<u32>, ExtenderError>>()?;
            Ok((r, passed))
        });
        let (r, passed) = match result {
            Ok(x) => x,
            Err(e) => {
                if extender.is_ignorable() {
                    info!(extender = %extender.name(), error = %e,
                        "Skipping extender as it returned error and has ignorable flag set");
                    continue;
                }
                return Err((extender.name().to_string(), e));
            }
        };
        for (node, msg) in &r.failed_and_unresolvable_nodes {
            let mut reasons = statuses.remove(node).map(|s| s.reasons).unwrap_or_default();
            reasons.push(msg.clone().into());
            statuses.insert(
                node.clone(),
                Status {
                    code: Code::UnschedulableAndUnresolvable,
                    reasons,
                    plugin: "",
                },
            );
        }
        for (node, msg) in r.failed_nodes {
            // failedAndUnresolvableMap takes precedence over failedMap.
            if r.failed_and_unresolvable_nodes.contains_key(&node) {
                continue;
            }
            match statuses.get_mut(&node) {
                Some(s) => s.reasons.push(msg.into()),
                None => {
                    statuses.insert(node, Status::new(Code::Unschedulable, msg));
                }
            }
        }
        *feasible = passed;
    }
    Ok(())
}

/// One extender's scores of the feasible nodes, for [`prioritize_with_extenders`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtenderScores {
    /// The extender's name.
    pub extender: String,
    /// The weight it returned.
    pub weight: i64,
    /// Per node of the input (same order), the sum of the scores the extender gave it (a host
    /// listed twice counts twice; hosts not in the input are dropped).
    pub scores: Vec<i64>,
}

/// The extender part of `prioritizeNodes` (v1.22): every extender interested in the pod scores
/// the feasible nodes, concurrently (upstream runs one goroutine per extender); an extender whose
/// call fails is left out ("Prioritization errors from extender can be ignored"). The caller adds
/// `Σ score × weight × (MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY)` to each node's plugin total.
pub fn prioritize_with_extenders(
    extenders: &[Arc<dyn Extender>],
    pod: &PodInfo,
    nodes: &[&NodeInfo],
) -> Vec<ExtenderScores> {
    let interested: Vec<&Arc<dyn Extender>> = extenders
        .iter()
        .filter(|e| e.is_prioritizer() && e.is_interested(pod))
        .collect();
    if interested.is_empty() {
        return Vec::new();
    }
    let results: Vec<Result<(Vec<HostPriority>, i64), ExtenderError>> = if interested.len() == 1 {
        vec![interested[0].prioritize(pod, nodes)]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = interested
                .iter()
                .map(|e| s.spawn(move || e.prioritize(pod, nodes)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(ExtenderError::new("extender prioritize call panicked"))
                    })
                })
                .collect()
        })
    };
    let index: HashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(j, n)| (n.name.as_str(), j))
        .collect();
    let mut out = Vec::with_capacity(interested.len());
    for (e, r) in interested.into_iter().zip(results) {
        match r {
            Ok((list, weight)) => {
                let mut scores = vec![0i64; nodes.len()];
                for hp in list {
                    if let Some(&j) = index.get(hp.host.as_str()) {
                        scores[j] = scores[j].wrapping_add(hp.score);
                    }
                }
                out.push(ExtenderScores {
                    extender: e.name().to_string(),
                    weight,
                    scores,
                });
            }
            Err(err) => {
                debug!(extender = %e.name(), error = %err, "Extender prioritize failed; ignored");
            }
        }
    }
    out
}

/// Whether a scheduling cycle for `pod` may call one of `extenders` (one filters or scores and is
/// interested in the pod). When not, the cycle makes no blocking call and needs no
/// `block_in_place`.
pub fn cycle_calls_extenders(extenders: &[Arc<dyn Extender>], pod: &PodInfo) -> bool {
    extenders
        .iter()
        .any(|e| (e.is_filter() || e.is_prioritizer()) && e.is_interested(pod))
}

/// `extendersBinding` (v1.22 `scheduler.go`): the first extender that binds and is interested in
/// the pod; it binds the pod instead of the scheduler's `pods/binding` write. `None`: the
/// scheduler binds.
pub fn binder_for<'a>(
    extenders: &'a [Arc<dyn Extender>],
    pod: &PodInfo,
) -> Option<&'a Arc<dyn Extender>> {
    extenders
        .iter()
        .find(|e| e.is_binder() && e.is_interested(pod))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::fake::{FakeExtender, FitPredicate, error_predicate, true_predicate};
    use super::*;
    use crate::framework::plugins::testutil::{node, pod, snapshot};
    #[cfg(feature = "http-extender")]
    use crate::policy::ExtenderManagedResource;

    fn predicate(f: fn(&str) -> Status) -> FitPredicate {
        Box::new(move |_, n| f(&n.name))
    }

    /// `a` passes, `b` is unschedulable, anything else unschedulable and unresolvable.
    fn a_b_rest(name: &str) -> Status {
        match name {
            "a" => Status::success(),
            "b" => Status::new(Code::Unschedulable, format!("node {name:?} is not allowed")),
            _ => Status::new(
                Code::UnschedulableAndUnresolvable,
                format!("node {name:?} is not allowed"),
            ),
        }
    }

    fn only_a(name: &str) -> Status {
        if name == "a" {
            Status::success()
        } else {
            Status::new(Code::Unschedulable, format!("node {name:?} is not allowed"))
        }
    }

    fn status(code: Code, reasons: &[&str]) -> (Code, Vec<String>) {
        (code, reasons.iter().map(|r| r.to_string()).collect())
    }

    /// Upstream `TestFindNodesThatPassExtenders` (`findNodesThatPassExtenders(extenders, pod,
    /// nodes, statuses)`, the v1.22–v1.25 signature; table read from kubernetes/kubernetes
    /// `pkg/scheduler/schedule_one_test.go`, index ids 10260167 and 30040899), case names kept.
    /// Statuses are compared by code and reasons, as upstream's `cmpOpts` do.
    #[test]
    fn test_find_nodes_that_pass_extenders() {
        struct Case {
            name: &'static str,
            extenders: Vec<FakeExtender>,
            nodes: Vec<&'static str>,
            filtered_nodes_statuses: Vec<(&'static str, Status)>,
            expects_err: bool,
            expected_nodes: Vec<&'static str>,
            expected_statuses: Vec<(&'static str, (Code, Vec<String>))>,
        }
        let named = |predicates: Vec<FitPredicate>| FakeExtender {
            name: "FakeExtender1".into(),
            ..FakeExtender::with_predicates(predicates)
        };
        let cases = vec![
            Case {
                name: "error",
                extenders: vec![named(vec![error_predicate()])],
                nodes: vec!["a"],
                filtered_nodes_statuses: vec![],
                expects_err: true,
                expected_nodes: vec![],
                expected_statuses: vec![],
            },
            Case {
                name: "success",
                extenders: vec![named(vec![true_predicate()])],
                nodes: vec!["a"],
                filtered_nodes_statuses: vec![],
                expects_err: false,
                expected_nodes: vec!["a"],
                expected_statuses: vec![],
            },
            Case {
                name: "unschedulable",
                extenders: vec![named(vec![predicate(only_a)])],
                nodes: vec!["a", "b"],
                filtered_nodes_statuses: vec![],
                expects_err: false,
                expected_nodes: vec!["a"],
                expected_statuses: vec![(
                    "b",
                    status(Code::Unschedulable, &["FakeExtender: node \"b\" failed"]),
                )],
            },
            Case {
                name: "unschedulable and unresolvable",
                extenders: vec![named(vec![predicate(a_b_rest)])],
                nodes: vec!["a", "b", "c"],
                filtered_nodes_statuses: vec![],
                expects_err: false,
                expected_nodes: vec!["a"],
                expected_statuses: vec![
                    (
                        "b",
                        status(Code::Unschedulable, &["FakeExtender: node \"b\" failed"]),
                    ),
                    (
                        "c",
                        status(
                            Code::UnschedulableAndUnresolvable,
                            &["FakeExtender: node \"c\" failed and unresolvable"],
                        ),
                    ),
                ],
            },
            Case {
                name: "extender may overwrite the statuses",
                extenders: vec![named(vec![predicate(a_b_rest)])],
                nodes: vec!["a", "b", "c"],
                filtered_nodes_statuses: vec![(
                    "c",
                    Status::new(Code::Unschedulable, "FakeFilterPlugin: node \"c\" failed"),
                )],
                expects_err: false,
                expected_nodes: vec!["a"],
                expected_statuses: vec![
                    (
                        "b",
                        status(Code::Unschedulable, &["FakeExtender: node \"b\" failed"]),
                    ),
                    (
                        "c",
                        status(
                            Code::UnschedulableAndUnresolvable,
                            &[
                                "FakeFilterPlugin: node \"c\" failed",
                                "FakeExtender: node \"c\" failed and unresolvable",
                            ],
                        ),
                    ),
                ],
            },
            Case {
                name: "multiple extenders",
                extenders: vec![
                    named(vec![predicate(a_b_rest)]),
                    named(vec![predicate(only_a)]),
                ],
                nodes: vec!["a", "b", "c"],
                filtered_nodes_statuses: vec![],
                expects_err: false,
                expected_nodes: vec!["a"],
                expected_statuses: vec![
                    (
                        "b",
                        status(Code::Unschedulable, &["FakeExtender: node \"b\" failed"]),
                    ),
                    (
                        "c",
                        status(
                            Code::UnschedulableAndUnresolvable,
                            &["FakeExtender: node \"c\" failed and unresolvable"],
                        ),
                    ),
                ],
            },
        ];
        for c in cases {
            let snap = snapshot(c.nodes.iter().map(|n| node(n)).collect(), &[]);
            let extenders: Vec<Arc<dyn Extender>> = c
                .extenders
                .into_iter()
                .map(|e| Arc::new(e) as Arc<dyn Extender>)
                .collect();
            let mut feasible: Vec<u32> = c
                .nodes
                .iter()
                .map(|n| snap.node_index(n).unwrap())
                .collect();
            let mut statuses: BTreeMap<String, Status> = c
                .filtered_nodes_statuses
                .into_iter()
                .map(|(n, s)| (n.to_string(), s))
                .collect();
            let p = pod("1").info();
            let r =
                find_nodes_that_pass_extenders(&extenders, &p, &snap, &mut feasible, &mut statuses);
            if c.expects_err {
                assert!(r.is_err(), "{}: unexpected non-error", c.name);
                continue;
            }
            assert!(r.is_ok(), "{}: {r:?}", c.name);
            let got: Vec<&str> = feasible
                .iter()
                .map(|&i| snap.nodes()[i as usize].name.as_str())
                .collect();
            assert_eq!(got, c.expected_nodes, "{}", c.name);
            let got: Vec<(&str, (Code, Vec<String>))> = statuses
                .iter()
                .map(|(n, s)| {
                    (
                        n.as_str(),
                        (s.code, s.reasons.iter().map(|r| r.to_string()).collect()),
                    )
                })
                .collect();
            assert_eq!(got, c.expected_statuses, "{}", c.name);
        }
    }

    /// Errors: an ignorable extender's error skips it; a node the extender did not receive is
    /// refused with upstream's text; uninterested and non-filtering extenders are not called.
    #[test]
    fn ignorable_errors_unknown_nodes_and_uninterested_extenders() {
        let snap = snapshot(vec![node("a"), node("b")], &[]);
        let p = pod("p").info();
        let all = || vec![snap.node_index("a").unwrap(), snap.node_index("b").unwrap()];

        let ignorable = Arc::new(FakeExtender {
            ignorable: true,
            ..FakeExtender::with_predicates(vec![error_predicate()])
        });
        let uninterested = Arc::new(FakeExtender {
            un_interested: true,
            ..FakeExtender::with_predicates(vec![error_predicate()])
        });
        let mut feasible = all();
        let mut statuses = BTreeMap::new();
        find_nodes_that_pass_extenders(
            &[ignorable.clone(), uninterested.clone()],
            &p,
            &snap,
            &mut feasible,
            &mut statuses,
        )
        .unwrap();
        assert_eq!(feasible, all());
        assert!(statuses.is_empty());
        assert_eq!(ignorable.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(
            uninterested.calls.load(std::sync::atomic::Ordering::SeqCst),
            0
        );

        struct Liar;
        impl Extender for Liar {
            fn name(&self) -> &str {
                "http://liar"
            }
            fn filter(
                &self,
                _: &PodInfo,
                _: &[&NodeInfo],
            ) -> Result<ExtenderFilterResult, ExtenderError> {
                Ok(ExtenderFilterResult {
                    nodes: vec!["a".into(), "zzz".into()],
                    ..ExtenderFilterResult::default()
                })
            }
            fn prioritize(
                &self,
                _: &PodInfo,
                _: &[&NodeInfo],
            ) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
                Ok((Vec::new(), 0))
            }
            fn bind(&self, _: &ExtenderBindingArgs) -> Result<(), ExtenderError> {
                Ok(())
            }
            fn is_binder(&self) -> bool {
                false
            }
            fn is_interested(&self, _: &PodInfo) -> bool {
                true
            }
            fn is_ignorable(&self) -> bool {
                false
            }
        }
        let mut feasible = all();
        let (name, e) = find_nodes_that_pass_extenders(
            &[Arc::new(Liar)],
            &p,
            &snap,
            &mut feasible,
            &mut BTreeMap::new(),
        )
        .unwrap_err();
        assert_eq!(name, "http://liar");
        assert_eq!(
            e.to_string(),
            "extender \"http://liar\" claims a filtered node \"zzz\" which is not found in the input node list"
        );
    }

    /// Scores are summed per host (a repeated host counts twice, unknown hosts are dropped), a
    /// failing prioritize is left out, and several extenders run concurrently.
    #[test]
    fn prioritize_sums_per_host_and_ignores_errors() {
        let a = node("a").info();
        let b = node("b").info();
        let p = pod("p").info();
        fn twice_a(_: &PodInfo, _: &[&NodeInfo]) -> Result<Vec<(String, i64)>, String> {
            Ok(vec![
                ("a".into(), 3),
                ("a".into(), 4),
                ("x".into(), 9),
                ("b".into(), 1),
            ])
        }
        let e1 = FakeExtender {
            name: "one".into(),
            prioritizers: vec![(twice_a, 1)],
            weight: 2,
            ..FakeExtender::default()
        };
        let e2 = FakeExtender {
            name: "two".into(),
            prioritizers: vec![(super::fake::error_prioritizer, 1)],
            weight: 5,
            ..FakeExtender::default()
        };
        let extenders: Vec<Arc<dyn Extender>> = vec![Arc::new(e1), Arc::new(e2)];
        let got = prioritize_with_extenders(&extenders, &p, &[&a, &b]);
        assert_eq!(
            got,
            [ExtenderScores {
                extender: "one".into(),
                weight: 2,
                scores: vec![7, 1],
            }]
        );
    }

    /// A local stand-in for scheduler_test.go's `fakeExtender`: binds if `is_binder`, interested
    /// in one pod name.
    struct NamedBinder {
        is_binder: bool,
        interested_pod_name: &'static str,
    }

    impl Extender for NamedBinder {
        fn name(&self) -> &str {
            "fakeExtender"
        }
        fn filter(
            &self,
            _: &PodInfo,
            _: &[&NodeInfo],
        ) -> Result<ExtenderFilterResult, ExtenderError> {
            Ok(ExtenderFilterResult::default())
        }
        fn prioritize(
            &self,
            _: &PodInfo,
            _: &[&NodeInfo],
        ) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
            Ok((Vec::new(), 0))
        }
        fn bind(&self, _: &ExtenderBindingArgs) -> Result<(), ExtenderError> {
            Ok(())
        }
        fn is_binder(&self) -> bool {
            self.is_binder
        }
        fn is_interested(&self, pod: &PodInfo) -> bool {
            pod.name == self.interested_pod_name
        }
        fn is_ignorable(&self) -> bool {
            false
        }
    }

    /// Upstream `TestSchedulerBinding` (kubernetes/kubernetes `pkg/scheduler/scheduler_test.go`,
    /// v1.21/v1.22 copy, index id 23834339826): which extender binds (`wantBinderID`, -1 = the
    /// default binder).
    #[test]
    fn test_scheduler_binding() {
        let b = |is_binder, interested_pod_name| -> Arc<dyn Extender> {
            Arc::new(NamedBinder {
                is_binder,
                interested_pod_name,
            })
        };
        type Case = (&'static str, &'static str, Vec<Arc<dyn Extender>>, i32);
        let cases: Vec<Case> = vec![
            (
                "the extender is not a binder",
                "pod0",
                vec![b(false, "pod0")],
                -1,
            ),
            (
                "one of the extenders is a binder and interested in pod",
                "pod0",
                vec![b(false, "pod0"), b(true, "pod0")],
                1,
            ),
            (
                "one of the extenders is a binder, but not interested in pod",
                "pod1",
                vec![b(false, "pod1"), b(true, "pod0")],
                -1,
            ),
        ];
        for (name, pod_name, extenders, want) in cases {
            let p = pod(pod_name).info();
            let got = binder_for(&extenders, &p)
                .and_then(|e| extenders.iter().position(|x| Arc::ptr_eq(x, e)))
                .map_or(-1, |i| i as i32);
            assert_eq!(got, want, "{name}");
        }
    }

    /// Only an interested extender that filters or scores makes the cycle call out.
    #[cfg(feature = "http-extender")]
    #[test]
    fn cycle_calls_extenders_only_for_interested_filters_and_prioritizers() {
        let p = pod("p").info();
        let cfg = |url: &str, filter: &str, bind: &str, managed: &[&str]| LegacyExtender {
            url_prefix: url.into(),
            filter_verb: filter.into(),
            bind_verb: bind.into(),
            managed_resources: managed
                .iter()
                .map(|n| ExtenderManagedResource {
                    name: n.to_string(),
                    ignored_by_scheduler: false,
                })
                .collect(),
            ..LegacyExtender::default()
        };
        let build = |c: LegacyExtender| build_extenders(&[c]).unwrap();
        assert!(!cycle_calls_extenders(&[], &p));
        assert!(cycle_calls_extenders(
            &build(cfg("http://a", "filter", "", &[])),
            &p
        ));
        // Manages a resource the pod does not use.
        assert!(!cycle_calls_extenders(
            &build(cfg("http://a", "filter", "", &["example.com/gpu"])),
            &p
        ));
        // Binds only: called from the binding task, not the cycle.
        assert!(!cycle_calls_extenders(
            &build(cfg("http://a", "", "bind", &[])),
            &p
        ));
    }

    /// `factory.go` `create`: ignorable extenders move to the tail; `ignoredByScheduler`
    /// resources are collected in Policy order.
    #[cfg(feature = "http-extender")]
    #[test]
    fn build_order_and_ignored_resources() {
        let cfg = |url: &str, ignorable: bool, ignored: &[(&str, bool)]| LegacyExtender {
            url_prefix: url.into(),
            filter_verb: "filter".into(),
            ignorable,
            managed_resources: ignored
                .iter()
                .map(|(n, i)| ExtenderManagedResource {
                    name: n.to_string(),
                    ignored_by_scheduler: *i,
                })
                .collect(),
            ..LegacyExtender::default()
        };
        let configs = vec![
            cfg("http://a", true, &[("example.com/a", true)]),
            cfg("http://b", false, &[("example.com/b", false)]),
            cfg("http://c", false, &[("example.com/c", true)]),
        ];
        let built = build_extenders(&configs).unwrap();
        let names: Vec<&str> = built.iter().map(|e| e.name()).collect();
        assert_eq!(names, ["http://b", "http://c", "http://a"]);
        assert_eq!(
            ignored_extended_resources(&configs),
            ["example.com/a", "example.com/c"]
        );
    }
    /// Without the HTTP client, a Policy without extenders builds none and one with extenders
    /// is refused, naming its first entry, instead of scheduling as if they were not there.
    #[cfg(not(feature = "http-extender"))]
    #[test]
    fn without_the_http_client_listed_extenders_are_refused() {
        assert!(build_extenders(&[]).unwrap().is_empty());
        let configs = [LegacyExtender {
            url_prefix: "http://gpu-extender:8080".into(),
            filter_verb: "filter".into(),
            ..LegacyExtender::default()
        }];
        let Err(err) = build_extenders(&configs) else {
            panic!("extenders built without an HTTP client");
        };
        assert_eq!((err.index, err.field.as_str()), (0, "urlPrefix"));
        let text = err.to_string();
        assert!(text.contains("http://gpu-extender:8080"), "{text}");
        assert!(text.contains("http-extender"), "{text}");
    }
}
