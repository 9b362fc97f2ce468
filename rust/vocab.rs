//! Term dictionary: maps each distinct token to a dense [`TermId`], and remembers which term each
//! normalised word of the catalog became, so that a query word seen in the catalog is found with
//! one lookup instead of being stemmed again. A word can also have a prefix term
//! ([`prefix_term`]), remembered with it.

use std::collections::HashMap;

/// Hash maps keyed by catalog words: foldhash (seeded per process, so no fixed collisions to
/// craft) instead of SipHash, which was a tenth of index build time.
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

use crate::tokenizer::{prefix_term, stem};

/// The terms of one normalised word: its own (stemmed) term and, for a long alphabetic word,
/// its prefix term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WordTerms {
    /// The word's term.
    pub term: TermId,
    /// Its prefix term, if it has one.
    pub prefix: Option<TermId>,
}

/// Dense id of a term, an index into the postings.
pub type TermId = u32;

/// The distinct terms of a query with the largest weight each, in order of first occurrence (the
/// order scores are summed in, so results do not depend on how the terms were collected). A
/// linear search while there are few, as in most requests; a map from [`TermWeights::LINEAR`]
/// terms on, so that a long conversation given as one query costs linear, not quadratic, time.
#[derive(Debug, Default)]
pub struct TermWeights {
    found: Vec<(TermId, f32)>,
    at: Option<Map<TermId, usize>>,
}

impl TermWeights {
    /// Terms searched linearly before a map is kept.
    pub const LINEAR: usize = 32;

    /// Adds `weight` for `term`: the largest weight given a term counts.
    pub fn add(&mut self, term: TermId, weight: f32) {
        let index = match &mut self.at {
            Some(at) => at.get(&term).copied(),
            None => self.found.iter().position(|&(t, _)| t == term),
        };
        if let Some(i) = index {
            let held = &mut self.found[i].1;
            *held = held.max(weight);
            return;
        }
        self.found.push((term, weight));
        match &mut self.at {
            Some(at) => {
                at.insert(term, self.found.len() - 1);
            }
            None if self.found.len() > Self::LINEAR => {
                self.at = Some(
                    self.found
                        .iter()
                        .enumerate()
                        .map(|(i, &(t, _))| (t, i))
                        .collect(),
                );
            }
            None => {}
        }
    }

    /// The terms and their weights, in order of first occurrence.
    pub fn into_vec(self) -> Vec<(TermId, f32)> {
        self.found
    }
}

/// Token → term id, and normalised word → term id.
#[derive(Debug, Default, Clone)]
pub struct Vocab {
    ids: Map<String, TermId>,
    words: Map<String, WordTerms>,
}

impl Vocab {
    /// Id of `term`, adding it when new.
    pub fn intern(&mut self, term: &str) -> TermId {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        let id = self.ids.len() as TermId;
        self.ids.insert(term.to_owned(), id);
        id
    }

    /// Id of `term` if it occurs anywhere in the catalog.
    pub fn get(&self, term: &str) -> Option<TermId> {
        self.ids.get(term).copied()
    }

    /// The terms of a normalised word (stemmed first when `to_stem`, as the tokenizer says; a
    /// prefix term only with `prefixes`), adding them when new; the word is remembered.
    pub fn intern_word(&mut self, word: &str, to_stem: bool, prefixes: bool) -> WordTerms {
        if let Some(&terms) = self.words.get(word) {
            return terms;
        }
        let term = if to_stem {
            self.intern(&stem(word))
        } else {
            self.intern(word)
        };
        let prefix = prefix_term(word)
            .filter(|_| prefixes)
            .map(|p| self.intern(&p));
        let terms = WordTerms { term, prefix };
        self.words.insert(word.to_owned(), terms);
        terms
    }

    /// The terms of a normalised word that occur in the catalog: what [`Vocab::intern_word`]
    /// gave it, without stemming when the catalog had the same word.
    pub fn get_word(&self, word: &str, to_stem: bool) -> (Option<TermId>, Option<TermId>) {
        if let Some(t) = self.words.get(word) {
            return (Some(t.term), t.prefix);
        }
        let term = if to_stem {
            self.get(&stem(word))
        } else {
            self.get(word)
        };
        (term, prefix_term(word).and_then(|p| self.get(&p)))
    }

    /// Every remembered word with its term, for snapshots (prefix terms follow from the words).
    pub fn words(&self) -> impl Iterator<Item = (&str, TermId)> {
        self.words.iter().map(|(w, t)| (w.as_str(), t.term))
    }

