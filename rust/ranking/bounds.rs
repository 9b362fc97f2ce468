//! Bounds and pruning: how much a tool can still gain, and the check that decides when to stop
//! walking lists and which reached tools can still pass.
//!
//! Every bound goes through [`lift`], `(score + rest) × slack(remaining)`, on top of each
//! [`super::Term::bound`]'s own relative margin of 1e-5, so a last-bit rounding difference
//! never excludes a tool. Scores are compared as [`Hit::rank_key`]s, the one integer form of the
//! ranking order (positive scores only, which is all a ranking holds).

use super::probe::probe;
use super::ranker::Ranker;
use crate::postings::DocId;
use crate::topk::Hit;

/// Relative headroom for rounding: each of the `remaining` additions still to come to a partial
/// score (and the one that adds the bounds) can round it up by half an ulp; twice that per
/// addition is kept. Term bounds carry their own relative margin of 1e-5 on top.
pub(super) fn slack(remaining: usize) -> f32 {
    1.0 + (remaining as f32 + 1.0) * 2.0 * f32::EPSILON
}

/// The most a partial score can become when the terms left (`remaining` of them, their bounds
/// summing to `rest`) are added: one expression for every test that prunes with it, so that a
/// check and the collection it licenses agree to the bit. It grows with the partial score.
pub(super) fn lift(rest: f32, remaining: usize) -> impl Fn(f32) -> f32 {
    let margin = slack(remaining);
    move |score| (score + rest) * margin
}

/// The `k`-th best (1-based, `0 < k <= keys.len()`) score of hits given as rank keys; leaves the
/// `k` best keys first.
pub(super) fn kth_best(keys: &mut [u64], k: usize) -> f32 {
    debug_assert!(k > 0 && k <= keys.len());
    Hit::from_rank_key(*keys.select_nth_unstable(k - 1).1).score
}

/// What a check that prunes found.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cut {
    /// A score that `want` tools reach (the `want`-th best partial score, or better): a tool
    /// that cannot reach it is left out.
    pub theta: f32,
    /// A partial score above which `scratch.partials` holds every reached tool that `keep`
    /// accepts (and no other, each as the rank key of its partial score), and at or below which
    /// none can pass (when there is one).
    pub covered: Option<f32>,
}

