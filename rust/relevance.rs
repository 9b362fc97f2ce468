//! The relevance gate's measure: how much evidence a tool holds that a query is about it.
//!
//! A tool's **evidence** for a query is the summed IDF of the distinct query words it contains
//! (any field), each weighted by its query weight (at most 1), in units of the IDF of a word that
//! only one tool of the index has: 1.0 is "one word as rare as it gets", 0.2 "a word a fifth as
//! informative". Words made only of digits, words the catalog never uses and stop words count
//! for nothing: they say nothing about which tool is wanted. Prefix expansions do not count either;
//! only whole words. The measure uses the same statistics as the scores (the index's own: shared,
//! or a caller's own index in tenant mode), so it is no more revealing than a score.
//!
//! `toolsift.Index(..., min_evidence=...)` closes the gate (no non-core tool) when no ranked tool
//! reaches the floor; `benches/relevance.py` measures what that refuses on BFCL.

use crate::bm25::idf;
use crate::index::{Index, Query};
use crate::postings::DocId;
use crate::tokenizer::Tokenizer;
use crate::vocab::TermWeights;

impl Index {
    /// The evidence (see the module doc) of each of `docs` for `query`.
    pub fn evidence<'q>(&self, query: impl Into<Query<'q>>, docs: &[DocId]) -> Vec<f32> {
        let query = query.into();
        let mut words = TermWeights::default();
        let mut tokenizer = Tokenizer::default();
        for &(text, weight) in &query.0 {
            if weight.is_nan() || weight <= 0.0 {
                continue;
            }
            let weight = weight.min(1.0);
            tokenizer.for_each_word(text, &mut |word, to_stem| {
                if word.chars().all(char::is_numeric) {
                    return;
                }
                let Some(term) = self.vocab.get_word(word, to_stem).0 else {
                    return;
                };
                words.add(term, weight);
            });
        }
        let n = self.len();
        let unit = idf(n, 1);
        let terms: Vec<(&[DocId], f32)> = words
            .into_vec()
            .into_iter()
            .filter_map(|(term, weight)| {
                let list = self.postings.list(term);
                (!list.is_empty()).then(|| (list.docs, weight * idf(n, list.len()) / unit))
            })
            .collect();
        docs.iter()
            .map(|doc| {
                terms
                    .iter()
                    .filter(|(list, _)| list.binary_search(doc).is_ok())
                    .fold(0.0, |sum, &(_, w)| sum + w) // from +0.0: `sum` starts at -0.0
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::index::tests::two_field_index;

    #[test]
    fn evidence_counts_distinct_informative_words_a_tool_contains() {
        let idx = two_field_index([
            (
                "refund_payment",
                "refund a payment of an order",
                "",
                false,
                10,
            ),
            ("order_status", "shipping status of an order", "", false, 10),
            ("send_email", "send an email", "", false, 10),
        ]);
        let [refund, status, email] = [0, 1, 2];
        let ev = idx.evidence("refund my order 123 refund", &[refund, status, email]);
        // "refund" is in one tool (1.0), "order" in two; "my" a stop word, "123" digits
        assert!(ev[0] > 1.0 && ev[0] < 2.0, "{ev:?}");
        assert!(ev[1] > 0.0 && ev[1] < ev[0], "{ev:?}");
        assert_eq!(ev[2], 0.0);
        assert_eq!(
            idx.evidence("123 456 zebra", &[refund, status, email]),
            [0.0; 3]
        );
        assert_eq!(idx.evidence("", &[refund]), [0.0]);
    }
}
