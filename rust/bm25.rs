//! Okapi BM25 with field-weighted term frequencies (the "simple BM25F" of Robertson et al.).
//!
//! A tool's text comes in fields (name, description, parameters, examples, search-only text), each
//! with a weight `w_f`. The weighted frequency of term `t` in tool `d` is `tf = Σ_f w_f · tf_f(t, d)`
//! and the tool's length is `|d| = Σ_f w_f · |d_f|`. With `N` tools and `df` of them containing `t`:
//!
//! ```text
//! idf(t)      = ln(1 + (N − df + 0.5) / (df + 0.5))
//! score(t, d) = idf(t) · tf · (k1 + 1) / (tf + k1 · (1 − b + b · |d| / avgdl))
//! ```
//!
//! A query scores the sum over its tokens (a repeated token counts each time). The `+1` inside the
//! logarithm keeps every idf positive, so any matching tool scores above zero.

use crate::error::{Error, Result};

/// BM25 parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation (≥ 0).
    pub k1: f32,
    /// Length normalisation, in [0, 1].
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 1.2, b: 0.75 }
    }
}

impl Bm25Params {
    /// Checks that both parameters are in their domain.
    pub fn validate(&self) -> Result<()> {
        if !(self.k1.is_finite() && self.k1 >= 0.0) {
            return Err(Error::InvalidParameter {
                name: "k1",
                reason: format!("{} is not a finite number ≥ 0", self.k1),
            });
        }
        if !(self.b.is_finite() && (0.0..=1.0).contains(&self.b)) {
            return Err(Error::InvalidParameter {
                name: "b",
                reason: format!("{} is not in [0, 1]", self.b),
            });
        }
        Ok(())
    }

    /// The per-document denominator term `k1 · (1 − b + b · len / avg_len)`.
    pub fn length_norm(&self, len: f32, avg_len: f32) -> f32 {
        let ratio = if avg_len > 0.0 { len / avg_len } else { 0.0 };
        self.k1 * (1.0 - self.b + self.b * ratio)
    }

    /// Score contribution of one posting, given the document's [`length_norm`](Self::length_norm).
    pub fn score(&self, idf: f32, tf: f32, norm: f32) -> f32 {
        idf * tf * (self.k1 + 1.0) / (tf + norm)
    }
}

/// Inverse document frequency of a term found in `df` of `n` tools.
pub fn idf(n: usize, df: usize) -> f32 {
    let (n, df) = (n as f32, df as f32);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idf_is_positive_and_falls_with_document_frequency() {
        assert!(idf(10, 10) > 0.0);
        assert!(idf(10, 1) > idf(10, 5));
    }

    #[test]
    fn score_saturates_with_tf_and_falls_with_length() {
        let p = Bm25Params::default();
        let short = p.length_norm(5.0, 10.0);
        let long = p.length_norm(20.0, 10.0);
        assert!(p.score(1.0, 1.0, short) > p.score(1.0, 1.0, long));
        assert!(p.score(1.0, 2.0, short) < 2.0 * p.score(1.0, 1.0, short));
    }

    #[test]
    fn out_of_domain_parameters_are_refused() {
        assert!(Bm25Params {
            k1: f32::NAN,
            b: 0.5
        }
        .validate()
        .is_err());
        assert!(Bm25Params { k1: 1.0, b: 1.5 }.validate().is_err());
        assert!(Bm25Params::default().validate().is_ok());
    }
}
