//! Budget packing: which tools fit in a token budget.
//!
//! Core tools always go in first (the caller asked for them unconditionally), even if they alone
//! exceed the budget; that case is reported. Candidates then go in **in rank order** while the
//! budget holds: a candidate that does not fit is skipped (and reported as dropped) and the
//! following, possibly smaller, candidates are still tried. An optional cap bounds how many
//! candidates are taken. The output lists the core tools, then the taken candidates, each part in
//! registry order, so an unchanged selection always serialises the same way.

use crate::permissions::DocMask;
use crate::postings::DocId;

/// Why a matching tool was left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// It did not fit in what was left of the token budget.
    OverBudget,
}

/// Result of [`pack`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Packing {
    /// Core tools then taken candidates, each part ascending by registry position.
    pub selected: Vec<DocId>,
    /// Number of leading entries of `selected` that are core tools.
    pub num_core: usize,
    /// Tokens used by `selected`.
    pub used_tokens: u64,
    /// Candidates skipped for lack of budget, in rank order.
    pub dropped: Vec<(DocId, DropReason)>,
    /// True when the core tools alone exceed the budget.
    pub core_over_budget: bool,
    /// True when packing stopped because no further candidate could be taken (the cap was
    /// reached, or less budget is left than the cheapest tool costs); false when it ran out of
    /// candidates, so that more of them might still fit.
    pub complete: bool,
    /// The cost of the cheapest candidate the caller may use, the packer's lower bound
    /// (`u64::MAX`: none), so that a selection can say why nothing else fits.
    pub min_cost: u64,
}

/// Greedy packing fed one candidate at a time, best-ranked first.
#[derive(Debug, Clone)]
pub struct Packer {
    out: Packing,
    taken: Vec<DocId>,
    budget: u64,
    cap: usize,
    min_cost: u64,
}

impl Packer {
    /// Starts with the core tools (costing `core_tokens` together) already in.
    /// `min_cost` is a lower bound on any candidate's cost.
    pub fn new(
        core: &[DocId],
        core_tokens: u64,
        budget: u64,
        max_taken: Option<usize>,
        min_cost: u64,
    ) -> Self {
        let mut selected = core.to_vec();
        selected.sort_unstable();
        let out = Packing {
            selected,
            num_core: core.len(),
            used_tokens: core_tokens,
            core_over_budget: core_tokens > budget,
            min_cost,
            ..Packing::default()
        };
        Packer {
            out,
            // a selection is a few dozen tools: one allocation instead of several growths
            taken: Vec::with_capacity(32),
            budget,
            cap: max_taken.unwrap_or(usize::MAX),
            min_cost,
        }
    }

    /// Tokens left in the budget.
    pub fn remaining(&self) -> u64 {
        self.budget.saturating_sub(self.out.used_tokens)
    }

    /// Candidates that may still be taken (the cap minus those taken).
    pub fn room(&self) -> usize {
        self.cap - self.taken.len()
    }

    /// True once no further candidate can be taken.
    pub fn full(&self) -> bool {
        self.taken.len() >= self.cap
            || self.out.used_tokens > self.budget
            || self.remaining() < self.min_cost
    }

    /// Offers the next candidate; it is taken if it fits, else recorded as dropped.
    pub fn offer(&mut self, doc: DocId, cost: u64) {
        if self.out.used_tokens.saturating_add(cost) <= self.budget {
            self.out.used_tokens += cost;
            self.taken.push(doc);
        } else {
            self.out.dropped.push((doc, DropReason::OverBudget));
        }
    }

    /// The packing, with `complete` telling whether it stopped because it was full.
    pub fn finish(mut self) -> Packing {
        self.out.complete = self.full();
        self.taken.sort_unstable();
        self.out.selected.extend(self.taken);
        self.out
    }
}

/// The non-core tools of a catalog by cost, as the rounds of a selection use them: computed
/// when the index is assembled (and checked against a snapshot's stored summary).
#[derive(Debug, Clone)]
pub struct CostOrder {
    /// The smallest cost of a non-core tool (`u64::MAX` when there is none): once less budget
    /// is left, packing can stop.
    pub min_cost: u64,
    /// The mean cost of a non-core tool (kept in snapshots, which check it on load).
    pub mean_cost: u64,
    /// The mean cost of the cheapest 99 % of the non-core tools, to size the rounds of a
    /// selection: one tool of outlandish cost (2³² − 1, a "never select" marker) in a large
    /// catalog no longer shrinks every round to a few tools, repeating the ranking until the
    /// budget fills, while the rounds of an ordinary catalog stay as the mean made them.
    round_cost: u64,
    /// Non-core tools by ascending cost (ties: registry order): the few that still fit late in
    /// a selection are scored directly.
    docs: Vec<DocId>,
    /// The cost of each tool of `docs`, ascending.
    costs: Vec<u32>,
}

