//! Exact cosine scores of one query vector against every tool vector.
//!
//! The dense side (Python's `toolsift.dense.DenseIndex`) searches catalogs below a few thousand
//! tools exactly, by one matrix-vector product per query. numpy hands that product to its BLAS,
//! whose worker threads then compete for the cores with the query's encoder (onnxruntime's
//! threads) on the next request: on two cores that cost 0.5-0.7 ms a hybrid request
//! (`benches/RESULTS.md`, "Where a hybrid request's time goes"). This loop runs on the calling
//! thread only, with the GIL released.

use crate::topk::{rank, Hit};

/// Lanes summed side by side: wide enough for the compiler to use SIMD registers, and a fixed
/// order of additions, so a score is the same on every run.
const LANES: usize = 16;

/// The dot product of each `dim`-long row of `matrix` with `query` (`dim = query.len()`), in
/// row order. `matrix.len()` must be a multiple of `query.len()`; an empty query gives no rows.
pub fn dot_rows(matrix: &[f32], query: &[f32]) -> Vec<f32> {
    if query.is_empty() {
        return Vec::new();
    }
    matrix
        .chunks_exact(query.len())
        .map(|row| dot(row, query))
        .collect()
}

/// The `k` rows of `matrix` (rows of `query.len()` numbers; `rows` of them, which an empty
/// query needs) nearest `query` among those `allowed` marks (every row without a mask):
/// `(row numbers, scores)` in the one ranking order ([`Hit::rank_cmp`]: highest first, ties by
/// row number); a NaN score ranks lowest. A row's score is [`dot_rows`]'s. Only allowed rows
/// are read: the product is bound by memory bandwidth at catalog scale (50,000 rows of 384
/// numbers are 77 MB), so a caller allowed a fifth of them pays about a fifth of the time.
/// `allowed`, when given, has one entry per row.
pub fn best_rows(
    matrix: &[f32],
    query: &[f32],
    rows: usize,
    k: usize,
    allowed: Option<&[bool]>,
) -> (Vec<u32>, Vec<f32>) {
    let dim = query.len();
    let mut found: Vec<Hit> = (0..rows)
        .filter(|&row| allowed.is_none_or(|a| a[row]))
        .map(|row| {
            let score = if dim == 0 {
                0.0
            } else {
                dot(&matrix[row * dim..(row + 1) * dim], query)
            };
            Hit {
                doc: row as u32,
                // -0.0 ties with 0.0, and a NaN sorts below every number (the total order puts
                // a NaN with its sign bit set lowest)
                score: if score.is_nan() {
                    -f32::NAN
                } else {
                    score + 0.0
                },
            }
        })
        .collect();
    if k == 0 {
        found.clear();
    } else if k < found.len() {
        found.select_nth_unstable_by(k - 1, Hit::rank_cmp);
        found.truncate(k);
    }
    rank(&mut found);
    found.into_iter().map(|h| (h.doc, h.score)).unzip()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let (a_body, a_tail) = a.split_at(a.len() - a.len() % LANES);
    let (b_body, b_tail) = b.split_at(a_body.len());
    for (x, y) in a_body.chunks_exact(LANES).zip(b_body.chunks_exact(LANES)) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    let mut sum = acc.iter().sum::<f32>();
    for (x, y) in a_tail.iter().zip(b_tail) {
        sum += x * y;
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_row_gets_its_dot_product_tails_included() {
        let query: Vec<f32> = (0..11).map(|i| i as f32).collect();
        let rows: Vec<f32> = (0..33).map(|i| (i % 7) as f32 - 3.0).collect();
        let got = dot_rows(&rows, &query);
        let want: Vec<f32> = rows
            .chunks(11)
            .map(|r| r.iter().zip(&query).map(|(x, y)| x * y).sum())
            .collect();
        assert_eq!(got, want); // small integers: exact whatever the order
        assert!(dot_rows(&rows, &[]).is_empty());
    }

    #[test]
    fn best_rows_keeps_the_best_allowed_rows_ties_by_row() {
        // one-number rows: a row's score is its number (the query is [1])
        let rows = [1.0, 3.0, 3.0, 0.0, 3.0, 2.0, f32::NAN];
        let best = |k, allowed| best_rows(&rows, &[1.0], rows.len(), k, allowed);
        assert_eq!(best(3, None), (vec![1, 2, 4], vec![3.0, 3.0, 3.0]));
        let allowed = [true, false, true, true, false, true, true];
        assert_eq!(best(2, Some(&allowed)), (vec![2, 5], vec![3.0, 2.0]));
        assert_eq!(best(9, Some(&allowed)).0, vec![2, 5, 0, 3, 6]);
        assert!(best(0, None).0.is_empty());
    }

    #[test]
    fn best_rows_scores_as_dot_rows_does_and_an_empty_query_scores_zero() {
        let query: Vec<f32> = (0..19).map(|i| (i as f32 * 0.37).sin()).collect();
        let matrix: Vec<f32> = (0..19 * 40).map(|i| (i as f32 * 0.11).cos()).collect();
        let all = dot_rows(&matrix, &query);
        let allowed: Vec<bool> = (0..40).map(|r| r % 3 != 0).collect();
        let (ids, scores) = best_rows(&matrix, &query, 40, 40, Some(&allowed));
        assert_eq!(ids.len(), allowed.iter().filter(|&&a| a).count());
        for (id, score) in ids.iter().zip(&scores) {
            assert!(allowed[*id as usize]);
            assert_eq!(score.to_bits(), (all[*id as usize] + 0.0).to_bits());
        }
        assert_eq!(
            best_rows(&[], &[], 3, 2, None),
            (vec![0, 1], vec![0.0, 0.0])
        );
    }
}
