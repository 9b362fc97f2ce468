//! A small arbitrary catalog (≤ 32 tools, texts ≤ 200 characters) built with `IndexBuilder`, then
//! queried with an arbitrary weighted query and caller. Typed errors from the builder are fine,
//! panics are not. Checked on every run:
//!
//! * `Index::allows` and `allowed_mask` agree with an independent oracle: the caller holds every
//!   permission string the tool requires;
//! * `search`, `score`, `select` and `pack_ranked` only ever return tools the caller may use
//!   (`Index::allows`), without repeats;
//! * `search` is `score` ranked and truncated to k (`score` is "the reference the pruned paths
//!   must equal", rust/index.rs), with positive scores, best first;
//! * `select` is `pack` of the allowed core tools and every ranked match (the property the crate's
//!   proptest checks on a 10-word vocabulary), within budget unless the core alone is over it;
//! * `Index::from_bytes(&index.to_bytes())` loads, re-serialises to the same bytes and answers
//!   `search` and `select` identically.
#![no_main]

use std::collections::HashSet;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use toolsift::topk::rank;
use toolsift::{
    pack, Bm25Params, CallerMask, DocId, DocInput, Error, FieldParams, Hit, Index, IndexBuilder,
    Query,
};

const MAX_TOOLS: usize = 32;
const MAX_CHARS: usize = 200;
const MAX_PERMS: usize = 4;
const MAX_PIECES: usize = 4;
/// Words most texts are made of, so that tools and queries share terms (as in the crate's
/// proptests), including a camelCase identifier and CJK text.
const WORDS: [&str; 16] = [
    "order",
    "refund",
    "ship",
    "track",
    "user",
    "mail",
    "pay",
    "card",
    "box",
    "help",
    "account",
    "delete",
    "status",
    "orders",
    "getOrderStatus",
    "天气预报",
];
/// Permission strings most tools and callers draw from, so that they overlap.
const PERM_POOL: [&str; 5] = ["", "crm.read", "orders.read", "billing.refund", "admin"];

#[derive(Arbitrary, Debug)]
enum Perm {
    Pool(u8),
    Raw(String),
}

#[derive(Arbitrary, Debug)]
enum Word {
    Pool(u8),
    Raw(String),
}

/// A text: words from [`WORDS`] or arbitrary strings, joined by spaces, at most 200 characters.
#[derive(Arbitrary, Debug)]
struct Text(Vec<Word>);

impl Text {
    fn render(&self) -> String {
        let words: Vec<&str> = self
            .0
            .iter()
            .map(|w| match w {
                Word::Pool(i) => WORDS[usize::from(*i) % WORDS.len()],
                Word::Raw(s) => clip(s),
            })
            .collect();
        clip(&words.join(" ")).to_string()
    }
}

#[derive(Arbitrary, Debug)]
enum Params {
    /// `Bm25Params::default()`, the configuration the brief asks for.
    Default,
    /// In-domain BM25F parameters with 1–4 fields: k1 = a/32, weight = w/32, b = b/255,
    /// prefix weight = p/64 (0 builds no prefix terms).
    Fields {
        k1: u8,
        fields: Vec<(u8, u8)>,
        prefix: u8,
    },
}

#[derive(Arbitrary, Debug)]
struct Tool {
    fields: Vec<Text>,
    /// Give the builder one field too many: it must refuse with `LengthMismatch`.
    wrong_field_count: bool,
    perms: Vec<Perm>,
    cost: u32,
    core: bool,
}

#[derive(Arbitrary, Debug)]
enum Piece {
    Text(Text),
    /// The text of field `field` of tool `tool`, so that queries match the catalog.
    FromTool {
        tool: u8,
        field: u8,
    },
}

/// A query piece's weight: usually a small multiple of 1/16, sometimes any `f32` (0, tiny,
/// huge, infinite, NaN, negative: clamped by the core as documented on `Query`).
#[derive(Arbitrary, Debug)]
enum Weight {
    Step(u8),
    Raw(f32),
}

