//! Safe dynamic pruning: the top k of a query with MaxScore (Turtle and Flood, 1995).
//!
//! Every query term gets an upper bound on what it can add to a tool's score (its weight times
//! the saturated maximum of its pseudo-frequencies). Terms are ordered by that bound; once the
//! k-th best score so far (the threshold) exceeds the summed bounds of the weakest terms, those
//! terms become *non-essential*: a tool that contains only them cannot enter the top k, so only
//! the postings of the essential terms are walked, document at a time, and the non-essential
//! lists are merely probed (binary search) for the candidates, stopping as soon as the bound says
//! the candidate cannot make it.
//!
//! The result is identical to exhaustive scoring: bounds are inflated by a relative 1e-5 against
//! rounding, and a candidate's final score is summed in the query's canonical term order, as the
//! exhaustive path sums it, so scores agree to the bit. Tools rejected by `skip` (those the caller
//! may not use) are passed over before any of their postings is scored.

use crate::bm25::Bm25Params;
use crate::postings::{DocId, PostingList};
use crate::topk::{Hit, TopK};

/// A position in one term's postings.
struct Cursor<'a> {
    list: PostingList<'a>,
    pos: usize,
    weight: f32,
}

impl Cursor<'_> {
    fn doc(&self) -> Option<DocId> {
        self.list.docs.get(self.pos).copied()
    }

    /// Moves to the first posting at or after `doc`.
    fn seek(&mut self, doc: DocId) {
        if self.doc().is_some_and(|d| d < doc) {
            self.pos += self.list.docs[self.pos..].partition_point(|&d| d < doc);
        }
    }
}

/// One query term for [`top_k`]: its postings, its weight (idf × query frequency) and the largest
/// pseudo-frequency in its postings.
pub struct TermInput<'a> {
    pub list: PostingList<'a>,
    pub weight: f32,
    pub max_tf: f32,
}

/// The `k` best tools for `terms` (given in canonical order), skipping those `skip` rejects.
pub fn top_k(
    params: &Bm25Params,
    terms: &[TermInput<'_>],
    skip: impl Fn(DocId) -> bool,
    k: usize,
) -> Vec<Hit> {
    let n = terms.len();
    if k == 0 || n == 0 {
        return Vec::new();
    }
    let mut cursors: Vec<Cursor<'_>> = terms
        .iter()
        .map(|t| Cursor {
            list: t.list,
            pos: 0,
            weight: t.weight,
        })
        .collect();
    let bound: Vec<f32> = terms
        .iter()
        .map(|t| params.score(t.weight, t.max_tf) * (1.0 + 1e-5))
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| bound[a].total_cmp(&bound[b]).then(a.cmp(&b)));
    let cum: Vec<f32> = order
        .iter()
        .scan(0f32, |s, &i| {
            *s += bound[i];
            Some(*s)
        })
        .collect();
    let (mut top, mut first_essential, mut threshold) = (TopK::new(k), 0usize, f32::NEG_INFINITY);
    let mut contrib = vec![None::<f32>; n];
    while let Some(doc) = order[first_essential..]
        .iter()
        .filter_map(|&i| cursors[i].doc())
        .min()
    {
        if skip(doc) {
            for &i in &order[first_essential..] {
                if cursors[i].doc() == Some(doc) {
                    cursors[i].pos += 1;
                }
            }
            continue;
        }
        contrib.iter_mut().for_each(|c| *c = None);
        let mut partial = 0f32;
        for &i in &order[first_essential..] {
            if cursors[i].doc() == Some(doc) {
                let c = params.score(cursors[i].weight, cursors[i].list.tfs[cursors[i].pos]);
                contrib[i] = Some(c);
                partial += c;
                cursors[i].pos += 1;
            }
        }
        let mut alive = true;
        for j in (0..first_essential).rev() {
            if partial + cum[j] < threshold {
                alive = false;
                break;
            }
            let cur = &mut cursors[order[j]];
            cur.seek(doc);
            if cur.doc() == Some(doc) {
                let c = params.score(cur.weight, cur.list.tfs[cur.pos]);
                contrib[order[j]] = Some(c);
                partial += c;
            }
        }
        if !alive {
            continue;
        }
        let score = contrib.iter().flatten().fold(0f32, |s, &c| s + c);
        top.push(Hit { doc, score });
        if let Some(worst) = top.worst() {
            threshold = worst.score;
            while first_essential < n && cum[first_essential] < threshold {
                first_essential += 1;
            }
        }
    }
    top.into_sorted()
}
