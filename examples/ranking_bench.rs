//! Times `Index::search` (k = 10) and `Index::select` (budget 4,000 tokens) on the synthetic
//! workloads of `common/mod.rs`, for a caller holding half the permissions, and checks the
//! answers against the exhaustive reference as it goes (the `ok` column):
//!
//! ```text
//! cargo run --release --example ranking_bench [-- --sizes 10000 100000 --passes 40]
//! cargo run --release --example ranking_bench -- --workload /tmp/aws-100k.tsv   # see benches/export_workload.py
//! ```
//!
//! Each pass answers every query of the workload once; the figure is the median over passes of
//! the mean time per call, in µs. To compare two trees, build this example in both and run the
//! binaries alternately (see `benches/RESULTS.md`); it uses only the public API.

mod common;

use std::hint::black_box;
use std::time::Instant;

use common::{bench_args, build, query, BenchArgs, Source};

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let BenchArgs {
        sizes,
        files,
        passes,
        rest,
    } = bench_args(40);
    if let Some(other) = rest.first() {
        panic!("unknown argument {other}");
    }
    println!("workload          search µs  select µs  ok");
    for source in Source::all(&sizes, &files) {
        {
            let cat = source.catalog();
            let idx = build(&cat);
            let half: Vec<&str> = cat.half.iter().map(String::as_str).collect();
            let caller = idx.caller(&half);
            let queries: Vec<_> = cat.queries.iter().map(|q| query(q)).collect();
            // correctness next to time: the pruned search equals exhaustive scoring
            let ok = queries.iter().all(|q| {
                let mut all = idx.score(q.clone(), &caller);
                toolsift::topk::rank(&mut all);
                all.truncate(10);
                idx.search(q.clone(), &caller, 10) == all
            });
            let time = |f: &dyn Fn(&toolsift::Query<'_>)| {
                let per_pass: Vec<f64> = (0..passes)
                    .map(|_| {
                        let start = Instant::now();
                        for q in &queries {
                            f(q);
                        }
                        start.elapsed().as_secs_f64() * 1e6 / queries.len() as f64
                    })
                    .collect();
                median(per_pass)
            };
            // warm up the thread's scratch and the caches
            time(&|q| {
                black_box(idx.select(q.clone(), &caller, 4_000, None));
            });
            let search = time(&|q| {
                black_box(idx.search(q.clone(), &caller, 10));
            });
            let select = time(&|q| {
                black_box(idx.select(q.clone(), &caller, 4_000, None));
            });
            println!("{:<16} {search:>10.2} {select:>10.2}  {ok}", source.label());
        }
    }
}
