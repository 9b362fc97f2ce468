//! Collection: which reached tools go on to be probed, read back in the order the probes need,
//! and the [`Ranked`] answer split into the best `k` and the rest.

use crate::postings::DocId;
use crate::topk::Hit;

/// Tools for a query, each with its exact score, unordered.
#[derive(Debug)]
pub struct Ranked {
    /// The hits: every matching tool wanted when `complete`; otherwise every one scoring above
    /// a floor that no tool left out can exceed, at least as many as asked for. Either way, the
    /// best `k` of them are the best `k` of the ranking (for `k` up to what was asked for).
    pub hits: Vec<Hit>,
    /// True when `hits` holds every matching tool wanted.
    pub complete: bool,
}

/// The tools of `reached` (each with its partial score, each once) that `keep` accepts and whose
/// partial score `passes`, as hits: in registry order when `ordered` (set in `marks`, all clear on
/// return, then read back in order), else in the order of `reached`; and the largest partial
/// score among the tools that do not pass (0 when none).
#[inline(never)]
pub(super) fn collect(
    reached: impl Iterator<Item = Hit>,
    acc: &[f32],
    marks: &mut Marks,
    passes: impl Fn(f32) -> bool,
    keep: impl Fn(DocId) -> bool,
    ordered: bool,
) -> (Vec<Hit>, f32) {
    if !ordered {
        let (mut hits, mut left) = (Vec::new(), 0f32);
        for h in reached {
            if !passes(h.score) {
                if h.score > left {
                    left = h.score;
                }
            } else if keep(h.doc) {
                hits.push(h);
            }
        }
        return (hits, left);
    }
    let (mut marking, mut left) = (Marking::new(marks), 0f32);
    for Hit { doc, score } in reached {
        if !passes(score) {
            if score > left {
                left = score;
            }
        } else if keep(doc) {
            marking.mark(doc);
        }
    }
    (marking.hits(acc), left)
}

/// A set of tools as bits, one per tool, with a second level (one bit per word of the first) so
/// that reading back a few tools spread over a large catalog skips the empty words. All clear
/// between uses.
#[derive(Default)]
pub(super) struct Marks {
    words: Vec<u64>,
    summary: Vec<u64>,
}

impl Marks {
    pub fn new(num_docs: usize) -> Self {
        let words = num_docs.div_ceil(64);
        Marks {
            words: vec![0; words],
            summary: vec![0; words.div_ceil(64)],
        }
    }
}

/// Tools set one bit each in the (all clear) marks, read back in registry order.
pub(super) struct Marking<'a> {
    marks: &'a mut Marks,
    /// How many marks were made: the tools set, unless one was marked twice (which only keeps
    /// the read-back from stopping early).
    kept: usize,
}

impl<'a> Marking<'a> {
    pub fn new(marks: &'a mut Marks) -> Self {
        Marking { marks, kept: 0 }
    }

    #[inline]
    pub fn mark(&mut self, doc: DocId) {
        let w = doc as usize / 64;
        self.marks.words[w] |= 1 << (doc % 64);
        self.marks.summary[w / 64] |= 1 << (w % 64);
        self.kept += 1;
    }

    /// The tools marked, as hits in registry order with their partial scores; clears the marks.
    pub fn hits(self, acc: &[f32]) -> Vec<Hit> {
        let mut hits: Vec<Hit> = Vec::with_capacity(self.kept);
        let Marks { words, summary } = self.marks;
        for (s, top) in summary.iter_mut().enumerate() {
            if hits.len() == self.kept {
                break;
            }
            let mut ws = std::mem::take(top);
            while ws != 0 {
                let w = s * 64 + ws.trailing_zeros() as usize;
                ws &= ws - 1;
                let mut bits = std::mem::take(&mut words[w]);
                while bits != 0 {
                    let doc = (w * 64) as DocId + bits.trailing_zeros();
                    bits &= bits - 1;
                    hits.push(Hit {
                        doc,
                        score: acc[doc as usize],
                    });
                }
            }
        }
        hits
    }
}