impl Weight {
    fn value(&self) -> f32 {
        match self {
            Weight::Step(w) => f32::from(*w) / 16.0,
            Weight::Raw(w) => *w,
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    params: Params,
    /// Out-of-domain parameters: `IndexBuilder::new` must refuse them iff `validate` does.
    raw_params: Option<(f32, f32, f32, f32)>,
    tools: Vec<Tool>,
    query: Vec<(Piece, Weight)>,
    caller: Vec<Perm>,
    k: u8,
    budget: u64,
    cap: Option<u8>,
    ranked: Vec<u32>,
}

fn clip(s: &str) -> &str {
    match s.char_indices().nth(MAX_CHARS) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

fn perm(p: &Perm) -> &str {
    match p {
        Perm::Pool(i) => PERM_POOL[usize::from(*i) % PERM_POOL.len()],
        Perm::Raw(s) => clip(s),
    }
}

fn params(p: &Params) -> Bm25Params {
    match p {
        Params::Default => Bm25Params::default(),
        Params::Fields { k1, fields, prefix } => {
            let mut fields: Vec<FieldParams> = fields
                .iter()
                .take(4)
                .map(|&(w, b)| FieldParams {
                    weight: f32::from(w) / 32.0,
                    b: f32::from(b) / 255.0,
                })
                .collect();
            if fields.is_empty() {
                fields.push(FieldParams {
                    weight: 1.0,
                    b: 0.75,
                });
            }
            Bm25Params {
                k1: f32::from(*k1) / 32.0,
                fields,
                prefix_weight: f32::from(*prefix) / 64.0,
            }
        }
    }
}

fn assert_hits_allowed(
    index: &Index,
    caller: &CallerMask,
    docs: impl IntoIterator<Item = DocId>,
    what: &str,
) {
    let mut seen = HashSet::new();
    for d in docs {
        assert!(
            index.allows(caller, d),
            "{what} returned tool {d}, which the caller may not use"
        );
        assert!(seen.insert(d), "{what} returned tool {d} twice");
    }
}

fuzz_target!(|input: Input| {
    if let Some((k1, weight, b, prefix_weight)) = input.raw_params {
        let p = Bm25Params {
            k1,
            fields: vec![FieldParams { weight, b }],
            prefix_weight,
        };
        let valid = p.validate().is_ok();
        match IndexBuilder::new(p) {
            Ok(_) => assert!(
                valid,
                "IndexBuilder::new accepted parameters validate refuses"
            ),
            Err(Error::InvalidParameter { .. }) => assert!(!valid),
            Err(e) => panic!("unexpected error from IndexBuilder::new: {e:?}"),
        }
    }

    let params = params(&input.params);
    let nf = params.fields.len();
    let mut builder = IndexBuilder::new(params).expect("in-domain parameters are accepted");

    let rendered: Vec<Vec<String>> = input
        .tools
        .iter()
        .take(MAX_TOOLS)
        .map(|t| t.fields.iter().take(nf).map(Text::render).collect())
        .collect();
    // Field texts of every tool that was added, for `Piece::FromTool`.
    let mut texts: Vec<Vec<&str>> = Vec::new();
    let mut expect_costs = Vec::new();
    let mut required: Vec<Vec<&str>> = Vec::new();
    for (tool, own) in input.tools.iter().zip(&rendered) {
        let mut fields: Vec<&str> = own.iter().map(String::as_str).collect();
        fields.resize(nf, "");
        if tool.wrong_field_count {
            fields.push("extra");
        }
        let perms: Vec<&str> = tool.perms.iter().take(MAX_PERMS).map(perm).collect();
        let doc = DocInput {
            fields: &fields,
            perms: &perms,
            cost_tokens: tool.cost,
            core: tool.core,
        };
        match builder.add(&doc) {
            Ok(id) => {
                assert!(!tool.wrong_field_count, "a wrong field count was accepted");
                assert_eq!(id as usize, texts.len(), "ids are not registry positions");
                texts.push(fields);
                expect_costs.push(tool.cost);
                required.push(perms);
            }
            Err(Error::LengthMismatch { expected, got, .. }) => {
                assert!(tool.wrong_field_count && expected == nf && got == nf + 1);
            }
            Err(e) => panic!("unexpected error from add: {e:?}"),
        }
    }
    let index = builder.build();
    assert_eq!(index.len(), texts.len());
    for (d, &c) in expect_costs.iter().enumerate() {
        assert_eq!(index.cost(d as DocId), c);
    }

    let own_pieces: Vec<String> = input
        .query
        .iter()
        .take(MAX_PIECES)
        .map(|(piece, _)| match piece {
            Piece::Text(t) => t.render(),
            Piece::FromTool { .. } => String::new(),
        })
        .collect();
    let pieces: Vec<(&str, f32)> = input
        .query
        .iter()
        .zip(&own_pieces)
        .map(|((piece, w), own)| {
            let text = match piece {
                Piece::Text(_) => own.as_str(),
                Piece::FromTool { tool, field } if !texts.is_empty() => {
                    let t = &texts[usize::from(*tool) % texts.len()];
                    t[usize::from(*field) % t.len()]
                }
                Piece::FromTool { .. } => "",
            };
            (text, w.value())
        })
        .collect();
    let query = || Query(pieces.clone());
    let who: Vec<&str> = input.caller.iter().take(MAX_PERMS + 2).map(perm).collect();
    let caller = index.caller(&who);
    let k = usize::from(input.k % 40); // often below the number of matches, so pruning matters
    let cap = input.cap.map(usize::from);

    // Independent oracle (rust/permissions.rs: a tool is allowed when the caller holds every
    // permission it requires), so that `allows` itself is checked, not only trusted.
    let mask = index.allowed_mask(&caller);
    assert_eq!(mask.len(), index.len());
    for (d, &m) in mask.iter().enumerate() {
        let expected = required[d].iter().all(|p| who.contains(p));
        assert_eq!(
            index.allows(&caller, d as DocId),
            expected,
            "tool {d} requires {:?}, caller holds {who:?}",
            required[d]
        );
        assert_eq!(
            m, expected,
            "allowed_mask disagrees with allows for tool {d}"
        );
    }
    assert!(
        !index.allows(&caller, index.len() as DocId),
        "a position past the catalog is allowed"
    );

    // search == score ranked and truncated, every hit allowed.
    let hits = index.search(query(), &caller, k);
    assert!(hits.len() <= k);
    assert_hits_allowed(&index, &caller, hits.iter().map(|h| h.doc), "search");
    for h in &hits {
        assert!(h.score > 0.0 && h.score.is_finite(), "hit score {h:?}");
    }
    assert!(
        hits.windows(2).all(|w| w[0].rank_cmp(&w[1]).is_lt()),
        "search is not best first: {hits:?}"
    );
    let mut all: Vec<Hit> = index.score(query(), &caller);
    assert_hits_allowed(&index, &caller, all.iter().map(|h| h.doc), "score");
    rank(&mut all);
    let mut top = all.clone();
    top.truncate(k);
    assert_eq!(hits, top, "pruned search differs from exhaustive scoring");

    // select == pack of the allowed core tools and every ranked non-core match.
    let core = index.allowed_core(&caller);
    let is_core: HashSet<DocId> = core.iter().copied().collect();
    let sel = index.select(query(), &caller, input.budget, cap);
    assert_hits_allowed(&index, &caller, sel.selected.iter().copied(), "select");
    assert_eq!(sel.num_core, core.len());
    assert_eq!(&sel.selected[..sel.num_core], &core[..]);
    let taken = &sel.selected[sel.num_core..];
    assert!(
        taken.windows(2).all(|w| w[0] < w[1]),
        "taken tools not in registry order"
    );
    assert!(taken.iter().all(|d| !is_core.contains(d)));
    assert!(cap.is_none_or(|c| taken.len() <= c), "cap exceeded");
    let used: u64 = sel.selected.iter().map(|&d| u64::from(index.cost(d))).sum();
    assert_eq!(sel.used_tokens, used);
    assert!(
        sel.core_over_budget || used <= input.budget,
        "over budget: {sel:?}"
    );
    assert_hits_allowed(
        &index,
        &caller,
        sel.dropped.iter().map(|&(d, _)| d),
        "select (dropped)",
    );
    let ranked: Vec<DocId> = all
        .iter()
        .map(|h| h.doc)
        .filter(|d| !is_core.contains(d))
        .collect();
    let want = pack(
        &core,
        &ranked,
        |d| u64::from(index.cost(d)),
        input.budget,
        cap,
        0,
    );
    assert_eq!(
        sel.selected, want.selected,
        "select differs from packing every match"
    );
    assert_eq!(sel.used_tokens, want.used_tokens);

    // An external ranking cannot smuggle a forbidden, repeated or out-of-range tool in.
    let ext: Vec<DocId> = input.ranked.iter().take(64).copied().collect();
    let packed = index.pack_ranked(&ext, &caller, input.budget, cap);
    assert_hits_allowed(
        &index,
        &caller,
        packed.selected.iter().copied(),
        "pack_ranked",
    );

    // Snapshot round trip.
    let bytes = index.to_bytes();
    let back = Index::from_bytes(&bytes).expect("a fresh snapshot loads");
    assert_eq!(
        back.to_bytes(),
        bytes,
        "snapshot does not re-serialise identically"
    );
    assert_eq!(
        (
            back.len(),
            back.num_terms(),
            back.num_postings(),
            back.num_permissions()
        ),
        (
            index.len(),
            index.num_terms(),
            index.num_postings(),
            index.num_permissions()
        )
    );
    let back_caller = back.caller(&who);
    assert_eq!(
        back.search(query(), &back_caller, k),
        hits,
        "loaded index searches differently"
    );
    assert_eq!(
        back.select(query(), &back_caller, input.budget, cap),
        sel,
        "loaded index selects differently"
    );
});
