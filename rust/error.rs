//! Errors of the core. One variant per thing a caller can act on; the Python bindings map each
//! variant to one `toolsift.errors` class in a single `match` with no catch-all arm.

/// Result alias used throughout the core.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything the core can refuse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A scoring or build parameter is out of its domain (NaN, negative, b outside [0, 1]).
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter { name: &'static str, reason: String },
    /// Parallel inputs to the builder disagree in length.
    #[error("input {field} has {got} entries, expected {expected}")]
    LengthMismatch {
        field: &'static str,
        expected: usize,
        got: usize,
    },
    /// A snapshot that cannot be loaded: foreign, future, truncated, corrupted or malformed.
    #[error("invalid index snapshot: {reason}")]
    Snapshot { reason: String },
    /// More tools than a `u32` document id can address.
    #[error("catalog too large: more than {max} tools")]
    TooManyTools { max: usize },
}
