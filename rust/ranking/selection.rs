//! Selection: the rounds that feed a budget packer from one query's ranking.
//!
//! The core tools are already in the packer (see `Index::select`). Each round asks for enough
//! candidates to fill what is left (`CostOrder::round_k`) and offers them, best first, to the
//! packer; it ends the loop when it found fewer than it asked for or when the packer is full.
//! The first round ranks every candidate, so the best-ranked tools that do not fit are reported
//! as dropped. Later rounds want only tools not yet examined that could still fit: the greedy
//! rule would skip a tool dearer than what is left, and that only shrinks. Since what a later
//! round wants is a subset of what the one before wanted, the head of the earlier ranking beyond
//! what it offered (the *pool*) is the exact head of the later one's; when it is deep enough, the
//! round needs no scoring at all.

use super::collect::Ranked;
use super::ranker::Ranker;
use super::tuning::Tuning;
use super::Term;
use crate::budget::{Packer, Packing};
use crate::index::Index;
use crate::permissions::CallerMask;
use crate::postings::DocId;
use crate::topk::Hit;

/// Packs the best-ranked of `caller`'s candidates (its allowed tools less the core tools) for
/// `terms` into `packer` (the core tools in already), round by round, and finishes it.
pub(crate) fn select(
    index: &Index,
    terms: &[Term<'_>],
    caller: &CallerMask,
    mut packer: Packer,
    tuning: Tuning,
) -> Packing {
    // Core tools are already in: the ranking scores only the caller's other tools.
    let mut ranker = Ranker::new(terms, index.len(), caller.candidates());
    ranker.tuned(tuning);
    let mut rounds = Rounds::new(index, tuning.pool_depth);
    while !packer.full() {
        let k = (index.by_cost).round_k(packer.remaining(), Some(packer.room()), index.len());
        let ranked = rounds.best(&mut ranker, k);
        rounds.offer(&ranked, &mut packer);
        // `wants` leaves out what was examined, so every round examines new tools; a round
        // that did not (a fault) could only repeat itself
        if ranked.len() < k || !rounds.examine(&ranked) {
            break;
        }
        rounds.limit_to(packer.remaining());
    }
    packer.finish()
}

/// What the rounds of one selection carry from one to the next.
struct Rounds<'i> {
    index: &'i Index,
    pool_depth: usize,
    /// True until the first round is over: it wants every candidate.
    first: bool,
    /// The most a tool wanted may cost: what the packer had left after the round before.
    limit: u64,
    /// Every tool a round has offered (or skipped as core), ascending.
    examined: Vec<DocId>,
    /// Tools scored exactly by the last round that scored, beyond the ones it offered: every
    /// tool that round wanted scoring above some floor (or every one, when `whole`), at most
    /// `pool_depth` of them.
    pool: Vec<Hit>,
    whole: bool,
}

impl<'i> Rounds<'i> {
    fn new(index: &'i Index, pool_depth: usize) -> Self {
        Rounds {
            index,
            pool_depth,
            first: true,
            limit: u64::MAX,
            examined: Vec::with_capacity(64),
            pool: Vec::new(),
            whole: false,
        }
    }

    /// The round's `k` best candidates, best first, from the first source that can give them:
    /// the pool, when it holds `k` tools the round wants (or every match left); else scoring
    /// just the tools still cheap enough, when [`Ranker::direct_is_cheaper`]; else ranking on.
    /// The rest of that ranking, up to `pool_depth` tools, becomes the next pool.
    fn best(&mut self, ranker: &mut Ranker<'_, '_, '_>, k: usize) -> Vec<Hit> {
        let Rounds {
            index,
            first,
            limit,
            examined,
            pool,
            whole,
            ..
        } = self;
        let (first, limit) = (*first, *limit);
        let examined = &*examined;
        let wants = |d: DocId| {
            first || (u64::from(index.cost(d)) <= limit && examined.binary_search(&d).is_err())
        };
        pool.retain(|h| wants(h.doc));
        let ranked = if !first && (pool.len() >= k || *whole) {
            Ranked {
                hits: std::mem::take(pool),
                complete: *whole,
            }
        } else if !first && ranker.direct_is_cheaper(index.by_cost.at_most(limit).len()) {
            // late rounds look for tools cheap enough to fit what is left: when there are few
            // of them, score just those instead of walking the query's postings again
            ranker.rank_docs(index.by_cost.at_most(limit), wants)
        } else {
            ranker.rank(wants, k)
        };
        let (best, rest) = ranked.split(k, self.pool_depth);
        (self.pool, self.whole) = (rest.hits, rest.complete);
        best
    }

    /// Offers each ranked tool to the packer while it is not full. A mask not made by
    /// `Index::caller` ranks core tools too: they are in already (and, examined, they are not
    /// ranked again).
    fn offer(&self, ranked: &[Hit], packer: &mut Packer) {
        for hit in ranked {
            if !packer.full() && !self.index.is_core(hit.doc) {
                packer.offer(hit.doc, u64::from(self.index.cost(hit.doc)));
            }
        }
    }

    /// Records the ranked tools as examined; false when none of them was new.
    fn examine(&mut self, ranked: &[Hit]) -> bool {
        let before = self.examined.len();
        self.examined.extend(ranked.iter().map(|h| h.doc));
        self.examined.sort_unstable();
        self.examined.dedup();
        self.examined.len() != before
    }

    /// Ends the round: the next one wants only tools costing at most `remaining`.
    fn limit_to(&mut self, remaining: u64) {
        self.first = false;
        self.limit = remaining;
    }
}
