//! Choosing the host among the scored nodes (v1.22 `selectHost`).

use rand::RngExt;
use rand::rngs::StdRng;

/// `selectHost`: the position of a node with the highest total, chosen uniformly among the
/// nodes that share it. Upstream does it by reservoir sampling (one random draw per tie);
/// drawing once the rank among the ties gives the same distribution for a fraction of the cost.
/// Draws from `rng` only when there is a tie. `totals` must not be empty (0 is returned if it
/// is).
pub(super) fn select_host(totals: &[i64], rng: &mut StdRng) -> usize {
    let mut max = i64::MIN;
    let mut ties = 0usize;
    for &t in totals {
        if t > max {
            max = t;
            ties = 1;
        } else if t == max {
            ties += 1;
        }
    }
    let pick = if ties > 1 {
        rng.random_range(0..ties)
    } else {
        0
    };
    totals
        .iter()
        .enumerate()
        .filter(|(_, t)| **t == max)
        .nth(pick)
        .map_or(0, |(j, _)| j)
}

/// The highest total of a run of totals and how many nodes of the run have it (`max` is
/// `i64::MIN` and `ties` 0 for an empty run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Top {
    /// Highest total.
    pub(super) max: i64,
    /// Nodes with it.
    pub(super) ties: usize,
    /// Nodes in the run.
    pub(super) len: usize,
}

impl Default for Top {
    fn default() -> Top {
        Top {
            max: i64::MIN,
            ties: 0,
            len: 0,
        }
    }
}

impl Top {
    /// The top of `totals` (two branch-free passes: the maximum, then how many have it).
    pub(super) fn of(totals: &[i64]) -> Top {
        let max = totals.iter().fold(i64::MIN, |m, &t| m.max(t));
        Top {
            max,
            ties: totals.iter().filter(|&&t| t == max).count(),
            len: totals.len(),
        }
    }

    /// [`Top::of`] for totals that are all in `0..2^51` (scores; other totals give
    /// [`Top::of`]): the maximum is taken on the totals as floats, four running maxima at a
    /// time (baseline x86-64 has no 64-bit integer maximum to vectorise, but a float one),
    /// exact in that range.
    pub(super) fn of_scores(totals: &[i64]) -> Top {
        use crate::framework::plugins::node_resources_columns::{MAGIC, MAGIC_BITS};
        // The float equal to `t` for `t` in 0..2^51 (no conversion instruction).
        let float = |t: i64| f64::from_bits(t.wrapping_add(MAGIC_BITS) as u64) - MAGIC;
        let mut m = [f64::NEG_INFINITY; 4];
        let mut or = [0i64; 4];
        let mut fours = totals.chunks_exact(4);
        for c in &mut fours {
            for j in 0..4 {
                let f = float(c[j]);
                m[j] = if f > m[j] { f } else { m[j] };
                or[j] |= c[j];
            }
        }
        for &t in fours.remainder() {
            let f = float(t);
            m[0] = if f > m[0] { f } else { m[0] };
            or[0] |= t;
        }
        // Every total in 0..2^51: no sign bit and no bit from 51 up in their or.
        let or = or.iter().fold(0, |a, &b| a | b);
        if totals.is_empty() || or >> 51 != 0 {
            return Top::of(totals);
        }
        let max = m
            .iter()
            .fold(f64::NEG_INFINITY, |a, &b| if b > a { b } else { a });
        // An integer-valued float in 0..2^51: its integer through the same bits.
        let max = ((max + MAGIC).to_bits() as i64).wrapping_sub(MAGIC_BITS);
        Top {
            max,
            ties: totals.iter().map(|&t| usize::from(t == max)).sum(),
            len: totals.len(),
        }
    }
}

