//! Building an index: tools in registry order, each as text fields, the permissions it
//! requires, its token cost and its core flag; the term counts are turned into impact-quantised
//! postings (see [`crate::postings`], [`crate::bm25`]) and frozen into an immutable [`Index`].
//! [`Index::subset`] builds the index of some of an index's tools from the term counts it kept,
//! without tokenizing again.

use crate::bm25::Bm25Params;
use crate::error::{Error, Result};
use crate::index::Index;
use crate::permissions::PermissionTable;
use crate::postings::{DocId, Postings, PostingsBuilder};
use crate::ranking::tuning::{PREFIX_MAX_SHARE, PREFIX_MIN_LIMIT};
use crate::tokenizer::Tokenizer;
use crate::vocab::{TermId, Vocab};

/// One tool as the builder sees it.
#[derive(Debug, Clone, Copy)]
pub struct DocInput<'a> {
    /// Text of each field, in the order of [`Bm25Params::fields`].
    pub fields: &'a [&'a str],
    /// Permissions the tool requires; empty for a public tool.
    pub perms: &'a [&'a str],
    /// Tokens its definition costs in a prompt.
    pub cost_tokens: u32,
    /// Always selected when the caller may use it.
    pub core: bool,
}

/// Builds an [`Index`] from tools added in registry order.
#[derive(Debug)]
pub struct IndexBuilder {
    params: Bm25Params,
    vocab: Vocab,
    /// `(term, field, count)` of every tool, flat; tool `d` owns `counts[ends[d-1]..ends[d]]`.
    counts: Vec<(TermId, u16, f32)>,
    ends: Vec<usize>,
    /// Field lengths in tokens, `fields.len()` per tool.
    lens: Vec<f32>,
    costs: Vec<u32>,
    core: Vec<DocId>,
    perms: PermissionTable,
    tokenizer: Tokenizer,
    /// Per term, where in `counts` its entry for the field being added is (an older position,
    /// or `usize::MAX`, when the field has not had the term yet).
    seen: Vec<usize>,
}

impl IndexBuilder {
    /// A builder scoring with `params` (one entry per field).
    pub fn new(params: Bm25Params) -> Result<Self> {
        params.validate()?;
        if params.fields.len() > usize::from(u16::MAX) {
            return Err(Error::InvalidParameter {
                name: "fields",
                reason: "too many fields".into(),
            });
        }
        Ok(IndexBuilder {
            params,
            vocab: Vocab::default(),
            counts: Vec::new(),
            ends: Vec::new(),
            lens: Vec::new(),
            costs: Vec::new(),
            core: Vec::new(),
            perms: PermissionTable::default(),
            tokenizer: Tokenizer::default(),
            seen: Vec::new(),
        })
    }

    /// Adds the next tool and returns its registry position.
    pub fn add(&mut self, doc: &DocInput<'_>) -> Result<DocId> {
        let expected = self.params.fields.len();
        if doc.fields.len() != expected {
            return Err(Error::LengthMismatch {
                field: "fields",
                expected,
                got: doc.fields.len(),
            });
        }
        let id = DocId::try_from(self.ends.len()).map_err(|_| Error::TooManyTools {
            max: DocId::MAX as usize,
        })?;
        let Self {
            params,
            vocab,
            counts,
            lens,
            tokenizer,
            seen,
            ..
        } = self;
        let prefixes = params.prefix_weight > 0.0;
        for (f, text) in doc.fields.iter().enumerate() {
            let start = counts.len(); // this field's entries begin here
            let mut len = 0f32;
            if params.fields[f].weight > 0.0 {
                let mut count = |term: TermId| {
                    let term = term as usize;
                    if seen.len() <= term {
                        seen.resize(term + 1, usize::MAX);
                    }
                    let at = seen[term];
                    if at == usize::MAX || at < start {
                        seen[term] = counts.len();
                        counts.push((term as TermId, f as u16, 1.0));
                    } else {
                        counts[at].2 += 1.0;
                    }
                };
                tokenizer.for_each_word(text, &mut |word, to_stem| {
                    let terms = vocab.intern_word(word, to_stem, prefixes);
                    len += 1.0; // a prefix term is not a word of its own
                    count(terms.term);
                    if let Some(prefix) = terms.prefix {
                        count(prefix);
                    }
                });
            }
            lens.push(len);
        }
        self.ends.push(self.counts.len());
        self.costs.push(doc.cost_tokens);
        self.perms.push_doc(doc.perms);
        if doc.core {
            self.core.push(id);
        }
        Ok(id)
    }

