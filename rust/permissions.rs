//! Permissions: which tools a caller may use.
//!
//! Each tool requires a set of permission strings (empty: public); a caller holds a set. A tool is
//! allowed when the caller holds **every** permission the tool requires. Permission strings are
//! interned to dense [`PermId`]s at build time; a caller becomes a bitset over those ids
//! ([`CallerMask`]), so checking a tool costs one bit test per permission it requires. A caller's
//! strings that no tool requires are ignored. Any number of distinct permissions works: the mask
//! takes one bit per distinct permission in the catalog.

use std::collections::HashMap;

use crate::postings::DocId;

/// Dense id of a distinct permission string.
pub type PermId = u32;

/// The permissions each tool requires.
#[derive(Debug, Clone)]
pub struct PermissionTable {
    ids: HashMap<String, PermId>,
    /// Each permission string, by id (the inverse of `ids`).
    names: Vec<String>,
    offsets: Vec<usize>,
    required: Vec<PermId>,
    /// Per tool, the bit of a [`CallerMask`] that decides it: [`PUBLIC`] (set in every mask),
    /// [`SEVERAL`] (never set: look at `required`), or the one permission it requires. Most tools
    /// need at most one permission, so the hot-path check is one load and one bit test, without
    /// a branch that depends on the answer.
    single: Vec<u32>,
}

/// Bit `i` of a bitset over registry positions (0 past its end).
#[inline]
fn bit(words: &[u64], i: DocId) -> u64 {
    words
        .get((i / 64) as usize)
        .map_or(0, |w| w >> (i % 64) & 1)
}

/// A set of registry positions as a bitset (a caller's allowed tools or its candidates), borrowed
/// from a [`CallerMask`]: a plain slice, so a scoring loop keeps it in registers.
#[derive(Debug, Clone, Copy)]
pub struct DocMask<'a>(&'a [u64]);

impl<'a> DocMask<'a> {
    /// The set whose bit `i % 64` of word `i / 64` is set for each member `i`.
    pub fn new(words: &'a [u64]) -> Self {
        DocMask(words)
    }

    /// 1 when `doc` is in the set, else 0 (0 past its end).
    #[inline]
    pub fn get(self, doc: DocId) -> u64 {
        bit(self.0, doc)
    }

    /// The bit words.
    pub fn words(self) -> &'a [u64] {
        self.0
    }
}

/// The mask bit of tools that require nothing: set for every caller.
const PUBLIC: u32 = 0;
/// The mask bit of tools that require several permissions: never set.
const SEVERAL: u32 = 1;

/// The mask bit of permission `p`.
fn slot(p: PermId) -> u32 {
    // Past u32::MAX - 2 permissions (not reachable in memory) a tool counts as needing several,
    // whose check then fails closed.
    p.checked_add(2).unwrap_or(SEVERAL)
}

fn single_of(required: &[PermId]) -> u32 {
    match required {
        [] => PUBLIC,
        [p] => slot(*p),
        _ => SEVERAL,
    }
}

impl Default for PermissionTable {
    fn default() -> Self {
        PermissionTable {
            ids: HashMap::new(),
            names: Vec::new(),
            offsets: vec![0],
            required: Vec::new(),
            single: Vec::new(),
        }
    }
}

/// A compiled caller: the permissions it holds, as a bitset over mask bits (see
/// `PermissionTable::single`), and the answer for every tool of the catalog, as a bitset over
/// registry positions. The second is what scoring reads (one bit test per posting, from an
/// array of `n / 8` bytes that stays in cache); it is computed once, when the caller is compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerMask {
    bits: Vec<u64>,
    docs: Vec<u64>,
    /// `docs` less the tools left out of ranking for a selection (the core tools, which every
    /// selection holds anyway), so that selection scores only its candidates.
    candidates: Vec<u64>,
    /// The tools a narrowed caller is limited to (see [`CallerMask::within`]); `None`: all.
    /// Kept apart from `docs` so that the reference check (`PermissionTable::allows` on `bits`)
    /// can apply it on its own.
    scope: Option<Vec<u64>>,
}

