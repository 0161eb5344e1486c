//! The resource lock: get / create / update of one Lease object with optimistic concurrency.
//!
//! Mirrors client-go `resourcelock.Interface` and `LeaseLock` (resourcelock/interface.go,
//! resourcelock/leaselock.go), except that the lock is stateless: the elector keeps the cached
//! Lease object (with its `resourceVersion`) and passes it back to [`Lock::update`]. Beyond
//! client-go, a lock can also list and watch its one Lease (a `metadata.name` field selector), so
//! that followers see releases and renewals as they happen instead of polling.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};

/// Which lock operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockOp {
    /// `GET` of the Lease.
    Get,
    /// `POST` (create) of the Lease.
    Create,
    /// `PUT` (replace) of the Lease.
    Update,
    /// Field-selected `LIST` of the Lease (`fieldSelector=metadata.name=<name>`).
    List,
    /// Field-selected `WATCH` of the Lease, opening the stream or reading from it.
    Watch,
}

impl fmt::Display for LockOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LockOp::Get => "get",
            LockOp::Create => "create",
            LockOp::Update => "update",
            LockOp::List => "list",
            LockOp::Watch => "watch",
        })
    }
}

/// What went wrong in a lock operation.
#[derive(Debug, thiserror::Error)]
pub enum LockErrorKind {
    /// 404: the Lease does not exist.
    #[error("not found")]
    NotFound,
    /// 409 Conflict: the `resourceVersion` (or UID precondition) no longer matches; someone else
    /// wrote the Lease since it was read.
    #[error("conflict: {0}")]
    Conflict(String),
    /// 409 AlreadyExists on create: another candidate created the Lease first.
    #[error("already exists")]
    AlreadyExists,
    /// 422 Invalid: the API server rejected the object (e.g. `leaseDurationSeconds <= 0`).
    #[error("invalid: {0}")]
    Invalid(String),
    /// The request did not complete within the per-request timeout.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// Any other API or transport error.
    #[error(transparent)]
    Kube(kube::Error),
    /// 410 Gone / `Expired` on a watch: the requested `resourceVersion` is older than the
    /// history the server keeps (`too old resource version: X (Y)`); the client must list again.
    #[error("gone: {0}")]
    Gone(String),
    /// The lock cannot list or watch (the default of [`Lock::list`] and [`Lock::watch`]): the
    /// elector then only polls, as client-go does.
    #[error("list and watch are not supported by this lock")]
    Unsupported,
    /// A fault injected by [`crate::MemoryLock`]'s fault injector.
    #[error("injected fault: {0}")]
    Injected(String),
}

/// A failed lock operation on one Lease.
///
/// Display: `failed to {op} lease {namespace}/{name}: {kind}`.
#[derive(Debug, thiserror::Error)]
#[error("failed to {op} lease {lease}: {kind}")]
pub struct LockError {
    /// The operation.
    pub op: LockOp,
    /// `namespace/name` of the Lease.
    pub lease: String,
    /// The failure.
    #[source]
    pub kind: LockErrorKind,
}

impl LockError {
    /// Builds an error.
    pub fn new(op: LockOp, lease: impl Into<String>, kind: LockErrorKind) -> Self {
        Self {
            op,
            lease: lease.into(),
            kind,
        }
    }

    /// Classifies a kube client error: 404 → NotFound, reason AlreadyExists → AlreadyExists,
    /// 409 → Conflict, 422 → Invalid, 410 → Gone, anything else → Kube.
    pub fn from_kube(op: LockOp, lease: impl Into<String>, err: kube::Error) -> Self {
        let kind = match &err {
            kube::Error::Api(status) if status.code == 410 => {
                LockErrorKind::Gone(status.message.clone())
            }
            kube::Error::Api(status) if status.is_not_found() => LockErrorKind::NotFound,
            kube::Error::Api(status) if status.is_already_exists() => LockErrorKind::AlreadyExists,
            kube::Error::Api(status) if status.is_conflict() => {
                LockErrorKind::Conflict(status.message.clone())
            }
            kube::Error::Api(status) if status.is_invalid() => {
                LockErrorKind::Invalid(status.message.clone())
            }
            _ => LockErrorKind::Kube(err),
        };
        Self::new(op, lease, kind)
    }

