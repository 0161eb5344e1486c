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
}