impl CostOrder {
    /// The order of the tools whose `is_core` flag is false, by `costs`.
    pub fn new(costs: &[u32], is_core: &[bool]) -> Self {
        let mut docs: Vec<DocId> = (0..costs.len() as DocId)
            .filter(|&d| !is_core[d as usize])
            .collect();
        docs.sort_by_key(|&d| costs[d as usize]);
        let count = docs.len() as u64;
        let min_cost = docs
            .first()
            .map_or(u64::MAX, |&d| u64::from(costs[d as usize]));
        let total: u64 = docs.iter().map(|&d| u64::from(costs[d as usize])).sum();
        let sorted: Vec<u32> = docs.iter().map(|&d| costs[d as usize]).collect();
        let kept = &sorted[..sorted.len() - sorted.len() / 100];
        let round_cost =
            kept.iter().map(|&c| u64::from(c)).sum::<u64>() / (kept.len() as u64).max(1);
        CostOrder {
            min_cost,
            mean_cost: total / count.max(1),
            round_cost,
            docs,
            costs: sorted,
        }
    }

    /// The smallest cost of a non-core tool of `allowed` (`u64::MAX`: none), `costs` and
    /// `is_core` being the catalog's by registry position. The cheapest few tools are tried
    /// first (a caller may use most of them), then every allowed tool: O(tools / 64 + allowed)
    /// at worst, and never the cost of a tool outside `allowed`.
    pub fn cheapest_allowed(&self, allowed: DocMask<'_>, costs: &[u32], is_core: &[bool]) -> u64 {
        const FIRST: usize = 64;
        if let Some(i) = self
            .docs
            .iter()
            .take(FIRST)
            .position(|&d| allowed.get(d) == 1)
        {
            return u64::from(self.costs[i]);
        }
        if self.docs.len() <= FIRST {
            return u64::MAX;
        }
        let mut best = u64::MAX;
        for (w, &word) in allowed.words().iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let d = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if d < costs.len() && !is_core[d] {
                    best = best.min(u64::from(costs[d]));
                }
            }
        }
        best
    }

    /// The non-core tools costing at most `limit` tokens, cheapest first.
    pub fn at_most(&self, limit: u64) -> &[DocId] {
        &self.docs[..self.costs.partition_point(|&c| u64::from(c) <= limit)]
    }

    /// How many candidates a round of a selection over `num_docs` tools asks for: enough tools
    /// of typical cost (`round_cost`) to fill `budget_tokens` (or the cap), and two more. Little slack is
    /// cheaper: the depth a ranking must reach drives its cost, and a round that comes up short
    /// is followed by one that continues from the same scoring state (the botocore and Zipf 10k
    /// workloads of `benches/`: 9–12 % fewer instructions than with half as many again plus 8;
    /// the selection is the same for any depth).
    pub fn round_k(&self, budget_tokens: u64, max_taken: Option<usize>, num_docs: usize) -> usize {
        let fill = (budget_tokens / self.round_cost.max(1)).min(num_docs as u64) as usize;
        let want = max_taken.map_or(fill, |m| m.min(fill));
        (want + 2).min(num_docs.max(1))
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.docs.capacity() * std::mem::size_of::<DocId>()
            + self.costs.capacity() * std::mem::size_of::<u32>()
    }
}

