//! Accumulation: whole posting lists added to per-tool partial scores (the *walks*), into
//! per-thread buffers that are reused across queries and given back clean.
//!
//! A forbidden tool's posting never changes its accumulator (skipped, or added with weight 0),
//! and a tool is recorded in `touched` only when an allowed posting reaches it, so it never gets
//! a score.

use std::cell::RefCell;

use super::collect::Marks;
use super::Term;
use crate::permissions::DocMask;
use crate::postings::DocId;

/// Per-thread buffers reused across queries (a `Ranker` holds them while it scores).
#[derive(Default)]
pub(super) struct Scratch {
    /// One accumulator per tool, all zero between queries.
    pub acc: Vec<f32>,
    /// The tools reached, in first-touch order.
    pub touched: Vec<DocId>,
    /// Tools to probe, set and cleared within one call of `Ranker::rank`.
    pub marks: Marks,
    /// Rank keys ([`crate::topk::Hit::rank_key`]) of partial scores; reused between checks.
    pub partials: Vec<u64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl Scratch {
    /// The thread's buffers, large enough for `num_docs` tools.
    pub fn take(num_docs: usize) -> Scratch {
        let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        if scratch.acc.len() < num_docs {
            scratch.acc = vec![0f32; num_docs];
            // A tool is recorded once; the extra slot takes the unconditional write after the last.
            scratch.touched = vec![0; num_docs + 1];
            scratch.marks = Marks::new(num_docs);
        }
        scratch
    }

    /// Clears the accumulators of the first `count` tools reached and gives the buffers back to
    /// the thread for the next query.
    pub fn give_back(mut self, count: usize) {
        let Scratch { acc, touched, .. } = &mut self;
        touched[..count].iter().for_each(|&d| acc[d as usize] = 0.0);
        SCRATCH.with(|s| *s.borrow_mut() = self);
    }
}

/// Every impact level as a float (a table lookup is cheaper than a conversion per posting).
const LEVELS: [f32; 256] = {
    let mut levels = [0f32; 256];
    let mut l = 0;
    while l < 256 {
        levels[l] = l as f32;
        l += 1;
    }
    levels
};

/// Adds `t`'s postings to the accumulators, appending each tool reached for the first time to
/// `touched` after the first `count`; returns the new count. A free function over plain slices
/// so that the compiler keeps the mask and the buffers in registers (not inlined: inside the
/// large caller they would spill).
#[inline(never)]
pub(super) fn walk(
    t: &Term<'_>,
    allowed: DocMask<'_>,
    acc: &mut [f32],
    touched: &mut [DocId],
    count: usize,
) -> usize {
    debug_assert!(
        t.weight > 0.0 && t.weight.is_finite(),
        "query terms have positive, finite weights"
    );
    let words = allowed.words();
    if t.list
        .docs
        .last()
        .is_some_and(|&d| d as usize / 64 >= words.len())
    {
        // A mask shorter than the list (not one compiled for this index): tools past its end
        // are not allowed.
        let mut padded = words.to_vec();
        padded.resize(acc.len().div_ceil(64).max(words.len()), 0);
        return walk(t, DocMask::new(&padded), acc, touched, count);
    }
    // A tool is recorded the first time one of its postings is allowed (every term's weight is
    // positive, so its accumulator turns positive then); a forbidden tool's accumulator stays 0
    // and it is never collected.
    if t.runs {
        walk_skipping(t, words, acc, touched, count)
    } else {
        walk_weighted(t, words, acc, touched, count)
    }
}

/// The walk for a list whose tools come in runs of one permission: the mask changes seldom
/// along it, so a branch on it is cheap, and the accumulators of forbidden tools are not read
/// or written (on a catalog laid out by service, half the postings for a caller holding half
/// the permissions). Precondition: every posting's mask word exists.
#[inline(always)]
fn walk_skipping(
    t: &Term<'_>,
    words: &[u64],
    acc: &mut [f32],
    touched: &mut [DocId],
    mut count: usize,
) -> usize {
    let weight = t.weight;
    for (&doc, &impact) in t.list.docs.iter().zip(t.list.impacts) {
        if words[doc as usize / 64] >> (doc % 64) & 1 == 0 {
            continue;
        }
        let slot = &mut acc[doc as usize];
        let fresh = u64::from(slot.to_bits() == 0);
        // (the same product as `walk_weighted`'s: `weight * 1.0` is `weight`)
        *slot += weight * LEVELS[usize::from(impact)];
        touched[count] = doc;
        count += fresh as usize;
    }
    count
}

/// The branch-free walk: a forbidden tool's posting gets weight 0, so its accumulator is
/// unchanged. Precondition: every posting's mask word exists.
#[inline(always)]
fn walk_weighted(
    t: &Term<'_>,
    words: &[u64],
    acc: &mut [f32],
    touched: &mut [DocId],
    mut count: usize,
) -> usize {
    let weight = t.weight;
    for (&doc, &impact) in t.list.docs.iter().zip(t.list.impacts) {
        let ok = words[doc as usize / 64] >> (doc % 64) & 1;
        // (a product rather than a select, which the compiler would make a branch on the mask)
        let add = (weight * ok as f32) * LEVELS[usize::from(impact)];
        let slot = &mut acc[doc as usize];
        let fresh = u64::from(slot.to_bits() == 0);
        *slot += add;
        touched[count] = doc;
        count += (fresh & ok) as usize;
    }
    count
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::postings::PostingList;
    use proptest::prelude::*;

    /// Postings for a [`Term`]: ascending distinct docs below 300, levels 1..=255.
    pub(crate) fn postings(mut pairs: Vec<(DocId, u8)>) -> (Vec<DocId>, Vec<u8>) {
        pairs.sort_unstable_by_key(|p| p.0);
        pairs.dedup_by_key(|p| p.0);
        pairs.into_iter().map(|(d, l)| (d, l.max(1))).unzip()
    }

    proptest! {
        /// Walking a list with a branch on the mask or without one adds the same to the same
        /// tools and records them in the same order, after a first walk of another list (so some
        /// accumulators are not zero).
        #[test]
        fn both_walks_add_the_same(first in proptest::collection::vec((0u32..300, any::<u8>()), 0..150), second in proptest::collection::vec((0u32..300, any::<u8>()), 0..150), mask in proptest::collection::vec(any::<u64>(), 5), w1 in 0.01f32..20.0, w2 in 0.01f32..20.0) {
            let lists = [postings(first), postings(second)];
            let mut results = Vec::new();
            for runs in [false, true] {
                let (mut acc, mut touched) = (vec![0f32; 300], vec![0; 301]);
                let mut count = 0;
                for ((docs, impacts), weight) in lists.iter().zip([w1, w2]) {
                    let t = Term {
                        list: PostingList { docs, impacts },
                        weight,
                        bound: weight * 255.0,
                        runs,
                        members: None,
                    };
                    count = walk(&t, DocMask::new(&mask), &mut acc, &mut touched, count);
                }
                let bits: Vec<u32> = acc.iter().map(|x| x.to_bits()).collect();
                results.push((bits, touched[..count].to_vec()));
            }
            prop_assert_eq!(&results[0], &results[1]);
            // every tool recorded is allowed, once
            let mut seen = results[0].1.clone();
            seen.sort_unstable();
            seen.dedup();
            prop_assert_eq!(seen.len(), results[0].1.len());
            prop_assert!(seen.iter().all(|&d| DocMask::new(&mask).get(d) == 1));
        }
    }
}
