//! The `toolsift._core` extension module: the only code that touches PyO3 and numpy.

mod convert;
mod errors;
mod index;

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

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<index::PyIndex>()?;
    m.add_class::<index::PyCaller>()?;
    m.add_function(wrap_pyfunction!(tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(stem, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEFAULT_PREFIX_WEIGHT", crate::bm25::DEFAULT_PREFIX_WEIGHT)?;
    m.add("MIN_FIELD_WEIGHT", crate::bm25::MIN_FIELD_WEIGHT)?;
    Ok(())
}
