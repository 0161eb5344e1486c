//! kube-scheduler's metrics, by their v1.22 names, labels and buckets
//! (`pkg/scheduler/metrics/metrics.go`):
//!
//! - `scheduler_schedule_attempts_total{result,profile}`;
//! - `scheduler_e2e_scheduling_duration_seconds{result,profile}` (v1.22; its v1.23 successor
//!   `scheduler_scheduling_attempt_duration_seconds{result,profile}` is served too, observed
//!   with the same value), buckets `ExponentialBuckets(0.001, 2, 15)`;
//! - `scheduler_pod_scheduling_duration_seconds{attempts}` (from the pod's first entry into
//!   the queue to its binding; `attempts` is `1`..`14` or `15+`), `ExponentialBuckets(0.01, 2,
//!   20)`, and `scheduler_pod_scheduling_attempts` (attempts of each bound pod),
//!   `ExponentialBuckets(1, 2, 5)`;
//! - `scheduler_pending_pods{queue}`, `scheduler_queue_incoming_pods_total{queue,event}`;
//! - `scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}`,
//!   `ExponentialBuckets(0.0001, 2, 12)`;
//! - `scheduler_scheduler_cache_size{type}` (`nodes`, `pods`, `assumed_pods`);
//! - `scheduler_preemption_attempts_total` (every DefaultPreemption PostFilter call) and
//!   `scheduler_preemption_victims` (victims of each carried-out preemption),
//!   `LinearBuckets(5, 5, 10)`;
//!
//! client-go's `rest_client_requests_total{code,method,host}` and
//! `rest_client_request_duration_seconds{verb,url}` (`ExponentialBuckets(0.001, 2, 10)`,
//! component-base v0.22 `metrics/prometheus/restclient`) from a tower layer on the kube
//! client ([`RestClientMetrics::layer`]); and one of ours,
//! `scheduler_leader_read_barrier_duration_seconds` (no upstream equivalent: kube-scheduler
//! schedules from whatever its informers hold when it starts leading).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
};
use tower::{Layer, Service};

/// Buckets of `scheduler_e2e_scheduling_duration_seconds` and
/// `scheduler_scheduling_attempt_duration_seconds`: 1 ms doubling 15 times.
pub const ATTEMPT_BUCKETS: (f64, f64, usize) = (0.001, 2.0, 15);
/// Buckets of `scheduler_pod_scheduling_duration_seconds`: 10 ms doubling 20 times (~88 min).
pub const POD_SCHEDULING_BUCKETS: (f64, f64, usize) = (0.01, 2.0, 20);
/// Buckets of `scheduler_pod_scheduling_attempts`: 1, 2, 4, 8, 16.
pub const POD_ATTEMPTS_BUCKETS: (f64, f64, usize) = (1.0, 2.0, 5);
/// Buckets of `scheduler_framework_extension_point_duration_seconds`: 0.1 ms doubling 12
/// times (~200 ms).
pub const EXTENSION_POINT_BUCKETS: (f64, f64, usize) = (0.0001, 2.0, 12);
/// Buckets of `rest_client_request_duration_seconds`: 1 ms doubling 10 times (512 ms).
pub const REST_CLIENT_BUCKETS: (f64, f64, usize) = (0.001, 2.0, 10);

fn buckets((start, factor, count): (f64, f64, usize)) -> Result<Vec<f64>, prometheus::Error> {
    prometheus::exponential_buckets(start, factor, count)
}