    /// 404 Not Found.
    pub fn is_not_found(&self) -> bool {
        matches!(self.kind, LockErrorKind::NotFound)
    }

    /// 409 Conflict (stale `resourceVersion`).
    pub fn is_conflict(&self) -> bool {
        matches!(self.kind, LockErrorKind::Conflict(_))
    }

    /// 409 AlreadyExists (create lost the race).
    pub fn is_already_exists(&self) -> bool {
        matches!(self.kind, LockErrorKind::AlreadyExists)
    }

    /// The per-request timeout fired.
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, LockErrorKind::Timeout(_))
    }

    /// 410 Gone on a watch: list again.
    pub fn is_gone(&self) -> bool {
        matches!(self.kind, LockErrorKind::Gone(_))
    }

    /// The lock cannot list or watch.
    pub fn is_unsupported(&self) -> bool {
        matches!(self.kind, LockErrorKind::Unsupported)
    }
}

/// The answer of [`Lock::list`]: the Lease if it exists, and the list's `resourceVersion`, from
/// which a watch continues (client-go reflector's LIST-then-WATCH).
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseList {
    /// The Lease, if it exists.
    pub lease: Option<Lease>,
    /// `metadata.resourceVersion` of the list (not of the Lease): the server's state when it
    /// answered.
    pub resource_version: String,
}

/// One event of a Lease watch (`watch.Event` of the API server, for the one Lease).
#[derive(Debug, Clone, PartialEq)]
pub enum LeaseEvent {
    /// `ADDED`: the Lease was created (or entered the field selection).
    Added(Lease),
    /// `MODIFIED`: the Lease as written.
    Modified(Lease),
    /// `DELETED`: the Lease's last state, carrying the delete's `resourceVersion`.
    Deleted(Lease),
    /// `BOOKMARK`: nothing changed up to `resource_version`; resume from there.
    Bookmark {
        /// The bookmark's `metadata.resourceVersion`.
        resource_version: String,
    },
}

impl LeaseEvent {
    /// The `resourceVersion` a watch resumes from after this event.
    pub fn resource_version(&self) -> Option<&str> {
        match self {
            LeaseEvent::Added(l) | LeaseEvent::Modified(l) | LeaseEvent::Deleted(l) => {
                l.metadata.resource_version.as_deref()
            }
            LeaseEvent::Bookmark { resource_version } => Some(resource_version),
        }
    }
}

/// The stream of a Lease watch. An `Err` item ends the watch: [`LockErrorKind::Gone`] (410)
/// means list again, anything else means open a new watch. The end of the stream is the server
/// closing the watch (its `timeoutSeconds`): resume from the last `resourceVersion`.
pub type LeaseEventStream = BoxStream<'static, Result<LeaseEvent, LockError>>;

/// `timeoutSeconds` of each Lease watch: the server ends it after this long and the elector
/// resumes from the last `resourceVersion` (kube's watcher default, 290 s).
pub const WATCH_TIMEOUT: Duration = Duration::from_secs(290);

