//! A leader-election candidate that reads and writes its Lease exactly as client-go's
//! `tools/leaderelection` with a `resourcelock.LeaseLock` does, for interoperability tests
//! against the API test double.
//!
//! Followed (client-go master, `tools/leaderelection/leaderelection.go`, `resourcelock/
//! leaselock.go`):
//! - `acquire`: `wait.JitterUntil(tryAcquireOrRenew, RetryPeriod, 1.2, sliding)`: first attempt at
//!   once, then every `[RetryPeriod, 2.2 × RetryPeriod)`; no watch;
//! - `renew`: `wait.Until(PollUntilContextTimeout(RetryPeriod, RenewDeadline, immediate,
//!   tryAcquireOrRenew), RetryPeriod)`; leadership ends when a round exhausts `RenewDeadline`;
//! - `tryAcquireOrRenew`: the fast path (PUT of the cached Lease while the observed record says we
//!   hold a valid lease), else GET (404 → create), observe the record if its raw JSON
//!   (`json.Marshal(LeaderElectionRecord)`, times at 1 s precision as `metav1.Time`) changed,
//!   refuse a held unexpired lease (`observedTime + leaseDurationSeconds` by the local clock),
//!   keep `acquireTime`/`leaseTransitions` when renewing, `leaseTransitions + 1` when taking
//!   over, PUT with the read object's `resourceVersion`;
//! - `release` (`ReleaseOnCancel`): GET, then PUT `holderIdentity: ""`, `leaseDurationSeconds: 1`,
//!   `acquireTime = renewTime = now`, transitions kept;
//! - wire format of `LeaderElectionRecordToLeaseSpec`: `holderIdentity`, `leaseDurationSeconds`,
//!   `acquireTime`, `renewTime` (MicroTime: RFC 3339 with exactly six fractional digits, UTC),
//!   `leaseTransitions`; created with `metadata: {name, namespace, creationTimestamp: null}`;
//! - each request bounded by `max(1 s, RenewDeadline / 2)` (`NewFromKubeconfig`'s client
//!   timeout) and by the renew round's deadline.
//!
//! The JSON is built here by hand (not through the `election` crate or k8s-openapi's types), so
//! the candidate shares no code with the replicas it is tested against.

use std::time::Duration;

use axum::http::{Method, Request};
use k8s_openapi::jiff::Timestamp;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// client-go's `JitterFactor`.
const JITTER_FACTOR: f64 = 1.2;

/// Settings of a client-go candidate (client-go `LeaderElectionConfig` + `LeaseLock`).
#[derive(Debug, Clone)]
pub struct ClientGoConfig {
    /// `LeaseDuration`.
    pub lease_duration: Duration,
    /// `RenewDeadline`.
    pub renew_deadline: Duration,
    /// `RetryPeriod`.
    pub retry_period: Duration,
    /// `Lock.Identity()`.
    pub identity: String,
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// `ReleaseOnCancel`.
    pub release_on_cancel: bool,
    /// Seed of the acquire jitter.
    pub seed: u64,
}

/// `LeaderElectionRecord`, as read from and written to a Lease spec.
#[derive(Debug, Clone, Default, PartialEq)]
struct Record {
    holder: String,
    lease_duration_seconds: i64,
    acquire_time: Option<Timestamp>,
    renew_time: Option<Timestamp>,
    transitions: i64,
}

