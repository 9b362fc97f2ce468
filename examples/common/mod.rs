//! Deterministic synthetic catalogs shared by the Rust examples (`ranking_dump`,
//! `ranking_bench`, `tuning_ab`): no files, no extra dependencies, the same tools on every run.
//!
//! Two layouts, mirroring `benches/workloads.py`:
//! * **grouped** (`aws`-like): tools of one service are adjacent and require `svc<s>`; each
//!   service has its own words, so most terms' tools come in runs of one permission;
//! * **turns** (`zipf`-like): tool `i` requires `group<i % 20>`, so the permission changes at
//!   almost every posting.
//!
//! Text is drawn from a 20,000-word vocabulary with Zipf-distributed frequencies (exponent
//! 1.07); some tools need two permissions, some none, a few are core, costs vary.
#![allow(dead_code)]

use toolsift::{Bm25Params, DocInput, FieldParams, Index, IndexBuilder};

/// splitmix64: small, fast, deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

const SYLLABLES: [&str; 13] = [
    "b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "t", "v", "z",
];
const VOWELS: [&str; 5] = ["a", "e", "i", "o", "u"];

/// `count` distinct pseudo-words of 2-4 syllables, and a Zipf sampler over them.
pub struct Vocab {
    pub words: Vec<String>,
    cdf: Vec<f64>,
}

impl Vocab {
    pub fn new(count: usize, rng: &mut Rng) -> Self {
        let mut seen = std::collections::HashSet::new();
        let mut words = Vec::with_capacity(count);
        while words.len() < count {
            let mut w = String::new();
            for _ in 0..rng.range(2, 4) {
                w.push_str(SYLLABLES[rng.range(0, 12)]);
                w.push_str(VOWELS[rng.range(0, 4)]);
            }
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let mut cdf = Vec::with_capacity(count);
        let mut sum = 0.0;
        for r in 1..=count {
            sum += 1.0 / (r as f64).powf(1.07);
            cdf.push(sum);
        }
        cdf.iter_mut().for_each(|c| *c /= sum);
        Vocab { words, cdf }
    }

    pub fn zipf<'a>(&'a self, rng: &mut Rng) -> &'a str {
        let u = rng.unit();
        let at = self
            .cdf
            .partition_point(|&c| c < u)
            .min(self.words.len() - 1);
        &self.words[at]
    }

    pub fn text(&self, rng: &mut Rng, lo: usize, hi: usize) -> String {
        let n = rng.range(lo, hi);
        (0..n).map(|_| self.zipf(rng)).collect::<Vec<_>>().join(" ")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Adjacent tools share a service and its permission (aws-like).
    Grouped,
    /// Tool `i` requires `group<i % 20>` (zipf-like).
    Turns,
}

/// One synthetic tool.
pub struct Tool {
    pub fields: [String; 5],
    pub perms: Vec<String>,
    pub cost: u32,
    pub core: bool,
}

pub struct Catalog {
    pub name: String,
    pub params: Bm25Params,
    pub tools: Vec<Tool>,
    /// Every permission string, sorted.
    pub perms: Vec<String>,
    /// What the benches' caller holds: every other permission.
    pub half: Vec<String>,
    pub queries: Vec<Vec<(String, f32)>>,
}

/// The parameters `toolsift.Index` uses by default: k1 = 0.9 and the five fields of
/// `python/toolsift/text.py` (name, description, parameters, examples, search_text).
pub fn params() -> Bm25Params {
    let f = |weight, b| FieldParams { weight, b };
    Bm25Params {
        k1: 0.9,
        fields: vec![
            f(3.0, 0.5),
            f(1.0, 0.75),
            f(0.5, 0.75),
            f(0.8, 0.75),
            f(1.0, 0.75),
        ],
        ..Bm25Params::default()
    }
}

