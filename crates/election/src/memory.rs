//! An in-memory Lease store and [`Lock`] for tests, with API-server-like concurrency rules and
//! per-client fault injection.
//!
//! One [`MemoryLeaseStore`] plays the API server; each replica gets its own [`MemoryLock`]
//! (a "client") from [`MemoryLeaseStore::lock`], with its own [`FaultInjector`]. The store
//! enforces `resourceVersion` like the API server: an update with a stale version is a 409
//! Conflict, a create of an existing Lease is AlreadyExists, `leaseDurationSeconds <= 0` or
//! `leaseTransitions < 0` are 422 Invalid. Objects are round-tripped through JSON, so times are
//! stored at microsecond precision like MicroTime.
//!
//! Watches follow the API server's watch cache: one global `resourceVersion` counter, a bounded
//! event history to resume from (a `resourceVersion` older than the history is 410 Gone, see
//! [`MemoryLeaseStore::compact`]), `DELETED` events carrying the delete's `resourceVersion`,
//! bookmarks on request ([`MemoryLeaseStore::bookmark`]), and the stream closed after
//! [`crate::WATCH_TIMEOUT`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use crate::lock::{
    LeaseEvent, LeaseEventStream, LeaseList, Lock, LockError, LockErrorKind, LockOp, WATCH_TIMEOUT,
};
use crate::record::LeaderElectionRecord;

/// Events kept for watches to resume from (the API server's watch cache keeps a window too).
const HISTORY_LIMIT: usize = 1024;

fn lock_unpoisoned<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One change, as kept in the watch history and sent to open watches.
#[derive(Debug, Clone)]
struct StoreEvent {
    rv: u64,
    /// The Lease's `(namespace, name)`; `None` for a bookmark (every watch gets it).
    key: Option<(String, String)>,
    event: LeaseEvent,
}

#[derive(Debug)]
struct StoreInner {
    leases: HashMap<(String, String), Lease>,
    next_version: u64,
    writes: u64,
    history: VecDeque<Arc<StoreEvent>>,
    /// Every event with a `resourceVersion` above this one is still in `history`.
    compacted: u64,
    events: broadcast::Sender<Arc<StoreEvent>>,
}

impl Default for StoreInner {
    fn default() -> Self {
        Self {
            leases: HashMap::new(),
            next_version: 0,
            writes: 0,
            history: VecDeque::new(),
            compacted: 0,
            events: broadcast::channel(HISTORY_LIMIT).0,
        }
    }
}

