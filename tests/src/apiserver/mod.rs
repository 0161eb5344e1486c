//! An in-memory Kubernetes API test double, served over loopback HTTP with axum and used through
//! the real `kube::Client`.
//!
//! ```no_run
//! # async fn demo() {
//! use k8s_openapi::api::core::v1::Pod;
//! use tests::apiserver::ApiServer;
//! let api = ApiServer::start().await;
//! let client = api.client("replica-1"); // requests carry User-Agent `... (replica-1)`
//! let pods: kube::Api<Pod> = kube::Api::namespaced(client, "default");
//! api.faults("replica-1").fail_next(3, 503);
//! let _ = pods.list(&Default::default()).await; // 503 ServiceUnavailable
//! let _writes = api.writes();
//! api.shutdown().await;
//! # }
//! ```
//!
//! # Served API
//! core/v1 `pods` (+ `binding`, `status`), `nodes` (+ `status`), `services`,
//! `replicationcontrollers`, `events`, `persistentvolumes` (+ `status`),
//! `persistentvolumeclaims` (+ `status`); apps/v1 `replicasets`, `statefulsets`;
//! coordination.k8s.io/v1 `leases`; events.k8s.io/v1 `events`; storage.k8s.io/v1
//! `storageclasses`, `csinodes`; policy/v1 `poddisruptionbudgets` (+ `status`; no disruption
//! controller runs: tests write the status). Verbs: GET, LIST (with `limit` /
//! `continue`, `labelSelector`, `fieldSelector`), WATCH (`watch=true`, `resourceVersion`,
//! `allowWatchBookmarks`, `timeoutSeconds`, `sendInitialEvents`), POST, PUT, PATCH
//! (`application/merge-patch+json`, `application/strategic-merge-patch+json`), DELETE.
//! Every error body is a `metav1.Status` worded as kube-apiserver words it.
//! authentication.k8s.io/v1 `tokenreviews` and authorization.k8s.io/v1 `subjectaccessreviews`
//! (create only) answer from the tokens of [`ApiServer::add_token`] and the non-resource grants
//! of [`ApiServer::grant_non_resource`] (see `reviews.rs`).
//!
//! # Client identity
//! A request's client identity is the `x-client-identity` header if present, else the text inside
//! the last parentheses of its `User-Agent` (`mini-scheduler/0.1.0 (replica-1)` → `replica-1`,
//! the format the product uses), else the whole `User-Agent`, else `unknown`.
//!
//! # Read semantics
//! LIST honours `resourceVersion` and `resourceVersionMatch` (unset: latest; `0` or `N`
//! NotOlderThan: the latest state, which is not older; `Exact`: the state at `N` rebuilt from the
//! retained history, 410 once compacted; an `N` the store has not reached waits up to 3 s, then
//! 504 `Too large resource version`), and refuses a resourceVersion with `continue` (400). A
//! continue token answers 410 once the history of its snapshot was compacted
//! ([`ApiServer::compact`] or the history limit), as etcd compaction expires real tokens. A
//! watch from a resourceVersion not reached yet waits up to 3 s, then fails in-stream with 504.
//!
//! # Writes
//! `dryRun=All` (query, or the DeleteOptions body) validates and answers without storing, and
//! is marked in the write record. A pod bound to a node and not finished is deleted gracefully:
//! `deletionTimestamp` + `deletionGracePeriodSeconds` (MODIFIED), then the simulated kubelet's
//! final delete (DELETED; see [`ApiServerBuilder::kubelet`]).
//!
//! # Simplifications (and why no test depends on them)
//! - Bookmarks come every 60 s ([`ApiServerBuilder::bookmark_interval`]) and when a watch
//!   times out; kube-apiserver v1.22 sends them about once a minute and shortly (2 s) before
//!   the timeout. Nothing waits for a bookmark: the scheduler's read barrier after a Lease
//!   acquisition uses a LIST, the watcher only stores the bookmark's resourceVersion.
//! - Continue tokens are opaque `id-offset` strings, not base64 JSON; a 410 on an expired
//!   token carries no "inconsistent continue" token (clients relist, as kube's watcher does).
//! - No finalizers; no admission, defaulting or schema validation beyond what is documented
//!   on [`ApiServer`] and the create defaults of the storage kinds (PV/PVC status
//!   `{phase: Pending}`, StorageClass `reclaimPolicy: Delete` and `volumeBindingMode:
//!   Immediate`); core/v1 and events.k8s.io/v1 events are separate stores. No PV controller
//!   runs: tests play it.

mod faults;
mod requests;
pub mod resources;
mod reviews;
pub mod selectors;
pub mod status;
mod store;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Query, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};

pub use faults::ClientFaults;
pub use faults::RequestMatch;
use faults::{FaultTable, RequestInfo};
pub use requests::RequestRecord;
pub use resources::Resource;
use resources::{Target, parse_path};
pub use reviews::{NonResourceGrant, Subject};
use selectors::{FieldSelector, LabelSelector};
pub use status::ApiError;
pub use store::WriteRecord;
use store::{Deleted, EventType, ListAt, Part, State, StoreEvent};

/// Client identity used for requests without a usable `User-Agent`.
pub const UNKNOWN_CLIENT: &str = "unknown";
/// Request header that names the client identity; takes precedence over the `User-Agent`.
pub const HEADER_CLIENT_IDENTITY: &str = "x-client-identity";

