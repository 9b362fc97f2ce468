//! Conversions between core results and plain Python/numpy values.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;

use crate::budget::Packing;
use crate::postings::DocId;
use crate::topk::Hit;

/// Hits as `(positions: uint32[n], scores: float32[n])`, best first.
pub type HitArrays<'py> = (Bound<'py, PyArray1<u32>>, Bound<'py, PyArray1<f32>>);

/// Converts ranked hits into two numpy arrays without per-item Python objects.
pub fn hits<'py>(py: Python<'py>, hits: Vec<Hit>) -> HitArrays<'py> {
    let (docs, scores): (Vec<DocId>, Vec<f32>) = hits.into_iter().map(|h| (h.doc, h.score)).unzip();
    (docs.into_pyarray(py), scores.into_pyarray(py))
}

/// A packing as `(selected, num_core, used_tokens, dropped, core_over_budget)`.
pub type PackingTuple<'py> = (
    Bound<'py, PyArray1<u32>>,
    usize,
    u64,
    Bound<'py, PyArray1<u32>>,
    bool,
);

/// Converts a packing for Python.
pub fn packing(py: Python<'_>, p: Packing) -> PackingTuple<'_> {
    let dropped: Vec<DocId> = p.dropped.iter().map(|&(d, _)| d).collect();
    (
        p.selected.into_pyarray(py),
        p.num_core,
        p.used_tokens,
        dropped.into_pyarray(py),
        p.core_over_budget,
    )
}