impl CallerMask {
    /// 1 when the caller may use the tool at `doc`, else 0 (0 for a position outside the
    /// catalog the mask was compiled for).
    #[inline]
    pub fn allowed(&self, doc: DocId) -> u64 {
        self.allowed_docs().get(doc)
    }

    /// The tools the caller may use.
    pub fn allowed_docs(&self) -> DocMask<'_> {
        DocMask(&self.docs)
    }

    /// The tools the caller may use that were not left out (see [`CallerMask::leave_out`]).
    pub fn candidates(&self) -> DocMask<'_> {
        DocMask(&self.candidates)
    }

    /// The same caller narrowed to the tools of `scope` (a group of tools, for a search or a
    /// selection within it): a tool outside `scope` is neither allowed nor a candidate, except
    /// those of `kept`, which stay allowed (the core tools a selection always holds) without
    /// becoming candidates. Positions outside the catalog are ignored. Narrowing only removes
    /// tools: a tool the caller may not use never enters.
    pub fn within(&self, scope: &[DocId], kept: &[DocId]) -> CallerMask {
        let words = self.docs.len();
        let set = |docs: &[DocId]| {
            let mut out = vec![0u64; words];
            for &d in docs {
                if let Some(w) = out.get_mut((d / 64) as usize) {
                    *w |= 1 << (d % 64);
                }
            }
            out
        };
        let (inside, kept) = (set(scope), set(kept));
        let and = |a: &[u64], b: &[u64]| a.iter().zip(b).map(|(x, y)| x & y).collect::<Vec<u64>>();
        let allowed: Vec<u64> = inside.iter().zip(&kept).map(|(i, k)| i | k).collect();
        CallerMask {
            bits: self.bits.clone(),
            docs: and(&self.docs, &allowed),
            candidates: and(&self.candidates, &inside),
            scope: Some(match &self.scope {
                Some(outer) => and(outer, &allowed),
                None => allowed,
            }),
        }
    }

    /// 1 when no narrowing (see [`CallerMask::within`]) left `doc` out, else 0.
    #[inline]
    pub fn in_scope(&self, doc: DocId) -> u64 {
        self.scope.as_deref().map_or(1, |s| bit(s, doc))
    }

    /// Leaves `docs` out of [`CallerMask::candidates`] (not of [`CallerMask::allowed`]).
    pub fn leave_out(&mut self, docs: &[DocId]) {
        for &d in docs {
            if let Some(w) = self.candidates.get_mut((d / 64) as usize) {
                *w &= !(1 << (d % 64));
            }
        }
    }

    /// 1 when mask bit `s` is set, else 0.
    #[inline]
    fn bit(&self, s: u32) -> u64 {
        self.bits
            .get((s / 64) as usize)
            .map_or(0, |w| w >> (s % 64) & 1)
    }

    fn holds(&self, p: PermId) -> bool {
        self.bit(slot(p)) == 1
    }
}

impl PermissionTable {
    /// Appends the next tool's required permissions (duplicates are harmless).
    pub fn push_doc<S: AsRef<str>>(&mut self, perms: &[S]) {
        let start = self.required.len();
        for p in perms {
            let id = match self.ids.get(p.as_ref()) {
                Some(&id) => id,
                None => {
                    let id = self.names.len() as PermId;
                    self.ids.insert(p.as_ref().to_owned(), id);
                    self.names.push(p.as_ref().to_owned());
                    id
                }
            };
            if !self.required[start..].contains(&id) {
                self.required.push(id);
            }
        }
        self.offsets.push(self.required.len());
        self.single.push(single_of(&self.required[start..]));
    }