impl Ranked {
    /// The `k` best hits, best first.
    pub fn best(self, k: usize) -> Vec<Hit> {
        self.split(k, 0).0
    }

    /// The `k` best hits, best first, and after them (unordered) the others when there are no
    /// more than `depth` of them; else those scoring above the best one left out, which may be
    /// fewer than `depth`. The rest, with `complete`, is a `Ranked` too: every matching tool
    /// wanted, or every one scoring above a floor.
    pub fn split(self, k: usize, depth: usize) -> (Vec<Hit>, Ranked) {
        let (mut hits, mut complete) = (self.hits, self.complete);
        let mut floor = None;
        if hits.len() > k.saturating_add(depth) {
            let end = k + depth;
            hits.select_nth_unstable_by_key(end, Hit::rank_key);
            floor = Some(hits[end].score);
            hits.truncate(end);
            complete = false;
        }
        let mut rest = if hits.len() > k {
            hits.select_nth_unstable_by_key(k, Hit::rank_key);
            hits.split_off(k)
        } else {
            Vec::new()
        };
        if let Some(floor) = floor {
            // ties with the one left out go too (the best `k` stay, tied or not)
            rest.retain(|h| h.score > floor);
        }
        hits.sort_unstable_by_key(Hit::rank_key);
        (
            hits,
            Ranked {
                hits: rest,
                complete,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_split_keeps_the_best_of_the_rest_and_never_part_of_a_tie() {
        let ranked = |scores: &[f32]| Ranked {
            hits: scores
                .iter()
                .enumerate()
                .map(|(d, &score)| Hit {
                    doc: d as DocId,
                    score,
                })
                .collect(),
            complete: true,
        };
        let docs = |hits: &[Hit]| {
            let mut d: Vec<DocId> = hits.iter().map(|h| h.doc).collect();
            d.sort_unstable();
            d
        };
        // no more than `depth` others: all of them, still complete
        let (best, rest) = ranked(&[3.0, 9.0, 5.0]).split(1, 2);
        assert_eq!(
            (docs(&best), docs(&rest.hits), rest.complete),
            (vec![1], vec![0, 2], true)
        );
        // more: the best `depth` of them, the ranking no longer complete
        let (best, rest) = ranked(&[5.0, 9.0, 7.0, 8.0, 6.0]).split(1, 2);
        assert_eq!(
            (docs(&best), docs(&rest.hits), rest.complete),
            (vec![1], vec![2, 3], false)
        );
        // a tie with the best one left out: none of the tied ones (tool 3 would be left out)
        let (best, rest) = ranked(&[9.0, 4.0, 4.0, 4.0, 3.0]).split(1, 2);
        assert_eq!(
            (docs(&best), docs(&rest.hits), rest.complete),
            (vec![0], vec![], false)
        );
        // the best `k` stay whatever the ties
        let (best, rest) = ranked(&[4.0, 4.0, 4.0, 4.0]).split(2, 1);
        assert_eq!(
            (
                best.iter().map(|h| h.doc).collect::<Vec<_>>(),
                rest.hits.len()
            ),
            (vec![0, 1], 0)
        );
    }

    proptest! {
        #[test]
        fn marked_tools_are_read_back_in_registry_order_and_the_marks_left_clear(docs in proptest::collection::vec(0u32..20_000, 0..300)) {
            // 20,000 tools: more than one word of the second level
            let mut marks = Marks::new(20_000);
            let acc: Vec<f32> = (0..20_000).map(|d| d as f32 + 0.5).collect();
            let mut marking = Marking::new(&mut marks);
            let mut want = docs.clone();
            want.sort_unstable();
            want.dedup();
            for &d in &docs {
                marking.mark(d); // in any order, some twice
            }
            let hits = marking.hits(&acc);
            prop_assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), want);
            prop_assert!(hits.iter().all(|h| h.score == acc[h.doc as usize]));
            prop_assert!(marks.words.iter().chain(&marks.summary).all(|&w| w == 0));
        }
    }
}
