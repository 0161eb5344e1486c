//! `events.k8s.io/v1` Events with client-go's series aggregation, as kube-scheduler records
//! `Scheduled` and `FailedScheduling`.
//!
//! Follows client-go `tools/events/event_broadcaster.go` (kubernetes/kubernetes
//! `staging/src/k8s.io/client-go/tools/events/event_broadcaster.go`, read at
//! 015189e7cb3606ff399b4a96f12d7d37c62753aa; the series logic is the one kube-scheduler v1.22
//! used through `NewEventBroadcasterAdapter`):
//!
//! - events are keyed by (type, action, reason, reportingController, reportingInstance,
//!   regarding, related); the note is not part of the key;
//! - the first occurrence is created (`POST`);
//! - the second isomorphic one, while the first is cached, becomes a series:
//!   `series: {count: 2, lastObservedTime}` is written with a strategic merge `PATCH` of the
//!   first Event (created anew with the series if it no longer exists);
//! - later ones only count in memory; every [`REFRESH_PERIOD`] (30 min) each open series is
//!   written again, and every [`FINISH_PERIOD`] (6 min) a series last observed more than
//!   6 minutes ago gets its final count written and leaves the cache, as does a singleton
//!   older than 6 minutes.
//!
//! So an unschedulable pod retried every few seconds costs one Event object and a PATCH
//! every 30 minutes, not one Event per attempt. The cache lookup is O(1); the periodic scans
//! are O(cached events).
//!
//! Deviations: `regarding` is kube's `object_ref` (no `resourceVersion`, unlike client-go's
//! `reference.GetReference`), so our own status patches do not split a pod's series; a failed
//! write is logged and dropped instead of retried up to 12 times with 10 s sleeps (the next
//! occurrence or the periodic write tries again); events are not written through core/v1 when
//! events.k8s.io/v1 is not served (GA since Kubernetes 1.19, served by every supported
//! release).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use tokio::time::Instant;
use tracing::debug;

/// Longest `note` the API server accepts (1 KiB).
pub const EVENT_NOTE_MAX: usize = 1024;
/// A series not observed for this long is finished; a singleton this old leaves the cache
/// (client-go `finishTime`).
pub const FINISH_TIME: Duration = Duration::from_secs(6 * 60);
/// How often finished series are looked for (client-go runs `finishSeries` every
/// `finishTime`).
pub const FINISH_PERIOD: Duration = FINISH_TIME;
/// How often every open series is written again (client-go `refreshTime`).
pub const REFRESH_PERIOD: Duration = Duration::from_secs(30 * 60);

/// The fields that make two events the same series (client-go `eventKey`): type, action,
/// reason, reportingController, reportingInstance (an unset one as empty), related and
/// regarding (an unset `regarding` as an empty reference). Borrowed from the event, so that
/// recording one copies no string.
type KeyParts<'a> = (
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    Option<RefParts<'a>>,
    RefParts<'a>,
);

/// An `ObjectReference`'s fields in an event key: apiVersion, kind, namespace, name, uid,
/// fieldPath.
type RefParts<'a> = (
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);

fn ref_parts(r: &core::ObjectReference) -> RefParts<'_> {
    (
        r.api_version.as_deref(),
        r.kind.as_deref(),
        r.namespace.as_deref(),
        r.name.as_deref(),
        r.uid.as_deref(),
        r.field_path.as_deref(),
    )
}

fn key_parts(e: &Event) -> KeyParts<'_> {
    fn s(v: &Option<String>) -> &str {
        v.as_deref().unwrap_or_default()
    }
    (
        s(&e.type_),
        s(&e.action),
        s(&e.reason),
        s(&e.reporting_controller),
        s(&e.reporting_instance),
        e.related.as_ref().map(ref_parts),
        e.regarding
            .as_ref()
            .map_or((None, None, None, None, None, None), ref_parts),
    )
}

#[derive(Debug, Clone)]
struct Cached {
    /// The Event as first written (name, namespace, note of the first occurrence), shared
    /// with its `POST` ([`EventWrite::Create`]) instead of copied for it.
    event: Arc<Event>,
    /// When it was first recorded (for singletons' expiry).
    first: Instant,
    /// `(count, last observed)` once a series.
    series: Option<(i32, Instant, Timestamp)>,
}

/// A write the cache asks for.
// A patch carries its own Event (the cached one with its series), a create shares the
// cache's: writes are made one at a time as they come, so the size of the larger is no cost.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum EventWrite {
    /// `POST` a new Event (the one the cache holds).
    Create(Arc<Event>),
    /// Strategic merge `PATCH` of `series` on an existing Event; if it is gone, create
    /// `event` (which carries the series).
    PatchSeries(Event),
}

/// The series cache (pure: time is passed in).
#[derive(Debug, Default)]
pub struct SeriesCache {
    /// Cached events by the hash of their key ([`key_parts`]); events whose hashes collide
    /// share a bucket and are told apart by their keys.
    events: HashMap<u64, Vec<Cached>>,
    /// Events cached (over every bucket).
    len: usize,
    /// The key's hasher: foldhash (randomly seeded, as the scheduler's other maps keyed by
    /// pod names), a fraction of SipHash's cost over the key's dozen strings; colliding keys
    /// share a bucket, so a collision costs a comparison, never a wrong series.
    hasher: foldhash::fast::RandomState,
}