/// [`select_host`] on `totals` cut into consecutive runs whose tops are `tops` (the search's
/// chunks, each summarised by the worker that scored it): the same position for the same
/// generator state, with the same draw, reading only the run that holds the chosen node.
/// `tops` must cover `totals` (Σ len = totals.len(), each top that of its run).
pub(super) fn select_host_in_runs(totals: &[i64], tops: &[Top], rng: &mut StdRng) -> usize {
    debug_assert_eq!(tops.iter().map(|t| t.len).sum::<usize>(), totals.len());
    let max = tops
        .iter()
        .filter(|t| t.len > 0)
        .map(|t| t.max)
        .max()
        .unwrap_or(i64::MIN);
    let ties: usize = tops.iter().filter(|t| t.max == max).map(|t| t.ties).sum();
    let mut pick = if ties > 1 {
        rng.random_range(0..ties)
    } else {
        0
    };
    let mut off = 0;
    for t in tops {
        if t.len > 0 && t.max == max {
            if pick < t.ties {
                return totals[off..off + t.len]
                    .iter()
                    .enumerate()
                    .filter(|(_, x)| **x == max)
                    .nth(pick)
                    .map_or(off, |(j, _)| off + j);
            }
            pick -= t.ties;
        }
        off += t.len;
    }
    0
}

/// `selectHost` with a deterministic tie-break: among the nodes with the highest total, the
/// position `cmp` orders first (the FGD paper's simulator takes the lowest node name).
pub(super) fn select_host_by(
    totals: &[i64],
    cmp: impl Fn(usize, usize) -> std::cmp::Ordering,
) -> usize {
    let max = totals.iter().copied().max().unwrap_or(0);
    (0..totals.len())
        .filter(|&j| totals[j] == max)
        .min_by(|&a, &b| cmp(a, b))
        .unwrap_or(0)
}

/// `selectHost` with a deterministic tie-break by key: among the nodes with the highest total,
/// the position whose `key` is least (each key computed once).
pub(super) fn select_host_by_key<K: Ord>(totals: &[i64], key: impl Fn(usize) -> K) -> usize {
    let max = totals.iter().copied().max().unwrap_or(0);
    (0..totals.len())
        .filter(|&j| totals[j] == max)
        .min_by_key(|&j| key(j))
        .unwrap_or(0)
}

