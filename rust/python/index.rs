//! `toolsift._core.Index`: an immutable, thread-shareable handle on a built core index.

use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use super::convert::{self, HitArrays, PackingTuple};
use super::errors::detached;
use super::schema;
use crate::bm25::{Bm25Params, FieldParams, DEFAULT_K1, DEFAULT_PREFIX_WEIGHT};
use crate::error::Error;
use crate::index::{DocInput, Index, IndexBuilder, Query};
use crate::permissions::CallerMask;

/// Built index; every query method releases the GIL.
#[pyclass(frozen, name = "Index", module = "toolsift._core")]
pub struct PyIndex {
    inner: Arc<Index>,
}

/// A caller's permissions compiled against one index (see `PyIndex::caller`), so that a
/// caller reused across queries is not re-validated and re-hashed each time.
#[pyclass(frozen, name = "Caller", module = "toolsift._core")]
pub struct PyCaller {
    mask: CallerMask,
    /// The index the mask was compiled for (permission ids mean nothing elsewhere); held, so
    /// that its address cannot be reused by another index while this caller exists.
    owner: Arc<Index>,
}

impl PyIndex {
    /// `position` when the index has a tool there, else `IndexError`.
    fn position(&self, position: u32) -> PyResult<u32> {
        if (position as usize) < self.inner.len() {
            Ok(position)
        } else {
            Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "no tool at position {position}"
            )))
        }
    }

    /// The caller's mask, refused when it was compiled for another index.
    fn mask<'c>(&self, caller: &'c PyCaller) -> PyResult<&'c CallerMask> {
        if Arc::ptr_eq(&caller.owner, &self.inner) {
            Ok(&caller.mask)
        } else {
            Err(pyo3::exceptions::PyValueError::new_err(
                "this Caller was compiled for another index",
            ))
        }
    }
}

fn check_len(field: &'static str, got: usize, expected: usize) -> Result<(), Error> {
    if got == expected {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            field,
            expected,
            got,
        })
    }
}

/// A query as Python passes it: one text of weight 1 (the common case, without building a list
/// of pairs on either side), or `(text, weight)` pairs.
#[derive(FromPyObject)]
enum QueryArg {
    Text(String),
    Parts(Vec<(String, f32)>),
}

impl QueryArg {
    fn query(&self) -> Query<'_> {
        match self {
            QueryArg::Text(text) => Query::from(text.as_str()),
            QueryArg::Parts(parts) => Query(parts.iter().map(|(t, w)| (t.as_str(), *w)).collect()),
        }
    }
}

/// Tools read from Python per batch, so that the text of a large catalog is never held whole:
/// each field's text (a `dict` field as its schema text, see [`schema::schema_text`]) and the
/// permissions of each tool, in flat buffers.
#[derive(Default)]
struct Batch {
    text: String,
    /// End of each field text in `text`: `fields` per tool.
    text_ends: Vec<usize>,
    perms: String,
    /// End of each permission in `perms`, and how many each tool has.
    perm_ends: Vec<usize>,
    perm_counts: Vec<usize>,
}

/// Tools per batch: big enough that releasing the GIL per batch costs nothing, small enough
/// that a batch's text stays a few megabytes.
const BATCH: usize = 4096;

impl Batch {
    /// Reads tools `range` (every column already checked to be long enough).
    fn read(
        &mut self,
        fields: &[Bound<'_, PyList>],
        perms: &Bound<'_, PyList>,
        range: std::ops::Range<usize>,
    ) -> PyResult<()> {
        self.text.clear();
        self.text_ends.clear();
        self.perms.clear();
        self.perm_ends.clear();
        self.perm_counts.clear();
        for i in range {
            for column in fields {
                field_text(&column.get_item(i)?, &mut self.text)?;
                self.text_ends.push(self.text.len());
            }
            let required = perms.get_item(i)?;
            let count = match required.cast::<PyTuple>() {
                Ok(tuple) => self.push_perms(tuple.iter())?,
                Err(_) => self.push_perms(required.cast::<PyList>()?.iter())?,
            };
            self.perm_counts.push(count);
        }
        Ok(())
    }

    /// Appends one tool's permissions (a list or tuple of strings); returns how many.
    fn push_perms<'py>(
        &mut self,
        perms: impl Iterator<Item = Bound<'py, PyAny>>,
    ) -> PyResult<usize> {
        let mut count = 0;
        for p in perms {
            self.perms.push_str(p.cast::<PyString>()?.to_str()?);
            self.perm_ends.push(self.perms.len());
            count += 1;
        }
        Ok(count)
    }

