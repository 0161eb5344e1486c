//! The cpu/memory resource scores (`NodeResourcesLeastAllocated`, `NodeResourcesMostAllocated`,
//! `NodeResourcesBalancedAllocation`) read from the snapshot's [`NodeColumns`], with the
//! reciprocals of the capacities in place of divisions, and bit-identical to v1.22's formulas
//! ([`HotScorer::score`] on the same numbers). Two facts make them exact:
//!
//! - **LeastAllocated / MostAllocated** are `floor(n * 100 / c)` in integers for `0 <= n <= c`.
//!   With `x = n * 100 < 2^53` (so `x as f64` is exact) and `inv = fl(1 / c)`,
//!   `p = fl(x * inv) = (x / c)(1 + e)` with `|e| <= 2^-52 + 2^-106`, so `|p - x / c| < 2^-45`
//!   for `x / c <= 100`: `trunc(p)` is the exact quotient `q` or one of its neighbours, and the
//!   remainder `x - trunc(p) * c` (an exact integer product) says which: negative means one
//!   too many, `>= c` one too few ([`percent_floor_recip`]). Capacities of 2^46 or more (over
//!   64 TiB of memory) take the integer division.
//! - **BalancedAllocation** is `trunc((1 - |fc - fm|) * 100)` with `f = fl(req / cap)`
//!   clamped to 1, as Go computes it. `fl(req * inv)` differs from `fl(req / cap)` by at most
//!   2 ulps of a value ≤ 1 after the clamp, so the value `v` before truncation moves by less
//!   than `100 * 16 * 2^-53 < 2^-42`. When `v` is farther than [`BALANCED_MARGIN`] (2^-30) from
//!   an integer both truncate alike; otherwise the score is computed with Go's divisions
//!   ([`balanced_score`]). Balanced nodes (`fc == fm`, score 100) take that path; the others
//!   almost never.
//!
//! Anything outside these ranges (a capacity ≤ 0, a negative request) takes [`HotScorer::score`].
//! `node_resources_columns` tests check all of it against the integer and the division formulas.

use super::balanced_allocation::balanced_score;
use crate::framework::{HotScorer, MAX_NODE_SCORE};
use crate::snapshot::NodeColumns;

/// Capacities below this use the reciprocal (see the module documentation).
const RECIP_LIMIT: i64 = 1 << 46;
/// Distance to the nearest integer below which BalancedAllocation is recomputed with divisions.
pub const BALANCED_MARGIN: f64 = 1.0 / (1u64 << 30) as f64;

/// `floor(num * 100 / cap)` for `0 <= num <= cap`, `0 < cap < 2^46`, `inv == 1.0 / cap as f64`:
/// one multiplication and an integer check instead of a division (exact; see the module docs).
#[inline(always)]
pub fn percent_floor_recip(num: i64, cap: i64, inv: f64) -> i64 {
    const _: () = assert!(MAX_NODE_SCORE == 100);
    let x = num * 100;
    let mut q = ((x as f64) * inv) as i64;
    let r = x - q * cap;
    if r < 0 {
        q -= 1;
    } else if r >= cap {
        q += 1;
    }
    q
}

/// `2^52`: adding it to a float in `[0, 2^51)` rounds it to the nearest integer (the float's
/// fraction bits run out there), and the sum's bit pattern is [`MAGIC_BITS`] plus that integer.
pub(crate) const MAGIC: f64 = (1u64 << 52) as f64;

/// The bit pattern of [`MAGIC`].
pub(crate) const MAGIC_BITS: i64 = 0x4330_0000_0000_0000;

