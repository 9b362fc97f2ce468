//! Term-at-a-time scoring with safe pruning.
//!
//! Query terms are taken in their canonical order: largest score bound first (the rarest terms).
//! Each term's postings are added into a per-thread accumulator, except a forbidden tool's (skipped,
//! or added with weight 0), so it never gets a score. Once the `want`-th best partial score beats
//! the summed bounds of the terms still to come, no tool that has not been reached yet can rank
//! among the best `want`: the remaining (common, long) lists are then only *probed* for the tools
//! already reached (a lookup in the list's member bits, or a merge that searches or steps through
//! it), instead of walked in full. What comes out is a ranking that is exact for every tool
//! scoring above the largest score an unreached tool could still have: the prefix of the
//! exhaustive ranking, bit for bit, since every tool's contributions are summed in the same
//! canonical order the exhaustive path uses. Every bound is widened by the most that rounding can
//! add (see `slack`), so no tool is left out by a last-bit difference.
//!
//! Typical queries mix a few rare words with common ones whose postings make up most of the work;
//! those are the lists that get probed, so the work follows the rare terms, not the catalog.

use std::cell::RefCell;

use crate::permissions::DocMask;
use crate::postings::{member_at, DocId, PostingList};
use crate::topk::Hit;

/// One query term: its postings, its weight per impact level (idf × query weight × the term's
/// largest impact / 255) and an upper bound on what it adds to any tool's score.
#[derive(Debug, Clone, Copy)]
pub struct Term<'a> {
    pub list: PostingList<'a>,
    pub weight: f32,
    pub bound: f32,
    /// Whether the list's tools come in runs that require the same permissions (the tools of
    /// one server or service, as catalogs are usually laid out): the mask then changes seldom
    /// along the list, and a walk skips the forbidden tools with a branch that is predicted
    /// right almost every time. It decides how the list is walked, never what it adds.
    pub runs: bool,
    /// For a long list, its [`member_bits`]: a probe then finds each tool's posting in one step.
    pub members: Option<&'a [u64]>,
}

/// Tools for a query, each with its exact score, unordered.
#[derive(Debug)]
pub struct Ranked {
    /// The hits: every matching tool wanted when `complete`; otherwise every one scoring above
    /// a floor that no tool left out can exceed, at least as many as asked for. Either way, the
    /// best `k` of them are the best `k` of the ranking (for `k` up to what was asked for).
    pub hits: Vec<Hit>,
    /// True when `hits` holds every matching tool wanted.
    pub complete: bool,
}