    /// Adds the batch's tools to `builder`, with their `costs` and `core` flags.
    fn add(&self, builder: &mut IndexBuilder, costs: &[u32], core: &[bool]) -> Result<(), Error> {
        let nf = self.text_ends.len() / costs.len().max(1);
        let (mut text_start, mut perm_at, mut perm_start) = (0, 0, 0);
        let mut texts: Vec<&str> = Vec::with_capacity(nf);
        let mut required: Vec<&str> = Vec::new();
        for (doc, (&cost_tokens, &core)) in costs.iter().zip(core).enumerate() {
            texts.clear();
            for &end in &self.text_ends[doc * nf..(doc + 1) * nf] {
                texts.push(&self.text[text_start..end]);
                text_start = end;
            }
            required.clear();
            for &end in &self.perm_ends[perm_at..perm_at + self.perm_counts[doc]] {
                required.push(&self.perms[perm_start..end]);
                perm_start = end;
            }
            perm_at += self.perm_counts[doc];
            builder.add(&DocInput {
                fields: &texts,
                perms: &required,
                cost_tokens,
                core,
            })?;
        }
        Ok(())
    }
}

/// Appends the text of one field entry: a string as it is, a mapping as its schema text.
fn field_text(entry: &Bound<'_, PyAny>, out: &mut String) -> PyResult<()> {
    if let Ok(text) = entry.cast::<PyString>() {
        out.push_str(text.to_str()?);
        return Ok(());
    }
    let start = out.len();
    if entry.cast::<PyDict>().is_ok() && schema::schema_text(entry, out).is_ok() {
        return Ok(());
    }
    out.truncate(start); // not modelled exactly: the Python reference says
    let text = entry
        .py()
        .import("toolsift.text")?
        .getattr("schema_text")?
        .call1((entry,))?;
    out.push_str(text.cast::<PyString>()?.to_str()?);
    Ok(())
}