fn with_series(c: &Cached) -> Event {
    let mut e = Event::clone(&c.event);
    if let Some((count, _, at)) = c.series {
        e.series = Some(EventSeries {
            count,
            last_observed_time: MicroTime(at),
        });
    }
    e
}

impl SeriesCache {
    /// Record one occurrence of `event` at `now` (`wall` for the wire); returns the write
    /// to make, if any (`recordToSink`).
    pub fn record(&mut self, event: Event, now: Instant, wall: Timestamp) -> Option<EventWrite> {
        use std::hash::BuildHasher;
        let key = key_parts(&event);
        let hash = self.hasher.hash_one(key);
        // One slot: buckets almost always hold one event (a `Vec`'s first growth would
        // reserve four).
        let bucket = self
            .events
            .entry(hash)
            .or_insert_with(|| Vec::with_capacity(1));
        if let Some(c) = bucket.iter_mut().find(|c| key_parts(&c.event) == key) {
            return match &mut c.series {
                Some((count, last, at)) => {
                    *count = count.saturating_add(1);
                    *last = now;
                    *at = wall;
                    None
                }
                None => {
                    c.series = Some((2, now, wall));
                    Some(EventWrite::PatchSeries(with_series(c)))
                }
            };
        }
        let event = Arc::new(event);
        bucket.push(Cached {
            event: event.clone(),
            first: now,
            series: None,
        });
        self.len += 1;
        Some(EventWrite::Create(event))
    }

    /// Series last observed [`FINISH_TIME`] ago or more: their final counts, removed from the
    /// cache; singletons that old are dropped (`finishSeries`).
    pub fn finish(&mut self, now: Instant) -> Vec<EventWrite> {
        let mut out = Vec::new();
        self.events.retain(|_, bucket| {
            bucket.retain(|c| match c.series {
                Some((_, last, _)) if now.duration_since(last) >= FINISH_TIME => {
                    out.push(EventWrite::PatchSeries(with_series(c)));
                    false
                }
                Some(_) => true,
                None => now.duration_since(c.first) < FINISH_TIME,
            });
            !bucket.is_empty()
        });
        self.len = self.events.values().map(Vec::len).sum();
        out
    }

    /// Every open series, to be written again (`refreshExistingEventSeries`).
    pub fn refresh(&self) -> Vec<EventWrite> {
        self.events
            .values()
            .flatten()
            .filter(|c| c.series.is_some())
            .map(|c| EventWrite::PatchSeries(with_series(c)))
            .collect()
    }