struct Shared {
    state: Mutex<State>,
    /// When the simulated kubelet finishes a graceful pod delete ([`ApiServerBuilder::kubelet`]).
    kubelet: Option<Duration>,
    /// Every request received, in arrival order ([`ApiServer::requests`]).
    requests: Mutex<Vec<RequestRecord>>,
    faults: Arc<FaultTable>,
    bookmark_interval: Option<Duration>,
    /// Tokens and non-resource grants of TokenReview / SubjectAccessReview.
    reviews: Mutex<reviews::Reviews>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Options for [`ApiServer`]; start with [`ApiServer::builder`].
#[derive(Debug, Clone)]
pub struct ApiServerBuilder {
    history_limit: usize,
    bookmark_interval: Option<Duration>,
    kubelet: Option<Duration>,
}

impl ApiServerBuilder {
    /// How many change events per resource are kept for watches to resume from (default 10,000).
    /// Resuming from an older resourceVersion gets an in-stream 410 Expired.
    pub fn history_limit(mut self, events: usize) -> Self {
        self.history_limit = events;
        self
    }

    /// Interval of periodic BOOKMARK events on watches that allow them (default 60 s, like the
    /// apiserver's watch cache); `None` sends a bookmark only when a watch times out.
    pub fn bookmark_interval(mut self, interval: Option<Duration>) -> Self {
        self.bookmark_interval = interval;
        self
    }

    /// The simulated kubelet: a pod deleted gracefully (bound, running) is terminating until the
    /// kubelet's final delete, `delay` after the graceful one (default `Some(0)`: at once, so
    /// watchers see MODIFIED with `deletionTimestamp`, then DELETED). `None`: no kubelet runs,
    /// terminating pods stay until deleted with `gracePeriodSeconds: 0` or
    /// [`ApiServer::remove`]d.
    pub fn kubelet(mut self, delay: Option<Duration>) -> Self {
        self.kubelet = delay;
        self
    }

    /// Binds `127.0.0.1:0` and serves in a background task.
    ///
    /// # Panics
    /// If the loopback listener cannot be bound.
    pub async fn start(self) -> ApiServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(self.history_limit)),
            kubelet: self.kubelet,
            requests: Mutex::new(Vec::new()),
            faults: Arc::new(FaultTable::default()),
            bookmark_interval: self.bookmark_interval,
            reviews: Mutex::new(reviews::Reviews::default()),
        });
        let router = Router::new()
            .fallback(handle)
            .with_state(shared.clone())
            .layer(DefaultBodyLimit::disable());
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    let _ = rx.await;
                })
                .await;
        });
        ApiServer {
            addr,
            shared,
            task: Some(task),
            stop: Some(tx),
        }
    }
}

/// The running test double. Dropping it stops serving (use [`ApiServer::shutdown`] to wait).
///
/// Semantics reproduced from kube-apiserver (generic registry, pod/binding strategy):
/// - one global resourceVersion counter, bumped by every write and set as
///   `metadata.resourceVersion`; create sets `uid`, `creationTimestamp`, `namespace`,
///   `generation` (pods, ReplicaSets, StatefulSets, RCs; bumped on spec change); a pod created over
///   HTTP gets `status: {phase: Pending}`;
/// - PUT with a stale non-empty `metadata.resourceVersion` → 409 Conflict; create of an existing
///   name → 409 AlreadyExists; missing → 404 NotFound; an update that changes nothing does not
///   bump the resourceVersion; main-resource writes keep `status`, `status` writes change only it;
/// - `pods/{name}/binding`: preconditions on the Binding's uid/resourceVersion, 409
///   `pods/binding` "already assigned", annotations copied, `spec.nodeName` and
///   `PodScheduled=True` set, answered 201 with a Success Status;
/// - Leases: `spec.leaseDurationSeconds` must be > 0 (422 Invalid);
/// - watches move objects into/out of a selection as ADDED/DELETED, and answer a too-old
///   resourceVersion with HTTP 200 and an in-stream `ERROR` 410 Expired.
pub struct ApiServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: Option<tokio::task::JoinHandle<()>>,
    stop: Option<oneshot::Sender<()>>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.shared.faults.shutdown();
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

fn resource_of<K: k8s_openapi::Resource>() -> Resource {
    Resource::of::<K>()
        .unwrap_or_else(|| panic!("{} is not served by the test API server", K::KIND))
}

impl ApiServer {
    /// Starts a server with default options.
    pub async fn start() -> ApiServer {
        ApiServer::builder().start().await
    }

