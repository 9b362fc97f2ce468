//! Writes the exact answers of `Index::search` and `Index::select` on deterministic synthetic
//! catalogs (see `common/mod.rs`) to a file, so that a refactoring of the ranking can be checked
//! byte for byte against the tree before it:
//!
//! ```text
//! cargo run --release --example ranking_dump -- /tmp/before.txt   # on the old tree
//! cargo run --release --example ranking_dump -- /tmp/after.txt    # on the new one
//! cmp /tmp/before.txt /tmp/after.txt
//! ```
//!
//! Each line is one answer: search hits as `doc:score-bits`, selections as the packed tools,
//! core count, used tokens, dropped tools, `core_over_budget` and `complete`. Sizes up to 50,000
//! tools, both permission layouts, callers holding all, half, one or no permissions, a caller
//! narrowed to a scope, weighted queries, budgets from 0 to unlimited, with and without a cap.
//! Each catalog's header line has its index's `memory_bytes` and a checksum of its snapshot.
//! The last line is a checksum of the rest. `--quick` skips the 50k catalogs.

mod common;

use std::fmt::Write as _;
use std::io::Write as _;

use common::{build, callers, catalog, query, Layout};
use toolsift::DocId;

const BUDGETS: [u64; 7] = [0, 150, 600, 1_500, 4_000, 20_000, u64::MAX];
const CAPS: [Option<usize>; 3] = [None, Some(3), Some(40)];

/// FNV-1a, 64 bits.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let path = args.iter().find(|a| !a.starts_with("--")).cloned();
    let sizes: &[usize] = if quick {
        &[60, 700, 5_000]
    } else {
        &[60, 700, 5_000, 20_000, 50_000]
    };
    let mut out = String::new();
    let mut lines = 0usize;
    for &n in sizes {
        for layout in [Layout::Grouped, Layout::Turns] {
            let cat = catalog(n, layout, 0x5eed ^ n as u64);
            let idx = build(&cat);
            let bytes = idx.to_bytes();
            let _ = writeln!(
                out,
                "# {} terms={} postings={} memory={} snapshot={} bytes fnv1a {:016x}",
                cat.name,
                idx.num_terms(),
                idx.num_postings(),
                idx.memory_bytes(),
                bytes.len(),
                fnv(&bytes)
            );
            let mut masks: Vec<(String, toolsift::CallerMask)> = callers(&cat)
                .into_iter()
                .map(|(name, perms)| (name.to_owned(), idx.caller(&perms)))
                .collect();
            // the half caller narrowed to the first third of the catalog (core tools kept)
            let scope: Vec<DocId> = (0..(n / 3) as DocId).collect();
            let narrowed = idx.within(&masks[1].1, &scope, true);
            masks.push(("half-scoped".to_owned(), narrowed));
            for (who, mask) in &masks {
                for (qi, q) in cat.queries.iter().enumerate() {
                    for k in [1, 5, 20, 100] {
                        let hits = idx.search(query(q), mask, k);
                        let _ = write!(out, "{} {who} q{qi} search k={k}:", cat.name);
                        for h in &hits {
                            let _ = write!(out, " {}:{:08x}", h.doc, h.score.to_bits());
                        }
                        out.push('\n');
                        lines += 1;
                    }
                    for budget in BUDGETS {
                        for cap in CAPS {
                            if budget == u64::MAX && cap.is_none() && n > 5_000 {
                                continue; // every match: long lines, nothing new
                            }
                            let p = idx.select(query(q), mask, budget, cap);
                            let _ = write!(
                                out,
                                "{} {who} q{qi} select b={budget} cap={cap:?}: core={} used={} over={} complete={} sel={:?} dropped=",
                                cat.name, p.num_core, p.used_tokens, p.core_over_budget, p.complete, p.selected
                            );
                            for (d, _) in &p.dropped {
                                let _ = write!(out, "{d},");
                            }
                            out.push('\n');
                            lines += 1;
                        }
                    }
                }
            }
        }
    }
    // FNV-1a of everything above
    let hash = out.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let _ = writeln!(out, "# {lines} answers, fnv1a {hash:016x}");
    eprintln!("{lines} answers, fnv1a {hash:016x}");
    match path {
        Some(p) => std::fs::File::create(&p)
            .and_then(|mut f| f.write_all(out.as_bytes()))
            .expect("write the dump"),
        None => std::io::stdout().write_all(out.as_bytes()).expect("write"),
    }
}