/// The scheduler's metric families, registered into one registry.
#[derive(Clone)]
pub struct SchedulerMetrics {
    /// Attempts by result (`scheduled`, `unschedulable`, `error`) and profile.
    pub schedule_attempts: IntCounterVec,
    /// Seconds per scheduling attempt (algorithm + assume), by result and profile: v1.23's
    /// name. Observe through [`SchedulerMetrics::observe_attempt`].
    pub scheduling_attempt_duration: HistogramVec,
    /// The same seconds under v1.22's name, `scheduler_e2e_scheduling_duration_seconds`.
    pub e2e_scheduling_duration: HistogramVec,
    /// Seconds from a pod's first entry into the queue to its binding, by attempts.
    pub pod_scheduling_duration: HistogramVec,
    /// Scheduling attempts each bound pod needed.
    pub pod_scheduling_attempts: Histogram,
    /// Pods per queue (`active`, `backoff`, `unschedulable`).
    pub pending_pods: IntGaugeVec,
    /// Pods added to a queue, by queue and event (`PodAdd`, `ScheduleAttemptFailure`,
    /// `BackoffComplete`, `NodeAdd`, ...): see [`crate::queue::PriorityQueue::incoming_pods`].
    pub queue_incoming_pods: IntCounterVec,
    /// Nodes, pods and assumed pods in the scheduler cache.
    pub cache_size: IntGaugeVec,
    /// Seconds per extension point (`Filter` = PreFilter + Filter, `Score` = PreScore + Score +
    /// NormalizeScore + host selection, `Bind`) per scheduled pod.
    pub extension_point_duration: HistogramVec,
    /// Seconds a new term waited, before its first scheduling cycle, for the read barrier: a
    /// consistent LIST of the assigned pods, at or past the Lease acquisition's resourceVersion,
    /// applied to the cache.
    pub read_barrier_duration: Histogram,
    /// `scheduler_preemption_attempts_total`: DefaultPreemption PostFilter calls, eligible or
    /// not (v1.22 `PreemptionAttempts`).
    pub preemption_attempts: prometheus::IntCounter,
    /// `scheduler_preemption_victims`: the number of victims of each preemption whose
    /// deletions all succeeded (v1.22 `PreemptionVictims`).
    pub preemption_victims: Histogram,
    /// The incoming counts already added to `queue_incoming_pods` (the queue keeps running
    /// totals; each publish adds the difference).
    incoming_published: Arc<Mutex<BTreeMap<(&'static str, &'static str), u64>>>,
}

/// `getAttemptsLabel` (v1.22 `scheduler.go`): `1`..`14`, then `15+` (static strings: no
/// allocation per bound pod).
pub fn attempts_label(attempts: u32) -> &'static str {
    const LABELS: [&str; 15] = [
        "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14",
    ];
    usize::try_from(attempts)
        .ok()
        .and_then(|i| LABELS.get(i))
        .copied()
        .unwrap_or("15+")
}

