//! Core errors and Rust panics as `toolsift.errors` exceptions.
//!
//! [`From<Error> for PyErr`] is the single mapping point and has no catch-all arm: a new core
//! variant does not compile until someone picks its Python class. A panic in the core is caught
//! at the boundary ([`detached`]) and raised as `toolsift.errors.InternalError`, never as a crash.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;

use crate::error::Error;

/// Instantiates `toolsift.errors.<class>(message)`.
fn raise(class: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let made = py
            .import("toolsift.errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.call1((message.clone(),)));
        match made {
            Ok(exc) => PyErr::from_value(exc),
            Err(import_failed) => import_failed,
        }
    })
}

impl From<Error> for PyErr {
    fn from(e: Error) -> PyErr {
        let class = match &e {
            Error::InvalidParameter { .. } => "InvalidParameterError",
            Error::LengthMismatch { .. } => "InvalidParameterError",
            Error::TooManyTools { .. } => "CatalogTooLargeError",
            Error::Snapshot { .. } => "SnapshotError",
        };
        raise(class, e.to_string())
    }
}

/// Runs `work` with the GIL released; a panic inside becomes `InternalError`.
pub fn detached<T: Send>(py: Python<'_>, work: impl FnOnce() -> T + Send) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(work)))
        .map_err(internal)
}

/// Runs `work` with the GIL held (it reads Python objects); a panic inside becomes
/// `InternalError`, as in [`detached`], not PyO3's `PanicException`.
pub fn guarded<T>(work: impl FnOnce() -> T) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(work)).map_err(internal)
}

/// A panic's payload as the `InternalError` that names it.
fn internal(panic: Box<dyn std::any::Any + Send>) -> PyErr {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    raise("InternalError", format!("toolsift core failed: {what}"))
}
