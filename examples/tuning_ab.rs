//! A/B of the tuning values of `rust/ranking/tuning.rs` in one process: for one constant, the
//! chosen value against alternatives, on the synthetic workloads of `common/mod.rs` (a caller
//! holding half the permissions, `Index::select` with a budget of 4,000 tokens):
//!
//! ```text
//! cargo run --release --example tuning_ab -- step_gap [--sizes 10000 100000] [--passes 30]
//! cargo run --release --example tuning_ab -- all
//! cargo run --release --example tuning_ab -- all --workload /tmp/aws-100k.tsv   # see benches/export_workload.py
//! ```
//!
//! Constants: `step_gap`, `raise_from`, `probe_cost`, `pool_depth`, `run_changes`,
//! `members_from` (the last two are index-layout choices: each value gets its own
//! `Index::retuned` copy). Passes alternate between the values (the order rotating from pass
//! to pass); a pass answers every query once per value. Printed: the median over passes of the
//! mean µs per selection, and the change against the chosen value. Every value's selections
//! are checked equal to the chosen value's first (the `same` column): tuning never changes an
//! answer.

mod common;

use std::hint::black_box;
use std::time::Instant;

use common::{bench_args, build, query, BenchArgs, Source};
use toolsift::ranking::Tuning;
use toolsift::Index;

/// The alternatives measured for each constant (the chosen value first), as labels and values.
fn values(name: &str) -> Vec<(&'static str, usize)> {
    match name {
        // 1: always gallop; 1 << 20: always step
        "step_gap" => vec![
            ("16", 16),
            ("1 (gallop)", 1),
            ("4", 4),
            ("8", 8),
            ("32", 32),
            ("64", 64),
            ("2^20 (step)", 1 << 20),
        ],
        "raise_from" => vec![
            ("128", 128),
            ("8", 8),
            ("32", 32),
            ("512", 512),
            ("never", usize::MAX),
        ],
        "probe_cost" => vec![
            ("4", 4),
            ("1", 1),
            ("2", 2),
            ("8", 8),
            ("16", 16),
            ("never", usize::MAX),
        ],
        "pool_depth" => vec![
            ("64", 64),
            ("0", 0),
            ("8", 8),
            ("16", 16),
            ("256", 256),
            ("2^30 (all)", 1 << 30),
        ],
        // 0: every list walked with the branch; never: only lists with no change
        "run_changes" => vec![
            ("2", 2),
            ("0 (always)", 0),
            ("1", 1),
            ("3", 3),
            ("6", 6),
            ("never", usize::MAX),
        ],
        // 0: no member bits
        "members_from" => vec![
            ("16", 16),
            ("0 (none)", 0),
            ("4", 4),
            ("8", 8),
            ("32", 32),
            ("64", 64),
        ],
        other => panic!("unknown constant {other}"),
    }
}

fn with(name: &str, value: usize) -> Tuning {
    let mut t = Tuning::DEFAULT;
    match name {
        "step_gap" => t.step_gap = value,
        "raise_from" => t.raise_from = value,
        "probe_cost" => t.probe_cost = value,
        "pool_depth" => t.pool_depth = value,
        "run_changes" => t.run_changes = value,
        "members_from" => t.members_from = value,
        _ => unreachable!(),
    }
    t
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn run(name: &str, sources: &[Source], passes: usize) {
    let vals = values(name);
    let layout_of_index = matches!(name, "run_changes" | "members_from");
    let mut table: Vec<Vec<String>> = vals.iter().map(|(l, _)| vec![l.to_string()]).collect();
    let mut header = vec![format!("{name:<14}")];
    for source in sources {
        {
            let cat = source.catalog();
            let base = build(&cat);
            let half: Vec<&str> = cat.half.iter().map(String::as_str).collect();
            let queries: Vec<_> = cat.queries.iter().map(|q| query(q)).collect();
            // one index per value when the value changes the index, else the same one for all
            let indexes: Vec<Index> = if layout_of_index {
                vals.iter()
                    .map(|&(_, v)| base.retuned(&with(name, v)))
                    .collect()
            } else {
                vec![base]
            };
            let at = |i: usize| if layout_of_index { i } else { 0 };
            let callers: Vec<_> = indexes.iter().map(|idx| idx.caller(&half)).collect();
            let tunings: Vec<Tuning> = vals.iter().map(|&(_, v)| with(name, v)).collect();
            let select = |i: usize, q: &toolsift::Query<'_>| {
                indexes[at(i)].select_tuned(q.clone(), &callers[at(i)], 4_000, None, tunings[i])
            };
            let same: Vec<bool> = (0..vals.len())
                .map(|i| queries.iter().all(|q| select(i, q) == select(0, q)))
                .collect();
            let mut times = vec![Vec::with_capacity(passes); vals.len()];
            for p in 0..passes + 1 {
                for r in 0..vals.len() {
                    let i = (p + r) % vals.len();
                    let start = Instant::now();
                    for q in &queries {
                        black_box(select(i, q));
                    }
                    let us = start.elapsed().as_secs_f64() * 1e6 / queries.len() as f64;
                    if p > 0 {
                        times[i].push(us); // pass 0 warms up
                    }
                }
            }
            let medians: Vec<f64> = times.into_iter().map(median).collect();
            header.push(format!("{:>22}", source.label()));
            for (i, row) in table.iter_mut().enumerate() {
                let delta = (medians[i] / medians[0] - 1.0) * 100.0;
                let same = if same[i] { "" } else { " DIFFERS" };
                row.push(if i == 0 {
                    format!("{:>22}", format!("{:.2}{same}", medians[i]))
                } else {
                    format!("{:>22}", format!("{:.2} ({delta:+.1} %){same}", medians[i]))
                });
            }
        }
    }
    println!("{}", header.join(""));
    for row in table {
        println!("{:<14}{}", row[0], row[1..].join(""));
    }
    println!();
}

fn main() {
    let BenchArgs {
        sizes,
        files,
        passes,
        rest,
    } = bench_args(30);
    let mut names = Vec::new();
    for name in rest {
        if name == "all" {
            names.extend(
                [
                    "step_gap",
                    "raise_from",
                    "probe_cost",
                    "pool_depth",
                    "run_changes",
                    "members_from",
                ]
                .map(String::from),
            );
        } else {
            names.push(name);
        }
    }
    assert!(!names.is_empty(), "name a constant (or all)");
    println!(
        "µs per Index::select (budget 4,000, half the permissions), median of {passes} passes\n"
    );
    let sources = Source::all(&sizes, &files);
    for name in &names {
        run(name, &sources, passes);
    }
}
