//! Fusion of a lexical and a dense ranking, the per-request step of a hybrid index (Python's
//! `toolsift.fusion` documents the rule): each side's scores become z-scores over that side's
//! top, a tool missing from one side counts as that side's lowest z-score, `alpha` weighs the
//! lexical side, and the fused ranking is best first with ties in registry order.
//!
//! Means and variances are summed as numpy sums (pairwise, eight accumulators), so the fused
//! scores are the ones the earlier numpy code gave, bit for bit, for finite scores (a flat side's
//! zeros aside, which numpy could sign): rankings did not move when the step came here
//! (`benches/RESULTS.md`). A side with a non-finite score counts as flat, where numpy gave NaN.

use std::cmp::Ordering;

/// Below this many values numpy adds them one by one; up to [`BLOCK`] with eight accumulators;
/// above, it splits the values in two halves (a multiple of eight first) and adds their sums.
const UNROLL: usize = 8;
const BLOCK: usize = 128;

/// The sum of `values` in numpy's order of additions (`numpy.sum` of a float64 array).
fn numpy_sum(values: &[f64]) -> f64 {
    0.0 + pairwise(values)
}

fn pairwise(a: &[f64]) -> f64 {
    let n = a.len();
    if n < UNROLL {
        return a.iter().fold(0.0, |sum, x| sum + x);
    }
    if n <= BLOCK {
        let mut r = [0.0f64; UNROLL];
        r.copy_from_slice(&a[..UNROLL]);
        let body = n - n % UNROLL;
        for chunk in a[UNROLL..body].chunks_exact(UNROLL) {
            for (acc, x) in r.iter_mut().zip(chunk) {
                *acc += x;
            }
        }
        let mut sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for x in &a[body..] {
            sum += x;
        }
        return sum;
    }
    let half = n / 2 - (n / 2) % UNROLL;
    pairwise(&a[..half]) + pairwise(&a[half..])
}

/// Each score's z-score within its side and the lowest of them. A side whose scores are all
/// equal (or that has a single score) says nothing about order: every z-score is then 0. So
/// does a side with a NaN or infinite score, or whose z-scores overflow (numpy gave NaN there,
/// which ranked a tool missing from that side first).
fn standardised(scores: &[f64]) -> (Vec<f64>, f64) {
    if scores.is_empty() {
        return (Vec::new(), 0.0);
    }
    let n = scores.len() as f64;
    let mean = numpy_sum(scores) / n;
    let squares: Vec<f64> = scores.iter().map(|s| (s - mean) * (s - mean)).collect();
    let spread = (numpy_sum(&squares) / n).sqrt();
    let largest = scores.iter().fold(0.0f64, |m, s| m.max(s.abs()));
    if spread.is_nan() || spread <= 1e-12 * largest.max(1.0) {
        return (vec![0.0; scores.len()], 0.0);
    }
    let z: Vec<f64> = scores.iter().map(|s| (s - mean) / spread).collect();
    if !z.iter().all(|v| v.is_finite()) {
        return (vec![0.0; scores.len()], 0.0);
    }
    let low = z.iter().copied().fold(f64::INFINITY, f64::min);
    (z, low)
}

/// One side's z-scores laid out over `union` (sorted, holding each of `positions`), `low` where
/// the side lacks a position. A position listed twice keeps its last score.
fn aligned(positions: &[u32], z: &[f64], low: f64, union: &[u32]) -> Vec<f64> {
    let mut out = vec![low; union.len()];
    for (p, &value) in positions.iter().zip(z) {
        if let Ok(at) = union.binary_search(p) {
            out[at] = value;
        }
    }
    out
}

/// A score ordered for ranking: NaN (every fused score, when `alpha` is NaN) as the lowest, so
/// that the order stays total.
fn rank_key(score: f64) -> f64 {
    if score.is_nan() {
        f64::NEG_INFINITY
    } else {
        score
    }
}

