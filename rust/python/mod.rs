//! The `toolsift._core` extension module: the only code that touches PyO3 and numpy.

mod convert;
mod errors;
mod index;
mod jsonl;
mod schema;

use pyo3::prelude::*;

/// Tokens of `text` as the index sees them.
#[pyfunction]
fn tokenize(text: &str) -> PyResult<Vec<String>> {
    errors::guarded(|| crate::tokenizer::tokenize(text))
}

/// Words of `text` before stemming, as the tokenizer splits and normalises them.
#[pyfunction]
fn words(text: &str) -> PyResult<Vec<String>> {
    errors::guarded(|| crate::tokenizer::words(text))
}

/// Panics inside the core on purpose, to prove a panic reaches Python as `InternalError`.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<()> {
    errors::detached(py, || -> () { panic!("deliberate panic") })
}

/// Snowball English stem of a lower-case word, as the tokenizer applies it.
#[pyfunction]
fn stem(word: &str) -> PyResult<String> {
    errors::guarded(|| crate::tokenizer::stem(word))
}

/// UTF-8 bytes of each tool's definition (`{"name", "description", "parameters"}`) as compact
/// JSON, as `toolsift.assemble.default_token_count` measures it; `None` for a tool whose
/// definition holds something else than plain JSON types (measure it in Python).
#[pyfunction]
fn definition_bytes(
    names: Vec<Bound<'_, PyAny>>,
    descriptions: Vec<Bound<'_, PyAny>>,
    parameters: Vec<Bound<'_, PyAny>>,
) -> PyResult<Vec<Option<usize>>> {
    let n = names.len();
    if descriptions.len() != n || parameters.len() != n {
        return Err(crate::error::Error::LengthMismatch {
            field: "definitions",
            expected: n,
            got: descriptions.len().min(parameters.len()),
        }
        .into());
    }
    errors::guarded(|| {
        (0..n)
            .map(|i| schema::definition_bytes(&names[i], &descriptions[i], &parameters[i]).ok())
            .collect()
    })
}

/// Schema text of a JSON schema, as `toolsift.text.schema_text` makes it; `None` where the
/// schema holds something else than plain JSON types.
#[pyfunction]
fn schema_text(schema: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    errors::guarded(|| {
        let mut out = String::new();
        schema::schema_text(schema, &mut out).ok().map(|_| out)
    })
}

/// `b"".join(json.dumps(v, ensure_ascii=False).encode() + b"\n" for v in values)` (keys in
/// their order), and where each line starts (one more offset than values: the end).
#[pyfunction]
fn json_lines<'py>(
    py: Python<'py>,
    values: Vec<Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, pyo3::types::PyBytes>, Vec<usize>)> {
    let mut out = Vec::new();
    let mut offsets = Vec::with_capacity(values.len() + 1);
    offsets.push(0);
    errors::guarded(|| -> PyResult<()> {
        for v in &values {
            jsonl::line(v, &mut out)?;
            offsets.push(out.len());
        }
        Ok(())
    })??;
    Ok((pyo3::types::PyBytes::new(py, &out), offsets))
}

/// CRC-32 (zlib's) of `data`, continuing from `value`; the GIL released.
#[pyfunction]
#[pyo3(signature = (data, value = 0))]
fn crc32(py: Python<'_>, data: &[u8], value: u32) -> PyResult<u32> {
    errors::detached(py, move || {
        let mut hasher = crc32fast::Hasher::new_with_initial(value);
        hasher.update(data);
        hasher.finalize()
    })
}

/// The CRC-32 (zlib's) of each piece of `data` cut at `offsets` (ascending, within `data`), as
/// little-endian u32s; the GIL released.
#[pyfunction]
fn crc32_each<'py>(
    py: Python<'py>,
    data: &[u8],
    offsets: Vec<usize>,
) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
    let cut_ok =
        offsets.windows(2).all(|w| w[0] <= w[1]) && offsets.last().is_none_or(|&e| e <= data.len());
    if !cut_ok {
        return Err(crate::error::Error::InvalidParameter {
            name: "offsets",
            reason: "must ascend within the data".into(),
        }
        .into());
    }
    let out = errors::detached(py, || {
        offsets
            .windows(2)
            .flat_map(|w| crc32fast::hash(&data[w[0]..w[1]]).to_le_bytes())
            .collect::<Vec<u8>>()
    })?;
    Ok(pyo3::types::PyBytes::new(py, &out))
}

/// The data of a C-contiguous float32 `(n, dim)` matrix and a `(dim,)` query, checked, and `n`
/// (a matrix of no columns still has rows).
fn matrix_and_query<'a>(
    matrix: &'a numpy::PyReadonlyArray2<'_, f32>,
    query: &'a numpy::PyReadonlyArray1<'_, f32>,
) -> PyResult<(&'a [f32], &'a [f32], usize)> {
    use numpy::PyUntypedArrayMethods;
    let (rows, dim) = (matrix.shape()[0], matrix.shape()[1]);
    let got = query.shape()[0];
    if got != dim {
        return Err(crate::error::Error::LengthMismatch {
            field: "query",
            expected: dim,
            got,
        }
        .into());
    }
    let m = contiguous(matrix, "matrix", "float32")?;
    let q = contiguous(query, "query", "float32")?;
    Ok((m, q, rows))
}