    /// Events cached.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No event cached.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A pod named by its identity ([`EventRecorder::publish_for_pod_named`]).
#[derive(Debug, Clone, Copy)]
pub struct PodIdentity<'a> {
    /// `metadata.namespace`.
    pub namespace: &'a str,
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.uid` (empty: unknown).
    pub uid: &'a str,
    /// `spec.schedulerName` (empty: none).
    pub scheduler_name: &'a str,
}

/// What an Event is about: its `regarding`, the name its own name starts with, its namespace,
/// and the controller reporting it.
struct About<'a> {
    regarding: core::ObjectReference,
    name: &'a str,
    namespace: String,
    controller: &'a str,
}

/// Writes Events for the scheduler: `reportingController` = scheduler name,
/// `reportingInstance` = replica identity, names `<object>.<hex nanoseconds>` as client-go's
/// `generateEvent`. Cheap to clone (the cache is shared).
#[derive(Clone)]
pub struct EventRecorder {
    client: Client,
    controller: String,
    instance: String,
    cache: Arc<Mutex<SeriesCache>>,
}

impl EventRecorder {
    /// A recorder writing through `client`.
    pub fn new(client: Client, controller: String, instance: String) -> EventRecorder {
        EventRecorder {
            client,
            controller,
            instance,
            cache: Arc::new(Mutex::new(SeriesCache::default())),
        }
    }

    /// The recorder for the pods of the profile named `controller` (kube-scheduler gives each
    /// profile a recorder named after its scheduler): the same client, instance and series
    /// cache (series are keyed by their `reportingController`).
    pub fn reporting_as(&self, controller: &str) -> EventRecorder {
        EventRecorder {
            controller: controller.to_string(),
            ..self.clone()
        }
    }

    /// The recorder for events about `pod`: reporting as the pod's `spec.schedulerName` (the
    /// profile that schedules it), or as this recorder's controller if it has none.
    pub fn for_pod(&self, pod: &core::Pod) -> EventRecorder {
        match self.controller_for(pod.spec.as_ref().and_then(|s| s.scheduler_name.as_deref())) {
            Some(name) => self.reporting_as(name),
            None => self.clone(),
        }
    }

    /// The controller events about a pod with `spec.schedulerName` `scheduler_name` report as,
    /// when it is another than this recorder's ([`EventRecorder::for_pod`]).
    fn controller_for<'a>(&self, scheduler_name: Option<&'a str>) -> Option<&'a str> {
        scheduler_name.filter(|name| !name.is_empty() && *name != self.controller)
    }

    fn cache(&self) -> MutexGuard<'_, SeriesCache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The Event for one occurrence regarding `pod`.
    fn event(
        &self,
        pod: &core::Pod,
        type_: &str,
        reason: &str,
        action: &str,
        note: String,
    ) -> Event {
        let about = About {
            regarding: pod.object_ref(&()),
            name: &pod.name_any(),
            namespace: pod.namespace().unwrap_or_else(|| "default".into()),
            controller: &self.controller,
        };
        self.event_about(about, type_, reason, action, note)
    }

    /// The Event for one occurrence regarding `about`.
    fn event_about(
        &self,
        about: About<'_>,
        type_: &str,
        reason: &str,
        action: &str,
        note: String,
    ) -> Event {
        let mut note = note;
        if note.len() > EVENT_NOTE_MAX {
            let mut cut = EVENT_NOTE_MAX;
            while !note.is_char_boundary(cut) {
                cut -= 1;
            }
            note.truncate(cut);
        }
        let now = Timestamp::now();
        Event {
            metadata: ObjectMeta {
                name: Some(event_name(about.name, now.as_nanosecond())),
                namespace: Some(about.namespace),
                ..Default::default()
            },
            event_time: Some(MicroTime(now)),
            action: Some(action.into()),
            reason: Some(reason.into()),
            note: Some(note),
            type_: Some(type_.into()),
            regarding: Some(about.regarding),
            reporting_controller: Some(about.controller.to_owned()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        }
    }

    /// [`EventRecorder::for_pod`] then [`EventRecorder::publish`] for a pod known by its
    /// identity alone (the `Scheduled` event of a pod just bound): `regarding` is
    /// `v1/Pod namespace/name` with `uid` (none when empty), as kube's `object_ref` of that
    /// pod's object, and nothing is cloned or decoded beyond the Event itself.
    #[allow(clippy::too_many_arguments)]
    pub async fn publish_for_pod_named<A, F>(
        &self,
        pod: PodIdentity<'_>,
        type_: &str,
        reason: &str,
        action: &str,
        note: String,
        admit: A,
    ) where
        A: FnMut() -> F,
        F: Future<Output = bool>,
    {
        let about = About {
            regarding: core::ObjectReference {
                api_version: Some(<core::Pod as Resource>::api_version(&()).into_owned()),
                kind: Some(<core::Pod as Resource>::kind(&()).into_owned()),
                name: Some(pod.name.to_owned()),
                namespace: Some(pod.namespace.to_owned()),
                uid: (!pod.uid.is_empty()).then(|| pod.uid.to_owned()),
                ..Default::default()
            },
            name: pod.name,
            namespace: pod.namespace.to_owned(),
            controller: self
                .controller_for(Some(pod.scheduler_name))
                .unwrap_or(&self.controller),
        };
        let ev = self.event_about(about, type_, reason, action, note);
        self.record(ev, admit).await;
    }

    /// Record one occurrence: create it, start its series, or only count it. The write, if
    /// any, is made as [`EventRecorder::write`] makes it, each request admitted by `admit`.
    pub async fn publish<A, F>(
        &self,
        pod: &core::Pod,
        type_: &str,
        reason: &str,
        action: &str,
        note: String,
        admit: A,
    ) where
        A: FnMut() -> F,
        F: Future<Output = bool>,
    {
        let ev = self.event(pod, type_, reason, action, note);
        self.record(ev, admit).await;
    }

    /// [`EventRecorder::publish`] with a `related` object (the preemptor of a `Preempted`
    /// event, v1.22 `PrepareCandidate`'s `Eventf(victim, pod, ...)`).
    #[allow(clippy::too_many_arguments)]
    pub async fn publish_related<A, F>(
        &self,
        pod: &core::Pod,
        related: &core::Pod,
        type_: &str,
        reason: &str,
        action: &str,
        note: String,
        admit: A,
    ) where
        A: FnMut() -> F,
        F: Future<Output = bool>,
    {
        let mut ev = self.event(pod, type_, reason, action, note);
        ev.related = Some(related.object_ref(&()));
        self.record(ev, admit).await;
    }

    /// Records one occurrence of `ev` in the series cache and makes the write it calls for,
    /// if any ([`EventRecorder::write`], each request admitted by `admit`): the common tail of
    /// the `publish*` methods.
    async fn record<A, F>(&self, ev: Event, admit: A)
    where
        A: FnMut() -> F,
        F: Future<Output = bool>,
    {
        let write = self.cache().record(ev, Instant::now(), Timestamp::now());
        if let Some(w) = write {
            self.write(w, admit).await;
        }
    }

    /// The writes due now from the periodic finish (and, when `refresh`, of every series).
    pub fn housekeeping(&self, refresh: bool) -> Vec<EventWrite> {
        let mut cache = self.cache();
        let mut out = cache.finish(Instant::now());
        if refresh {
            out.extend(cache.refresh());
        }
        out
    }

    /// Perform one write; failures are logged at debug level and dropped.
    ///
    /// `admit` is awaited right before each request (the `PATCH`, and the `POST` that replaces
    /// an Event the `PATCH` found gone) and the request is sent only if it returns `true`: the
    /// scheduler takes the rate-limit token, then checks the leadership fence there (see
    /// [`super::ratelimit`]).
    pub async fn write<A, F>(&self, w: EventWrite, mut admit: A)
    where
        A: FnMut() -> F,
        F: Future<Output = bool>,
    {
        if !admit().await {
            return;
        }
        let ev = match w {
            // The cache's Event as is: ours carry no resourceVersion (one that did is created
            // without it, on a copy, as after a patch below).
            EventWrite::Create(ev) if ev.metadata.resource_version.is_none() => ev,
            EventWrite::Create(ev) => {
                let mut copy = Event::clone(&ev);
                copy.metadata.resource_version = None;
                Arc::new(copy)
            }
            EventWrite::PatchSeries(mut ev) => {
                let ns = ev.metadata.namespace.as_deref().unwrap_or_default();
                let name = ev.metadata.name.as_deref().unwrap_or_default();
                let api = Api::<Event>::namespaced(self.client.clone(), ns);
                let body = serde_json::json!({"series": ev.series});
                match api
                    .patch(name, &PatchParams::default(), &Patch::Strategic(&body))
                    .await
                {
                    Ok(_) => return,
                    Err(kube::Error::Api(s)) if s.code == 404 => {}
                    Err(e) => {
                        debug!(error = %e, event = %name, "Patching event series failed");
                        return;
                    }
                }
                // A second request: admitted on its own (the fence may have failed meanwhile).
                if !admit().await {
                    return;
                }
                ev.metadata.resource_version = None;
                Arc::new(ev)
            }
        };
        let ns = ev.metadata.namespace.as_deref().unwrap_or_default();
        if let Err(e) = create_event(&self.client, ns, &ev).await {
            let name = ev.metadata.name.as_deref().unwrap_or_default();
            debug!(error = %e, event = %name, reason = ?ev.reason, "Recording event failed");
        }
    }
}

/// `<object>.<hex nanoseconds>`, client-go's `generateEvent` name (`fmt.Sprintf("%v.%x",
/// ref.Name, t.UnixNano())`), written into a `String` allocated once at its final size (a
/// `format!` grows its buffer as it writes).
fn event_name(object: &str, nanos: i128) -> String {
    use std::fmt::Write;
    // `.` and at most 32 hex digits (an `i128` is hex-formatted as its 128 bits).
    let mut name = String::with_capacity(object.len() + 33);
    let _ = write!(name, "{object}.{nanos:x}");
    name
}

/// The JSON body of `ev`'s `POST`: byte for byte `serde_json::to_vec(ev)` (k8s-openapi's
/// `Event` serialisation), written through [`EventJson`] into a buffer sized once from the
/// event's strings instead of one grown from 128 bytes by reallocations.
///
/// # Errors
/// serde_json's error (none is expected).
fn event_body(ev: &Event) -> serde_json::Result<Vec<u8>> {
    fn len(s: &Option<String>) -> usize {
        s.as_ref().map_or(0, String::len)
    }
    fn ref_len(r: &Option<core::ObjectReference>) -> usize {
        r.as_ref().map_or(0, |r| {
            // The field names and punctuation of a full reference, and its strings.
            120 + len(&r.api_version)
                + len(&r.kind)
                + len(&r.namespace)
                + len(&r.name)
                + len(&r.uid)
                + len(&r.field_path)
                + len(&r.resource_version)
        })
    }
    // The field names, punctuation, eventTime and the metadata's names (the usual fields:
    // anything else the buffer grows for).
    let estimate = 320
        + len(&ev.metadata.name)
        + len(&ev.metadata.namespace)
        + len(&ev.action)
        + len(&ev.reason)
        + len(&ev.note)
        + len(&ev.type_)
        + len(&ev.reporting_controller)
        + len(&ev.reporting_instance)
        + ref_len(&ev.regarding)
        + ref_len(&ev.related);
    let mut body = Vec::with_capacity(estimate);
    serde_json::to_writer(&mut body, &EventJson(ev))?;
    Ok(body)
}

/// An `Event` serialised as k8s-openapi serialises it (the same fields, in the same order,
/// through the same `Serialize` impls), except `eventTime`, written by [`WireMicroTime`]
/// without k8s-openapi's per-event parse of its `strftime` pattern.
struct EventJson<'a>(&'a Event);

impl serde::Serialize for EventJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let e = self.0;
        let n = |present: bool| usize::from(present);
        let mut state = serializer.serialize_struct(
            <Event as k8s_openapi::Resource>::KIND,
            3 + n(e.action.is_some())
                + n(e.deprecated_count.is_some())
                + n(e.deprecated_first_timestamp.is_some())
                + n(e.deprecated_last_timestamp.is_some())
                + n(e.deprecated_source.is_some())
                + n(e.event_time.is_some())
                + n(e.note.is_some())
                + n(e.reason.is_some())
                + n(e.regarding.is_some())
                + n(e.related.is_some())
                + n(e.reporting_controller.is_some())
                + n(e.reporting_instance.is_some())
                + n(e.series.is_some())
                + n(e.type_.is_some()),
        )?;
        state.serialize_field("apiVersion", <Event as k8s_openapi::Resource>::API_VERSION)?;
        state.serialize_field("kind", <Event as k8s_openapi::Resource>::KIND)?;
        if let Some(v) = &e.action {
            state.serialize_field("action", v)?;
        }
        if let Some(v) = &e.deprecated_count {
            state.serialize_field("deprecatedCount", v)?;
        }
        if let Some(v) = &e.deprecated_first_timestamp {
            state.serialize_field("deprecatedFirstTimestamp", v)?;
        }
        if let Some(v) = &e.deprecated_last_timestamp {
            state.serialize_field("deprecatedLastTimestamp", v)?;
        }
        if let Some(v) = &e.deprecated_source {
            state.serialize_field("deprecatedSource", v)?;
        }
        if let Some(v) = &e.event_time {
            state.serialize_field("eventTime", &WireMicroTime(v))?;
        }
        state.serialize_field("metadata", &e.metadata)?;
        if let Some(v) = &e.note {
            state.serialize_field("note", v)?;
        }
        if let Some(v) = &e.reason {
            state.serialize_field("reason", v)?;
        }
        if let Some(v) = &e.regarding {
            state.serialize_field("regarding", v)?;
        }
        if let Some(v) = &e.related {
            state.serialize_field("related", v)?;
        }
        if let Some(v) = &e.reporting_controller {
            state.serialize_field("reportingController", v)?;
        }
        if let Some(v) = &e.reporting_instance {
            state.serialize_field("reportingInstance", v)?;
        }
        if let Some(v) = &e.series {
            state.serialize_field("series", v)?;
        }
        if let Some(v) = &e.type_ {
            state.serialize_field("type", v)?;
        }
        state.end()
    }
}

