//! Logging flags as kube-scheduler users type them: `-v N` (klog verbosity) and
//! `--logging-format=text|json` (component-base's logs options), mapped onto `tracing`.
//!
//! klog's conventions (kubernetes/community `logging.md`): V(0) operator-relevant events, V(2)
//! per-pod outcomes ("Successfully bound pod to node", "Unable to schedule pod; waiting"), V(4)
//! debug detail (per-plugin results, queue moves), V(6) the HTTP requests of the client, V(8)
//! and up request bodies. This project logs V(0) lines at `INFO`, V(2) at `DEBUG` and V(4) at
//! `TRACE` in its own crates (`mini_scheduler`, `scheduler`, `election`); `-v 6` adds the kube
//! client's `DEBUG` lines and `-v 8` everything at `TRACE`.

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// `--logging-format`: kube-scheduler's `text` (klog) or `json` (zap-like, one object a line).
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log pipelines.
    Json,
}

/// The crates whose log lines follow the V-level convention above.
const OWN_CRATES: [&str; 3] = ["mini_scheduler", "scheduler", "election"];

/// The `tracing` filter directives of klog verbosity `v` (`-v N`); see the module docs.
pub fn directives_for_verbosity(v: u8) -> String {
    let own = |level: &str| {
        OWN_CRATES
            .iter()
            .map(|c| format!("{c}={level}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    match v {
        0..=1 => "info".to_string(),
        2..=3 => format!("info,{}", own("debug")),
        4..=5 => format!("info,{}", own("trace")),
        6..=7 => format!("info,kube_client=debug,kube_runtime=debug,{}", own("trace")),
        _ => "trace".to_string(),
    }
}

/// Installs the global subscriber on stderr. `RUST_LOG`, when set and valid, takes precedence
/// over `-v` (a warning says so when both are given); otherwise [`directives_for_verbosity`].
pub fn init(format: LogFormat, verbosity: u8) {
    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .and_then(|s| EnvFilter::try_new(s).ok());
    let overridden = from_env.is_some() && verbosity > 0;
    let filter = from_env.unwrap_or_else(|| EnvFilter::new(directives_for_verbosity(verbosity)));
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
    if overridden {
        tracing::warn!("RUST_LOG is set: it takes precedence over -v {verbosity}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tracing_subscriber::layer::SubscriberExt;

    struct Count(Arc<AtomicUsize>);
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Count {
        fn on_event(&self, _: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// How many of the events `emit` logs pass the filter of verbosity `v`.
    fn passing(v: u8, emit: impl Fn()) -> usize {
        let n = Arc::new(AtomicUsize::new(0));
        let subscriber = tracing_subscriber::registry()
            .with(EnvFilter::new(directives_for_verbosity(v)))
            .with(Count(n.clone()));
        tracing::subscriber::with_default(subscriber, emit);
        n.load(Ordering::SeqCst)
    }

    fn operator_line() {
        tracing::info!(target: "scheduler::controller", "Started leading; scheduling");
    }
    fn per_pod_outcome() {
        tracing::debug!(target: "scheduler::controller", "Successfully bound pod to node");
    }
    fn per_plugin_detail() {
        tracing::trace!(target: "scheduler::queue", "Pod moved");
    }
    fn client_request() {
        tracing::debug!(target: "kube_client::client", "requesting");
    }

    #[test]
    fn verbosity_levels_follow_klog() {
        // Default (and -v 1): operator lines only; per-pod outcomes hidden.
        for v in [0, 1] {
            assert_eq!(passing(v, operator_line), 1);
            assert_eq!(passing(v, per_pod_outcome), 0);
        }
        // -v 2: per-pod outcomes; not per-plugin detail, not the client's requests.
        assert_eq!(passing(2, per_pod_outcome), 1);
        assert_eq!(passing(2, per_plugin_detail), 0);
        assert_eq!(passing(2, client_request), 0);
        // -v 4: per-plugin detail.
        assert_eq!(passing(4, per_plugin_detail), 1);
        assert_eq!(passing(4, client_request), 0);
        // -v 6: the client's requests; -v 8: everything.
        assert_eq!(passing(6, client_request), 1);
        assert_eq!(passing(8, || tracing::trace!(target: "hyper", "x")), 1);
        assert_eq!(passing(6, || tracing::trace!(target: "hyper", "x")), 0);
    }
}