    /// Remembers the terms of words (from a snapshot, which lists them in ascending order), and
    /// their prefix terms when the index has them (`prefixes`); `None` if the words are not
    /// strictly ascending, an id is not a term's or a word's prefix term is missing.
    pub fn with_words(
        mut self,
        words: Vec<String>,
        ids: Vec<TermId>,
        prefixes: bool,
    ) -> Option<Self> {
        let ok = words.len() == ids.len()
            && words.windows(2).all(|w| w[0] < w[1])
            && ids.iter().all(|&id| (id as usize) < self.len());
        if !ok {
            return None;
        }
        let mut map = Map::with_capacity_and_hasher(words.len(), Default::default());
        for (word, term) in words.into_iter().zip(ids) {
            let prefix = match prefix_term(&word).filter(|_| prefixes) {
                Some(p) => Some(self.get(&p)?),
                None => None,
            };
            map.insert(word, WordTerms { term, prefix });
        }
        self.words = map;
        Some(self)
    }

    /// Remembers the words of `parent` whose term `remap` keeps (`TermId::MAX`: dropped), with
    /// their terms and prefix terms renumbered by `remap` (a prefix it drops: none). A query
    /// word then finds what it would in a dictionary built from the kept tools alone: its own
    /// term, and its prefix term where those tools have it.
    pub(crate) fn keep_words(&mut self, parent: &Vocab, remap: &[TermId]) {
        let kept = |id: TermId| Some(remap[id as usize]).filter(|&t| t != TermId::MAX);
        for (word, terms) in &parent.words {
            if let Some(term) = kept(terms.term) {
                let prefix = terms.prefix.and_then(kept);
                self.words.insert(word.clone(), WordTerms { term, prefix });
            }
        }
    }

    /// Every term, indexed by its id.
    pub fn terms(&self) -> Vec<&str> {
        let mut out = vec![""; self.ids.len()];
        for (term, &id) in &self.ids {
            out[id as usize] = term;
        }
        out
    }

    /// A dictionary whose term `i` is `terms[i]`; `None` if a term repeats.
    pub fn from_terms(terms: Vec<String>) -> Option<Self> {
        let n = terms.len();
        let ids: Map<String, TermId> = terms
            .into_iter()
            .enumerate()
            .map(|(i, t)| (t, i as TermId))
            .collect();
        (ids.len() == n).then_some(Vocab {
            ids,
            words: Map::default(),
        })
    }

    /// Number of distinct terms.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when no term was interned.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Heap bytes held by the dictionary: the strings and the maps' entries (estimated from
    /// their capacity, a control byte each).
    pub fn heap_bytes(&self) -> usize {
        let ids: usize = self.ids.keys().map(String::capacity).sum();
        let words: usize = self.words.keys().map(String::capacity).sum();
        ids + words
            + self.ids.capacity() * (std::mem::size_of::<(String, TermId)>() + 1)
            + self.words.capacity() * (std::mem::size_of::<(String, WordTerms)>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The same terms, weights and order as a linear search over every term gives, below
        /// and past [`TermWeights::LINEAR`].
        #[test]
        fn term_weights_keep_first_occurrence_and_the_largest_weight(
            adds in prop::collection::vec((0u32..80, 0.0f32..10.0), 0..400)
        ) {
            let mut fast = TermWeights::default();
            let mut slow: Vec<(TermId, f32)> = Vec::new();
            for &(term, weight) in &adds {
                fast.add(term, weight);
                match slow.iter_mut().find(|(t, _)| *t == term) {
                    Some(e) => e.1 = e.1.max(weight),
                    None => slow.push((term, weight)),
                }
            }
            prop_assert_eq!(fast.into_vec(), slow);
        }
    }

    #[test]
    fn interning_is_idempotent_and_dense() {
        let mut v = Vocab::default();
        assert_eq!(v.intern("order"), 0);
        assert_eq!(v.intern("refund"), 1);
        assert_eq!(v.intern("order"), 0);
        assert_eq!(v.get("refund"), Some(1));
        assert_eq!(v.get("nope"), None);
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn a_word_finds_the_term_it_was_stemmed_to() {
        let mut v = Vocab::default();
        let WordTerms { term, prefix } = v.intern_word("policies", true, true);
        assert_eq!(v.get("polici"), Some(term));
        assert_eq!(v.get("^poli"), prefix);
        assert!(prefix.is_some());
        assert_eq!(v.get_word("policies", true), (Some(term), prefix));
        // a word the catalog never had is stemmed on the way in; its prefix term is found too
        assert_eq!(v.get_word("policy", true), (Some(term), prefix));
        assert_eq!(v.get_word("policy", false), (None, prefix));
        assert_eq!(v.get_word("politics", true), (None, prefix));
        let cjk = v.intern_word("注文", false, true);
        assert_eq!(cjk.prefix, None);
        assert_eq!(v.get_word("注文", false), (Some(cjk.term), None));
        // without prefixes, a word has its own term only
        let mut plain = Vocab::default();
        let t = plain.intern_word("multiplication", true, false);
        assert_eq!((t.prefix, plain.len()), (None, 1));
    }
}