    /// Write a kubeconfig whose only context points at this server over plain HTTP with no
    /// credentials, for processes (the `mini-scheduler` binary, the election example) that
    /// read `--kubeconfig`.
    ///
    /// # Errors
    /// The I/O error of writing `path`.
    pub fn write_kubeconfig(&self, path: &std::path::Path) -> std::io::Result<()> {
        std::fs::write(
            path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster: {{server: \"{}\"}}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: c\n  context: {{cluster: t, user: u}}\ncurrent-context: c\n",
                self.url()
            ),
        )
    }

    /// Options for a server.
    pub fn builder() -> ApiServerBuilder {
        ApiServerBuilder {
            history_limit: 10_000,
            bookmark_interval: Some(Duration::from_secs(60)),
            kubelet: Some(Duration::ZERO),
        }
    }

    /// The loopback address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A `kube::Config` for this server: plain HTTP, `default_retry = false`, default namespace
    /// `default`, and `User-Agent: mini-scheduler-test/0.1.0 (<identity>)`.
    ///
    /// # Panics
    /// If `identity` is not a valid header value.
    pub fn config(&self, identity: &str) -> kube::Config {
        let mut c = kube::Config::new(self.url().parse().expect("loopback URL"));
        c.default_retry = false;
        c.default_namespace = "default".into();
        let ua = HeaderValue::from_str(&format!("mini-scheduler-test/0.1.0 ({identity})"))
            .expect("identity is a header value");
        c.headers.push((header::USER_AGENT, ua));
        c
    }

    /// A real `kube::Client` whose requests carry `identity` (see [`ApiServer::config`]).
    ///
    /// # Panics
    /// If the client cannot be built (invalid identity).
    pub fn client(&self, identity: &str) -> kube::Client {
        kube::Client::try_from(self.config(identity)).expect("kube client for the test API server")
    }

    /// A bearer token that TokenReviews authenticate as `username` (uid `<username>-uid`) in
    /// `groups` (`system:authenticated` is added to the answer).
    pub fn add_token(&self, token: &str, username: &str, groups: &[&str]) {
        let mut r = self
            .shared
            .reviews
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        r.tokens.insert(
            token.to_string(),
            reviews::TokenUser {
                username: username.to_string(),
                uid: format!("{username}-uid"),
                groups: groups.iter().map(|g| g.to_string()).collect(),
            },
        );
    }

    /// A ClusterRole rule with `nonResourceURLs`, bound to a user or group, that
    /// SubjectAccessReviews decide with.
    pub fn grant_non_resource(&self, grant: NonResourceGrant) {
        let mut r = self
            .shared
            .reviews
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        r.grants.push(grant);
    }

    /// Fault controls for one client identity.
    pub fn faults(&self, identity: &str) -> ClientFaults {
        ClientFaults {
            table: self.shared.faults.clone(),
            client: identity.to_string(),
        }
    }

    /// Holds every request of every client (and pauses every watch) until [`ApiServer::resume`];
    /// held requests are then answered 504 and not applied.
    pub fn pause(&self) {
        self.shared.faults.set_paused(true);
    }

    /// Ends a [`ApiServer::pause`].
    pub fn resume(&self) {
        self.shared.faults.set_paused(false);
    }

    /// Every write request answered so far (POST, PUT, PATCH, DELETE; failures and injected faults
    /// included), in the order the server applied them.
    pub fn writes(&self) -> Vec<WriteRecord> {
        self.shared.lock().writes()
    }

    /// Every request received so far (reads, watches and writes; failed and fault-injected
    /// ones included), in arrival order, with the verb, group, resource, subresource and
    /// namespace an RBAC authorizer would check.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The write records from position `seq` (a [`WriteRecord::seq`]) on, without request
    /// bodies ([`WriteRecord::request`] is `None`): what a polling caller needs, without copying
    /// and decoding the whole record each time.
    pub fn writes_since(&self, seq: u64) -> Vec<WriteRecord> {
        self.shared.lock().writes_since(seq, false)
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.shared.lock().resource_version()
    }

    /// Forgets every retained watch event: a watch resuming from an older resourceVersion gets
    /// 410 Expired and the client must relist. Open watches are not affected (combine with
    /// [`ClientFaults::drop_watches`]).
    pub fn compact(&self) {
        self.shared.lock().compact();
    }

    /// Reads an object straight from the store (`ns` is ignored for cluster-scoped kinds).
    ///
    /// # Panics
    /// If `K` is not served, or the stored JSON does not deserialize as `K`.
    pub fn get<K: k8s_openapi::Resource + DeserializeOwned>(
        &self,
        ns: &str,
        name: &str,
    ) -> Option<K> {
        let r = resource_of::<K>();
        let ns = if r.info().namespaced { ns } else { "" };
        let obj = self.shared.lock().get(r, ns, name).ok()?;
        Some(serde_json::from_value((*obj).clone()).expect("stored object deserializes"))
    }

    /// Every stored object of kind `K`, ordered by namespace then name.
    ///
    /// # Panics
    /// If `K` is not served, or a stored object does not deserialize as `K`.
    pub fn list<K: k8s_openapi::Resource + DeserializeOwned>(&self) -> Vec<K> {
        let r = resource_of::<K>();
        let objs = self.shared.lock().select(
            r,
            None,
            &LabelSelector::default(),
            &FieldSelector::default(),
        );
        objs.iter()
            .map(|o| serde_json::from_value((**o).clone()).expect("stored object deserializes"))
            .collect()
    }

    /// Creates an object without HTTP (not in the write record; watchers see ADDED). Unlike a POST,
    /// the given `status` is kept. Returns the stored object (uid, resourceVersion, ...).
    ///
    /// # Errors
    /// The API error a create would give (AlreadyExists, Invalid).
    ///
    /// # Panics
    /// If `K` is not served or does not round-trip through JSON.
    pub fn seed<K: k8s_openapi::Resource + Serialize + DeserializeOwned>(
        &self,
        obj: &K,
    ) -> Result<K, ApiError> {
        let r = resource_of::<K>();
        let v = serde_json::to_value(obj).expect("object serializes");
        let ns = v
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        let stored = self.shared.lock().create(r, ns.as_deref(), v, false)?;
        Ok(serde_json::from_value((*stored).clone()).expect("stored object deserializes"))
    }

    /// Replaces an object without HTTP (PUT semantics, including the resourceVersion check and
    /// status handling: pass `status = true` to write the status subresource).
    ///
    /// # Errors
    /// The API error a PUT would give.
    ///
    /// # Panics
    /// If `K` is not served or does not round-trip through JSON.
    pub fn replace<K: k8s_openapi::Resource + Serialize + DeserializeOwned>(
        &self,
        obj: &K,
        status: bool,
    ) -> Result<K, ApiError> {
        let r = resource_of::<K>();
        let v = serde_json::to_value(obj).expect("object serializes");
        let ns = v
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let name = v
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let ns = if r.info().namespaced {
            ns
        } else {
            String::new()
        };
        let part = if status { Part::Status } else { Part::Main };
        let stored = self.shared.lock().replace(r, &ns, &name, v, part)?;
        Ok(serde_json::from_value((*stored).clone()).expect("stored object deserializes"))
    }

    /// Deletes an object without HTTP (watchers see DELETED).
    ///
    /// # Errors
    /// 404 NotFound if absent.
    pub fn remove<K: k8s_openapi::Resource>(&self, ns: &str, name: &str) -> Result<(), ApiError> {
        let r = resource_of::<K>();
        let ns = if r.info().namespaced { ns } else { "" };
        self.shared
            .lock()
            .delete(r, ns, name, &Value::Null)
            .map(|_| ())
    }

    /// Stops serving: ends watches, releases held requests, waits (at most 5 s) for the server.
    pub async fn shutdown(mut self) {
        self.shared.faults.shutdown();
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(mut t) = self.task.take()
            && tokio::time::timeout(Duration::from_secs(5), &mut t)
                .await
                .is_err()
        {
            t.abort();
        }
    }
}

fn identity(headers: &HeaderMap) -> String {
    if let Some(id) = headers
        .get(HEADER_CLIENT_IDENTITY)
        .and_then(|v| v.to_str().ok())
    {
        return id.to_string();
    }
    let Some(ua) = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
    else {
        return UNKNOWN_CLIENT.to_string();
    };
    if let (Some(open), Some(close)) = (ua.rfind('('), ua.rfind(')'))
        && open < close
    {
        return ua[open + 1..close].to_string();
    }
    ua.to_string()
}

fn json_response(code: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

fn error_response(e: &ApiError) -> Response {
    json_response(e.code, &e.to_status())
}

/// The outcome of a non-watch request: code, body, the RV produced and the object name. The
/// body is shared with the store where it can be, so answering does not deep-copy the object.
type Outcome = Result<(u16, Arc<Value>, Option<String>, Option<String>), ApiError>;

fn rv_name(obj: &Value) -> (Option<String>, Option<String>) {
    let get = |f: &str| {
        obj.get("metadata")
            .and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    (get("resourceVersion"), get("name"))
}

fn parse_body(body: &Bytes) -> Result<Value, ApiError> {
    if body.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("the body of the request could not be decoded: {e}"))
    })
}

