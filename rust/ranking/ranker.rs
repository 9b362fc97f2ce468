//! The ranker: one query's term-at-a-time scoring, kept between the rounds of a selection.
//!
//! [`Ranker::rank`] reads as the algorithm: walk the rarest lists until a check cuts
//! (`bounds.rs`), collect the reached tools that can still pass (`collect.rs`), probe the
//! common lists for those alone (`probe.rs`), keep what scores above the floor. The steps and
//! what each must hold are in the table of the module doc of `ranking/mod.rs`.

use super::accumulate::{walk, Scratch};
use super::bounds::{kth_best, lift, Cut};
use super::collect::{collect, Marking, Ranked};
use super::probe::probe;
use super::tuning::Tuning;
use super::Term;
use crate::permissions::DocMask;
use crate::postings::DocId;
use crate::topk::Hit;

/// Scores `terms` (canonical order) for a catalog of `num_docs` tools in one go: see
/// [`Ranker::rank`]; `want = usize::MAX` scores exhaustively.
pub fn rank(
    terms: &[Term<'_>],
    num_docs: usize,
    allowed: DocMask<'_>,
    keep: impl Fn(DocId) -> bool,
    want: usize,
) -> Ranked {
    Ranker::new(terms, num_docs, allowed).rank(keep, want)
}

/// One query's scoring, kept between the rounds of a selection: the terms walked so far and
/// every reached tool's partial score over them. A later round (other tools wanted, fewer of
/// them) starts from there instead of walking the same postings again.
pub struct Ranker<'t, 'p, 'm> {
    pub(super) terms: &'t [Term<'p>],
    allowed: DocMask<'m>,
    pub(super) tuning: Tuning,
    /// Taken from the thread's buffers while in use; given back clean when dropped.
    pub(super) scratch: Scratch,
    /// Tools reached: `scratch.touched[..count]`, each with a partial score in `scratch.acc`.
    pub(super) count: usize,
    /// `firsts[j]`: how many tools had been reached when term `j` was walked. Those reached by
    /// term `j` for the first time (`touched[firsts[j]..firsts[j + 1]]`) are in none of the
    /// terms before it: their partial scores are at most the summed bounds of terms `j..walked`.
    pub(super) firsts: Vec<usize>,
    /// Terms whose postings have been added in full.
    pub(super) walked: usize,
    /// `rest[j]`: summed bounds of terms `j..`.
    pub(super) rest: Vec<f32>,
    /// Postings of the terms not walked yet.
    pub(super) rest_postings: usize,
}