/// Access to one Lease object (client-go `resourcelock.Interface` minus events).
///
/// Every method returns the Lease as stored by the server, including `metadata.resourceVersion`
/// and `metadata.uid`. [`Lock::update`] must be a conditional write: it sends the given object's
/// `resourceVersion`, and the server answers 409 Conflict if the Lease changed since.
/// Implementations need no timeouts of their own: the elector bounds every call with
/// [`crate::LeaderElectionConfig::request_timeout`].
pub trait Lock: Send + Sync + 'static {
    /// Reads the Lease (`GET`).
    ///
    /// # Errors
    /// [`LockErrorKind::NotFound`] if it does not exist; other kinds for transport/API failures.
    fn get(&self) -> impl Future<Output = Result<Lease, LockError>> + Send;

    /// Creates the Lease (`POST`); `lease.metadata` needs at least name and namespace.
    ///
    /// # Errors
    /// [`LockErrorKind::AlreadyExists`] if another candidate created it first.
    fn create(&self, lease: Lease) -> impl Future<Output = Result<Lease, LockError>> + Send;

    /// Replaces the Lease (`PUT`) if its `resourceVersion` still equals
    /// `lease.metadata.resource_version` (optimistic concurrency).
    ///
    /// # Errors
    /// [`LockErrorKind::Conflict`] if the Lease was written since that version was read.
    fn update(&self, lease: Lease) -> impl Future<Output = Result<Lease, LockError>> + Send;

    /// Lists the Lease with a field selector on its name (`LIST …/leases?fieldSelector=
    /// metadata.name=<name>`), for the `resourceVersion` a watch starts from. RBAC: `leases`
    /// `list`, which `resourceNames` can limit because of the field selector.
    ///
    /// The default answers [`LockErrorKind::Unsupported`]: the elector then only polls.
    ///
    /// # Errors
    /// Transport/API failures.
    fn list(&self) -> impl Future<Output = Result<LeaseList, LockError>> + Send {
        let lease = self.describe();
        async move {
            Err(LockError::new(
                LockOp::List,
                lease,
                LockErrorKind::Unsupported,
            ))
        }
    }

    /// Watches the Lease from `resource_version` (exclusive) with a field selector on its name
    /// and bookmarks, for at most [`WATCH_TIMEOUT`]. RBAC: `leases` `watch`.
    ///
    /// The default answers [`LockErrorKind::Unsupported`]: the elector then only polls.
    ///
    /// # Errors
    /// [`LockErrorKind::Gone`] if `resource_version` is too old (the API server may also send
    /// that as the stream's first item); transport/API failures.
    fn watch(
        &self,
        resource_version: &str,
    ) -> impl Future<Output = Result<LeaseEventStream, LockError>> + Send {
        let _ = resource_version;
        let lease = self.describe();
        async move {
            Err(LockError::new(
                LockOp::Watch,
                lease,
                LockErrorKind::Unsupported,
            ))
        }
    }

    /// `namespace/name` of the Lease, for logs and errors (client-go `Describe`).
    fn describe(&self) -> String;
}

/// [`Lock`] on a real API server through `kube::Api<Lease>` (client-go `LeaseLock`).
///
/// `update` is a `PUT` (replace) of the whole object, carrying its `resourceVersion`, so a
/// concurrent writer makes it fail with 409. `list` and `watch` select the Lease by
/// `metadata.name`; a watch asks for bookmarks. RBAC: `leases` get, create, update, list, watch.
#[derive(Clone)]
pub struct KubeLeaseLock {
    api: Api<Lease>,
    namespace: String,
    name: String,
}

impl KubeLeaseLock {
    /// A lock on Lease `namespace/name` using `client`.
    ///
    /// Tip: build `client` with `default_retry = false` or a short timeout; the elector applies
    /// its own per-request timeout (`max(1 s, renew_deadline / 2)`).
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// A lock from an existing namespaced `Api<Lease>`.
    pub fn from_api(api: Api<Lease>, namespace: &str, name: &str) -> Self {
        Self {
            api,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

impl fmt::Debug for KubeLeaseLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeLeaseLock")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .finish()
    }
}

impl Lock for KubeLeaseLock {
    async fn get(&self) -> Result<Lease, LockError> {
        self.api
            .get(&self.name)
            .await
            .map_err(|e| LockError::from_kube(LockOp::Get, self.describe(), e))
    }