/// MicroTime's wire format: `2006-01-02T15:04:05.000000Z07:00`, in UTC.
pub fn micro_time(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// metav1.Time's wire format: RFC 3339 with whole seconds, in UTC.
fn seconds_time(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

impl Record {
    /// `LeaseSpecToLeaderElectionRecord`: absent fields read as zero values.
    fn from_spec(spec: Option<&Value>) -> Record {
        let get = |f: &str| spec.and_then(|s| s.get(f));
        let time = |f: &str| {
            get(f)
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<Timestamp>().ok())
        };
        Record {
            holder: get("holderIdentity")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            lease_duration_seconds: get("leaseDurationSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            acquire_time: time("acquireTime"),
            renew_time: time("renewTime"),
            transitions: get("leaseTransitions").and_then(Value::as_i64).unwrap_or(0),
        }
    }

    /// `LeaderElectionRecordToLeaseSpec`.
    fn to_spec(&self) -> Value {
        let mut spec = json!({
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration_seconds,
        });
        if let Some(t) = self.acquire_time {
            spec["acquireTime"] = json!(micro_time(t));
        }
        if let Some(t) = self.renew_time {
            spec["renewTime"] = json!(micro_time(t));
        }
        spec["leaseTransitions"] = json!(self.transitions);
        spec
    }

    /// `json.Marshal(LeaderElectionRecord)`: the bytes client-go compares to detect a change.
    fn raw(&self) -> String {
        let t = |t: Option<Timestamp>| t.map_or(Value::Null, |t| json!(seconds_time(t)));
        json!({
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": t(self.acquire_time),
            "renewTime": t(self.renew_time),
            "leaderTransitions": self.transitions,
        })
        .to_string()
    }
}

/// Why a request failed: its HTTP code (0 for a transport error or timeout).
#[derive(Debug)]
struct Failed(u16);

struct Elector {
    client: kube::Client,
    cfg: ClientGoConfig,
    rng: StdRng,
    /// `LeaseLock.lease`: the last object returned by the server.
    lease: Option<Value>,
    observed: Record,
    observed_raw: Option<String>,
    observed_time: Instant,
    leading: watch::Sender<bool>,
}

impl Elector {
    fn path(&self, named: bool) -> String {
        let base = format!(
            "/apis/coordination.k8s.io/v1/namespaces/{}/leases",
            self.cfg.namespace
        );
        if named {
            format!("{base}/{}", self.cfg.name)
        } else {
            base
        }
    }

    /// One request, bounded by the client timeout and `deadline`.
    async fn request(
        &self,
        method: Method,
        path: String,
        body: Option<&Value>,
        deadline: Option<Instant>,
    ) -> Result<Value, Failed> {
        let mut timeout = (self.cfg.renew_deadline / 2).max(Duration::from_secs(1));
        if let Some(d) = deadline {
            timeout = timeout.min(d.saturating_duration_since(Instant::now()));
        }
        let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .body(bytes)
            .map_err(|_| Failed(0))?;
        match tokio::time::timeout(timeout, self.client.request::<Value>(req)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(kube::Error::Api(status))) => Err(Failed(status.code)),
            Ok(Err(_)) | Err(_) => Err(Failed(0)),
        }
    }

    /// `LeaseLock.Get`.
    async fn get(&mut self, deadline: Option<Instant>) -> Result<(Record, String), Failed> {
        let lease = self
            .request(Method::GET, self.path(true), None, deadline)
            .await?;
        let record = Record::from_spec(lease.get("spec"));
        self.lease = Some(lease);
        let raw = record.raw();
        Ok((record, raw))
    }

    /// `LeaseLock.Create`.
    async fn create(&mut self, record: &Record, deadline: Option<Instant>) -> Result<(), Failed> {
        let body = json!({
            "kind": "Lease",
            "apiVersion": "coordination.k8s.io/v1",
            "metadata": {
                "name": self.cfg.name,
                "namespace": self.cfg.namespace,
                "creationTimestamp": null,
            },
            "spec": record.to_spec(),
        });
        let created = self
            .request(Method::POST, self.path(false), Some(&body), deadline)
            .await?;
        self.lease = Some(created);
        Ok(())
    }

    /// `LeaseLock.Update`: PUT of the cached object with a new spec.
    async fn update(&mut self, record: &Record, deadline: Option<Instant>) -> Result<(), Failed> {
        let Some(mut lease) = self.lease.clone() else {
            // "lease not initialized, call get or create first"
            return Err(Failed(0));
        };
        lease["spec"] = record.to_spec();
        let updated = self
            .request(Method::PUT, self.path(true), Some(&lease), deadline)
            .await?;
        self.lease = Some(updated);
        Ok(())
    }

    fn set_observed(&mut self, record: Record) {
        self.observed = record;
        self.observed_time = Instant::now();
    }

    fn is_leader(&self) -> bool {
        self.observed.holder == self.cfg.identity
    }

    fn is_lease_valid(&self, now: Instant) -> bool {
        let secs = u64::try_from(self.observed.lease_duration_seconds).unwrap_or(0);
        self.observed_time + Duration::from_secs(secs) > now
    }

    /// `tryAcquireOrRenew`.
    async fn try_acquire_or_renew(&mut self, deadline: Option<Instant>) -> bool {
        let now_wall = Timestamp::now();
        let now = Instant::now();
        let lds = i64::try_from(self.cfg.lease_duration.as_secs()).unwrap_or(i64::MAX);
        let mut record = Record {
            holder: self.cfg.identity.clone(),
            lease_duration_seconds: lds,
            acquire_time: Some(now_wall),
            renew_time: Some(now_wall),
            transitions: 0,
        };
        // Fast path.
        if self.is_leader() && self.is_lease_valid(now) {
            record.acquire_time = self.observed.acquire_time;
            record.transitions = self.observed.transitions;
            if self.update(&record, deadline).await.is_ok() {
                self.set_observed(record);
                return true;
            }
        }
        // 1. Obtain or create.
        let (old, old_raw) = match self.get(deadline).await {
            Ok(r) => r,
            Err(Failed(404)) => {
                if self.create(&record, deadline).await.is_err() {
                    return false;
                }
                self.set_observed(record);
                return true;
            }
            Err(_) => return false,
        };
        // 2. Check the identity and time.
        if self.observed_raw.as_deref() != Some(old_raw.as_str()) {
            self.set_observed(old.clone());
            self.observed_raw = Some(old_raw);
        }
        if !old.holder.is_empty() && self.is_lease_valid(now) && !self.is_leader() {
            return false;
        }
        // 3. Update.
        if self.is_leader() {
            record.acquire_time = old.acquire_time;
            record.transitions = old.transitions;
        } else {
            record.transitions = old.transitions + 1;
        }
        if self.update(&record, deadline).await.is_err() {
            return false;
        }
        self.set_observed(record);
        true
    }

    /// `acquire`: true once leading, false if `stop` came first.
    async fn acquire(&mut self, stop: &Notify) -> bool {
        loop {
            let done = tokio::select! {
                ok = self.try_acquire_or_renew(None) => ok,
                () = stop.notified() => return false,
            };
            if done {
                return true;
            }
            let factor: f64 = self.rng.random_range(0.0..JITTER_FACTOR);
            let pause = self.cfg.retry_period + self.cfg.retry_period.mul_f64(factor);
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = stop.notified() => return false,
            }
        }
    }

    /// `renew`: until a round exhausts its deadline or `stop`; then `release` if configured.
    async fn renew(&mut self, stop: &Notify) {
        loop {
            let deadline = Instant::now() + self.cfg.renew_deadline;
            let renewed = loop {
                let ok = tokio::select! {
                    ok = self.try_acquire_or_renew(Some(deadline)) => ok,
                    () = stop.notified() => break None,
                };
                if ok {
                    break Some(true);
                }
                if Instant::now() + self.cfg.retry_period >= deadline {
                    break Some(false);
                }
                tokio::select! {
                    () = tokio::time::sleep(self.cfg.retry_period) => {}
                    () = stop.notified() => break None,
                }
            };
            if renewed != Some(true) {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(self.cfg.retry_period) => {}
                () = stop.notified() => break,
            }
        }
        self.leading.send_replace(false);
        if self.cfg.release_on_cancel {
            self.release().await;
        }
    }

    /// `release` (Get, then Update if we were leader by the observed record).
    async fn release(&mut self) -> bool {
        let deadline = Some(Instant::now() + self.cfg.renew_deadline);
        let Ok((old, _)) = self.get(deadline).await else {
            return false;
        };
        if !self.is_leader() {
            return true;
        }
        let now = Timestamp::now();
        let record = Record {
            holder: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(now),
            renew_time: Some(now),
            transitions: old.transitions,
        };
        if self.update(&record, deadline).await.is_err() {
            return false;
        }
        self.set_observed(record);
        true
    }
}

