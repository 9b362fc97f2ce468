//! Snapshots: an [`Index`] as bytes and back, so replicas can load a built index instead of
//! rebuilding it.
//!
//! Layout (little-endian): the magic `TSIFTIDX`, a format version (`u32`), the payload length
//! (`u64`), the CRC-32 of the payload (`u32`), then the payload: BM25F parameters, the term
//! dictionary in id order, the catalog's words with the term each became, the flat postings, token costs, core tools, the permission table and
//! the cost summaries. Loading checks the magic, version, length and checksum, then every
//! structural invariant (sorted postings, ids in range...), so a truncated, corrupted, foreign or
//! future file is refused with [`Error::Snapshot`] and never yields an index that could misbehave.

use crate::bm25::{Bm25Params, FieldParams};
use crate::error::{Error, Result};
use crate::index::Index;
use crate::permissions::PermissionTable;
use crate::postings::Postings;
use crate::vocab::Vocab;

/// First bytes of every snapshot.
pub const MAGIC: &[u8; 8] = b"TSIFTIDX";
/// Version of the layout this build writes and reads.
pub const VERSION: u32 = 5;
const HEADER: usize = 8 + 4 + 8 + 4;

fn bad(reason: impl Into<String>) -> Error {
    Error::Snapshot {
        reason: reason.into(),
    }
}

#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f32(&mut self, v: f32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }
    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
    fn u32s(&mut self, v: &[u32]) {
        self.len(v.len());
        v.iter().for_each(|&x| self.u32(x));
    }
    fn f32s(&mut self, v: &[f32]) {
        self.len(v.len());
        v.iter().for_each(|&x| self.f32(x));
    }
    fn bytes(&mut self, v: &[u8]) {
        self.len(v.len());
        self.0.extend_from_slice(v);
    }
    fn usizes(&mut self, v: &[usize]) {
        self.len(v.len());
        v.iter().for_each(|&x| self.u64(x as u64));
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if n > self.0.len() {
            return Err(bad("truncated payload"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().map_err(|_| bad("truncated"))?,
        ))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().map_err(|_| bad("truncated"))?,
        ))
    }
    fn f32(&mut self) -> Result<f32> {
        Ok(f32::from_bits(self.u32()?))
    }
    /// A length, refused when it could not fit in the bytes left (`unit` bytes per item).
    fn len(&mut self, unit: usize) -> Result<usize> {
        let n = usize::try_from(self.u64()?).map_err(|_| bad("length overflow"))?;
        if n.saturating_mul(unit.max(1)) > self.0.len() {
            return Err(bad("length beyond the end of the payload"));
        }
        Ok(n)
    }
    fn str(&mut self) -> Result<String> {
        let n = self.len(1)?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| bad("invalid UTF-8 in a string"))
    }
    fn strs(&mut self) -> Result<Vec<String>> {
        let n = self.len(8)?;
        (0..n).map(|_| self.str()).collect()
    }
    fn u32s(&mut self) -> Result<Vec<u32>> {
        let n = self.len(4)?;
        let bytes = self.take(n * 4)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
    fn f32s(&mut self) -> Result<Vec<f32>> {
        Ok(self.u32s()?.into_iter().map(f32::from_bits).collect())
    }
    fn bytes(&mut self) -> Result<Vec<u8>> {
        let n = self.len(1)?;
        Ok(self.take(n)?.to_vec())
    }
    fn usizes(&mut self) -> Result<Vec<usize>> {
        let n = self.len(8)?;
        (0..n)
            .map(|_| {
                self.u64()
                    .and_then(|v| usize::try_from(v).map_err(|_| bad("offset overflow")))
            })
            .collect()
    }
}

impl Index {
    /// The index as snapshot bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.f32(self.params.k1);
        w.f32(self.params.prefix_weight);
        w.len(self.params.fields.len());
        self.params.fields.iter().for_each(|f| {
            w.f32(f.weight);
            w.f32(f.b);
        });
        let terms = self.vocab.terms();
        w.len(terms.len());
        terms.iter().for_each(|t| w.str(t));
        let mut words: Vec<(&str, u32)> = self.vocab.words().collect();
        words.sort_unstable(); // ascending: one canonical form, checked on load
        w.len(words.len());
        words.iter().for_each(|(word, _)| w.str(word));
        w.u32s(&words.iter().map(|&(_, id)| id).collect::<Vec<_>>());
        let (offsets, docs, impacts, max_impacts) = self.postings.parts();
        w.usizes(offsets);
        w.u32s(docs);
        w.bytes(impacts);
        w.f32s(max_impacts);
        w.u32s(&self.costs);
        w.u32s(&self.core);
        let (names, perm_offsets, required) = self.perms.parts();
        w.len(names.len());
        names.iter().for_each(|p| w.str(p));
        w.usizes(perm_offsets);
        w.u32s(required);
        w.u64(self.by_cost.min_cost);
        w.u64(self.by_cost.mean_cost);
        let payload = w.0;
        let mut out = Vec::with_capacity(HEADER + payload.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        out
    }

