//! Ranking: term-at-a-time BM25F scoring with safe pruning, and the rounds of a selection.
//!
//! Query terms come in their canonical order (largest score bound first: the rarest terms; see
//! `Index::query_terms`). Each term's postings are added into a per-thread accumulator, except a
//! forbidden tool's (skipped, or added with weight 0), so it never gets a score. Once the
//! `want`-th best partial score beats the summed bounds of the terms still to come, no tool that
//! has not been reached yet can rank among the best `want`: the remaining (common, long) lists
//! are then only *probed* for the tools already reached, instead of walked in full. What comes
//! out is exact for every tool scoring above the largest score a tool left out could still have:
//! the prefix of the exhaustive ranking, bit for bit, since every tool's contributions are summed
//! in the canonical order the exhaustive path (`Index::score`) uses, and every bound is widened
//! by the most that rounding can add. Typical queries mix a few rare words with common ones whose
//! postings make up most of the work; those are the lists that get probed, so the work follows
//! the rare terms, not the catalog.
//!
//! One file per step; [`Ranker::rank`] strings them together:
//!
//! | file | step |
//! |---|---|
//! | `accumulate.rs` | the walks: a whole list into the accumulators; the per-thread scratch |
//! | `bounds.rs` | `slack`, `lift`, the check that cuts (`Ranker::threshold`), raising to exact scores |
//! | `collect.rs` | which reached tools go on; registry-order marks; [`Ranked::split`] |
//! | `probe.rs` | one term added to given hits: member bits, step merge, gallop |
//! | `ranker.rs` | [`Ranker`]: the driver, `rank_docs` for late rounds |
//! | `selection.rs` | the round loop of `Index::select`: pool, `rank_docs` or rank, packing |
//! | `tuning.rs` | [`Tuning`] and the prefix constants: every knob, each with its bench |
//!
//! # Paths and what pins them
//!
//! Every path must give the exhaustive answer bit for bit; each row's test fails when the path
//! is wrong. The unit tests run with `Tuning::DEFAULT` as built under `cfg(test)`
//! (`raise_from` 4, `pool_depth` 2), so that the small random catalogs of the proptests reach
//! the raise and the pool; `fuzz/fuzz_targets/index_build.rs` checks the same equalities with
//! the release values. `index::tests::pruning::*` are the proptests in `rust/index.rs`.
//!
//! | path | when it is taken | what must hold | pinned by |
//! |---|---|---|---|
//! | canonical order | always | every path adds a tool's terms in `Index::query_terms`'s order (bound descending, then term id) | `index::tests::pruning::pruned_search_equals_exhaustive_scoring` |
//! | walk with a branch (`accumulate::walk_skipping`) | `Term::runs`: fewer than 1 in `run_changes` postings cross a permission boundary (per term, at assembly: `postings::Acceleration::new`) | adds what the branch-free walk adds, records the same tools in the same order, only allowed ones | `ranking::accumulate::tests::both_walks_add_the_same`; the rule: `index::tests::a_term_whose_tools_come_in_runs_of_one_permission_is_walked_with_a_branch` |
//! | branch-free walk (`walk_weighted`) | `!Term::runs` | a forbidden posting adds 0 and records nothing | `ranking::accumulate::tests::both_walks_add_the_same` |
//! | padded mask | a mask shorter than the list | tools past its end are forbidden | `ranking::ranker::tests::tools_past_the_end_of_a_short_mask_are_not_scored` |
//! | exhaustive | `want == usize::MAX`, or no check cuts before the last list | every reached tool `keep` accepts, `complete` | `index::tests::pruning::pruned_search_equals_exhaustive_scoring` |
//! | cut (`Ranker::threshold`) | a term walked and one left, more postings left than tools reached, the `want`-th best partial above `reach`, the next list no shorter than the tools above `reach`, fewer passing than it has postings | `want` tools reach `theta`; no unreached tool can exceed `reach` | `index::tests::pruning::pruned_ranking_on_skewed_catalogs_equals_exhaustive`, `ranking::ranker::tests::common_lists_are_probed_not_walked_and_the_ranking_stays_exact`, `ranking::ranker::tests::a_short_list_that_every_reached_tool_could_pass_on_is_walked_not_probed` |
//! | raise to exact scores (`least_exact_of_best`) | at a cut, at least `raise_from × want` tools pass | the `want` best partials scored in full, in canonical order; `theta` becomes the least of them | `ranking::ranker::tests::a_threshold_raised_to_exact_scores_keeps_the_best_tool_on_it`; the proptests above |
//! | bounds (`slack`, `lift`, `Term::bound` × (1 + 1e-5)) | every check, collection and floor | a last-bit rounding difference never excludes a tool | `index::tests::pruning::a_last_bit_of_rounding_never_changes_the_ranking`, `index::tests::pruning::any_weights_rank_like_exhaustive_scoring` |
//! | collect from `partials` (`Cut::covered`) | a tool scoring `reach` cannot pass | `partials` holds every reached tool that can pass | `index::tests::pruning::pruned_ranking_on_skewed_catalogs_equals_exhaustive` |
//! | collect from the reached (`reached_until`) | otherwise | the first-touch marks (`firsts`) bound every tool skipped | `index::tests::pruning::pruned_ranking_on_skewed_catalogs_equals_exhaustive`, `index::tests::pruning::pruned_search_equals_exhaustive_scoring` |
//! | registry-order marks (`collect::Marking`) | some list left has no member bits (a merge follows) | read back ascending, each once, marks left clear | `ranking::collect::tests::marked_tools_are_read_back_in_registry_order_and_the_marks_left_clear` |
//! | probe through member bits | the list is in at least 1 in `members_from` tools | adds what a merge adds, in any order of hits | `ranking::probe::tests::a_probe_through_member_bits_adds_what_a_search_adds`, `postings::tests::member_bits_give_each_tools_position` |
//! | probe by stepping | no member bits, fewer than `step_gap` postings per hit | hits ascending | `ranking::probe::tests::a_probe_through_member_bits_adds_what_a_search_adds` (the merge is its reference) |
//! | probe by galloping | no member bits, otherwise | `gallop` finds the first position not below | `ranking::probe::tests::gallop_finds_the_first_position_not_below`, `ranking::probe::tests::gallop_finds_the_first_position_in_uneven_lists` |
//! | re-cut while probing (`Ranker::recut`) | more than `2 × want` hits before a list after the first probed | a dropped hit cannot reach the `want`-th best; `floor` covers it | `index::tests::pruning::pruned_ranking_on_skewed_catalogs_equals_exhaustive` |
//! | floor | after probing | every hit above `floor` is the exact head of the ranking | `index::tests::pruning::pruned_ranking_on_skewed_catalogs_equals_exhaustive` (every hit returned, not only `k`) |
//! | selection: the pool | a later round whose pool holds `k` tools it wants, or every match left | the pool is an exact head of the round's ranking | `ranking::collect::tests::a_split_keeps_the_best_of_the_rest_and_never_part_of_a_tie`, `index::tests::pruning::bounded_selection_equals_packing_every_match` |
//! | selection: `Ranker::rank_docs` | a later round, `Ranker::direct_is_cheaper` for the tools still cheap enough | each scored exactly (partial + probes in canonical order) | `ranking::ranker::tests::tools_scored_one_by_one_after_a_pruned_ranking_get_their_exhaustive_scores`, `index::tests::pruning::bounded_selection_equals_packing_every_match` |
//! | selection: rank on | any other round | continues from the terms walked; `keep` only shrinks | `index::tests::pruning::bounded_selection_equals_packing_every_match`, `index::tests::pruning::pruned_ranking_on_skewed_catalogs_equals_exhaustive` |
//! | scratch reuse (`Drop for Ranker`) | every ranking | accumulators cleared; after a panic the scratch is dropped | `index::tests::pruning::extreme_weights_leave_the_scratch_clean` |

