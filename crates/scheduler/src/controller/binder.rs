//! The binding cycle's Bind step: the [`Binder`] trait and its two implementations, the API's
//! `pods/binding` write ([`ApiBinder`]) and an extender's bind ([`ExtenderBinder`]), each behind
//! the leadership fence; and [`BindOutcome`], what a binding task reports back.

use std::sync::Arc;

use election::LeadershipGuard;
use futures::future::BoxFuture;
use kube::Client;
use tracing::{debug, warn};

use super::ratelimit::RateLimiter;
use crate::extender::{Extender, ExtenderBindingArgs};
use crate::model::ANNOTATION_GPU_INDEXES;
use crate::model::PodInfo;

/// Binding annotation: the identity of the replica that bound the pod.
pub const ANNOTATION_SCHEDULED_BY: &str = "mini-scheduler.io/scheduled-by";
/// Binding annotation: the UID of the Lease under which the pod was bound.
pub const ANNOTATION_LEASE_UID: &str = "mini-scheduler.io/lease-uid";
/// Binding annotation: the Lease's `leaseTransitions` when this replica acquired it (the term).
pub const ANNOTATION_LEASE_TRANSITIONS: &str = "mini-scheduler.io/lease-transitions";

/// The scheduling attempt a binding belongs to: the queue's scheduling cycle when the pod was
/// popped (v1.22 `podSchedulingCycle`) and its attempt count, so that a pod requeued after a
/// failed binding is judged against move requests since *its* cycle, not a later one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Attempt {
    /// The queue's scheduling cycle when the pod was popped.
    pub(super) cycle: i64,
    /// The pod's scheduling attempts so far.
    pub(super) attempts: u32,
    /// When the pod first entered the queue (`scheduler_pod_scheduling_duration_seconds`).
    pub(super) initial_attempt_timestamp: std::time::Instant,
}

/// How a binding cycle ended.
#[derive(Debug)]
pub(super) enum BindResult {
    /// Bound.
    Bound,
    /// `409 ... already assigned` to another node than ours: someone else bound the pod (the
    /// API's message).
    AlreadyAssigned(String),
    /// The leadership fence did not hold: nothing was written.
    NotLeading(String),
    /// The binding failed (the error, for `binding rejected: <error>`).
    Failed(String),
    /// PreBind (VolumeBinding) failed: the FailedScheduling message.
    PreBindFailed(String),
}

/// The end of one pod's binding cycle, sent back to the scheduling task.
#[derive(Debug)]
pub(super) struct BindOutcome {
    /// The pod as popped.
    pub(super) pod: Arc<PodInfo>,
    /// The node it was assumed on.
    pub(super) node: String,
    /// What happened.
    pub(super) result: BindResult,
    /// The scheduling attempt it belongs to.
    pub(super) attempt: Attempt,
}

/// The Bind extension point: writes the decision to the API. Two implementations, as v1.22's
/// `bind` chooses between `extendersBinding` and the DefaultBinder plugin: [`ApiBinder`] (a
/// `pods/binding` write) and [`ExtenderBinder`] (an extender's `bindVerb`). Each checks the
/// leadership fence right before its request and writes nothing when it does not hold.
pub(super) trait Binder: Send + Sync {
    /// Bind `pod` to `node` (with GPU devices `gpu` for the annotation) under `guard`.
    fn bind<'a>(
        &'a self,
        pod: &'a PodInfo,
        node: &'a str,
        gpu: Option<&'a [u32]>,
        guard: &'a LeadershipGuard,
    ) -> BoxFuture<'a, BindResult>;
}

/// DefaultBinder: the `pods/binding` write, with the scheduling client's rate-limit token, the
/// fence check, and the annotations naming this replica and its lease term.
pub(super) struct ApiBinder {
    /// The scheduling client.
    pub(super) client: Client,
    /// Its token bucket.
    pub(super) limiter: Arc<RateLimiter>,
    /// This replica's identity ([`ANNOTATION_SCHEDULED_BY`]).
    pub(super) identity: String,
}