impl SchedulerMetrics {
    /// Create and register the families.
    ///
    /// # Errors
    /// A prometheus error when a family with the same name is already registered.
    pub fn new(registry: &Registry) -> Result<SchedulerMetrics, prometheus::Error> {
        let m = SchedulerMetrics {
            schedule_attempts: IntCounterVec::new(
                Opts::new(
                    "scheduler_schedule_attempts_total",
                    "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
                ),
                &["result", "profile"],
            )?,
            scheduling_attempt_duration: HistogramVec::new(
                HistogramOpts::new(
                    "scheduler_scheduling_attempt_duration_seconds",
                    "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
                )
                .buckets(buckets(ATTEMPT_BUCKETS)?),
                &["result", "profile"],
            )?,
            e2e_scheduling_duration: HistogramVec::new(
                HistogramOpts::new(
                    "scheduler_e2e_scheduling_duration_seconds",
                    "E2e scheduling latency in seconds (scheduling algorithm + binding)",
                )
                .buckets(buckets(ATTEMPT_BUCKETS)?),
                &["result", "profile"],
            )?,
            pod_scheduling_duration: HistogramVec::new(
                HistogramOpts::new(
                    "scheduler_pod_scheduling_duration_seconds",
                    "E2e latency for a pod being scheduled which may include multiple scheduling attempts.",
                )
                .buckets(buckets(POD_SCHEDULING_BUCKETS)?),
                &["attempts"],
            )?,
            pod_scheduling_attempts: Histogram::with_opts(
                HistogramOpts::new(
                    "scheduler_pod_scheduling_attempts",
                    "Number of attempts to successfully schedule a pod.",
                )
                .buckets(buckets(POD_ATTEMPTS_BUCKETS)?),
            )?,
            pending_pods: IntGaugeVec::new(
                Opts::new(
                    "scheduler_pending_pods",
                    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulableQ.",
                ),
                &["queue"],
            )?,
            queue_incoming_pods: IntCounterVec::new(
                Opts::new(
                    "scheduler_queue_incoming_pods_total",
                    "Number of pods added to scheduling queues by event and queue type.",
                ),
                &["queue", "event"],
            )?,
            cache_size: IntGaugeVec::new(
                Opts::new(
                    "scheduler_scheduler_cache_size",
                    "Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
                ),
                &["type"],
            )?,
            extension_point_duration: HistogramVec::new(
                HistogramOpts::new(
                    "scheduler_framework_extension_point_duration_seconds",
                    "Latency for running all plugins of a specific extension point.",
                )
                .buckets(buckets(EXTENSION_POINT_BUCKETS)?),
                &["extension_point", "status", "profile"],
            )?,
            read_barrier_duration: Histogram::with_opts(
                HistogramOpts::new(
                    "scheduler_leader_read_barrier_duration_seconds",
                    "Time a new leader waited before its first scheduling cycle for its caches to catch up with its Lease acquisition (a consistent LIST of the assigned pods).",
                )
                .buckets(prometheus::exponential_buckets(0.001, 2.0, 16)?),
            )?,
            preemption_attempts: prometheus::IntCounter::new(
                "scheduler_preemption_attempts_total",
                "Total preemption attempts in the cluster till now",
            )?,
            preemption_victims: Histogram::with_opts(
                HistogramOpts::new("scheduler_preemption_victims", "Number of selected preemption victims")
                    .buckets(prometheus::linear_buckets(5.0, 5.0, 10)?),
            )?,
            incoming_published: Arc::default(),
        };
        registry.register(Box::new(m.schedule_attempts.clone()))?;
        registry.register(Box::new(m.scheduling_attempt_duration.clone()))?;
        registry.register(Box::new(m.e2e_scheduling_duration.clone()))?;
        registry.register(Box::new(m.pod_scheduling_duration.clone()))?;
        registry.register(Box::new(m.pod_scheduling_attempts.clone()))?;
        registry.register(Box::new(m.pending_pods.clone()))?;
        registry.register(Box::new(m.queue_incoming_pods.clone()))?;
        registry.register(Box::new(m.cache_size.clone()))?;
        registry.register(Box::new(m.extension_point_duration.clone()))?;
        registry.register(Box::new(m.read_barrier_duration.clone()))?;
        registry.register(Box::new(m.preemption_attempts.clone()))?;
        registry.register(Box::new(m.preemption_victims.clone()))?;
        Ok(m)
    }

    /// One scheduling attempt of `seconds` that ended in `result` (`scheduled`,
    /// `unschedulable`, `error`): `scheduler_schedule_attempts_total` and both attempt-latency
    /// histograms (v1.22's `PodScheduled` / `PodUnschedulable` / `PodScheduleError`).
    pub fn observe_attempt(&self, result: &str, profile: &str, seconds: f64) {
        self.schedule_attempts
            .with_label_values(&[result, profile])
            .inc();
        self.scheduling_attempt_duration
            .with_label_values(&[result, profile])
            .observe(seconds);
        self.e2e_scheduling_duration
            .with_label_values(&[result, profile])
            .observe(seconds);
    }

