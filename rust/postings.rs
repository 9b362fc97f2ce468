//! Postings: for every term, the tools that contain it and the posting's impact (its saturated,
//! field-weighted term frequency: see [`crate::bm25`]).
//!
//! The built form is three flat arrays (`offsets`, `docs`, `impacts`): the list of term `t` is
//! `docs[offsets[t]..offsets[t + 1]]`, sorted by document id, with their impacts beside them.
//!
//! An impact is stored as one byte, a *level* in 1..=255: the posting's impact divided by the
//! largest impact of its term, times 255, rounded (the largest is 255; the smallest is 1, so a
//! posting never vanishes). Impacts are a saturated frequency in (0, k1 + 1]: a term's levels
//! resolve them to 1/255 of its largest, finer than the differences BM25's parameters are tuned
//! to, and a posting takes 5 bytes instead of 8 (postings are most of an index). A query term
//! folds `largest / 255` into its weight once, so scoring stays one multiply-add per posting, and
//! every path (pruned, exhaustive, probes) multiplies the same two numbers.

use crate::ranking::Tuning;
use crate::vocab::TermId;

/// Registry position of a tool.
pub type DocId = u32;

/// One term's postings, borrowed from [`Postings`].
#[derive(Debug, Clone, Copy)]
pub struct PostingList<'a> {
    /// Documents containing the term, ascending.
    pub docs: &'a [DocId],
    /// The impact level (1..=255, see the module notes) of the term in each of those documents.
    pub impacts: &'a [u8],
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

/// Where a long list's tools sit, so that a probe finds a tool's posting in one step instead of
/// searching the list: two words per 64 registry positions, the bits of those in the list and
/// how many of the list's postings come before them (see [`member_at`]). A quarter of a byte
/// per tool of the catalog.
pub fn member_bits(docs: &[DocId], num_docs: usize) -> Vec<u64> {
    let words = num_docs.div_ceil(64);
    let mut bits = vec![0u64; 2 * words];
    for &d in docs {
        bits[2 * (d as usize / 64)] |= 1 << (d % 64);
    }
    let mut before = 0u64;
    for w in 0..words {
        bits[2 * w + 1] = before;
        before += u64::from(bits[2 * w].count_ones());
    }
    bits
}

/// The position that `doc` has (or would have) in the list that `bits` were made from by
/// [`member_bits`], and 1 when it is in the list, else 0 (also for a `doc` past the catalog).
#[inline]
pub fn member_at(bits: &[u64], doc: DocId) -> (usize, u64) {
    let w = 2 * (doc as usize / 64);
    let (Some(&word), Some(&before)) = (bits.get(w), bits.get(w + 1)) else {
        return (0, 0);
    };
    let b = doc % 64;
    let below = word & ((1u64 << b) - 1);
    (before as usize + below.count_ones() as usize, word >> b & 1)
}

/// Per-term data that makes a query faster without changing what it adds, decided once when
/// the index is assembled: whether a term's tools come in runs that require the same
/// permissions (its list is then walked with a branch on the mask, see
/// [`crate::ranking::Term::runs`]), and, for long lists, their [`member_bits`].
#[derive(Debug, Clone, Default)]
pub struct Acceleration {
    /// Per term, whether fewer than one in `Tuning::run_changes` of its postings follows a
    /// tool that requires other permissions than its own.
    runs: Vec<bool>,
    /// The [`member_bits`] of each term in at least one in `Tuning::members_from` of the tools,
    /// by term.
    members: Vec<(TermId, Vec<u64>)>,
}

impl Acceleration {
    /// The acceleration of `num_terms` terms' `postings` over `num_docs` tools; `changes`
    /// counts the postings of a list whose tool requires other permissions than the one before
    /// (see `PermissionTable::requirement_changes`).
    pub fn new(
        postings: &Postings,
        num_terms: usize,
        num_docs: usize,
        changes: impl Fn(&[DocId]) -> usize,
        tuning: &Tuning,
    ) -> Self {
        let runs = (0..num_terms as TermId)
            .map(|t| {
                let docs = postings.list(t).docs;
                changes(docs).saturating_mul(tuning.run_changes) < docs.len()
            })
            .collect();
        let members = (0..num_terms as TermId)
            .filter_map(|t| {
                let docs = postings.list(t).docs;
                let long =
                    !docs.is_empty() && docs.len().saturating_mul(tuning.members_from) >= num_docs;
                long.then(|| (t, member_bits(docs, num_docs)))
            })
            .collect();
        Acceleration { runs, members }
    }

    /// Whether `term`'s tools come in runs of one permission.
    pub fn runs(&self, term: TermId) -> bool {
        self.runs[term as usize]
    }

    /// `term`'s member bits, if its list is long enough to have them.
    pub fn members(&self, term: TermId) -> Option<&[u64]> {
        self.members
            .binary_search_by_key(&term, |m| m.0)
            .ok()
            .map(|i| &self.members[i].1[..])
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        let bits: usize = self.members.iter().map(|(_, b)| b.capacity() * 8).sum();
        self.runs.capacity()
            + self.members.capacity() * std::mem::size_of::<(TermId, Vec<u64>)>()
            + bits
    }
}

/// Fills the flat postings while documents are added in ascending id order, into arrays sized
/// from each term's document frequency up front (no per-term lists to grow and copy).
#[derive(Debug)]
pub struct PostingsBuilder {
    offsets: Vec<usize>,
    /// Where the next posting of each term goes.
    cursor: Vec<usize>,
    docs: Vec<DocId>,
    impacts: Vec<f32>,
}