/// Per-thread buffers reused across queries (a [`Ranker`] holds them while it scores).
#[derive(Default)]
struct Scratch {
    /// One accumulator per tool, all zero between queries.
    acc: Vec<f32>,
    /// The tools reached, in first-touch order.
    touched: Vec<DocId>,
    /// Tools to probe, set and cleared within one call of `Ranker::rank`.
    marks: Marks,
    /// Positive scores (as bits, which order like the scores) in the high half, the tool in the
    /// low half; reused between checks.
    partials: Vec<u64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Relative headroom for rounding: each of the `remaining` additions still to come to a partial
/// score (and the one that adds the bounds) can round it up by half an ulp; twice that per
/// addition is kept. Term bounds carry their own relative margin of 1e-5 on top.
fn slack(remaining: usize) -> f32 {
    1.0 + (remaining as f32 + 1.0) * 2.0 * f32::EPSILON
}

/// The most a partial score can become when the terms left (`remaining` of them, their bounds
/// summing to `rest`) are added: one expression for every test that prunes with it, so that a
/// check and the collection it licenses agree to the bit. It grows with the partial score.
fn lift(rest: f32, remaining: usize) -> impl Fn(f32) -> f32 {
    let margin = slack(remaining);
    move |score| (score + rest) * margin
}

/// A positive score and its tool as one integer that orders like the score: the bits of positive
/// floats order like the floats, and integers compare cheaper.
fn keyed(score: f32, doc: DocId) -> u64 {
    u64::from(score.to_bits()) << 32 | u64::from(doc)
}

/// The tool and score of a [`keyed`] key.
fn unkeyed(key: u64) -> Hit {
    Hit {
        doc: key as DocId,
        score: f32::from_bits((key >> 32) as u32),
    }
}

/// The `k`-th largest (1-based, `k <= keys.len()`) of scores given as [`keyed`] keys.
fn kth_largest(keys: &mut [u64], k: usize) -> f32 {
    let at = keys.len() - k;
    unkeyed(*keys.select_nth_unstable(at).1).score
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
fn walk(
    t: &Term<'_>,
    allowed: DocMask<'_>,
    acc: &mut [f32],
    touched: &mut [DocId],
    mut count: usize,
) -> usize {
    debug_assert!(
        t.weight > 0.0 && t.weight.is_finite(),
        "query terms have positive, finite weights"
    );
    let weight = t.weight;
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
        // The mask changes seldom along the list: a branch on it is cheap, and the accumulators
        // of forbidden tools are not read or written (on a catalog laid out by service, half the
        // postings for a caller holding half the permissions).
        for (&doc, &impact) in t.list.docs.iter().zip(t.list.impacts) {
            if words[doc as usize / 64] >> (doc % 64) & 1 == 0 {
                continue;
            }
            let slot = &mut acc[doc as usize];
            let fresh = u64::from(slot.to_bits() == 0);
            // (the same product as below: `weight * 1.0` is `weight`)
            *slot += weight * LEVELS[usize::from(impact)];
            touched[count] = doc;
            count += fresh as usize;
        }
        return count;
    }
    // Branch-free: a forbidden tool's posting gets weight 0, so its accumulator is unchanged.
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

/// The tools of `reached` (each with its partial score, each once) that `keep` accepts and whose
/// partial score `passes`, as hits: in registry order when `ordered` (set in `marks`, all clear on
/// return, then read back in order), else in the order of `reached`; and the largest partial
/// score among the tools that do not pass (0 when none).
#[inline(never)]
fn collect(
    reached: impl Iterator<Item = Hit>,
    acc: &[f32],
    marks: &mut Marks,
    passes: impl Fn(f32) -> bool,
    keep: impl Fn(DocId) -> bool,
    ordered: bool,
) -> (Vec<Hit>, f32) {
    if !ordered {
        let (mut hits, mut left) = (Vec::new(), 0f32);
        for h in reached {
            if !passes(h.score) {
                if h.score > left {
                    left = h.score;
                }
            } else if keep(h.doc) {
                hits.push(h);
            }
        }
        return (hits, left);
    }
    let (mut marking, mut left) = (Marking::new(marks), 0f32);
    for Hit { doc, score } in reached {
        if !passes(score) {
            if score > left {
                left = score;
            }
        } else if keep(doc) {
            marking.mark(doc);
        }
    }
    (marking.hits(acc), left)
}

/// A set of tools as bits, one per tool, with a second level (one bit per word of the first) so
/// that reading back a few tools spread over a large catalog skips the empty words. All clear
/// between uses.
#[derive(Default)]
struct Marks {
    words: Vec<u64>,
    summary: Vec<u64>,
}

impl Marks {
    fn new(num_docs: usize) -> Self {
        let words = num_docs.div_ceil(64);
        Marks {
            words: vec![0; words],
            summary: vec![0; words.div_ceil(64)],
        }
    }
}

/// Tools set one bit each in the (all clear) marks, read back in registry order.
struct Marking<'a> {
    marks: &'a mut Marks,
    /// How many marks were made: the tools set, unless one was marked twice (which only keeps
    /// the read-back from stopping early).
    kept: usize,
}

impl<'a> Marking<'a> {
    fn new(marks: &'a mut Marks) -> Self {
        Marking { marks, kept: 0 }
    }

    #[inline]
    fn mark(&mut self, doc: DocId) {
        let w = doc as usize / 64;
        self.marks.words[w] |= 1 << (doc % 64);
        self.marks.summary[w / 64] |= 1 << (w % 64);
        self.kept += 1;
    }