    /// A pod bound after `attempts` attempts, `since_first_queued` after it first entered
    /// the queue (v1.22 `scheduleOne`'s `PodSchedulingAttempts` and `PodSchedulingDuration`).
    pub fn observe_pod_scheduled(&self, attempts: u32, since_first_queued: Duration) {
        self.pod_scheduling_attempts.observe(f64::from(attempts));
        self.pod_scheduling_duration
            .with_label_values(&[attempts_label(attempts)])
            .observe(since_first_queued.as_secs_f64());
    }

    /// Bring `scheduler_queue_incoming_pods_total` up to the queue's running totals
    /// (`(queue, event) → pods`), adding what changed since the last call.
    pub fn publish_incoming<'a>(
        &self,
        totals: impl IntoIterator<Item = (&'a (&'static str, &'static str), &'a u64)>,
    ) {
        let Ok(mut published) = self.incoming_published.lock() else {
            return;
        };
        for (&(queue, event), &n) in totals {
            let seen = published.entry((queue, event)).or_insert(0);
            if n > *seen {
                self.queue_incoming_pods
                    .with_label_values(&[queue, event])
                    .inc_by(n - *seen);
                *seen = n;
            }
        }
    }

    /// `scheduler_scheduler_cache_size`: `nodes`, `pods` (assumed included) and
    /// `assumed_pods`, as v1.22's `cacheImpl.updateMetrics`.
    pub fn publish_cache_size(&self, nodes: usize, pods: usize, assumed_pods: usize) {
        for (kind, n) in [
            ("nodes", nodes),
            ("pods", pods),
            ("assumed_pods", assumed_pods),
        ] {
            self.cache_size
                .with_label_values(&[kind])
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }
}

/// client-go's REST client metrics (component-base v0.22 `metrics/prometheus/restclient`),
/// observed by [`RestClientLayer`] on the kube client's tower stack.
#[derive(Clone)]
pub struct RestClientMetrics {
    /// `rest_client_requests_total{code,method,host}`: `code` is the HTTP status (`200`) or
    /// `<error>` when no response came; `method` the HTTP method; `host` the API server's
    /// `host:port`.
    pub requests: IntCounterVec,
    /// `rest_client_request_duration_seconds{verb,url}`: seconds from sending the request to
    /// the response headers (the body of a watch streams on); `verb` the HTTP method, `url`
    /// the server URL and path with the namespace and object name replaced by `{namespace}`
    /// and `{name}` (client-go's `finalURLTemplate`), no query.
    pub request_duration: HistogramVec,
}

impl RestClientMetrics {
    /// Create and register the families.
    ///
    /// # Errors
    /// A prometheus error when a family with the same name is already registered.
    pub fn new(registry: &Registry) -> Result<RestClientMetrics, prometheus::Error> {
        let m = RestClientMetrics {
            requests: IntCounterVec::new(
                Opts::new(
                    "rest_client_requests_total",
                    "Number of HTTP requests, partitioned by status code, method, and host.",
                ),
                &["code", "method", "host"],
            )?,
            request_duration: HistogramVec::new(
                HistogramOpts::new(
                    "rest_client_request_duration_seconds",
                    "Request latency in seconds. Broken down by verb and URL.",
                )
                .buckets(buckets(REST_CLIENT_BUCKETS)?),
                &["verb", "url"],
            )?,
        };
        registry.register(Box::new(m.requests.clone()))?;
        registry.register(Box::new(m.request_duration.clone()))?;
        Ok(m)
    }

    /// The layer for a client of the API server at `cluster_url` (the kubeconfig's server).
    pub fn layer(&self, cluster_url: &http::Uri) -> RestClientLayer {
        let host = cluster_url
            .authority()
            .map(|a| a.as_str().to_string())
            .unwrap_or_default();
        let base = format!(
            "{}://{}{}",
            cluster_url.scheme_str().unwrap_or("https"),
            host,
            cluster_url.path().trim_end_matches('/')
        );
        RestClientLayer {
            metrics: self.clone(),
            host: Arc::from(host),
            base: Arc::from(base),
        }
    }
}