/// A running client-go candidate (client-go's `LeaderElector.Run`, one-shot).
pub struct ClientGoCandidate {
    identity: String,
    leading: watch::Receiver<bool>,
    stop: std::sync::Arc<Notify>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for ClientGoCandidate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientGoCandidate")
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl ClientGoCandidate {
    /// Starts `Run(ctx)` with `client` (give it its own client identity, so the double's write
    /// record names it).
    pub fn spawn(client: kube::Client, cfg: ClientGoConfig) -> ClientGoCandidate {
        let (tx, rx) = watch::channel(false);
        let stop = std::sync::Arc::new(Notify::new());
        let identity = cfg.identity.clone();
        let mut elector = Elector {
            client,
            rng: StdRng::seed_from_u64(cfg.seed),
            cfg,
            lease: None,
            observed: Record::default(),
            observed_raw: None,
            observed_time: Instant::now(),
            leading: tx,
        };
        let s = stop.clone();
        let task = tokio::spawn(async move {
            if elector.acquire(&s).await {
                elector.leading.send_replace(true);
                elector.renew(&s).await;
            }
        });
        ClientGoCandidate {
            identity,
            leading: rx,
            stop,
            task,
        }
    }

    /// The identity it writes as `holderIdentity`.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Between `OnStartedLeading` and the end of its renew loop.
    pub fn is_leading(&self) -> bool {
        *self.leading.borrow()
    }

    /// Cancels `Run`'s context: stops campaigning or renewing, then releases if configured.
    pub fn shutdown(&self) {
        self.stop.notify_one();
    }

    /// Kills it (a crash: no release).
    pub fn kill(&self) {
        self.task.abort();
    }

    /// Waits for `Run` to return (after [`Self::shutdown`], or after leadership was lost).
    ///
    /// # Errors
    /// The task's `JoinError` if it was killed.
    pub async fn join(self) -> Result<(), tokio::task::JoinError> {
        self.task.await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_formats_are_client_gos() {
        let t: Timestamp = "2026-03-01T10:20:30.000042Z".parse().unwrap_or_default();
        assert_eq!(micro_time(t), "2026-03-01T10:20:30.000042Z");
        assert_eq!(seconds_time(t), "2026-03-01T10:20:30Z");
        let r = Record {
            holder: "a".into(),
            lease_duration_seconds: 15,
            acquire_time: Some(t),
            renew_time: Some(t),
            transitions: 2,
        };
        assert_eq!(
            r.to_spec().to_string(),
            r#"{"acquireTime":"2026-03-01T10:20:30.000042Z","holderIdentity":"a","leaseDurationSeconds":15,"leaseTransitions":2,"renewTime":"2026-03-01T10:20:30.000042Z"}"#
        );
        assert_eq!(Record::from_spec(Some(&r.to_spec())), r);
        // The same second with other microseconds is no change to client-go.
        let later = Record {
            renew_time: "2026-03-01T10:20:30.9Z".parse().ok(),
            ..r.clone()
        };
        assert_eq!(later.raw(), r.raw());
        assert_eq!(Record::from_spec(None), Record::default());
    }
}