impl Binder for ApiBinder {
    fn bind<'a>(
        &'a self,
        pod: &'a PodInfo,
        node: &'a str,
        gpu: Option<&'a [u32]>,
        guard: &'a LeadershipGuard,
    ) -> BoxFuture<'a, BindResult> {
        Box::pin(api_bind(
            &self.client,
            &self.limiter,
            pod,
            node,
            gpu,
            guard,
            &self.identity,
        ))
    }
}

/// `extendersBinding`: the extender that manages the pod binds it (no token of our client: it
/// is no request of ours; no Binding annotations: the extender writes the Binding).
pub(super) struct ExtenderBinder(pub(super) Arc<dyn Extender>);

impl Binder for ExtenderBinder {
    fn bind<'a>(
        &'a self,
        pod: &'a PodInfo,
        node: &'a str,
        _gpu: Option<&'a [u32]>,
        guard: &'a LeadershipGuard,
    ) -> BoxFuture<'a, BindResult> {
        Box::pin(extender_bind(self.0.clone(), pod, node, guard))
    }
}

/// The `pods/binding` write of a pod no extender binds: the token from the scheduling client's
/// bucket first, then the fence check inside [`bind`], then the request.
async fn api_bind(
    client: &Client,
    limiter: &RateLimiter,
    pod: &PodInfo,
    node: &str,
    gpu: Option<&[u32]>,
    guard: &LeadershipGuard,
    identity: &str,
) -> BindResult {
    limiter.acquire().await;
    bind(client, pod, node, gpu, guard, identity).await
}

/// The extender binds the pod (`extendersBinding`, v1.22 `scheduler.go`), only if the leadership
/// fence holds right before the call; the blocking call runs on the blocking pool.
async fn extender_bind(
    ext: Arc<dyn Extender>,
    pod: &PodInfo,
    node: &str,
    guard: &LeadershipGuard,
) -> BindResult {
    if let Err(e) = guard.check() {
        return BindResult::NotLeading(e.to_string());
    }
    let args = ExtenderBindingArgs::new(pod, node);
    let name = ext.name().to_string();
    // The extender's error as is: upstream's `extendersBinding` returns it unwrapped, and it
    // becomes the "binding rejected: <error>" FailedScheduling message.
    let error = match tokio::task::spawn_blocking(move || ext.bind(&args)).await {
        Ok(Ok(())) => return BindResult::Bound,
        Ok(Err(e)) => e.to_string(),
        Err(e) => e.to_string(),
    };
    warn!(extender = %name, pod = %pod.key(), error = %error, "Extender bind failed");
    BindResult::Failed(error)
}

/// The node named by kube-apiserver's `pod X is already assigned to node "Y"` (the Binding
/// storage's conflict message).
fn assigned_node(message: &str) -> Option<&str> {
    let (_, rest) = message.rsplit_once("already assigned to node ")?;
    let rest = rest.trim();
    rest.strip_prefix('"')?.strip_suffix('"')
}

/// `POST pods/{name}/binding`, only if the leadership fence holds right before the request.
async fn bind(
    client: &Client,
    pod: &PodInfo,
    node: &str,
    gpu: Option<&[u32]>,
    guard: &LeadershipGuard,
    identity: &str,
) -> BindResult {
    let body = match binding_body(pod, node, gpu, guard.term(), identity) {
        Ok(b) => b,
        Err(e) => return BindResult::Failed(kube::Error::SerdeError(e).to_string()),
    };
    if let Err(e) = guard.check() {
        return BindResult::NotLeading(e.to_string());
    }
    match post_binding(client, pod, body).await {
        Ok(()) => BindResult::Bound,
        Err(kube::Error::Api(s)) if s.code == 409 && s.message.contains("already assigned") => {
            // `pod X is already assigned to node "Y"`: to the node we chose, the Binding we
            // wanted is in place (a retry whose first attempt was applied but unanswered).
            if assigned_node(&s.message) == Some(node) {
                debug!(pod = %pod.key(), node = %node, "Pod already assigned to the chosen node; counted as bound");
                BindResult::Bound
            } else {
                BindResult::AlreadyAssigned(s.message.clone())
            }
        }
        // client-go's StatusError.Error() is the Status message, which upstream's
        // "binding rejected: %w" wraps.
        Err(kube::Error::Api(s)) => BindResult::Failed(s.message),
        Err(e) => BindResult::Failed(e.to_string()),
    }
}

