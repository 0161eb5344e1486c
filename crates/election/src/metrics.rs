//! Prometheus metrics with client-go's names (tools/leaderelection/metrics.go, registered by
//! component-base `metrics/prometheus/clientgo/leaderelection`).

use prometheus::{IntCounterVec, IntGaugeVec, Opts, Registry};

/// Leader-election metrics, labelled by `name` (the Lease name). Cheap to clone.
///
/// * `leader_election_master_status{name}` (gauge): 1 while this process leads the lease,
///   0 otherwise (client-go `On`/`Off`).
/// * `leader_election_slowpath_total{name}` (counter): renewals by the current holder that needed
///   a GET before the PUT (client-go `SlowpathExercised`).
/// * `leader_election_transitions_total{name}` (counter, this crate): holder changes observed
///   by this process (client-go's `OnNewLeader` events, including the first observation and
///   `""` after a release).
#[derive(Debug, Clone)]
pub struct ElectionMetrics {
    master_status: IntGaugeVec,
    slowpath_total: IntCounterVec,
    transitions_total: IntCounterVec,
}

impl ElectionMetrics {
    /// Creates the metrics and registers them into `registry`.
    ///
    /// # Errors
    /// `prometheus::Error::AlreadyReg` if metrics with these names are already registered there
    /// (use one registry per process, or [`Self::unregistered`] for extra electors in tests).
    pub fn new(registry: &Registry) -> Result<Self, prometheus::Error> {
        let m = Self::unregistered();
        registry.register(Box::new(m.master_status.clone()))?;
        registry.register(Box::new(m.slowpath_total.clone()))?;
        registry.register(Box::new(m.transitions_total.clone()))?;
        Ok(m)
    }

    /// Creates the metrics without registering them anywhere.
    pub fn unregistered() -> Self {
        // The metric definitions are static and valid; `new` only fails on invalid names.
        Self {
            master_status: IntGaugeVec::new(
                Opts::new(
                    "leader_election_master_status",
                    "Gauge of if the reporting system is master of the relevant lease, 0 \
                     indicates backup, 1 indicates master. 'name' is the string used to \
                     identify the lease.",
                ),
                &["name"],
            )
            .expect("valid metric definition"),
            slowpath_total: IntCounterVec::new(
                Opts::new(
                    "leader_election_slowpath_total",
                    "Total number of slow path exercised in renewing leader leases. 'name' is \
                     the string used to identify the lease.",
                ),
                &["name"],
            )
            .expect("valid metric definition"),
            transitions_total: IntCounterVec::new(
                Opts::new(
                    "leader_election_transitions_total",
                    "Total number of lease holder changes observed by this process. 'name' is \
                     the string used to identify the lease.",
                ),
                &["name"],
            )
            .expect("valid metric definition"),
        }
    }

    pub(crate) fn leader_on(&self, name: &str) {
        self.master_status.with_label_values(&[name]).set(1);
    }

    pub(crate) fn leader_off(&self, name: &str) {
        self.master_status.with_label_values(&[name]).set(0);
    }

    pub(crate) fn slowpath_exercised(&self, name: &str) {
        self.slowpath_total.with_label_values(&[name]).inc();
    }

    pub(crate) fn transition_observed(&self, name: &str) {
        self.transitions_total.with_label_values(&[name]).inc();
    }

    /// Current value of `leader_election_master_status{name}`.
    pub fn master_status(&self, name: &str) -> i64 {
        self.master_status.with_label_values(&[name]).get()
    }

    /// Current value of `leader_election_slowpath_total{name}`.
    pub fn slowpath_total(&self, name: &str) -> u64 {
        self.slowpath_total.with_label_values(&[name]).get()
    }

    /// Current value of `leader_election_transitions_total{name}`.
    pub fn transitions_total(&self, name: &str) -> u64 {
        self.transitions_total.with_label_values(&[name]).get()
    }
}

impl Default for ElectionMetrics {
    fn default() -> Self {
        Self::unregistered()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use prometheus::Encoder;

    #[test]
    fn registers_client_go_names() {
        let registry = Registry::new();
        let m = ElectionMetrics::new(&registry).unwrap();
        m.leader_on("l");
        m.slowpath_exercised("l");
        m.transition_observed("l");
        let mut out = Vec::new();
        prometheus::TextEncoder::new()
            .encode(&registry.gather(), &mut out)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("leader_election_master_status{name=\"l\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("leader_election_slowpath_total{name=\"l\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("leader_election_transitions_total{name=\"l\"} 1"),
            "{text}"
        );
        m.leader_off("l");
        assert_eq!(m.master_status("l"), 0);
        assert!(ElectionMetrics::new(&registry).is_err());
    }
}
