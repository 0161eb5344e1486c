//! A chaos run: three scheduler replicas (leader election on, the fast profile 6 s / 4 s / 1 s)
//! against the API double, pods arriving continuously, and a seeded random schedule of faults —
//! SIGKILL (the replica's task aborted: no release, nothing written after) and SIGTERM (graceful
//! shutdown, Lease released) of the leader or a follower, each restarted as a new process
//! identity; an API partition of the leader; 5xx and 429 storms; slow responses; dropped
//! watches; 410 Gone (history compacted, watches dropped); Lease update conflicts (the Lease
//! rewritten under the holder); and Binding responses lost after the write.
//!
//! When the schedule is done every fault is healed, a node is added (a cluster event, so every
//! unschedulable pod is tried again under a stable leader) and the run waits until every pod is
//! bound or has a FailedScheduling event. The invariants are then checked from the double's
//! write record alone ([`check`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, PostParams};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use scheduler::controller::ANNOTATION_LEASE_TRANSITIONS;

use crate::apiserver::{ApiServer, RequestMatch, WriteRecord};
use crate::objects::{self, event_notes};
use crate::replica::{LEASE_NAME, LEASE_NAMESPACE, ReplicaHandle, spawn_replica};

/// Settings of a chaos run.
#[derive(Debug, Clone)]
pub struct ChaosConfig {
    /// Seed of the fault schedule and of the pods' sizes.
    pub seed: u64,
    /// Faults to induce.
    pub faults: usize,
    /// Time between the start of two faults, drawn uniformly from this range.
    pub fault_spacing: (Duration, Duration),
    /// Time between two pod creations.
    pub pod_interval: Duration,
    /// One pod in this many asks for more cpu than any node has (it must end unschedulable,
    /// with a FailedScheduling event).
    pub unfit_one_in: u64,
    /// How long the run may take to settle after the last fault.
    pub settle_timeout: Duration,
}

/// What a run did and found.
#[derive(Debug, Clone, Default)]
pub struct ChaosReport {
    /// Faults induced, by kind.
    pub faults: BTreeMap<&'static str, usize>,
    /// Pods created.
    pub pods: usize,
    /// Pods bound (exactly once each, unless a violation says otherwise).
    pub bound: usize,
    /// Pods that fit nowhere, each with a FailedScheduling event.
    pub unschedulable: usize,
    /// Accepted Lease acquisitions (terms).
    pub terms: usize,
    /// Bindings answered `409 ... already assigned` for a pod bound to another node than the
    /// one the Binding named: a scheduler that acted on a stale cache (target: none).
    pub conflicts_409: usize,
    /// Bindings answered 409 for a pod already bound to the node they named (a retry after a
    /// lost response: success, not an error).
    pub conflicts_409_same_node: usize,
    /// Invariant violations (target: none).
    pub violations: Vec<String>,
    /// Wall time of the run.
    pub took: Duration,
}

impl ChaosReport {
    /// Total faults induced.
    pub fn fault_count(&self) -> usize {
        self.faults.values().sum()
    }

    /// One line: faults, pods bound, violations.
    pub fn line(&self) -> String {
        format!(
            "chaos: {} faults ({}), {} pods: {} bound exactly once, {} unschedulable with FailedScheduling; {} terms, {} Binding 409s to another node ({} to the same node); {} violations; {:.0} s",
            self.fault_count(),
            self.faults
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
            self.pods,
            self.bound,
            self.unschedulable,
            self.terms,
            self.conflicts_409,
            self.conflicts_409_same_node,
            self.violations.len(),
            self.took.as_secs_f64()
        )
    }
}

const NODES: usize = 5;
const NODE_CPU: &str = "16";
const TESTER: &str = "chaos-tester";

struct Slot {
    base: String,
    generation: u32,
    handle: Option<ReplicaHandle>,
}

impl Slot {
    fn id(&self) -> String {
        format!("{}.g{}", self.base, self.generation)
    }
}