    async fn create(&self, mut lease: Lease) -> Result<Lease, LockError> {
        lease.metadata.name = Some(self.name.clone());
        lease.metadata.namespace = Some(self.namespace.clone());
        self.api
            .create(&PostParams::default(), &lease)
            .await
            .map_err(|e| LockError::from_kube(LockOp::Create, self.describe(), e))
    }

    async fn update(&self, lease: Lease) -> Result<Lease, LockError> {
        self.api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
            .map_err(|e| LockError::from_kube(LockOp::Update, self.describe(), e))
    }

    async fn list(&self) -> Result<LeaseList, LockError> {
        let params = ListParams::default().fields(&self.field_selector());
        let list = self
            .api
            .list(&params)
            .await
            .map_err(|e| LockError::from_kube(LockOp::List, self.describe(), e))?;
        let resource_version = list.metadata.resource_version.clone().unwrap_or_default();
        let lease = list
            .items
            .into_iter()
            .find(|l| l.metadata.name.as_deref() == Some(self.name.as_str()));
        Ok(LeaseList {
            lease,
            resource_version,
        })
    }

    async fn watch(&self, resource_version: &str) -> Result<LeaseEventStream, LockError> {
        let secs = u32::try_from(WATCH_TIMEOUT.as_secs()).unwrap_or(u32::MAX);
        // Bookmarks are on by default.
        let params = WatchParams::default()
            .fields(&self.field_selector())
            .timeout(secs);
        let desc = self.describe();
        let stream = self
            .api
            .watch(&params, resource_version)
            .await
            .map_err(|e| LockError::from_kube(LockOp::Watch, desc.clone(), e))?;
        let events = stream
            .map_err({
                let desc = desc.clone();
                move |e| LockError::from_kube(LockOp::Watch, desc.clone(), e)
            })
            .and_then(move |event| {
                let desc = desc.clone();
                async move {
                    match event {
                        WatchEvent::Added(l) => Ok(LeaseEvent::Added(l)),
                        WatchEvent::Modified(l) => Ok(LeaseEvent::Modified(l)),
                        WatchEvent::Deleted(l) => Ok(LeaseEvent::Deleted(l)),
                        WatchEvent::Bookmark(b) => Ok(LeaseEvent::Bookmark {
                            resource_version: b.metadata.resource_version,
                        }),
                        WatchEvent::Error(status) => Err(LockError::from_kube(
                            LockOp::Watch,
                            desc,
                            kube::Error::Api(status),
                        )),
                    }
                }
            });
        Ok(events.boxed())
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

impl KubeLeaseLock {
    fn field_selector(&self) -> String {
        format!("metadata.name={}", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn api_err(code: u16, reason: &str) -> kube::Error {
        let mut status = Status::failure("boom", reason);
        status.code = code;
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn classifies_kube_errors() {
        let e = LockError::from_kube(LockOp::Get, "ns/l", api_err(404, "NotFound"));
        assert!(e.is_not_found());
        assert_eq!(e.to_string(), "failed to get lease ns/l: not found");
        let e = LockError::from_kube(LockOp::Update, "ns/l", api_err(409, "Conflict"));
        assert!(e.is_conflict());
        assert_eq!(e.to_string(), "failed to update lease ns/l: conflict: boom");
        let e = LockError::from_kube(LockOp::Create, "ns/l", api_err(409, "AlreadyExists"));
        assert!(e.is_already_exists());
        let e = LockError::from_kube(LockOp::Update, "ns/l", api_err(422, "Invalid"));
        assert!(matches!(e.kind, LockErrorKind::Invalid(_)));
        let e = LockError::from_kube(LockOp::Update, "ns/l", api_err(500, "InternalError"));
        assert!(matches!(e.kind, LockErrorKind::Kube(_)));
        let e = LockError::from_kube(LockOp::Watch, "ns/l", api_err(410, "Expired"));
        assert!(e.is_gone());
        assert_eq!(e.to_string(), "failed to watch lease ns/l: gone: boom");
    }
}