pub fn catalog(n: usize, layout: Layout, seed: u64) -> Catalog {
    let mut rng = Rng::new(seed);
    let vocab = Vocab::new(20_000, &mut rng);
    let services = (n / 60).max(3);
    // each service: a few words of its own, used by most of its tools
    let service_words: Vec<Vec<String>> = (0..services)
        .map(|s| {
            (0..rng.range(2, 5))
                .map(|j| format!("{}{}x{j}", vocab.words[rng.range(0, 1999)], s))
                .collect()
        })
        .collect();
    let mut tools = Vec::with_capacity(n);
    for i in 0..n {
        let (perm, own) = match layout {
            Layout::Grouped => {
                let s = i * services / n;
                (format!("svc{s}"), Some(&service_words[s]))
            }
            Layout::Turns => (format!("group{}", i % 20), None),
        };
        let mut perms = vec![perm];
        if i % 37 == 5 {
            perms.push(format!("extra{}", i % 3));
        }
        if i % 53 == 7 {
            perms.clear(); // public
        }
        let mut name = format!(
            "{}_{}",
            vocab.words[rng.range(0, 1999)],
            vocab.words[rng.range(0, 1999)]
        );
        let mut desc = vocab.text(&mut rng, 10, 30);
        if let Some(own) = own {
            name = format!("{}_{name}_{i}", own[rng.range(0, own.len() - 1)]);
            for _ in 0..rng.range(0, 2) {
                desc.push(' ');
                desc.push_str(&own[rng.range(0, own.len() - 1)]);
            }
        } else {
            name = format!("{name}_{i}");
        }
        let params = vocab.text(&mut rng, 0, 6);
        let examples = if i % 9 == 0 {
            vocab.text(&mut rng, 3, 8)
        } else {
            String::new()
        };
        let search = if i % 5 == 0 {
            vocab.text(&mut rng, 1, 4)
        } else {
            String::new()
        };
        let cost = (20 + (name.len() + desc.len() + params.len()) / 4 + rng.range(0, 300)) as u32;
        let core = i == 3 || i % 4999 == 11;
        tools.push(Tool {
            fields: [name, desc, params, examples, search],
            perms,
            cost,
            core,
        });
    }
    let mut perms: Vec<String> = tools.iter().flat_map(|t| t.perms.iter().cloned()).collect();
    perms.sort();
    perms.dedup();
    let mut queries = Vec::new();
    for q in 0..40 {
        let mut text = vocab.text(&mut rng, 2, 8);
        if layout == Layout::Grouped && q % 3 == 0 {
            let s = rng.range(0, services - 1);
            text.push(' ');
            text.push_str(&service_words[s][0]);
        }
        let mut query = vec![(text, 1.0f32)];
        if q % 4 == 1 {
            query.push((vocab.text(&mut rng, 3, 10), 0.3));
        }
        if q % 10 == 9 {
            query.push(("unknownword zzzq".to_owned(), 2.0));
        }
        queries.push(query);
    }
    queries.push(vec![(String::new(), 1.0)]);
    let layout_name = match layout {
        Layout::Grouped => "grouped",
        Layout::Turns => "turns",
    };
    let half = perms.iter().step_by(2).cloned().collect();
    Catalog {
        name: format!("{layout_name}-{n}"),
        params: params(),
        tools,
        perms,
        half,
        queries,
    }
}

pub fn build(cat: &Catalog) -> Index {
    let mut b = IndexBuilder::new(cat.params.clone()).expect("valid parameters");
    for t in &cat.tools {
        let fields: Vec<&str> = t.fields.iter().map(String::as_str).collect();
        let perms: Vec<&str> = t.perms.iter().map(String::as_str).collect();
        b.add(&DocInput {
            fields: &fields,
            perms: &perms,
            cost_tokens: t.cost,
            core: t.core,
        })
        .expect("valid tool");
    }
    b.build()
}

/// A workload written by `benches/export_workload.py` (the Python benches' catalogs, e.g. the
/// botocore operations of `aws-100k`), named after its file.
pub fn load(path: &str) -> Catalog {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let floats =
        |s: &str| -> Vec<f32> { s.split(',').map(|x| x.parse().expect("a number")).collect() };
    let (mut params, mut tools, mut queries, mut half) =
        (params(), Vec::new(), Vec::new(), Vec::new());
    for line in text.lines() {
        let cols: Vec<&str> = line.split('\t').collect();
        match cols[0] {
            "P" => {
                let (weights, bs) = (floats(cols[3]), floats(cols[4]));
                params = Bm25Params {
                    k1: cols[1].parse().expect("k1"),
                    prefix_weight: cols[2].parse().expect("prefix weight"),
                    fields: weights
                        .iter()
                        .zip(&bs)
                        .map(|(&weight, &b)| FieldParams { weight, b })
                        .collect(),
                };
            }
            "T" => tools.push(Tool {
                cost: cols[1].parse().expect("cost"),
                core: cols[2] == "1",
                perms: cols[3]
                    .split('\x1f')
                    .filter(|p| !p.is_empty())
                    .map(String::from)
                    .collect(),
                fields: std::array::from_fn(|f| cols[4 + f].to_owned()),
            }),
            "Q" => queries.push(vec![(cols[1].to_owned(), 1.0)]),
            "C" => half.push(cols[1].to_owned()),
            other => panic!("{path}: unknown record {other:?}"),
        }
    }
    let mut perms: Vec<String> = tools.iter().flat_map(|t| t.perms.iter().cloned()).collect();
    perms.sort();
    perms.dedup();
    let name = Source::File(path.to_owned()).catalog_name();
    Catalog {
        name,
        params,
        tools,
        perms,
        half,
        queries,
    }
}