    /// Mean length of each field over the tools that have it (Lucene's convention): a field
    /// that few tools fill (examples, search-only text) is not "long" in every tool that fills
    /// it just because the others left it empty.
    fn average_lengths(&self) -> Vec<f32> {
        let nf = self.params.fields.len();
        (0..nf)
            .map(|f| {
                let (sum, filled) = self
                    .lens
                    .iter()
                    .skip(f)
                    .step_by(nf.max(1))
                    .filter(|&&len| len > 0.0)
                    .fold((0f32, 0usize), |(s, n), &len| (s + len, n + 1));
                if filled == 0 {
                    0.0
                } else {
                    sum / filled as f32
                }
            })
            .collect()
    }

    /// The number of tools each term will have postings in: its document frequency, or 0 for a
    /// prefix term found in more than [`PREFIX_MAX_SHARE`] of the tools (and more than
    /// [`PREFIX_MIN_LIMIT`]): such a prefix joins too many unrelated words to be much evidence,
    /// and would cost every query that has it a long list, so it gets no postings.
    fn posted_frequencies(&self) -> Vec<usize> {
        let mut df = vec![0usize; self.vocab.len()];
        let mut last = vec![usize::MAX; self.vocab.len()];
        let mut start = 0;
        for (d, &end) in self.ends.iter().enumerate() {
            for &(term, _, _) in &self.counts[start..end] {
                let t = term as usize;
                if last[t] != d {
                    last[t] = d;
                    df[t] += 1;
                }
            }
            start = end;
        }
        let limit = (PREFIX_MAX_SHARE * self.ends.len() as f64).max(PREFIX_MIN_LIMIT as f64);
        for (t, term) in self.vocab.terms().iter().enumerate() {
            if term.starts_with('^') && df[t] as f64 > limit {
                df[t] = 0;
            }
        }
        df
    }

    /// Freezes the builder into an immutable index.
    pub fn build(self) -> Index {
        self.finish(false)
    }

    /// Like [`IndexBuilder::build`], the index keeping every tool's term counts so that
    /// [`Index::subset`] can build an index of some of its tools without tokenizing them again.
    pub fn build_with_terms(self) -> Index {
        self.finish(true)
    }

    fn finish(self, keep_terms: bool) -> Index {
        let postings = self.postings();
        let nf = self.params.fields.len();
        let terms = keep_terms.then(|| DocTerms::new(&self.counts, &self.ends, self.lens, nf));
        let mut index = Index::assemble(
            self.params,
            self.vocab,
            postings,
            self.costs,
            self.core,
            self.perms,
        );
        index.terms = terms;
        index
    }

    /// The postings of every tool added.
    fn postings(&self) -> Postings {
        let nf = self.params.fields.len();
        let avg = self.average_lengths();
        let mut acc = vec![0f32; self.vocab.len()];
        // the tool a term was last seen in: a term is collected once per tool even when its
        // share of a field rounds to 0
        let mut last = vec![DocId::MAX; self.vocab.len()];
        let mut order: Vec<TermId> = Vec::new();
        let df = self.posted_frequencies();
        let mut postings = PostingsBuilder::new(&df);
        let mut start = 0;
        for (d, &end) in self.ends.iter().enumerate() {
            for &(term, f, count) in &self.counts[start..end] {
                if df[term as usize] == 0 {
                    continue; // a common prefix term
                }
                let f = usize::from(f);
                if last[term as usize] != d as DocId {
                    last[term as usize] = d as DocId;
                    order.push(term);
                }
                acc[term as usize] += self
                    .params
                    .field_tf(f, count, self.lens[d * nf + f], avg[f]);
            }
            for term in order.drain(..) {
                let tf = std::mem::take(&mut acc[term as usize]);
                postings.push(term, d as DocId, self.params.impact(tf));
            }
            start = end;
        }
        postings.build()
    }
}

/// Every tool's term counts as the builder made them (see [`Index::subset`]), compactly: per
/// tool and field, its terms in the order they first occur there and their counts (one byte;
/// [`DocTerms::MANY`] and more are looked up in `many`); and the field lengths.
#[derive(Debug, Clone, Default)]
pub(crate) struct DocTerms {
    terms: Vec<TermId>,
    counts: Vec<u8>,
    /// The counts of [`DocTerms::MANY`] or more, by their index in `terms`.
    many: std::collections::HashMap<usize, f32>,
    /// End in `terms` of each field of each tool (`fields` per tool).
    field_ends: Vec<usize>,
    lens: Vec<f32>,
}

