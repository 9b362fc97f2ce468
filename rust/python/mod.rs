//! The `toolsift._core` extension module: the only code that touches PyO3 and numpy.

mod convert;
mod errors;
mod index;
mod jsonl;
mod schema;

use pyo3::prelude::*;

/// Tokens of `text` as the index sees them.
#[pyfunction]
fn tokenize(text: &str) -> Vec<String> {
    crate::tokenizer::tokenize(text)
}

/// Panics inside the core on purpose, to prove a panic reaches Python as `InternalError`.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<()> {
    errors::detached(py, || -> () { panic!("deliberate panic") })
}

/// Snowball English stem of a lower-case word, as the tokenizer applies it.
#[pyfunction]
fn stem(word: &str) -> String {
    crate::tokenizer::stem(word)
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
    Ok((0..n)
        .map(|i| schema::definition_bytes(&names[i], &descriptions[i], &parameters[i]).ok())
        .collect())
}

/// Schema text of a JSON schema, as `toolsift.text.schema_text` makes it; `None` where the
/// schema holds something else than plain JSON types.
#[pyfunction]
fn schema_text(schema: &Bound<'_, PyAny>) -> Option<String> {
    let mut out = String::new();
    schema::schema_text(schema, &mut out).ok().map(|_| out)
}

/// `b"".join(json.dumps(v, ensure_ascii=False, sort_keys=True).encode() + b"\n" for v in
/// values)`, and where each line starts (one more offset than values: the end).
#[pyfunction]
fn json_lines<'py>(
    py: Python<'py>,
    values: Vec<Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, pyo3::types::PyBytes>, Vec<usize>)> {
    let mut out = Vec::new();
    let mut offsets = Vec::with_capacity(values.len() + 1);
    offsets.push(0);
    for v in &values {
        jsonl::line(v, &mut out)?;
        offsets.push(out.len());
    }
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

/// `matrix @ query` for a C-contiguous float32 `(n, dim)` matrix and a `(dim,)` query, on this
/// thread with the GIL released (see `crate::dense`).
#[pyfunction]
fn dot_rows<'py>(
    py: Python<'py>,
    matrix: numpy::PyReadonlyArray2<'py, f32>,
    query: numpy::PyReadonlyArray1<'py, f32>,
) -> PyResult<Bound<'py, numpy::PyArray1<f32>>> {
    use numpy::{IntoPyArray, PyUntypedArrayMethods};
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
    let invalid = |name: &'static str| crate::error::Error::InvalidParameter {
        name,
        reason: "must be a C-contiguous float32 array".into(),
    };
    let m = matrix.as_slice().map_err(|_| invalid("matrix"))?;
    let q = query.as_slice().map_err(|_| invalid("query"))?;
    let scores = if dim == 0 {
        vec![0.0; rows]
    } else {
        errors::detached(py, || crate::dense::dot_rows(m, q))?
    };
    Ok(scores.into_pyarray(py))
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
    m.add_function(wrap_pyfunction!(definition_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(schema_text, m)?)?;
    m.add_function(wrap_pyfunction!(json_lines, m)?)?;
    m.add_function(wrap_pyfunction!(crc32, m)?)?;
    m.add_function(wrap_pyfunction!(crc32_each, m)?)?;
    m.add_function(wrap_pyfunction!(dot_rows, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_PREFIX_WEIGHT", crate::bm25::DEFAULT_PREFIX_WEIGHT)?;
    m.add("DEFAULT_K1", shortest_decimal(crate::bm25::DEFAULT_K1))?;
    m.add("MIN_FIELD_WEIGHT", crate::bm25::MIN_FIELD_WEIGHT)?;
    Ok(())
}