/// `matrix @ query` for a float32 `(n, dim)` matrix and a `(dim,)` query (a matrix of no
/// columns scores every row 0), on this thread with the GIL released (see `crate::dense`).
#[pyfunction]
fn dot_rows<'py>(
    py: Python<'py>,
    matrix: numpy::PyReadonlyArray2<'py, f32>,
    query: numpy::PyReadonlyArray1<'py, f32>,
) -> PyResult<Bound<'py, numpy::PyArray1<f32>>> {
    use numpy::IntoPyArray;
    let (m, q, rows) = matrix_and_query(&matrix, &query)?;
    let scores = errors::detached(py, || {
        if q.is_empty() {
            vec![0.0; rows]
        } else {
            crate::dense::dot_rows(m, q)
        }
    })?;
    Ok(scores.into_pyarray(py))
}

/// Positions (uint32) and their scores, best first, as numpy arrays.
type Ranked<'py, S> = (
    Bound<'py, numpy::PyArray1<u32>>,
    Bound<'py, numpy::PyArray1<S>>,
);

/// The C-contiguous data of a numpy array argument, or an error naming it (a Fortran-order
/// matrix is contiguous too, but its rows are not where the core reads them).
fn contiguous<'a, T: numpy::Element, D: numpy::ndarray::Dimension>(
    array: &'a numpy::PyReadonlyArray<'_, T, D>,
    name: &'static str,
    dtype: &str,
) -> PyResult<&'a [T]> {
    use numpy::PyUntypedArrayMethods;
    let refused = || -> PyErr {
        crate::error::Error::InvalidParameter {
            name,
            reason: format!("must be a C-contiguous {dtype} array"),
        }
        .into()
    };
    if !array.is_c_contiguous() {
        return Err(refused());
    }
    array.as_slice().map_err(|_| refused())
}

/// The `k` rows of a float32 `(n, dim)` matrix nearest a `(dim,)` query among those a `(n,)`
/// bool mask allows (all rows without one): `(rows uint32, scores float32)`, best first, ties
/// by row; the scores are `dot_rows`'s. On this thread with the GIL released.
#[pyfunction]
#[pyo3(signature = (matrix, query, k, allowed=None))]
fn top_rows<'py>(
    py: Python<'py>,
    matrix: numpy::PyReadonlyArray2<'py, f32>,
    query: numpy::PyReadonlyArray1<'py, f32>,
    k: usize,
    allowed: Option<numpy::PyReadonlyArray1<'py, bool>>,
) -> PyResult<Ranked<'py, f32>> {
    use numpy::{IntoPyArray, PyUntypedArrayMethods};
    let (rows, got) = (
        matrix.shape()[0],
        allowed.as_ref().map_or(0, |a| a.shape()[0]),
    );
    if allowed.is_some() && got != rows {
        return Err(crate::error::Error::LengthMismatch {
            field: "allowed",
            expected: rows,
            got,
        }
        .into());
    }
    let (m, q, _) = matrix_and_query(&matrix, &query)?;
    let mask = allowed
        .as_ref()
        .map(|a| contiguous(a, "allowed", "bool"))
        .transpose()?;
    let (ids, scores) = errors::detached(py, || crate::dense::best_rows(m, q, rows, k, mask))?;
    Ok((ids.into_pyarray(py), scores.into_pyarray(py)))
}

type Side<'py> = (
    numpy::PyReadonlyArray1<'py, u32>,
    numpy::PyReadonlyArray1<'py, f64>,
);

/// One side of a fusion as slices of equal lengths, or an error naming the side.
fn side<'a>(ranking: &'a Side<'_>, name: &'static str) -> PyResult<(&'a [u32], &'a [f64])> {
    let positions = contiguous(&ranking.0, name, "uint32")?;
    let scores = contiguous(&ranking.1, name, "float64")?;
    if positions.len() != scores.len() {
        return Err(crate::error::Error::LengthMismatch {
            field: name,
            expected: positions.len(),
            got: scores.len(),
        }
        .into());
    }
    Ok((positions, scores))
}

/// The fused ranking of a lexical and a dense one, each `(positions uint32, scores float64)`:
/// `(positions uint32, scores float64)`, best first (see `crate::fusion::fuse`).
#[pyfunction]
fn fuse<'py>(
    py: Python<'py>,
    lexical: Side<'py>,
    dense: Side<'py>,
    alpha: f64,
) -> PyResult<Ranked<'py, f64>> {
    use numpy::IntoPyArray;
    let (a, b) = (side(&lexical, "lexical")?, side(&dense, "dense")?);
    let (positions, scores) = errors::detached(py, || crate::fusion::fuse(a, b, alpha))?;
    Ok((positions.into_pyarray(py), scores.into_pyarray(py)))
}

/// `x` as the Python float of its shortest decimal (`0.9`, not `0.8999999761581421`): the same
/// `f32` once passed back, and the same text where Python writes it (a snapshot's header).
fn shortest_decimal(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<index::PyIndex>()?;
    m.add_class::<index::PyCaller>()?;
    m.add_function(wrap_pyfunction!(tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(stem, m)?)?;
    m.add_function(wrap_pyfunction!(words, m)?)?;
    m.add_function(wrap_pyfunction!(definition_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(schema_text, m)?)?;
    m.add_function(wrap_pyfunction!(json_lines, m)?)?;
    m.add_function(wrap_pyfunction!(crc32, m)?)?;
    m.add_function(wrap_pyfunction!(crc32_each, m)?)?;
    m.add_function(wrap_pyfunction!(dot_rows, m)?)?;
    m.add_function(wrap_pyfunction!(top_rows, m)?)?;
    m.add_function(wrap_pyfunction!(fuse, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_PREFIX_WEIGHT", crate::bm25::DEFAULT_PREFIX_WEIGHT)?;
    m.add("DEFAULT_K1", shortest_decimal(crate::bm25::DEFAULT_K1))?;
    m.add("MIN_FIELD_WEIGHT", crate::bm25::MIN_FIELD_WEIGHT)?;
    Ok(())
}