/// One resource's `leastRequestedScore` (v1.22): `floor((cap - req) * 100 / cap)`, 0 when
/// `req > cap`, for `1 <= cap < 2^46`, `0 <= req < 2^53` integer-valued, `inv == 1.0 / cap`,
/// with float operations and integer adds only (no conversion instruction, no select between
/// floats: a loop of it vectorises on baseline x86-64). With `x = (cap - req) * 100` (exact,
/// `< 2^53`), `p = fl(x * inv)` is within `2^-45` of `x / cap <= 100`
/// ([`percent_floor_recip`]), so `q`, the integer nearest `p` (read from the bits of
/// `p + 2^52`), is `round(x / cap)` or a neighbour within `1/2 + 2^-45` of it, and the exact
/// remainder `x - q * cap` (`q * cap <= 101 * 2^46 < 2^53`) says which side `x / cap` lies on:
/// `floor(x / cap)` is `q` when it is `>= 0`, else `q - 1`. Other inputs give some integer
/// (never a trap); callers select it away.
#[inline(always)]
fn least_part(req: f64, cap: f64, inv: f64) -> i64 {
    let x = (cap - req) * 100.0;
    let t = x * inv + MAGIC;
    let q = t - MAGIC;
    let below = i64::from(x - q * cap < 0.0);
    let v = (t.to_bits() as i64)
        .wrapping_sub(MAGIC_BITS)
        .wrapping_sub(below);
    if req > cap { 0 } else { v }
}

/// LeastAllocated and BalancedAllocation of one node for a loop over the columns that the
/// compiler vectorises (float operations, integer adds, no conversion instruction):
/// `(least_allocated, balanced, balanced_exact)`. Inputs: the requested cpu and memory with
/// the pod (`req_*`, integer-valued, `0 <= req < 2^53`), the allocatable (`cap_*`,
/// `1 <= cap < 2^46`) and its reciprocal. `least_allocated` is
/// [`ScoreInput::least_allocated`] exactly; `balanced` is [`ScoreInput::balanced_allocation`]
/// when `balanced_exact` (the value before truncation is farther than [`BALANCED_MARGIN`] from
/// an integer), else the caller must take the exact path. Nodes outside the ranges carry
/// [`crate::snapshot::NodeHot::SCORE_OUT_OF_RANGE`] (their results are some integers).
#[inline(always)]
pub fn least_balanced(
    req_cpu: f64,
    cap_cpu: f64,
    inv_cpu: f64,
    req_mem: f64,
    cap_mem: f64,
    inv_mem: f64,
) -> (i64, i64, bool) {
    // Both parts are in 0..=100 in range: the sum is not negative, so a logical shift halves
    // it as the integer division does.
    let least_sum =
        least_part(req_cpu, cap_cpu, inv_cpu).wrapping_add(least_part(req_mem, cap_mem, inv_mem));
    let least = ((least_sum as u64) >> 1) as i64;
    let fc = req_cpu * inv_cpu;
    let fc = if fc < 1.0 { fc } else { 1.0 };
    let fm = req_mem * inv_mem;
    let fm = if fm < 1.0 { fm } else { 1.0 };
    let v = (1.0 - (fc - fm).abs()) * MAX_NODE_SCORE as f64;
    // `v` in [0, 100]: `r` its nearest integer, `d = v - r` exact; `floor(v)` is `r` or, when
    // `r` is above `v`, `r - 1`; `v` is farther than the margin from every integer exactly
    // when `|d|` is.
    let t = v + MAGIC;
    let r = t - MAGIC;
    let d = v - r;
    let balanced = (t.to_bits() as i64)
        .wrapping_sub(MAGIC_BITS)
        .wrapping_sub(i64::from(d < 0.0));
    (least, balanced, d.abs() > BALANCED_MARGIN)
}

/// One node's cpu/memory numbers for scoring a pod: `(allocatable, requested with the pod,
/// reciprocal of allocatable)` of cpu and of memory.
#[derive(Debug, Clone, Copy)]
pub struct ScoreInput {
    /// Allocatable cpu, millicores.
    pub cap_cpu: i64,
    /// Non-zero requested cpu plus the pod's scoring request, millicores.
    pub req_cpu: i64,
    /// `1 / cap_cpu`.
    pub inv_cpu: f64,
    /// Allocatable memory, bytes.
    pub cap_mem: i64,
    /// Non-zero requested memory plus the pod's scoring request, bytes.
    pub req_mem: i64,
    /// `1 / cap_mem`.
    pub inv_mem: f64,
}

