//! Cluster mode end to end: scheduler replicas (`run_replica`, leader election on, fast profile
//! 6 s / 4 s / 1 s) against the in-memory API test double, each with its own client identity so
//! the write record says who wrote what.
//!
//! Real time throughout (the test double serves HTTP in real time, so tokio's paused clock is not
//! an option); every wait polls a condition with a timeout, a guard against a hang rather than a
//! bound. Election timings are checked here only as orderings that load cannot break: no
//! acquisition before the lease expired (both ends on the double's write record), the cut-off
//! leader fenced before the new leader's term began (this process's monotonic clock), a release
//! taken while the old lease had an hour to run. The exact bounds are pinned on the paused clock
//! in `crates/election/tests/elector.rs` and measured by `benches/src/bin/handover.rs`.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use election::{LeaderElectionConfig, LeaderState};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams};
use scheduler::controller::replica::{ReplicaConfig, ReplicaError};
use scheduler::controller::{
    ANNOTATION_LEASE_TRANSITIONS, ANNOTATION_LEASE_UID, ANNOTATION_SCHEDULED_BY, RunOutcome,
};
use scheduler::sim::{self, Cluster, PodStatus, SimulationConfig};
use tests::apiserver::{ApiServer, RequestMatch, WriteRecord};
use tests::objects::{self, event_notes, node_of, pod_scheduled, wait_for};
use tests::replica::{
    LEASE_DURATION, LEASE_NAME, LEASE_NAMESPACE, RENEW_DEADLINE, ReplicaHandle, SCHEDULER_NAME,
    SEED, fast_election, policy, run_config, spawn_replica, spawn_replica_with_config,
};

/// Default wait for an outcome that needs no lease expiry.
const WAIT: Duration = Duration::from_secs(20);
/// Wait for a takeover that needs a lease to expire: a guard against a hang, not a bound (the
/// bounds are pinned on the paused clock in `crates/election/tests/elector.rs`).
const HANDOVER_GUARD: Duration = Duration::from_secs(60);
/// The client the tests use to play users and other controllers.
const TESTER: &str = "tester";

// ---------------------------------------------------------------------------------------------
// Objects

fn node(name: &str, cpu: &str, memory: &str, labels: &[(&str, &str)]) -> Node {
    let mut l: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    l.insert("kubernetes.io/hostname".into(), name.into());
    let mut n = objects::node(name, &[("cpu", cpu), ("memory", memory), ("pods", "110")]);
    n.metadata.labels = Some(l);
    n
}

fn pod(name: &str, cpu: &str, memory: &str) -> Pod {
    let mut p = objects::pod(name, &[("cpu", cpu), ("memory", memory)]);
    p.spec.as_mut().unwrap().containers[0].image = Some("registry.k8s.io/pause:3.9".into());
    p
}

fn with_selector(mut p: Pod, key: &str, value: &str) -> Pod {
    let spec = p.spec.as_mut().unwrap();
    spec.node_selector = Some(BTreeMap::from([(key.to_string(), value.to_string())]));
    p
}

async fn create_pod(api: &ApiServer, p: &Pod) -> Pod {
    Api::<Pod>::namespaced(api.client(TESTER), "default")
        .create(&PostParams::default(), p)
        .await
        .unwrap()
}

