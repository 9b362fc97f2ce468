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
//! `examples/tuning_ab.rs` builds the synthetic workloads of `examples/common/mod.rs` (services
//! laid out in runs, `grouped`, like the botocore catalog; permission groups taking turns,
//! `turns`, like `benches/workloads.py::zipf`) and times `Index::select` (budget 4,000, a caller
//! holding half the permissions) with the chosen value and the alternatives, alternating pass by
//! pass in one process. The figures quoted below are its output on the 2-core development VM
//! (2026-12-02); the measurements that first chose each value (Python-level and instruction
//! counts on the real botocore workload) are kept in `benches/RESULTS.md`.
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
    /// `tuning_ab -- step_gap`: FIGURES_STEP_GAP
    pub step_gap: usize,
    /// Tools that could pass, per tool wanted, from which a check's threshold is raised to exact
    /// scores by scoring the best `want` in full (see `bounds.rs`, `Ranker::threshold`). Raising
    /// costs a search per wanted tool in each list left; it saves a probe (or, before the cut, a
    /// walk) per passing tool it leaves out. The tests raise from 4, so that the small catalogs
    /// of the property tests take this path too.
    ///
    /// `tuning_ab -- raise_from`: FIGURES_RAISE_FROM
    pub raise_from: usize,
    /// What probing one tool in one list costs, in postings walked, for
    /// `Ranker::direct_is_cheaper` (late rounds of a selection score the few tools still cheap
    /// enough one by one instead of ranking on).
    ///
    /// `tuning_ab -- probe_cost`: FIGURES_PROBE_COST
    pub probe_cost: usize,
    /// How many of a round's ranked tools, beyond those it offered, a selection keeps for its
    /// later rounds (see `selection.rs`). A later round filters what is kept by its cost limit
    /// and by what was examined, and wants a few. The tests keep 2, so that the small catalogs
    /// of the property tests leave tools out too.
    ///
    /// `tuning_ab -- pool_depth`: FIGURES_POOL_DEPTH
    pub pool_depth: usize,
    /// A term's tools come in runs (walked with a branch on the mask, see `accumulate.rs`) when
    /// fewer than one in this many of its postings follows a tool that requires other
    /// permissions than its own: a caller holding half the permissions sees the mask change at
    /// about half of those places, where the branch mispredicts. Decided per term when the index
    /// is assembled (`postings.rs`, `Acceleration::new`).
    ///
    /// `tuning_ab -- run_changes`: FIGURES_RUN_CHANGES
    pub run_changes: usize,
    /// A term in at least one tool in this many gets member bits (see
    /// [`crate::postings::member_bits`]): a probe in its list is then a lookup per tool instead of
    /// a search or a step. The bits take a quarter of a byte per tool of the catalog per such
    /// term.
    ///
    /// `tuning_ab -- members_from`: FIGURES_MEMBERS_FROM
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
