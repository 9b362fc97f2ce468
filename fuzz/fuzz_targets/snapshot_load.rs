//! `Index::from_bytes` on hostile input must return `Ok` or `Err`, never panic, and an index it
//! accepts must answer queries without panicking. Three shapes of input:
//!
//! * `Raw`: the bytes as given (mostly stopped by the magic, version, length or checksum);
//! * `Sealed`: the bytes as a payload behind a valid header (magic, version, length, CRC-32), so
//!   that the structural decoder itself is fuzzed;
//! * `Edit`: a valid snapshot of a small fixed index with bytes flipped / overwritten at
//!   fuzzer-chosen positions, optionally truncated or extended, optionally re-sealed (length and
//!   CRC recomputed so the edits reach the decoder).
//!
//! For an accepted snapshot: every hit of `search`, `score`, `select` and `pack_ranked` is a tool
//! the caller may use, and `to_bytes` gives back exactly the accepted bytes (the format encodes an
//! index one-to-one). Ranking equalities are *not* asserted here: a crafted snapshot with a valid
//! checksum may carry cost summaries or bounds that no builder would produce.
#![no_main]

use std::sync::LazyLock;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use toolsift::snapshot::{MAGIC, VERSION};
use toolsift::{Bm25Params, DocId, DocInput, FieldParams, Index, IndexBuilder, Query};

const HEADER: usize = 8 + 4 + 8 + 4;

#[derive(Arbitrary, Debug)]
enum Edit {
    Xor { at: u16, with: u8 },
    Set { at: u16, to: u8 },
}

#[derive(Arbitrary, Debug)]
enum Input {
    Edit {
        edits: Vec<Edit>,
        truncate: Option<u16>,
        append: Vec<u8>,
        reseal: bool,
    },
    Sealed(Vec<u8>),
    Raw(Vec<u8>),
}

/// Snapshot of a small fixed catalog: two fields, permissions, core tools, CJK text.
static VALID: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let field = |weight, b| FieldParams { weight, b };
    let mut b = IndexBuilder::new(Bm25Params {
        k1: 1.2,
        fields: vec![field(2.0, 0.75), field(1.0, 0.5)],
        ..Bm25Params::default()
    })
    .unwrap();
    let tools: [(&str, &str, &[&str], bool, u32); 6] = [
        (
            "search_help",
            "Search the help center articles",
            &[],
            true,
            80,
        ),
        (
            "lookup_account",
            "Look up a customer account by email",
            &["crm.read"],
            false,
            90,
        ),
        (
            "order_status",
            "Get the shipping status of an order",
            &["orders.read"],
            false,
            85,
        ),
        (
            "issue_refund",
            "Refund a customer order payment",
            &["billing.refund", "crm.read"],
            false,
            95,
        ),
        ("天气预报", "查询天气 weather forecast", &[], false, 70),
        (
            "delete_account",
            "Delete a customer account permanently",
            &["admin"],
            true,
            60,
        ),
    ];
    for (name, desc, perms, core, cost_tokens) in tools {
        b.add(&DocInput {
            fields: &[name, desc],
            perms,
            cost_tokens,
            core,
        })
        .unwrap();
    }
    b.build().to_bytes()
});

fn seal(payload: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

fn exercise(index: &Index, bytes: &[u8]) {
    assert_eq!(
        index.to_bytes(),
        bytes,
        "an accepted snapshot does not re-serialise to itself"
    );
    let callers: [&[&str]; 4] = [
        &[],
        &["crm.read"],
        &["crm.read", "orders.read", "billing.refund", "admin"],
        &["", "x"],
    ];
    let queries = [
        Query::from("refund the customer order payment"),
        Query::from("天气 weather help account"),
        Query(vec![("delete account", 2.0), ("status of order", 0.5)]),
    ];
    for who in callers {
        let caller = index.caller(who);
        let allowed = |what: &str, docs: &mut dyn Iterator<Item = DocId>| {
            for d in docs {
                assert!(
                    index.allows(&caller, d),
                    "{what} returned forbidden tool {d}"
                );
            }
        };
        let _ = index.allowed_mask(&caller);
        allowed("allowed_core", &mut index.allowed_core(&caller).into_iter());
        for q in &queries {
            allowed(
                "search",
                &mut index.search(q.clone(), &caller, 5).iter().map(|h| h.doc),
            );
            allowed(
                "score",
                &mut index.score(q.clone(), &caller).iter().map(|h| h.doc),
            );
            for (budget, cap) in [
                (0, None),
                (200, None),
                (u64::MAX, Some(3)),
                (u64::MAX, None),
            ] {
                let sel = index.select(q.clone(), &caller, budget, cap);
                allowed("select", &mut sel.selected.iter().copied());
            }
        }
        let ranked: Vec<DocId> = (0..index.len() as DocId + 2).rev().collect();
        let packed = index.pack_ranked(&ranked, &caller, 500, None);
        allowed("pack_ranked", &mut packed.selected.iter().copied());
    }
    let _ = (
        index.num_terms(),
        index.num_postings(),
        index.num_permissions(),
    );
}

fuzz_target!(|input: Input| {
    let bytes = match input {
        Input::Raw(bytes) => bytes,
        Input::Sealed(payload) => seal(&payload),
        Input::Edit {
            edits,
            truncate,
            append,
            reseal,
        } => {
            let mut bytes = VALID.clone();
            for e in edits.iter().take(16) {
                let n = bytes.len();
                match *e {
                    Edit::Xor { at, with } => bytes[usize::from(at) % n] ^= with,
                    Edit::Set { at, to } => bytes[usize::from(at) % n] = to,
                }
            }
            if let Some(t) = truncate {
                bytes.truncate(usize::from(t) % (bytes.len() + 1));
            }
            bytes.extend(append.iter().take(64));
            if reseal && bytes.len() >= HEADER {
                seal(&bytes[HEADER..])
            } else {
                bytes
            }
        }
    };
    if let Ok(index) = Index::from_bytes(&bytes) {
        exercise(&index, &bytes);
    }
});
