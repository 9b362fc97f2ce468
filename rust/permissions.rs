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
    offsets: Vec<usize>,
    required: Vec<PermId>,
}

impl Default for PermissionTable {
    fn default() -> Self {
        PermissionTable {
            ids: HashMap::new(),
            offsets: vec![0],
            required: Vec::new(),
        }
    }
}

/// The permissions a caller holds, as a bitset over [`PermId`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerMask {
    bits: Vec<u64>,
}

impl CallerMask {
    fn holds(&self, p: PermId) -> bool {
        let (word, bit) = ((p / 64) as usize, p % 64);
        self.bits.get(word).is_some_and(|w| w >> bit & 1 == 1)
    }
}

impl PermissionTable {
    /// Appends the next tool's required permissions (duplicates are harmless).
    pub fn push_doc<S: AsRef<str>>(&mut self, perms: &[S]) {
        let start = self.required.len();
        for p in perms {
            let next = self.ids.len() as PermId;
            let id = *self.ids.entry(p.as_ref().to_owned()).or_insert(next);
            if !self.required[start..].contains(&id) {
                self.required.push(id);
            }
        }
        self.offsets.push(self.required.len());
    }

    /// The mask of a caller holding `perms`.
    pub fn caller<S: AsRef<str>>(&self, perms: &[S]) -> CallerMask {
        let mut bits = vec![0u64; self.ids.len().div_ceil(64)];
        for p in perms {
            if let Some(&id) = self.ids.get(p.as_ref()) {
                bits[(id / 64) as usize] |= 1 << (id % 64);
            }
        }
        CallerMask { bits }
    }

    /// True when the caller holds every permission `doc` requires.
    #[inline]
    pub fn allows(&self, caller: &CallerMask, doc: DocId) -> bool {
        let d = doc as usize;
        self.required[self.offsets[d]..self.offsets[d + 1]]
            .iter()
            .all(|&p| caller.holds(p))
    }

    /// `(names by id, offsets, required ids)`, for snapshots.
    pub fn parts(&self) -> (Vec<&str>, &[usize], &[PermId]) {
        let mut names = vec![""; self.ids.len()];
        for (name, &id) in &self.ids {
            names[id as usize] = name;
        }
        (names, &self.offsets, &self.required)
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
            .into_iter()
            .enumerate()
            .map(|(i, p)| (p, i as PermId))
            .collect();
        let ok = ids.len() == n
            && offsets.len() == num_docs + 1
            && offsets.first() == Some(&0)
            && offsets.last() == Some(&required.len())
            && offsets.windows(2).all(|w| w[0] <= w[1])
            && required.iter().all(|&p| (p as usize) < n);
        ok.then_some(PermissionTable {
            ids,
            offsets,
            required,
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
