//! Term dictionary: maps each distinct token to a dense [`TermId`], and remembers which term each
//! normalised word of the catalog became, so that a query word seen in the catalog is found with
//! one lookup instead of being stemmed again.

use std::collections::HashMap;

use crate::tokenizer::stem;

/// Dense id of a term, an index into the postings.
pub type TermId = u32;

/// Token → term id, and normalised word → term id.
#[derive(Debug, Default, Clone)]
pub struct Vocab {
    ids: HashMap<String, TermId>,
    words: HashMap<String, TermId>,
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

    /// Id of the term of a normalised word (stemmed first when `to_stem`, as the tokenizer
    /// says), adding it when new; the word is remembered.
    pub fn intern_word(&mut self, word: &str, to_stem: bool) -> TermId {
        if let Some(&id) = self.words.get(word) {
            return id;
        }
        let id = if to_stem {
            self.intern(&stem(word))
        } else {
            self.intern(word)
        };
        self.words.insert(word.to_owned(), id);
        id
    }

    /// Id of the term of a normalised word if that term occurs in the catalog: what
    /// [`Vocab::intern_word`] gave it, without stemming when the catalog had the same word.
    pub fn get_word(&self, word: &str, to_stem: bool) -> Option<TermId> {
        match self.words.get(word) {
            Some(&id) => Some(id),
            None if to_stem => self.get(&stem(word)),
            None => self.get(word),
        }
    }

    /// Every remembered word with its term, for snapshots.
    pub fn words(&self) -> impl Iterator<Item = (&str, TermId)> {
        self.words.iter().map(|(w, &id)| (w.as_str(), id))
    }

    /// Remembers the terms of words (from a snapshot, which lists them in ascending order);
    /// `None` if the words are not strictly ascending or an id is not a term's.
    pub fn with_words(mut self, words: Vec<String>, ids: Vec<TermId>) -> Option<Self> {
        let ok = words.len() == ids.len()
            && words.windows(2).all(|w| w[0] < w[1])
            && ids.iter().all(|&id| (id as usize) < self.len());
        if !ok {
            return None;
        }
        self.words = words.into_iter().zip(ids).collect();
        Some(self)
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
        let ids: HashMap<String, TermId> = terms
            .into_iter()
            .enumerate()
            .map(|(i, t)| (t, i as TermId))
            .collect();
        (ids.len() == n).then_some(Vocab {
            ids,
            words: HashMap::new(),
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let id = v.intern_word("policies", true);
        assert_eq!(v.get("polici"), Some(id));
        assert_eq!(v.get_word("policies", true), Some(id));
        // a word the catalog never had is stemmed on the way in
        assert_eq!(v.get_word("policy", true), Some(id));
        assert_eq!(v.get_word("policy", false), None);
        let cjk = v.intern_word("注文", false);
        assert_eq!(v.get_word("注文", false), Some(cjk));
    }
}