impl StoreInner {
    /// Stores a write (`Some(lease)`) or delete (`None`) of `key` at a new `resourceVersion`
    /// and tells the watches.
    fn commit(&mut self, key: (String, String), lease: Option<Lease>) -> Option<Lease> {
        self.next_version += 1;
        let version = self.next_version;
        let event = match lease {
            Some(mut lease) => {
                lease.metadata.resource_version = Some(version.to_string());
                let existed = self.leases.insert(key.clone(), lease.clone()).is_some();
                self.writes += 1;
                if existed {
                    LeaseEvent::Modified(lease)
                } else {
                    LeaseEvent::Added(lease)
                }
            }
            None => {
                let mut last = self.leases.remove(&key)?;
                last.metadata.resource_version = Some(version.to_string());
                LeaseEvent::Deleted(last)
            }
        };
        let stored = match &event {
            LeaseEvent::Added(l) | LeaseEvent::Modified(l) | LeaseEvent::Deleted(l) => {
                Some(l.clone())
            }
            LeaseEvent::Bookmark { .. } => None,
        };
        let ev = Arc::new(StoreEvent {
            rv: version,
            key: Some(key),
            event,
        });
        self.history.push_back(ev.clone());
        while self.history.len() > HISTORY_LIMIT {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
        let _ = self.events.send(ev);
        stored
    }
}

/// The shared in-memory "API server" holding Leases by namespace and name. Cheap to clone
/// (clones share the store).
#[derive(Debug, Clone, Default)]
pub struct MemoryLeaseStore {
    inner: Arc<Mutex<StoreInner>>,
}

fn key(namespace: &str, name: &str) -> (String, String) {
    (namespace.to_owned(), name.to_owned())
}

fn round_trip(lease: &Lease) -> Result<Lease, String> {
    serde_json::to_value(lease)
        .and_then(serde_json::from_value)
        .map_err(|e| e.to_string())
}

fn validate(lease: &Lease) -> Result<(), String> {
    if let Some(d) = lease.spec.as_ref().and_then(|s| s.lease_duration_seconds)
        && d <= 0
    {
        return Err("spec.leaseDurationSeconds: Invalid value: must be greater than 0".into());
    }
    if let Some(t) = lease.spec.as_ref().and_then(|s| s.lease_transitions)
        && t < 0
    {
        return Err(
            "spec.leaseTransitions: Invalid value: must be greater than or equal to 0".into(),
        );
    }
    Ok(())
}

impl MemoryLeaseStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new client for Lease `namespace/name`, with its own fault injector.
    pub fn lock(&self, namespace: &str, name: &str) -> MemoryLock {
        MemoryLock {
            store: self.clone(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            faults: FaultInjector::default(),
        }
    }

    /// The stored Lease, if any.
    pub fn get(&self, namespace: &str, name: &str) -> Option<Lease> {
        lock_unpoisoned(&self.inner)
            .leases
            .get(&key(namespace, name))
            .cloned()
    }

    /// The stored Lease's record, if the Lease exists.
    pub fn record(&self, namespace: &str, name: &str) -> Option<LeaderElectionRecord> {
        self.get(namespace, name)
            .map(|l| LeaderElectionRecord::from_spec(&l.spec.unwrap_or_default()))
    }

    /// Writes `lease` unconditionally (like `kubectl replace --force`), assigning a new
    /// `resourceVersion` (and a UID if missing); returns the stored object.
    pub fn put(&self, namespace: &str, name: &str, mut lease: Lease) -> Lease {
        let mut inner = lock_unpoisoned(&self.inner);
        lease.metadata.name = Some(name.to_owned());
        lease.metadata.namespace = Some(namespace.to_owned());
        if lease.metadata.uid.is_none() {
            lease.metadata.uid = Some(format!("uid-{}", inner.next_version + 1));
        }
        inner
            .commit(key(namespace, name), Some(lease.clone()))
            .unwrap_or(lease)
    }

    /// Deletes the Lease (like `kubectl delete lease`); returns it if it existed. Watches see
    /// `DELETED` with the delete's `resourceVersion`.
    pub fn delete(&self, namespace: &str, name: &str) -> Option<Lease> {
        lock_unpoisoned(&self.inner).commit(key(namespace, name), None)
    }

    /// The current (global) `resourceVersion`.
    pub fn resource_version(&self) -> u64 {
        lock_unpoisoned(&self.inner).next_version
    }

    /// Forgets the watch history: a watch resuming from an older `resourceVersion` gets 410 Gone
    /// and must list again (etcd compaction plus a watch-cache restart). Open watches continue.
    pub fn compact(&self) {
        let mut inner = lock_unpoisoned(&self.inner);
        inner.history.clear();
        inner.compacted = inner.next_version;
    }

    /// Sends a `BOOKMARK` at the current `resourceVersion` to every open watch (the API server
    /// sends them about once a minute to watches that allow them).
    pub fn bookmark(&self) {
        let inner = lock_unpoisoned(&self.inner);
        let rv = inner.next_version;
        let _ = inner.events.send(Arc::new(StoreEvent {
            rv,
            key: None,
            event: LeaseEvent::Bookmark {
                resource_version: rv.to_string(),
            },
        }));
    }

    /// Number of successful writes (create, update, put) so far, over all Leases.
    pub fn write_count(&self) -> u64 {
        lock_unpoisoned(&self.inner).writes
    }

    fn do_get(&self, namespace: &str, name: &str) -> Result<Lease, LockErrorKind> {
        self.get(namespace, name).ok_or(LockErrorKind::NotFound)
    }

    fn do_create(
        &self,
        namespace: &str,
        name: &str,
        lease: &Lease,
    ) -> Result<Lease, LockErrorKind> {
        let mut lease = round_trip(lease).map_err(LockErrorKind::Invalid)?;
        validate(&lease).map_err(LockErrorKind::Invalid)?;
        let mut inner = lock_unpoisoned(&self.inner);
        if inner.leases.contains_key(&key(namespace, name)) {
            return Err(LockErrorKind::AlreadyExists);
        }
        lease.metadata.name = Some(name.to_owned());
        lease.metadata.namespace = Some(namespace.to_owned());
        lease.metadata.uid = Some(format!("uid-{}", inner.next_version + 1));
        Ok(inner
            .commit(key(namespace, name), Some(lease.clone()))
            .unwrap_or(lease))
    }

    fn do_update(
        &self,
        namespace: &str,
        name: &str,
        lease: &Lease,
    ) -> Result<Lease, LockErrorKind> {
        let mut lease = round_trip(lease).map_err(LockErrorKind::Invalid)?;
        validate(&lease).map_err(LockErrorKind::Invalid)?;
        let mut inner = lock_unpoisoned(&self.inner);
        let Some(current) = inner.leases.get(&key(namespace, name)) else {
            return Err(LockErrorKind::NotFound);
        };
        let modified = || {
            LockErrorKind::Conflict(format!(
                "Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": the \
                 object has been modified; please apply your changes to the latest version and \
                 try again"
            ))
        };
        if let Some(uid) = &lease.metadata.uid
            && current.metadata.uid.as_ref() != Some(uid)
        {
            return Err(modified());
        }
        match &lease.metadata.resource_version {
            Some(rv)
                if !rv.is_empty() && current.metadata.resource_version.as_ref() != Some(rv) =>
            {
                return Err(modified());
            }
            _ => {}
        }
        lease.metadata.uid = current.metadata.uid.clone();
        lease.metadata.name = Some(name.to_owned());
        lease.metadata.namespace = Some(namespace.to_owned());
        Ok(inner
            .commit(key(namespace, name), Some(lease.clone()))
            .unwrap_or(lease))
    }

    fn do_list(&self, namespace: &str, name: &str) -> LeaseList {
        let inner = lock_unpoisoned(&self.inner);
        LeaseList {
            lease: inner.leases.get(&key(namespace, name)).cloned(),
            resource_version: inner.next_version.to_string(),
        }
    }

    /// The history after `from` for `key` and a live receiver, or 410 Gone.
    fn subscribe(
        &self,
        key: &(String, String),
        from: u64,
    ) -> Result<(VecDeque<LeaseEvent>, broadcast::Receiver<Arc<StoreEvent>>), LockErrorKind> {
        let inner = lock_unpoisoned(&self.inner);
        if from < inner.compacted {
            return Err(LockErrorKind::Gone(format!(
                "too old resource version: {from} ({})",
                inner.compacted
            )));
        }
        let replay = inner
            .history
            .iter()
            .filter(|e| e.rv > from && e.key.as_ref() == Some(key))
            .map(|e| e.event.clone())
            .collect();
        Ok((replay, inner.events.subscribe()))
    }
}

#[derive(Debug, Default)]
struct FaultState {
    fail_next: u32,
    fail_all: bool,
    hang: bool,
    conflict_next: u32,
    fail_after_apply_next: u32,
    fail_watches: bool,
    latency: Duration,
    calls: u64,
    calls_by_op: HashMap<LockOp, u64>,
    /// Bumped by [`FaultInjector::drop_watches`]: open watches end.
    drop_generation: u64,
}

enum Fault {
    None,
    Fail,
    Hang,
    Conflict,
    FailAfterApply,
}

#[derive(PartialEq)]
enum WatchFault {
    None,
    Held,
    Broken,
}

/// An open watch of one Lease on a [`MemoryLeaseStore`].
struct MemoryWatch {
    key: (String, String),
    pending: VecDeque<LeaseEvent>,
    rx: broadcast::Receiver<Arc<StoreEvent>>,
    faults: FaultInjector,
    fault_rx: watch::Receiver<u64>,
    generation: u64,
    deadline: Instant,
    lease: String,
    done: bool,
}

impl MemoryWatch {
    async fn next_event(&mut self) -> Option<Result<LeaseEvent, LockError>> {
        if self.done {
            return None;
        }
        loop {
            match self.faults.watch_fault(self.generation) {
                WatchFault::Broken => {
                    self.done = true;
                    return Some(Err(LockError::new(
                        LockOp::Watch,
                        self.lease.clone(),
                        LockErrorKind::Injected("watch connection dropped".into()),
                    )));
                }
                WatchFault::Held => {
                    tokio::select! {
                        changed = self.fault_rx.changed() => if changed.is_err() { return None },
                        () = tokio::time::sleep_until(self.deadline) => return None,
                    }
                    continue;
                }
                WatchFault::None => {}
            }
            if let Some(ev) = self.pending.pop_front() {
                return Some(Ok(ev));
            }
            tokio::select! {
                () = tokio::time::sleep_until(self.deadline) => return None,
                changed = self.fault_rx.changed() => if changed.is_err() { return None },
                ev = self.rx.recv() => match ev {
                    Ok(ev) => {
                        // Subscribed together with the history snapshot: every live event is
                        // newer than the replayed ones.
                        if ev.key.as_ref().is_none_or(|k| *k == self.key) {
                            self.pending.push_back(ev.event.clone());
                        }
                    }
                    // Too slow or the store is gone: the server closes the watch.
                    Err(_) => return None,
                },
            }
        }
    }
}

/// Per-client fault injection for a [`MemoryLock`]. Cheap to clone (clones share state).
///
/// Faults are checked when a call starts (a watch: when it is opened), in this order: hang,
/// fail all, fail next N, conflict next N, fail-after-apply next N. A latency delays every call
/// before it reaches the store (a call dropped during the delay never reaches it). Open
/// watches deliver nothing while the client hangs (and everything held once healed), and end
/// with an error on fail-all, [`Self::fail_watches`] or [`Self::drop_watches`].
#[derive(Debug, Clone)]
pub struct FaultInjector {
    state: Arc<Mutex<FaultState>>,
    changed: Arc<watch::Sender<u64>>,
}

impl Default for FaultInjector {
    fn default() -> Self {
        Self {
            state: Arc::default(),
            changed: Arc::new(watch::channel(0).0),
        }
    }
}

impl FaultInjector {
    fn update(&self, f: impl FnOnce(&mut FaultState)) {
        f(&mut lock_unpoisoned(&self.state));
        self.changed.send_modify(|g| *g += 1);
    }

