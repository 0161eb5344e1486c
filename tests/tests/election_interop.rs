//! Our electors (crate `election`, `KubeLeaseLock`: the code `mini-scheduler run` uses) and a
//! candidate that reads and writes the Lease exactly as client-go does
//! ([`tests::clientgo::ClientGoCandidate`]) share one Lease on the API test double, in both
//! directions: neither takes a held, unexpired lease; each takes a released or expired one.
//! Also: our followers watch the Lease by name over HTTP and list again after a 410.
//!
//! Real time, fast profile (6 s / 4 s / 1 s) on both sides, except that a holder that will
//! release holds a lease of an hour ([`LONG_LEASE`]): a follower that takes it within the
//! test's wait can only have taken it as released, whatever the machine's load, and the taker
//! is shown to have replaced the release itself (its write's resourceVersion precondition).
//! The expiry checks are lower bounds ("not before expiry"), which a slow machine cannot break;
//! the exact timings are pinned on the paused clock in `crates/election/tests/elector.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, SystemTime};

use election::{
    ElectionMetrics, ElectionOutcome, KubeLeaseLock, LeaderElectionConfig, LeaderElector,
    LeaderElectorHandle,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use tests::apiserver::{ApiServer, WriteRecord};
use tests::clientgo::{ClientGoCandidate, ClientGoConfig};
use tests::objects::wait_for;
use tests::replica::{LEASE_DURATION, LEASE_NAME, LEASE_NAMESPACE, fast_election};

const WAIT: Duration = Duration::from_secs(20);

/// The lease duration of a holder that will release: no follower's wait comes near it, so only
/// the release can hand its lease over within the test.
const LONG_LEASE: Duration = Duration::from_secs(3600);

/// The fast profile, with [`LONG_LEASE`] when `long`.
fn election_config(id: &str, long: bool) -> LeaderElectionConfig {
    let mut config = fast_election(id);
    if long {
        config.lease_duration = LONG_LEASE;
    }
    config
}

fn ours(api: &ApiServer, id: &str) -> LeaderElectorHandle {
    ours_with(api, id, false)
}

/// Our elector, holding [`LONG_LEASE`] when `long`.
fn ours_with(api: &ApiServer, id: &str, long: bool) -> LeaderElectorHandle {
    let config = election_config(id, long);
    let lock = KubeLeaseLock::new(api.client(id), LEASE_NAMESPACE, LEASE_NAME);
    LeaderElector::new(config, lock, ElectionMetrics::unregistered())
        .unwrap()
        .spawn()
}

fn client_go(api: &ApiServer, id: &str, seed: u64) -> ClientGoCandidate {
    client_go_with(api, id, seed, false)
}

/// A client-go candidate, holding [`LONG_LEASE`] when `long`.
fn client_go_with(api: &ApiServer, id: &str, seed: u64, long: bool) -> ClientGoCandidate {
    let cfg = election_config(id, long);
    ClientGoCandidate::spawn(
        api.client(id),
        ClientGoConfig {
            lease_duration: cfg.lease_duration,
            renew_deadline: cfg.renew_deadline,
            retry_period: cfg.retry_period,
            identity: id.to_string(),
            namespace: LEASE_NAMESPACE.to_string(),
            name: LEASE_NAME.to_string(),
            release_on_cancel: true,
            seed,
        },
    )
}

fn lease(api: &ApiServer) -> Lease {
    api.get::<Lease>(LEASE_NAMESPACE, LEASE_NAME)
        .expect("the Lease exists")
}

fn holder(api: &ApiServer) -> String {
    lease(api)
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default()
}

fn transitions(api: &ApiServer) -> i32 {
    lease(api)
        .spec
        .and_then(|s| s.lease_transitions)
        .unwrap_or(0)
}

/// Accepted Lease writes by `client`.
fn lease_writes(api: &ApiServer, client: &str) -> Vec<WriteRecord> {
    api.writes()
        .into_iter()
        .filter(|w| w.kind == "Lease" && w.client == client && (200..300).contains(&w.code))
        .collect()
}

/// `client`'s first accepted Lease write naming itself holder: its acquisition.
fn acquisition(api: &ApiServer, client: &str) -> WriteRecord {
    lease_writes(api, client)
        .into_iter()
        .find(|w| {
            w.request
                .as_ref()
                .and_then(|r| r.pointer("/spec/holderIdentity"))
                .and_then(|h| h.as_str())
                == Some(client)
        })
        .unwrap_or_else(|| panic!("{client} acquired"))
}

fn elapsed(from: SystemTime, to: SystemTime) -> Duration {
    to.duration_since(from).unwrap_or_default()
}

/// `acq` replaced the Lease as `prior` left it: its update's resourceVersion precondition is
/// the one `prior` produced (the taker read that record and nothing came between).
fn replaced(acq: &WriteRecord, prior: &WriteRecord) -> bool {
    let precondition = acq
        .request
        .as_ref()
        .and_then(|r| r.pointer("/metadata/resourceVersion"))
        .and_then(|v| v.as_str());
    precondition.is_some() && precondition == prior.resource_version.as_deref()
}

/// For `window`, `follower` never leads and writes no Lease while `holder` keeps it.
async fn follows_for(
    api: &ApiServer,
    window: Duration,
    follower: &str,
    follower_leads: impl Fn() -> bool,
    holder_id: &str,
) {
    let writes_before = lease_writes(api, follower).len();
    let end = tokio::time::Instant::now() + window;
    while tokio::time::Instant::now() < end {
        assert!(!follower_leads(), "{follower} took a held lease");
        assert_eq!(holder(api), holder_id);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        lease_writes(api, follower).len(),
        writes_before,
        "{follower} wrote the Lease while {holder_id} held it"
    );
}

/// Every accepted Lease write carries MicroTimes with exactly six fractional digits.
fn assert_micro_times(api: &ApiServer) {
    for w in api
        .writes()
        .iter()
        .filter(|w| w.kind == "Lease" && w.code < 300)
    {
        let spec = w.request.as_ref().and_then(|r| r.get("spec")).unwrap();
        for field in ["acquireTime", "renewTime"] {
            let t = spec[field].as_str().unwrap_or_default();
            let frac = t
                .strip_suffix('Z')
                .and_then(|t| t.rsplit_once('.'))
                .map(|(_, f)| f);
            assert!(
                frac.is_some_and(|f| f.len() == 6 && f.bytes().all(|b| b.is_ascii_digit())),
                "{} wrote {field} {t:?}",
                w.client
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ours_follow_a_client_go_holder_and_take_its_released_lease_and_it_ours_expired() {
    let api = ApiServer::start().await;
    let go1 = client_go_with(&api, "client-go-1", 1, true);
    wait_for("client-go-1 leads", WAIT, || go1.is_leading()).await;
    let r1 = ours(&api, "ours-1");
    follows_for(
        &api,
        LEASE_DURATION * 2,
        "ours-1",
        || r1.is_leading(),
        "client-go-1",
    )
    .await;
    // Our follower watches the Lease by name (RBAC can limit that by resourceNames).
    let watched = api.requests().into_iter().any(|r| {
        r.client == "ours-1"
            && r.verb == "watch"
            && r.resource.as_deref() == Some("leases")
            && r.name.as_deref() == Some(LEASE_NAME)
    });
    assert!(watched, "ours-1 watches Lease {LEASE_NAME} by name");

    // client-go releases (ReleaseOnCancel): ours takes it as released (its hour-long lease
    // cannot have expired), replacing the release.
    let before = transitions(&api);
    go1.shutdown();
    go1.join().await.unwrap();
    let release = lease_writes(&api, "client-go-1").pop().unwrap();
    wait_for("ours-1 leads", WAIT, || r1.is_leading()).await;
    let acq = acquisition(&api, "ours-1");
    eprintln!(
        "ours-1 acquired {:?} after client-go-1's release",
        elapsed(release.at, acq.at)
    );
    assert!(replaced(&acq, &release), "not taken as released");
    assert_eq!(holder(&api), "ours-1");
    assert_eq!(transitions(&api), before + 1);

    // A client-go follower never takes our held lease, and takes it once it expired.
    let go2 = client_go(&api, "client-go-2", 2);
    follows_for(
        &api,
        LEASE_DURATION * 2,
        "client-go-2",
        || go2.is_leading(),
        "ours-1",
    )
    .await;
    r1.abort();
    let last = lease_writes(&api, "ours-1").pop().unwrap();
    wait_for("client-go-2 leads", WAIT * 2, || go2.is_leading()).await;
    let acq = acquisition(&api, "client-go-2");
    let gap = elapsed(last.at, acq.at);
    eprintln!("client-go-2 acquired {gap:?} after ours-1's last renewal");
    assert!(gap >= LEASE_DURATION, "{gap:?}: taken before it expired");
    assert_eq!(transitions(&api), before + 2);
    assert_micro_times(&api);
    go2.kill();
    api.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_go_follows_our_holder_and_takes_our_released_lease_and_we_its_expired() {
    let api = ApiServer::start().await;
    let r1 = ours_with(&api, "ours-1", true);
    wait_for("ours-1 leads", WAIT, || r1.is_leading()).await;
    let go1 = client_go(&api, "client-go-1", 3);
    follows_for(
        &api,
        LEASE_DURATION * 2,
        "client-go-1",
        || go1.is_leading(),
        "ours-1",
    )
    .await;

    // We release on shutdown: client-go takes it at its next poll (our hour-long lease cannot
    // have expired), replacing the release.
    let before = transitions(&api);
    r1.shutdown();
    assert_eq!(
        r1.join().await.unwrap(),
        ElectionOutcome::ShutdownWhileLeading { released: true }
    );
    let release = lease_writes(&api, "ours-1").pop().unwrap();
    let spec = release.request.as_ref().unwrap()["spec"].clone();
    assert_eq!(spec["holderIdentity"], "");
    assert_eq!(spec["leaseDurationSeconds"], 1);
    wait_for("client-go-1 leads", WAIT, || go1.is_leading()).await;
    let acq = acquisition(&api, "client-go-1");
    eprintln!(
        "client-go-1 acquired {:?} after ours-1's release",
        elapsed(release.at, acq.at)
    );
    assert!(replaced(&acq, &release), "not taken as released");
    assert_eq!(transitions(&api), before + 1);

    // Our follower never takes client-go's held lease, and takes it once it expired.
    let r2 = ours(&api, "ours-2");
    follows_for(
        &api,
        LEASE_DURATION * 2,
        "ours-2",
        || r2.is_leading(),
        "client-go-1",
    )
    .await;
    go1.kill();
    let last = lease_writes(&api, "client-go-1").pop().unwrap();
    wait_for("ours-2 leads", WAIT * 2, || r2.is_leading()).await;
    let acq = acquisition(&api, "ours-2");
    let gap = elapsed(last.at, acq.at);
    eprintln!("ours-2 acquired {gap:?} after client-go-1's last renewal");
    assert!(gap >= LEASE_DURATION, "{gap:?}: taken before it expired");
    assert_eq!(transitions(&api), before + 2);
    assert_micro_times(&api);
    r2.abort();
    api.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_whose_watch_cannot_resume_lists_again_and_still_sees_the_release() {
    let api = ApiServer::start().await;
    let r1 = ours_with(&api, "ours-1", true);
    wait_for("ours-1 leads", WAIT, || r1.is_leading()).await;
    let r2 = ours(&api, "ours-2");
    let lease_calls = |verb: &str| {
        api.requests()
            .iter()
            .filter(|r| {
                r.client == "ours-2" && r.verb == verb && r.resource.as_deref() == Some("leases")
            })
            .count()
    };
    wait_for("ours-2 watches", WAIT, || lease_calls("watch") == 1).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(lease_calls("list"), 1);
    assert_eq!(lease_calls("get"), 0, "no polling while the watch is up");

    // ours-2's requests fail and its watch drops; meanwhile the store moves on and compacts: the
    // resourceVersion it resumes from is gone (410 in the watch stream), so it lists again.
    api.faults("ours-2").fail_all(503);
    api.faults("ours-2").drop_watches();
    tokio::time::sleep(Duration::from_millis(300)).await;
    api.seed(&tests::objects::node("n", &[("cpu", "1")]))
        .unwrap();
    api.compact();
    api.faults("ours-2").heal();
    wait_for("ours-2 lists again and watches from there", WAIT, || {
        let mine: Vec<_> = api
            .requests()
            .into_iter()
            .filter(|r| r.client == "ours-2" && r.resource.as_deref() == Some("leases"))
            .collect();
        let relist = mine
            .iter()
            .filter(|r| r.verb == "list")
            .nth(1)
            .map(|r| r.seq);
        relist.is_some_and(|seq| mine.iter().any(|r| r.verb == "watch" && r.seq > seq))
    })
    .await;
    assert_eq!(lease_calls("list"), 2);
    assert!(!r2.is_leading());
    assert!(api.get::<Node>("", "n").is_some());

    // The new watch sees the release (ours-1's lease is an hour long, and ours-2 does not poll
    // while its watch is up: only the watch's event can hand it over within the wait).
    tokio::time::sleep(Duration::from_secs(1)).await;
    r1.shutdown();
    r1.join().await.unwrap();
    let release = lease_writes(&api, "ours-1").pop().unwrap();
    wait_for("ours-2 leads", WAIT, || r2.is_leading()).await;
    let acq = acquisition(&api, "ours-2");
    eprintln!(
        "ours-2 acquired {:?} after the release",
        elapsed(release.at, acq.at)
    );
    assert!(replaced(&acq, &release), "not taken as released");
    assert_eq!(
        lease_calls("get"),
        0,
        "taken from the watch's event, not a poll"
    );
    r2.abort();
    api.shutdown().await;
}
