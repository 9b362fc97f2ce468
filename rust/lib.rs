//! toolsift core: the per-token, per-posting and per-document work of picking the tools an LLM
//! agent sees. A catalog of tools is tokenized into a term dictionary and flat postings; a query is
//! scored with BM25 over only the tools the caller may use (the permission mask is applied before a
//! score is ever computed); the best tools are packed into a token budget and returned in registry
//! order.
//!
//! The crate has no Python in it: the PyO3 bindings live in `python/` behind the `python` feature.
#![forbid(unsafe_code)]

pub mod bm25;
pub mod budget;
pub mod builder;
pub mod dense;
pub mod error;
pub mod fusion;
pub mod index;
pub mod permissions;
pub mod postings;
pub mod ranking;
pub mod relevance;
pub mod snapshot;
pub mod tokenizer;
pub mod topk;
pub mod vocab;

#[cfg(feature = "python")]
mod python;

pub use bm25::{Bm25Params, FieldParams};
pub use budget::{pack, DropReason, Packing};
pub use error::{Error, Result};
pub use index::{DocInput, Index, IndexBuilder, Query};
pub use permissions::{CallerMask, PermId, PermissionTable};
pub use postings::{DocId, PostingList, Postings, PostingsBuilder};
pub use tokenizer::tokenize;
pub use topk::Hit;
pub use vocab::{TermId, Vocab};
