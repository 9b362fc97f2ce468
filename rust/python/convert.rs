//! Conversions between core results and plain Python/numpy values.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

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

/// A packing as `(selected, num_core, used_tokens, dropped, core_over_budget, min_cost)`
/// (`min_cost`: the caller's cheapest candidate, `None` when it has none); the positions as
/// tuples of ints (a selection is a few dozen tools: cheaper than arrays to make and read).
pub type PackingTuple<'py> = (
    Bound<'py, PyTuple>,
    usize,
    u64,
    Bound<'py, PyTuple>,
    bool,
    Option<u64>,
);

/// Converts a packing for Python.
pub fn packing(py: Python<'_>, p: Packing) -> PyResult<PackingTuple<'_>> {
    let dropped = p.dropped.iter().map(|&(d, _)| d);
    Ok((
        PyTuple::new(py, p.selected)?,
        p.num_core,
        p.used_tokens,
        PyTuple::new(py, dropped)?,
        p.core_over_budget,
        Some(p.min_cost).filter(|&c| c != u64::MAX),
    ))
}
