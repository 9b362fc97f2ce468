//! Postings: for every term, the tools that contain it and the posting's impact (its saturated,
//! field-weighted term frequency: see [`crate::bm25`]).
//!
//! The built form is three flat arrays (`offsets`, `docs`, `impacts`): the list of term `t` is
//! `docs[offsets[t]..offsets[t + 1]]`, sorted by document id, with their impacts beside them.

use crate::vocab::TermId;

/// Registry position of a tool.
pub type DocId = u32;

/// One term's postings, borrowed from [`Postings`].
#[derive(Debug, Clone, Copy)]
pub struct PostingList<'a> {
    /// Documents containing the term, ascending.
    pub docs: &'a [DocId],
    /// The impact of the term in each of those documents.
    pub impacts: &'a [f32],
}

impl PostingList<'_> {
    /// Document frequency of the term.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// True for a term that occurs nowhere.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }
}

/// Accumulates postings while documents are added in ascending id order.
#[derive(Debug, Default)]
pub struct PostingsBuilder {
    lists: Vec<Vec<(DocId, f32)>>,
}

impl PostingsBuilder {
    /// Records that `doc` contains `term` with impact `impact`.
    pub fn push(&mut self, term: TermId, doc: DocId, impact: f32) {
        let t = term as usize;
        if self.lists.len() <= t {
            self.lists.resize_with(t + 1, Vec::new);
        }
        self.lists[t].push((doc, impact));
    }

    /// Flattens the lists into [`Postings`] for `num_terms` terms (those never pushed have
    /// empty lists).
    pub fn build(mut self, num_terms: usize) -> Postings {
        if self.lists.len() < num_terms {
            self.lists.resize_with(num_terms, Vec::new);
        }
        let total = self.lists.iter().map(Vec::len).sum();
        let mut p = Postings {
            offsets: Vec::with_capacity(self.lists.len() + 1),
            docs: Vec::with_capacity(total),
            impacts: Vec::with_capacity(total),
            max_impacts: Vec::with_capacity(self.lists.len()),
        };
        p.offsets.push(0);
        for list in self.lists {
            p.max_impacts
                .push(list.iter().map(|&(_, x)| x).fold(0.0, f32::max));
            for (doc, impact) in list {
                p.docs.push(doc);
                p.impacts.push(impact);
            }
            p.offsets.push(p.docs.len());
        }
        p
    }
}

/// Flat postings of every term.
#[derive(Debug, Clone, Default)]
pub struct Postings {
    offsets: Vec<usize>,
    docs: Vec<DocId>,
    impacts: Vec<f32>,
    max_impacts: Vec<f32>,
}

impl Postings {
    /// The postings of `term`.
    pub fn list(&self, term: TermId) -> PostingList<'_> {
        let t = term as usize;
        if t + 1 >= self.offsets.len() {
            return PostingList {
                docs: &[],
                impacts: &[],
            };
        }
        let (lo, hi) = (self.offsets[t], self.offsets[t + 1]);
        PostingList {
            docs: &self.docs[lo..hi],
            impacts: &self.impacts[lo..hi],
        }
    }

    /// The largest impact in the postings of `term` (0 for an unknown term).
    pub fn max_impact(&self, term: TermId) -> f32 {
        self.max_impacts.get(term as usize).copied().unwrap_or(0.0)
    }

    /// The flat arrays `(offsets, docs, impacts, max_impacts)`, for snapshots.
    pub fn parts(&self) -> (&[usize], &[DocId], &[f32], &[f32]) {
        (&self.offsets, &self.docs, &self.impacts, &self.max_impacts)
    }

    /// Postings from flat arrays, checked: offsets start at 0, never fall and end at the number
    /// of postings; each list is strictly ascending and below `num_docs`; impacts are finite,
    /// positive and at most their list's maximum.
    pub fn from_parts(
        offsets: Vec<usize>,
        docs: Vec<DocId>,
        impacts: Vec<f32>,
        max_impacts: Vec<f32>,
        num_docs: usize,
    ) -> Option<Self> {
        let shape_ok = offsets.first() == Some(&0)
            && offsets.last() == Some(&docs.len())
            && impacts.len() == docs.len()
            && max_impacts.len() + 1 == offsets.len()
            && offsets.windows(2).all(|w| w[0] <= w[1]);
        if !shape_ok {
            return None;
        }
        for (t, w) in offsets.windows(2).enumerate() {
            let (list, values) = (&docs[w[0]..w[1]], &impacts[w[0]..w[1]]);
            let sorted = list.windows(2).all(|p| p[0] < p[1])
                && list.last().is_none_or(|&d| (d as usize) < num_docs);
            let values_ok = values
                .iter()
                .all(|&f| f.is_finite() && f > 0.0 && f <= max_impacts[t]);
            if !sorted || !values_ok || !max_impacts[t].is_finite() {
                return None;
            }
        }
        Some(Postings {
            offsets,
            docs,
            impacts,
            max_impacts,
        })
    }

    /// Total number of postings.
    pub fn num_postings(&self) -> usize {
        self.docs.len()
    }

    /// Heap bytes held by the arrays.
    pub fn heap_bytes(&self) -> usize {
        self.offsets.capacity() * std::mem::size_of::<usize>()
            + self.docs.capacity() * std::mem::size_of::<DocId>()
            + (self.impacts.capacity() + self.max_impacts.capacity()) * std::mem::size_of::<f32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattened_lists_keep_docs_and_impacts() {
        let mut b = PostingsBuilder::default();
        b.push(1, 0, 2.0);
        b.push(0, 0, 1.0);
        b.push(1, 3, 1.5);
        let p = b.build(0);
        assert_eq!(p.list(0).docs, [0]);
        assert_eq!(p.list(1).docs, [0, 3]);
        assert_eq!(p.list(1).impacts, [2.0, 1.5]);
        assert_eq!(p.max_impact(1), 2.0);
        assert!(p.list(7).is_empty());
        assert_eq!(p.num_postings(), 3);
    }
}
