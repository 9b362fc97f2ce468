//! Benchmark peer: the reference algorithm of the tool-retrieval deep dive that toolsift was
//! specified from, reimplemented as written there so that it can be timed from Python in the same
//! process as toolsift. Per query it allocates a score vector over the whole catalog, scores
//! term at a time with a per-posting permission check, scans all tools for core and scored ones,
//! sorts every scored tool and packs greedily. Cost of a tool: (name + description + schema
//! bytes) / 4 + 1. Not part of toolsift.
#![forbid(unsafe_code)]

use std::collections::HashMap;

use pyo3::prelude::*;

struct Tool {
    name: String,
    desc: String,
    perm: String,
    schema_len: usize,
    core: bool,
}

impl Tool {
    fn tokens(&self) -> usize {
        (self.name.len() + self.desc.len() + self.schema_len) / 4 + 1
    }
}

/// Lower-case, split on non-alphanumerics, drop 1-byte words, strip one trailing `s` when more
/// than two bytes remain.
fn tokenize(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 1)
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if stem.len() > 2 => stem.to_string(),
            _ => w.to_string(),
        })
        .collect()
}

/// The reference index: a hash map of postings `(tool, tf)`, name counted twice.
#[pyclass(frozen)]
struct SeedIndex {
    tools: Vec<Tool>,
    post: HashMap<String, Vec<(u32, u32)>>,
    len: Vec<f32>,
    avg: f32,
}

impl SeedIndex {
    fn allowed(&self, i: usize, caller: &[&str]) -> bool {
        let p = &self.tools[i].perm;
        p.is_empty() || caller.contains(&p.as_str())
    }

    fn select_inner(&self, query: &str, caller: &[&str], budget: usize) -> Vec<usize> {
        let (k1, b, n) = (1.2f32, 0.75f32, self.tools.len() as f32);
        let mut score = vec![0f32; self.tools.len()];
        for term in tokenize(query) {
            let Some(list) = self.post.get(&term) else { continue };
            let idf = ((n - list.len() as f32 + 0.5) / (list.len() as f32 + 0.5) + 1.0).ln();
            for &(i, tf) in list {
                let i = i as usize;
                if !self.allowed(i, caller) {
                    continue;
                }
                let tf = tf as f32;
                score[i] += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * self.len[i] / self.avg));
            }
        }
        let mut out: Vec<usize> = (0..self.tools.len()).filter(|&i| self.tools[i].core && self.allowed(i, caller)).collect();
        let mut used: usize = out.iter().map(|&i| self.tools[i].tokens()).sum();
        let mut ranked: Vec<usize> = (0..self.tools.len()).filter(|&i| score[i] > 0.0 && !self.tools[i].core).collect();
        ranked.sort_by(|&x, &y| score[y].total_cmp(&score[x]).then(x.cmp(&y)));
        for i in ranked {
            let t = self.tools[i].tokens();
            if used + t <= budget {
                used += t;
                out.push(i);
            }
        }
        out.sort_unstable();
        out
    }
}

#[pymethods]
impl SeedIndex {
    #[new]
    fn new(names: Vec<String>, descs: Vec<String>, perms: Vec<String>, schema_lens: Vec<usize>, core: Vec<bool>) -> Self {
        let tools: Vec<Tool> = (0..names.len())
            .map(|i| Tool { name: names[i].clone(), desc: descs[i].clone(), perm: perms[i].clone(), schema_len: schema_lens[i], core: core[i] })
            .collect();
        let mut post: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut len = Vec::with_capacity(tools.len());
        for (i, t) in tools.iter().enumerate() {
            let words = tokenize(&format!("{} {} {}", t.name, t.name, t.desc));
            let mut tf: HashMap<&str, u32> = HashMap::new();
            for w in &words {
                *tf.entry(w).or_default() += 1;
            }
            for (w, c) in tf {
                post.entry(w.to_string()).or_default().push((i as u32, c));
            }
            len.push(words.len() as f32);
        }
        let avg = len.iter().sum::<f32>() / len.len().max(1) as f32;
        SeedIndex { tools, post, len, avg }
    }

    /// Registry positions of the selection, in registry order.
    fn select(&self, py: Python<'_>, query: &str, caller_perms: Vec<String>, budget: usize) -> Vec<usize> {
        py.detach(|| {
            let caller: Vec<&str> = caller_perms.iter().map(String::as_str).collect();
            self.select_inner(query, &caller, budget)
        })
    }

    fn name(&self, i: usize) -> String {
        self.tools[i].name.clone()
    }
}

#[pymodule]
fn toolsift_seedref(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SeedIndex>()
}