/// client-go's `finalURLTemplate` of an API path: the namespace after `namespaces/` becomes
/// `{namespace}` and the object name after the resource becomes `{name}`; subresources stay.
/// `/api/v1/namespaces/ns/pods/p/binding` → `/api/v1/namespaces/{namespace}/pods/{name}/binding`.
pub fn url_template(path: &str) -> String {
    let mut out = String::with_capacity(path.len() + 16);
    push_url_template(&mut out, path);
    out
}

/// [`url_template`] of `path` appended to `out`, without a buffer of its own.
fn push_url_template(out: &mut String, path: &str) {
    fn seg(out: &mut String, s: &str) {
        out.push('/');
        out.push_str(s);
    }
    let mut segs = path.split('/').filter(|s| !s.is_empty());
    let prefix = match segs.clone().next() {
        Some("api") => 2,
        Some("apis") => 3,
        _ => {
            out.push_str(path);
            return;
        }
    };
    for s in segs.by_ref().take(prefix) {
        seg(out, s);
    }
    let len = segs.clone().count();
    let Some(first) = segs.next() else {
        return;
    };
    if first == "namespaces" && len >= 2 {
        // namespaces/{namespace}[/resource[/{name}[/sub...]]]; `namespaces/x` alone is
        // the Namespace object itself.
        seg(out, "namespaces");
        let _namespace = segs.next();
        seg(out, if len == 2 { "{name}" } else { "{namespace}" });
        if let Some(resource) = segs.next() {
            seg(out, resource);
        }
    } else {
        // Cluster-scoped: resource[/{name}[/sub...]].
        seg(out, first);
    }
    if segs.next().is_some() {
        seg(out, "{name}");
        for s in segs {
            seg(out, s);
        }
    }
}

/// The tower layer of [`RestClientMetrics`]: wrap it around the kube client's service (inside
/// any rate limit layer, so that the token wait is not counted, as client-go counts it in
/// `rest_client_rate_limiter_duration_seconds` instead).
#[derive(Clone)]
pub struct RestClientLayer {
    metrics: RestClientMetrics,
    host: Arc<str>,
    base: Arc<str>,
}

impl<S> Layer<S> for RestClientLayer {
    type Service = RestClientService<S>;

    fn layer(&self, inner: S) -> RestClientService<S> {
        RestClientService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`RestClientLayer`].
#[derive(Clone)]
pub struct RestClientService<S> {
    inner: S,
    layer: RestClientLayer,
}

impl<S, B, RB> Service<http::Request<B>> for RestClientService<S>
where
    S: Service<http::Request<B>, Response = http::Response<RB>>,
    S::Future: Send + 'static,
    S::Error: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        // Per request: one String (the url label) and the boxed future; the method is an
        // `http::Method` (no allocation for the standard ones), the code the status' own text.
        let method = req.method().clone();
        let path = req.uri().path();
        let mut url = String::with_capacity(self.layer.base.len() + path.len() + 24);
        url.push_str(&self.layer.base);
        push_url_template(&mut url, path);
        let layer = self.layer.clone();
        let started = Instant::now();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let result = fut.await;
            let status = result.as_ref().ok().map(http::Response::status);
            let code = status.as_ref().map_or("<error>", http::StatusCode::as_str);
            let m = &layer.metrics;
            m.requests
                .with_label_values(&[code, method.as_str(), &layer.host])
                .inc();
            m.request_duration
                .with_label_values(&[method.as_str(), url.as_str()])
                .observe(started.elapsed().as_secs_f64());
            result
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use prometheus::proto::MetricFamily;

