//! The index: tools in, ranked and budgeted selections out.
//!
//! [`IndexBuilder`] (in `builder.rs`) takes tools in registry order and builds an immutable
//! [`Index`]. A query is scored term at a time over the postings of its tokens (see
//! [`crate::ranking`]), and **a posting of a tool the caller may not use gets weight 0 before any
//! score is computed**: such a tool never gets a score and is never ranked, counted toward the
//! budget or returned. Corpus statistics (N, document frequencies, average field lengths) are
//! those of the whole catalog. [`Index::score`] is the exhaustive reference every fast path is
//! tested against.

use crate::bm25::{idf, Bm25Params, MAX_WEIGHT};
use crate::budget::{pack, CostOrder, Packer, Packing};
use crate::builder::DocTerms;
pub use crate::builder::{DocInput, IndexBuilder};
use crate::permissions::{CallerMask, PermissionTable};
use crate::postings::{Acceleration, DocId, Postings};
pub use crate::ranking::tuning::{PREFIX_MAX_SHARE, PREFIX_MIN_LIMIT};
use crate::ranking::{self, selection, Term, Tuning};
use crate::tokenizer::Tokenizer;
use crate::topk::Hit;
use crate::vocab::{TermId, TermWeights, Vocab};

/// A query: pieces of text with weights (a plain `&str` is one piece of weight 1). A term counts
/// once, with the largest weight of the pieces it occurs in, so older context can count less than
/// the latest request and a word repeated in a long request does not outweigh the others. Pieces of weight 0 (or less, or NaN) are ignored; weights above
/// [`MAX_WEIGHT`] count as [`MAX_WEIGHT`].
#[derive(Debug, Clone, PartialEq)]
pub struct Query<'a>(pub Vec<(&'a str, f32)>);

impl<'a> From<&'a str> for Query<'a> {
    fn from(text: &'a str) -> Self {
        Query(vec![(text, 1.0)])
    }
}

/// Immutable, thread-safe index over a catalog.
#[derive(Debug, Clone)]
pub struct Index {
    pub(crate) params: Bm25Params,
    pub(crate) vocab: Vocab,
    pub(crate) postings: Postings,
    pub(crate) costs: Vec<u32>,
    pub(crate) core: Vec<DocId>,
    pub(crate) is_core: Vec<bool>,
    pub(crate) perms: PermissionTable,
    /// The non-core tools by cost: the cost summary and order the rounds of a selection use.
    pub(crate) by_cost: CostOrder,
    /// Per term, how its list is walked and probed (see [`Acceleration`]).
    pub(crate) accel: Acceleration,
    /// Each tool's term counts, when built with [`IndexBuilder::build_with_terms`].
    pub(crate) terms: Option<DocTerms>,
}

impl Index {
    /// An index from its stored parts; `core` ascending and below `costs.len()`. The values
    /// derived from them (core flags, cost summary, cost order) are computed here.
    pub(crate) fn assemble(
        params: Bm25Params,
        vocab: Vocab,
        postings: Postings,
        costs: Vec<u32>,
        core: Vec<DocId>,
        perms: PermissionTable,
    ) -> Index {
        let mut is_core = vec![false; costs.len()];
        core.iter().for_each(|&d| is_core[d as usize] = true);
        let by_cost = CostOrder::new(&costs, &is_core);
        let accel = Acceleration::new(
            &postings,
            vocab.len(),
            costs.len(),
            |docs| perms.requirement_changes(docs),
            &Tuning::DEFAULT,
        );
        Index {
            terms: None,
            accel,
            by_cost,
            params,
            vocab,
            postings,
            costs,
            core,
            is_core,
            perms,
        }
    }

    /// The same index with per-term acceleration chosen by `tuning` (`run_changes`,
    /// `members_from`) instead of [`Tuning::DEFAULT`]: for the benches that compare tuning
    /// values (`examples/tuning_ab.rs`). Its answers are the same.
    #[doc(hidden)]
    pub fn retuned(&self, tuning: &Tuning) -> Index {
        let perms = &self.perms;
        let accel = Acceleration::new(
            &self.postings,
            self.vocab.len(),
            self.len(),
            |docs| perms.requirement_changes(docs),
            tuning,
        );
        Index {
            accel,
            ..self.clone()
        }
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.costs.len()
    }

    /// True for an empty catalog.
    pub fn is_empty(&self) -> bool {
        self.costs.is_empty()
    }

    /// Distinct terms in the dictionary.
    pub fn num_terms(&self) -> usize {
        self.vocab.len()
    }

    /// Total postings.
    pub fn num_postings(&self) -> usize {
        self.postings.num_postings()
    }

    /// Query weight of prefix terms (0: the index has none).
    pub fn prefix_weight(&self) -> f32 {
        self.params.prefix_weight
    }

    /// Distinct permission strings.
    pub fn num_permissions(&self) -> usize {
        self.perms.num_permissions()
    }

    /// Every permission some tool requires, each once, in the order first required.
    pub fn permission_names(&self) -> &[String] {
        self.perms.parts().0
    }

    /// Token cost of the tool at `doc`.
    pub fn cost(&self, doc: DocId) -> u32 {
        self.costs[doc as usize]
    }

    /// The permissions the tool at `doc` requires, as it was given them (each once).
    pub fn permissions(&self, doc: DocId) -> Vec<&str> {
        self.perms.required(doc).collect()
    }

    /// True when the tool at `doc` is a core tool.
    pub fn is_core(&self, doc: DocId) -> bool {
        self.is_core[doc as usize]
    }

    /// The token cost of the cheapest non-core tool `caller` may use (`u64::MAX`: none): what
    /// a packing for it stops below. A tool it may not use never lowers it, since that would
    /// change what its selections drop and say.
    pub fn cheapest_for(&self, caller: &CallerMask) -> u64 {
        self.by_cost
            .cheapest_allowed(caller.allowed_docs(), &self.costs, &self.is_core)
    }