/// A `MicroTime` as k8s-openapi writes it (`%Y-%m-%dT%H:%M:%S%.6fZ` in UTC, the fraction
/// truncated to microseconds), printed by jiff's RFC 3339 printer at six digits for the years
/// 1000 to 9999 (k8s-openapi parses its `strftime` pattern for every event) and by k8s-openapi
/// itself otherwise.
struct WireMicroTime<'a>(&'a MicroTime);

impl serde::Serialize for WireMicroTime<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use k8s_openapi::jiff::fmt::temporal::DateTimePrinter;
        const PRINTER: DateTimePrinter = DateTimePrinter::new().precision(Some(6));
        let year = k8s_openapi::jiff::tz::Offset::UTC
            .to_datetime(self.0.0)
            .year();
        // `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
        let mut text = String::with_capacity(27);
        if !(1000..=9999).contains(&year) || PRINTER.print_timestamp(&self.0.0, &mut text).is_err()
        {
            return serde::Serialize::serialize(self.0, serializer);
        }
        serializer.serialize_newtype_struct("MicroTime", &text)
    }
}

/// `POST` an Event without decoding the created object the API server answers with (nothing
/// reads it; decoding it was a noticeable share of the scheduler's CPU per bound pod). Errors
/// are the API's `Status`, as with [`Api::create`]. The request is [`event_post`]'s.
async fn create_event(client: &Client, ns: &str, ev: &Event) -> kube::Result<()> {
    let body = event_body(ev).map_err(kube::Error::SerdeError)?;
    client.request_text(event_post(ns, body)?).await.map(drop)
}