    /// The next `n` calls fail with an injected error without reaching the store.
    pub fn fail_next(&self, n: u32) {
        self.update(|s| s.fail_next = n);
    }

    /// While `on`, every call fails with an injected error (a partition that answers fast).
    pub fn fail_all(&self, on: bool) {
        self.update(|s| s.fail_all = on);
    }

    /// While `on`, every new call hangs forever (a black-holed connection); the elector's
    /// per-request timeout ends it.
    pub fn hang(&self, on: bool) {
        self.update(|s| s.hang = on);
    }

    /// The next `n` calls fail with 409 Conflict without reaching the store.
    pub fn conflict_next(&self, n: u32) {
        self.update(|s| s.conflict_next = n);
    }

    /// The next `n` calls reach the store (writes are applied) but the client gets an error
    /// (a lost response).
    pub fn fail_after_apply_next(&self, n: u32) {
        self.update(|s| s.fail_after_apply_next = n);
    }

    /// While `on`, opening a watch fails and open watches end with an error; gets, lists and
    /// writes still work (e.g. a proxy that cuts long-lived requests).
    pub fn fail_watches(&self, on: bool) {
        self.update(|s| s.fail_watches = on);
    }

    /// Ends this client's open watches now, with an error (the client re-watches).
    pub fn drop_watches(&self) {
        self.update(|s| s.drop_generation += 1);
    }