    /// The mask of a caller holding `perms`: O(tools), done once per caller.
    pub fn caller<S: AsRef<str>>(&self, perms: &[S]) -> CallerMask {
        let mut bits = vec![0u64; (self.ids.len() + 2).div_ceil(64)];
        bits[0] |= 1 << PUBLIC;
        for p in perms {
            if let Some(&id) = self.ids.get(p.as_ref()) {
                let s = slot(id);
                bits[(s / 64) as usize] |= 1 << (s % 64);
            }
        }
        let mut caller = CallerMask {
            bits,
            docs: vec![0u64; self.single.len().div_ceil(64)],
            candidates: Vec::new(),
            scope: None,
        };
        for d in 0..self.single.len() {
            let bit = self.allowed(&caller, d as DocId);
            caller.docs[d / 64] |= bit << (d % 64);
        }
        caller.candidates = caller.docs.clone();
        caller
    }

    /// How many tools of `docs` (all in the table) require other permissions than the tool
    /// before them (the same set listed in another order counts as other).
    pub fn requirement_changes(&self, docs: &[DocId]) -> usize {
        let Some((&first, rest)) = docs.split_first() else {
            return 0;
        };
        let required = |d: usize| &self.required[self.offsets[d]..self.offsets[d + 1]];
        let (mut prev, mut changes) = (first as usize, 0);
        for &d in rest {
            let d = d as usize;
            let (a, b) = (self.single[prev], self.single[d]);
            changes += usize::from(a != b || (a == SEVERAL && required(prev) != required(d)));
            prev = d;
        }
        changes
    }

    /// True when the caller holds every permission `doc` requires (from the table: the
    /// reference that the compiled [`CallerMask::allowed`] is made from and tested against).
    #[inline]
    pub fn allows(&self, caller: &CallerMask, doc: DocId) -> bool {
        self.allowed(caller, doc) == 1
    }

    /// 1 when the caller holds every permission `doc` requires, else 0. The only branch is on
    /// whether the tool needs several permissions, which does not depend on the caller.
    #[inline]
    pub fn allowed(&self, caller: &CallerMask, doc: DocId) -> u64 {
        let d = doc as usize;
        match self.single[d] {
            SEVERAL => u64::from(
                self.required[self.offsets[d]..self.offsets[d + 1]]
                    .iter()
                    .all(|&p| caller.holds(p)),
            ),
            s => caller.bit(s),
        }
    }

    /// `(names by id, offsets, required ids)`, for snapshots.
    pub fn parts(&self) -> (&[String], &[usize], &[PermId]) {
        (&self.names, &self.offsets, &self.required)
    }

    /// The permissions `doc` requires, in the order they were first given for it.
    pub fn required(&self, doc: DocId) -> impl Iterator<Item = &str> {
        let d = doc as usize;
        self.required[self.offsets[d]..self.offsets[d + 1]]
            .iter()
            .map(|&p| self.names[p as usize].as_str())
    }

    /// Heap bytes held by the table (hash map entries estimated from its capacity).
    pub fn heap_bytes(&self) -> usize {
        let strings: usize = self.names.iter().map(String::capacity).sum();
        let entry = std::mem::size_of::<(String, PermId)>() + 1;
        2 * strings
            + self.ids.capacity() * entry
            + self.names.capacity() * std::mem::size_of::<String>()
            + self.offsets.capacity() * std::mem::size_of::<usize>()
            + self.required.capacity() * std::mem::size_of::<PermId>()
            + self.single.capacity() * std::mem::size_of::<u32>()
    }