/// The `POST` of an Event in `ns`: the request of `Api::<Event>::namespaced(ns).create` with
/// default `PostParams` (kube-core's `Request::create` on `<Event as Resource>::url_path`:
/// `/apis/events.k8s.io/v1/namespaces/{ns}/events?`, content type `application/json`), its
/// URL written in one allocation instead of three `format!`s and a query serializer.
///
/// # Errors
/// The URL is no URI (kube-core's `BuildRequest`, as from `Request::create`).
fn event_post(ns: &str, body: Vec<u8>) -> kube::Result<http::Request<Vec<u8>>> {
    const PREFIX: &str = "/apis/events.k8s.io/v1/namespaces/";
    const SUFFIX: &str = "/events?";
    let mut url = String::with_capacity(PREFIX.len() + ns.len() + SUFFIX.len());
    url.push_str(PREFIX);
    url.push_str(ns);
    url.push_str(SUFFIX);
    json_post(url, body)
}

/// `POST url` with a JSON `body`, as kube-core's `Request::create*` builds it (the
/// `Content-Type: application/json` header and nothing else).
///
/// # Errors
/// `url` is no URI (kube-core's `BuildRequest`).
pub(super) fn json_post(url: String, body: Vec<u8>) -> kube::Result<http::Request<Vec<u8>>> {
    http::Request::post(url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body)
        .map_err(|e| kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e)))
}

