//! The workers that filter and score nodes in parallel (v1.22's `parallelize.Until` with
//! `parallelism` workers, default 16).
//!
//! Work is cut into parts by the caller (contiguous runs of nodes in search order), each part
//! computed by one worker into its own output, and the outputs are reduced by the caller in
//! part order, so results do not depend on the number of workers or on which worker ran which
//! part. The calling thread is one of the workers; the others are a rayon pool of `workers - 1`
//! threads, so one worker means no pool and no other thread. [`Workers::run`] hands the parts
//! out one at a time to whichever worker is free; [`Workers::for_parts`] cuts its input into
//! one part per worker.
//!
//! Like Go's scheduler runs `parallelism` goroutines on at most `GOMAXPROCS` threads, the
//! workers that run at once are at most the cores the process may use
//! ([`std::thread::available_parallelism`]).

/// Default `parallelism` (`KubeSchedulerConfiguration.parallelism`, v1.22).
pub const DEFAULT_PARALLELISM: usize = 16;

/// The workers of one scheduling algorithm.
pub(super) struct Workers {
    /// Workers that run at once (≥ 1): `min(parallelism, cores)`.
    count: usize,
    /// `count - 1` threads; `None` when `count` is 1.
    pool: Option<rayon::ThreadPool>,
}

impl Default for Workers {
    fn default() -> Workers {
        Workers {
            count: 1,
            pool: None,
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
            Ok(pool) => Workers {
                count,
                pool: Some(pool),
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

    #[test]
    fn parallelism_is_capped_by_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(Workers::new(64).count(), cores.min(64));
        assert_eq!(Workers::new(0).count(), 1);
        assert_eq!(Workers::new(1).count(), 1);
    }
}