impl ScoreInput {
    /// Node `i` of `c` with a pod asking `cpu` millicores and `mem` bytes (scoring requests).
    #[inline(always)]
    pub fn at(c: &NodeColumns, i: usize, cpu: i64, mem: i64) -> ScoreInput {
        ScoreInput {
            cap_cpu: c.alloc_milli_cpu[i],
            req_cpu: c.nz_milli_cpu[i].saturating_add(cpu),
            inv_cpu: c.inv_milli_cpu[i],
            cap_mem: c.alloc_memory[i],
            req_mem: c.nz_memory[i].saturating_add(mem),
            inv_mem: c.inv_memory[i],
        }
    }

    /// The pairs [`HotScorer::score`] takes.
    #[inline(always)]
    fn pairs(&self) -> [(i64, i64); 2] {
        [(self.cap_cpu, self.req_cpu), (self.cap_mem, self.req_mem)]
    }

    /// Whether the reciprocal path applies: capacities in `1..2^46`, requests not negative.
    #[inline(always)]
    fn simple(&self) -> bool {
        (1..RECIP_LIMIT).contains(&self.cap_cpu)
            && (1..RECIP_LIMIT).contains(&self.cap_mem)
            && self.req_cpu >= 0
            && self.req_mem >= 0
    }

    /// `NodeResourcesLeastAllocated`'s score.
    #[inline(always)]
    pub fn least_allocated(&self) -> i64 {
        if !self.simple() {
            return HotScorer::LeastAllocated.score(self.pairs());
        }
        let one = |req: i64, cap: i64, inv: f64| {
            if req > cap {
                0
            } else {
                percent_floor_recip(cap - req, cap, inv)
            }
        };
        (one(self.req_cpu, self.cap_cpu, self.inv_cpu)
            + one(self.req_mem, self.cap_mem, self.inv_mem))
            / 2
    }

    /// `NodeResourcesMostAllocated`'s score.
    #[inline(always)]
    pub fn most_allocated(&self) -> i64 {
        if !self.simple() {
            return HotScorer::MostAllocated.score(self.pairs());
        }
        (percent_floor_recip(self.req_cpu.min(self.cap_cpu), self.cap_cpu, self.inv_cpu)
            + percent_floor_recip(self.req_mem.min(self.cap_mem), self.cap_mem, self.inv_mem))
            / 2
    }

    /// `NodeResourcesBalancedAllocation`'s score.
    #[inline(always)]
    pub fn balanced_allocation(&self) -> i64 {
        if !self.simple() {
            return HotScorer::BalancedAllocation.score(self.pairs());
        }
        let fc = (self.req_cpu as f64 * self.inv_cpu).min(1.0);
        let fm = (self.req_mem as f64 * self.inv_mem).min(1.0);
        let v = (1.0 - (fc - fm).abs()) * MAX_NODE_SCORE as f64;
        let t = v as i64;
        let frac = v - t as f64;
        if frac > BALANCED_MARGIN && frac < 1.0 - BALANCED_MARGIN {
            t
        } else {
            balanced_score(self.req_cpu, self.cap_cpu, self.req_mem, self.cap_mem)
        }
    }

