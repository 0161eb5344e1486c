//! An in-memory Lease store and [`Lock`] for tests, with API-server-like concurrency rules and
//! per-client fault injection.
//!
//! One [`MemoryLeaseStore`] plays the API server; each replica gets its own [`MemoryLock`]
//! (a "client") from [`MemoryLeaseStore::lock`], with its own [`FaultInjector`]. The store
//! enforces `resourceVersion` like the API server: an update with a stale version is a 409
//! Conflict, a create of an existing Lease is AlreadyExists, `leaseDurationSeconds <= 0` or
//! `leaseTransitions < 0` are 422 Invalid. Objects are round-tripped through JSON, so times are
//! stored at microsecond precision like MicroTime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;

use crate::lock::{Lock, LockError, LockErrorKind, LockOp};
use crate::record::LeaderElectionRecord;

fn lock_unpoisoned<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug, Default)]
struct StoreInner {
    leases: HashMap<(String, String), Lease>,
    next_version: u64,
    writes: u64,
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
        inner.next_version += 1;
        inner.writes += 1;
        let version = inner.next_version;
        lease.metadata.name = Some(name.to_owned());
        lease.metadata.namespace = Some(namespace.to_owned());
        lease.metadata.resource_version = Some(version.to_string());
        if lease.metadata.uid.is_none() {
            lease.metadata.uid = Some(format!("uid-{version}"));
        }
        inner.leases.insert(key(namespace, name), lease.clone());
        lease
    }

    /// Deletes the Lease (like `kubectl delete lease`); returns it if it existed.
    pub fn delete(&self, namespace: &str, name: &str) -> Option<Lease> {
        lock_unpoisoned(&self.inner)
            .leases
            .remove(&key(namespace, name))
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
        inner.next_version += 1;
        inner.writes += 1;
        let version = inner.next_version;
        lease.metadata.name = Some(name.to_owned());
        lease.metadata.namespace = Some(namespace.to_owned());
        lease.metadata.resource_version = Some(version.to_string());
        lease.metadata.uid = Some(format!("uid-{version}"));
        inner.leases.insert(key(namespace, name), lease.clone());
        Ok(lease)
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
        inner.next_version += 1;
        inner.writes += 1;
        let version = inner.next_version;
        lease.metadata.name = Some(name.to_owned());
        lease.metadata.namespace = Some(namespace.to_owned());
        lease.metadata.resource_version = Some(version.to_string());
        inner.leases.insert(key(namespace, name), lease.clone());
        Ok(lease)
    }
}

#[derive(Debug, Default)]
struct FaultState {
    fail_next: u32,
    fail_all: bool,
    hang: bool,
    conflict_next: u32,
    fail_after_apply_next: u32,
    latency: Duration,
    calls: u64,
}

enum Fault {
    None,
    Fail,
    Hang,
    Conflict,
    FailAfterApply,
}

/// Per-client fault injection for a [`MemoryLock`]. Cheap to clone (clones share state).
///
/// Faults are checked when a call starts, in this order: hang, fail all, fail next N,
/// conflict next N, fail-after-apply next N. A latency delays every call before it reaches the
/// store (a call dropped during the delay never reaches it).
#[derive(Debug, Clone, Default)]
pub struct FaultInjector {
    state: Arc<Mutex<FaultState>>,
}

impl FaultInjector {
    /// The next `n` calls fail with an injected error without reaching the store.
    pub fn fail_next(&self, n: u32) {
        lock_unpoisoned(&self.state).fail_next = n;
    }

    /// While `on`, every call fails with an injected error (a partition that answers fast).
    pub fn fail_all(&self, on: bool) {
        lock_unpoisoned(&self.state).fail_all = on;
    }

    /// While `on`, every new call hangs forever (a black-holed connection); the elector's
    /// per-request timeout ends it.
    pub fn hang(&self, on: bool) {
        lock_unpoisoned(&self.state).hang = on;
    }

    /// The next `n` calls fail with 409 Conflict without reaching the store.
    pub fn conflict_next(&self, n: u32) {
        lock_unpoisoned(&self.state).conflict_next = n;
    }

    /// The next `n` calls reach the store (writes are applied) but the client gets an error
    /// (a lost response).
    pub fn fail_after_apply_next(&self, n: u32) {
        lock_unpoisoned(&self.state).fail_after_apply_next = n;
    }

    /// Delay every call by `latency` before it reaches the store.
    pub fn set_latency(&self, latency: Duration) {
        lock_unpoisoned(&self.state).latency = latency;
    }

    /// Clears every fault and the latency.
    pub fn heal(&self) {
        let mut s = lock_unpoisoned(&self.state);
        let calls = s.calls;
        *s = FaultState {
            calls,
            ..FaultState::default()
        };
    }

    /// Number of calls made through this client so far.
    pub fn calls(&self) -> u64 {
        lock_unpoisoned(&self.state).calls
    }

    fn next(&self) -> (Fault, Duration) {
        let mut s = lock_unpoisoned(&self.state);
        s.calls += 1;
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

    async fn call(
        &self,
        op: LockOp,
        f: impl FnOnce(&MemoryLeaseStore) -> Result<Lease, LockErrorKind>,
    ) -> Result<Lease, LockError> {
        let (fault, latency) = self.faults.next();
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
