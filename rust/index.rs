//! The index: tools in, ranked and budgeted selections out.
//!
//! [`IndexBuilder`] takes tools in registry order, each as weighted text fields, the permissions it
//! requires, its token cost and its core flag, and builds an immutable [`Index`]. A query is scored
//! term at a time over the postings of its tokens, and **a posting of a tool the caller may not use
//! is skipped before any score is computed**: such a tool is never scored, ranked, counted toward
//! the budget or returned. Corpus statistics (N, document frequencies, average length) are those of
//! the whole catalog.

use std::collections::HashMap;

use crate::bm25::{idf, Bm25Params};
use crate::budget::{pack, Packing};
use crate::error::{Error, Result};
use crate::permissions::{CallerMask, PermissionTable};
use crate::postings::{DocId, Postings, PostingsBuilder};
use crate::tokenizer::tokenize_into;
use crate::topk::{rank, Hit, TopK};
use crate::vocab::{TermId, Vocab};

/// One tool as the builder sees it.
#[derive(Debug, Clone, Copy)]
pub struct DocInput<'a> {
    /// Text fields with their weights (a weight of 0 leaves the field out).
    pub fields: &'a [(&'a str, f32)],
    /// Permissions the tool requires; empty for a public tool.
    pub perms: &'a [&'a str],
    /// Tokens its definition costs in a prompt.
    pub cost_tokens: u32,
    /// Always selected when the caller may use it.
    pub core: bool,
}

/// Builds an [`Index`] from tools added in registry order.
#[derive(Debug, Default)]
pub struct IndexBuilder {
    params: Bm25Params,
    vocab: Vocab,
    postings: PostingsBuilder,
    lens: Vec<f32>,
    costs: Vec<u32>,
    core: Vec<DocId>,
    perms: PermissionTable,
    tokens: Vec<String>,
}

impl IndexBuilder {
    /// A builder scoring with `params`.
    pub fn new(params: Bm25Params) -> Result<Self> {
        params.validate()?;
        Ok(IndexBuilder {
            params,
            ..IndexBuilder::default()
        })
    }

    /// Adds the next tool and returns its registry position.
    pub fn add(&mut self, doc: &DocInput<'_>) -> Result<DocId> {
        let id = DocId::try_from(self.lens.len()).map_err(|_| Error::TooManyTools {
            max: DocId::MAX as usize,
        })?;
        let mut tf: HashMap<TermId, f32> = HashMap::new();
        let mut order: Vec<TermId> = Vec::new();
        let mut len = 0f32;
        for &(text, weight) in doc.fields {
            check_weight(weight)?;
            if weight == 0.0 {
                continue;
            }
            self.tokens.clear();
            tokenize_into(text, &mut self.tokens);
            for token in &self.tokens {
                let term = self.vocab.intern(token);
                let slot = tf.entry(term).or_insert_with(|| {
                    order.push(term);
                    0.0
                });
                *slot += weight;
                len += weight;
            }
        }
        for term in order {
            self.postings.push(term, id, tf[&term]);
        }
        self.lens.push(len);
        self.costs.push(doc.cost_tokens);
        self.perms.push_doc(doc.perms);
        if doc.core {
            self.core.push(id);
        }
        Ok(id)
    }

    /// Freezes the builder into an immutable index.
    pub fn build(self) -> Index {
        let n = self.lens.len();
        let avg_len = if n == 0 {
            0.0
        } else {
            self.lens.iter().sum::<f32>() / n as f32
        };
        let norms = self
            .lens
            .iter()
            .map(|&l| self.params.length_norm(l, avg_len))
            .collect();
        let mut is_core = vec![false; n];
        self.core.iter().for_each(|&d| is_core[d as usize] = true);
        Index {
            params: self.params,
            vocab: self.vocab,
            postings: self.postings.build(),
            norms,
            costs: self.costs,
            core: self.core,
            is_core,
            perms: self.perms,
        }
    }
}

/// Refuses a NaN, infinite or negative field weight.
pub fn check_weight(w: f32) -> Result<()> {
    if w.is_finite() && w >= 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name: "field weight",
            reason: format!("{w} is not a finite number ≥ 0"),
        })
    }
}

/// Immutable, thread-safe index over a catalog.
#[derive(Debug, Clone)]
pub struct Index {
    params: Bm25Params,
    vocab: Vocab,
    postings: Postings,
    norms: Vec<f32>,
    costs: Vec<u32>,
    core: Vec<DocId>,
    is_core: Vec<bool>,
    perms: PermissionTable,
}

impl Index {
    /// Number of tools.
    pub fn len(&self) -> usize {
        self.norms.len()
    }

    /// True for an empty catalog.
    pub fn is_empty(&self) -> bool {
        self.norms.is_empty()
    }

    /// Distinct terms in the dictionary.
    pub fn num_terms(&self) -> usize {
        self.vocab.len()
    }