    /// `scorer`'s score.
    #[inline(always)]
    pub fn score(&self, scorer: HotScorer) -> i64 {
        match scorer {
            HotScorer::LeastAllocated => self.least_allocated(),
            HotScorer::MostAllocated => self.most_allocated(),
            HotScorer::BalancedAllocation => self.balanced_allocation(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, m: u64) -> u64 {
            self.next() % m
        }
    }

    fn input(cap_cpu: i64, req_cpu: i64, cap_mem: i64, req_mem: i64) -> ScoreInput {
        let inv = |x: i64| if x > 0 { 1.0 / x as f64 } else { 0.0 };
        ScoreInput {
            cap_cpu,
            req_cpu,
            inv_cpu: inv(cap_cpu),
            cap_mem,
            req_mem,
            inv_mem: inv(cap_mem),
        }
    }

    fn check(s: &ScoreInput) {
        let pairs = s.pairs();
        for scorer in [
            HotScorer::LeastAllocated,
            HotScorer::MostAllocated,
            HotScorer::BalancedAllocation,
        ] {
            assert_eq!(s.score(scorer), scorer.score(pairs), "{scorer:?} {s:?}");
        }
    }

    /// The quotient with a reciprocal is the integer quotient: random numerators and
    /// capacities over the whole range, quotients just below and at every integer, and the
    /// capacities real nodes have.
    #[test]
    fn percent_floor_recip_is_integer_division() {
        let mut r = Rng(0x9E37_79B9_7F4A_7C15);
        let mut caps: Vec<i64> = vec![
            1,
            2,
            3,
            7,
            100,
            250,
            1000,
            4000,
            96_000,
            (32 << 30) - 1,
            32 << 30,
            (1 << 46) - 1,
        ];
        for _ in 0..2000 {
            caps.push((r.below(RECIP_LIMIT as u64 - 1) + 1) as i64);
            caps.push((r.below(1 << 20) + 1) as i64);
        }
        for &cap in &caps {
            let inv = 1.0 / cap as f64;
            let mut nums = vec![0, 1, cap / 3, cap / 2, cap - 1, cap];
            for k in 1..=100i64 {
                // num * 100 = k * cap exactly (when divisible) and just around it.
                let n = k * cap / 100;
                nums.extend([(n - 1).max(0), n, (n + 1).min(cap)]);
            }
            for _ in 0..50 {
                nums.push(r.below(cap as u64 + 1) as i64);
            }
            for num in nums {
                assert_eq!(
                    percent_floor_recip(num, cap, inv),
                    num * 100 / cap,
                    "{num}/{cap}"
                );
            }
        }
    }

    /// Every scorer equals v1.22's formula ([`HotScorer::score`]: integer division, Go's
    /// float divisions) on random nodes, on nodes whose two fractions are equal (Balanced
    /// exactly 100, the case the margin sends to the divisions), on fractions a hair apart,
    /// and outside the reciprocal's range (no capacity, negative requests, huge capacities).
    #[test]
    fn column_scores_equal_the_v1_22_formulas() {
        let mut r = Rng(42);
        for _ in 0..300_000 {
            let cap_cpu = (r.below(256_000) + 1) as i64;
            let cap_mem = (r.below(2 << 40) + 1) as i64;
            let req_cpu = r.below(cap_cpu as u64 * 5 / 4 + 2) as i64;
            let req_mem = r.below(cap_mem as u64 * 5 / 4 + 2) as i64;
            check(&input(cap_cpu, req_cpu, cap_mem, req_mem));
            // Equal fractions: req/cap the same for both resources.
            let k = (r.below(1000) + 1) as i64;
            let (cc, cm) = (cap_cpu.min(1 << 20), 1000 * (r.below(1 << 20) as i64 + 1));
            let (rc, rm) = (cc * k / 1000, cm * k / 1000);
            check(&input(cc, rc, cm, rm));
            check(&input(cc, rc, cm, rm + 1));
            check(&input(cc, rc + 1, cm, rm));
        }
        // scheduler_perf's template node with 0..=110 pods of 100m / 500Mi (and 200 MiB).
        for pods in 0..=110 {
            check(&input(4000, pods * 100, 32 << 30, pods * (500 << 20)));
            check(&input(4000, pods * 100, 32 << 30, pods * (200 << 20)));
        }
        for (cc, rc, cm, rm) in [
            (0, 0, 1000, 10),
            (1000, 10, 0, 0),
            (0, 5, 0, 5),
            (-5, 1, 1000, 1),
            (1000, -1, 1000, 10),
            (1 << 46, 1 << 45, 1 << 50, 1 << 49),
            (i64::MAX, i64::MAX, i64::MAX, 1),
            (1000, 0, 1000, 0),
            (1000, 1000, 1000, 1000),
            (1000, 2000, 1000, 500),
        ] {
            check(&input(cc, rc, cm, rm));
        }
    }

    /// The float kernel on one node, as the dense scan calls it: `None` when it defers to
    /// the exact path.
    fn kernel(s: &ScoreInput) -> (i64, Option<i64>) {
        let (least, balanced, exact) = least_balanced(
            s.req_cpu as f64,
            s.cap_cpu as f64,
            s.inv_cpu,
            s.req_mem as f64,
            s.cap_mem as f64,
            s.inv_mem,
        );
        (least, exact.then_some(balanced))
    }

    fn check_kernel(s: &ScoreInput, deferred: &mut usize) {
        let (least, balanced) = kernel(s);
        assert_eq!(least, s.least_allocated(), "least {s:?}");
        assert_eq!(
            least,
            HotScorer::LeastAllocated.score(s.pairs()),
            "least {s:?}"
        );
        match balanced {
            Some(b) => {
                assert_eq!(b, s.balanced_allocation(), "balanced {s:?}");
                assert_eq!(b, HotScorer::BalancedAllocation.score(s.pairs()), "{s:?}");
            }
            None => *deferred += 1,
        }
    }

    /// The float kernel of the dense scan equals the exact scores (and v1.22's formulas) on
    /// random nodes over its whole range (capacities `1..2^46`, requests `0..2^53`, requests
    /// beyond the capacity), on the capacities real nodes have with every pod count, and at
    /// the edges (requests 0, equal to the capacity, one above it; capacity 1 and `2^46 - 1`);
    /// it defers Balanced to the exact path only near an integer.
    #[test]
    fn float_kernel_equals_the_exact_scores() {
        let mut r = Rng(7);
        let mut deferred = 0;
        let mut total = 0;
        for _ in 0..300_000 {
            let cap_cpu = (r.below(256_000) + 1) as i64;
            let cap_mem = (r.below(RECIP_LIMIT as u64 - 1) + 1) as i64;
            let req_cpu = r.below(cap_cpu as u64 * 5 / 4 + 2) as i64;
            let req_mem = r.below(cap_mem as u64 * 5 / 4 + 2) as i64;
            check_kernel(&input(cap_cpu, req_cpu, cap_mem, req_mem), &mut deferred);
            let (cc, cm) = ((r.below(1 << 20) + 1) as i64, (r.below(1 << 40) + 1) as i64);
            let k = (r.below(1001)) as i64;
            check_kernel(&input(cc, cc * k / 1000, cm, cm * k / 1000), &mut deferred);
            total += 2;
        }
        for (cc, cm) in [
            (4000, 32i64 << 30),
            (1000, 1 << 30),
            (96_000, 512 << 30),
            (1, 1),
        ] {
            for pods in 0..=120 {
                for (pc, pm) in [(100, 500 << 20), (100, 200 << 20), (250, 1 << 30)] {
                    check_kernel(&input(cc, pods * pc, cm, pods * pm), &mut deferred);
                    total += 1;
                }
            }
        }
        let top = RECIP_LIMIT - 1;
        for cap in [1, 2, 3, 7, 100, 4000, top] {
            for req in [0, 1, cap / 2, cap - 1, cap, cap + 1, 2 * cap, (1 << 53) - 1] {
                for (cap2, req2) in [(1, 0), (1, 1), (top, 0), (top, top), (3, 2), (cap, req)] {
                    check_kernel(&input(cap, req.max(0), cap2, req2), &mut deferred);
                    check_kernel(&input(cap2, req2, cap, req.max(0)), &mut deferred);
                    total += 2;
                }
            }
        }
        assert!(deferred * 4 < total, "{deferred} of {total} deferred");
    }
}
