//! kube-scheduler's metrics, by their upstream names (`pkg/scheduler/metrics/metrics.go`):
//! `scheduler_schedule_attempts_total{result,profile}`,
//! `scheduler_scheduling_attempt_duration_seconds{result,profile}`,
//! `scheduler_pending_pods{queue}` and
//! `scheduler_framework_extension_point_duration_seconds{extension_point,status,profile}`; and
//! one of ours, `scheduler_leader_read_barrier_duration_seconds` (no upstream equivalent:
//! kube-scheduler schedules from whatever its informers hold when it starts leading).

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry,
};

/// The scheduler's metric families, registered into one registry.
#[derive(Clone)]
pub struct SchedulerMetrics {
    /// Attempts by result (`scheduled`, `unschedulable`, `error`) and profile.
    pub schedule_attempts: IntCounterVec,
    /// Seconds per scheduling attempt (algorithm + assume), by result and profile.
    pub scheduling_attempt_duration: HistogramVec,
    /// Pods per queue (`active`, `backoff`, `unschedulable`).
    pub pending_pods: IntGaugeVec,
    /// Seconds per extension point (`Filter` = PreFilter + Filter, `Score` = PreScore + Score +
    /// NormalizeScore + host selection, `Bind`) per scheduled pod.
    pub extension_point_duration: HistogramVec,
    /// Seconds a new term waited, before its first scheduling cycle, for the read barrier: a
    /// consistent LIST of the assigned pods, at or past the Lease acquisition's resourceVersion,
    /// applied to the cache.
    pub read_barrier_duration: Histogram,
}

impl SchedulerMetrics {
    /// Create and register the families.
    ///
    /// # Errors
    /// A prometheus error when a family with the same name is already registered.
    pub fn new(registry: &Registry) -> Result<SchedulerMetrics, prometheus::Error> {
        let buckets = prometheus::exponential_buckets(0.000_01, 2.0, 20)?;
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
                .buckets(buckets.clone()),
                &["result", "profile"],
            )?,
            pending_pods: IntGaugeVec::new(
                Opts::new(
                    "scheduler_pending_pods",
                    "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods.",
                ),
                &["queue"],
            )?,
            extension_point_duration: HistogramVec::new(
                HistogramOpts::new(
                    "scheduler_framework_extension_point_duration_seconds",
                    "Latency for running all plugins of a specific extension point.",
                )
                .buckets(buckets),
                &["extension_point", "status", "profile"],
            )?,
            read_barrier_duration: Histogram::with_opts(
                HistogramOpts::new(
                    "scheduler_leader_read_barrier_duration_seconds",
                    "Time a new leader waited before its first scheduling cycle for its caches to catch up with its Lease acquisition (a consistent LIST of the assigned pods).",
                )
                .buckets(prometheus::exponential_buckets(0.001, 2.0, 16)?),
            )?,
        };
        registry.register(Box::new(m.schedule_attempts.clone()))?;
        registry.register(Box::new(m.scheduling_attempt_duration.clone()))?;
        registry.register(Box::new(m.pending_pods.clone()))?;
        registry.register(Box::new(m.extension_point_duration.clone()))?;
        registry.register(Box::new(m.read_barrier_duration.clone()))?;
        Ok(m)
    }
}