/// `alpha · z_lexical + (1 - alpha) · z_dense` over the tools of either side: `(positions,
/// scores)`, best first, ties by position. Each side is `(positions, scores)` of equal lengths.
pub fn fuse(
    lexical: (&[u32], &[f64]),
    dense: (&[u32], &[f64]),
    alpha: f64,
) -> (Vec<u32>, Vec<f64>) {
    let (za, a_low) = standardised(lexical.1);
    let (zb, b_low) = standardised(dense.1);
    let mut union: Vec<u32> = lexical.0.iter().chain(dense.0).copied().collect();
    union.sort_unstable();
    union.dedup();
    let a = aligned(lexical.0, &za, a_low, &union);
    let b = aligned(dense.0, &zb, b_low, &union);
    let rest = 1.0 - alpha;
    let scores: Vec<f64> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| alpha * x + rest * y)
        .collect();
    let mut order: Vec<usize> = (0..union.len()).collect();
    order.sort_unstable_by(|&i, &j| {
        rank_key(scores[j])
            .partial_cmp(&rank_key(scores[i]))
            .unwrap_or(Ordering::Equal)
            .then(union[i].cmp(&union[j]))
    });
    (
        order.iter().map(|&i| union[i]).collect(),
        order.iter().map(|&i| scores[i]).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_follow_numpys_blocks() {
        // 1e16 absorbs a 1 added to it alone but not a 1 added to another 1 first: the order of
        // additions shows in the result
        let mut values = vec![1e16, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        assert_eq!(numpy_sum(&values[..7]), 1e16); // one by one: each 1 absorbed
                                                   // eight accumulators: the ones pair up before meeting 1e16 (figures from numpy.sum)
        assert_eq!(numpy_sum(&values), 1e16 + 8.0);
        values.resize(300, 1.0);
        assert_eq!(numpy_sum(&values), 1e16 + 290.0); // numpy.sum gives the same; added in turn: 1e16
    }

    #[test]
    fn a_tool_found_by_both_sides_beats_one_found_by_one() {
        let (positions, scores) = fuse(
            (&[4, 2, 9], &[9.0, 5.0, 1.0]),
            (&[2, 7, 4], &[0.8, 0.5, 0.1]),
            0.5,
        );
        assert_eq!(positions[0], 2);
        assert_eq!(positions.len(), 4);
        assert!(scores.windows(2).all(|w| w[0] >= w[1]));
    }

    #[test]
    fn ties_break_by_position_and_flat_sides_say_nothing() {
        let (positions, scores) = fuse((&[5, 3, 8], &[2.0, 2.0, 2.0]), (&[], &[]), 0.7);
        assert_eq!(positions, vec![3, 5, 8]);
        assert!(scores.iter().all(|&s| s == 0.0));
        assert_eq!(fuse((&[], &[]), (&[], &[]), 0.7), (vec![], vec![]));
    }

    #[test]
    fn a_side_with_non_finite_or_overflowing_scores_counts_as_flat() {
        let dense: (&[u32], &[f64]) = (&[7, 4], &[0.9, 0.1]);
        for lexical in [
            [f64::NAN, 2.0, 1.0],
            [f64::INFINITY, 2.0, 1.0],
            [1e308, 1e308, -1e308], // finite, but the mean overflows
        ] {
            let (positions, scores) = fuse((&[1, 2, 3], &lexical), dense, 0.5);
            assert_eq!(positions, vec![7, 1, 2, 3, 4]); // the dense side's order decides
            assert!(scores.iter().all(|s| s.is_finite()));
        }
        let (positions, scores) = fuse((&[1, 2], &[2.0, 1.0]), dense, f64::NAN);
        assert_eq!(positions, vec![1, 2, 4, 7]); // every score NaN: position order
        assert!(scores.iter().all(|s| s.is_nan()));
    }

    #[test]
    fn a_position_listed_twice_keeps_its_last_score() {
        let once = fuse((&[1, 2, 3], &[3.0, 2.0, 1.0]), (&[], &[]), 0.5);
        let twice = fuse((&[1, 2, 3, 1], &[3.0, 2.0, 1.0, 0.5]), (&[], &[]), 0.5);
        assert_eq!(once.0, vec![1, 2, 3]);
        assert_eq!(twice.0, vec![2, 3, 1]);
    }
}