impl<'t, 'p, 'm> Ranker<'t, 'p, 'm> {
    /// Starts scoring `terms` (canonical order) over a catalog of `num_docs` tools; `allowed`
    /// holds the tools the caller may use (checked before any of their postings is scored).
    pub fn new(terms: &'t [Term<'p>], num_docs: usize, allowed: DocMask<'m>) -> Self {
        let n = terms.len();
        let mut rest = vec![0f32; n + 1];
        for j in (0..n).rev() {
            rest[j] = rest[j + 1] + terms[j].bound;
        }
        Ranker {
            terms,
            allowed,
            tuning: Tuning::DEFAULT,
            scratch: Scratch::take(num_docs),
            count: 0,
            firsts: Vec::with_capacity(n),
            walked: 0,
            rest,
            rest_postings: terms.iter().map(|t| t.list.len()).sum(),
        }
    }

    /// Ranks with other tuning values from now on (rankings do not depend on them).
    pub fn tuned(&mut self, tuning: Tuning) -> &mut Self {
        self.tuning = tuning;
        self
    }

    /// The matching tools that `keep` accepts, ranked at least `want` deep. Terms are walked
    /// (from where an earlier call stopped) until the `want`-th best partial score beats the
    /// summed bounds of the terms still to come: then no tool not reached yet can rank among the
    /// best `want`, and the remaining (common, long) lists are only *probed* for the tools
    /// already reached, instead of walked in full. `want = usize::MAX` scores exhaustively.
    pub fn rank(&mut self, keep: impl Fn(DocId) -> bool, want: usize) -> Ranked {
        let cut = self.walk_until_cut(&keep, want);
        if self.walked == self.terms.len() {
            return self.every_reached(&keep);
        }
        let (mut hits, mut floor) = self.collect_passing(cut, &keep);
        self.probe_rest(&mut hits, &mut floor, cut.theta, want);
        // At least `want` remain (each scores at least theta), and every tool left out scores
        // at most `floor`: those above it are the exact head of the ranking.
        hits.retain(|h| h.score > floor);
        Ranked {
            hits,
            complete: false,
        }
    }

    /// Walks the next list until a check cuts (see [`Ranker::threshold`]) or every list is
    /// walked (then a cut that nothing passes, never used).
    fn walk_until_cut(&mut self, keep: &impl Fn(DocId) -> bool, want: usize) -> Cut {
        loop {
            if let Some(cut) = self.threshold(keep, want) {
                return cut;
            }
            if self.walked == self.terms.len() {
                return Cut {
                    theta: f32::INFINITY,
                    covered: None,
                };
            }
            self.walk_next();
        }
    }

    /// Adds the postings of the next term to the partial scores.
    fn walk_next(&mut self) {
        self.firsts.push(self.count);
        let t = &self.terms[self.walked];
        self.count = walk(
            t,
            self.allowed,
            &mut self.scratch.acc,
            &mut self.scratch.touched,
            self.count,
        );
        self.walked += 1;
        self.rest_postings -= t.list.len();
    }

    /// Every list walked: each reached tool that `keep` accepts, with its exact score.
    fn every_reached(&self, keep: &impl Fn(DocId) -> bool) -> Ranked {
        debug_assert_eq!(self.walked, self.terms.len());
        let Scratch { acc, touched, .. } = &self.scratch;
        let hits = touched[..self.count]
            .iter()
            .filter(|&&doc| keep(doc))
            .map(|&doc| Hit {
                doc,
                score: acc[doc as usize],
            })
            .collect();
        Ranked {
            hits,
            complete: true,
        }
    }

    /// The reached tools that `keep` accepts and whose partial score plus the bounds of the
    /// terms left can get to `cut.theta`, and `floor`: the most that any tool left out, reached
    /// or not, scores (the terms left lifting the best partial score left out, or 0 for a tool
    /// not reached; `lift` grows with the partial score, so that one bounds them all). A probe
    /// through member bits takes the tools in any order; the others merge, so they need registry
    /// order, which costs a pass over the marks and a second read of each score.
    fn collect_passing(&mut self, cut: Cut, keep: &impl Fn(DocId) -> bool) -> (Vec<Hit>, f32) {
        debug_assert!(self.walked < self.terms.len());
        let most = lift(self.rest[self.walked], self.terms.len() - self.walked);
        let passes = |s| most(s) >= cut.theta;
        let ordered = self.terms[self.walked..]
            .iter()
            .any(|t| t.members.is_none());
        let (hits, left) = match cut.covered {
            // Every tool outside `partials` that `keep` accepts scores at most `low`, which does
            // not pass: only `partials` needs reading (often a small part of the tools reached).
            Some(low) => {
                let Scratch {
                    acc,
                    marks,
                    partials,
                    ..
                } = &mut self.scratch;
                // every one of them `keep` accepts, with its partial score in the key
                let above = partials.iter().map(|&key| Hit::from_rank_key(key));
                let (hits, left) = collect(above, acc, marks, passes, |_| true, ordered);
                (hits, left.max(low))
            }
            None => {
                // the reached tools that can pass, and the most that those after them score
                let (can, after) = self.reached_until(passes);
                let Scratch {
                    acc,
                    touched,
                    marks,
                    ..
                } = &mut self.scratch;
                let reached = touched[..can].iter().map(|&doc| Hit {
                    doc,
                    score: acc[doc as usize],
                });
                let (hits, left) = collect(reached, acc, marks, passes, keep, ordered);
                (hits, left.max(after))
            }
        };
        (hits, most(left))
    }

    /// Adds the lists not walked to `hits`, in canonical term order. Once more than `2 × want`
    /// hits remain, before each list after the first, those that cannot reach the `want`-th
    /// best so far are dropped (see [`Ranker::recut`]) and `floor` raised to what they can score.
    fn probe_rest(&mut self, hits: &mut Vec<Hit>, floor: &mut f32, theta: f32, want: usize) {
        let (terms, walked) = (self.terms, self.walked);
        for (j, t) in terms.iter().enumerate().skip(walked) {
            if j > walked && hits.len() > 2 * want {
                *floor = floor.max(self.recut(hits, j, theta, want));
            }
            probe(t, hits, self.tuning.step_gap);
        }
    }

    /// Drops the hits that cannot reach the `want`-th best score so far (or `theta`) with the
    /// bounds of terms `j..`: scores only grow, so that is a lower bound on the final `want`-th
    /// best. Returns the most a dropped hit can score (the lift of 0 when none is dropped).
    fn recut(&mut self, hits: &mut Vec<Hit>, j: usize, theta: f32, want: usize) -> f32 {
        let partials = &mut self.scratch.partials;
        partials.clear();
        partials.extend(hits.iter().map(Hit::rank_key));
        let th = kth_best(partials, want).max(theta);
        let most = lift(self.rest[j], self.terms.len() - j);
        let mut left = 0f32;
        hits.retain(|h| {
            let out = most(h.score) < th;
            if out && h.score > left {
                left = h.score;
            }
            !out
        });
        most(left)
    }

    /// Whether scoring `docs` given tools one by one ([`Ranker::rank_docs`]) likely costs less
    /// than ranking on ([`Ranker::rank`]): probing each of them in every list not walked yet
    /// (about `Tuning::probe_cost` postings walked per probe) against walking those lists, and
    /// fewer of them than half the tools reached (a ranking from the partial scores scans all
    /// of those).
    pub fn direct_is_cheaper(&self, docs: usize) -> bool {
        let probes = docs.saturating_mul(self.terms.len() - self.walked);
        probes.saturating_mul(self.tuning.probe_cost) < self.rest_postings
            && docs.saturating_mul(2) < self.count
    }

    /// Every matching tool among `docs` that the caller may use and `keep` accepts, each scored
    /// exactly: its partial score over the terms walked so far, plus what the other lists add
    /// (probed, in canonical order), so the sums are those of exhaustive scoring. Cheaper than
    /// [`Ranker::rank`] for a few tools (late rounds of a selection, after the cheap ones).
    pub fn rank_docs(&mut self, docs: &[DocId], keep: impl Fn(DocId) -> bool) -> Ranked {
        let Scratch { acc, marks, .. } = &mut self.scratch;
        let mut marking = Marking::new(marks);
        for &doc in docs {
            if self.allowed.get(doc) == 1 && keep(doc) {
                marking.mark(doc);
            }
        }
        // in registry order, for the probes
        let mut hits = marking.hits(acc);
        for t in &self.terms[self.walked..] {
            probe(t, &mut hits, self.tuning.step_gap);
        }
        hits.retain(|h| h.score > 0.0);
        Ranked {
            hits,
            complete: true,
        }
    }
}