    /// Delay every call by `latency` before it reaches the store.
    pub fn set_latency(&self, latency: Duration) {
        self.update(|s| s.latency = latency);
    }

    /// Clears every fault and the latency.
    pub fn heal(&self) {
        self.update(|s| {
            *s = FaultState {
                calls: s.calls,
                calls_by_op: std::mem::take(&mut s.calls_by_op),
                drop_generation: s.drop_generation,
                ..FaultState::default()
            };
        });
    }

    /// Number of calls made through this client so far (watches count when opened).
    pub fn calls(&self) -> u64 {
        lock_unpoisoned(&self.state).calls
    }

    /// Number of `op` calls made through this client so far.
    pub fn calls_of(&self, op: LockOp) -> u64 {
        lock_unpoisoned(&self.state)
            .calls_by_op
            .get(&op)
            .copied()
            .unwrap_or(0)
    }

    /// How an open watch fares now.
    fn watch_fault(&self, generation: u64) -> WatchFault {
        let s = lock_unpoisoned(&self.state);
        if s.fail_all || s.fail_watches || s.drop_generation != generation {
            WatchFault::Broken
        } else if s.hang {
            WatchFault::Held
        } else {
            WatchFault::None
        }
    }

    fn next(&self, op: LockOp) -> (Fault, Duration) {
        let mut s = lock_unpoisoned(&self.state);
        s.calls += 1;
        *s.calls_by_op.entry(op).or_default() += 1;
        if op == LockOp::Watch && s.fail_watches && !s.hang {
            return (Fault::Fail, s.latency);
        }
        let fault = if s.hang {
            Fault::Hang
        } else if s.fail_all {
            Fault::Fail
        } else if s.fail_next > 0 {
            s.fail_next -= 1;
            Fault::Fail
        } else if s.conflict_next > 0 {
            s.conflict_next -= 1;
            Fault::Conflict
        } else if s.fail_after_apply_next > 0 {
            s.fail_after_apply_next -= 1;
            Fault::FailAfterApply
        } else {
            Fault::None
        };
        (fault, s.latency)
    }
}

/// One replica's client to a [`MemoryLeaseStore`] Lease; implements [`Lock`].
#[derive(Debug, Clone)]
pub struct MemoryLock {
    store: MemoryLeaseStore,
    namespace: String,
    name: String,
    faults: FaultInjector,
}

impl MemoryLock {
    /// This client's fault injector.
    pub fn faults(&self) -> FaultInjector {
        self.faults.clone()
    }