/// Builds the core index from column-major inputs (one list per field, one entry per tool),
/// the GIL released for all but the reading of each batch.
fn build(
    py: Python<'_>,
    fields: &[Bound<'_, PyList>],
    perms: &Bound<'_, PyList>,
    costs: &[u32],
    core: &[bool],
    params: Bm25Params,
    keep_terms: bool,
) -> PyResult<Index> {
    let n = costs.len();
    check_len("perms", perms.len(), n)?;
    check_len("core", core.len(), n)?;
    check_len("fields", fields.len(), params.fields.len())?;
    fields
        .iter()
        .try_for_each(|f| check_len("fields", f.len(), n))?;
    let mut builder = IndexBuilder::new(params)?;
    let mut batch = Batch::default();
    for start in (0..n).step_by(BATCH) {
        let range = start..(start + BATCH).min(n);
        batch.read(fields, perms, range.clone())?;
        let (costs, core) = (&costs[range.clone()], &core[range]);
        let (b, builder) = (&batch, &mut builder);
        detached(py, move || b.add(builder, costs, core))??;
    }
    detached(py, move || {
        if keep_terms {
            builder.build_with_terms()
        } else {
            builder.build()
        }
    })
}

#[pymethods]
impl PyIndex {
    #[new]
    #[pyo3(signature = (fields, weights, bs, perms, costs, core, k1 = DEFAULT_K1, prefix_weight = DEFAULT_PREFIX_WEIGHT, keep_terms = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        fields: Vec<Bound<'_, PyList>>,
        weights: Vec<f32>,
        bs: Vec<f32>,
        perms: Bound<'_, PyList>,
        costs: Vec<u32>,
        core: Vec<bool>,
        k1: f32,
        prefix_weight: f32,
        keep_terms: bool,
    ) -> PyResult<Self> {
        check_len("bs", bs.len(), weights.len())?;
        let fields_params = weights
            .iter()
            .zip(&bs)
            .map(|(&weight, &b)| FieldParams { weight, b })
            .collect();
        let params = Bm25Params {
            k1,
            fields: fields_params,
            prefix_weight,
        };
        let built = build(py, &fields, &perms, &costs, &core, params, keep_terms)?;
        Ok(PyIndex {
            inner: Arc::new(built),
        })
    }

    /// The index of only the tools at `positions` (ascending), each public (see
    /// `Index::subset`); needs an index built with `keep_terms=True`.
    fn subset(&self, py: Python<'_>, positions: PyReadonlyArray1<'_, u32>) -> PyResult<Self> {
        let (idx, docs) = (&*self.inner, positions.as_slice()?);
        let sub = detached(py, move || idx.subset(docs))??;
        Ok(PyIndex {
            inner: Arc::new(sub),
        })
    }

    /// True when the index keeps its tools' term counts (built with `keep_terms=True`).
    #[getter]
    fn keeps_terms(&self) -> bool {
        self.inner.keeps_terms()
    }

    /// The index as snapshot bytes (format version and checksum included).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let idx = Arc::clone(&self.inner);
        let bytes = detached(py, move || idx.to_bytes())?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// An index from snapshot bytes; a bad snapshot raises `SnapshotError`.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        // read in place: a bytes object is immutable, and the caller holds it
        let index = detached(py, move || Index::from_bytes(data))??;
        Ok(PyIndex {
            inner: Arc::new(index),
        })
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// `(positions, scores)` of the `k` best tools the caller may use, best first.
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: QueryArg,
        caller: &PyCaller,
        k: usize,
    ) -> PyResult<HitArrays<'py>> {
        let (idx, mask) = (&*self.inner, self.mask(caller)?);
        let hits = detached(py, move || idx.search(query.query(), mask, k))?;
        Ok(convert::hits(py, hits))
    }

    /// `(selected, num_core, used_tokens, dropped, core_over_budget)` of a budgeted selection.
    #[pyo3(signature = (query, caller, budget_tokens, max_taken = None))]
    fn select<'py>(
        &self,
        py: Python<'py>,
        query: QueryArg,
        caller: &PyCaller,
        budget_tokens: u64,
        max_taken: Option<usize>,
    ) -> PyResult<PackingTuple<'py>> {
        let (idx, mask) = (&*self.inner, self.mask(caller)?);
        let packing = detached(py, move || {
            idx.select(query.query(), mask, budget_tokens, max_taken)
        })?;
        convert::packing(py, packing)
    }

    /// `search` for many queries in one call (one caller), the GIL released throughout.
    fn search_many<'py>(
        &self,
        py: Python<'py>,
        queries: Vec<QueryArg>,
        caller: &PyCaller,
        k: usize,
    ) -> PyResult<Vec<HitArrays<'py>>> {
        let (idx, mask) = (&*self.inner, self.mask(caller)?);
        let all = detached(py, move || {
            queries
                .iter()
                .map(|q| idx.search(q.query(), mask, k))
                .collect::<Vec<_>>()
        })?;
        Ok(all
            .into_iter()
            .map(|hits| convert::hits(py, hits))
            .collect())
    }

    /// `select` for many queries in one call (one caller), the GIL released throughout.
    #[pyo3(signature = (queries, caller, budget_tokens, max_taken = None))]
    fn select_many<'py>(
        &self,
        py: Python<'py>,
        queries: Vec<QueryArg>,
        caller: &PyCaller,
        budget_tokens: u64,
        max_taken: Option<usize>,
    ) -> PyResult<Vec<PackingTuple<'py>>> {
        let (idx, mask) = (&*self.inner, self.mask(caller)?);
        let all = detached(py, move || {
            queries
                .iter()
                .map(|q| idx.select(q.query(), mask, budget_tokens, max_taken))
                .collect::<Vec<_>>()
        })?;
        all.into_iter().map(|p| convert::packing(py, p)).collect()
    }

    /// Like `select`, but packs the given ranking (best first) instead of the lexical one.
    #[pyo3(signature = (ranked, caller, budget_tokens, max_taken = None))]
    fn select_ranked<'py>(
        &self,
        py: Python<'py>,
        ranked: PyReadonlyArray1<'py, u32>,
        caller: &PyCaller,
        budget_tokens: u64,
        max_taken: Option<usize>,
    ) -> PyResult<PackingTuple<'py>> {
        let (idx, mask) = (&*self.inner, self.mask(caller)?);
        let ranked = ranked.as_array().to_vec();
        let packing = detached(py, move || {
            idx.pack_ranked(&ranked, mask, budget_tokens, max_taken)
        })?;
        convert::packing(py, packing)
    }

    /// For every tool, whether a caller holding `caller` may use it.
    fn allowed_mask<'py>(
        &self,
        py: Python<'py>,
        caller: &PyCaller,
    ) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let (idx, mask) = (&*self.inner, self.mask(caller)?);
        let mask = detached(py, move || idx.allowed_mask(mask))?;
        Ok(mask.into_pyarray(py))
    }

    /// True when a caller holding `caller` may use the tool at `position`.
    fn allows(&self, caller: &PyCaller, position: u32) -> PyResult<bool> {
        Ok(self.inner.allows(self.mask(caller)?, position))
    }

    /// `caller` (permission strings) compiled for this index, to pass to the query methods.
    fn caller(&self, py: Python<'_>, caller: Vec<String>) -> PyResult<PyCaller> {
        let idx = &*self.inner;
        Ok(PyCaller {
            mask: detached(py, move || idx.caller(&caller))?,
            owner: Arc::clone(&self.inner),
        })
    }

    /// `caller` narrowed to the tools at the positions of `scope` (a group); with `keep_core`
    /// the core tools stay allowed too. Narrowing never adds a tool the caller may not use.
    #[pyo3(signature = (caller, scope, keep_core = false))]
    fn within(
        &self,
        py: Python<'_>,
        caller: &PyCaller,
        scope: PyReadonlyArray1<'_, u32>,
        keep_core: bool,
    ) -> PyResult<PyCaller> {
        let (idx, mask) = (&*self.inner, self.mask(caller)?);
        let scope = scope.as_array().to_vec();
        Ok(PyCaller {
            mask: detached(py, move || idx.within(mask, &scope, keep_core))?,
            owner: Arc::clone(&self.inner),
        })
    }

    /// The relevance gate's evidence of each tool at `positions` for `query` (see
    /// `toolsift::relevance`).
    fn evidence(&self, py: Python<'_>, query: QueryArg, positions: Vec<u32>) -> PyResult<Vec<f32>> {
        for &p in &positions {
            self.position(p)?;
        }
        let idx = &*self.inner;
        detached(py, move || idx.evidence(query.query(), &positions))
    }

    /// Token cost of the tool at `position`.
    fn cost(&self, position: u32) -> PyResult<u32> {
        Ok(self.inner.cost(self.position(position)?))
    }

    /// The permissions the tool at `position` requires, as the index enforces them.
    fn permissions(&self, position: u32) -> PyResult<Vec<String>> {
        let doc = self.position(position)?;
        Ok(self
            .inner
            .permissions(doc)
            .into_iter()
            .map(str::to_owned)
            .collect())
    }

    /// True when the tool at `position` is a core tool.
    fn is_core(&self, position: u32) -> PyResult<bool> {
        Ok(self.inner.is_core(self.position(position)?))
    }

    /// How many tools are core tools.
    fn num_core(&self) -> usize {
        self.inner.num_core()
    }

    /// Heap bytes the index holds (postings, dictionary, permissions, per-tool arrays).
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }

    /// BM25 term-frequency saturation.
    #[getter]
    fn k1(&self) -> f32 {
        self.inner.params().k1
    }

    /// `(weight, b)` of each field, in the order the fields were given.
    #[getter]
    fn field_params(&self) -> Vec<(f32, f32)> {
        let fields = &self.inner.params().fields;
        fields.iter().map(|f| (f.weight, f.b)).collect()
    }

    #[getter]
    fn num_terms(&self) -> usize {
        self.inner.num_terms()
    }

    #[getter]
    fn num_postings(&self) -> usize {
        self.inner.num_postings()
    }

    #[getter]
    fn num_permissions(&self) -> usize {
        self.inner.num_permissions()
    }

    /// Every permission some tool requires, each once, in the order first required.
    fn permission_names(&self) -> Vec<String> {
        self.inner.permission_names().to_vec()
    }

    /// Query weight of prefix terms (0: the index has none).
    #[getter]
    fn prefix_weight(&self) -> f32 {
        self.inner.prefix_weight()
    }
}