/// A node's rank in the pseudo-random node order of `seed` (lower ranks first): the name's
/// bytes folded eight at a time (little-endian words, the last one zero-padded, and the length)
/// by multiply–xorshift rounds from the seed, then SplitMix64's finaliser. The same seed gives
/// the same order on every platform and run; different seeds give unrelated orders.
pub fn node_order_key(seed: u64, name: &str) -> u64 {
    const M: u64 = 0x9e37_79b9_7f4a_7c15;
    let bytes = name.as_bytes();
    let mut h = seed ^ (bytes.len() as u64).wrapping_mul(M);
    let mut chunks = bytes.chunks_exact(8);
    let mut fold = |w: u64| {
        h = (h ^ w).wrapping_mul(M);
        h ^= h >> 32;
    };
    for c in &mut chunks {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        fold(u64::from_le_bytes(b));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        fold(u64::from_le_bytes(b));
    }
    let mut z = h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn the_top_total_wins_without_a_draw() {
        let mut rng = StdRng::seed_from_u64(7);
        let mut untouched = StdRng::seed_from_u64(7);
        assert_eq!(select_host(&[3, 9, i64::MIN, 8], &mut rng), 1);
        assert_eq!(select_host(&[5], &mut rng), 0);
        // No tie, no draw: the generator is where it was.
        assert_eq!(
            rng.random_range(0..1000u32),
            untouched.random_range(0..1000u32)
        );
    }

    #[test]
    fn ordered_tie_break_takes_the_first_of_the_top_nodes() {
        let names = ["c", "a", "b", "d"];
        let by_name = |a: usize, b: usize| names[a].cmp(names[b]);
        assert_eq!(select_host_by(&[5, 1, 5, 5], by_name), 2);
        assert_eq!(select_host_by(&[5, 9, 5, 5], by_name), 1);
        assert_eq!(select_host_by(&[4], by_name), 0);
    }

    /// Selecting from the runs' tops gives the position the whole scan gives, with the same
    /// draws, whatever the cut.
    #[test]
    fn runs_give_the_same_choice_as_the_whole_scan() {
        let mut cut = StdRng::seed_from_u64(3);
        for case in 0..2000u64 {
            let n = cut.random_range(1..60usize);
            let totals: Vec<i64> = (0..n).map(|_| cut.random_range(0..4i64)).collect();
            let mut tops = Vec::new();
            let mut off = 0;
            while off < n || tops.is_empty() {
                let len = cut.random_range(0..8usize).min(n - off);
                tops.push(Top::of(&totals[off..off + len]));
                off += len;
            }
            let (mut a, mut b) = (StdRng::seed_from_u64(case), StdRng::seed_from_u64(case));
            assert_eq!(
                select_host(&totals, &mut a),
                select_host_in_runs(&totals, &tops, &mut b),
                "{totals:?}"
            );
            assert_eq!(a.random_range(0..1u64 << 40), b.random_range(0..1u64 << 40));
        }
    }

    /// The float maximum of scores gives the integer top, on runs of every length and at
    /// the ends of its range; totals outside it give the integer top too.
    #[test]
    fn top_of_scores_is_top_of() {
        let mut r = StdRng::seed_from_u64(11);
        for case in 0..3000usize {
            let n = case % 300;
            let span = [2i64, 201, 1 << 28, 1 << 51][case % 4];
            let mut totals: Vec<i64> = (0..n).map(|_| r.random_range(0..span)).collect();
            assert_eq!(Top::of_scores(&totals), Top::of(&totals), "{totals:?}");
            if n > 0 {
                let i = r.random_range(0..n);
                totals[i] = [(1 << 51) - 1, 1 << 51, -1, i64::MIN, i64::MAX][case % 5];
                assert_eq!(Top::of_scores(&totals), Top::of(&totals), "{totals:?}");
            }
        }
        assert_eq!(Top::of_scores(&[]), Top::of(&[]));
    }

    /// Ties are broken uniformly, and only among the top nodes.
    #[test]
    fn ties_are_broken_uniformly_among_the_top_nodes() {
        let totals = [7, 2, 7, 7, 6, 7];
        let mut rng = StdRng::seed_from_u64(1);
        let mut counts = [0usize; 6];
        for _ in 0..40_000 {
            counts[select_host(&totals, &mut rng)] += 1;
        }
        assert_eq!([counts[1], counts[4]], [0, 0]);
        for j in [0, 2, 3, 5] {
            // 10,000 expected each; 5 standard deviations is about ±430.
            assert!(counts[j].abs_diff(10_000) < 500, "{counts:?}");
        }
    }

    #[test]
    fn node_order_is_a_seeded_permutation() {
        let names: Vec<String> = (0..200).map(|i| format!("openb-node-{i:04}")).collect();
        let order = |seed: u64| {
            let mut v = names.clone();
            v.sort_by_key(|n| (node_order_key(seed, n), n.clone()));
            v
        };
        // Deterministic, and the same key on every call.
        assert_eq!(order(42), order(42));
        assert_eq!(
            node_order_key(42, "openb-node-0007"),
            node_order_key(42, "openb-node-0007")
        );
        // Another seed, another order; neither is the name order.
        assert_ne!(order(42), order(43));
        assert_ne!(order(42), names);
        // No two names share a key (the order is a permutation without ties).
        let mut keys: Vec<u64> = names.iter().map(|n| node_order_key(42, n)).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), names.len());
        // The first node is spread over the names, not stuck at one end: over 100 seeds the
        // first of 200 names is in the lower half about half of the time.
        let low = (0..100u64)
            .filter(|&s| {
                let first = names
                    .iter()
                    .min_by_key(|n| node_order_key(s, n))
                    .expect("names");
                first.as_str() < "openb-node-0100"
            })
            .count();
        assert!((30..=70).contains(&low), "{low}");
    }

    #[test]
    fn keyed_tie_break_takes_the_least_key_of_the_top_nodes() {
        let keys = [5u64, 1, 9, 0, 3];
        // Position 3 has the least key but not the top total; 1 wins among 0, 1, 4.
        assert_eq!(select_host_by_key(&[7, 7, 2, 6, 7], |j| keys[j]), 1);
        assert_eq!(select_host_by_key(&[1, 1, 1, 1, 1], |j| keys[j]), 3);
        assert_eq!(select_host_by_key(&[0, 0, 9, 0, 0], |j| keys[j]), 2);
    }
}