/// Callers by name: every permission, every other one (half), one, none.
pub fn callers(cat: &Catalog) -> Vec<(&'static str, Vec<&str>)> {
    let all: Vec<&str> = cat.perms.iter().map(String::as_str).collect();
    let half: Vec<&str> = all.iter().copied().step_by(2).collect();
    let few: Vec<&str> = all.iter().copied().take(1).collect();
    vec![
        ("all", all),
        ("half", half),
        ("few", few),
        ("none", Vec::new()),
    ]
}

pub fn query(q: &[(String, f32)]) -> toolsift::Query<'_> {
    toolsift::Query(q.iter().map(|(t, w)| (t.as_str(), *w)).collect())
}

/// Where a bench's catalog comes from: a synthetic one, or a file of `export_workload.py`.
pub enum Source {
    Synthetic(usize, Layout),
    File(String),
}

impl Source {
    /// The synthetic catalogs of each size in both layouts, or the files when there are any.
    pub fn all(sizes: &[usize], files: &[String]) -> Vec<Source> {
        if !files.is_empty() {
            return files.iter().cloned().map(Source::File).collect();
        }
        sizes
            .iter()
            .flat_map(|&n| {
                [
                    Source::Synthetic(n, Layout::Grouped),
                    Source::Synthetic(n, Layout::Turns),
                ]
            })
            .collect()
    }

    pub fn catalog(&self) -> Catalog {
        match self {
            Source::Synthetic(n, layout) => catalog(*n, *layout, 7),
            Source::File(path) => load(path),
        }
    }

    /// A short name: `grouped-10k`, `turns-100k`, or the file's stem.
    pub fn label(&self) -> String {
        match self {
            Source::Synthetic(n, layout) => {
                let layout = if *layout == Layout::Grouped {
                    "grouped"
                } else {
                    "turns"
                };
                format!("{layout}-{}k", n / 1000)
            }
            Source::File(_) => self.catalog_name(),
        }
    }

    fn catalog_name(&self) -> String {
        match self {
            Source::File(path) => std::path::Path::new(path)
                .file_stem()
                .map_or(path.clone(), |s| s.to_string_lossy().into_owned()),
            Source::Synthetic(..) => unreachable!(),
        }
    }
}

/// The options `ranking_bench` and `tuning_ab` share: `--workload FILE` (repeatable),
/// `--sizes N...` (synthetic catalog sizes) and `--passes N`; every other argument, in order.
pub struct BenchArgs {
    pub sizes: Vec<usize>,
    pub files: Vec<String>,
    pub passes: usize,
    pub rest: Vec<String>,
}

/// Parses this process's arguments into [`BenchArgs`], `passes` by default.
#[allow(dead_code)] // ranking_dump has no options
pub fn bench_args(passes: usize) -> BenchArgs {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = BenchArgs {
        sizes: vec![10_000, 100_000],
        files: Vec::new(),
        passes,
        rest: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--workload" => {
                out.files
                    .push(args.get(i + 1).expect("--workload FILE").clone());
                i += 1;
            }
            "--sizes" => {
                out.sizes.clear();
                while let Some(n) = args.get(i + 1).and_then(|a| a.parse().ok()) {
                    out.sizes.push(n);
                    i += 1;
                }
            }
            "--passes" => {
                out.passes = args
                    .get(i + 1)
                    .and_then(|a| a.parse().ok())
                    .expect("--passes N");
                i += 1;
            }
            other => out.rest.push(other.to_owned()),
        }
        i += 1;
    }
    out
}