    /// The tools marked, as hits in registry order with their partial scores; clears the marks.
    fn hits(self, acc: &[f32]) -> Vec<Hit> {
        let mut hits: Vec<Hit> = Vec::with_capacity(self.kept);
        let Marks { words, summary } = self.marks;
        for (s, top) in summary.iter_mut().enumerate() {
            if hits.len() == self.kept {
                break;
            }
            let mut ws = std::mem::take(top);
            while ws != 0 {
                let w = s * 64 + ws.trailing_zeros() as usize;
                ws &= ws - 1;
                let mut bits = std::mem::take(&mut words[w]);
                while bits != 0 {
                    let doc = (w * 64) as DocId + bits.trailing_zeros();
                    bits &= bits - 1;
                    hits.push(Hit {
                        doc,
                        score: acc[doc as usize],
                    });
                }
            }
        }
        hits
    }
}

/// Adds term `t` to the scores of `hits` that it matches: for a long list with member bits, a
/// lookup per hit (in any order); otherwise a merge (hits in registry order) that searches the
/// list for each hit (galloping) where the hits are sparse in it, and steps through it where they
/// are dense.
#[inline(never)]
fn probe(t: &Term<'_>, hits: &mut [Hit]) {
    let (docs, impacts) = (t.list.docs, t.list.impacts);
    if let Some(members) = t.members.filter(|_| !impacts.is_empty()) {
        // Branch-free: a tool not in the list reads some posting and adds 0 times its level,
        // which leaves its (non-negative) score as it was.
        let last = impacts.len() - 1;
        for h in hits.iter_mut() {
            let (at, found) = member_at(members, h.doc);
            let level = impacts[at.min(last)] * found as u8;
            h.score += t.weight * f32::from(level);
        }
        return;
    }
    let mut at = 0;
    if docs.len() < STEP_GAP * hits.len() {
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
        return;
    }
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

/// Postings per hit below which a probe steps through the list rather than searching it. A
/// search's branches go either way at random, a step's exit once per hit: `Index.select` from
/// Python, alternated twice with the searches only (/tmp script), aws-10k 10.4 -> 9.7 µs,
/// zipf-10k 32.6 -> 31.0, zipf-100k 116 -> 112 at 16; 8, 32 and 64 within the noise of 16. (The
/// two loops as they are: one loop that tests which way to go, or a helper and a closure for the
/// shared lines, measured 2-3 % slower.)
const STEP_GAP: usize = 16;

/// First position at or after `from` whose doc is ≥ `doc`. Tools that share a term are spread
/// over the registry, so the search starts where `doc` would sit if that list were even (by
/// interpolation between the docs at `from` and at the end) and gallops from there, forwards or
/// backwards, then searches the last step: a tool far down a long list costs a cache miss or two
/// instead of a dozen, and an uneven list no more than galloping from `from`.
fn gallop(docs: &[DocId], from: usize, doc: DocId) -> usize {
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

/// Scores `terms` (canonical order) for a catalog of `num_docs` tools in one go: see
/// [`Ranker::rank`]; `want = usize::MAX` scores exhaustively.
pub fn rank(
    terms: &[Term<'_>],
    num_docs: usize,
    allowed: DocMask<'_>,
    keep: impl Fn(DocId) -> bool,
    want: usize,
) -> Ranked {
    Ranker::new(terms, num_docs, allowed).rank(keep, want)
}

/// One query's scoring, kept between the rounds of a selection: the terms walked so far and
/// every reached tool's partial score over them. A later round (other tools wanted, fewer of
/// them) starts from there instead of walking the same postings again.
pub struct Ranker<'t, 'p, 'm> {
    terms: &'t [Term<'p>],
    allowed: DocMask<'m>,
    /// Taken from the thread's buffers while in use; given back clean when dropped.
    scratch: Scratch,
    /// Tools reached: `scratch.touched[..count]`, each with a partial score in `scratch.acc`.
    count: usize,
    /// `firsts[j]`: how many tools had been reached when term `j` was walked. Those reached by
    /// term `j` for the first time (`touched[firsts[j]..firsts[j + 1]]`) are in none of the
    /// terms before it: their partial scores are at most the summed bounds of terms `j..walked`.
    firsts: Vec<usize>,
    /// Terms whose postings have been added in full.
    walked: usize,
    /// `rest[j]`: summed bounds of terms `j..`.
    rest: Vec<f32>,
    /// Postings of the terms not walked yet.
    rest_postings: usize,
}

/// What a check that prunes found.
struct Cut {
    /// A score that `want` tools reach (the `want`-th best partial score, or better): a tool
    /// that cannot reach it is left out.
    theta: f32,
    /// A partial score above which `scratch.partials` holds every reached tool that `keep`
    /// accepts (and no other, each keyed with its partial score), and at or below which none
    /// can pass (when there is one).
    covered: Option<f32>,
}

impl<'t, 'p, 'm> Ranker<'t, 'p, 'm> {
    /// Starts scoring `terms` (canonical order) over a catalog of `num_docs` tools; `allowed`
    /// holds the tools the caller may use (checked before any of their postings is scored).
    pub fn new(terms: &'t [Term<'p>], num_docs: usize, allowed: DocMask<'m>) -> Self {
        let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        if scratch.acc.len() < num_docs {
            scratch.acc = vec![0f32; num_docs];
            // A tool is recorded once; the extra slot takes the unconditional write after the last.
            scratch.touched = vec![0; num_docs + 1];
            scratch.marks = Marks::new(num_docs);
        }
        let n = terms.len();
        let mut rest = vec![0f32; n + 1];
        for j in (0..n).rev() {
            rest[j] = rest[j + 1] + terms[j].bound;
        }
        Ranker {
            terms,
            allowed,
            scratch,
            count: 0,
            firsts: Vec::with_capacity(n),
            walked: 0,
            rest,
            rest_postings: terms.iter().map(|t| t.list.len()).sum(),
        }
    }

    /// Adds the postings of the next term to the partial scores.
    fn walk_next(&mut self) {
        self.firsts.push(self.count);
        let t = &self.terms[self.walked];
        self.count = walk(
            t,
            self.allowed,
            &mut self.scratch.acc,
            &mut self.scratch.touched,
            self.count,
        );
        self.walked += 1;
        self.rest_postings -= t.list.len();
    }

    /// How many of the tools reached, in first-touch order, can have a partial score that
    /// `can` accepts (a test that accepts every score above some level), and the most that any
    /// tool after them can score (0 when there is none). A tool reached first by a later term
    /// scores at most the summed bounds of the terms from there to the last one walked, and
    /// those sums only grow towards the first term.
    fn reached_until(&self, can: impl Fn(f32) -> bool) -> (usize, f32) {
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
    /// When many more tools pass than are wanted, the threshold is raised to exact scores: the
    /// `want` tools with the best partial scores are scored in full (probing the lists left, in
    /// canonical order, so their sums are those of exhaustive scoring), and the least of their
    /// scores, which `want` tools reach, is at least their partial one. The tools that the bounds
    /// left cannot lift to it are then left out before they are collected and probed.
    fn threshold(&mut self, keep: &impl Fn(DocId) -> bool, want: usize) -> Option<Cut> {
        let n = self.terms.len();
        if self.walked == 0 || self.walked == n || want == 0 || want == usize::MAX {
            return None;
        }
        if self.rest_postings <= self.count {
            return None;
        }
        let most = lift(self.rest[self.walked], n - self.walked);
        // The most a tool not reached yet can score.
        let reach = most(0.0);
        // No partial score exceeds the bounds of the terms walked (skipping a check is safe).
        if self.rest[0] - self.rest[self.walked] <= reach {
            return None;
        }
        let (above, _) = self.reached_until(|score| score > reach);
        // The check reads the tools that can pass: when the next list is shorter, walking it
        // costs less, and the check after it can only cut deeper (a lower reach, partial scores
        // no lower).
        if self.terms[self.walked].list.len() < above {
            return None;
        }
        let Scratch {
            acc,
            touched,
            partials,
            ..
        } = &mut self.scratch;
        partials.clear();
        partials.reserve(above);
        partials.extend(
            touched[..above]
                .iter()
                .filter(|&&d| acc[d as usize] > reach && keep(d))
                .map(|&d| keyed(acc[d as usize], d)),
        );
        if partials.len() < want {
            return None;
        }
        let mut theta = kth_largest(partials, want);
        // How many reached tools pass on `theta` (as `Ranker::rank` tests them): those of
        // `partials` with the partial score it needs, or every tool reached when that is no
        // more than `reach` (tools missing from `partials` may pass too).
        let passing = |theta: f32, partials: &[u64]| {
            let need = theta / slack(n - self.walked) - self.rest[self.walked];
            if need <= reach {
                self.count
            } else {
                let need = keyed(need, 0);
                partials.iter().filter(|&&key| key >= need).count()
            }
        };
        let mut pass = passing(theta, partials);
        if pass >= RAISE_FROM * want {
            // `kth_largest` left the `want` best partial scores at the end
            let mut best: Vec<Hit> = partials[partials.len() - want..]
                .iter()
                .map(|&key| unkeyed(key))
                .collect();
            best.sort_unstable_by_key(|h| h.doc);
            for t in &self.terms[self.walked..] {
                probe(t, &mut best);
            }
            let least = best.iter().map(|h| h.score).fold(f32::INFINITY, f32::min);
            theta = theta.max(least);
            pass = passing(theta, partials);
        }
        if pass >= self.terms[self.walked].list.len() {
            return None;
        }
        // A tool left out of `partials` scores at most `reach`; when even that cannot pass (as
        // `Ranker::rank` tests it), collecting needs to read `partials` only.
        let covered = (most(reach) < theta).then_some(reach);
        Some(Cut { theta, covered })
    }

    /// The matching tools that `keep` accepts, ranked at least `want` deep. Terms are walked
    /// (from where an earlier call stopped) until the `want`-th best partial score beats the
    /// summed bounds of the terms still to come: then no tool not reached yet can rank among the
    /// best `want`, and the remaining (common, long) lists are only *probed* for the tools
    /// already reached (a merge, see `probe`), instead of walked in full. `want = usize::MAX`
    /// scores exhaustively.
    pub fn rank(&mut self, keep: impl Fn(DocId) -> bool, want: usize) -> Ranked {
        let n = self.terms.len();
        let Cut { theta, covered } = loop {
            if let Some(cut) = self.threshold(&keep, want) {
                break cut;
            }
            if self.walked == n {
                break Cut {
                    theta: f32::INFINITY,
                    covered: None,
                };
            }
            self.walk_next();
        };
        let walked = self.walked;
        let most = lift(self.rest[walked], n - walked);
        let passes = |s| most(s) >= theta;
        // the reached tools that can pass, and the most that those after them score
        let (can, after) = self.reached_until(passes);
        let Scratch {
            acc,
            touched,
            marks,
            partials,
        } = &mut self.scratch;
        let reached = &touched[..self.count];
        if walked == n {
            let hits = reached
                .iter()
                .filter(|&&doc| keep(doc))
                .map(|&doc| Hit {
                    doc,
                    score: acc[doc as usize],
                })
                .collect();
            return Ranked {
                hits,
                complete: true,
            };
        }
        // A reached tool whose partial score plus the bounds of the terms left cannot get to
        // the want-th best partial score (theta) is left out. Those that can are ranked exactly.
        // Every tool left out, reached or not, scores at most `floor`: the most that the terms
        // left can bring to the best partial score left out (0 for a tool not reached); `most`
        // grows with the partial score, so that one bounds them all.
        // A probe through member bits takes the tools in any order; the others merge, so they
        // need registry order, which costs a pass over the marks and a second read of each score.
        let ordered = self.terms[walked..].iter().any(|t| t.members.is_none());
        let (mut hits, left) = match covered {
            // Every tool outside `partials` that `keep` accepts scores at most `low`, which does
            // not pass: only `partials` needs reading (often a small part of the tools reached).
            Some(low) => {
                // every one of them `keep` accepts, with its partial score in the key
                let above = partials.iter().map(|&key| unkeyed(key));
                let (hits, left) = collect(above, acc, marks, passes, |_| true, ordered);
                (hits, left.max(low))
            }
            None => {
                let reached = touched[..can].iter().map(|&doc| Hit {
                    doc,
                    score: acc[doc as usize],
                });
                let (hits, left) = collect(reached, acc, marks, passes, &keep, ordered);
                (hits, left.max(after))
            }
        };
        let mut floor = most(left);
        // Probe the remaining lists for the tools kept, adding in canonical term order.
        for (j, t) in self.terms.iter().enumerate().skip(walked) {
            if j > walked && hits.len() > 2 * want {
                // Scores only grow: the want-th best so far is a lower bound on the final
                // want-th best, so a tool that cannot reach it with the terms left is out too.
                partials.clear();
                partials.extend(hits.iter().map(|h| keyed(h.score, h.doc)));
                let th = kth_largest(partials, want).max(theta);
                let most = lift(self.rest[j], n - j);
                let mut left = 0f32;
                hits.retain(|h| {
                    let out = most(h.score) < th;
                    if out && h.score > left {
                        left = h.score;
                    }
                    !out
                });
                floor = floor.max(most(left));
            }
            probe(t, &mut hits);
        }
        // At least `want` remain (each scores at least theta), and every tool left out scores
        // at most `floor`: those above it are the exact head of the ranking.
        hits.retain(|h| h.score > floor);
        Ranked {
            hits,
            complete: false,
        }
    }
}

impl Ranker<'_, '_, '_> {
    /// Whether scoring `docs` given tools one by one ([`Ranker::rank_docs`]) likely costs less
    /// than ranking on ([`Ranker::rank`]): probing each of them in every list not walked yet
    /// (about `PROBE_COST` postings walked per probe) against walking those lists, and fewer of
    /// them than half the tools reached (a ranking from the partial scores scans all of those).
    pub fn direct_is_cheaper(&self, docs: usize) -> bool {
        let probes = docs.saturating_mul(self.terms.len() - self.walked);
        probes.saturating_mul(PROBE_COST) < self.rest_postings
            && docs.saturating_mul(2) < self.count
    }

    /// Every matching tool among `docs` that the caller may use and `keep` accepts, each scored
    /// exactly: its partial score over the terms walked so far, plus what the other lists add
    /// (probed, in canonical order), so the sums are those of exhaustive scoring. Cheaper than
    /// [`Ranker::rank`] for a few tools (late rounds of a selection, after the cheap ones).
    pub fn rank_docs(&mut self, docs: &[DocId], keep: impl Fn(DocId) -> bool) -> Ranked {
        let Scratch { acc, marks, .. } = &mut self.scratch;
        let mut marking = Marking::new(marks);
        for &doc in docs {
            if self.allowed.get(doc) == 1 && keep(doc) {
                marking.mark(doc);
            }
        }
        // in registry order, for the probes
        let mut hits = marking.hits(acc);
        for t in &self.terms[self.walked..] {
            probe(t, &mut hits);
        }
        hits.retain(|h| h.score > 0.0);
        Ranked {
            hits,
            complete: true,
        }
    }
}

/// Tools that could pass, per tool wanted, from which a check's threshold is raised by scoring
/// the best `want` in full (see `Ranker::threshold`). Raising costs a search per tool wanted in
/// each list left; it can save a probe (or, before the cut, a walk) per passing tool. A search
/// for a lone tool in a long list costs several times a step of a dense merge (12-90 against
/// 5-12 ns per tool at aws-100k and zipf-100k, timed per probe in a /tmp build), so this keeps
/// the cost of raising to a small part of what it can save. Timed per phase (/tmp build) at 32,
/// raising costs zipf-100k (73 wanted, often 30-50 times as many passing) 5 µs per select
/// against 1.5 µs saved; at 128 aws-100k keeps its gain and zipf-100k does not raise.
/// Rankings do not depend on it: the tests raise from 4, so that the small catalogs of the
/// property tests take this path too.
const RAISE_FROM: usize = if cfg!(test) { 4 } else { 128 };

/// What probing one tool in one list costs, in postings walked: chosen by instruction counts of
/// selections on the `benches/` workloads (aws-10k 162k → 152k per select against the earlier
/// rule, which compared binary searches in every list with all the postings; zipf-10k even).
const PROBE_COST: usize = 4;

impl Drop for Ranker<'_, '_, '_> {
    /// Clears the accumulators of the tools reached and gives the buffers back for the next
    /// query; after a panic they are dropped instead, so they are never reused dirty.
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let Scratch { acc, touched, .. } = &mut self.scratch;
        touched[..self.count]
            .iter()
            .for_each(|&d| acc[d as usize] = 0.0);
        let scratch = std::mem::take(&mut self.scratch);
        SCRATCH.with(|s| *s.borrow_mut() = scratch);
    }
}