fn selectors(
    t: &Target,
    q: &HashMap<String, String>,
) -> Result<(LabelSelector, FieldSelector), ApiError> {
    let labels = LabelSelector::parse(q.get("labelSelector").map_or("", String::as_str))?;
    let fields = FieldSelector::parse(
        q.get("fieldSelector").map_or("", String::as_str),
        t.resource,
    )?;
    Ok((labels, fields))
}

/// How a LIST reads, from `resourceVersion`, `resourceVersionMatch` and `continue`
/// (`ValidateListOptions` and the etcd3 store's rules, v1.22).
fn list_at(q: &HashMap<String, String>) -> Result<ListAt, ApiError> {
    let rv = q.get("resourceVersion").filter(|v| !v.is_empty());
    let m = q.get("resourceVersionMatch").filter(|v| !v.is_empty());
    let cont = q.get("continue").is_some_and(|c| !c.is_empty());
    if cont && rv.is_some_and(|v| v != "0") {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    let Some(rv) = rv else {
        return match m {
            Some(_) => Err(ApiError::invalid_options(
                "ListOptions",
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            )),
            None => Ok(ListAt::Latest),
        };
    };
    let n: u64 = rv
        .parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?;
    match m.map(String::as_str) {
        None | Some("NotOlderThan") => Ok(ListAt::NotOlderThan(n)),
        Some("Exact") if n == 0 => Err(ApiError::invalid_options(
            "ListOptions",
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        )),
        Some("Exact") => Ok(ListAt::Exact(n)),
        Some(other) => Err(ApiError::invalid_options(
            "ListOptions",
            "resourceVersionMatch",
            &format!("Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""),
        )),
    }
}

/// Waits (at most 3 s, as the watch cache's `waitUntilFreshAndBlock`) until the store has
/// reached resourceVersion `n`; whether it did.
async fn wait_fresh(shared: &Shared, n: u64) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    loop {
        if shared.lock().resource_version() >= n {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The `dryRun` option, from the query or (DELETE) the DeleteOptions body's `dryRun` list:
/// `All` or absent; anything else is 422 on the verb's options.
fn dry_run(method: &Method, q: &HashMap<String, String>, body: &Bytes) -> Result<bool, ApiError> {
    let from_body = || {
        let v: Value = serde_json::from_slice(body).ok()?;
        match v.get("dryRun")? {
            Value::Array(a) => a.first().and_then(Value::as_str).map(str::to_string),
            Value::String(s) => Some(s.clone()),
            _ => None,
        }
    };
    let v = match q.get("dryRun") {
        Some(v) => v.clone(),
        None if *method == Method::DELETE && !body.is_empty() => match from_body() {
            Some(v) => v,
            None => return Ok(false),
        },
        None => return Ok(false),
    };
    if v == "All" {
        return Ok(true);
    }
    let kind = match *method {
        Method::POST => "CreateOptions",
        Method::PUT => "UpdateOptions",
        Method::PATCH => "PatchOptions",
        Method::DELETE => "DeleteOptions",
        _ => return Ok(false),
    };
    Err(ApiError::invalid_options(
        kind,
        "dryRun",
        &format!("Unsupported value: {v:?}: supported values: \"All\""),
    ))
}

fn dispatch(
    st: &mut State,
    method: &Method,
    t: &Target,
    q: &HashMap<String, String>,
    body: Result<Value, ApiError>,
    content_type: &str,
) -> Outcome {
    let r = t.resource;
    let ns = t.namespace.as_deref().unwrap_or_default();
    let sub = t.subresource.as_deref();
    let status_ok = sub.is_none() || (sub == Some("status") && r.info().has_status);
    let part = if sub == Some("status") {
        Part::Status
    } else {
        Part::Main
    };
    let with_obj = |code: u16, o: Arc<Value>| {
        let (rv, name) = rv_name(&o);
        (code, o, rv, name)
    };
    match (method.clone(), t.name.as_deref()) {
        (Method::GET, None) if sub.is_none() => {
            let (labels, fields) = selectors(t, q)?;
            let limit = q.get("limit").and_then(|l| l.parse().ok()).unwrap_or(0);
            let at = list_at(q)?;
            let list = st.list(
                r,
                t.namespace.as_deref(),
                &labels,
                &fields,
                limit,
                q.get("continue").map(String::as_str),
                at,
            )?;
            Ok((200, Arc::new(list), None, None))
        }
        (Method::GET, Some(name)) if status_ok => Ok(with_obj(200, st.get(r, ns, name)?)),
        (Method::POST, None) if sub.is_none() => {
            let obj = st.create(r, t.namespace.as_deref(), body?, true)?;
            Ok(with_obj(201, obj))
        }
        (Method::POST, Some(name)) if sub == Some("binding") && r == Resource::Pods => {
            let pod = st.bind(ns, name, &body?)?;
            let (rv, _) = rv_name(&pod);
            Ok((
                201,
                Arc::new(status::success(201)),
                rv,
                Some(name.to_string()),
            ))
        }
        (Method::PUT, Some(name)) if status_ok => {
            Ok(with_obj(200, st.replace(r, ns, name, body?, part)?))
        }
        (Method::PATCH, Some(name)) if status_ok => {
            let strategic = match content_type.split(';').next().unwrap_or_default().trim() {
                "application/merge-patch+json" => false,
                "application/strategic-merge-patch+json" => true,
                other => return Err(ApiError::unsupported_media_type(other)),
            };
            Ok(with_obj(
                200,
                st.patch(r, ns, name, &body?, strategic, part)?,
            ))
        }
        (Method::DELETE, Some(name)) if sub.is_none() => {
            let before = st.resource_version();
            let out = match st.delete_pod_or_object(r, ns, name, &body?)? {
                Deleted::Gone(v) | Deleted::Terminating(v) => v,
            };
            let rv = (st.resource_version() != before).then(|| st.resource_version().to_string());
            Ok((200, Arc::new(out), rv, Some(name.to_string())))
        }
        (Method::GET | Method::POST | Method::PUT | Method::PATCH | Method::DELETE, _)
            if t.name.is_some() && !status_ok && sub != Some("binding") =>
        {
            Err(ApiError::no_route())
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}

/// Serves one request in a task of its own: a request that reached the server is handled to
/// the end even if its client goes away (a held write is still applied when released, as a
/// request already in kube-apiserver's hands is, whatever became of its sender).
async fn handle(
    AxumState(shared): AxumState<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    tokio::spawn(handle_request(shared, method, uri, headers, body))
        .await
        .unwrap_or_else(|e| {
            error_response(&ApiError::injected(
                500,
                &format!("the request handler failed: {e}"),
            ))
        })
}

/// A TokenReview or SubjectAccessReview request (see [`reviews`]), recorded as the `create` of
/// its resource.
fn review(
    shared: &Shared,
    client: &str,
    method: &Method,
    uri: &Uri,
    (group, resource): (&str, &str),
    body: &[u8],
) -> Response {
    {
        let mut all = shared.requests.lock().unwrap_or_else(|e| e.into_inner());
        let seq = all.len() as u64;
        all.push(RequestRecord {
            seq,
            client: client.to_string(),
            verb: if method == Method::POST {
                "create".into()
            } else {
                method.as_str().to_ascii_lowercase()
            },
            api_group: Some(group.to_string()),
            resource: Some(resource.to_string()),
            subresource: None,
            namespace: None,
            name: None,
            path: uri.path().to_string(),
        });
    }
    if method != Method::POST {
        return error_response(&ApiError::method_not_allowed());
    }
    let reviews = shared.reviews.lock().unwrap_or_else(|e| e.into_inner());
    let answer = if resource == "tokenreviews" {
        reviews.token_review(body)
    } else {
        reviews.subject_access_review(body)
    };
    match answer {
        Ok((code, v)) => json_response(code, &v),
        Err(e) => error_response(&e),
    }
}

async fn handle_request(
    shared: Arc<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let client = identity(&headers);
    if let Some((group, resource)) = reviews::review_resource(uri.path()) {
        return review(&shared, &client, &method, &uri, (group, resource), &body);
    }
    let target = parse_path(uri.path());
    {
        let mut r = requests::record(&client, &method, uri.path(), uri.query(), target.as_ref());
        let mut all = shared.requests.lock().unwrap_or_else(|e| e.into_inner());
        r.seq = all.len() as u64;
        all.push(r);
    }
    let is_write = !matches!(method, Method::GET | Method::HEAD | Method::OPTIONS);
    let q: HashMap<String, String> = Query::try_from_uri(&uri)
        .map(|Query(q)| q)
        .unwrap_or_default();
    let dry = if is_write {
        dry_run(&method, &q, &body)
    } else {
        Ok(false)
    };
    let is_dry = dry.as_ref().is_ok_and(|d| *d);
    // `at`: when the write was applied, read under the store lock before the change is made
    // (`None`: now, for a refused write), so that no client, a watcher included, can have seen
    // the write before its recorded time.
    let record = |st: &mut State,
                  at: Option<SystemTime>,
                  code: u16,
                  rv: Option<String>,
                  name: Option<String>,
                  response_lost: bool| {
        if !is_write {
            return;
        }
        // The body is kept raw and decoded when the record is read; only a write that named
        // no object (a failed create) is decoded here, for its `metadata.name`.
        let name = name
            .or_else(|| target.as_ref().and_then(|t| t.name.clone()))
            .or_else(|| {
                serde_json::from_slice::<Value>(&body).ok().and_then(|r| {
                    r.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
            });
        st.record(
            WriteRecord {
                seq: 0,
                at: at.unwrap_or_else(SystemTime::now),
                client: client.clone(),
                method: method.to_string(),
                path: uri.path().to_string(),
                kind: target
                    .as_ref()
                    .map(|t| t.resource.info().kind.to_string())
                    .unwrap_or_default(),
                namespace: target.as_ref().and_then(|t| t.namespace.clone()),
                name,
                subresource: target.as_ref().and_then(|t| t.subresource.clone()),
                code,
                resource_version: if is_dry { None } else { rv },
                request: None,
                response_lost,
                dry_run: is_dry,
            },
            body.clone(),
        );
    };
    let info = RequestInfo {
        method: method.as_str(),
        kind: target.as_ref().map_or("", |t| t.resource.info().kind),
        subresource: target
            .as_ref()
            .and_then(|t| t.subresource.as_deref())
            .unwrap_or_default(),
    };
    let verdict = match shared.faults.gate(&client, &info).await {
        Ok(v) => v,
        Err(e) => {
            record(&mut shared.lock(), None, e.code, None, None, false);
            return error_response(&e);
        }
    };
    let Some(t) = target.clone() else {
        record(&mut shared.lock(), None, 404, None, None, false);
        return error_response(&ApiError::no_route());
    };
    let is_watch = q.get("watch").is_some_and(|w| w == "true" || w == "1");
    if method == Method::GET && is_watch && t.name.is_none() {
        return watch(shared, client, t, q).await;
    }
    if let Err(e) = dry {
        record(&mut shared.lock(), None, e.code, None, None, false);
        return error_response(&e);
    }
    // A LIST at a resourceVersion not reached yet waits for it, as the watch cache does.
    if method == Method::GET
        && t.name.is_none()
        && let Ok(ListAt::NotOlderThan(n) | ListAt::Exact(n)) = list_at(&q)
    {
        wait_fresh(&shared, n).await;
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    // Decode the body before taking the store lock: requests decode in parallel.
    let parsed = parse_body(&body);
    let mut st = shared.lock();
    // Before the change: the store's watchers are sent the event inside `dispatch`.
    let applied_at = SystemTime::now();
    st.dry_run = is_dry;
    let out = dispatch(&mut st, &method, &t, &q, parsed, content_type);
    st.dry_run = false;
    match out {
        Ok((code, out, rv, name)) => {
            record(
                &mut st,
                Some(applied_at),
                code,
                rv,
                name,
                verdict.lose_response,
            );
            drop(st);
            if method == Method::DELETE && t.resource == Resource::Pods && !is_dry {
                kubelet_finishes(&shared, &out);
            }
            if verdict.lose_response {
                return error_response(&ApiError::response_lost());
            }
            json_response(code, &out)
        }
        Err(e) => {
            record(
                &mut st,
                Some(applied_at),
                e.code,
                None,
                None,
                verdict.lose_response,
            );
            drop(st);
            if verdict.lose_response {
                return error_response(&ApiError::response_lost());
            }
            error_response(&e)
        }
    }
}

/// After a graceful pod delete (the answer is a pod with `deletionTimestamp`), the simulated
/// kubelet's final delete: at once, or after the configured delay if the same pod (same uid)
/// is still terminating then.
fn kubelet_finishes(shared: &Arc<Shared>, answer: &Value) {
    let Some(delay) = shared.kubelet else { return };
    if answer
        .pointer("/metadata/deletionTimestamp")
        .is_none_or(Value::is_null)
    {
        return;
    }
    let get = |f: &str| {
        answer
            .pointer(&format!("/metadata/{f}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (ns, name, uid) = (get("namespace"), get("name"), get("uid"));
    let finish = move |shared: &Shared| {
        let mut st = shared.lock();
        let still = st.get(Resource::Pods, &ns, &name).is_ok_and(|p| {
            p.pointer("/metadata/uid").and_then(Value::as_str) == Some(uid.as_str())
        });
        if still {
            let _ = st.delete(Resource::Pods, &ns, &name, &Value::Null);
        }
    };
    if delay.is_zero() {
        finish(shared);
    } else {
        let shared = shared.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            finish(&shared);
        });
    }
}

/// What one watch selects.
struct Filter {
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn matches(&self, obj: &Value) -> bool {
        let ns_ok = self
            .namespace
            .as_deref()
            .is_none_or(|n| obj.pointer("/metadata/namespace").and_then(Value::as_str) == Some(n));
        ns_ok && self.labels.matches(obj) && self.fields.matches(obj)
    }

    /// The event this watch sees for a store change, as the watch cache computes it: objects
    /// entering the selection are ADDED, objects leaving it DELETED (the previous object, carrying
    /// the new resourceVersion). Returns the serialized watch line.
    fn translate(&self, ev: &StoreEvent) -> Option<Bytes> {
        let now = self.matches(&ev.object);
        match ev.kind {
            EventType::Added => now.then(|| line("ADDED", &*ev.object)),
            EventType::Deleted => now.then(|| line("DELETED", &*ev.object)),
            EventType::Modified => {
                let before = ev.prev.as_deref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => Some(line("MODIFIED", &*ev.object)),
                    (false, true) => Some(line("ADDED", &*ev.object)),
                    (true, false) => Some(match ev.prev.as_deref() {
                        Some(prev) => line("DELETED", &WithResourceVersion(prev, ev.rv)),
                        None => line("DELETED", &Value::Null),
                    }),
                    (false, false) => None,
                }
            }
        }
    }
}

/// `{"type": kind, "object": object}` and a newline, serialized straight from the object.
fn line(kind: &str, object: &impl Serialize) -> Bytes {
    let mut v = Vec::with_capacity(1024);
    v.extend_from_slice(b"{\"type\":");
    let _ = serde_json::to_writer(&mut v, kind);
    v.extend_from_slice(b",\"object\":");
    let _ = serde_json::to_writer(&mut v, object);
    v.extend_from_slice(b"}\n");
    Bytes::from(v)
}

/// An object serialized with `metadata.resourceVersion` replaced, without copying it (the
/// DELETED event of an object leaving a watch's selection carries the new resourceVersion).
struct WithResourceVersion<'a>(&'a Value, u64);

impl Serialize for WithResourceVersion<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(obj) = self.0 else {
            return self.0.serialize(s);
        };
        let rv = self.1.to_string();
        let mut map = s.serialize_map(Some(obj.len()))?;
        let mut has_meta = false;
        for (k, v) in obj {
            match (k.as_str(), v) {
                ("metadata", Value::Object(meta)) => {
                    has_meta = true;
                    map.serialize_entry(k, &MetaWithResourceVersion(meta, &rv))?;
                }
                _ => map.serialize_entry(k, v)?,
            }
        }
        if !has_meta {
            map.serialize_entry("metadata", &json!({ "resourceVersion": rv }))?;
        }
        map.end()
    }
}

struct MetaWithResourceVersion<'a>(&'a serde_json::Map<String, Value>, &'a str);

impl Serialize for MetaWithResourceVersion<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let has_rv = self.0.contains_key("resourceVersion");
        let mut map = s.serialize_map(Some(self.0.len() + usize::from(!has_rv)))?;
        for (k, v) in self.0 {
            if k == "resourceVersion" {
                map.serialize_entry(k, self.1)?;
            } else {
                map.serialize_entry(k, v)?;
            }
        }
        if !has_rv {
            map.serialize_entry("resourceVersion", self.1)?;
        }
        map.end()
    }
}

fn bookmark(r: Resource, rv: u64, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line(
        "BOOKMARK",
        &json!({"kind": r.info().kind, "apiVersion": r.api_version(), "metadata": meta}),
    )
}

async fn watch(
    shared: Arc<Shared>,
    client: String,
    t: Target,
    q: HashMap<String, String>,
) -> Response {
    let (labels, fields) = match selectors(&t, &q) {
        Ok(s) => s,
        Err(e) => return error_response(&e),
    };
    let filter = Filter {
        namespace: t.namespace.clone(),
        labels,
        fields,
    };
    let r = t.resource;
    let bookmarks = q
        .get("allowWatchBookmarks")
        .is_some_and(|b| b == "true" || b == "1");
    let initial_events = q
        .get("sendInitialEvents")
        .is_some_and(|b| b == "true" || b == "1");
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|s| s.parse().ok())
        .map_or(Duration::from_secs(1800), Duration::from_secs);
    let rv_param = q
        .get("resourceVersion")
        .map(String::as_str)
        .unwrap_or_default();
    // A watch from a resourceVersion the store has not reached waits for it (at most 3 s, as
    // the watch cache), then fails in-stream with 504 ResourceVersionTooLarge.
    let mut too_large = None;
    if !initial_events
        && let Ok(n) = rv_param.parse::<u64>()
        && n > shared.lock().resource_version()
        && !wait_fresh(&shared, n).await
    {
        too_large = Some(ApiError::too_large_resource_version(
            n,
            shared.lock().resource_version(),
        ));
    }
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let body = Body::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, Infallible>(b), rx))
    }));
    let mut first: Vec<Bytes> = Vec::new();
    let sub = {
        let st = shared.lock();
        let from = if rv_param.is_empty() || rv_param == "0" || initial_events {
            let current = st.resource_version();
            for o in st.select(
                r,
                filter.namespace.as_deref(),
                &filter.labels,
                &filter.fields,
            ) {
                first.push(line("ADDED", &*o));
            }
            if initial_events {
                first.push(bookmark(r, current, true));
            }
            Ok(current)
        } else {
            rv_param.parse::<u64>().map_err(|_| {
                ApiError::invalid(
                    r,
                    "",
                    &[(
                        "resourceVersion".into(),
                        "FieldValueInvalid",
                        format!("Invalid value: {rv_param:?}: must be a number"),
                    )],
                )
            })
        };
        match (from, too_large) {
            (_, Some(e)) => Err(e),
            (Ok(from), None) => st.subscribe(r, from),
            (Err(e), None) => return error_response(&e),
        }
    };
    let sub = match sub {
        Ok(s) => s,
        Err(e) => {
            first.push(line("ERROR", &e.to_status()));
            tokio::spawn(async move {
                for b in first {
                    if tx.send(b).await.is_err() {
                        return;
                    }
                }
            });
            return (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response();
        }
    };
    tokio::spawn(run_watch(
        shared, client, r, filter, sub, first, tx, bookmarks, timeout,
    ));
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

#[allow(clippy::too_many_arguments)]
async fn run_watch(
    shared: Arc<Shared>,
    client: String,
    r: Resource,
    filter: Filter,
    sub: store::Subscription,
    first: Vec<Bytes>,
    tx: mpsc::Sender<Bytes>,
    bookmarks: bool,
    timeout: Duration,
) {
    let faults = shared.faults.clone();
    let mut fault_rx = faults.subscribe();
    let drop_gen = faults.drop_gen(&client);
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut tick = shared
        .bookmark_interval
        .filter(|_| bookmarks)
        .map(|i| tokio::time::interval_at(tokio::time::Instant::now() + i, i));
    let mut rx = sub.rx;
    let mut last = sub.start_rv;
    let dropped = |f: &FaultTable| f.is_shutdown() || f.drop_gen(&client) != drop_gen;
    let mut pending: std::collections::VecDeque<Bytes> = first.into();
    for ev in sub.replay {
        if let Some(b) = filter.translate(&ev) {
            pending.push_back(b);
        }
    }
    loop {
        // A cut-off client (or one whose watches are stalled) receives nothing until healed.
        while faults.watches_stalled(&client) && !dropped(&faults) {
            tokio::select! {
                c = fault_rx.changed() => if c.is_err() { return },
                _ = &mut deadline => return,
            }
        }
        if dropped(&faults) {
            return;
        }
        if let Some(b) = pending.pop_front() {
            if tx.send(b).await.is_err() {
                return;
            }
            continue;
        }
        let bookmark_now =
            |rx: &mut broadcast::Receiver<Arc<StoreEvent>>,
             last: &mut u64,
             pending: &mut std::collections::VecDeque<Bytes>| {
                let st = shared.lock();
                let now = st.resource_version();
                while let Ok(ev) = rx.try_recv() {
                    if ev.rv > *last {
                        *last = ev.rv;
                        if let Some(b) = filter.translate(&ev) {
                            pending.push_back(b);
                        }
                    }
                }
                drop(st);
                *last = (*last).max(now);
                pending.push_back(bookmark(r, *last, false));
            };
        tokio::select! {
            _ = &mut deadline => {
                if bookmarks {
                    bookmark_now(&mut rx, &mut last, &mut pending);
                    while let Some(b) = pending.pop_front() {
                        if tx.send(b).await.is_err() {
                            return;
                        }
                    }
                }
                return;
            }
            c = fault_rx.changed() => if c.is_err() { return },
            _ = async { match tick.as_mut() { Some(t) => { t.tick().await; } None => std::future::pending::<()>().await } } => {
                bookmark_now(&mut rx, &mut last, &mut pending);
            }
            ev = rx.recv() => match ev {
                Ok(ev) => {
                    if ev.rv > last {
                        last = ev.rv;
                        if let Some(b) = filter.translate(&ev) {
                            pending.push_back(b);
                        }
                    }
                }
                // Too slow: the apiserver closes such a watch; the client re-watches.
                Err(_) => return,
            },
        }
    }
}
