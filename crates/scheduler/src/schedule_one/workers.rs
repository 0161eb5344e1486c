//! The workers that filter and score nodes in parallel (v1.22's `parallelize.Until` with
//! `parallelism` workers, default 16).
//!
//! Work is cut into parts by the caller (contiguous runs of nodes in search order), each part
//! computed by one worker into its own output, and the outputs are reduced by the caller in
//! part order, so results do not depend on the number of workers or on which worker ran which
//! part. The calling thread is one of the workers.
//!
//! Two kinds of helpers, `workers - 1` threads each kind, none when one worker:
//!
//! - **Scan helpers** ([`Workers::publish`]) for the column scan, the hot loop of the cycle.
//!   They are persistent threads that, after a job, spin on an atomic for
//!   [`HELPER_SPIN`] before they sleep, so back-to-back cycles hand them work without a futex
//!   wake. The job owns what it reads ([`PartJob`]: the columns behind an `Arc`); its parts
//!   are claimed one at a time ([`Claims`]), the calling thread from the front, the helpers
//!   from the back, and the calling thread never waits for a helper to start: a part a helper
//!   has not finished soon enough is computed again by the caller (the same result). A cycle
//!   is then never slower than with one worker by more than the claims' atomics.
//! - **A rayon pool** ([`Workers::run`], [`Workers::for_parts`]) for work that borrows the
//!   cycle's state (the per-node filters and the other scorers); the caller waits for the
//!   parts it spawned.
//!
//! Like Go's scheduler runs `parallelism` goroutines on at most `GOMAXPROCS` threads, the
//! workers that run at once are at most the cores the process may use
//! ([`std::thread::available_parallelism`]).

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Default `parallelism` (`KubeSchedulerConfiguration.parallelism`, v1.22).
pub const DEFAULT_PARALLELISM: usize = 16;

/// The workers of one scheduling algorithm.
pub(super) struct Workers {
    /// Workers that run at once (≥ 1): `min(parallelism, cores)`.
    count: usize,
    /// `count - 1` threads; `None` when `count` is 1.
    pool: Option<rayon::ThreadPool>,
    /// `count - 1` scan helpers; `None` when `count` is 1.
    helpers: Option<Helpers>,
}

impl Default for Workers {
    fn default() -> Workers {
        Workers {
            count: 1,
            pool: None,
            helpers: None,
        }
    }
}

impl Workers {
    /// `parallelism` workers (0 is taken as 1), at most the cores available. Falls back to
    /// one worker when the threads cannot be started.
    pub(super) fn new(parallelism: usize) -> Workers {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Workers::with_count(parallelism.clamp(1, cores.max(1)))
    }