impl DocTerms {
    /// The count byte of a count looked up in `many`.
    const MANY: u8 = u8::MAX;

    /// The builder's counts (`(term, field, count)` flat, tool `d` owning
    /// `counts[ends[d-1]..ends[d]]`, fields ascending), encoded.
    fn new(counts: &[(TermId, u16, f32)], ends: &[usize], lens: Vec<f32>, nf: usize) -> Self {
        let mut out = DocTerms {
            terms: Vec::with_capacity(counts.len()),
            counts: Vec::with_capacity(counts.len()),
            field_ends: Vec::with_capacity(ends.len() * nf),
            lens,
            ..DocTerms::default()
        };
        let mut start = 0;
        for &end in ends {
            let mut at = start;
            for f in 0..nf {
                while at < end && usize::from(counts[at].1) == f {
                    let (term, _, count) = counts[at];
                    if count < f32::from(Self::MANY) {
                        out.counts.push(count as u8); // a whole number of occurrences
                    } else {
                        out.many.insert(out.terms.len(), count);
                        out.counts.push(Self::MANY);
                    }
                    out.terms.push(term);
                    at += 1;
                }
                out.field_ends.push(out.terms.len());
            }
            debug_assert_eq!(at, end, "fields of a tool's counts ascending");
            start = end;
        }
        out
    }

    /// `(term, count)` of field `f` of tool `d`, in order.
    fn field(&self, d: usize, f: usize, nf: usize) -> impl Iterator<Item = (TermId, f32)> + '_ {
        let i = d * nf + f;
        let start = if i == 0 { 0 } else { self.field_ends[i - 1] };
        (start..self.field_ends[i]).map(|at| {
            let count = match self.counts[at] {
                Self::MANY => self.many[&at],
                small => f32::from(small),
            };
            (self.terms[at], count)
        })
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.terms.capacity() * size_of::<TermId>()
            + self.counts.capacity()
            + self.many.capacity() * (size_of::<(usize, f32)>() + 1)
            + self.field_ends.capacity() * size_of::<usize>()
            + self.lens.capacity() * size_of::<f32>()
    }
}

impl Index {
    /// The index an [`IndexBuilder`] would build from only the tools at `docs` (ascending), in
    /// that order, each public, with its cost and core flag: every statistic (document
    /// frequencies, field lengths, which common prefixes lose their postings) is that of those
    /// tools alone, and term ids are given in the order the tools' terms first occur, as a
    /// builder gives them, so scores and their ties are the same to the bit. Built from the
    /// term counts this index keeps (see [`IndexBuilder::build_with_terms`]), without tokenizing.
    pub fn subset(&self, docs: &[DocId]) -> Result<Index> {
        let invalid = |reason: &str| Error::InvalidParameter {
            name: "docs",
            reason: reason.into(),
        };
        let terms = self
            .terms
            .as_ref()
            .ok_or_else(|| invalid("this index keeps no term counts"))?;
        if docs.windows(2).any(|w| w[0] >= w[1])
            || docs.last().is_some_and(|&d| d as usize >= self.len())
        {
            return Err(invalid(
                "positions must be ascending tool positions of this index",
            ));
        }
        let names = self.vocab.terms();
        let mut remap = vec![TermId::MAX; names.len()];
        let mut builder = IndexBuilder::new(self.params.clone())?;
        let nf = self.params.fields.len();
        for (id, &d) in docs.iter().enumerate() {
            let d = d as usize;
            for f in 0..nf {
                for (term, count) in terms.field(d, f, nf) {
                    let new = &mut remap[term as usize];
                    if *new == TermId::MAX {
                        *new = builder.vocab.intern(names[term as usize]);
                    }
                    builder.counts.push((*new, f as u16, count));
                }
            }
            builder.ends.push(builder.counts.len());
            builder
                .lens
                .extend_from_slice(&terms.lens[d * nf..(d + 1) * nf]);
            builder.costs.push(self.costs[d]);
            builder.perms.push_doc::<&str>(&[]);
            if self.is_core[d] {
                builder.core.push(id as DocId);
            }
        }
        builder.vocab.keep_words(&self.vocab, &remap);
        Ok(builder.build())
    }
}