async fn start(api: &ApiServer, slot: &mut Slot) {
    slot.generation += 1;
    let id = slot.id();
    slot.handle = Some(spawn_replica(api, &id, true).await);
}

fn leader(slots: &[Slot]) -> Option<usize> {
    slots
        .iter()
        .position(|s| s.handle.as_ref().is_some_and(ReplicaHandle::is_leading))
}

/// Runs the chaos schedule and checks the invariants.
///
/// # Panics
/// If the double or a replica cannot start.
pub async fn run(cfg: &ChaosConfig) -> ChaosReport {
    let started = Instant::now();
    let api = ApiServer::builder().history_limit(5_000).start().await;
    for i in 0..NODES {
        api.seed(&objects::node(
            &format!("node-{i}"),
            &[("cpu", NODE_CPU), ("memory", "64Gi"), ("pods", "1000")],
        ))
        .expect("seed node");
    }
    let mut slots: Vec<Slot> = (1..=3)
        .map(|i| Slot {
            base: format!("replica-{i}"),
            generation: 0,
            handle: None,
        })
        .collect();
    for s in &mut slots {
        start(&api, s).await;
    }
    let mut rng = StdRng::seed_from_u64(cfg.seed);

    // Pods arrive continuously from their own task.
    let stop_pods = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let creator = {
        let client = api.client(TESTER);
        let stop = stop_pods.clone();
        let interval = cfg.pod_interval;
        let unfit = cfg.unfit_one_in;
        let seed = cfg.seed;
        tokio::spawn(async move {
            let pods: Api<Pod> = Api::namespaced(client, "default");
            let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed);
            let mut created = Vec::new();
            let mut k = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let name = format!("pod-{k:05}");
                let cpu = if unfit > 0 && rng.random_range(0..unfit) == 0 {
                    "100".to_string()
                } else {
                    format!("{}m", rng.random_range(5..40))
                };
                let p = objects::pod(&name, &[("cpu", cpu.as_str()), ("memory", "16Mi")]);
                if pods.create(&PostParams::default(), &p).await.is_ok() {
                    created.push(name);
                }
                k += 1;
                tokio::time::sleep(interval).await;
            }
            created
        })
    };

    let mut report = ChaosReport::default();
    for _ in 0..cfg.faults {
        let wait = rng.random_range(cfg.fault_spacing.0..=cfg.fault_spacing.1);
        // Faults that need a leader wait for one (at most a lease duration and a bit).
        let lead = {
            let t = Instant::now();
            loop {
                if let Some(l) = leader(&slots) {
                    break Some(l);
                }
                if t.elapsed() > Duration::from_secs(20) {
                    break None;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        let target = match (lead, rng.random_range(0..3)) {
            (Some(l), 0 | 1) => l,
            _ => rng.random_range(0..slots.len()),
        };
        let id = slots[target].id();
        let hold = wait.min(Duration::from_secs(3));
        let kind: &'static str = match rng.random_range(0..10) {
            0 => {
                if let Some(h) = slots[target].handle.take() {
                    h.kill();
                    let _ = h.join.await;
                }
                tokio::time::sleep(hold / 2).await;
                start(&api, &mut slots[target]).await;
                "SIGKILL"
            }
            1 => {
                if let Some(mut h) = slots[target].handle.take() {
                    h.shutdown();
                    let _ = tokio::time::timeout(Duration::from_secs(15), &mut h.join).await;
                    h.join.abort();
                }
                start(&api, &mut slots[target]).await;
                "SIGTERM"
            }
            2 => {
                let f = api.faults(&id);
                f.hang();
                tokio::time::sleep(hold).await;
                f.heal();
                "partition"
            }
            3 => {
                let code = if rng.random_bool(0.5) { 503 } else { 500 };
                let f = api.faults(&id);
                f.fail_all(code);
                tokio::time::sleep(hold).await;
                f.heal();
                "5xx storm"
            }
            4 => {
                let f = api.faults(&id);
                f.fail_all(429);
                tokio::time::sleep(hold).await;
                f.heal();
                "429 storm"
            }
            5 => {
                let f = api.faults(&id);
                f.latency(Duration::from_millis(rng.random_range(100..800)));
                tokio::time::sleep(hold).await;
                f.heal();
                "slow responses"
            }
            6 => {
                api.faults(&id).drop_watches();
                "dropped watches"
            }
            7 => {
                api.compact();
                for s in &slots {
                    api.faults(&s.id()).drop_watches();
                }
                "410 Gone"
            }
            8 => {
                // Rewrite the Lease under its holder: its next renewal is a 409 Conflict.
                if let Some(mut l) = api
                    .get::<k8s_openapi::api::coordination::v1::Lease>(LEASE_NAMESPACE, LEASE_NAME)
                {
                    l.metadata
                        .annotations
                        .get_or_insert_with(Default::default)
                        .insert("chaos/touched".into(), rng.random::<u32>().to_string());
                    let _ = api.replace(&l, false);
                }
                "Lease conflict"
            }
            _ => {
                api.faults(&id)
                    .lose_responses(RequestMatch::bindings(), rng.random_range(1..4));
                "lost Binding responses"
            }
        };
        *report.faults.entry(kind).or_default() += 1;
        tokio::time::sleep(wait.saturating_sub(hold)).await;
    }

    // Settle: heal everything, stop the pods, nudge the unschedulable ones with a node event.
    for s in &slots {
        api.faults(&s.id()).heal();
    }
    stop_pods.store(true, std::sync::atomic::Ordering::Relaxed);
    let created = creator.await.unwrap_or_default();
    Api::<Node>::all(api.client(TESTER))
        .create(
            &PostParams::default(),
            &objects::node(
                "node-settle",
                &[("cpu", "1"), ("memory", "1Gi"), ("pods", "10")],
            ),
        )
        .await
        .expect("settle node");
    let unfit: BTreeSet<String> = created
        .iter()
        .filter(|n| {
            api.get::<Pod>("default", n).is_some_and(|p| {
                p.spec
                    .and_then(|s| s.containers.first().cloned())
                    .is_some_and(|c| {
                        c.resources
                            .and_then(|r| r.requests)
                            .is_some_and(|r| r.get("cpu").is_some_and(|q| q.0 == "100"))
                    })
            })
        })
        .cloned()
        .collect();
    let deadline = Instant::now() + cfg.settle_timeout;
    loop {
        let pending: Vec<&String> = created
            .iter()
            .filter(|n| {
                if unfit.contains(*n) {
                    event_notes(&api, n, "FailedScheduling").is_empty()
                } else {
                    objects::node_of(&api, n).is_none()
                }
            })
            .collect();
        if pending.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            report.violations.push(format!(
                "{} pods neither bound nor reported unschedulable after settling: {:?}",
                pending.len(),
                pending.iter().take(10).collect::<Vec<_>>()
            ));
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    report.pods = created.len();
    report.unschedulable = unfit
        .iter()
        .filter(|n| !event_notes(&api, n, "FailedScheduling").is_empty())
        .count();
    check(&api, &created, &unfit, &mut report);
    report.took = started.elapsed();
    for s in &mut slots {
        if let Some(h) = s.handle.take() {
            h.kill();
        }
    }
    api.shutdown().await;
    report
}

fn accepted(w: &WriteRecord) -> bool {
    (200..300).contains(&w.code) && !w.dry_run
}

fn holder_in(w: &WriteRecord) -> Option<String> {
    w.request
        .as_ref()?
        .pointer("/spec/holderIdentity")
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// The invariants, from the write record:
/// - every pod that fits is bound by exactly one accepted Binding, and a pod that fits nowhere
///   by none (and has a FailedScheduling event, counted by the caller);
/// - every accepted Binding comes from the replica that held the Lease at that moment (the
///   holder written by the last accepted Lease write before it);
/// - the terms (the Binding's lease-transitions annotation) never go back: no two holders'
///   Bindings interleave;
/// - no node's bound pods request more cpu, memory or pod slots than it has.
pub fn check(
    api: &ApiServer,
    created: &[String],
    unfit: &BTreeSet<String>,
    report: &mut ChaosReport,
) {
    let writes = api.writes();
    let mut holder: Option<String> = None;
    let mut per_pod: BTreeMap<String, usize> = BTreeMap::new();
    let mut last_term: Option<(i64, String)> = None;
    for w in &writes {
        if w.kind == "Lease" && accepted(w) && matches!(w.method.as_str(), "PUT" | "POST") {
            let h = holder_in(w).filter(|h| !h.is_empty());
            if h.is_some() && h != holder {
                report.terms += 1;
            }
            holder = h;
            continue;
        }
        if w.subresource.as_deref() != Some("binding") {
            continue;
        }
        if w.code == 409 {
            let pod = w.name.clone().unwrap_or_default();
            let target = w
                .request
                .as_ref()
                .and_then(|r| r.pointer("/target/name"))
                .and_then(|v| v.as_str())
                .map(str::to_string);
            if target.is_some() && objects::node_of(api, &pod) == target {
                report.conflicts_409_same_node += 1;
            } else {
                report.conflicts_409 += 1;
            }
        }
        if !accepted(w) {
            continue;
        }
        let pod = w.name.clone().unwrap_or_default();
        *per_pod.entry(pod.clone()).or_default() += 1;
        if holder.as_deref() != Some(w.client.as_str()) {
            report.violations.push(format!(
                "write {}: Binding of {pod} by {} while {:?} held the Lease",
                w.seq, w.client, holder
            ));
        }
        let term = w
            .request
            .as_ref()
            .and_then(|r| {
                r.pointer(&format!(
                    "/metadata/annotations/{}",
                    ANNOTATION_LEASE_TRANSITIONS.replace('/', "~1")
                ))
            })
            .and_then(|v| v.as_str())
            .and_then(|s| s.parse::<i64>().ok())
            .unwrap_or(-1);
        if let Some((t, c)) = &last_term
            && (term < *t || (term == *t && *c != w.client))
        {
            report.violations.push(format!(
                "write {}: Binding of {pod} by {} in term {term} after one by {c} in term {t}",
                w.seq, w.client
            ));
        }
        last_term = Some((term, w.client.clone()));
    }
    for p in created {
        let n = per_pod.get(p).copied().unwrap_or(0);
        let want = usize::from(!unfit.contains(p));
        if n != want {
            report
                .violations
                .push(format!("{p}: {n} accepted Bindings (expected {want})"));
        }
        if n == 1 && want == 1 {
            report.bound += 1;
        }
    }
    // Capacity, from the stored pods and nodes.
    let mut used: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
    for p in api.list::<Pod>() {
        let Some(spec) = p.spec else { continue };
        let Some(node) = spec.node_name else { continue };
        let u = used.entry(node).or_default();
        for c in &spec.containers {
            let req = c
                .resources
                .as_ref()
                .and_then(|r| r.requests.clone())
                .unwrap_or_default();
            u.0 += req
                .get("cpu")
                .and_then(|q| scheduler::quantity::milli_value(&q.0).ok())
                .unwrap_or(0);
            u.1 += req
                .get("memory")
                .and_then(|q| scheduler::quantity::value(&q.0).ok())
                .unwrap_or(0);
        }
        u.2 += 1;
    }
    for n in api.list::<Node>() {
        let name = n.metadata.name.unwrap_or_default();
        let alloc = n.status.and_then(|s| s.allocatable).unwrap_or_default();
        let get = |k: &str, milli: bool| {
            alloc
                .get(k)
                .and_then(|q| {
                    if milli {
                        scheduler::quantity::milli_value(&q.0).ok()
                    } else {
                        scheduler::quantity::value(&q.0).ok()
                    }
                })
                .unwrap_or(0)
        };
        let (c, m, p) = used.get(&name).copied().unwrap_or_default();
        if c > get("cpu", true) || m > get("memory", false) || p > get("pods", false) {
            report.violations.push(format!(
                "{name} over allocatable: {c}m cpu, {m} bytes, {p} pods bound"
            ));
        }
    }
}
