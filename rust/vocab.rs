//! Term dictionary: maps each distinct token to a dense [`TermId`].

use std::collections::HashMap;

/// Dense id of a term, an index into the postings.
pub type TermId = u32;

/// Token → term id.
#[derive(Debug, Default, Clone)]
pub struct Vocab {
    ids: HashMap<String, TermId>,
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
        (ids.len() == n).then_some(Vocab { ids })
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
}
