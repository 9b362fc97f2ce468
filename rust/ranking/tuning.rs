//! Every tuning constant of the ranking, selection and index layout, in one place.
//!
//! None of the [`Tuning`] values changes a result: each picks between paths that give the same
//! answer bit for bit (the proptests compare every path with exhaustive scoring), so each is a
//! trade of one cost against another, chosen by a benchmark that is in the repository:
//!
//! ```text
//! cargo run --release --example tuning_ab -- <step_gap|raise_from|probe_cost|pool_depth|run_changes|members_from>
//! ```
//!
//! `examples/tuning_ab.rs` times `Index::select` (budget 4,000, the workload's caller holding
//! half the permissions) with the chosen value and the alternatives, alternating pass by pass in
//! one process, and checks that every value gives the same selections. The figures quoted below
//! are its output on the Python benches' own workloads, exported with
//! `python benches/export_workload.py aws-100k /tmp/aws-100k.tsv` (likewise `aws-10k`,
//! `zipf-10k`, `zipf-100k`) and passed as `--workload /tmp/aws-100k.tsv ...` (20 passes, the
//! shared 2-core VM, 2026-12-02; the full tables, the synthetic workloads' and the
//! measurements that first chose each value are in `benches/RESULTS.md`). Differences under
//! about 3 % are the VM's noise.
//!
//! The two prefix constants do change results (which terms get postings): they are build
//! parameters of the index, kept here so that every knob is in one file.

/// The values the ranking is tuned with; [`Tuning::DEFAULT`] is what every index uses. The
/// benches and `tuning_ab` build others to compare (see [`crate::Index::retuned`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Postings per hit below which a probe steps through a list rather than galloping in it
    /// (see `probe.rs`). A search's branches go either way at random, a step's exit once per hit.
    ///
    /// `tuning_ab -- step_gap`: on the exported botocore and Zipf workloads every value from 1
    /// (always gallop) to 2^20 (always step) is within ±3 % of 16 (aws-10k 13.4 µs, aws-100k
    /// 53.6, zipf-100k 74.5): the noise of the VM. Kept at 16, where the first measurement
    /// (Python `Index.select`, 4-7 % faster than galloping only) put it.
    pub step_gap: usize,
    /// Tools that could pass, per tool wanted, from which a check's threshold is raised to exact
    /// scores by scoring the best `want` in full (see `bounds.rs`, `Ranker::threshold`). Raising
    /// costs a search per wanted tool in each list left; it saves a probe (or, before the cut, a
    /// walk) per passing tool it leaves out. The tests raise from 4, so that the small catalogs
    /// of the property tests take this path too.
    ///
    /// `tuning_ab -- raise_from`: never raising costs aws-100k 14 % (53.3 → 60.8 µs); 8 to 512
    /// are within ±2 % of 128 everywhere (zipf-100k, which rarely has 128 passing per wanted
    /// tool, within noise at every value).
    pub raise_from: usize,
    /// What probing one tool in one list costs, in postings walked, for
    /// `Ranker::direct_is_cheaper` (late rounds of a selection score the few tools still cheap
    /// enough one by one instead of ranking on).
    ///
    /// `tuning_ab -- probe_cost`: never scoring directly costs aws-10k 17.5 %, aws-100k
    /// 26.5 % (57.7 → 73.1 µs); 1 to 8 are within ±5 % of 4 on aws; zipf-100k is noisy
    /// (139-167 µs at every value).
    pub probe_cost: usize,
    /// How many of a round's ranked tools, beyond those it offered, a selection keeps for its
    /// later rounds (see `selection.rs`). A later round filters what is kept by its cost limit
    /// and by what was examined, and wants a few. The tests keep 2, so that the small catalogs
    /// of the property tests leave tools out too.
    ///
    /// `tuning_ab -- pool_depth`: no pool (0) costs 10-24 % (aws-100k 56.4 → 69.8 µs,
    /// zipf-100k 74.4 → 90.8); 8 and 16 cost aws-100k 8-14 %; 256 and "all" are within noise
    /// of 64 on aws and zipf-100k (a later round filters what is kept: 64 bounds that work).
    pub pool_depth: usize,
    /// A term's tools come in runs (walked with a branch on the mask, see `accumulate.rs`) when
    /// fewer than one in this many of its postings follows a tool that requires other
    /// permissions than its own: a caller holding half the permissions sees the mask change at
    /// about half of those places, where the branch mispredicts. Decided per term when the index
    /// is assembled (`postings.rs`, `Acceleration::new`).
    ///
    /// `tuning_ab -- run_changes`: branching on every list (0 or 1) costs zipf-10k 30-38 % and
    /// zipf-100k 45 % (86 → 125 µs), whose tools take turns between groups; at 2 all of
    /// zipf's lists are walked branch-free (its time equals "never"). On aws-10k/100k every
    /// value is within 7 % (3, 6 and never 2-7 % faster than 2 at 10k, within noise at 100k):
    /// the 8 % that the first measurement found at aws-100k does not show here.
    pub run_changes: usize,
    /// A term in at least one tool in this many gets member bits (see
    /// [`crate::postings::member_bits`]): a probe in its list is then a lookup per tool instead of
    /// a search or a step. The bits take a quarter of a byte per tool of the catalog per such
    /// term.
    ///
    /// `tuning_ab -- members_from`: no member bits costs 14-50 % (aws-100k 77 → 88 µs, zipf-100k
    /// 86 → 129); 4 costs 10-18 %, 8 costs 3-6 %; 32 and 64 are within noise of 16 (for a half
    /// or a quarter of the bits).
    pub members_from: usize,
}

impl Tuning {
    /// The values every index ranks with (`cfg(test)` builds raise from 4 and keep 2, see
    /// above).
    pub const DEFAULT: Tuning = Tuning {
        step_gap: 16,
        raise_from: if cfg!(test) { 4 } else { 128 },
        probe_cost: 4,
        pool_depth: if cfg!(test) { 2 } else { 64 },
        run_changes: 2,
        members_from: 16,
    };
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning::DEFAULT
    }
}

/// A prefix term (see [`crate::tokenizer::prefix_term`]) found in more than this share of the
/// catalog's tools, and in more than [`PREFIX_MIN_LIMIT`] tools, gets no postings: such a prefix
/// joins too many unrelated words to be much evidence, and would cost every query that has it a
/// long list. Changes scores; `benches/prefix_cost.py` measures what prefix terms cost.
pub const PREFIX_MAX_SHARE: f64 = 0.02;

/// Prefix terms in at most this many tools always keep their postings (a list that short costs
/// a query next to nothing, and in a small catalog a prefix in a few tools is still evidence).
pub const PREFIX_MIN_LIMIT: usize = 500;
