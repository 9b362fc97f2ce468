//! Deterministic top-k: the `k` best hits by score, ties broken by registry position (the lower
//! position wins), kept in a bounded heap whose root is the worst hit retained.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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
}

/// Heap entry ordered so that the worst hit is the greatest.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Worst(Hit);

impl Eq for Worst {}

impl PartialOrd for Worst {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Worst {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.rank_cmp(&other.0)
    }
}

/// Bounded collector of the `k` best hits.
#[derive(Debug)]
pub struct TopK {
    k: usize,
    heap: BinaryHeap<Worst>,
}

impl TopK {
    /// An empty collector for at most `k` hits.
    pub fn new(k: usize) -> Self {
        TopK {
            k,
            heap: BinaryHeap::with_capacity(k.min(1 << 16)),
        }
    }

    /// Offers a hit; it is kept if it beats the worst one retained.
    pub fn push(&mut self, hit: Hit) {
        if self.heap.len() < self.k {
            self.heap.push(Worst(hit));
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if hit.rank_cmp(&worst.0) == Ordering::Less {
                *worst = Worst(hit);
            }
        }
    }

    /// The worst retained hit, once `k` hits are retained (the score to beat).
    pub fn worst(&self) -> Option<Hit> {
        if self.heap.len() == self.k && self.k > 0 {
            self.heap.peek().map(|w| w.0)
        } else {
            None
        }
    }

    /// The retained hits, best first.
    pub fn into_sorted(self) -> Vec<Hit> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|w| w.0)
            .collect()
    }
}

/// Sorts hits best first.
pub fn rank(hits: &mut [Hit]) {
    hits.sort_unstable_by(Hit::rank_cmp);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ties_break_by_registry_position() {
        let mut t = TopK::new(2);
        for doc in [5, 1, 3] {
            t.push(Hit { doc, score: 1.0 });
        }
        let docs: Vec<DocId> = t.into_sorted().iter().map(|h| h.doc).collect();
        assert_eq!(docs, [1, 3]);
    }

    #[test]
    fn k_zero_keeps_nothing() {
        let mut t = TopK::new(0);
        t.push(Hit { doc: 0, score: 1.0 });
        assert!(t.into_sorted().is_empty());
    }

    proptest! {
        #[test]
        fn equals_a_full_sort_truncated(scores in proptest::collection::vec(0u8..6, 0..60), k in 0usize..20) {
            let hits: Vec<Hit> = scores.iter().enumerate().map(|(d, &s)| Hit { doc: d as DocId, score: f32::from(s) }).collect();
            let mut t = TopK::new(k);
            hits.iter().for_each(|&h| t.push(h));
            let mut all = hits.clone();
            rank(&mut all);
            all.truncate(k);
            prop_assert_eq!(t.into_sorted(), all);
        }
    }
}
