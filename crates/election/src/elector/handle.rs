//! [`LeaderElector::spawn`] and the handle it returns.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::task::{JoinError, JoinHandle};

use super::{ElectionOutcome, LeaderElector};
use crate::config::LeaderElectionConfig;
use crate::health::LeaderHealthCheck;
use crate::lock::Lock;
use crate::state::{LeaderState, LeaderTerm, LeaderWatch, LeadershipGuard};

impl<L: Lock> LeaderElector<L> {
    /// Spawns [`Self::run`] on the tokio runtime; shut it down with
    /// [`LeaderElectorHandle::shutdown`]. Dropping the handle detaches the task (it keeps
    /// running, like a dropped `JoinHandle`).
    pub fn spawn(self) -> LeaderElectorHandle {
        let watch = self.watch();
        let config = self.config.clone();
        let notify = Arc::new(Notify::new());
        let n = Arc::clone(&notify);
        let task = tokio::spawn(self.run(async move { n.notified().await }));
        LeaderElectorHandle {
            watch,
            config,
            shutdown: notify,
            task,
        }
    }
}

/// A spawned elector (see [`LeaderElector::spawn`]).
#[derive(Debug)]
pub struct LeaderElectorHandle {
    watch: LeaderWatch,
    config: LeaderElectionConfig,
    shutdown: Arc<Notify>,
    task: JoinHandle<ElectionOutcome>,
}

impl LeaderElectorHandle {
    /// A cloneable view of the state (for writers that need the fence).
    pub fn watch(&self) -> LeaderWatch {
        self.watch.clone()
    }

    /// See [`LeaderWatch::state`].
    pub fn state(&self) -> watch::Receiver<LeaderState> {
        self.watch.state()
    }

    /// See [`LeaderWatch::holder`] (client-go `OnNewLeader`).
    pub fn holder(&self) -> watch::Receiver<Option<String>> {
        self.watch.holder()
    }

    /// See [`LeaderWatch::is_leading`].
    pub fn is_leading(&self) -> bool {
        self.watch.is_leading()
    }

    /// See [`LeaderWatch::current_term`].
    pub fn current_term(&self) -> Option<LeaderTerm> {
        self.watch.current_term()
    }

    /// See [`LeaderWatch::leadership`].
    pub fn leadership(&self) -> Option<LeadershipGuard> {
        self.watch.leadership()
    }

    /// client-go's `HealthzAdaptor` with `timeout` beyond the lease duration.
    pub fn health_check(&self, timeout: Duration) -> LeaderHealthCheck {
        LeaderHealthCheck::new(self.watch.clone(), &self.config, timeout)
    }

    /// Asks the elector to stop: fence, release if configured, then finish. Idempotent.
    pub fn shutdown(&self) {
        self.shutdown.notify_one();
    }

    /// Kills the task without fencing or releasing (a crash). [`Self::is_leading`] still turns
    /// false at the published deadline.
    pub fn abort(&self) {
        self.task.abort();
    }

    /// Whether the task has finished.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits for the task.
    ///
    /// # Errors
    /// The task's `JoinError` if it panicked or was aborted.
    pub async fn join(self) -> Result<ElectionOutcome, JoinError> {
        self.task.await
    }
}