/// The JSON of the `core::Binding` of `pod` to `node` with this replica's annotations (the GPU
/// devices too when given): byte for byte what `serde_json::to_vec` makes of that object, but
/// serialised from a borrowed view ([`BindingView`]) instead of building the object (eight
/// `String`s and a map of owned strings) per bound pod, into a buffer sized once: the only
/// heap allocations are that buffer and, with GPU devices, their list.
///
/// # Errors
/// serde_json's error (none is expected: every field is a string).
fn binding_body(
    pod: &PodInfo,
    node: &str,
    gpu: Option<&[u32]>,
    term: &election::LeaderTerm,
    identity: &str,
) -> serde_json::Result<Vec<u8>> {
    let mut transitions = itoa::Buffer::new();
    let transitions = transitions.format(term.lease_transitions);
    let gpu_list = gpu.map(|idx| {
        use std::fmt::Write;
        let mut list = String::with_capacity(idx.len() * 3);
        for (i, d) in idx.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            // Writing to a String cannot fail.
            let _ = write!(list, "{sep}{d}");
        }
        list
    });
    let lease_uid = term.lease_uid.as_deref().unwrap_or_default();
    let mut entries = [
        (ANNOTATION_SCHEDULED_BY, identity),
        (ANNOTATION_LEASE_UID, lease_uid),
        (ANNOTATION_LEASE_TRANSITIONS, transitions),
        (
            ANNOTATION_GPU_INDEXES,
            gpu_list.as_deref().unwrap_or_default(),
        ),
    ];
    let annotations = &mut entries[..if gpu_list.is_some() { 4 } else { 3 }];
    // A `BTreeMap`'s order (the keys are distinct constants).
    annotations.sort_unstable_by_key(|(k, _)| *k);
    // The JSON of the Binding with every string empty is 262 bytes (297 with the GPU
    // annotation); strings needing escapes grow the buffer.
    let estimate = 300
        + pod.name.len()
        + pod.namespace.len()
        + pod.uid.len()
        + node.len()
        + annotations.iter().map(|(_, v)| v.len()).sum::<usize>();
    let mut body = Vec::with_capacity(estimate);
    serde_json::to_writer(
        &mut body,
        &BindingView {
            api_version: "v1",
            kind: "Binding",
            metadata: BindingMeta {
                annotations: Annotations(annotations),
                name: &pod.name,
                namespace: &pod.namespace,
                uid: &pod.uid,
            },
            target: NodeReference {
                api_version: "v1",
                kind: "Node",
                name: node,
            },
        },
    )?;
    Ok(body)
}

/// A `v1.Binding` borrowed from the pod, the node and the Lease term: the fields
/// [`binding_body`] sets, in the order k8s-openapi serialises `Binding`, `ObjectMeta` and
/// `ObjectReference` (`apiVersion`, `kind`, then alphabetical), so the JSON is the object's.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct BindingView<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: BindingMeta<'a>,
    target: NodeReference<'a>,
}

/// [`BindingView`]'s `metadata`: annotations (sorted by key, as a `BTreeMap` of them), name,
/// namespace, and the uid when known.
#[derive(serde::Serialize)]
struct BindingMeta<'a> {
    annotations: Annotations<'a>,
    name: &'a str,
    namespace: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    uid: &'a str,
}

/// Annotations as a JSON object, in the order given (sorted by [`binding_body`]).
struct Annotations<'a>(&'a [(&'a str, &'a str)]);

impl serde::Serialize for Annotations<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// [`BindingView`]'s `target`: the node.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct NodeReference<'a> {
    api_version: &'static str,
    kind: &'static str,
    name: &'a str,
}

/// `POST /api/v1/namespaces/{ns}/pods/{name}/binding` with `body`: the request
/// `Api::create_subresource` sends, without decoding the answer of a success (the API server's
/// `Status` of a created Binding, which nothing reads). A failure is the API's `Status`
/// ([`kube::Error::Api`]), as from `Api::create_subresource`.
async fn post_binding(client: &Client, pod: &PodInfo, body: Vec<u8>) -> kube::Result<()> {
    let mut req = binding_post(&pod.namespace, &pod.name, body)?;
    // The request's name in the client's trace span, as `Api::create_subresource` names it.
    req.extensions_mut().insert("create_subresource");
    client.request_text(req).await.map(drop)
}