    /// Total postings.
    pub fn num_postings(&self) -> usize {
        self.postings.num_postings()
    }

    /// Distinct permission strings.
    pub fn num_permissions(&self) -> usize {
        self.perms.num_permissions()
    }

    /// Token cost of the tool at `doc`.
    pub fn cost(&self, doc: DocId) -> u32 {
        self.costs[doc as usize]
    }

    /// The mask of a caller holding `perms`.
    pub fn caller<S: AsRef<str>>(&self, perms: &[S]) -> CallerMask {
        self.perms.caller(perms)
    }

    /// True when the caller may use the tool at `doc`.
    pub fn allows(&self, caller: &CallerMask, doc: DocId) -> bool {
        (doc as usize) < self.len() && self.perms.allows(caller, doc)
    }

    /// Query terms found in the dictionary, with how often each occurs in the query.
    fn query_terms(&self, query: &str) -> Vec<(TermId, f32)> {
        let mut tokens = Vec::new();
        tokenize_into(query, &mut tokens);
        let mut terms: Vec<(TermId, f32)> = Vec::new();
        for t in &tokens {
            let Some(id) = self.vocab.get(t) else {
                continue;
            };
            match terms.iter_mut().find(|(x, _)| *x == id) {
                Some(e) => e.1 += 1.0,
                None => terms.push((id, 1.0)),
            }
        }
        terms
    }

    /// Every tool the caller may use that matches the query, with its score, unordered.
    pub fn score(&self, query: &str, caller: &CallerMask) -> Vec<Hit> {
        let mut acc = vec![0f32; self.len()];
        let mut touched: Vec<DocId> = Vec::new();
        for (term, qtf) in self.query_terms(query) {
            let list = self.postings.list(term);
            let weight = qtf * idf(self.len(), list.len());
            for (&doc, &tf) in list.docs.iter().zip(list.tfs) {
                if !self.perms.allows(caller, doc) {
                    continue; // filter before rank: a forbidden tool is never scored
                }
                let slot = &mut acc[doc as usize];
                if *slot == 0.0 {
                    touched.push(doc);
                }
                *slot += self.params.score(weight, tf, self.norms[doc as usize]);
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
    pub fn search(&self, query: &str, caller: &CallerMask, k: usize) -> Vec<Hit> {
        let mut top = TopK::new(k);
        self.score(query, caller)
            .into_iter()
            .for_each(|h| top.push(h));
        top.into_sorted()
    }

    /// Core tools the caller may use, in registry order.
    pub fn allowed_core(&self, caller: &CallerMask) -> Vec<DocId> {
        self.core
            .iter()
            .copied()
            .filter(|&d| self.perms.allows(caller, d))
            .collect()
    }

    /// Core tools, then the best-ranked matching tools that fit in `budget_tokens`, at most
    /// `max_taken` of them; see [`pack`].
    pub fn select(
        &self,
        query: &str,
        caller: &CallerMask,
        budget_tokens: u64,
        max_taken: Option<usize>,
    ) -> Packing {
        let mut hits: Vec<Hit> = self
            .score(query, caller)
            .into_iter()
            .filter(|h| !self.is_core[h.doc as usize])
            .collect();
        rank(&mut hits);
        let ranked: Vec<DocId> = hits.iter().map(|h| h.doc).collect();
        pack(
            &self.allowed_core(caller),
            &ranked,
            |d| u64::from(self.cost(d)),
            budget_tokens,
            max_taken,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut b = IndexBuilder::new(Bm25Params::default()).unwrap();
        for (name, desc, perm, core) in tools {
            let perms: Vec<&str> = if perm.is_empty() { vec![] } else { vec![perm] };
            let cost = ((name.len() + desc.len() + 300) / 4 + 1) as u32;
            b.add(&DocInput {
                fields: &[(name, 2.0), (desc, 1.0)],
                perms: &perms,
                cost_tokens: cost,
                core,
            })
            .unwrap();
        }
        b.build()
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
    fn search_never_scores_forbidden_tools() {
        let idx = support();
        let nobody = idx.caller::<&str>(&[]);
        let hits = idx.search("delete account refund order", &nobody, 10);
        assert!(hits.iter().all(|h| [0, 4].contains(&h.doc)));
    }

    #[test]
    fn empty_query_selects_core_tools_only() {
        let idx = support();
        let agent = idx.caller(&["crm.read"]);
        assert_eq!(idx.select("", &agent, 10_000, None).selected, [0]);
        assert!(idx.search("", &agent, 5).is_empty());
    }

    #[test]
    fn negative_or_nan_weights_are_refused() {
        let mut b = IndexBuilder::new(Bm25Params::default()).unwrap();
        let doc = DocInput {
            fields: &[("x", f32::NAN)],
            perms: &[],
            cost_tokens: 1,
            core: false,
        };
        assert!(matches!(b.add(&doc), Err(Error::InvalidParameter { .. })));
    }
}