/// Test support for the hand-built POSTs ([`event_post`], `binder::binding_post`): `got` is
/// the request kube-core built as `want` (method, URI, headers, version, body), or both failed
/// with the same error; `what` names the case in a failure.
#[cfg(test)]
pub(super) fn assert_same_post(
    got: kube::Result<http::Request<Vec<u8>>>,
    want: Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    what: &str,
) {
    match (got, want) {
        (Ok(got), Ok(want)) => {
            assert_eq!(got.method(), want.method(), "{what}");
            assert_eq!(got.uri(), want.uri(), "{what}");
            assert_eq!(got.headers(), want.headers(), "{what}");
            assert_eq!(got.version(), want.version(), "{what}");
            assert_eq!(got.body(), want.body(), "{what}");
        }
        (Err(got), Err(want)) => assert_eq!(
            got.to_string(),
            kube::Error::BuildRequest(want).to_string(),
            "{what}"
        ),
        (got, want) => panic!("{what:?}: {got:?} vs {want:?}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use kube::api::PostParams;

    /// The event of upstream's tests: regarding `baz/foo` (uid `bar`) `.spec.containers[1]`,
    /// related `.spec.containers[0]`, controller `eventTest`, action `started`, reason `test`.
    fn expected_event() -> Event {
        let part = |field: &str| core::ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some("baz".into()),
            name: Some("foo".into()),
            uid: Some("bar".into()),
            field_path: Some(field.into()),
            ..Default::default()
        };
        Event {
            metadata: ObjectMeta {
                name: Some("foo".into()),
                namespace: Some("baz".into()),
                ..Default::default()
            },
            event_time: Some(MicroTime(Timestamp::now())),
            reporting_controller: Some("eventTest".into()),
            reporting_instance: Some("eventTest-host".into()),
            action: Some("started".into()),
            reason: Some("test".into()),
            regarding: Some(part(".spec.containers[1]")),
            related: Some(part(".spec.containers[0]")),
            note: Some("some verbose message: 1".into()),
            type_: Some("Normal".into()),
            ..Default::default()
        }
    }

    fn series_count(w: &EventWrite) -> Option<i32> {
        match w {
            EventWrite::PatchSeries(e) => e.series.as_ref().map(|s| s.count),
            EventWrite::Create(_) => None,
        }
    }

    /// client-go `TestEventSeriesf` (tools/events/eventseries_test.go @
    /// 025f2834a128798cef30018a5e6a6ae82b5ad885): after a first event populates the cache, an
    /// isomorphic one is a patch with `series.count = 2` on the first Event's name; a
    /// non-isomorphic one (action `stopped`) is a create without series. Then (ours): later
    /// isomorphic events are only counted, and the note is not part of the key.
    #[tokio::test(start_paused = true)]
    async fn test_event_seriesf() {
        let mut c = SeriesCache::default();
        let now = Instant::now();
        let wall = Timestamp::now();
        let ev = expected_event();
        let first = c.record(ev.clone(), now, wall);
        assert_eq!(first, Some(EventWrite::Create(ev.into())));

        let isomorphic = expected_event();
        let w = c.record(isomorphic, now, wall).unwrap();
        assert_eq!(series_count(&w), Some(2));
        let EventWrite::PatchSeries(e) = &w else {
            unreachable!()
        };
        assert!(e.metadata.name.as_deref().unwrap().starts_with("foo"));

        let mut non_isomorphic = expected_event();
        non_isomorphic.action = Some("stopped".into());
        let w = c.record(non_isomorphic.clone(), now, wall).unwrap();
        assert_eq!(w, EventWrite::Create(non_isomorphic.into()));
        assert_eq!(series_count(&w), None);

        let mut other_note = expected_event();
        other_note.note = Some("some verbose message: 2".into());
        for _ in 0..5 {
            assert_eq!(
                c.record(other_note.clone(), now, wall),
                None,
                "counted only"
            );
        }
        let refresh = c.refresh();
        assert_eq!(refresh.len(), 1);
        assert_eq!(series_count(&refresh[0]), Some(7));
        let EventWrite::PatchSeries(e) = &refresh[0] else {
            unreachable!()
        };
        assert_eq!(e.note.as_deref(), Some("some verbose message: 1"));
    }

    /// client-go `TestFinishSeries` (same file): a series last observed 9 minutes ago is
    /// patched once with its count and leaves the cache; a fresh singleton of another
    /// controller stays (cache size 1).
    #[tokio::test(start_paused = true)]
    async fn test_finish_series() {
        let mut c = SeriesCache::default();
        let t0 = Instant::now();
        let wall = Timestamp::now();
        for _ in 0..10 {
            c.record(expected_event(), t0, wall);
        }
        let now = t0 + Duration::from_secs(9 * 60);
        let mut non_finished = expected_event();
        non_finished.reporting_controller = Some("nonFinished-controller".into());
        c.record(non_finished, now, wall);
        let done = c.finish(now);
        assert_eq!(done.len(), 1, "exactly one event emitted");
        assert_eq!(series_count(&done[0]), Some(10));
        assert_eq!(c.len(), 1);
    }

    /// client-go `TestRefreshExistingEventSeries` (same file): a cached series is patched and
    /// stays cached. (Ours: a singleton is not written by the refresh.)
    #[tokio::test(start_paused = true)]
    async fn test_refresh_existing_event_series() {
        let mut c = SeriesCache::default();
        let t0 = Instant::now();
        let wall = Timestamp::now();
        for _ in 0..10 {
            c.record(expected_event(), t0, wall);
        }
        let mut singleton = expected_event();
        singleton.reason = Some("other".into());
        c.record(singleton, t0, wall);
        let refreshed = c.refresh();
        assert_eq!(refreshed.len(), 1, "exactly one event emitted");
        assert_eq!(series_count(&refreshed[0]), Some(10));
        assert_eq!(c.len(), 2, "cache keeps its size");
    }

    /// A client whose API answers `PATCH` with 404 (the Event is gone) and `POST` with 201;
    /// records each request's method.
    fn gone_event_client() -> (Client, Arc<Mutex<Vec<http::Method>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            log.lock().unwrap().push(req.method().clone());
            let (status, body) = if req.method() == http::Method::PATCH {
                (
                    404,
                    r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"events.events.k8s.io \"foo.1\" not found","reason":"NotFound","code":404}"#,
                )
            } else {
                (201, r#"{"kind":"Event","apiVersion":"events.k8s.io/v1"}"#)
            };
            let resp = http::Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(http_body_util::Full::new(bytes::Bytes::from(body)))
                .unwrap();
            std::future::ready(Ok::<_, std::convert::Infallible>(resp))
        });
        (Client::new(svc, "default"), seen)
    }

    /// A series PATCH that finds its Event gone creates it anew, and that `POST` is a second
    /// write: admitted on its own, right before it. Before the fix the `POST` followed the 404
    /// without a token or a fence check (a leader deposed during the PATCH still wrote).
    #[tokio::test]
    async fn create_after_a_gone_series_is_admitted_on_its_own() {
        let (client, seen) = gone_event_client();
        let recorder = EventRecorder::new(client, "sched".into(), "me".into());
        let w = EventWrite::PatchSeries(expected_event());
        // Admitted once: the PATCH goes, the POST does not.
        let mut admissions = 0;
        recorder
            .write(w.clone(), || {
                admissions += 1;
                std::future::ready(admissions == 1)
            })
            .await;
        assert_eq!(admissions, 2, "asked before each request");
        assert_eq!(*seen.lock().unwrap(), [http::Method::PATCH]);
        // Admitted twice: PATCH, 404, POST.
        seen.lock().unwrap().clear();
        recorder.write(w, || std::future::ready(true)).await;
        assert_eq!(
            *seen.lock().unwrap(),
            [http::Method::PATCH, http::Method::POST]
        );
        // Not admitted: nothing is sent.
        seen.lock().unwrap().clear();
        recorder
            .write(EventWrite::Create(expected_event().into()), || {
                std::future::ready(false)
            })
            .await;
        assert!(seen.lock().unwrap().is_empty());
    }

    /// The event name is `format!("{object}.{nanos:x}")`, the way it was built before
    /// [`event_body`] is byte for byte `serde_json::to_vec` of the Event (k8s-openapi's
    /// serialisation, as the `POST` body was written before): every field set or not,
    /// strings needing escapes, and event times over the years (whole seconds, the last
    /// nanosecond of a second, before the epoch, the years k8s-openapi formats itself).
    #[test]
    fn event_body_is_serde_jsons_event() {
        use k8s_openapi::api::core::v1::EventSource;
        let odd = "q\"uo\\te\n\u{1}\u{7f}é🙂/<>&";
        let mut times: Vec<Timestamp> = [
            0,
            1,
            -1,
            999_999_999,
            1_000_000_000,
            1_764_658_800_123_456_789,
            1_764_658_800_000_000_000,
            1_764_658_799_999_999_999,
            -1_000_000_000_000_000_000,
        ]
        .into_iter()
        .map(|n| Timestamp::from_nanosecond(n).unwrap())
        .collect();
        for year in [-9999, -1, 0, 1, 999, 1000, 1999, 2026, 9999] {
            let dt = k8s_openapi::jiff::civil::date(year, 6, 30).at(23, 59, 59, 999_999_999);
            times.push(
                dt.to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC)
                    .unwrap()
                    .timestamp(),
            );
            let dt = k8s_openapi::jiff::civil::date(year, 7, 1).at(0, 0, 0, 1_000);
            times.push(
                dt.to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC)
                    .unwrap()
                    .timestamp(),
            );
        }
        times.extend([Timestamp::MIN, Timestamp::MAX, Timestamp::now()]);
        let mut x: i64 = 0x1234_5678;
        for _ in 0..300 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let secs = x.rem_euclid(253_402_300_799);
            let nanos = i32::try_from((x >> 7).rem_euclid(1_000_000_000)).unwrap();
            times.push(Timestamp::new(secs, nanos).unwrap());
        }
        let mut events = Vec::new();
        for (i, t) in times.iter().enumerate() {
            let mut ev = expected_event();
            ev.event_time = Some(MicroTime(*t));
            match i % 4 {
                0 => {}
                1 => {
                    ev.related = None;
                    ev.series = Some(EventSeries {
                        count: 7,
                        last_observed_time: MicroTime(*t),
                    });
                    ev.metadata.resource_version = Some("12".into());
                }
                2 => {
                    ev.note = Some(odd.into());
                    ev.metadata.name = Some(odd.into());
                    ev.metadata.namespace = Some(odd.into());
                    ev.reporting_instance = Some(odd.into());
                    ev.deprecated_count = Some(3);
                    ev.deprecated_first_timestamp =
                        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(*t));
                    ev.deprecated_last_timestamp =
                        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(*t));
                    ev.deprecated_source = Some(EventSource {
                        component: Some("c".into()),
                        host: Some(odd.into()),
                    });
                }
                _ => {
                    ev.event_time = None;
                    ev.action = None;
                    ev.reason = None;
                    ev.note = None;
                    ev.regarding = None;
                    ev.related = None;
                    ev.type_ = None;
                    ev.reporting_controller = None;
                }
            }
            events.push(ev);
        }
        events.push(Event::default());
        for ev in &events {
            let want = serde_json::to_vec(ev).unwrap();
            let got = event_body(ev).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want)
            );
        }
    }

    /// The `POST` of a created Event carries `serde_json::to_vec` of that Event (as before the
    /// write shared the cache's copy and sized its buffer), at the events URL of its
    /// namespace; the `Scheduled` event of a pod named by its identity is the one built from
    /// the pod object.
    #[tokio::test]
    async fn created_event_is_posted_as_serde_json_writes_it() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let log = log.clone();
            async move {
                let (parts, body) = req.into_parts();
                let bytes = http_body_util::BodyExt::collect(body)
                    .await
                    .unwrap()
                    .to_bytes();
                log.lock()
                    .unwrap()
                    .push((parts.method, parts.uri.to_string(), bytes.to_vec()));
                let resp = http::Response::builder()
                    .status(201)
                    .header("content-type", "application/json")
                    .body(http_body_util::Full::new(bytes::Bytes::from_static(
                        br#"{"kind":"Event","apiVersion":"events.k8s.io/v1"}"#,
                    )))
                    .unwrap();
                Ok::<_, std::convert::Infallible>(resp)
            }
        });
        let recorder = EventRecorder::new(Client::new(svc, "default"), "sched".into(), "me".into());
        let ev = expected_event();
        recorder
            .write(EventWrite::Create(ev.clone().into()), || {
                std::future::ready(true)
            })
            .await;
        let mut with_version = ev.clone();
        with_version.metadata.resource_version = Some("9".into());
        recorder
            .write(EventWrite::Create(with_version.into()), || {
                std::future::ready(true)
            })
            .await;
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2);
        for (method, uri, body) in &seen {
            assert_eq!(*method, http::Method::POST);
            assert_eq!(uri, "/apis/events.k8s.io/v1/namespaces/baz/events?");
            assert_eq!(
                String::from_utf8_lossy(body),
                String::from_utf8_lossy(&serde_json::to_vec(&ev).unwrap()),
                "the resourceVersion is cleared"
            );
        }
    }

    /// The request of an Event's `POST` is kube-core's `Request::create` on
    /// `<Event as Resource>::url_path` with default `PostParams` (as before [`event_post`]):
    /// method, URI, headers, body; and a namespace that makes no URI fails both ways.
    #[test]
    fn event_post_is_kube_cores_create() {
        for ns in [
            "default",
            "kube-system",
            "a.b-c",
            "ns%20x",
            "é",
            "has space",
            "q?x",
            "",
        ] {
            let body = br#"{"kind":"Event"}"#.to_vec();
            let want = kube::core::Request::new(<Event as Resource>::url_path(&(), Some(ns)))
                .create(&PostParams::default(), body.clone());
            assert_same_post(event_post(ns, body), want, ns);
        }
    }

    /// Singletons leave the cache `finishTime` after they were recorded; a series not yet
    /// quiet for `finishTime` stays; a recurrence after its series finished starts afresh.
    #[tokio::test(start_paused = true)]
    async fn singletons_expire_and_finished_series_start_afresh() {
        let mut c = SeriesCache::default();
        let t0 = Instant::now();
        let wall = Timestamp::now();
        c.record(expected_event(), t0, wall);
        c.record(expected_event(), t0 + Duration::from_secs(60), wall);
        let mut single = expected_event();
        single.reason = Some("Scheduled".into());
        c.record(single, t0, wall);
        assert!(c.finish(t0 + FINISH_TIME).is_empty());
        assert_eq!(c.len(), 1, "the singleton left, the series stays");
        assert_eq!(
            c.finish(t0 + Duration::from_secs(60) + FINISH_TIME).len(),
            1
        );
        assert!(c.is_empty());
        assert!(matches!(
            c.record(expected_event(), t0 + Duration::from_secs(1000), wall),
            Some(EventWrite::Create(_))
        ));
    }
}