async fn create_node(api: &ApiServer, n: &Node) {
    Api::<Node>::all(api.client(TESTER))
        .create(&PostParams::default(), n)
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Reading the state

fn annotation(api: &ApiServer, pod: &str, key: &str) -> Option<String> {
    api.get::<Pod>("default", pod)?
        .metadata
        .annotations?
        .get(key)
        .cloned()
}

fn lease(api: &ApiServer) -> Lease {
    api.get::<Lease>(LEASE_NAMESPACE, LEASE_NAME)
        .expect("the election Lease exists")
}

fn ok(w: &WriteRecord) -> bool {
    (200..300).contains(&w.code)
}

fn holder_in_request(w: &WriteRecord) -> Option<String> {
    w.request
        .as_ref()?
        .pointer("/spec/holderIdentity")
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

/// Accepted Lease writes by `client`, in order.
fn lease_writes(api: &ApiServer, client: &str) -> Vec<WriteRecord> {
    api.writes()
        .into_iter()
        .filter(|w| w.kind == "Lease" && w.client == client && ok(w))
        .collect()
}

/// `client`'s first accepted Lease write naming itself holder after record position `after`:
/// its acquisition.
fn acquisition(api: &ApiServer, client: &str, after: u64) -> Option<WriteRecord> {
    lease_writes(api, client)
        .into_iter()
        .find(|w| w.seq > after && holder_in_request(w).as_deref() == Some(client))
}

fn binding_writes(api: &ApiServer, pod: &str) -> Vec<WriteRecord> {
    api.writes()
        .into_iter()
        .filter(|w| w.subresource.as_deref() == Some("binding") && w.name.as_deref() == Some(pod))
        .collect()
}

fn elapsed(from: SystemTime, to: SystemTime) -> Duration {
    to.duration_since(from).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Waiting

/// Waits until exactly one replica leads (never two at once) and returns its index.
async fn single_leader(replicas: &[ReplicaHandle], timeout: Duration) -> usize {
    let mut found = None;
    wait_for("exactly one leader", timeout, || {
        let leading: Vec<usize> = (0..replicas.len())
            .filter(|i| replicas[*i].is_leading())
            .collect();
        assert!(leading.len() <= 1, "two leaders at once: {leading:?}");
        found = leading.first().copied();
        found.is_some()
    })
    .await;
    found.unwrap()
}

async fn spawn_three(api: &ApiServer) -> Vec<ReplicaHandle> {
    let mut v = Vec::new();
    for id in ["replica-1", "replica-2", "replica-3"] {
        v.push(spawn_replica(api, id, true).await);
    }
    v
}

async fn wait_synced_leader(r: &ReplicaHandle) {
    wait_for("the replica leads with synced caches", WAIT, || {
        r.is_leading()
            && r.probes
                .status
                .caches_synced
                .load(std::sync::atomic::Ordering::Relaxed)
    })
    .await;
}

async fn wait_bound(api: &ApiServer, pods: &[String], timeout: Duration) {
    wait_for(&format!("pods {pods:?} bound"), timeout, || {
        pods.iter().all(|p| node_of(api, p).is_some())
    })
    .await;
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

async fn create_small_pods(api: &ApiServer, names: &[String]) {
    for n in names {
        create_pod(api, &pod(n, "100m", "64Mi")).await;
    }
}

fn assert_bound_under(api: &ApiServer, pods: &[String], leader: &str) {
    let l = lease(api);
    let uid = l.metadata.uid.clone().unwrap();
    let transitions = l
        .spec
        .as_ref()
        .and_then(|s| s.lease_transitions)
        .unwrap_or(0)
        .to_string();
    for p in pods {
        assert_eq!(
            annotation(api, p, ANNOTATION_SCHEDULED_BY).as_deref(),
            Some(leader),
            "{p}"
        );
        assert_eq!(
            annotation(api, p, ANNOTATION_LEASE_UID).as_deref(),
            Some(uid.as_str()),
            "{p}"
        );
        assert_eq!(
            annotation(api, p, ANNOTATION_LEASE_TRANSITIONS).as_deref(),
            Some(transitions.as_str()),
            "{p}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 1. One replica places a batch exactly as `simulate` does.

/// 8 nodes of mixed sizes and labels (one cordoned, one tainted: the policy file has no
/// TaintToleration, so the taint is ignored by both sides) and 30 pods.
///
/// Determinism: every pod has a distinct priority, so the scheduling order (priority first, in
/// both the queue and `simulate`) is fixed whatever the arrival order; both sides use the same
/// policy, seed and percentage (100), and unschedulable pods are not retried (no cluster event
/// arrives), so even tie-breaks draw the same random numbers in the same order.
fn batch_cluster() -> (Vec<Node>, Vec<Pod>) {
    let mut tainted = node("node-6", "8", "8Gi", &[("zone", "c")]);
    tainted.spec.as_mut().unwrap().taints = Some(vec![k8s_openapi::api::core::v1::Taint {
        key: "dedicated".into(),
        value: Some("infra".into()),
        effect: "NoSchedule".into(),
        ..Default::default()
    }]);
    let mut cordoned = node("node-7", "6", "12Gi", &[("zone", "b")]);
    cordoned.spec.as_mut().unwrap().unschedulable = Some(true);
    let nodes = vec![
        node("node-1", "4", "8Gi", &[("zone", "a"), ("disktype", "ssd")]),
        node("node-2", "8", "16Gi", &[("zone", "a")]),
        node("node-3", "2", "4Gi", &[("zone", "b"), ("disktype", "ssd")]),
        node("node-4", "16", "32Gi", &[("zone", "b")]),
        node("node-5", "4", "16Gi", &[("zone", "c")]),
        tainted,
        cordoned,
        node("node-8", "12", "24Gi", &[("zone", "a")]),
    ];
    let cpus = [250, 500, 1000, 1500, 2000, 750, 3000, 100];
    let mems = [256, 512, 1024, 2048, 768, 4096, 128];
    let pods = (0..30)
        .map(|i| {
            let name = format!("batch-{i:02}");
            let (cpu, mem) = match i {
                5 => ("20".to_string(), "1Gi".to_string()), // bigger than any node
                24..=29 => ("6".to_string(), format!("{}Mi", 1024 + i * 8)),
                _ => (
                    format!("{}m", cpus[i % 8] + i * 10),
                    format!("{}Mi", mems[i % 7] + i * 8),
                ),
            };
            let mut p = pod(&name, &cpu, &mem);
            if i % 9 == 4 {
                p = with_selector(p, "disktype", "ssd");
            }
            if i == 11 {
                p = with_selector(p, "disktype", "nvme"); // no such node
            }
            p.spec.as_mut().unwrap().priority = Some(1000 - i as i32);
            p
        })
        .collect();
    (nodes, pods)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_places_a_batch_as_simulate_does() {
    let api = ApiServer::start().await;
    let (nodes, pods) = batch_cluster();
    for n in &nodes {
        api.seed(n).unwrap();
    }
    for p in &pods {
        api.seed(p).unwrap();
    }
    // The same stored objects (uids, timestamps) go to `simulate`.
    let cluster = Cluster {
        nodes: api.list::<Node>(),
        pods: api.list::<Pod>(),
        ..Default::default()
    };
    let cfg = SimulationConfig {
        scheduler_name: SCHEDULER_NAME.into(),
        seed: SEED,
        percentage_of_nodes_to_score: 100,
        explain: false,
    };
    let expected = sim::simulate(cluster, &policy(), &cfg).unwrap().report.pods;
    let scheduled: Vec<_> = expected
        .iter()
        .filter(|o| o.status == PodStatus::Scheduled)
        .collect();
    let unschedulable: Vec<_> = expected
        .iter()
        .filter(|o| o.status == PodStatus::Unschedulable)
        .collect();
    assert_eq!(expected.len(), 30);
    assert!(scheduled.len() >= 20, "{expected:#?}");
    assert!(unschedulable.len() >= 4, "{expected:#?}");
    let used: std::collections::BTreeSet<_> =
        scheduled.iter().filter_map(|o| o.node.clone()).collect();
    assert!(
        used.len() >= 5,
        "placements spread over several nodes: {used:?}"
    );

    let r = spawn_replica(&api, "replica-1", true).await;
    wait_for("every outcome", WAIT, || {
        scheduled.iter().all(|o| {
            node_of(&api, &o.name).is_some()
                && event_notes(&api, &o.name, "Scheduled").contains(&o.message)
        }) && unschedulable.iter().all(|o| {
            pod_scheduled(&api, &o.name).is_some()
                && !event_notes(&api, &o.name, "FailedScheduling").is_empty()
        })
    })
    .await;

    for o in &scheduled {
        assert_eq!(node_of(&api, &o.name), o.node, "placement of {}", o.name);
        assert_eq!(
            event_notes(&api, &o.name, "Scheduled"),
            vec![o.message.clone()],
            "{}",
            o.name
        );
        assert!(event_notes(&api, &o.name, "FailedScheduling").is_empty());
    }
    let names: Vec<String> = scheduled.iter().map(|o| o.name.clone()).collect();
    assert_bound_under(&api, &names, "replica-1");
    assert_eq!(
        lease(&api).spec.unwrap().holder_identity.as_deref(),
        Some("replica-1")
    );
    for o in &unschedulable {
        assert_eq!(node_of(&api, &o.name), None, "{}", o.name);
        assert!(o.message.starts_with("0/8 nodes are available"), "{o:?}");
        assert_eq!(
            event_notes(&api, &o.name, "FailedScheduling"),
            vec![o.message.clone()],
            "{}",
            o.name
        );
        assert_eq!(
            pod_scheduled(&api, &o.name),
            Some((
                "False".to_string(),
                "Unschedulable".to_string(),
                o.message.clone()
            )),
            "{}",
            o.name
        );
    }
    // Every binding was accepted at the first attempt, each written once.
    let bindings: Vec<WriteRecord> = api
        .writes()
        .into_iter()
        .filter(|w| w.subresource.as_deref() == Some("binding"))
        .collect();
    assert_eq!(bindings.len(), scheduled.len());
    assert!(
        bindings
            .iter()
            .all(|w| w.code == 201 && w.client == "replica-1")
    );
    // One observation per extension point reached in each attempt, whatever its outcome:
    // PreFilter and Filter in every attempt (all Success: not fitting is no error), PreScore
    // and Score only for the pods that had more than one feasible node.
    // (A cycle observes its extension points before it counts the attempt: compare once the
    // two agree, i.e. between cycles.)
    let ext = "scheduler_framework_extension_point_duration_seconds";
    let attempts = || r.metric("scheduler_schedule_attempts_total", &[]);
    let observed =
        |point: &str| r.metric(ext, &[("extension_point", point), ("status", "Success")]);
    wait_for(
        "one PreFilter and Filter observation per attempt",
        WAIT,
        || observed("PreFilter") == attempts() && observed("Filter") == attempts(),
    )
    .await;
    assert!(
        attempts() >= (scheduled.len() + unschedulable.len()) as f64,
        "{}",
        attempts()
    );
    let scored = r.metric(ext, &[("extension_point", "Score")]);
    assert!(
        scored >= 1.0 && scored <= scheduled.len() as f64,
        "{scored}"
    );
    assert_eq!(r.metric(ext, &[("extension_point", "PreScore")]), scored);
    drop(r);
    api.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// 2. Three replicas: only the leader binds (or writes anything but Lease reads).

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_only_the_leader_binds() {
    let api = ApiServer::start().await;
    for n in ["node-a", "node-b", "node-c"] {
        api.seed(&node(n, "8", "16Gi", &[])).unwrap();
    }
    // Followers must not report a malformed pod either.
    api.seed(&pod("bad", "abc", "64Mi")).unwrap();
    let replicas = spawn_three(&api).await;
    let li = single_leader(&replicas, WAIT).await;
    let leader = replicas[li].id.clone();
    let pods = names("web", 12);
    create_small_pods(&api, &pods).await;
    wait_for("pods bound", WAIT, || {
        assert!(
            replicas.iter().filter(|r| r.is_leading()).count() <= 1,
            "two leaders at once"
        );
        pods.iter().all(|p| node_of(&api, p).is_some()) && pod_scheduled(&api, "bad").is_some()
    })
    .await;
    assert_eq!(single_leader(&replicas, WAIT).await, li, "leadership moved");
    assert_eq!(event_notes(&api, "bad", "FailedScheduling").len(), 1);
    assert_bound_under(&api, &pods, &leader);

    let writes = api.writes();
    let bindings: Vec<&WriteRecord> = writes
        .iter()
        .filter(|w| w.subresource.as_deref() == Some("binding"))
        .collect();
    assert_eq!(bindings.len(), pods.len());
    assert!(bindings.iter().all(|w| w.client == leader && ok(w)));
    for w in &writes {
        if w.client != leader && w.client != TESTER {
            // Followers may race for a fresh Lease once (and lose); nothing else.
            assert!(
                w.kind == "Lease" && !ok(w),
                "write by follower {}: {} {} {}",
                w.client,
                w.method,
                w.path,
                w.code
            );
        }
    }
    drop(replicas);
    api.shutdown().await;
}

/// `/readyz` (the probes' `caches_synced`) turns ready on every replica once its watches have
/// listed, followers included: a follower is a warm standby, and a Deployment's rollout waits
/// for it. Before the fix only the leader ever recorded its sync, so followers answered 503
/// forever. (kube-scheduler: the `sched-handler-sync` readyz check passes once the informers'
/// handlers synced, before leader election starts.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_report_ready_once_caches_sync() {
    let api = ApiServer::start().await;
    api.seed(&node("node-a", "8", "16Gi", &[])).unwrap();
    let replicas = spawn_three(&api).await;
    let li = single_leader(&replicas, WAIT).await;
    wait_for("every replica ready", WAIT, || {
        replicas.iter().all(|r| {
            r.probes
                .status
                .caches_synced
                .load(std::sync::atomic::Ordering::Relaxed)
        })
    })
    .await;
    let followers: Vec<&ReplicaHandle> = (0..replicas.len())
        .filter(|i| *i != li)
        .map(|i| &replicas[i])
        .collect();
    assert_eq!(followers.len(), 2);
    assert!(
        followers.iter().all(|r| !r.is_leading()),
        "followers ready, not leading"
    );
    drop(replicas);
    api.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// 3. A crashed leader is replaced once its lease expired, not before.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_leader_hands_over_once_its_lease_expired() {
    let api = ApiServer::start().await;
    for n in ["node-a", "node-b"] {
        api.seed(&node(n, "8", "16Gi", &[])).unwrap();
    }
    let mut replicas = spawn_three(&api).await;
    let li = single_leader(&replicas, WAIT).await;
    let old = replicas[li].id.clone();
    let before = names("before", 2);
    create_small_pods(&api, &before).await;
    wait_bound(&api, &before, WAIT).await;
    assert_bound_under(&api, &before, &old);

    let dead = replicas.remove(li);
    dead.kill();
    let joined = tokio::time::timeout(WAIT, dead.join).await.unwrap();
    assert!(joined.unwrap_err().is_cancelled());
    // No bound on when: exactly last renewal + lease duration (+ the tie-break) is pinned on the
    // paused clock (`a_dead_leaders_lease_is_taken_at_its_last_renewal_plus_lease_duration` in
    // crates/election/tests/elector.rs). Here liveness is "a new leader, and it binds the later
    // pods"; the guard only stops a hang.
    let ni = single_leader(&replicas, HANDOVER_GUARD).await;
    let new = replicas[ni].id.clone();

    // The old leader's last accepted Lease write: a renewal it had in flight when it was killed
    // may land after the kill (a crash does not recall what was sent), so this is read now.
    let last_renewal = lease_writes(&api, &old)
        .pop()
        .expect("the old leader wrote the Lease");
    let acq = acquisition(&api, &new, last_renewal.seq).expect("the new leader's acquisition");
    let gap = elapsed(last_renewal.at, acq.at);
    eprintln!("{new} acquired {gap:?} after {old}'s last renewal (lease {LEASE_DURATION:?})");
    // Safety, on the double's clock: each time is read as the double applies the write, before
    // anyone can see it, and the follower counts the lease from when it saw the renewal, so
    // load only lengthens the gap.
    assert!(
        gap >= LEASE_DURATION,
        "acquired {gap:?} after the last renewal: before the lease expired"
    );
    assert_eq!(lease(&api).spec.unwrap().lease_transitions, Some(1));

    let after = names("after", 3);
    create_small_pods(&api, &after).await;
    wait_bound(&api, &after, WAIT).await;
    assert_bound_under(&api, &after, &new);
    // The dead replica (elector and scheduling loop included) wrote nothing after the takeover:
    // a renewal loop that outlived the kill would have written every retry period, and a
    // scheduling loop would have bound the later pods. (Counted from the takeover, not from the
    // kill: a write in flight at the kill may still land after it.)
    let late: Vec<WriteRecord> = api
        .writes()
        .into_iter()
        .filter(|w| w.client == old && w.seq > acq.seq)
        .collect();
    assert!(
        late.is_empty(),
        "writes of the killed replica after the takeover: {late:#?}"
    );
    drop(replicas);
    api.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// 4. Graceful shutdown releases the Lease: a follower takes it as released, not at expiry.

/// A lease no test outlives: with it only a release can hand leadership over.
const UNEXPIRING_LEASE: Duration = Duration::from_secs(3600);

/// [`spawn_three`] with the fast profile's renew deadline and retry period but a lease of
/// [`UNEXPIRING_LEASE`].
async fn spawn_three_unexpiring(api: &ApiServer) -> Vec<ReplicaHandle> {
    let mut v = Vec::new();
    for id in ["replica-1", "replica-2", "replica-3"] {
        let cfg = ReplicaConfig {
            run: run_config(id),
            election: Some(LeaderElectionConfig {
                lease_duration: UNEXPIRING_LEASE,
                ..fast_election(id)
            }),
            election_client: None,
        };
        v.push(spawn_replica_with_config(api, id, cfg, prometheus::Registry::new()).await);
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_releases_and_hands_over_by_the_release() {
    let api = ApiServer::start().await;
    api.seed(&node("node-a", "8", "16Gi", &[])).unwrap();
    // The old leader's lease cannot expire within the test: a takeover proves the release was
    // taken as such, whatever the load (no time bound needed).
    let mut replicas = spawn_three_unexpiring(&api).await;
    let li = single_leader(&replicas, WAIT).await;
    let mut old = replicas.remove(li);
    let before = names("before", 2);
    create_small_pods(&api, &before).await;
    wait_bound(&api, &before, WAIT).await;

    old.shutdown();
    let outcome = tokio::time::timeout(WAIT, old.join)
        .await
        .expect("graceful shutdown finishes")
        .unwrap()
        .unwrap();
    assert_eq!(outcome, RunOutcome::Shutdown);
    let release = lease_writes(&api, &old.id)
        .pop()
        .expect("the old leader wrote the Lease");
    assert_eq!(
        holder_in_request(&release).unwrap_or_default(),
        "",
        "the last Lease write of the old leader releases it"
    );

    // Within the tie-break on the paused clock (`a_released_lease_is_taken_within_the_tie_break`
    // in crates/election/tests/elector.rs); here "taken while the old lease had an hour to run".
    // The guard only stops a hang.
    let ni = single_leader(&replicas, WAIT).await;
    let new = replicas[ni].id.clone();
    let acq = acquisition(&api, &new, release.seq).expect("the new leader's acquisition");
    eprintln!(
        "{new} acquired {:?} after the release",
        elapsed(release.at, acq.at)
    );
    // The premise: the lease the old leader held before releasing was an hour long, and so is
    // the new leader's.
    let last_renewal = lease_writes(&api, &old.id)
        .into_iter()
        .rfind(|w| w.seq < release.seq)
        .expect("the old leader renewed or acquired before releasing");
    let unexpiring = Some(UNEXPIRING_LEASE.as_secs());
    assert_eq!(
        last_renewal
            .request
            .as_ref()
            .and_then(|r| r.pointer("/spec/leaseDurationSeconds"))
            .and_then(|v| v.as_u64()),
        unexpiring,
        "the old leader's lease"
    );
    assert_eq!(
        lease(&api)
            .spec
            .unwrap()
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok()),
        unexpiring,
        "the new leader's lease"
    );

    let after = names("after", 2);
    create_small_pods(&api, &after).await;
    wait_bound(&api, &after, WAIT).await;
    assert_bound_under(&api, &after, &new);
    drop(replicas);
    api.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// 5. A leader cut off from the API fences itself; none of its Bindings lands after the takeover.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitioned_leader_fences_itself() {
    let api = ApiServer::start().await;
    for n in ["node-a", "node-b"] {
        api.seed(&node(n, "8", "16Gi", &[])).unwrap();
    }
    let mut replicas = spawn_three(&api).await;
    let li = single_leader(&replicas, WAIT).await;
    let cut = replicas.remove(li);
    let old = cut.id.clone();
    let before = names("before", 2);
    create_small_pods(&api, &before).await;
    wait_bound(&api, &before, WAIT).await;

    // The cut-off leader's fence as its scheduling loop sees it: the deadline of the last
    // `Leader` state it publishes (start of its last accepted renewal + renew deadline). The
    // state stays `Leader` until that deadline passes, so a coalescing watch still sees it.
    let mut cut_state = cut.leader().state();
    let fence = tokio::spawn(async move {
        let mut deadline = None;
        loop {
            if let LeaderState::Leader { deadline: d, .. } = &*cut_state.borrow_and_update() {
                deadline = Some(*d);
            }
            if cut_state.changed().await.is_err() {
                return deadline;
            }
        }
    });
    api.faults(&old).hang();
    let cut_at = Instant::now();
    let exit = tokio::spawn(async move {
        let r = cut.join.await;
        (cut_at.elapsed(), r)
    });
    let during = names("during", 3);
    create_small_pods(&api, &during).await;

    let ni = single_leader(&replicas, HANDOVER_GUARD).await;
    let new = replicas[ni].id.clone();
    let acquired_at = replicas[ni]
        .leader()
        .current_term()
        .expect("the new leader's term")
        .acquired_at;
    // Let the old leader talk again: if it had not fenced itself it would carry on binding.
    api.faults(&old).heal();
    let after = names("after", 3);
    create_small_pods(&api, &after).await;
    wait_bound(&api, &during, WAIT).await;
    wait_bound(&api, &after, WAIT).await;
    assert_bound_under(&api, &during, &new);
    assert_bound_under(&api, &after, &new);

    let (took, result) = tokio::time::timeout(WAIT, exit)
        .await
        .expect("the cut-off leader stopped")
        .unwrap();
    eprintln!("the cut-off leader stopped {took:?} after the cut");
    let outcome: Result<RunOutcome, ReplicaError> = result.unwrap();
    assert_eq!(outcome.unwrap(), RunOutcome::LeadershipLost);
    // It fenced itself before anyone acquired: its last term's deadline had passed when the new
    // leader started the write that acquired. Both instants are this process's monotonic clock,
    // and by causality the margin is at least lease duration - renew deadline (the follower
    // counts from when it saw the renewal, after the renewal started): load only widens it. When
    // it stopped after the cut is pinned on the paused clock
    // (`renew_failures_fence_the_leader_by_its_renew_deadline` in crates/election/tests).
    let fenced_at = tokio::time::timeout(WAIT, fence)
        .await
        .expect("the cut-off leader's elector ended")
        .unwrap()
        .expect("the cut-off leader led");
    eprintln!(
        "the cut-off leader's fence passed {:?} before the new leader's acquisition",
        acquired_at.saturating_duration_since(fenced_at)
    );
    assert!(
        fenced_at <= acquired_at,
        "the cut-off leader still led {:?} into the new leader's term (renew deadline \
         {RENEW_DEADLINE:?}, lease {LEASE_DURATION:?})",
        fenced_at - acquired_at
    );

    let acq = acquisition(&api, &new, 0).expect("the new leader's acquisition");
    let last_renewal = lease_writes(&api, &old)
        .into_iter()
        .rfind(|w| w.seq < acq.seq)
        .expect("the cut-off leader wrote the Lease");
    let gap = elapsed(last_renewal.at, acq.at);
    eprintln!("{new} acquired {gap:?} after {old}'s last renewal (lease {LEASE_DURATION:?})");
    assert!(
        gap >= LEASE_DURATION,
        "acquired {gap:?} after the last renewal: before the lease expired"
    );
    let late: Vec<WriteRecord> = api
        .writes()
        .into_iter()
        .filter(|w| w.client == old && w.seq > acq.seq && ok(w))
        .collect();
    assert!(
        late.is_empty(),
        "accepted writes of the old leader after the takeover: {late:#?}"
    );
    drop(replicas);
    api.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// 6. A pod bound by someone else while our Binding is in flight: dropped, not retried.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_conflict_is_not_retried() {
    let api = ApiServer::start().await;
    api.seed(&node("small", "2", "4Gi", &[])).unwrap();
    api.seed(&node("big", "16", "32Gi", &[])).unwrap();
    let r = spawn_replica(&api, "replica-1", true).await;
    wait_synced_leader(&r).await;

    // Our Binding is held on its way to the server; the other party's lands first.
    api.faults("replica-1")
        .hold_matching(RequestMatch::bindings());
    create_pod(&api, &pod("contested", "500m", "256Mi")).await;
    wait_for("the scheduler's Binding is in flight", WAIT, || {
        api.faults("replica-1").held() >= 1
    })
    .await;
    let other = Binding {
        metadata: ObjectMeta {
            name: Some("contested".into()),
            ..Default::default()
        },
        target: ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Node".into()),
            name: Some("small".into()),
            ..Default::default()
        },
    };
    Api::<Pod>::namespaced(api.client("other-scheduler"), "default")
        .create_subresource::<_, kube::core::Status>(
            "binding",
            "contested",
            &PostParams::default(),
            &other,
        )
        .await
        .unwrap();
    api.faults("replica-1").release();
    wait_for("the scheduler's Binding answered", WAIT, || {
        binding_writes(&api, "contested")
            .iter()
            .any(|w| w.client == "replica-1")
    })
    .await;
    api.faults("replica-1").heal();

    // Nothing of it is left queued; a node event (which moves unschedulable pods) and one
    // backoff period later, a retry of the contested pod would have been written.
    let queued = |queue: &str| r.metric("scheduler_pending_pods", &[("queue", queue)]);
    wait_for("the queue is empty", Duration::from_secs(5), || {
        queued("active") + queued("backoff") + queued("unschedulable") == 0.0
    })
    .await;
    create_node(&api, &node("extra", "4", "8Gi", &[])).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let next = names("next", 2);
    create_small_pods(&api, &next).await;
    wait_bound(&api, &next, WAIT).await;
    assert_eq!(node_of(&api, "contested").as_deref(), Some("small"));
    let ours: Vec<u16> = binding_writes(&api, "contested")
        .iter()
        .filter(|w| w.client == "replica-1")
        .map(|w| w.code)
        .collect();
    assert_eq!(ours, vec![409], "one attempt, answered already assigned");
    assert_eq!(annotation(&api, "contested", ANNOTATION_SCHEDULED_BY), None);
    assert!(event_notes(&api, "contested", "Scheduled").is_empty());
    drop(r);
    api.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// 7. A queued pod that is deleted leaves the queue.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_deleted_while_queued_is_dropped() {
    let api = ApiServer::start().await;
    api.seed(&node("plain", "8", "16Gi", &[])).unwrap();
    let r = spawn_replica(&api, "replica-1", true).await;
    wait_synced_leader(&r).await;
    create_pod(
        &api,
        &with_selector(pod("waiting", "100m", "64Mi"), "disktype", "ssd"),
    )
    .await;
    let queued = |queue: &str| r.metric("scheduler_pending_pods", &[("queue", queue)]);
    wait_for("the pod is unschedulable and queued", WAIT, || {
        pod_scheduled(&api, "waiting").is_some() && queued("unschedulable") == 1.0
    })
    .await;

    Api::<Pod>::namespaced(api.client(TESTER), "default")
        .delete("waiting", &DeleteParams::default())
        .await
        .unwrap();
    wait_for("the queue is empty", WAIT, || {
        queued("active") + queued("backoff") + queued("unschedulable") == 0.0
    })
    .await;
    // A node it would fit arrives: a stale queue entry would now be scheduled.
    create_node(&api, &node("fast", "8", "16Gi", &[("disktype", "ssd")])).await;
    create_pod(
        &api,
        &with_selector(pod("probe", "100m", "64Mi"), "disktype", "ssd"),
    )
    .await;
    wait_bound(&api, &["probe".to_string()], WAIT).await;
    assert_eq!(node_of(&api, "probe").as_deref(), Some("fast"));
    assert!(binding_writes(&api, "waiting").is_empty());
    assert!(
        api.writes()
            .iter()
            .filter(|w| w.name.as_deref() == Some("waiting") && w.client == "replica-1")
            .all(|w| w.subresource.as_deref() == Some("status")),
        "only the PodScheduled condition was written for the deleted pod"
    );
    drop(r);
    api.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// 8. An unschedulable pod is scheduled once a fitting node is added.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unschedulable_pod_is_scheduled_when_a_node_is_added() {
    let api = ApiServer::start().await;
    api.seed(&node("small", "1", "2Gi", &[])).unwrap();
    let r = spawn_replica(&api, "replica-1", true).await;
    wait_synced_leader(&r).await;
    create_pod(&api, &pod("large", "4", "1Gi")).await;
    wait_for("FailedScheduling", WAIT, || {
        pod_scheduled(&api, "large").is_some()
    })
    .await;
    let message = "0/1 nodes are available: 1 Insufficient cpu.";
    assert_eq!(
        event_notes(&api, "large", "FailedScheduling"),
        vec![message.to_string()]
    );
    assert_eq!(
        pod_scheduled(&api, "large"),
        Some(("False".into(), "Unschedulable".into(), message.into()))
    );
    assert_eq!(node_of(&api, "large"), None);

    // A node update that cannot help retries the pod (nodeSchedulingPropertiesChange: labels).
    // The same failure again adds to the event series (client-go writes count 2 at once) but
    // does not write the condition the pod already has (v1.22 updatePod).
    let mut small = api.get::<Node>("", "small").expect("node small");
    small
        .metadata
        .labels
        .get_or_insert_default()
        .insert("touched".into(), "yes".into());
    api.replace(&small, false).expect("label node small");
    wait_for("the FailedScheduling series update", WAIT, || {
        api.writes()
            .iter()
            .any(|w| w.kind == "Event" && w.method == "PATCH" && ok(w))
    })
    .await;

    create_node(&api, &node("large-node", "8", "16Gi", &[])).await;
    wait_bound(&api, &["large".to_string()], WAIT).await;
    assert_eq!(node_of(&api, "large").as_deref(), Some("large-node"));
    assert_eq!(
        pod_scheduled(&api, "large").map(|c| c.0).as_deref(),
        Some("True")
    );
    assert_bound_under(&api, &["large".to_string()], "replica-1");
    // Three attempts (unschedulable twice, then scheduled), each observed at PreFilter and
    // Filter; the only feasible node is taken without scoring (v1.22): no PreScore, no Score.
    let ext = "scheduler_framework_extension_point_duration_seconds";
    for point in ["PreFilter", "Filter"] {
        assert_eq!(
            r.metric(ext, &[("extension_point", point), ("status", "Success")]),
            3.0,
            "{point}"
        );
    }
    assert_eq!(r.metric(ext, &[("extension_point", "PreScore")]), 0.0);
    assert_eq!(r.metric(ext, &[("extension_point", "Score")]), 0.0);
    let status_writes: Vec<_> = api
        .writes()
        .into_iter()
        .filter(|w| {
            w.subresource.as_deref() == Some("status") && w.name.as_deref() == Some("large")
        })
        .collect();
    assert_eq!(
        status_writes.len(),
        1,
        "one PodScheduled=False write for two identical failures: {status_writes:?}"
    );
    drop(r);
    api.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// 9. A malformed pod gets FailedScheduling naming the field; the scheduler carries on.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_pod_gets_failed_scheduling_and_others_proceed() {
    let api = ApiServer::start().await;
    api.seed(&node("node-a", "8", "16Gi", &[])).unwrap();
    api.seed(&pod("bad", "abc", "64Mi")).unwrap();
    let r = spawn_replica(&api, "replica-1", true).await;
    wait_synced_leader(&r).await;
    let good = names("good", 3);
    create_small_pods(&api, &good).await;
    wait_bound(&api, &good, WAIT).await;
    wait_for("FailedScheduling for the malformed pod", WAIT, || {
        !event_notes(&api, "bad", "FailedScheduling").is_empty()
    })
    .await;
    let notes = event_notes(&api, "bad", "FailedScheduling");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("spec.containers[0].resources.requests[cpu]")
            && notes[0].contains("\"abc\""),
        "{}",
        notes[0]
    );
    assert_eq!(node_of(&api, "bad"), None);
    assert!(binding_writes(&api, "bad").is_empty());
    drop(r);
    api.shutdown().await;
}