impl Ranked {
    /// The `k` best hits, best first.
    pub fn best(self, k: usize) -> Vec<Hit> {
        self.split(k, 0).0
    }

    /// The `k` best hits, best first, and after them (unordered) the others when there are no
    /// more than `depth` of them; else those scoring above the best one left out, which may be
    /// fewer than `depth`. The rest, with `complete`, is a `Ranked` too: every matching tool
    /// wanted, or every one scoring above a floor.
    pub fn split(self, k: usize, depth: usize) -> (Vec<Hit>, Ranked) {
        let (mut hits, mut complete) = (self.hits, self.complete);
        let mut floor = None;
        if hits.len() > k.saturating_add(depth) {
            let end = k + depth;
            hits.select_nth_unstable_by_key(end, Hit::rank_key);
            floor = Some(hits[end].score);
            hits.truncate(end);
            complete = false;
        }
        let mut rest = if hits.len() > k {
            hits.select_nth_unstable_by_key(k, Hit::rank_key);
            hits.split_off(k)
        } else {
            Vec::new()
        };
        if let Some(floor) = floor {
            // ties with the one left out go too (the best `k` stay, tied or not)
            rest.retain(|h| h.score > floor);
        }
        hits.sort_unstable_by_key(Hit::rank_key);
        (
            hits,
            Ranked {
                hits: rest,
                complete,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn common_lists_are_probed_not_walked_and_the_ranking_stays_exact() {
        use crate::index::tests::two_field_index;
        // "rare" in 3 tools, "ping" in all 200: the best 2 are known after the rare list (both
        // words are too short for prefix terms).
        let docs: Vec<(String, String)> = (0..200)
            .map(|i| {
                let rare = if i % 70 == 5 { " rare" } else { "" };
                (format!("tool{i}"), format!("ping thing{}{rare}", i % 7))
            })
            .collect();
        let idx = two_field_index(
            docs.iter()
                .map(|(n, d)| (n.as_str(), d.as_str(), "", false, 10)),
        );
        let caller = idx.caller::<&str>(&[]);
        let terms = idx.query_terms(&"rare ping".into());
        assert_eq!(terms.len(), 2);
        let ranked = rank(&terms, idx.len(), caller.allowed_docs(), |_| true, 2);
        assert!(!ranked.complete, "the common list should have been probed");
        let mut all = idx.score("rare ping", &caller);
        crate::topk::rank(&mut all);
        let n = ranked.hits.len();
        assert!(n >= 2 && n < all.len());
        assert_eq!(ranked.best(n), all[..n]);
    }

    #[test]
    fn a_short_list_that_every_reached_tool_could_pass_on_is_walked_not_probed() {
        use crate::index::tests::two_field_index;
        use crate::index::Query;
        // "rare" and "mid" in 3 tools each, "ping" in all 200. "mid" is asked for with a small
        // weight, so it comes second: after "rare" the best 2 are known, but all 3 tools reached
        // could still pass, as many as "mid" has postings: "mid" is walked, "ping" probed.
        let docs: Vec<(String, String)> = (0..200)
            .map(|i| {
                let rare = if i % 70 == 5 { " rare" } else { "" };
                let mid = if i % 70 == 9 { " mid" } else { "" };
                (
                    format!("tool{i}"),
                    format!("ping thing{}{rare}{mid}", i % 7),
                )
            })
            .collect();
        let idx = two_field_index(
            docs.iter()
                .map(|(n, d)| (n.as_str(), d.as_str(), "", false, 10)),
        );
        let caller = idx.caller::<&str>(&[]);
        let query = Query(vec![("rare ping", 1.0), ("mid", 0.05)]);
        let terms = idx.query_terms(&query);
        assert_eq!(terms.len(), 3);
        assert_eq!(
            terms.iter().map(|t| t.list.len()).collect::<Vec<_>>(),
            [3, 3, 200]
        );
        let mut ranker = Ranker::new(&terms, idx.len(), caller.allowed_docs());
        let ranked = ranker.rank(|_| true, 2);
        assert_eq!(ranker.walked, 2, "the short list should have been walked");
        assert!(!ranked.complete, "the common list should have been probed");
        drop(ranker);
        let mut all = idx.score(query, &caller);
        crate::topk::rank(&mut all);
        let n = ranked.hits.len();
        assert!(n >= 2 && n < all.len());
        assert_eq!(ranked.best(n), all[..n]);
    }

    #[test]
    fn tools_past_the_end_of_a_short_mask_are_not_scored() {
        use crate::index::tests::two_field_index;
        let docs: Vec<String> = (0..200).map(|i| format!("ping thing{}", i % 7)).collect();
        let idx = two_field_index(docs.iter().map(|d| ("tool", d.as_str(), "", false, 10)));
        let terms = idx.query_terms(&"ping thing3".into());
        // one word: tools 0..64 only, every other one of them
        let words = [0x5555_5555_5555_5555u64];
        for want in [3, usize::MAX] {
            let ranked = rank(&terms, idx.len(), DocMask::new(&words), |_| true, want);
            assert!(!ranked.hits.is_empty());
            assert!(ranked.hits.iter().all(|h| h.doc < 64 && h.doc % 2 == 0));
        }
    }

    #[test]
    fn a_split_keeps_the_best_of_the_rest_and_never_part_of_a_tie() {
        let ranked = |scores: &[f32]| Ranked {
            hits: scores
                .iter()
                .enumerate()
                .map(|(d, &score)| Hit {
                    doc: d as DocId,
                    score,
                })
                .collect(),
            complete: true,
        };
        let docs = |hits: &[Hit]| {
            let mut d: Vec<DocId> = hits.iter().map(|h| h.doc).collect();
            d.sort_unstable();
            d
        };
        // no more than `depth` others: all of them, still complete
        let (best, rest) = ranked(&[3.0, 9.0, 5.0]).split(1, 2);
        assert_eq!(
            (docs(&best), docs(&rest.hits), rest.complete),
            (vec![1], vec![0, 2], true)
        );
        // more: the best `depth` of them, the ranking no longer complete
        let (best, rest) = ranked(&[5.0, 9.0, 7.0, 8.0, 6.0]).split(1, 2);
        assert_eq!(
            (docs(&best), docs(&rest.hits), rest.complete),
            (vec![1], vec![2, 3], false)
        );
        // a tie with the best one left out: none of the tied ones (tool 3 would be left out)
        let (best, rest) = ranked(&[9.0, 4.0, 4.0, 4.0, 3.0]).split(1, 2);
        assert_eq!(
            (docs(&best), docs(&rest.hits), rest.complete),
            (vec![0], vec![], false)
        );
        // the best `k` stay whatever the ties
        let (best, rest) = ranked(&[4.0, 4.0, 4.0, 4.0]).split(2, 1);
        assert_eq!(
            (
                best.iter().map(|h| h.doc).collect::<Vec<_>>(),
                rest.hits.len()
            ),
            (vec![0, 1], 0)
        );
    }

    #[test]
    fn a_threshold_raised_to_exact_scores_keeps_the_best_tool_on_it() {
        use crate::index::tests::two_field_index;
        // "acme" in 200 tools of the same length, "ping" in all 2000. After "acme" every one of
        // the 200 has the same partial score and could pass on it, more than `RAISE_FROM` times
        // the one wanted: the threshold is raised to the full score of the tool with the best
        // partial score (among equals, the last: tool 1990), which also has the most "ping"s.
        // That score is the best, so the raised threshold is met exactly by the tool that must
        // be found.
        let docs: Vec<String> = (0..2000)
            .map(|i| match i {
                1990 => "acme ping ping ping".to_owned(),
                i if i % 10 == 0 => format!("acme ping qq{i} rr{i}"),
                i => format!("ping ss{i} tt{i} uu{i}"),
            })
            .collect();
        let idx = two_field_index(docs.iter().map(|d| ("tool", d.as_str(), "", false, 10)));
        let caller = idx.caller::<&str>(&[]);
        let terms = idx.query_terms(&"acme ping".into());
        assert_eq!(
            terms.iter().map(|t| t.list.len()).collect::<Vec<_>>(),
            [200, 2000]
        );
        let mut ranker = Ranker::new(&terms, idx.len(), caller.allowed_docs());
        let ranked = ranker.rank(|_| true, 1);
        assert!(!ranked.complete, "the common list should have been probed");
        assert_eq!(ranker.walked, 1);
        drop(ranker);
        let mut all = idx.score("acme ping", &caller);
        crate::topk::rank(&mut all);
        assert_eq!(all[0].doc, 1990);
        assert_eq!(ranked.best(1), all[..1]);
    }

    #[test]
    fn tools_scored_one_by_one_after_a_pruned_ranking_get_their_exhaustive_scores() {
        use crate::index::tests::two_field_index;
        let docs: Vec<String> = (0..300)
            .map(|i| {
                let rare = if i % 50 == 7 { " rare" } else { "" };
                format!("ping thing{} item{}{rare}", i % 7, i % 11)
            })
            .collect();
        let idx = two_field_index(docs.iter().map(|d| ("tool", d.as_str(), "", false, 10)));
        let caller = idx.caller::<&str>(&[]);
        let terms = idx.query_terms(&"rare ping thing3 item5".into());
        let mut ranker = Ranker::new(&terms, idx.len(), caller.allowed_docs());
        assert!(
            !ranker.rank(|_| true, 2).complete,
            "some lists should be left to probe"
        );
        assert!(ranker.walked > 0 && ranker.walked < terms.len());
        // reached and unreached tools, matching and not, some refused by `keep`
        let wanted: Vec<DocId> = (0..300).rev().step_by(3).collect();
        let mut got = ranker.rank_docs(&wanted, |d| d % 2 == 0).hits;
        got.sort_unstable_by_key(|h| h.doc);
        let mut all: Vec<Hit> = idx
            .score("rare ping thing3 item5", &caller)
            .into_iter()
            .filter(|h| h.doc % 3 == 2 && h.doc % 2 == 0)
            .collect();
        all.sort_unstable_by_key(|h| h.doc);
        assert!(all.len() > 20);
        assert_eq!(got, all);
    }

    /// Postings for a [`Term`]: ascending distinct docs below 300, levels 1..=255.
    fn postings(mut pairs: Vec<(DocId, u8)>) -> (Vec<DocId>, Vec<u8>) {
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
                probe(&t, &mut probed);
                results.push(probed.iter().map(|h| (h.doc, h.score.to_bits())).collect::<Vec<_>>());
            }
            prop_assert_eq!(&results[0], &results[1]);
        }

        #[test]
        fn marked_tools_are_read_back_in_registry_order_and_the_marks_left_clear(docs in proptest::collection::vec(0u32..20_000, 0..300)) {
            // 20,000 tools: more than one word of the second level
            let mut marks = Marks::new(20_000);
            let acc: Vec<f32> = (0..20_000).map(|d| d as f32 + 0.5).collect();
            let mut marking = Marking::new(&mut marks);
            let mut want = docs.clone();
            want.sort_unstable();
            want.dedup();
            for &d in &docs {
                marking.mark(d); // in any order, some twice
            }
            let hits = marking.hits(&acc);
            prop_assert_eq!(hits.iter().map(|h| h.doc).collect::<Vec<_>>(), want);
            prop_assert!(hits.iter().all(|h| h.score == acc[h.doc as usize]));
            prop_assert!(marks.words.iter().chain(&marks.summary).all(|&w| w == 0));
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
