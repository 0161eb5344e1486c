//! Three replicas, faults injected into the leader's (and sometimes a follower's) Lease client
//! (failures, hangs, latency, lost responses, conflicts, dropped and failing watches, history
//! compaction forcing relists), crashes, graceful shutdowns and restarts; sampled every 5 ms of
//! virtual time. Asserts that no
//! two replicas pass `is_leading()` at the same instant, that a leader is always the Lease's
//! holder, and that leadership keeps moving (liveness).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::*;
use election::{FaultInjector, LeaderWatch, MemoryLeaseStore};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use tokio::time::Instant;

const STEP: Duration = Duration::from_millis(5);
const SIMULATED: Duration = Duration::from_secs(600);

struct Sim {
    store: MemoryLeaseStore,
    slots: Vec<Replica>,
    generation: Vec<u32>,
    /// Every watch ever created, with its identity; checked until it can no longer lead.
    watches: Vec<(String, LeaderWatch)>,
    heals: Vec<(Instant, FaultInjector)>,
    seed: u64,
}

impl Sim {
    fn new(seed: u64) -> Self {
        let store = MemoryLeaseStore::new();
        let mut sim = Sim {
            store,
            slots: Vec::new(),
            generation: vec![0; 3],
            watches: Vec::new(),
            heals: Vec::new(),
            seed,
        };
        for i in 0..3 {
            let r = sim.start(i);
            sim.slots.push(r);
        }
        sim
    }

    fn start(&mut self, slot: usize) -> Replica {
        let id = format!("r{slot}-g{}", self.generation[slot]);
        let r = replica(
            &self.store,
            &id,
            self.seed * 1000 + slot as u64 * 100 + u64::from(self.generation[slot]),
        );
        self.watches.push((id, r.watch.clone()));
        r
    }

    fn restart_finished(&mut self) {
        for slot in 0..self.slots.len() {
            if self.slots[slot].handle.is_finished() {
                self.generation[slot] += 1;
                let r = self.start(slot);
                self.slots[slot] = r;
            }
        }
    }

    fn leader_slot(&self) -> Option<usize> {
        self.slots.iter().position(|r| r.watch.is_leading())
    }
}

async fn run(seed: u64) -> (usize, f64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut sim = Sim::new(seed);
    let start = Instant::now();
    let mut next_fault = start + secs(10.0);
    let mut samples = 0_u64;
    let mut led = 0_u64;
    let mut leaders_seen = HashSet::new();
    while Instant::now() < start + SIMULATED {
        tokio::time::sleep(STEP).await;
        let now = Instant::now();
        let leading: Vec<&str> = sim
            .watches
            .iter()
            .filter(|(_, w)| w.is_leading())
            .map(|(id, _)| id.as_str())
            .collect();
        assert!(
            leading.len() <= 1,
            "seed {seed}: two leaders at {:?}: {leading:?}",
            now - start
        );
        if let Some(id) = leading.first() {
            let holder = sim.store.record(NS, NAME).unwrap().holder_identity;
            assert_eq!(
                &holder,
                id,
                "seed {seed}: leader is not the Lease holder at {:?}",
                now - start
            );
            led += 1;
            leaders_seen.insert((*id).to_owned());
        }
        samples += 1;
        // Forget watches of finished replicas that can no longer lead.
        let live: HashSet<String> = sim.slots.iter().map(|r| r.id.clone()).collect();
        sim.watches
            .retain(|(id, w)| live.contains(id) || w.is_leading());
        sim.heals.retain(|(at, f)| {
            if *at <= now {
                f.heal();
                false
            } else {
                true
            }
        });
        sim.restart_finished();
        if now >= next_fault {
            next_fault = now + secs(rng.random_range(3.0..25.0));
            let target = match sim.leader_slot() {
                Some(l) if rng.random_range(0..10) < 8 => l,
                _ => rng.random_range(0..3),
            };
            let r = &sim.slots[target];
            let duration = secs(rng.random_range(0.5..30.0));
            match rng.random_range(0..10) {
                8 => {
                    r.faults.drop_watches();
                    sim.store.compact();
                }
                9 => r.faults.fail_watches(true),
                0 => r.faults.fail_all(true),
                1 => r.faults.hang(true),
                2 => r.faults.fail_next(rng.random_range(1..6)),
                3 => r.faults.set_latency(secs(rng.random_range(0.1..6.0))),
                4 => r.faults.fail_after_apply_next(rng.random_range(1..4)),
                5 => r.faults.conflict_next(rng.random_range(1..4)),
                6 => r.handle.abort(),
                _ => r.handle.shutdown(),
            }
            sim.heals.push((now + duration, r.faults.clone()));
        }
    }
    for r in &sim.slots {
        r.handle.abort();
    }
    (leaders_seen.len(), led as f64 / samples as f64)
}

#[tokio::test(start_paused = true)]
async fn no_two_replicas_lead_at_the_same_instant_under_faults() {
    for seed in 0..3 {
        let (leaders, led_fraction) = run(seed).await;
        eprintln!("seed {seed}: {leaders} leaders, led {led_fraction:.3}");
        assert!(leaders >= 8, "seed {seed}: only {leaders} distinct leaders");
        assert!(
            led_fraction > 0.5,
            "seed {seed}: a leader only {led_fraction:.2} of the time"
        );
    }
}
