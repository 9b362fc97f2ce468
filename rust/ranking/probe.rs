//! Probing: one term's contribution added to a given set of hits, without walking its list.
//!
//! Three ways, all adding `weight × level` to exactly the hits the list holds: a lookup in the
//! list's member bits (any order of hits, branch-free); otherwise a merge of the hits (registry
//! order) with the list, stepping through it where the hits are dense in it and galloping where
//! they are sparse (`Tuning::step_gap`).

use super::Term;
use crate::postings::{member_at, DocId};
use crate::topk::Hit;

/// Adds term `t` to the scores of `hits` that it matches: for a long list with member bits, a
/// lookup per hit (in any order); otherwise a merge (hits in registry order) that steps through
/// the list when it has fewer than `step_gap` postings per hit, and gallops to each hit when it
/// has more.
#[inline(never)]
pub(super) fn probe(t: &Term<'_>, hits: &mut [Hit], step_gap: usize) {
    if let Some(members) = t.members.filter(|_| !t.list.impacts.is_empty()) {
        probe_members(t, members, hits);
    } else if t.list.docs.len() < step_gap * hits.len() {
        probe_step(t, hits);
    } else {
        probe_gallop(t, hits);
    }
}

/// A lookup per hit in the member bits of `t`'s (non-empty) list. Branch-free: a tool not in
/// the list reads some posting and adds 0 times its level, which leaves its (non-negative)
/// score as it was.
#[inline(always)]
fn probe_members(t: &Term<'_>, members: &[u64], hits: &mut [Hit]) {
    let impacts = t.list.impacts;
    let last = impacts.len() - 1;
    for h in hits.iter_mut() {
        let (at, found) = member_at(members, h.doc);
        let level = impacts[at.min(last)] * found as u8;
        h.score += t.weight * f32::from(level);
    }
}

/// A merge that steps through the list. Precondition: `hits` in registry order.
#[inline(always)]
fn probe_step(t: &Term<'_>, hits: &mut [Hit]) {
    debug_assert!(hits.windows(2).all(|w| w[0].doc < w[1].doc));
    let (docs, impacts) = (t.list.docs, t.list.impacts);
    let mut at = 0;
    for h in hits.iter_mut() {
        while at < docs.len() && docs[at] < h.doc {
            at += 1;
        }
        if at == docs.len() {
            break;
        }
        if docs[at] == h.doc {
            h.score += t.weight * f32::from(impacts[at]);
        }
    }
}

/// A merge that gallops to each hit. Precondition: `hits` in registry order.
#[inline(always)]
fn probe_gallop(t: &Term<'_>, hits: &mut [Hit]) {
    debug_assert!(hits.windows(2).all(|w| w[0].doc < w[1].doc));
    let (docs, impacts) = (t.list.docs, t.list.impacts);
    let mut at = 0;
    for h in hits.iter_mut() {
        at = gallop(docs, at, h.doc);
        if at == docs.len() {
            break;
        }
        if docs[at] == h.doc {
            h.score += t.weight * f32::from(impacts[at]);
        }
    }
}

/// First position at or after `from` whose doc is ≥ `doc`. Tools that share a term are spread
/// over the registry, so the search starts where `doc` would sit if that list were even (by
/// interpolation between the docs at `from` and at the end) and gallops from there, forwards or
/// backwards, then searches the last step: a tool far down a long list costs a cache miss or two
/// instead of a dozen, and an uneven list no more than galloping from `from`.
pub(super) fn gallop(docs: &[DocId], from: usize, doc: DocId) -> usize {
    let end = docs.len();
    if from >= end || docs[from] >= doc {
        return from.min(end);
    }
    let (first, last) = (docs[from], docs[end - 1]);
    if last < doc {
        return end;
    }
    // docs[from] < doc <= docs[end - 1]: the answer is in (from, end - 1]
    let offset = u64::from(doc - first) * (end - 1 - from) as u64 / u64::from(last - first);
    let guess = from + offset as usize;
    let (lo, hi) = if docs[guess] < doc {
        // in (guess, end - 1], where docs[end - 1] >= doc stops the steps
        let (mut lo, mut hi, mut step) = (guess, guess + 1, 1);
        while docs[hi] < doc {
            lo = hi;
            step *= 2;
            hi = (guess + step).min(end - 1);
        }
        (lo, hi)
    } else {
        // in (from, guess], where docs[from] < doc stops the steps
        let (mut lo, mut hi, mut step) = (guess - 1, guess, 1);
        while docs[lo] >= doc {
            hi = lo;
            step *= 2;
            lo = guess.saturating_sub(step).max(from);
        }
        (lo, hi)
    };
    // docs[lo] < doc <= docs[hi]
    lo + 1 + docs[lo + 1..hi].partition_point(|&d| d < doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::postings::PostingList;
    use crate::ranking::accumulate::tests::postings;
    use proptest::prelude::*;

    proptest! {
        /// A probe through member bits adds the same to the same hits as one that searches or
        /// steps through the list.
        #[test]
        fn a_probe_through_member_bits_adds_what_a_search_adds(list in proptest::collection::vec((0u32..700, any::<u8>()), 0..300), hits in proptest::collection::vec((0u32..700, 0f32..50.0), 0..120), weight in 0.01f32..20.0) {
            let (docs, impacts) = postings(list);
            let mut hits: Vec<Hit> = hits.into_iter().map(|(doc, score)| Hit { doc, score }).collect();
            hits.sort_unstable_by_key(|h| h.doc);
            hits.dedup_by_key(|h| h.doc);
            let bits = crate::postings::member_bits(&docs, 700);
            let mut results = Vec::new();
            for members in [None, Some(&bits[..])] {
                let t = Term {
                    list: PostingList { docs: &docs, impacts: &impacts },
                    weight,
                    bound: weight * 255.0,
                    runs: false,
                    members,
                };
                let mut probed = hits.clone();
                probe(&t, &mut probed, 16);
                results.push(probed.iter().map(|h| (h.doc, h.score.to_bits())).collect::<Vec<_>>());
            }
            prop_assert_eq!(&results[0], &results[1]);
        }

        #[test]
        fn gallop_finds_the_first_position_not_below(mut docs in proptest::collection::vec(0u32..200, 0..80), from in 0usize..80, doc in 0u32..210) {
            docs.sort_unstable();
            docs.dedup();
            let from = from.min(docs.len());
            let want = from + docs[from..].partition_point(|&d| d < doc);
            prop_assert_eq!(gallop(&docs, from, doc), want);
        }

        /// Over the whole id range and uneven lists (a dense run among sparse ids), where the
        /// interpolated start is far off.
        #[test]
        fn gallop_finds_the_first_position_in_uneven_lists(mut docs in proptest::collection::vec(prop_oneof![0u32..64, any::<u32>()], 0..300), from in 0usize..300, doc in prop_oneof![0u32..70, any::<u32>()]) {
            docs.sort_unstable();
            docs.dedup();
            let from = from.min(docs.len());
            let want = from + docs[from..].partition_point(|&d| d < doc);
            prop_assert_eq!(gallop(&docs, from, doc), want);
        }
    }
}