    /// The store behind this client.
    pub fn store(&self) -> &MemoryLeaseStore {
        &self.store
    }

    async fn call<T>(
        &self,
        op: LockOp,
        f: impl FnOnce(&MemoryLeaseStore) -> Result<T, LockErrorKind>,
    ) -> Result<T, LockError> {
        let (fault, latency) = self.faults.next(op);
        let err = |kind| LockError::new(op, self.describe(), kind);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        match fault {
            Fault::Hang => std::future::pending().await,
            Fault::Fail => Err(err(LockErrorKind::Injected("connection refused".into()))),
            Fault::Conflict => Err(err(LockErrorKind::Conflict("injected conflict".into()))),
            Fault::FailAfterApply => {
                let _applied = f(&self.store);
                Err(err(LockErrorKind::Injected("response lost".into())))
            }
            Fault::None => f(&self.store).map_err(err),
        }
    }
}

impl Lock for MemoryLock {
    async fn get(&self) -> Result<Lease, LockError> {
        self.call(LockOp::Get, |s| s.do_get(&self.namespace, &self.name))
            .await
    }

    async fn create(&self, lease: Lease) -> Result<Lease, LockError> {
        self.call(LockOp::Create, |s| {
            s.do_create(&self.namespace, &self.name, &lease)
        })
        .await
    }

