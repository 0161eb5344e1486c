//! Score helpers shared by plugins: kubernetes/kubernetes `pkg/scheduler/framework/plugins/helper`
//! (v1.22): `normalize_score.go` `DefaultNormalizeScore` and `shape_score.go`
//! `BuildBrokenLinearFunction` (index id 117965574).

use crate::framework::MAX_NODE_SCORE;

/// `helper.DefaultNormalizeScore(MaxNodeScore, reverse, scores)`: scales raw scores so the
/// highest becomes [`MAX_NODE_SCORE`] (`MAX * s / max`, integer division); `reverse` then maps
/// each `s` to `MAX - s`. When every score is 0 the scores stay 0 (or all become MAX when
/// `reverse`).
pub fn default_normalize_score(reverse: bool, scores: &mut [i64]) {
    let max_count = scores.iter().copied().max().unwrap_or(0).max(0);
    if max_count == 0 {
        if reverse {
            scores.fill(MAX_NODE_SCORE);
        }
        return;
    }
    for s in scores.iter_mut() {
        let v = MAX_NODE_SCORE * *s / max_count;
        *s = if reverse { MAX_NODE_SCORE - v } else { v };
    }
}

/// `helper.FunctionShapePoint`: a point of a piecewise-linear function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionShapePoint {
    /// Argument (utilization, percent).
    pub utilization: i64,
    /// Value (score).
    pub score: i64,
}

/// `helper.BuildBrokenLinearFunction` evaluated at `p`: `shape[0].score` up to the first point,
/// the last score beyond the last point, linear in between with Go's truncating integer
/// division. `shape` must be non-empty with strictly increasing utilizations (the arguments'
/// validation guarantees it); an empty shape gives 0.
pub fn broken_linear(shape: &[FunctionShapePoint], p: i64) -> i64 {
    for (i, pt) in shape.iter().enumerate() {
        if p <= pt.utilization {
            if i == 0 {
                return shape[0].score;
            }
            let prev = shape[i - 1];
            return prev.score
                + (pt.score - prev.score) * (p - prev.utilization)
                    / (pt.utilization - prev.utilization);
        }
    }
    shape.last().map_or(0, |pt| pt.score)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream `helper/normalize_score_test.go` `TestDefaultNormalizeScore` (index id
    /// 114182699; the v1.22 table).
    #[test]
    fn test_default_normalize_score() {
        let cases: &[(bool, &[i64], &[i64])] = &[
            (false, &[1, 2, 3, 4], &[25, 50, 75, 100]),
            (true, &[1, 2, 3, 4], &[75, 50, 25, 0]),
            (false, &[1000, 10, 20, 30], &[100, 1, 2, 3]),
            (true, &[1000, 10, 20, 30], &[0, 99, 98, 97]),
            (false, &[1, 1, 1, 1], &[100, 100, 100, 100]),
            (false, &[1000, 1, 1, 1], &[100, 0, 0, 0]),
            (true, &[0, 1, 1, 1], &[100, 0, 0, 0]),
            (false, &[0, 0, 0, 0], &[0, 0, 0, 0]),
            (true, &[0, 0, 0, 0], &[100, 100, 100, 100]),
        ];
        for (i, (reverse, scores, want)) in cases.iter().enumerate() {
            let mut got = scores.to_vec();
            default_normalize_score(*reverse, &mut got);
            assert_eq!(&got, want, "case_{i}");
        }
    }

    /// Upstream `TestBrokenLinearFunction` (read from the v1.21-era
    /// `noderesources/requested_to_capacity_ratio_test.go`, index id 419779212; the helper moved
    /// to `helper/shape_score.go` with the same function and table).
    #[test]
    #[allow(clippy::type_complexity)]
    fn test_broken_linear_function() {
        let pts = |v: &[(i64, i64)]| -> Vec<FunctionShapePoint> {
            v.iter()
                .map(|&(utilization, score)| FunctionShapePoint { utilization, score })
                .collect()
        };
        let cases: Vec<(Vec<FunctionShapePoint>, &[(i64, i64)])> = vec![
            (
                pts(&[(10, 1), (90, 9)]),
                &[
                    (-10, 1),
                    (0, 1),
                    (9, 1),
                    (10, 1),
                    (15, 1),
                    (19, 1),
                    (20, 2),
                    (89, 8),
                    (90, 9),
                    (99, 9),
                    (100, 9),
                    (110, 9),
                ],
            ),
            (
                pts(&[(0, 2), (40, 10), (100, 0)]),
                &[
                    (-10, 2),
                    (0, 2),
                    (20, 6),
                    (30, 8),
                    (40, 10),
                    (70, 5),
                    (100, 0),
                    (110, 0),
                ],
            ),
            (
                pts(&[(0, 2), (40, 2), (100, 2)]),
                &[
                    (-10, 2),
                    (0, 2),
                    (20, 2),
                    (30, 2),
                    (40, 2),
                    (70, 2),
                    (100, 2),
                    (110, 2),
                ],
            ),
        ];
        for (shape, assertions) in cases {
            for &(p, want) in assertions {
                assert_eq!(broken_linear(&shape, p), want, "shape={shape:?}, p={p}");
            }
        }
    }
}