    /// A table from its parts, checked like [`Postings::from_parts`](crate::postings::Postings::from_parts).
    pub fn from_parts(
        names: Vec<String>,
        offsets: Vec<usize>,
        required: Vec<PermId>,
        num_docs: usize,
    ) -> Option<Self> {
        let n = names.len();
        let ids: HashMap<String, PermId> = names
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), i as PermId))
            .collect();
        let ok = ids.len() == n
            && offsets.len() == num_docs + 1
            && offsets.first() == Some(&0)
            && offsets.last() == Some(&required.len())
            && offsets.windows(2).all(|w| w[0] <= w[1])
            && required.iter().all(|&p| (p as usize) < n);
        if !ok {
            return None;
        }
        let single = offsets
            .windows(2)
            .map(|w| single_of(&required[w[0]..w[1]]))
            .collect();
        Some(PermissionTable {
            ids,
            names,
            offsets,
            required,
            single,
        })
    }

    /// Number of distinct permission strings in the catalog.
    pub fn num_permissions(&self) -> usize {
        self.ids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> PermissionTable {
        let mut t = PermissionTable::default();
        t.push_doc::<&str>(&[]);
        t.push_doc(&["crm.read"]);
        t.push_doc(&["crm.read", "billing.refund"]);
        t
    }

    #[test]
    fn public_tools_are_allowed_to_everyone() {
        let t = table();
        assert!(t.allows(&t.caller::<&str>(&[]), 0));
    }

    #[test]
    fn a_tool_needs_every_permission_it_requires() {
        let t = table();
        let crm = t.caller(&["crm.read"]);
        assert!(t.allows(&crm, 1));
        assert!(!t.allows(&crm, 2));
        assert!(t.allows(&t.caller(&["billing.refund", "crm.read", "unknown"]), 2));
    }

    #[test]
    fn the_compiled_answer_of_every_tool_matches_the_table() {
        let mut t = table();
        for i in 0..200 {
            match i % 3 {
                0 => t.push_doc::<&str>(&[]),
                1 => t.push_doc(&[format!("p{}", i % 7)]),
                _ => t.push_doc(&[format!("p{}", i % 5), format!("p{}", i % 11)]),
            }
        }
        for held in [
            vec![],
            vec!["crm.read"],
            vec!["p1", "p3", "p4", "crm.read", "p10"],
        ] {
            let caller = t.caller(&held);
            for d in 0..203 {
                assert_eq!(
                    caller.allowed(d) == 1,
                    t.allows(&caller, d),
                    "tool {d}, {held:?}"
                );
            }
            // positions past the catalog the mask was compiled for are refused
            assert_eq!(caller.allowed(203), 0);
            assert_eq!(caller.allowed(DocId::MAX), 0);
        }
    }

    #[test]
    fn each_tool_lists_the_permissions_it_requires() {
        let t = table();
        let of = |d| t.required(d).collect::<Vec<_>>();
        assert_eq!(of(0), Vec::<&str>::new());
        assert_eq!(of(2), ["crm.read", "billing.refund"]);
        let (names, offsets, required) = t.parts();
        let back =
            PermissionTable::from_parts(names.to_vec(), offsets.to_vec(), required.to_vec(), 3)
                .unwrap();
        assert_eq!(back.required(2).collect::<Vec<_>>(), of(2));
        assert_eq!(back.required(1).collect::<Vec<_>>(), ["crm.read"]);
    }

    #[test]
    fn requirements_change_where_the_permission_lists_differ() {
        let mut t = table();
        t.push_doc(&["crm.read"]);
        t.push_doc(&["billing.refund", "crm.read"]);
        t.push_doc(&["crm.read", "billing.refund"]);
        t.push_doc::<&str>(&[]);
        // 0 public, 1 crm.read, 2 crm.read+billing.refund, 3 crm.read,
        // 4 billing.refund+crm.read, 5 the same as 2, 6 public
        assert_eq!(t.requirement_changes(&[]), 0);
        assert_eq!(t.requirement_changes(&[4]), 0);
        assert_eq!(t.requirement_changes(&[1, 3]), 0);
        assert_eq!(t.requirement_changes(&[2, 5, 6]), 1);
        assert_eq!(t.requirement_changes(&[0, 6, 1, 3, 2]), 2);
        // the same set in another order counts as a change (it only decides how a list is
        // walked)
        assert_eq!(t.requirement_changes(&[2, 4, 5]), 2);
    }

    #[test]
    fn ten_thousand_distinct_permissions_work() {
        let mut t = PermissionTable::default();
        let names: Vec<String> = (0..10_000).map(|i| format!("perm.{i}")).collect();
        for n in &names {
            t.push_doc(std::slice::from_ref(n));
        }
        assert_eq!(t.num_permissions(), 10_000);
        let caller = t.caller(&names[9_000..]);
        assert!(!t.allows(&caller, 8_999));
        assert!(t.allows(&caller, 9_999));
    }
}