    /// How many tools are core tools.
    pub fn num_core(&self) -> usize {
        self.is_core.iter().filter(|&&c| c).count()
    }

    /// The BM25F parameters the index was built with.
    pub fn params(&self) -> &Bm25Params {
        &self.params
    }

    /// Heap bytes the index holds: postings, dictionary, permissions, per-tool arrays and
    /// member bits (vectors by capacity, hash maps estimated from theirs).
    pub fn memory_bytes(&self) -> usize {
        use std::mem::size_of;
        size_of::<Index>()
            + self.postings.heap_bytes()
            + self.vocab.heap_bytes()
            + self.perms.heap_bytes()
            + self.params.fields.capacity() * size_of::<crate::bm25::FieldParams>()
            + self.costs.capacity() * size_of::<u32>()
            + self.core.capacity() * size_of::<DocId>()
            + self.by_cost.heap_bytes()
            + self.is_core.capacity()
            + self.accel.heap_bytes()
            + self.terms.as_ref().map_or(0, DocTerms::heap_bytes)
    }

    /// True when the index keeps its tools' term counts (see [`Index::subset`]).
    pub fn keeps_terms(&self) -> bool {
        self.terms.is_some()
    }

    /// The mask of a caller holding `perms`. A mask is only meaningful for the index that made
    /// it (permission ids are this index's own); the Python layer enforces that.
    pub fn caller<S: AsRef<str>>(&self, perms: &[S]) -> CallerMask {
        let mut mask = self.perms.caller(perms);
        mask.leave_out(&self.core);
        mask
    }

    /// `caller` narrowed to the tools of `scope` (see [`CallerMask::within`]). With `keep_core`
    /// the core tools stay allowed, as a selection within a group holds them whatever the query.
    pub fn within(&self, caller: &CallerMask, scope: &[DocId], keep_core: bool) -> CallerMask {
        caller.within(scope, if keep_core { &self.core } else { &[] })
    }

    /// True when the caller may use the tool at `doc`.
    pub fn allows(&self, caller: &CallerMask, doc: DocId) -> bool {
        (doc as usize) < self.len() && caller.allowed(doc) == 1
    }

    /// Query terms found in the dictionary, each with the largest weight among its occurrences
    /// (a word's prefix term at that weight times `prefix_weight`), in
    /// canonical order: largest score bound first, ties by term id. Every path sums a tool's
    /// score in this order, so pruned and exhaustive scores agree to the bit.
    pub(crate) fn query_terms(&self, query: &Query<'_>) -> Vec<Term<'_>> {
        let mut tokenizer = Tokenizer::default();
        let mut found = TermWeights::default();
        for &(text, weight) in &query.0 {
            // Documented clamping for the Rust API (Python refuses such weights): NaN and
            // weights ≤ 0 count as 0, weights above MAX_WEIGHT as MAX_WEIGHT.
            if weight.is_nan() || weight <= 0.0 {
                continue;
            }
            let weight = weight.min(MAX_WEIGHT);
            let prefix_weight = weight * self.params.prefix_weight;
            tokenizer.for_each_word(text, &mut |word, to_stem| {
                let (term, prefix) = self.vocab.get_word(word, to_stem);
                let prefix = prefix.filter(|_| prefix_weight > 0.0);
                for (id, weight) in [(term, weight), (prefix, prefix_weight)] {
                    if let Some(id) = id {
                        found.add(id, weight);
                    }
                }
            });
        }
        let mut terms: Vec<(TermId, Term<'_>)> = found
            .into_vec()
            .into_iter()
            .filter_map(|(id, qtf)| {
                let list = self.postings.list(id);
                if list.is_empty() {
                    return None; // a common prefix term without postings
                }
                // per impact level: a level l adds weight × l (see crate::postings)
                let weight = qtf.min(MAX_WEIGHT)
                    * idf(self.len(), list.len())
                    * (self.postings.max_impact(id) / 255.0);
                if weight <= 0.0 {
                    return None; // so small that the product rounds to 0: matches nothing
                }
                // Inflated a little so that rounding in a sum can never exceed the bounds.
                let bound = weight * 255.0 * (1.0 + 1e-5);
                Some((
                    id,
                    Term {
                        list,
                        weight,
                        bound,
                        runs: self.accel.runs(id),
                        members: self.accel.members(id),
                    },
                ))
            })
            .collect();
        terms.sort_unstable_by(|(a, x), (b, y)| y.bound.total_cmp(&x.bound).then(a.cmp(b)));
        terms.into_iter().map(|(_, t)| t).collect()
    }

    /// Every tool the caller may use that matches the query, with its score, unordered, by
    /// exhaustive term-at-a-time scoring written as plainly as possible. This is the reference
    /// the pruned paths must equal.
    pub fn score<'q>(&self, query: impl Into<Query<'q>>, caller: &CallerMask) -> Vec<Hit> {
        let mut acc = vec![0f32; self.len()];
        let mut touched: Vec<DocId> = Vec::new();
        for term in self.query_terms(&query.into()) {
            for (&doc, &impact) in term.list.docs.iter().zip(term.list.impacts) {
                if !self.perms.allows(caller, doc) || caller.in_scope(doc) == 0 {
                    continue; // filter before rank: a forbidden tool is never scored
                }
                let add = term.weight * f32::from(impact);
                let slot = &mut acc[doc as usize];
                if *slot == 0.0 && add > 0.0 {
                    touched.push(doc);
                }
                *slot += add;
            }
        }
        touched
            .into_iter()
            .map(|doc| Hit {
                doc,
                score: acc[doc as usize],
            })
            .collect()
    }

    /// The `k` best tools the caller may use, best first (ties: lower registry position).
    pub fn search<'q>(
        &self,
        query: impl Into<Query<'q>>,
        caller: &CallerMask,
        k: usize,
    ) -> Vec<Hit> {
        self.search_tuned(query, caller, k, Tuning::DEFAULT)
    }