impl Ranker<'_, '_, '_> {
    /// How many of the tools reached, in first-touch order, can have a partial score that
    /// `can` accepts (a test that accepts every score above some level), and the most that any
    /// tool after them can score (0 when there is none). A tool reached first by a later term
    /// scores at most the summed bounds of the terms from there to the last one walked, and
    /// those sums only grow towards the first term.
    pub(super) fn reached_until(&self, can: impl Fn(f32) -> bool) -> (usize, f32) {
        // each partial score is a sum of at most `walked` terms, rounded
        let margin = slack(self.walked);
        let (mut most, mut after) = (0f32, 0f32);
        for j in (0..self.walked).rev() {
            most += self.terms[j].bound;
            if can(most * margin) {
                return (self.firsts.get(j + 1).copied().unwrap_or(self.count), after);
            }
            after = most * margin;
        }
        (0, after)
    }

    /// The `want`-th best partial score among the reached tools that `keep` accepts, when it
    /// beats every tool not reached yet and pruning with it pays; worth looking for only while
    /// the lists left are longer than what a probe would touch.
    ///
    /// Pruning pays when it is selective: the tools that pass (a partial score that the bounds
    /// left could lift to the threshold) are probed in the next list, a search each, where
    /// walking that list costs one step per posting. With at least as many tools passing as the
    /// list has postings, the list is walked instead, which also sharpens the next check.
    ///
    /// When many more tools pass than are wanted (`Tuning::raise_from` per tool wanted), the
    /// threshold is raised to exact scores (see [`Ranker::least_exact_of_best`]).
    pub(super) fn threshold(&mut self, keep: &impl Fn(DocId) -> bool, want: usize) -> Option<Cut> {
        let reach = self.reach_worth_checking(want)?;
        let above = self.reached_above(reach)?;
        self.gather_partials(above, reach, keep);
        if self.scratch.partials.len() < want {
            return None;
        }
        let mut theta = kth_best(&mut self.scratch.partials, want);
        let mut pass = self.passing(theta, reach);
        if pass >= self.tuning.raise_from.saturating_mul(want) {
            theta = theta.max(self.least_exact_of_best(want));
            pass = self.passing(theta, reach);
        }
        if pass >= self.terms[self.walked].list.len() {
            return None;
        }
        // A tool left out of `partials` scores at most `reach`; when even that cannot pass (as
        // `Ranker::rank` tests it), collecting needs to read `partials` only.
        let most = lift(self.rest[self.walked], self.terms.len() - self.walked);
        let covered = (most(reach) < theta).then_some(reach);
        Some(Cut { theta, covered })
    }

    /// `reach`, the most a tool not reached yet can score, when a check could cut: at least one
    /// term walked and one left, a finite `want`, more postings left than tools reached, and
    /// some partial score able to beat `reach` (skipping a check is always safe).
    fn reach_worth_checking(&self, want: usize) -> Option<f32> {
        let n = self.terms.len();
        if self.walked == 0 || self.walked == n || want == 0 || want == usize::MAX {
            return None;
        }
        if self.rest_postings <= self.count {
            return None;
        }
        let reach = lift(self.rest[self.walked], n - self.walked)(0.0);
        // No partial score exceeds the bounds of the terms walked.
        (self.rest[0] - self.rest[self.walked] > reach).then_some(reach)
    }

    /// How many of the reached tools (first-touch order) can score above `reach`, unless the
    /// next list is shorter than that: walking it then costs less than the check, and the check
    /// after it can only cut deeper (a lower reach, partial scores no lower).
    fn reached_above(&self, reach: f32) -> Option<usize> {
        let (above, _) = self.reached_until(|score| score > reach);
        (self.terms[self.walked].list.len() >= above).then_some(above)
    }

    /// Fills `scratch.partials` with the rank keys of the first `above` reached tools that
    /// `keep` accepts and whose partial score beats `reach`.
    fn gather_partials(&mut self, above: usize, reach: f32, keep: &impl Fn(DocId) -> bool) {
        let scratch = &mut self.scratch;
        let (acc, partials) = (&scratch.acc, &mut scratch.partials);
        partials.clear();
        partials.reserve(above);
        partials.extend(
            scratch.touched[..above]
                .iter()
                .filter(|&&d| acc[d as usize] > reach && keep(d))
                .map(|&doc| {
                    let score = acc[doc as usize];
                    Hit { doc, score }.rank_key()
                }),
        );
    }

    /// How many reached tools pass on `theta` (as `Ranker::rank` tests them): those of
    /// `partials` with the partial score it needs, or every tool reached when that is no more
    /// than `reach` (tools missing from `partials` may pass too).
    fn passing(&self, theta: f32, reach: f32) -> usize {
        let left = self.terms.len() - self.walked;
        let need = theta / slack(left) - self.rest[self.walked];
        if need <= reach {
            return self.count;
        }
        // a score of at least `need`, whatever the tool
        let need = Hit {
            doc: DocId::MAX,
            score: need,
        }
        .rank_key();
        self.scratch
            .partials
            .iter()
            .filter(|&&key| key <= need)
            .count()
    }

    /// The least exact score of the `want` tools with the best partial scores (first in
    /// `partials`, as [`kth_best`] leaves them): each scored in full by probing the lists left
    /// in canonical order, so their sums are those of exhaustive scoring. `want` tools reach it,
    /// and it is at least their partial scores, so it is a threshold at least as high.
    fn least_exact_of_best(&self, want: usize) -> f32 {
        let mut best: Vec<Hit> = self.scratch.partials[..want]
            .iter()
            .map(|&key| Hit::from_rank_key(key))
            .collect();
        best.sort_unstable_by_key(|h| h.doc);
        for t in &self.terms[self.walked..] {
            probe(t, &mut best, self.tuning.step_gap);
        }
        best.iter().map(|h| h.score).fold(f32::INFINITY, f32::min)
    }
}