mod accumulate;
mod bounds;
mod collect;
mod probe;
mod ranker;
pub(crate) mod selection;
pub mod tuning;

pub use collect::Ranked;
pub use ranker::{rank, Ranker};
pub use tuning::Tuning;

use crate::postings::PostingList;

/// One query term: its postings, its weight per impact level (idf × query weight × the term's
/// largest impact / 255) and an upper bound on what it adds to any tool's score.
#[derive(Debug, Clone, Copy)]
pub struct Term<'a> {
    pub list: PostingList<'a>,
    pub weight: f32,
    pub bound: f32,
    /// Whether the list's tools come in runs that require the same permissions (the tools of
    /// one server or service, as catalogs are usually laid out): the mask then changes seldom
    /// along the list, and a walk skips the forbidden tools with a branch that is predicted
    /// right almost every time. It decides how the list is walked, never what it adds.
    pub runs: bool,
    /// For a long list, its [`crate::postings::member_bits`]: a probe then finds each tool's
    /// posting in one step.
    pub members: Option<&'a [u64]>,
}

#[cfg(test)]
mod tests {
    /// ARCHITECTURE.md §4.1 mirrors the table of paths above, row for row.
    #[test]
    fn architecture_mirrors_the_table_of_paths() {
        let doc = include_str!("../../ARCHITECTURE.md");
        let rows: Vec<&str> = include_str!("mod.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//! "))
            .skip_while(|l| !l.starts_with("| path |"))
            .take_while(|l| l.starts_with('|'))
            .collect();
        assert!(rows.len() > 10);
        for row in rows {
            assert!(
                doc.lines().any(|l| l == row),
                "not in ARCHITECTURE.md: {row}"
            );
        }
    }
}