    /// [`Index::search`] ranking with other tuning values (the same answer), for the benches.
    #[doc(hidden)]
    pub fn search_tuned<'q>(
        &self,
        query: impl Into<Query<'q>>,
        caller: &CallerMask,
        k: usize,
        tuning: Tuning,
    ) -> Vec<Hit> {
        if k == 0 {
            return Vec::new();
        }
        let terms = self.query_terms(&query.into());
        let mut ranker = ranking::Ranker::new(&terms, self.len(), caller.allowed_docs());
        let ranked = ranker.tuned(tuning).rank(|_| true, k);
        ranked.best(k)
    }

    /// Core tools the caller may use, in registry order.
    pub fn allowed_core(&self, caller: &CallerMask) -> Vec<DocId> {
        self.core
            .iter()
            .copied()
            .filter(|&d| caller.allowed(d) == 1)
            .collect()
    }

    /// Core tools, then the best-ranked matching tools that fit in `budget_tokens`, at most
    /// `max_taken` of them; see [`pack`]. Candidates come from rounds of a bounded top k that
    /// grows only while the packing could still take more of them (see
    /// `ranking/selection.rs`), so the work follows the budget rather than the catalog.
    pub fn select<'q>(
        &self,
        query: impl Into<Query<'q>>,
        caller: &CallerMask,
        budget_tokens: u64,
        max_taken: Option<usize>,
    ) -> Packing {
        self.select_tuned(query, caller, budget_tokens, max_taken, Tuning::DEFAULT)
    }

    /// [`Index::select`] ranking with other tuning values (the same answer), for the benches.
    #[doc(hidden)]
    pub fn select_tuned<'q>(
        &self,
        query: impl Into<Query<'q>>,
        caller: &CallerMask,
        budget_tokens: u64,
        max_taken: Option<usize>,
        tuning: Tuning,
    ) -> Packing {
        let query = query.into();
        let core = self.allowed_core(caller);
        let core_tokens = core.iter().map(|&d| u64::from(self.cost(d))).sum();
        let min_cost = self.cheapest_for(caller);
        let packer = Packer::new(&core, core_tokens, budget_tokens, max_taken, min_cost);
        if packer.full() {
            return packer.finish();
        }
        let terms = self.query_terms(&query);
        selection::select(self, &terms, caller, packer, tuning)
    }

    /// Core tools, then tools of an externally ranked list (fused, reranked) that fit in
    /// `budget_tokens`. The list is checked again here: positions the caller may not use, core
    /// tools, repeats and positions outside the catalog are skipped, so no ranking can smuggle a
    /// forbidden tool into a selection.
    pub fn pack_ranked(
        &self,
        ranked: &[DocId],
        caller: &CallerMask,
        budget_tokens: u64,
        max_taken: Option<usize>,
    ) -> Packing {
        let mut seen = vec![false; self.len()];
        let candidates: Vec<DocId> = ranked
            .iter()
            .copied()
            .filter(|&d| {
                self.allows(caller, d)
                    && !self.is_core[d as usize]
                    && !std::mem::replace(&mut seen[d as usize], true)
            })
            .collect();
        pack(
            &self.allowed_core(caller),
            &candidates,
            |d| u64::from(self.cost(d)),
            budget_tokens,
            max_taken,
            self.cheapest_for(caller),
        )
    }

    /// For every tool, whether the caller may use it.
    pub fn allowed_mask(&self, caller: &CallerMask) -> Vec<bool> {
        (0..self.len() as DocId)
            .map(|d| caller.allowed(d) == 1)
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bm25::{FieldParams, DEFAULT_PREFIX_WEIGHT};
    use crate::error::Error;

    /// An index of `(name, description, permission or "", core, cost)` tools: name weight 2,
    /// description weight 1, b = 0.75 for both.
    pub(crate) fn two_field_index<'a>(
        tools: impl IntoIterator<Item = (&'a str, &'a str, &'a str, bool, u32)>,
    ) -> Index {
        let field = |weight| FieldParams { weight, b: 0.75 };
        let mut b = IndexBuilder::new(Bm25Params {
            k1: 1.2,
            fields: vec![field(2.0), field(1.0)],
            ..Bm25Params::default()
        })
        .unwrap();
        for (name, desc, perm, core, cost_tokens) in tools {
            let perms: Vec<&str> = if perm.is_empty() { vec![] } else { vec![perm] };
            b.add(&DocInput {
                fields: &[name, desc],
                perms: &perms,
                cost_tokens,
                core,
            })
            .unwrap();
        }
        b.build()
    }

    /// The six-tool support catalog; each tool costs (len(name) + len(desc) + 300) / 4 + 1 tokens.
    fn support() -> Index {
        let tools = [
            ("search_help", "Search the help center articles", "", true),
            (
                "lookup_account",
                "Look up a customer account by email or id",
                "crm.read",
                false,
            ),
            (
                "order_status",
                "Get the shipping status of an order",
                "orders.read",
                false,
            ),
            (
                "issue_refund",
                "Refund a customer order payment to the card",
                "billing.refund",
                false,
            ),
            (
                "refund_policy",
                "Explain the refund policy to the customer",
                "",
                false,
            ),
            (
                "delete_account",
                "Delete a customer account permanently",
                "admin",
                false,
            ),
        ];
        two_field_index(
            tools.map(|(n, d, p, c)| (n, d, p, c, ((n.len() + d.len() + 300) / 4 + 1) as u32)),
        )
    }

    #[test]
    fn a_term_whose_tools_come_in_runs_of_one_permission_is_walked_with_a_branch() {
        let runs = |perm: &dyn Fn(usize) -> &'static str| {
            let idx = two_field_index((0..40).map(|i| ("tool", "ping", perm(i), false, 10)));
            let terms = idx.query_terms(&"ping".into());
            assert_eq!(terms.len(), 1);
            terms[0].runs
        };
        // laid out by service: the permission changes once along the list
        assert!(runs(&|i| if i < 20 { "a" } else { "b" }));
        assert!(runs(&|_| ""));
        // the tools take turns: it changes at every posting
        assert!(!runs(&|i| if i % 2 == 0 { "a" } else { "b" }));
        // at two postings of three: more than half of them
        assert!(!runs(&|i| if i % 3 == 0 { "a" } else { "b" }));
        // in runs of four: at a quarter of them
        assert!(runs(&|i| if i % 8 < 4 { "a" } else { "b" }));
    }

    #[test]
    fn each_tool_reports_what_the_index_enforces_for_it() {
        let idx = support();
        assert_eq!(idx.permissions(0), Vec::<&str>::new());
        assert_eq!(idx.permissions(3), ["billing.refund"]);
        assert!(idx.is_core(0) && !idx.is_core(3));
        assert_eq!((idx.params().k1, idx.params().fields.len()), (1.2, 2));
        let back = Index::from_bytes(&idx.to_bytes()).unwrap();
        assert_eq!(back.permissions(5), ["admin"]);
        assert!(back.is_core(0) && !back.is_core(5));
    }

    #[test]
    fn memory_bytes_count_the_postings_and_grow_with_the_catalog() {
        let small = support();
        assert!(small.memory_bytes() >= small.postings.heap_bytes() + small.vocab.heap_bytes());
        let words = |i: usize| format!("word{i} term{} other{}", i % 7, i % 13);
        let texts: Vec<String> = (0..400).map(words).collect();
        let big = two_field_index(texts.iter().map(|t| ("tool", t.as_str(), "p", false, 5)));
        assert!(big.memory_bytes() > 4 * small.memory_bytes());
        assert!(big.memory_bytes() >= 400 * (4 + 4 + 1));
    }

    #[test]
    fn forbidden_best_match_is_never_returned() {
        let idx = support();
        let agent = idx.caller(&["crm.read", "orders.read"]);
        let sel = idx.select("refund the payment of this order", &agent, 400, None);
        assert!(!sel.selected.contains(&3) && sel.selected.contains(&4));
        let billing = idx.caller(&["billing.refund"]);
        assert!(idx
            .select("refund the payment of this order", &billing, 400, None)
            .selected
            .contains(&3));
    }

    #[test]
    fn core_tool_then_the_right_tool_in_registry_order() {
        let idx = support();
        let agent = idx.caller(&["crm.read", "orders.read"]);
        assert_eq!(
            idx.select("where is my order shipping status", &agent, 400, None)
                .selected,
            [0, 2]
        );
        assert_eq!(idx.select("order status", &agent, 100, None).selected, [0]);
    }

    #[test]
    fn a_core_tool_is_selected_once_whatever_mask_is_given() {
        let idx = support();
        let agent = idx.caller(&["crm.read", "orders.read"]);
        // a mask straight from the permission table still ranks core tools: never twice
        let raw = idx.perms.caller(&["crm.read", "orders.read"]);
        assert_ne!(raw, agent);
        for mask in [&agent, &raw] {
            let p = idx.select("search help center order status", mask, 10_000, None);
            assert_eq!(p.selected, [0, 2]);
            assert_eq!(p.num_core, 1);
        }
        // search ranks core tools like any other
        assert!(idx
            .search("search help center", &agent, 3)
            .iter()
            .any(|h| h.doc == 0));
    }

    /// Free tools and no budget: the budget never shrinks, and still every round ranks tools
    /// not examined before, so the selection ends, with each tool once.
    #[test]
    fn free_tools_without_a_budget_are_selected_once_each() {
        let idx = two_field_index((0..3).map(|_| ("tool", "shared word", "", false, 0)));
        let everyone = idx.caller::<&str>(&[]);
        assert_eq!(
            idx.select("shared", &everyone, u64::MAX, Some(4)).selected,
            [0, 1, 2]
        );
        assert_eq!(
            idx.select("shared", &everyone, u64::MAX, None).selected,
            [0, 1, 2]
        );
        assert_eq!(
            idx.select("shared", &everyone, u64::MAX, Some(2)).selected,
            [0, 1]
        );
    }

    #[test]
    fn search_never_scores_forbidden_tools() {
        let idx = support();
        let nobody = idx.caller::<&str>(&[]);
        let hits = idx.search("delete account refund order", &nobody, 10);
        assert!(hits.iter().all(|h| [0, 4].contains(&h.doc)));
    }

    #[test]
    fn weighted_query_pieces_scale_their_terms() {
        let idx = support();
        let agent = idx.caller(&["crm.read", "orders.read"]);
        let both = |w: f32| Query(vec![("order status", 1.0), ("customer account", w)]);
        assert_eq!(idx.search(both(10.0), &agent, 1)[0].doc, 1);
        assert_eq!(idx.search(both(0.1), &agent, 1)[0].doc, 2);
        assert_eq!(
            idx.search(both(0.0), &agent, 5),
            idx.search("order status", &agent, 5)
        );
    }

    #[test]
    fn a_field_few_tools_fill_is_normalised_by_the_tools_that_fill_it() {
        // two of ten tools have a description, both four words long: each is of average length
        // for that field, so its pseudo-frequency is the weight itself (norm 1), not the quarter
        // a mean over all ten tools (0.8 words) would leave (norm 1 - 0.75 + 0.75 · 5 = 4)
        let names = ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"];
        let idx = two_field_index(names.iter().enumerate().map(|(i, &n)| {
            let desc = match i {
                0 => "mail zip pdf jpeg",
                1 => "ruby java perl lisp",
                _ => "",
            };
            (n, desc, "", false, 1)
        }));
        let hits = idx.search("mail", &idx.caller::<&str>(&[]), 10);
        assert_eq!(hits.len(), 1);
        let (n, df, k1) = (10.0f32, 1.0f32, 1.2f32);
        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        let tf = 1.0f32;
        let expected = idf * tf * (k1 + 1.0) / (tf + k1);
        assert!(
            (hits[0].score - expected).abs() < 1e-5,
            "{} vs {expected}",
            hits[0].score
        );
    }

    /// Twelve public tools, one of them about multiplying; prefix terms at `prefix_weight`.
    fn arithmetic(prefix_weight: f32) -> Index {
        let tools = [
            ("multiply", "Multiplies two integers"),
            ("add", "Adds two integers"),
            ("send_email", "Send an email to a user"),
            ("list_users", "List the users of a team"),
            ("create_invoice", "Create an invoice for an order"),
            ("weather", "Current weather for a city"),
            ("translate", "Translate text between languages"),
            ("resize_image", "Resize an image to a width and height"),
            ("book_flight", "Book a flight between two airports"),
            ("play_song", "Play a song by title"),
            ("stock_quote", "Latest quote for a stock ticker"),
            ("timer", "Start a countdown timer"),
        ];
        let mut b = IndexBuilder::new(Bm25Params {
            k1: 1.2,
            fields: vec![
                FieldParams {
                    weight: 2.0,
                    b: 0.75,
                },
                FieldParams {
                    weight: 1.0,
                    b: 0.75,
                },
            ],
            prefix_weight,
        })
        .unwrap();
        for (name, desc) in tools {
            b.add(&DocInput {
                fields: &[name, desc],
                perms: &[],
                cost_tokens: 10,
                core: false,
            })
            .unwrap();
        }
        b.build()
    }

    #[test]
    fn a_derivation_the_stemmer_misses_matches_through_its_prefix() {
        // "multiplication" stems to multipl, "multiply" to multipli: only their prefix meets
        let with = arithmetic(DEFAULT_PREFIX_WEIGHT);
        let anyone = with.caller::<&str>(&[]);
        let hits = with.search("multiplication of 3 and 2", &anyone, 3);
        assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), [0]);
        let without = arithmetic(0.0);
        assert!(without
            .search("multiplication of 3 and 2", &anyone, 3)
            .is_empty());
        // the word itself still ranks above a mere shared prefix, and the prefix never lengthens
        // a field: a query without prefix terms scores the same either way
        let exact = with.search("multiply", &anyone, 1)[0].score;
        let derived = with.search("multiplication", &anyone, 1)[0].score;
        assert!(exact > derived);
        assert_eq!(
            with.search("add two", &anyone, 5),
            without.search("add two", &anyone, 5)
        );
        assert!(without.num_terms() < with.num_terms());
    }

    #[test]
    fn a_prefix_common_in_a_large_catalog_has_no_postings() {
        // 12,000 tools: "integers" in 2,000 (> 2 % and > PREFIX_MIN_LIMIT), "multiplies" in
        // 500 (under both); "^inte" gets no postings, "^mult" keeps them, and so does "^inte"
        // in a 12-tool catalog (2 of 12: over the share, under the minimum)
        let mut b = IndexBuilder::new(Bm25Params::default()).unwrap();
        for i in 0..12_000 {
            let text = match i % 24 {
                0 => "multiplies integers",
                1 => "adds integers",
                2 | 3 => "divides integers",
                _ => "lists users",
            };
            let doc = DocInput {
                fields: &[text],
                perms: &[],
                cost_tokens: 10,
                core: false,
            };
            b.add(&doc).unwrap();
        }
        let idx = b.build();
        let anyone = idx.caller::<&str>(&[]);
        assert!(idx.search("integral", &anyone, 5).is_empty());
        assert_eq!(idx.search("multiplier", &anyone, 5000).len(), 500);
        let prefix = |idx: &Index, p: &str| idx.postings.list(idx.vocab.get(p).unwrap()).len();
        assert_eq!((prefix(&idx, "^inte"), prefix(&idx, "^mult")), (0, 500));
        let small = arithmetic(1.0);
        assert_eq!(prefix(&small, "^inte"), 2);
        let anyone = small.caller::<&str>(&[]);
        assert_eq!(small.search("integral", &anyone, 5).len(), 2);
    }

    #[test]
    fn a_repeated_query_word_counts_once() {
        let idx = support();
        let agent = idx.caller(&["billing.refund"]);
        assert_eq!(
            idx.search("refund refund refund the customer", &agent, 5),
            idx.search("refund the customer", &agent, 5)
        );
        // across pieces, a term counts with its largest weight
        let pieces = Query(vec![("refund customer", 1.0), ("refund", 0.5)]);
        assert_eq!(
            idx.search(pieces, &agent, 5),
            idx.search("refund customer", &agent, 5)
        );
    }

    #[test]
    fn packing_an_external_ranking_rechecks_permissions() {
        let idx = support();
        let agent = idx.caller(&["crm.read", "orders.read"]);
        let p = idx.pack_ranked(&[5, 3, 2, 2, 0, 99, 4], &agent, 10_000, None);
        assert_eq!(p.selected, [0, 2, 4]);
        assert_eq!(
            idx.allowed_mask(&agent),
            [true, true, true, false, true, false]
        );
    }

    #[test]
    fn empty_query_selects_core_tools_only() {
        let idx = support();
        let agent = idx.caller(&["crm.read"]);
        assert_eq!(idx.select("", &agent, 10_000, None).selected, [0]);
        assert!(idx.search("", &agent, 5).is_empty());
    }

    #[test]
    fn out_of_domain_parameters_and_wrong_field_counts_are_refused() {
        let nan = Bm25Params {
            k1: 1.2,
            fields: vec![FieldParams {
                weight: f32::NAN,
                b: 0.5,
            }],
            ..Bm25Params::default()
        };
        assert!(matches!(
            IndexBuilder::new(nan),
            Err(Error::InvalidParameter { .. })
        ));
        let mut b = IndexBuilder::new(Bm25Params::default()).unwrap();
        let doc = DocInput {
            fields: &["a", "b"],
            perms: &[],
            cost_tokens: 1,
            core: false,
        };
        assert!(matches!(b.add(&doc), Err(Error::LengthMismatch { .. })));
    }

    mod pruning {
        use super::*;
        use crate::budget::pack;
        use crate::topk::rank;
        use proptest::prelude::*;

        const WORDS: [&str; 10] = [
            "order", "refund", "ship", "track", "user", "mail", "pay", "card", "box", "help",
        ];

        type Doc = (String, String, u8, bool, u32);

        /// Tools as `(name, description, permission 0..4, core, cost)`.
        fn tools(
            name: impl Strategy<Value = String>,
            description: impl Strategy<Value = String>,
            core: f64,
            count: std::ops::Range<usize>,
        ) -> impl Strategy<Value = Vec<Doc>> {
            let tool = (
                name,
                description,
                0u8..4,
                proptest::bool::weighted(core),
                1u32..60,
            );
            proptest::collection::vec(tool, count)
        }

        fn catalog() -> impl Strategy<Value = Vec<Doc>> {
            let text = |n| {
                proptest::collection::vec(0..WORDS.len(), 0..n)
                    .prop_map(|ws| ws.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" "))
            };
            tools(text(3), text(12), 0.1, 1..60)
        }

        /// Word `i` of 30 drawn with a probability falling steeply with `i`.
        fn skewed_catalog() -> impl Strategy<Value = Vec<Doc>> {
            let text = |n| {
                proptest::collection::vec(0u32..1000, 0..n).prop_map(|xs| {
                    xs.iter()
                        .map(|&x| format!("w{}", ((f64::from(x) / 1000.0).powi(3) * 30.0) as usize))
                        .collect::<Vec<_>>()
                        .join(" ")
                })
            };
            tools(text(4), text(25), 0.05, 20..300)
        }

        /// The `k` best tools by exhaustive scoring.
        fn exhaustive_top(
            idx: &Index,
            query: Query<'_>,
            caller: &CallerMask,
            k: usize,
        ) -> Vec<Hit> {
            let mut all = idx.score(query, caller);
            rank(&mut all);
            all.truncate(k);
            all
        }

        /// Greedy packing of every match, ranked by exhaustive scoring.
        fn exhaustive_select(
            idx: &Index,
            query: Query<'_>,
            caller: &CallerMask,
            budget: u64,
            cap: Option<usize>,
        ) -> Packing {
            let mut all = idx.score(query, caller);
            rank(&mut all);
            let ranked: Vec<DocId> = all
                .iter()
                .map(|h| h.doc)
                .filter(|&d| !idx.is_core[d as usize])
                .collect();
            pack(
                &idx.allowed_core(caller),
                &ranked,
                |d| u64::from(idx.cost(d)),
                budget,
                cap,
                0,
            )
        }

        fn build(docs: &[Doc]) -> Index {
            let perms = ["", "a", "b", "c"];
            two_field_index(
                docs.iter().map(|(n, d, p, c, cost)| {
                    (n.as_str(), d.as_str(), perms[*p as usize], *c, *cost)
                }),
            )
        }

        /// Tool 0 gets four tiny contributions (about half an ulp of its score each) after a large
        /// one; tool 1 starts 3 ulps ahead. Summed in order, tool 0 ends first: the pruning
        /// bounds must leave room for that rounding.
        #[test]
        fn a_last_bit_of_rounding_never_changes_the_ranking() {
            let mut docs: Vec<(String, String)> = vec![
                ("alpha".into(), "qa qb qc qd".into()),
                ("beta".into(), "za zb zc zd".into()),
            ];
            for i in 0..40 {
                let filler = "qa qb qc qd zz yy xx ww vv uu";
                docs.push((format!("fill{}", i % 3), filler.into()));
            }
            let idx = two_field_index(
                docs.iter()
                    .map(|(n, d)| (n.as_str(), d.as_str(), "", false, 10)),
            );
            let caller = idx.caller::<&str>(&[]);
            let score_of = |q: Query<'_>, doc: DocId| {
                let hits = idx.score(q, &caller);
                hits.iter().find(|h| h.doc == doc).map(|h| h.score).unwrap()
            };
            let alpha = score_of(Query(vec![("alpha", 1.0)]), 0);
            let ulp = f32::from_bits(alpha.to_bits() + 1) - alpha;
            let (mut lo, mut hi) = (0f32, 1f32);
            for _ in 0..100 {
                let mid = (lo + hi) / 2.0;
                if score_of(Query(vec![("qa", mid)]), 0) < 0.56 * ulp {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            let target = f32::from_bits(alpha.to_bits() + 3);
            let mut wb = target / alpha;
            for _ in 0..1000 {
                let beta = score_of(Query(vec![("beta", wb)]), 1);
                if beta == target {
                    break;
                }
                let step = if beta < target { 1 } else { -1i32 as u32 };
                wb = f32::from_bits(wb.to_bits().wrapping_add(step));
            }
            let w = hi;
            let q = Query(vec![
                ("alpha", 1.0),
                ("beta", wb),
                ("qa", w),
                ("qb", w),
                ("qc", w),
                ("qd", w),
            ]);
            let want = exhaustive_top(&idx, q.clone(), &caller, 1);
            assert_eq!(idx.search(q, &caller, 1), want);
        }

        /// An infinite weight on a query whose tools the caller may not use must leave nothing
        /// behind for the next query on this thread.
        #[test]
        fn extreme_weights_leave_the_scratch_clean() {
            let idx = two_field_index([
                ("refund_order", "refund an order", "billing", false, 10),
                ("open", "order status", "", false, 10),
            ]);
            let (guest, billing) = (idx.caller::<&str>(&[]), idx.caller(&["billing"]));
            let before = idx.search("refund order", &billing, 5);
            for w in [f32::INFINITY, f32::MAX, f32::NAN, 1e-45] {
                idx.search(Query(vec![("refund", w)]), &guest, 5);
                idx.select(Query(vec![("refund order", w)]), &guest, 100, None);
            }
            assert_eq!(idx.search("refund order", &billing, 5), before);
            assert_eq!(before[0].doc, 0);
        }

        /// [`build`], keeping the term counts.
        fn build_with_terms(docs: &[Doc]) -> Index {
            let perms = ["", "a", "b", "c"];
            let mut b = IndexBuilder::new(two_field_index([]).params.clone()).unwrap();
            for (name, desc, p, core, cost_tokens) in docs {
                let perm = perms[*p as usize];
                let required: Vec<&str> = if perm.is_empty() { vec![] } else { vec![perm] };
                let doc = DocInput {
                    fields: &[name, desc],
                    perms: &required,
                    cost_tokens: *cost_tokens,
                    core: *core,
                };
                b.add(&doc).unwrap();
            }
            b.build_with_terms()
        }

        #[test]
        fn a_subset_needs_term_counts_and_ascending_positions() {
            let docs: Vec<Doc> = vec![("a".into(), "order".into(), 0, false, 5); 3];
            assert!(build(&docs).subset(&[0]).is_err());
            let full = build_with_terms(&docs);
            assert!(full.subset(&[1, 0]).is_err() && full.subset(&[3]).is_err());
            assert_eq!(full.subset(&[]).unwrap().len(), 0);
            assert!(full.keeps_terms() && !full.subset(&[2]).unwrap().keeps_terms());
        }

        #[test]
        fn a_subset_keeps_counts_of_hundreds_of_occurrences() {
            let many = "order ".repeat(300) + &"refund ".repeat(255);
            let docs: Vec<Doc> = vec![
                ("a".into(), many.clone(), 0, false, 5),
                ("b".into(), "order refund".into(), 1, false, 5),
                ("c".into(), many, 0, true, 5),
            ];
            let sub = build_with_terms(&docs).subset(&[0, 2]).unwrap();
            let alone = build(&[docs[0].clone(), docs[2].clone()]);
            let (a, b) = (sub.caller::<&str>(&[]), alone.caller::<&str>(&[]));
            for q in ["order", "refund", "ordering refunds"] {
                assert_eq!(sub.search(q, &a, 5), alone.search(q, &b, 5));
                assert_eq!(sub.select(q, &a, 100, None), alone.select(q, &b, 100, None));
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(400))]

            /// Derived query words reach the prefix terms (``refunding`` → ``^refu``).
            #[test]
            fn a_subset_ranks_and_selects_as_an_index_of_its_tools_alone(docs in catalog(), keep in proptest::collection::vec(proptest::bool::ANY, 60), q in proptest::collection::vec(0..WORDS.len() + 3, 1..6), k in 1usize..15, budget in 0u64..400) {
                let full = build_with_terms(&docs);
                let kept: Vec<DocId> = (0..docs.len() as DocId).filter(|&d| keep[d as usize]).collect();
                let sub = full.subset(&kept).unwrap();
                let public: Vec<Doc> = kept.iter().map(|&d| (docs[d as usize].0.clone(), docs[d as usize].1.clone(), 0, docs[d as usize].3, docs[d as usize].4)).collect();
                let alone = build(&public);
                let words = |i: usize| WORDS.get(i).copied().unwrap_or_else(|| ["refunding", "ordering", "shipping"][i - WORDS.len()]);
                let query = q.iter().map(|&w| words(w)).collect::<Vec<_>>().join(" ");
                let (a, b) = (sub.caller::<&str>(&[]), alone.caller::<&str>(&[]));
                prop_assert_eq!((sub.len(), sub.num_terms(), sub.num_postings()), (alone.len(), alone.num_terms(), alone.num_postings()));
                prop_assert_eq!(sub.search(query.as_str(), &a, k), alone.search(query.as_str(), &b, k));
                let (x, y) = (sub.select(query.as_str(), &a, budget, None), alone.select(query.as_str(), &b, budget, None));
                prop_assert_eq!((x.selected, x.used_tokens, x.dropped), (y.selected, y.used_tokens, y.dropped));
            }

            #[test]
            fn pruned_search_equals_exhaustive_scoring(docs in catalog(), q in proptest::collection::vec(0..WORDS.len(), 0..6), k in 0usize..20, who in 0usize..3) {
                let idx = build(&docs);
                let callers: [&[&str]; 3] = [&[], &["a"], &["a", "b", "c"]];
                let caller = idx.caller(callers[who]);
                let query = q.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
                let want = exhaustive_top(&idx, query.as_str().into(), &caller, k);
                prop_assert_eq!(idx.search(query.as_str(), &caller, k), want);
            }

            /// Query pieces with extreme, tiny, zero and near-tie weights.
            #[test]
            fn any_weights_rank_like_exhaustive_scoring(docs in skewed_catalog(), q in proptest::collection::vec((0usize..30, prop_oneof![Just(0.0f32), Just(1e-45), Just(1e-30), Just(f32::INFINITY), Just(f32::NAN), Just(-1.0), 1e-8f32..1e7, 0.9999f32..1.0001]), 1..6), k in 1usize..12, who in 0usize..3) {
                let idx = build(&docs);
                let callers: [&[&str]; 3] = [&[], &["a"], &["a", "b", "c"]];
                let caller = idx.caller(callers[who]);
                let words: Vec<String> = q.iter().map(|&(w, _)| format!("w{w}")).collect();
                let query = Query(words.iter().zip(&q).map(|(w, &(_, x))| (w.as_str(), x)).collect());
                let all = idx.score(query.clone(), &caller);
                prop_assert!(all.iter().all(|h| h.score.is_finite() && h.score > 0.0));
                let mut seen = std::collections::HashSet::new();
                prop_assert!(all.iter().all(|h| seen.insert(h.doc)));
                let want = exhaustive_top(&idx, query.clone(), &caller, k);
                prop_assert_eq!(idx.search(query, &caller, k), want);
            }

            /// Larger catalogs with a skewed vocabulary (a few words in most tools, most words
            /// in few), where the ranking stops walking the common lists and probes them.
            #[test]
            fn pruned_ranking_on_skewed_catalogs_equals_exhaustive(docs in skewed_catalog(), q in proptest::collection::vec(0usize..30, 1..7), k in 1usize..15, budget in 0u64..900, who in 0usize..3) {
                let idx = build(&docs);
                let callers: [&[&str]; 3] = [&[], &["a"], &["a", "b", "c"]];
                let caller = idx.caller(callers[who]);
                let query = q.iter().map(|&w| format!("w{w}")).collect::<Vec<_>>().join(" ");
                let top = exhaustive_top(&idx, query.as_str().into(), &caller, k);
                prop_assert_eq!(idx.search(query.as_str(), &caller, k), top);
                // every hit a pruned ranking returns, not only the `k` asked for, is the exact
                // head of the ranking (selection reuses them for its later rounds)
                let terms = idx.query_terms(&query.as_str().into());
                let ranked = crate::ranking::rank(&terms, idx.len(), caller.allowed_docs(), |_| true, k);
                let n = ranked.hits.len();
                prop_assert_eq!(ranked.best(n), exhaustive_top(&idx, query.as_str().into(), &caller, n));
                let want = exhaustive_select(&idx, query.as_str().into(), &caller, budget, None);
                let got = idx.select(query.as_str(), &caller, budget, None);
                prop_assert_eq!(got.selected, want.selected);
            }

            #[test]
            fn bounded_selection_equals_packing_every_match(docs in catalog(), q in proptest::collection::vec(0..WORDS.len(), 0..6), budget in 0u64..400, cap in proptest::option::of(0usize..6), who in 0usize..3) {
                let idx = build(&docs);
                let callers: [&[&str]; 3] = [&[], &["b"], &["a", "b", "c"]];
                let caller = idx.caller(callers[who]);
                let query = q.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
                let want = exhaustive_select(&idx, query.as_str().into(), &caller, budget, cap);
                let got = idx.select(query.as_str(), &caller, budget, cap);
                prop_assert_eq!(&got.selected, &want.selected);
                prop_assert_eq!(got.used_tokens, want.used_tokens);
                // a mask straight from the permission table (core tools not left out) selects
                // the same tools
                let raw = idx.perms.caller(callers[who]);
                let again = idx.select(query.as_str(), &raw, budget, cap);
                prop_assert_eq!(&again.selected, &want.selected);
                prop_assert_eq!(again.used_tokens, want.used_tokens);
            }

            /// A caller narrowed to a group ranks exactly the group's tools it may use: the
            /// whole caller's exhaustive ranking filtered to the group; a selection within the
            /// group keeps the caller's core tools and takes nothing from outside the group.
            #[test]
            fn a_caller_narrowed_to_a_group_ranks_only_its_tools(docs in catalog(), q in proptest::collection::vec(0..WORDS.len(), 0..6), k in 1usize..20, budget in 0u64..400, scope in proptest::collection::vec(0u32..70, 0..30), who in 0usize..3) {
                let idx = build(&docs);
                let callers: [&[&str]; 3] = [&[], &["a"], &["a", "b", "c"]];
                let caller = idx.caller(callers[who]);
                let query = q.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ");
                let inside = |d: DocId| scope.contains(&d);
                let narrow = idx.within(&caller, &scope, false);
                let mut all = idx.score(query.as_str(), &caller);
                rank(&mut all);
                let want: Vec<Hit> = all.into_iter().filter(|h| inside(h.doc)).take(k).collect();
                prop_assert_eq!(idx.search(query.as_str(), &narrow, k), want.clone());
                prop_assert_eq!(exhaustive_top(&idx, query.as_str().into(), &narrow, k), want);
                for d in 0..idx.len() as DocId {
                    prop_assert_eq!(idx.allows(&narrow, d), idx.allows(&caller, d) && inside(d));
                }
                let with_core = idx.within(&caller, &scope, true);
                let got = idx.select(query.as_str(), &with_core, budget, None);
                prop_assert_eq!(&got.selected, &exhaustive_select(&idx, query.as_str().into(), &with_core, budget, None).selected);
                prop_assert!(idx.allowed_core(&caller).iter().all(|d| got.selected.contains(d)));
                for &d in &got.selected {
                    prop_assert!(idx.allows(&caller, d) && (inside(d) || idx.is_core[d as usize]));
                }
                // narrowing twice keeps the tools of both scopes only
                let twice = idx.within(&narrow, &[0, 1, 2], false);
                for d in 0..idx.len() as DocId {
                    prop_assert_eq!(idx.allows(&twice, d), idx.allows(&caller, d) && inside(d) && d < 3);
                }
            }
        }
    }
}
