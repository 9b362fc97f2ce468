//! BM25F: Okapi BM25 over a document made of weighted fields, each length-normalised on its own
//! (Zaragoza, Craswell, Taylor, Saria and Robertson, "Microsoft Cambridge at TREC-13", 2004).
//!
//! A tool's text comes in fields (name, description, parameters, examples, search-only text); field
//! `f` has a weight `w_f` and a length normalisation `b_f`. With `tf_f(t, d)` the frequency of term
//! `t` in field `f` of tool `d`, `|d_f|` that field's length and `avg_f` its mean over the tools
//! whose field `f` is not empty (Lucene's `docCount`), the pseudo-frequency and the score of a
//! tool for a query `q` over a catalog of `N` tools, `df(t)` of which contain `t`, are
//!
//! ```text
//! tf~(t, d)  = Σ_f  w_f · tf_f(t, d) / (1 − b_f + b_f · |d_f| / avg_f)
//! idf(t)     = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! score(q, d) = Σ_{t ∈ q}  idf(t) · tf~(t, d) · (k1 + 1) / (tf~(t, d) + k1)
//! ```
//!
//! A query term counts once however often it is repeated (Robertson's `k3 = 0`).
//!
//! Besides its (stemmed) term, a word of five letters or more is indexed under a *prefix term*, its
//! first four letters ([`crate::tokenizer::prefix_term`]), counted in the same fields (without
//! adding to their lengths) and scored like any term; a query word adds its prefix term at
//! [`Bm25Params::prefix_weight`] times its own weight. Derivations the stemmer keeps apart
//! (`multiplication`, `multiply`) then still match, more weakly than the word itself. A prefix
//! term found in more than one tool in fifty ([`crate::index::PREFIX_MAX_SHARE`]; and in more than
//! 500) gets no postings.
//!
//! `tf~`, and so its saturated value
//! `tf~ · (k1 + 1) / (tf~ + k1)` (the posting's *impact*, in (0, k1 + 1]), depend only on the tool:
//! the impact is computed at build time and stored in the postings, so a query costs one
//! multiply-add per posting. The `+1` inside the logarithm keeps every idf positive, so any
//! matching tool scores above zero.

use crate::error::{Error, Result};

/// Largest field or query weight. Bounded so that every score stays a finite number: with
/// k1 ≤ 1e6 as well, no product or sum in scoring can overflow an `f32`.
pub const MAX_WEIGHT: f32 = 1e6;

/// Smallest non-zero field weight: with it, every occurrence adds a positive pseudo-frequency
/// (no field is long enough to divide it down to 0), so a tool never holds a posting worth 0.
pub const MIN_FIELD_WEIGHT: f32 = 1e-6;

/// Weight and length normalisation of one field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldParams {
    /// Multiplies the field's term frequencies: 0 leaves the field out, otherwise in
    /// [[`MIN_FIELD_WEIGHT`], [`MAX_WEIGHT`]].
    pub weight: f32,
    /// Length normalisation of the field, in [0, 1].
    pub b: f32,
}

/// BM25F parameters: the saturation `k1` and one [`FieldParams`] per field.
#[derive(Debug, Clone, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation (≥ 0).
    pub k1: f32,
    /// Parameters of each field, in the order documents give their fields.
    pub fields: Vec<FieldParams>,
    /// Query weight of a word's prefix term relative to the word's own term, in
    /// [0, [`MAX_WEIGHT`]]; 0 matches words only (see [`crate::tokenizer::prefix_term`]).
    pub prefix_weight: f32,
}

/// Default [`Bm25Params::prefix_weight`], chosen on the BFCL dev set (0.35–0.6 score alike there).
pub const DEFAULT_PREFIX_WEIGHT: f32 = 0.4;

/// Default [`Bm25Params::k1`], tuned on BFCL (`benches/tune_lexical.py`); the one default of
/// `toolsift.Index(k1=...)` too, which reads it as `_core.DEFAULT_K1`.
pub const DEFAULT_K1: f32 = 0.9;

