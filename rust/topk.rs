//! Scored tools and their one ranking order: higher score first, ties broken by registry position
//! (the lower position wins), so every ranking is deterministic. [`Hit::rank_key`] is the one
//! integer form of that order: sorting, splitting and the pruning thresholds all use it.

use std::cmp::Ordering;

use crate::postings::DocId;

/// A scored tool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Registry position.
    pub doc: DocId,
    /// BM25 score (> 0).
    pub score: f32,
}

impl Hit {
    /// Total order "better first": higher score, then lower registry position.
    pub fn rank_cmp(&self, other: &Hit) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.doc.cmp(&other.doc))
    }

    /// A key whose ascending order is the ranking order ([`Hit::rank_cmp`]) for the positive
    /// scores rankings hold: the bits of positive floats order like the floats, inverted so that
    /// higher comes first, then the position; one integer compares cheaper than both.
    pub fn rank_key(&self) -> u64 {
        debug_assert!(self.score > 0.0, "ranked scores are positive");
        u64::from(!self.score.to_bits()) << 32 | u64::from(self.doc)
    }

    /// The hit a [`Hit::rank_key`] was made from.
    pub fn from_rank_key(key: u64) -> Hit {
        Hit {
            doc: key as DocId,
            score: f32::from_bits(!((key >> 32) as u32)),
        }
    }
}

/// Sorts hits best first.
pub fn rank(hits: &mut [Hit]) {
    hits.sort_unstable_by(Hit::rank_cmp);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn higher_scores_first_and_ties_break_by_registry_position() {
        let mut hits: Vec<Hit> = [(5, 1.0), (1, 1.0), (3, 2.0), (0, 0.5)]
            .iter()
            .map(|&(doc, score)| Hit { doc, score })
            .collect();
        rank(&mut hits);
        let docs: Vec<DocId> = hits.iter().map(|h| h.doc).collect();
        assert_eq!(docs, [3, 1, 5, 0]);
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_rank_key_orders_positive_scores_like_the_ranking(da in 0u32..50, db in 0u32..50, sa in 1e-40f32..f32::MAX, sb in prop_oneof![1e-40f32..f32::MAX, Just(f32::INFINITY)]) {
            let x = Hit { doc: da, score: sa };
            for y in [Hit { doc: db, score: sb }, Hit { doc: db, score: sa }] {
                prop_assert_eq!(x.rank_key().cmp(&y.rank_key()), x.rank_cmp(&y));
            }
            prop_assert_eq!(Hit::from_rank_key(x.rank_key()), x);
        }
    }
}