    /// Exactly `count` workers (0 is taken as 1), whatever the machine (for tests).
    pub(super) fn with_count(count: usize) -> Workers {
        let count = count.max(1);
        if count == 1 {
            return Workers::default();
        }
        match rayon::ThreadPoolBuilder::new()
            .num_threads(count - 1)
            .thread_name(|i| format!("scheduler-worker-{i}"))
            .build()
        {
            Ok(pool) => match Helpers::start(count - 1) {
                Ok(helpers) => Workers {
                    count,
                    pool: Some(pool),
                    helpers: Some(helpers),
                },
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start the scheduling workers; using one");
                    Workers::default()
                }
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the scheduling workers; using one");
                Workers::default()
            }
        }
    }

    /// Workers that run at once.
    pub(super) fn count(&self) -> usize {
        self.count
    }

    /// Offers `job`'s parts to the scan helpers (they claim from the back with
    /// [`Claims::claim_back`] and run [`PartJob::run_part`]); false, and nothing offered, with
    /// one worker. The caller claims from the front, takes the helpers' results as they are
    /// done, and ends the offer with [`Workers::retract`].
    pub(super) fn publish(&self, job: Arc<dyn PartJob>) -> bool {
        match &self.helpers {
            Some(h) => {
                h.publish(job);
                true
            }
            None => false,
        }
    }

    /// Ends the offer of [`Workers::publish`]: no helper takes the job from now on (those
    /// that took it finish the part they are on and drop it).
    pub(super) fn retract(&self) {
        if let Some(h) = &self.helpers {
            h.retract();
        }
    }

    /// `f(i, &mut parts[i])` for every part, the parts spread over the workers; returns when all
    /// are done. With one worker, or one part, everything runs on the calling thread in order.
    ///
    /// The parts are handed out one at a time, in order, to whichever worker asks next (the
    /// calling thread among them): a pool thread that starts late (asleep, or its core busy)
    /// takes fewer parts instead of holding up the cycle with a fixed share. Which worker
    /// computed a part does not change its result.
    pub(super) fn run<T: Send>(&self, parts: &mut [T], f: impl Fn(usize, &mut T) + Sync) {
        let Some(pool) = self.pool.as_ref().filter(|_| parts.len() > 1) else {
            for (i, p) in parts.iter_mut().enumerate() {
                f(i, p);
            }
            return;
        };
        let helpers = (self.count - 1).min(parts.len() - 1);
        let queue = std::sync::Mutex::new(parts.iter_mut().enumerate());
        let work = || {
            loop {
                let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                match next {
                    Some((i, p)) => f(i, p),
                    None => break,
                }
            }
        };
        let work = &work;
        pool.in_place_scope(|s| {
            for _ in 0..helpers {
                s.spawn(move |_| work());
            }
            work();
        });
    }

    /// `f(a_part, b_part)` over `a` and `b` (of equal length) cut into the same contiguous parts,
    /// one per worker and none shorter than `min_len` (so small inputs stay on the calling
    /// thread). Returns the error of the first part, in order, that failed.
    ///
    /// # Errors
    /// The first part's error, in part order (so the same whatever the number of workers when
    /// `f` fails on the first failing element of its part).
    pub(super) fn for_parts<A: Sync, B: Send, E: Send>(
        &self,
        a: &[A],
        b: &mut [B],
        min_len: usize,
        f: impl Fn(&[A], &mut [B]) -> Result<(), E> + Sync,
    ) -> Result<(), E> {
        debug_assert_eq!(a.len(), b.len());
        let len = a.len().min(b.len());
        let k = self.count.min(len / min_len.max(1)).max(1);
        let Some(pool) = self.pool.as_ref().filter(|_| k > 1) else {
            return f(a, b);
        };
        let per = len.div_ceil(k);
        let first_error: std::sync::Mutex<Option<(usize, E)>> = std::sync::Mutex::new(None);
        let record = |i: usize, r: Result<(), E>| {
            if let Err(e) = r {
                let mut g = first_error.lock().unwrap_or_else(|p| p.into_inner());
                if g.as_ref().is_none_or(|(j, _)| i < *j) {
                    *g = Some((i, e));
                }
            }
        };
        let (f, record) = (&f, &record);
        pool.in_place_scope(|s| {
            let mut parts = a.chunks(per).zip(b.chunks_mut(per)).enumerate();
            let first = parts.next();
            for (i, (pa, pb)) in parts {
                s.spawn(move |_| record(i, f(pa, pb)));
            }
            if let Some((i, (pa, pb))) = first {
                record(i, f(pa, pb));
            }
        });
        match first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }
}

/// How long a scan helper spins for the next job before it sleeps (µs-scale cycles arrive
/// back to back while the activeQ has pods; a sleeping helper costs the next cycle a futex
/// wake and starts late).
pub(super) const HELPER_SPIN: Duration = Duration::from_micros(50);

/// A job of the scan helpers: it owns (or shares by `Arc`) everything its parts read, and
/// holds one output per part.
pub(super) trait PartJob: Send + Sync {
    /// Who computes which part.
    fn claims(&self) -> &Claims;
    /// Computes part `i` into the job's output for it (called by the one worker that
    /// claimed it).
    fn run_part(&self, i: usize);
}

/// Per part of a job: free, claimed, or done (its output written). Each part is claimed
/// exactly once: the caller from the front, the helpers from the back.
#[derive(Debug, Default)]
pub(super) struct Claims {
    parts: Vec<AtomicU8>,
}

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const DONE: u8 = 2;

impl Claims {
    /// `n` free parts (reusing the buffer).
    pub(super) fn reset(&mut self, n: usize) {
        self.parts.resize_with(n, || AtomicU8::new(FREE));
        for p in &mut self.parts[..n] {
            *p.get_mut() = FREE;
        }
        self.parts.truncate(n);
    }