    /// An index from snapshot bytes; any defect is an [`Error::Snapshot`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Index> {
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return Err(bad("not a toolsift index snapshot"));
        }
        let mut head = Reader(&bytes[8..HEADER]);
        let version = head.u32()?;
        if version != VERSION {
            return Err(bad(format!(
                "snapshot format {version}; this toolsift reads format {VERSION}"
            )));
        }
        let (length, crc) = (head.u64()?, head.u32()?);
        let payload = &bytes[HEADER..];
        if payload.len() as u64 != length {
            return Err(bad(format!(
                "payload is {} bytes, header says {length}: truncated or padded",
                payload.len()
            )));
        }
        if crc32fast::hash(payload) != crc {
            return Err(bad("checksum mismatch: the file is corrupted"));
        }
        decode(&mut Reader(payload))
    }
}

fn decode(r: &mut Reader<'_>) -> Result<Index> {
    let (k1, prefix_weight) = (r.f32()?, r.f32()?);
    let nf = r.len(8)?;
    let fields = (0..nf)
        .map(|_| {
            Ok(FieldParams {
                weight: r.f32()?,
                b: r.f32()?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let params = Bm25Params {
        k1,
        fields,
        prefix_weight,
    };
    params
        .validate()
        .map_err(|e| bad(format!("parameters: {e}")))?;
    let vocab = Vocab::from_terms(r.strs()?).ok_or_else(|| bad("repeated term"))?;
    let (words, ids) = (r.strs()?, r.u32s()?);
    let vocab = vocab
        .with_words(words, ids, params.prefix_weight > 0.0)
        .ok_or_else(|| bad("malformed word list"))?;
    let (offsets, docs, impacts, max_impacts) = (r.usizes()?, r.u32s()?, r.bytes()?, r.f32s()?);
    let costs = r.u32s()?;
    let n = costs.len();
    if max_impacts.len() != vocab.len() {
        return Err(bad("postings and dictionary disagree"));
    }
    // An impact is a saturated frequency, at most k1 + 1: a larger one could only overflow scores.
    let most = (params.k1 + 1.0) * (1.0 + 1e-6);
    if max_impacts.iter().any(|&m| m > most) {
        return Err(bad("an impact above k1 + 1"));
    }
    let postings = Postings::from_parts(offsets, docs, impacts, max_impacts, n)
        .ok_or_else(|| bad("malformed postings"))?;
    let core = r.u32s()?;
    if !core.windows(2).all(|w| w[0] < w[1]) || core.last().is_some_and(|&d| d as usize >= n) {
        return Err(bad("malformed core list"));
    }
    let (names, perm_offsets, required) = (r.strs()?, r.usizes()?, r.u32s()?);
    let perms = PermissionTable::from_parts(names, perm_offsets, required, n)
        .ok_or_else(|| bad("malformed permissions"))?;
    let (min_cost, mean_cost) = (r.u64()?, r.u64()?);
    if !r.0.is_empty() {
        return Err(bad("trailing bytes after the payload"));
    }
    let index = Index::assemble(params, vocab, postings, costs, core, perms);
    // Derived values are checked, not trusted: a wrong minimum would stop packing early.
    if (min_cost, mean_cost) != (index.by_cost.min_cost, index.by_cost.mean_cost) {
        return Err(bad("cost summary disagrees with the costs"));
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{DocInput, IndexBuilder};
    use proptest::prelude::*;

    fn sample() -> Index {
        crate::index::tests::two_field_index([
            ("get_order", "Get an order by id", "orders", false, 40),
            ("help", "Search help articles", "", true, 40),
            ("refund", "Refund an order payment", "billing", false, 40),
        ])
    }

    #[test]
    fn round_trip_answers_identically() {
        let idx = sample();
        let back = Index::from_bytes(&idx.to_bytes()).unwrap();
        for who in [&[][..], &["orders"][..], &["orders", "billing"][..]] {
            let (a, b) = (idx.caller(who), back.caller(who));
            assert_eq!(
                idx.search("order refund help", &a, 10),
                back.search("order refund help", &b, 10)
            );
            assert_eq!(
                idx.select("order", &a, 100, None),
                back.select("order", &b, 100, None)
            );
        }
        assert_eq!(back.to_bytes(), idx.to_bytes());
        // an index without prefix terms loads without them
        let mut b = IndexBuilder::new(Bm25Params {
            prefix_weight: 0.0,
            ..Bm25Params::default()
        })
        .unwrap();
        let doc = DocInput {
            fields: &["multiply: Multiplies numbers"],
            perms: &[],
            cost_tokens: 5,
            core: false,
        };
        b.add(&doc).unwrap();
        let plain = b.build();
        let back = Index::from_bytes(&plain.to_bytes()).unwrap();
        assert_eq!(back.num_terms(), plain.num_terms());
        assert_eq!(back.to_bytes(), plain.to_bytes());
        let anyone = back.caller::<&str>(&[]);
        assert!(back.search("multiplication", &anyone, 5).is_empty());
    }

    #[test]
    fn foreign_future_truncated_and_corrupted_files_are_refused() {
        let bytes = sample().to_bytes();
        let mut future = bytes.clone();
        future[8] = 9;
        let mut flipped = bytes.clone();
        let last = flipped.len() - 3;
        flipped[last] ^= 0x40;
        for (bytes, why) in [
            (b"PK\x03\x04 not ours".to_vec(), "not a toolsift"),
            (future, "format 9"),
            (bytes[..bytes.len() - 5].to_vec(), "truncated"),
            (flipped, "checksum"),
        ] {
            let err = Index::from_bytes(&bytes).unwrap_err().to_string();
            assert!(err.contains(why), "{err}");
        }
    }

    /// The error of loading `payload` under `bytes`' header with a checksum that matches it.
    fn load_resealed(bytes: &[u8], payload: &[u8]) -> String {
        let mut forged = bytes[..HEADER - 4].to_vec();
        forged.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
        forged.extend_from_slice(payload);
        Index::from_bytes(&forged).unwrap_err().to_string()
    }

    #[test]
    fn a_resealed_snapshot_with_a_wrong_cost_summary_is_refused() {
        let bytes = sample().to_bytes();
        let mut payload = bytes[HEADER..].to_vec();
        let at = payload.len() - 16; // min_cost, the second-to-last field
        payload[at] ^= 1;
        let err = load_resealed(&bytes, &payload);
        assert!(err.contains("cost summary"), "{err}");
    }

    /// A forged largest impact (here f32::MAX) would make scores overflow: refused.
    #[test]
    fn a_resealed_snapshot_with_an_impossible_impact_is_refused() {
        let idx = sample();
        let bytes = idx.to_bytes();
        let mut payload = bytes[HEADER..].to_vec();
        let old = idx.postings.max_impact(0).to_le_bytes();
        let at = payload.windows(4).rposition(|x| x == old).unwrap();
        payload[at..at + 4].copy_from_slice(&f32::MAX.to_le_bytes());
        let err = load_resealed(&bytes, &payload);
        assert!(err.contains("impact above"), "{err}");
    }

    /// The words are written in ascending order, the one form a loaded snapshot re-serialises
    /// to byte for byte: a resealed file with two of them swapped is refused.
    #[test]
    fn a_resealed_snapshot_with_its_words_out_of_order_is_refused() {
        let bytes = sample().to_bytes();
        let mut payload = bytes[HEADER..].to_vec();
        let find = |p: &[u8], w: &[u8]| p.windows(w.len()).rposition(|x| x == w).unwrap();
        let (a, b) = (find(&payload, b"refund"), find(&payload, b"search"));
        assert!(a < b, "the word list is sorted");
        payload[a..a + 6].copy_from_slice(b"search");
        payload[b..b + 6].copy_from_slice(b"refund");
        let err = load_resealed(&bytes, &payload);
        assert!(err.contains("word list"), "{err}");
    }

    proptest! {
        #[test]
        fn arbitrary_payloads_with_a_valid_header_never_panic(payload in proptest::collection::vec(any::<u8>(), 0..400)) {
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&VERSION.to_le_bytes());
            bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
            bytes.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
            bytes.extend_from_slice(&payload);
            let _ = Index::from_bytes(&bytes);
        }

        #[test]
        fn mutated_snapshots_are_refused_or_load_without_panicking(at in 0usize..2000, xor in 1u8..=255) {
            let mut bytes = sample().to_bytes();
            let at = at % bytes.len();
            bytes[at] ^= xor;
            prop_assert!(Index::from_bytes(&bytes).is_err());
        }
    }
}