/// Packs `core` then `ranked` (best first) into `budget` tokens; `max_taken` caps the candidates.
/// `min_cost` is a lower bound on any candidate's cost: packing stops once less budget is left.
pub fn pack(
    core: &[DocId],
    ranked: &[DocId],
    cost: impl Fn(DocId) -> u64,
    budget: u64,
    max_taken: Option<usize>,
    min_cost: u64,
) -> Packing {
    let core_tokens = core
        .iter()
        .map(|&d| cost(d))
        .fold(0u64, u64::saturating_add);
    let mut packer = Packer::new(core, core_tokens, budget, max_taken, min_cost);
    for &doc in ranked {
        if packer.full() {
            break;
        }
        packer.offer(doc, cost(doc));
    }
    packer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_outlandish_cost_does_not_shrink_the_rounds() {
        let mut costs = vec![50u32; 10_000];
        costs[7] = u32::MAX; // a tool nobody can afford, in another corner of the catalog
        let order = CostOrder::new(&costs, &vec![false; costs.len()]);
        assert!(order.mean_cost > 400_000); // the mean it used to size rounds with
        assert_eq!(order.round_k(8_000, None, costs.len()), 8_000 / 50 + 2);
        assert_eq!(order.round_k(8_000, Some(10), costs.len()), 12);
        assert_eq!(CostOrder::new(&[], &[]).round_k(100, None, 0), 1);
    }

    #[test]
    fn core_first_then_candidates_in_registry_order() {
        let p = pack(&[4], &[9, 2, 7], |_| 10, 100, None, 0);
        assert_eq!(p.selected, [4, 2, 7, 9]);
        assert_eq!(p.num_core, 1);
        assert_eq!(p.used_tokens, 40);
    }

    #[test]
    fn a_candidate_that_does_not_fit_is_skipped_and_smaller_ones_still_tried() {
        let cost = |d: DocId| [0, 50, 80, 10][d as usize];
        let p = pack(&[], &[1, 2, 3], cost, 70, None, 0);
        assert_eq!(p.selected, [1, 3]);
        assert_eq!(p.dropped, [(2, DropReason::OverBudget)]);
    }

    #[test]
    fn core_tools_are_kept_even_over_budget_and_reported() {
        let p = pack(&[0, 1], &[2], |_| 60, 100, None, 0);
        assert_eq!(p.selected, [0, 1]);
        assert!(p.core_over_budget && p.complete);
        assert!(p.dropped.is_empty()); // nothing was even tried
    }

    #[test]
    fn nothing_fits_once_core_tools_overrun_the_budget() {
        let p = pack(&[0], &[1], |d| [5, 0][d as usize], 3, None, 0);
        assert_eq!(p.selected, [0]);
        assert!(p.core_over_budget && p.complete);
    }

    #[test]
    fn cap_bounds_the_candidates_taken() {
        let p = pack(&[], &[5, 3, 1], |_| 1, 100, Some(2), 0);
        assert_eq!(p.selected, [3, 5]);
    }

    /// Brute-force reference: the greedy rule written as plainly as possible.
    fn greedy(ranked: &[DocId], costs: &[u64], budget: u64) -> Vec<DocId> {
        let mut used = 0;
        let mut out = vec![];
        for &d in ranked {
            if used + costs[d as usize] <= budget {
                used += costs[d as usize];
                out.push(d);
            }
        }
        out.sort();
        out
    }

    proptest! {
        #[test]
        fn matches_plain_greedy(costs in proptest::collection::vec(0u64..50, 1..40), budget in 0u64..300, seed in any::<u64>()) {
            let mut ranked: Vec<DocId> = (0..costs.len() as DocId).collect();
            let n = ranked.len();
            for i in 0..n { ranked.swap(i, (seed as usize).wrapping_mul(i + 7) % n); }
            let p = pack(&[], &ranked, |d| costs[d as usize], budget, None, 0);
            prop_assert_eq!(&p.selected, &greedy(&ranked, &costs, budget));
            prop_assert!(p.used_tokens <= budget);
            prop_assert_eq!(p.selected.len() + p.dropped.len(), n);
        }

        #[test]
        fn the_cheapest_allowed_tool_is_found_and_no_other(
            tools in proptest::collection::vec((0u32..1000, any::<bool>(), 0u8..4), 0..300),
        ) {
            // (cost, core, allowed unless 0): the cheapest 64 are often all forbidden
            let costs: Vec<u32> = tools.iter().map(|t| t.0).collect();
            let is_core: Vec<bool> = tools.iter().map(|t| t.1).collect();
            let mut words = vec![0u64; tools.len().div_ceil(64)];
            for (d, t) in tools.iter().enumerate() {
                if t.2 == 0 || (t.0 > 600 && t.2 == 1) {
                    words[d / 64] |= 1 << (d % 64);
                }
            }
            let allowed = DocMask::new(&words);
            let expected = (0..tools.len())
                .filter(|&d| allowed.get(d as DocId) == 1 && !is_core[d])
                .map(|d| u64::from(costs[d]))
                .min()
                .unwrap_or(u64::MAX);
            let order = CostOrder::new(&costs, &is_core);
            prop_assert_eq!(order.cheapest_allowed(allowed, &costs, &is_core), expected);
        }
    }
}