/// The `POST` of pod `ns/name`'s Binding: kube-core's `Request::create_subresource("binding",
/// name, &PostParams::default(), body)` on `<Pod as Resource>::url_path` (`/api/v1/namespaces/
/// {ns}/pods/{name}/binding?`, content type `application/json`), its URL written in one
/// allocation instead of four `format!`s and a query serializer.
///
/// # Errors
/// An empty name (kube-core's validation error) or a URL that is no URI (`BuildRequest`), as
/// from `create_subresource`.
fn binding_post(ns: &str, name: &str, body: Vec<u8>) -> kube::Result<http::Request<Vec<u8>>> {
    const PREFIX: &str = "/api/v1/namespaces/";
    const PODS: &str = "/pods/";
    const SUFFIX: &str = "/binding?";
    if name.is_empty() {
        return Err(kube::Error::BuildRequest(
            kube::core::request::Error::Validation("A non-empty name is required".into()),
        ));
    }
    let mut url =
        String::with_capacity(PREFIX.len() + ns.len() + PODS.len() + name.len() + SUFFIX.len());
    url.push_str(PREFIX);
    url.push_str(ns);
    url.push_str(PODS);
    url.push_str(name);
    url.push_str(SUFFIX);
    super::events::json_post(url, body)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use election::LeaderWatch;
    use tokio::sync::Semaphore;
    use tokio::task::JoinSet;

    use super::*;
    use crate::controller::events;
    use crate::controller::ratelimit::ApiClients;
    use crate::controller::report::record_scheduled;
    use k8s_openapi::api::core::v1 as core;
    use kube::api::PostParams;

    /// The node of kube-apiserver's "already assigned" conflict, as `pods/binding` words it.
    #[test]
    fn assigned_node_reads_the_binding_conflict() {
        assert_eq!(
            assigned_node(
                "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n-1\""
            ),
            Some("n-1")
        );
        assert_eq!(assigned_node("pod p is already assigned to node n-1"), None);
        assert_eq!(assigned_node("the object has been modified"), None);
    }

    /// The Binding as an object (the way it was built before [`binding_body`]): the reference
    /// the view's bytes are checked against.
    fn binding_object(
        pod: &PodInfo,
        node: &str,
        gpu: Option<&[u32]>,
        term: &election::LeaderTerm,
        identity: &str,
    ) -> k8s_openapi::api::core::v1::Binding {
        use k8s_openapi::api::core::v1 as core;
        let mut annotations = std::collections::BTreeMap::from([
            (ANNOTATION_SCHEDULED_BY.to_string(), identity.to_string()),
            (
                ANNOTATION_LEASE_UID.to_string(),
                term.lease_uid.clone().unwrap_or_default(),
            ),
            (
                ANNOTATION_LEASE_TRANSITIONS.to_string(),
                term.lease_transitions.to_string(),
            ),
        ]);
        if let Some(idx) = gpu {
            let list: Vec<String> = idx.iter().map(u32::to_string).collect();
            annotations.insert(ANNOTATION_GPU_INDEXES.to_string(), list.join(","));
        }
        core::Binding {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(pod.name.clone()),
                namespace: Some(pod.namespace.clone()),
                uid: (!pod.uid.is_empty()).then(|| pod.uid.clone()),
                annotations: Some(annotations),
                ..Default::default()
            },
            target: core::ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Node".into()),
                name: Some(node.to_string()),
                ..Default::default()
            },
        }
    }

    /// The Binding serialised from its borrowed view is byte for byte serde_json's of the
    /// `core::Binding` object: with and without a UID, a lease UID and GPU devices, and with strings that
    /// need escaping.
    #[test]
    fn binding_body_is_serde_jsons_binding() {
        let mut pod = crate::framework::plugins::testutil::pod("p-0").info();
        let terms = [
            election::LeaderTerm {
                lease_uid: Some("0b1c-uid".into()),
                lease_transitions: 7,
                identity: "me".into(),
                acquired_at: tokio::time::Instant::now(),
                lease_resource_version: Some("12".into()),
            },
            election::LeaderTerm {
                lease_uid: Some(String::new()),
                lease_transitions: i32::MIN,
                identity: "me".into(),
                acquired_at: tokio::time::Instant::now(),
                lease_resource_version: None,
            },
            election::LeaderTerm {
                lease_uid: None,
                lease_transitions: -1,
                identity: "me".into(),
                acquired_at: tokio::time::Instant::now(),
                lease_resource_version: None,
            },
        ];
        let odd = "q\"uo\\te\n\u{1}\u{7f}é🙂/<>&";
        for (uid, ns, node, identity) in [
            ("", "default", "n-1", "replica-0_abc"),
            ("u-1", "ns-2", "node.example", "me"),
            (odd, odd, odd, odd),
        ] {
            pod.uid = uid.into();
            pod.namespace = ns.into();
            pod.name = format!("{node}-pod");
            for term in &terms {
                for gpu in [None, Some(&[][..]), Some(&[0, 3, 12][..])] {
                    let want = serde_json::to_vec(&binding_object(&pod, node, gpu, term, identity))
                        .expect("serialises");
                    let got = binding_body(&pod, node, gpu, term, identity).expect("written");
                    assert_eq!(
                        String::from_utf8_lossy(&got),
                        String::from_utf8_lossy(&want)
                    );
                }
            }
        }
    }

    /// The request of a Binding's `POST` is kube-core's `Request::create_subresource` on the
    /// pods' `url_path` with default `PostParams` (as before [`binding_post`]): method, URI,
    /// headers, body; names and namespaces that make no URI, and an empty name, fail both ways.
    #[test]
    fn binding_post_is_kube_cores_create_subresource() {
        let words = [
            "p-0",
            "default",
            "a.b-c",
            "x%20y",
            "é",
            "has space",
            "q?x",
            "",
        ];
        for ns in words {
            for name in words {
                let body = br#"{"kind":"Binding"}"#.to_vec();
                let want = kube::core::Request::new(<core::Pod as kube::Resource>::url_path(
                    &(),
                    Some(ns),
                ))
                .create_subresource(
                    "binding",
                    name,
                    &PostParams::default(),
                    body.clone(),
                );
                events::assert_same_post(
                    binding_post(ns, name, body),
                    want,
                    &format!("{ns}/{name}"),
                );
            }
        }
    }

    /// An extender that binds the pod is called (on the blocking pool) while the fence holds;
    /// its error fails the binding.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn extender_bind_calls_the_binder_behind_the_fence() {
        use crate::extender::fake::FakeExtender;
        let guard = LeaderWatch::always_leading("me")
            .leadership()
            .expect("leads");
        let pod = crate::framework::plugins::testutil::pod("p").info();
        let ext = Arc::new(FakeExtender::default());
        let r = extender_bind(ext.clone(), &pod, "n1", &guard).await;
        assert!(matches!(r, BindResult::Bound), "{r:?}");
        let bound = ext.bound.lock().map(|b| b.clone()).unwrap_or_default();
        assert_eq!(bound, [ExtenderBindingArgs::new(&pod, "n1")]);
        let refusing = Arc::new(FakeExtender {
            not_binder: true,
            ..FakeExtender::default()
        });
        let r = extender_bind(refusing, &pod, "n1", &guard).await;
        assert!(
            matches!(&r, BindResult::Failed(m) if m == "not a binder"),
            "{r:?}"
        );
    }

    /// One write the API saw: which client sent it, the request path, and when (tokio's clock).
    type Seen = (&'static str, String, tokio::time::Instant);

    /// A client named `name` whose API answers every request with 201 and records it in `log`.
    fn recording_client(name: &'static str, log: Arc<std::sync::Mutex<Vec<Seen>>>) -> Client {
        let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let path = req.uri().path().to_string();
            log.lock().unwrap_or_else(|e| e.into_inner()).push((
                name,
                path.clone(),
                tokio::time::Instant::now(),
            ));
            let body = if path.ends_with("/binding") {
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}"#
            } else {
                r#"{"kind":"Event","apiVersion":"events.k8s.io/v1","metadata":{}}"#
            };
            let resp = http::Response::builder()
                .status(201)
                .header("content-type", "application/json")
                .body(http_body_util::Full::new(bytes::Bytes::from(body)));
            std::future::ready(resp)
        });
        Client::new(svc, "default")
    }

    /// `pods` pods bound the way `spawn_bind` binds them (`bind_concurrency` 16 at a time): the
    /// Binding, then the `Scheduled` event. Returns every request seen, in order.
    async fn bind_and_report(clients: &ApiClients, pods: usize) -> Vec<Seen> {
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let writes = recording_client("scheduling", log.clone());
        let recorder = events::EventRecorder::new(
            recording_client("events", log.clone()),
            "mini-scheduler".into(),
            "me".into(),
        );
        let guard = LeaderWatch::always_leading("me")
            .leadership()
            .expect("leads");
        let slots = Arc::new(Semaphore::new(16));
        let mut tasks = JoinSet::new();
        for i in 0..pods {
            let pod = crate::framework::plugins::testutil::pod(&format!("p{i}")).info();
            let (writes, recorder, guard, slots) = (
                writes.clone(),
                recorder.clone(),
                guard.clone(),
                slots.clone(),
            );
            let (limiter, event_limiter) = (clients.limiter.clone(), clients.event_limiter.clone());
            tasks.spawn(async move {
                let _permit = slots.acquire_owned().await;
                let r = api_bind(&writes, &limiter, &pod, "n1", None, &guard, "me").await;
                assert!(matches!(r, BindResult::Bound), "{r:?}");
                record_scheduled(&recorder, &event_limiter, &guard, &pod, "n1").await;
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.expect("bind task");
        }
        log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// kube-scheduler's `createClients`: events have a client and a token bucket of their own,
    /// so with a `Scheduled` event after every Binding the bindings still get the full
    /// `--kube-api-qps`. QPS 10, burst 1, 40 pods: the 40th Binding goes at 3.9 s (the first
    /// token is the burst), while the 40 events are written alongside. On one shared bucket
    /// (the behaviour before) the same run needs about twice as long for its bindings.
    #[tokio::test(start_paused = true)]
    async fn bindings_get_the_full_qps_while_events_are_written() {
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("url"));
        let clients = ApiClients::new(config, 10.0, 1).expect("clients");
        assert!(!Arc::ptr_eq(&clients.limiter, &clients.event_limiter));
        let start = tokio::time::Instant::now();
        let seen = bind_and_report(&clients, 40).await;
        let at = |client: &str, what: &str| -> Vec<Duration> {
            seen.iter()
                .filter(|(c, p, _)| *c == client && p.contains(what))
                .map(|(_, _, t)| t.duration_since(start))
                .collect()
        };
        let bindings = at("scheduling", "/binding");
        let events = at("events", "/events");
        assert_eq!(bindings.len(), 40);
        assert_eq!(
            events.len(),
            40,
            "every Scheduled event, on the event client"
        );
        assert_eq!(seen.len(), 80, "nothing else: {seen:?}");
        let last_binding = *bindings.iter().max().expect("bindings");
        assert!(
            last_binding >= Duration::from_millis(3900)
                && last_binding < Duration::from_millis(3950),
            "40 bindings at 10 QPS: {last_binding:?}"
        );
        // The events kept pace: each one followed its binding at once, none waited for a
        // binding's token.
        let last_event = *events.iter().max().expect("events");
        assert!(last_event < Duration::from_millis(4000), "{last_event:?}");

        // The same run with events drawing from the scheduling client's bucket: when the
        // 40th Binding goes, at least 24 pods (40 less the 16 in flight) have had their event
        // too, so at least 64 tokens at 10/s have gone: 6.3 s or more.
        let one = Arc::new(RateLimiter::new(10.0, 1));
        let shared = ApiClients {
            limiter: one.clone(),
            event_limiter: one,
            ..clients
        };
        let start = tokio::time::Instant::now();
        let seen = bind_and_report(&shared, 40).await;
        let last_binding = seen
            .iter()
            .filter(|(_, p, _)| p.ends_with("/binding"))
            .map(|(_, _, t)| t.duration_since(start))
            .max()
            .expect("bindings");
        assert!(
            last_binding >= Duration::from_millis(6300),
            "one bucket for both slows the bindings: {last_binding:?}"
        );
    }
}