impl PostingsBuilder {
    /// A builder for terms `0..df.len()`, term `t` getting exactly `df[t]` postings.
    pub fn new(df: &[usize]) -> Self {
        let mut offsets = Vec::with_capacity(df.len() + 1);
        offsets.push(0);
        for &n in df {
            offsets.push(offsets[offsets.len() - 1] + n);
        }
        let total = offsets[df.len()];
        PostingsBuilder {
            cursor: offsets[..df.len()].to_vec(),
            offsets,
            docs: vec![0; total],
            impacts: vec![0.0; total],
        }
    }

    /// Records that `doc` (not below any doc pushed before for `term`) contains `term` with
    /// impact `impact` (> 0).
    pub fn push(&mut self, term: TermId, doc: DocId, impact: f32) {
        let at = self.cursor[term as usize];
        assert!(
            at < self.offsets[term as usize + 1],
            "more postings pushed for term {term} than its document frequency"
        );
        self.docs[at] = doc;
        self.impacts[at] = impact;
        self.cursor[term as usize] += 1;
    }

    /// The [`Postings`], impacts turned into levels (every term must have had all its postings).
    pub fn build(self) -> Postings {
        debug_assert!(self
            .cursor
            .iter()
            .zip(&self.offsets[1..])
            .all(|(c, e)| c == e));
        let mut max_impacts = Vec::with_capacity(self.cursor.len());
        let mut levels = Vec::with_capacity(self.impacts.len());
        for w in self.offsets.windows(2) {
            let list = &self.impacts[w[0]..w[1]];
            let max = list.iter().copied().fold(0.0, f32::max);
            max_impacts.push(max);
            levels.extend(list.iter().map(|&x| level(x, max)));
        }
        Postings {
            offsets: self.offsets,
            docs: self.docs,
            impacts: levels,
            max_impacts,
        }
    }
}

/// Flat postings of every term.
#[derive(Debug, Clone, Default)]
pub struct Postings {
    offsets: Vec<usize>,
    docs: Vec<DocId>,
    impacts: Vec<u8>,
    max_impacts: Vec<f32>,
}

/// The impact level of `impact` in a list whose largest impact is `max` (> 0).
fn level(impact: f32, max: f32) -> u8 {
    // in [0, 255] for 0 < impact <= max; NaN (none reach here) would give 0, then 1
    ((impact / max) * 255.0).round().clamp(1.0, 255.0) as u8
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

    /// The largest impact in the postings of `term` (0 for an unknown term): an impact level
    /// `l` stands for `l / 255` of it.
    pub fn max_impact(&self, term: TermId) -> f32 {
        self.max_impacts.get(term as usize).copied().unwrap_or(0.0)
    }

    /// The flat arrays `(offsets, docs, impacts, max_impacts)`, for snapshots.
    pub fn parts(&self) -> (&[usize], &[DocId], &[u8], &[f32]) {
        (&self.offsets, &self.docs, &self.impacts, &self.max_impacts)
    }

    /// Postings from flat arrays, checked: offsets start at 0, never fall and end at the number
    /// of postings; each list is strictly ascending and below `num_docs`; levels are at least 1;
    /// each list's largest impact is finite, positive for a list with postings and 0 for one
    /// without.
    pub fn from_parts(
        offsets: Vec<usize>,
        docs: Vec<DocId>,
        impacts: Vec<u8>,
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
            let max = max_impacts[t];
            let max_ok = max.is_finite()
                && if list.is_empty() {
                    max == 0.0
                } else {
                    max > 0.0
                };
            if !sorted || !max_ok || values.contains(&0) {
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
            + self.impacts.capacity()
            + self.max_impacts.capacity() * std::mem::size_of::<f32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Each tool's position in the list and whether it is in it, for every tool of the
        /// catalog and past it.
        #[test]
        fn member_bits_give_each_tools_position(mut docs in proptest::collection::vec(0u32..1000, 0..400), num in 1000usize..1100) {
            docs.sort_unstable();
            docs.dedup();
            let bits = member_bits(&docs, num);
            for doc in 0..num as DocId + 70 {
                let at = docs.partition_point(|&d| d < doc);
                let found = u64::from(docs.get(at) == Some(&doc));
                let want = if (doc as usize) < num.div_ceil(64) * 64 { (at, found) } else { (0, 0) };
                proptest::prop_assert_eq!(member_at(&bits, doc), want);
            }
        }
    }

    #[test]
    fn flattened_lists_keep_docs_and_impacts() {
        let mut b = PostingsBuilder::new(&[1, 2, 0]);
        b.push(1, 0, 2.0);
        b.push(0, 0, 1.0);
        b.push(1, 3, 1.5);
        let p = b.build();
        assert_eq!(p.list(0).docs, [0]);
        assert_eq!(p.list(1).docs, [0, 3]);
        assert_eq!(p.list(1).impacts, [255, 191]); // 1.5 / 2 * 255 = 191.25
        assert_eq!(p.max_impact(1), 2.0);
        assert!(p.list(2).is_empty() && p.list(7).is_empty());
        assert_eq!((p.max_impact(2), p.num_postings()), (0.0, 3));
    }

    #[test]
    fn levels_round_and_never_vanish() {
        assert_eq!(level(1.0, 1.0), 255);
        assert_eq!(level(0.5, 1.0), 128); // 127.5 rounds away from zero
        assert_eq!(level(1e-9, 1.0), 1);
        assert_eq!(level(f32::MIN_POSITIVE, f32::MAX), 1);
    }
}