impl Default for Bm25Params {
    /// BM25 over a single field: k1 = [`DEFAULT_K1`], b = 0.75, prefix terms at
    /// [`DEFAULT_PREFIX_WEIGHT`].
    fn default() -> Self {
        Bm25Params {
            k1: DEFAULT_K1,
            fields: vec![FieldParams {
                weight: 1.0,
                b: 0.75,
            }],
            prefix_weight: DEFAULT_PREFIX_WEIGHT,
        }
    }
}

fn invalid(name: &'static str, reason: String) -> Error {
    Error::InvalidParameter { name, reason }
}

impl Bm25Params {
    /// Checks every parameter is in its domain.
    pub fn validate(&self) -> Result<()> {
        if !(0.0..=MAX_WEIGHT).contains(&self.k1) {
            return Err(invalid(
                "k1",
                format!("{} is not a number in [0, {MAX_WEIGHT:e}]", self.k1),
            ));
        }
        if !(0.0..=MAX_WEIGHT).contains(&self.prefix_weight) {
            return Err(invalid(
                "prefix_weight",
                format!(
                    "{} is not a number in [0, {MAX_WEIGHT:e}]",
                    self.prefix_weight
                ),
            ));
        }
        for f in &self.fields {
            if !(f.weight == 0.0 || (MIN_FIELD_WEIGHT..=MAX_WEIGHT).contains(&f.weight)) {
                return Err(invalid(
                    "field weight",
                    format!(
                        "{} is neither 0 nor a number in [{MIN_FIELD_WEIGHT:e}, {MAX_WEIGHT:e}]",
                        f.weight
                    ),
                ));
            }
            if !(f.b.is_finite() && (0.0..=1.0).contains(&f.b)) {
                return Err(invalid("b", format!("{} is not in [0, 1]", f.b)));
            }
        }
        Ok(())
    }

    /// Contribution of `count` occurrences in field `f` of length `len` (mean `avg`) to `tf~`.
    pub fn field_tf(&self, f: usize, count: f32, len: f32, avg: f32) -> f32 {
        let p = self.fields[f];
        let ratio = if avg > 0.0 { len / avg } else { 0.0 };
        p.weight * count / (1.0 - p.b + p.b * ratio)
    }

    /// The impact of a posting with pseudo-frequency `tf`: what it adds to a tool's score per
    /// unit of query-term weight (`idf · qtf`).
    pub fn impact(&self, tf: f32) -> f32 {
        tf * (self.k1 + 1.0) / (tf + self.k1)
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
    fn longer_fields_weigh_each_occurrence_less() {
        let p = Bm25Params::default();
        assert!(p.field_tf(0, 1.0, 5.0, 10.0) > p.field_tf(0, 1.0, 20.0, 10.0));
    }

    #[test]
    fn score_saturates_with_tf() {
        let p = Bm25Params::default();
        assert!(p.impact(2.0) < 2.0 * p.impact(1.0));
        assert!(p.impact(1000.0) < p.k1 + 1.0);
    }

    #[test]
    fn weights_multiply_and_b_zero_ignores_length() {
        let p = Bm25Params {
            k1: 1.2,
            fields: vec![FieldParams {
                weight: 3.0,
                b: 0.0,
            }],
            ..Bm25Params::default()
        };
        assert_eq!(p.field_tf(0, 2.0, 50.0, 10.0), 6.0);
    }

    #[test]
    fn out_of_domain_parameters_are_refused() {
        let field = |weight, b| Bm25Params {
            k1: 1.2,
            fields: vec![FieldParams { weight, b }],
            ..Bm25Params::default()
        };
        assert!(Bm25Params {
            k1: f32::NAN,
            ..Bm25Params::default()
        }
        .validate()
        .is_err());
        assert!(Bm25Params {
            prefix_weight: -0.5,
            ..Bm25Params::default()
        }
        .validate()
        .is_err());
        assert!(field(1.0, 1.5).validate().is_err());
        assert!(field(-1.0, 0.5).validate().is_err());
        assert!(field(f32::INFINITY, 0.5).validate().is_err());
        assert!(field(1e-45, 0.5).validate().is_err());
        assert!(
            field(0.0, 0.5).validate().is_ok() && field(MIN_FIELD_WEIGHT, 0.5).validate().is_ok()
        );
        assert!(Bm25Params::default().validate().is_ok());
    }
}