impl Drop for Ranker<'_, '_, '_> {
    /// Clears the accumulators of the tools reached and gives the buffers back for the next
    /// query; after a panic they are dropped instead, so they are never reused dirty.
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        std::mem::take(&mut self.scratch).give_back(self.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_lists_are_probed_not_walked_and_the_ranking_stays_exact() {
        use crate::index::tests::two_field_index;
        // "rare" in 3 tools, "ping" in all 200: the best 2 are known after the rare list (both
        // words are too short for prefix terms).
        let docs: Vec<(String, String)> = (0..200)
            .map(|i| {
                let rare = if i % 70 == 5 { " rare" } else { "" };
                (format!("tool{i}"), format!("ping thing{}{rare}", i % 7))
            })
            .collect();
        let idx = two_field_index(
            docs.iter()
                .map(|(n, d)| (n.as_str(), d.as_str(), "", false, 10)),
        );
        let caller = idx.caller::<&str>(&[]);
        let terms = idx.query_terms(&"rare ping".into());
        assert_eq!(terms.len(), 2);
        let ranked = rank(&terms, idx.len(), caller.allowed_docs(), |_| true, 2);
        assert!(!ranked.complete, "the common list should have been probed");
        let mut all = idx.score("rare ping", &caller);
        crate::topk::rank(&mut all);
        let n = ranked.hits.len();
        assert!(n >= 2 && n < all.len());
        assert_eq!(ranked.best(n), all[..n]);
    }

    #[test]
    fn a_short_list_that_every_reached_tool_could_pass_on_is_walked_not_probed() {
        use crate::index::tests::two_field_index;
        use crate::index::Query;
        // "rare" and "mid" in 3 tools each, "ping" in all 200. "mid" is asked for with a small
        // weight, so it comes second: after "rare" the best 2 are known, but all 3 tools reached
        // could still pass, as many as "mid" has postings: "mid" is walked, "ping" probed.
        let docs: Vec<(String, String)> = (0..200)
            .map(|i| {
                let rare = if i % 70 == 5 { " rare" } else { "" };
                let mid = if i % 70 == 9 { " mid" } else { "" };
                (
                    format!("tool{i}"),
                    format!("ping thing{}{rare}{mid}", i % 7),
                )
            })
            .collect();
        let idx = two_field_index(
            docs.iter()
                .map(|(n, d)| (n.as_str(), d.as_str(), "", false, 10)),
        );
        let caller = idx.caller::<&str>(&[]);
        let query = Query(vec![("rare ping", 1.0), ("mid", 0.05)]);
        let terms = idx.query_terms(&query);
        assert_eq!(terms.len(), 3);
        assert_eq!(
            terms.iter().map(|t| t.list.len()).collect::<Vec<_>>(),
            [3, 3, 200]
        );
        let mut ranker = Ranker::new(&terms, idx.len(), caller.allowed_docs());
        let ranked = ranker.rank(|_| true, 2);
        assert_eq!(ranker.walked, 2, "the short list should have been walked");
        assert!(!ranked.complete, "the common list should have been probed");
        drop(ranker);
        let mut all = idx.score(query, &caller);
        crate::topk::rank(&mut all);
        let n = ranked.hits.len();
        assert!(n >= 2 && n < all.len());
        assert_eq!(ranked.best(n), all[..n]);
    }

    #[test]
    fn tools_past_the_end_of_a_short_mask_are_not_scored() {
        use crate::index::tests::two_field_index;
        let docs: Vec<String> = (0..200).map(|i| format!("ping thing{}", i % 7)).collect();
        let idx = two_field_index(docs.iter().map(|d| ("tool", d.as_str(), "", false, 10)));
        let terms = idx.query_terms(&"ping thing3".into());
        // one word: tools 0..64 only, every other one of them
        let words = [0x5555_5555_5555_5555u64];
        for want in [3, usize::MAX] {
            let ranked = rank(&terms, idx.len(), DocMask::new(&words), |_| true, want);
            assert!(!ranked.hits.is_empty());
            assert!(ranked.hits.iter().all(|h| h.doc < 64 && h.doc % 2 == 0));
        }
    }

    #[test]
    fn a_threshold_raised_to_exact_scores_keeps_the_best_tool_on_it() {
        use crate::index::tests::two_field_index;
        // "acme" in 200 tools of the same length, "ping" in all 2000. After "acme" every one of
        // the 200 has the same partial score and could pass on it, more than `raise_from` times
        // the one wanted: the threshold is raised to the full score of the tool with the best
        // partial score (among equals, the first in the ranking order: tool 0), which also has
        // the most "ping"s. That score is the best, so the raised threshold is met exactly by the
        // tool that must be found.
        let docs: Vec<String> = (0..2000)
            .map(|i| match i {
                0 => "acme ping ping ping".to_owned(),
                i if i % 10 == 0 => format!("acme ping qq{i} rr{i}"),
                i => format!("ping ss{i} tt{i} uu{i}"),
            })
            .collect();
        let idx = two_field_index(docs.iter().map(|d| ("tool", d.as_str(), "", false, 10)));
        let caller = idx.caller::<&str>(&[]);
        let terms = idx.query_terms(&"acme ping".into());
        assert_eq!(
            terms.iter().map(|t| t.list.len()).collect::<Vec<_>>(),
            [200, 2000]
        );
        let mut ranker = Ranker::new(&terms, idx.len(), caller.allowed_docs());
        let ranked = ranker.rank(|_| true, 1);
        assert!(!ranked.complete, "the common list should have been probed");
        assert_eq!(ranker.walked, 1);
        drop(ranker);
        let mut all = idx.score("acme ping", &caller);
        crate::topk::rank(&mut all);
        assert_eq!(all[0].doc, 0);
        assert_eq!(ranked.best(1), all[..1]);
    }

    #[test]
    fn tools_scored_one_by_one_after_a_pruned_ranking_get_their_exhaustive_scores() {
        use crate::index::tests::two_field_index;
        let docs: Vec<String> = (0..300)
            .map(|i| {
                let rare = if i % 50 == 7 { " rare" } else { "" };
                format!("ping thing{} item{}{rare}", i % 7, i % 11)
            })
            .collect();
        let idx = two_field_index(docs.iter().map(|d| ("tool", d.as_str(), "", false, 10)));
        let caller = idx.caller::<&str>(&[]);
        let terms = idx.query_terms(&"rare ping thing3 item5".into());
        let mut ranker = Ranker::new(&terms, idx.len(), caller.allowed_docs());
        assert!(
            !ranker.rank(|_| true, 2).complete,
            "some lists should be left to probe"
        );
        assert!(ranker.walked > 0 && ranker.walked < terms.len());
        // reached and unreached tools, matching and not, some refused by `keep`
        let wanted: Vec<DocId> = (0..300).rev().step_by(3).collect();
        let mut got = ranker.rank_docs(&wanted, |d| d % 2 == 0).hits;
        got.sort_unstable_by_key(|h| h.doc);
        let mut all: Vec<Hit> = idx
            .score("rare ping thing3 item5", &caller)
            .into_iter()
            .filter(|h| h.doc % 3 == 2 && h.doc % 2 == 0)
            .collect();
        all.sort_unstable_by_key(|h| h.doc);
        assert!(all.len() > 20);
        assert_eq!(got, all);
    }
}
