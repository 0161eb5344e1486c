//! Time sources: a monotonic clock for every decision and a wall clock for the Lease's
//! informational `acquireTime` / `renewTime`.
//!
//! Decisions (lease expiry, renew deadline, fencing) use only [`tokio::time::Instant`], which is
//! monotonic and follows tokio's paused test clock. Wall time is written into the Lease but never
//! compared with another replica's (client-go package doc, leaderelection.go: "does not consider
//! timestamps in the leader election record to be accurate").

use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// The clock an elector uses. Cheap to clone.
///
/// [`Clock::system`] (the default) writes the real wall time, like client-go. Under tokio's
/// paused clock the system wall time barely moves, so renewals would fall into the same second
/// and look unchanged to observers; tests therefore use [`Clock::anchored`], whose wall time
/// advances with the (virtual) monotonic clock.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    anchor: Option<(Timestamp, Instant)>,
}

impl Clock {
    /// Monotonic time from tokio, wall time from the system (`Timestamp::now()`).
    pub fn system() -> Self {
        Self { anchor: None }
    }

    /// Wall time that reads `wall` now and then advances with [`tokio::time::Instant`].
    /// Use it with `#[tokio::test(start_paused = true)]`, or to simulate a replica whose wall
    /// clock is skewed (e.g. an hour behind).
    pub fn anchored(wall: Timestamp) -> Self {
        Self {
            anchor: Some((wall, Instant::now())),
        }
    }

    /// The current monotonic instant (`tokio::time::Instant::now()`).
    pub fn now(&self) -> Instant {
        Instant::now()
    }

    /// The current wall time for `acquireTime` / `renewTime`.
    pub fn wall_now(&self) -> Timestamp {
        match self.anchor {
            None => Timestamp::now(),
            Some((wall, at)) => wall
                .checked_add(Instant::now().saturating_duration_since(at))
                .unwrap_or(Timestamp::MAX),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn anchored_wall_time_follows_paused_clock() {
        let start = Timestamp::from_second(1_000_000).expect("valid timestamp");
        let clock = Clock::anchored(start);
        let t0 = clock.now();
        tokio::time::sleep(Duration::from_secs(90)).await;
        assert_eq!(clock.now() - t0, Duration::from_secs(90));
        assert_eq!(clock.wall_now().as_second(), 1_000_090);
    }
}