    /// Claims part `i` if it is free.
    pub(super) fn claim(&self, i: usize) -> bool {
        self.parts[i]
            .compare_exchange(FREE, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Claims the last free part.
    pub(super) fn claim_back(&self) -> Option<usize> {
        (0..self.parts.len())
            .rev()
            .find(|&i| self.parts[i].load(Ordering::Relaxed) == FREE && self.claim(i))
    }

    /// Part `i`'s output is written (by the worker that claimed it).
    pub(super) fn set_done(&self, i: usize) {
        self.parts[i].store(DONE, Ordering::Release);
    }

    /// Whether part `i`'s output is written.
    pub(super) fn is_done(&self, i: usize) -> bool {
        self.parts[i].load(Ordering::Acquire) == DONE
    }

    /// Waits up to `patience` for part `i` (claimed by a helper) to be done; false when it is
    /// not (the helper is held up: the caller computes the part itself).
    pub(super) fn wait_done(&self, i: usize, patience: Duration) -> bool {
        let mut since: Option<Instant> = None;
        let mut spins = 0u32;
        loop {
            if self.is_done(i) {
                return true;
            }
            std::hint::spin_loop();
            spins += 1;
            if spins.is_multiple_of(64) {
                let t = *since.get_or_insert_with(Instant::now);
                if t.elapsed() >= patience {
                    return false;
                }
            }
        }
    }
}

/// What the caller and the scan helpers share.
struct Shared {
    /// The job on offer.
    job: Mutex<Option<Arc<dyn PartJob>>>,
    /// Bumped at each offer: helpers spin on it.
    epoch: AtomicU64,
    /// Helpers asleep on `wake`.
    sleepers: AtomicUsize,
    /// Held while a helper decides to sleep and while the caller wakes them.
    sleep: Mutex<()>,
    wake: Condvar,
    stop: AtomicBool,
}

/// The scan helper threads (stopped and joined on drop).
struct Helpers {
    shared: Arc<Shared>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Helpers {
    fn start(n: usize) -> std::io::Result<Helpers> {
        let shared = Arc::new(Shared {
            job: Mutex::new(None),
            epoch: AtomicU64::new(0),
            sleepers: AtomicUsize::new(0),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        let mut helpers = Helpers {
            shared,
            threads: Vec::with_capacity(n),
        };
        for i in 0..n {
            let shared = Arc::clone(&helpers.shared);
            // (On an error, dropping `helpers` stops the threads already started.)
            helpers.threads.push(
                std::thread::Builder::new()
                    .name(format!("scheduler-scan-{i}"))
                    .spawn(move || helper_loop(&shared))?,
            );
        }
        Ok(helpers)
    }

    fn publish(&self, job: Arc<dyn PartJob>) {
        let s = &self.shared;
        *s.job.lock().unwrap_or_else(|p| p.into_inner()) = Some(job);
        s.epoch.fetch_add(1, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = s.sleep.lock().unwrap_or_else(|p| p.into_inner());
            s.wake.notify_all();
        }
    }

    fn retract(&self) {
        *self.shared.job.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl Drop for Helpers {
    fn drop(&mut self) {
        let s = &self.shared;
        s.stop.store(true, Ordering::SeqCst);
        {
            let _g = s.sleep.lock().unwrap_or_else(|p| p.into_inner());
            s.wake.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A scan helper: waits for an offer (spinning [`HELPER_SPIN`], then asleep), claims parts of
/// the job from the back until none is left, drops the job, and waits again.
fn helper_loop(s: &Shared) {
    let mut seen = s.epoch.load(Ordering::SeqCst);
    loop {
        let mut since: Option<Instant> = None;
        let mut spins = 0u32;
        loop {
            if s.stop.load(Ordering::Relaxed) {
                return;
            }
            if s.epoch.load(Ordering::Acquire) != seen {
                break;
            }
            std::hint::spin_loop();
            spins += 1;
            if spins.is_multiple_of(64)
                && since.get_or_insert_with(Instant::now).elapsed() >= HELPER_SPIN
            {
                let mut g = s.sleep.lock().unwrap_or_else(|p| p.into_inner());
                s.sleepers.fetch_add(1, Ordering::SeqCst);
                while s.epoch.load(Ordering::SeqCst) == seen && !s.stop.load(Ordering::SeqCst) {
                    g = s.wake.wait(g).unwrap_or_else(|p| p.into_inner());
                }
                s.sleepers.fetch_sub(1, Ordering::SeqCst);
                break;
            }
        }
        seen = s.epoch.load(Ordering::Acquire);
        let job = s.job.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(job) = job {
            let claims = job.claims();
            while let Some(i) = claims.claim_back() {
                job.run_part(i);
                claims.set_done(i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_runs_once_with_its_index() {
        for count in [1, 2, 3, 5] {
            let w = Workers::with_count(count);
            assert_eq!(w.count(), count);
            let mut parts = vec![0usize; 11];
            w.run(&mut parts, |i, p| *p += i + 1);
            assert_eq!(parts, (1..=11).collect::<Vec<_>>(), "{count} workers");
        }
    }

    #[test]
    fn parts_cover_the_input_in_order_and_the_first_error_wins() {
        for count in [1, 2, 4] {
            let w = Workers::with_count(count);
            let a: Vec<usize> = (0..1000).collect();
            let mut b = vec![0usize; 1000];
            let r: Result<(), ()> = w.for_parts(&a, &mut b, 64, |pa, pb| {
                for (x, y) in pa.iter().zip(pb.iter_mut()) {
                    *y = x * 2;
                }
                Ok(())
            });
            assert!(r.is_ok());
            assert_eq!(b, (0..1000).map(|x| x * 2).collect::<Vec<_>>());
            // Elements 300 and 900 fail: 300 is reported whatever the parts.
            let r = w.for_parts(&a, &mut b, 64, |pa, _| {
                pa.iter()
                    .find(|&&x| x == 300 || x == 900)
                    .map_or(Ok(()), |&x| Err(x))
            });
            assert_eq!(r, Err(300), "{count} workers");
            // Too small to share: one call.
            let calls = std::sync::atomic::AtomicUsize::new(0);
            let _: Result<(), ()> = w.for_parts(&a[..10], &mut b[..10], 64, |_, _| {
                calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            });
            assert_eq!(calls.into_inner(), 1);
        }
    }

    /// A job whose parts count how often each ran.
    struct Counting {
        claims: Claims,
        runs: Vec<AtomicUsize>,
    }

    impl PartJob for Counting {
        fn claims(&self) -> &Claims {
            &self.claims
        }
        fn run_part(&self, i: usize) {
            self.runs[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn scan_helpers_and_the_caller_run_every_part_once() {
        for count in [1, 2, 3] {
            let w = Workers::with_count(count);
            for round in 0..200 {
                let mut claims = Claims::default();
                claims.reset(7);
                let job = Arc::new(Counting {
                    claims,
                    runs: (0..7).map(|_| AtomicUsize::new(0)).collect(),
                });
                let offered = w.publish(Arc::clone(&job) as Arc<dyn PartJob>);
                assert_eq!(offered, count > 1);
                for i in 0..7 {
                    if job.claims.claim(i) {
                        job.run_part(i);
                        job.claims.set_done(i);
                    } else {
                        assert!(job.claims.wait_done(i, Duration::from_secs(5)));
                    }
                }
                w.retract();
                for (i, r) in job.runs.iter().enumerate() {
                    assert_eq!(
                        r.load(Ordering::Relaxed),
                        1,
                        "{count} workers, round {round}, part {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_part_claimed_and_not_done_is_not_waited_for_past_the_patience() {
        let mut claims = Claims::default();
        claims.reset(2);
        assert!(claims.claim(1));
        assert!(!claims.claim(1));
        assert_eq!(claims.claim_back(), Some(0));
        assert_eq!(claims.claim_back(), None);
        assert!(!claims.wait_done(1, Duration::from_micros(10)));
        claims.set_done(1);
        assert!(claims.wait_done(1, Duration::ZERO));
        // Reset frees every part.
        claims.reset(3);
        assert_eq!(claims.claim_back(), Some(2));
    }

    #[test]
    fn parallelism_is_capped_by_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(Workers::new(64).count(), cores.min(64));
        assert_eq!(Workers::new(0).count(), 1);
        assert_eq!(Workers::new(1).count(), 1);
    }
}