    async fn update(&self, lease: Lease) -> Result<Lease, LockError> {
        self.call(LockOp::Update, |s| {
            s.do_update(&self.namespace, &self.name, &lease)
        })
        .await
    }

    async fn list(&self) -> Result<LeaseList, LockError> {
        self.call(LockOp::List, |s| Ok(s.do_list(&self.namespace, &self.name)))
            .await
    }

    async fn watch(&self, resource_version: &str) -> Result<LeaseEventStream, LockError> {
        let key = key(&self.namespace, &self.name);
        let fault_rx = self.faults.changed.subscribe();
        let generation = lock_unpoisoned(&self.faults.state).drop_generation;
        let (pending, rx) = self
            .call(LockOp::Watch, |s| {
                // "" or "0": start at the current state, sent as a synthetic ADDED.
                if resource_version.is_empty() || resource_version == "0" {
                    let (_, rx) = s.subscribe(&key, s.resource_version())?;
                    let current = s.get(&key.0, &key.1).map(LeaseEvent::Added);
                    return Ok((current.into_iter().collect(), rx));
                }
                let from = resource_version.parse::<u64>().map_err(|_| {
                    LockErrorKind::Invalid(format!(
                        "resourceVersion: Invalid value: {resource_version:?}"
                    ))
                })?;
                s.subscribe(&key, from)
            })
            .await?;
        let watch = MemoryWatch {
            key,
            pending,
            rx,
            faults: self.faults.clone(),
            fault_rx,
            generation,
            deadline: Instant::now() + WATCH_TIMEOUT,
            lease: self.describe(),
            done: false,
        };
        Ok(futures::stream::unfold(watch, |mut w| async move {
            let item = w.next_event().await?;
            Some((item, w))
        })
        .boxed())
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn lease(holder: &str) -> Lease {
        Lease {
            spec: Some(
                LeaderElectionRecord {
                    holder_identity: holder.into(),
                    lease_duration_seconds: 15,
                    ..Default::default()
                }
                .to_spec(),
            ),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn enforces_resource_version_and_already_exists() {
        let store = MemoryLeaseStore::new();
        let a = store.lock("ns", "l");
        let b = store.lock("ns", "l");
        assert!(a.get().await.unwrap_err().is_not_found());
        let created = a.create(lease("a")).await.unwrap();
        assert!(b.create(lease("b")).await.unwrap_err().is_already_exists());
        let read_b = b.get().await.unwrap();
        assert_eq!(
            read_b.metadata.resource_version,
            created.metadata.resource_version
        );
        let mut upd = created.clone();
        upd.spec = lease("a").spec;
        let updated = a.update(upd).await.unwrap();
        assert_ne!(
            updated.metadata.resource_version,
            created.metadata.resource_version
        );
        assert_eq!(updated.metadata.uid, created.metadata.uid);
        // b writes with the stale version: 409.
        let mut stale = read_b;
        stale.spec = lease("b").spec;
        let err = b.update(stale).await.unwrap_err();
        assert!(err.is_conflict(), "{err}");
        assert_eq!(store.record("ns", "l").unwrap().holder_identity, "a");
        // Invalid durations are rejected like the API server does.
        let mut bad = updated.clone();
        bad.spec.as_mut().unwrap().lease_duration_seconds = Some(0);
        assert!(matches!(
            a.update(bad).await.unwrap_err().kind,
            LockErrorKind::Invalid(_)
        ));
        // Update of a deleted lease: not found.
        store.delete("ns", "l");
        assert!(a.update(updated).await.unwrap_err().is_not_found());
        assert_eq!(store.write_count(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn watch_replays_resumes_expires_and_ends_at_its_timeout() {
        use futures::StreamExt;
        let store = MemoryLeaseStore::new();
        let a = store.lock("ns", "l");
        let other = store.lock("ns", "m");
        other.create(lease("x")).await.unwrap();
        let listed = a.list().await.unwrap();
        assert_eq!(
            (listed.lease, listed.resource_version.as_str()),
            (None, "1")
        );
        let created = a.create(lease("a")).await.unwrap();
        let mut upd = created.clone();
        upd.spec = lease("b").spec;
        let updated = a.update(upd).await.unwrap();
        // From the list's version: ADDED then MODIFIED, nothing of the other Lease.
        let mut w = a.watch("1").await.unwrap();
        assert_eq!(w.next().await.unwrap().unwrap(), LeaseEvent::Added(created));
        assert_eq!(
            w.next().await.unwrap().unwrap(),
            LeaseEvent::Modified(updated.clone())
        );
        // Live: DELETED carries the delete's resourceVersion; a bookmark the current one.
        store.delete("ns", "l");
        match w.next().await.unwrap().unwrap() {
            LeaseEvent::Deleted(l) => {
                assert_eq!(l.metadata.resource_version.as_deref(), Some("4"));
            }
            e => panic!("unexpected {e:?}"),
        }
        store.bookmark();
        let bookmark = w.next().await.unwrap().unwrap();
        assert_eq!(bookmark.resource_version(), Some("4"));
        // Resuming from a version older than the history is 410 Gone; from the latest is fine.
        store.compact();
        assert!(a.watch("3").await.err().unwrap().is_gone());
        let mut resumed = a.watch("4").await.unwrap();
        a.create(lease("c")).await.unwrap();
        assert!(matches!(
            resumed.next().await.unwrap().unwrap(),
            LeaseEvent::Added(_)
        ));
        // The server ends a watch after its timeout; dropped watches end with an error.
        assert!(matches!(
            w.next().await.unwrap().unwrap(),
            LeaseEvent::Added(_)
        ));
        let t0 = tokio::time::Instant::now();
        assert!(w.next().await.is_none());
        assert_eq!(t0.elapsed(), WATCH_TIMEOUT);
        a.faults().drop_watches();
        assert!(resumed.next().await.unwrap().is_err());
        assert!(resumed.next().await.is_none());
        a.faults().fail_watches(true);
        assert!(a.watch("5").await.is_err());
        assert!(a.list().await.is_ok());
        assert_eq!(a.faults().calls_of(LockOp::Watch), 4);
        // From "0": the current state as a synthetic ADDED, as the API server sends it.
        a.faults().fail_watches(false);
        let mut from_zero = a.watch("0").await.unwrap();
        match from_zero.next().await.unwrap().unwrap() {
            LeaseEvent::Added(l) => assert_eq!(l.metadata.resource_version.as_deref(), Some("5")),
            e => panic!("unexpected {e:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn fault_injection_is_per_client() {
        let store = MemoryLeaseStore::new();
        let a = store.lock("ns", "l");
        let b = store.lock("ns", "l");
        a.faults().fail_next(2);
        assert!(matches!(
            a.get().await.unwrap_err().kind,
            LockErrorKind::Injected(_)
        ));
        assert!(matches!(
            a.get().await.unwrap_err().kind,
            LockErrorKind::Injected(_)
        ));
        assert!(a.get().await.unwrap_err().is_not_found());
        assert!(b.get().await.unwrap_err().is_not_found());
        a.faults().fail_after_apply_next(1);
        assert!(a.create(lease("a")).await.is_err());
        assert_eq!(store.record("ns", "l").unwrap().holder_identity, "a");
        a.faults().conflict_next(1);
        assert!(a.get().await.unwrap_err().is_conflict());
        a.faults().hang(true);
        let hung = tokio::time::timeout(Duration::from_secs(60), a.get()).await;
        assert!(hung.is_err(), "hung call must not complete");
        assert!(b.get().await.is_ok());
        a.faults().heal();
        a.faults().set_latency(Duration::from_secs(3));
        let t0 = tokio::time::Instant::now();
        assert!(a.get().await.is_ok());
        assert_eq!(t0.elapsed(), Duration::from_secs(3));
        assert_eq!(a.faults().calls(), 7);
    }
}