    fn family<'a>(families: &'a [MetricFamily], name: &str) -> &'a MetricFamily {
        families
            .iter()
            .find(|f| f.name() == name)
            .unwrap_or_else(|| panic!("{name} not registered"))
    }

    fn labels(f: &MetricFamily) -> Vec<String> {
        f.get_metric()[0]
            .get_label()
            .iter()
            .map(|l| l.name().to_string())
            .collect()
    }

    fn upper_bounds(f: &MetricFamily) -> Vec<f64> {
        f.get_metric()[0]
            .get_histogram()
            .get_bucket()
            .iter()
            .map(|b| b.upper_bound())
            .collect()
    }

    /// Go's `prometheus.ExponentialBuckets(start, factor, count)`, written out.
    fn go_exponential(start: f64, factor: f64, count: usize) -> Vec<f64> {
        let mut v = Vec::with_capacity(count);
        let mut b = start;
        for _ in 0..count {
            v.push(b);
            b *= factor;
        }
        v
    }

    #[test]
    fn names_labels_and_buckets_are_v1_22s() {
        let registry = Registry::new();
        let m = SchedulerMetrics::new(&registry).unwrap();
        let rest = RestClientMetrics::new(&registry).unwrap();
        // One sample in each family, so that every one is gathered with its labels.
        m.observe_attempt("scheduled", "mini-scheduler", 0.002);
        m.observe_pod_scheduled(3, Duration::from_millis(40));
        m.pending_pods.with_label_values(&["active"]).set(1);
        m.publish_incoming(&BTreeMap::from([(("active", "PodAdd"), 2)]));
        m.publish_cache_size(3, 5, 1);
        m.extension_point_duration
            .with_label_values(&["Filter", "Success", "mini-scheduler"])
            .observe(0.001);
        m.read_barrier_duration.observe(0.01);
        m.preemption_attempts.inc();
        m.preemption_victims.observe(2.0);
        rest.requests
            .with_label_values(&["200", "GET", "10.0.0.1:6443"])
            .inc();
        rest.request_duration
            .with_label_values(&["GET", "https://10.0.0.1:6443/api/v1/nodes"])
            .observe(0.01);
        let families = registry.gather();

        /// Family name, sorted label names, histogram upper bounds.
        type Case<'a> = (&'a str, &'a [&'a str], Option<Vec<f64>>);
        let cases: [Case; 13] = [
            ("scheduler_preemption_attempts_total", &[], None),
            (
                "scheduler_preemption_victims",
                &[],
                Some((1..=10).map(|i| 5.0 * f64::from(i)).collect()),
            ),
            (
                "scheduler_schedule_attempts_total",
                &["profile", "result"],
                None,
            ),
            (
                "scheduler_e2e_scheduling_duration_seconds",
                &["profile", "result"],
                Some(go_exponential(0.001, 2.0, 15)),
            ),
            (
                "scheduler_scheduling_attempt_duration_seconds",
                &["profile", "result"],
                Some(go_exponential(0.001, 2.0, 15)),
            ),
            (
                "scheduler_pod_scheduling_duration_seconds",
                &["attempts"],
                Some(go_exponential(0.01, 2.0, 20)),
            ),
            (
                "scheduler_pod_scheduling_attempts",
                &[],
                Some(vec![1.0, 2.0, 4.0, 8.0, 16.0]),
            ),
            ("scheduler_pending_pods", &["queue"], None),
            (
                "scheduler_queue_incoming_pods_total",
                &["event", "queue"],
                None,
            ),
            ("scheduler_scheduler_cache_size", &["type"], None),
            (
                "scheduler_framework_extension_point_duration_seconds",
                &["extension_point", "profile", "status"],
                Some(go_exponential(0.0001, 2.0, 12)),
            ),
            (
                "rest_client_requests_total",
                &["code", "host", "method"],
                None,
            ),
            (
                "rest_client_request_duration_seconds",
                &["url", "verb"],
                Some(go_exponential(0.001, 2.0, 10)),
            ),
        ];
        for (name, want_labels, want_buckets) in cases {
            let f = family(&families, name);
            // The text encoder sorts label names; compare sorted.
            let mut got = labels(f);
            got.sort();
            assert_eq!(got, want_labels, "{name}");
            if let Some(want) = want_buckets {
                let got = upper_bounds(f);
                assert_eq!(got.len(), want.len(), "{name}: {got:?}");
                for (g, w) in got.iter().zip(&want) {
                    assert!((g - w).abs() <= w * 1e-9, "{name}: {got:?} vs {want:?}");
                }
            }
        }
    }

    #[test]
    fn attempts_label_caps_at_15() {
        assert_eq!(attempts_label(1), "1");
        assert_eq!(attempts_label(14), "14");
        assert_eq!(attempts_label(15), "15+");
        assert_eq!(attempts_label(40), "15+");
        for a in 0..15 {
            assert_eq!(attempts_label(a), a.to_string());
        }
        assert_eq!(attempts_label(u32::MAX), "15+");
    }

    #[test]
    fn incoming_counts_are_published_as_differences() {
        let registry = Registry::new();
        let m = SchedulerMetrics::new(&registry).unwrap();
        let value = |q: &str, e: &str| m.queue_incoming_pods.with_label_values(&[q, e]).get();
        m.publish_incoming(&BTreeMap::from([(("active", "PodAdd"), 2)]));
        m.publish_incoming(&BTreeMap::from([(("active", "PodAdd"), 2)]));
        assert_eq!(value("active", "PodAdd"), 2);
        m.publish_incoming(&BTreeMap::from([
            (("active", "PodAdd"), 5),
            (("backoff", "ScheduleAttemptFailure"), 1),
        ]));
        assert_eq!(value("active", "PodAdd"), 5);
        assert_eq!(value("backoff", "ScheduleAttemptFailure"), 1);
    }

    #[test]
    fn url_templates_follow_client_go() {
        for (path, want) in [
            (
                "/api/v1/namespaces/ns/pods/p/binding",
                "/api/v1/namespaces/{namespace}/pods/{name}/binding",
            ),
            (
                "/api/v1/namespaces/ns/pods",
                "/api/v1/namespaces/{namespace}/pods",
            ),
            ("/api/v1/pods", "/api/v1/pods"),
            ("/api/v1/nodes/n1", "/api/v1/nodes/{name}"),
            (
                "/api/v1/namespaces/kube-system",
                "/api/v1/namespaces/{name}",
            ),
            (
                "/apis/coordination.k8s.io/v1/namespaces/ns/leases/mini-scheduler",
                "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}",
            ),
            (
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            ),
            ("/version", "/version"),
        ] {
            assert_eq!(url_template(path), want, "{path}");
        }
    }

    #[tokio::test]
    async fn layer_counts_requests_by_code_method_and_host() {
        use tower::ServiceExt;
        let registry = Registry::new();
        let rest = RestClientMetrics::new(&registry).unwrap();
        let layer = rest.layer(&"https://10.0.0.1:6443".parse().unwrap());
        let svc = layer.layer(tower::service_fn(|req: http::Request<()>| async move {
            let status = if req.uri().path().ends_with("missing") {
                404
            } else {
                200
            };
            Ok::<_, std::convert::Infallible>(
                http::Response::builder().status(status).body(()).unwrap(),
            )
        }));
        for path in [
            "/api/v1/namespaces/a/pods/x",
            "/api/v1/namespaces/b/pods/missing",
        ] {
            let req = http::Request::get(path).body(()).unwrap();
            svc.clone().oneshot(req).await.unwrap();
        }
        let count = |code: &str| {
            rest.requests
                .with_label_values(&[code, "GET", "10.0.0.1:6443"])
                .get()
        };
        assert_eq!((count("200"), count("404")), (1, 1));
        let h = rest.request_duration.with_label_values(&[
            "GET",
            "https://10.0.0.1:6443/api/v1/namespaces/{namespace}/pods/{name}",
        ]);
        assert_eq!(h.get_sample_count(), 2);
    }
}
