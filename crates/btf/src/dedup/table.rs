//! The table of canonical candidates, keyed by type signature hash.
//!
//! libbpf keeps its candidates in its own `hashmap` (src/hashmap.c): each
//! bucket is a singly linked list, a new entry is pushed at the head, and
//! when the table grows every bucket is walked from its head and its entries
//! pushed, one by one, at the head of their new bucket. All entries with the
//! same key always share a bucket, so for one key the candidates come out
//! newest first, and every growth reverses the order of those already there.
//!
//! Which candidate is tried first decides the result whenever more than one
//! would match: a forward-declared enum against several full enums of its
//! name, a struct equivalent to two canonical structs through forward
//! declarations, duplicates inside a split BTF's base. To give libbpf's
//! bytes, this table reproduces the order, not the buckets: it counts entries
//! the way libbpf's growth rule does and remembers, per key, how many growths
//! it has already applied, reversing lazily when a key is next touched.
//!
//! A split BTF's base enters ~100,000 candidates before the first own type
//! and a module looks up a few hundred keys: the base's entries go into a
//! chained table of flat arrays (no list per key), and a key's base
//! candidates become a list of the main table only when the key is first
//! touched, replayed in their insertion order with the growths that fell
//! between them, as `add` would have left them.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::hugepages::ZeroedWords;
use crate::types::TypeId;

/// A key's entry: a single candidate id, or (with [`MANY`] set) the index
/// of its list in `lists`. Most keys have one candidate, and a small entry
/// keeps the table in cache.
const MANY: u32 = 1 << 31;

/// The candidates of a key with several, stored oldest-to-newest as libbpf
/// would list them after an even number of growths (so that pushing is
/// appending), and the table's growth count when it was last brought up to
/// date.
#[derive(Debug)]
struct List {
    epoch: u32,
    ids: Vec<TypeId>,
}

#[derive(Debug, Default)]
pub(super) struct CandTable {
    slots: FxHashMap<i64, u32>,
    lists: Vec<List>,
    /// Entries and capacity as libbpf's hashmap counts them.
    len: usize,
    cap: usize,
    growths: u32,
    base: Arc<BaseEntries>,
}

/// The base's candidates, entered before any other and not yet in
/// `slots`. Indexed by base id: its key, and the previous base id in its
/// chain (0: none); a head per chain (a power of two of them) gives its
/// newest id. The three arrays share one zeroed buffer of words (on
/// vmlinux ~1.6 MB: one huge page, filled in random order).
#[derive(Debug, Default)]
pub(crate) struct BaseEntries {
    /// The keys (two words per id, the low one first), then the links
    /// (one per id), then the heads.
    words: ZeroedWords,
    /// Base ids, 0 included: the keys and links are this long.
    ids: usize,
    /// The base ids whose insertion grew the table, in order.
    grew_at: Vec<TypeId>,
    /// The table's counts after the base's entries.
    len: usize,
    cap: usize,
    growths: u32,
}

impl BaseEntries {
    /// The base's candidates: `hashes` gives, for ids `1..end` in
    /// increasing order, those entered and their keys.
    pub(super) fn build(end: TypeId, hashes: impl Iterator<Item = (TypeId, i64)>) -> BaseEntries {
        let ids = end as usize;
        let heads = ids.next_power_of_two().max(2);
        let mut b = BaseEntries {
            words: ZeroedWords::new(3 * ids + heads),
            ids,
            ..BaseEntries::default()
        };
        // libbpf's growth rule, as `CandTable::count_insert` counts it.
        let mut counts = CandTable::default();
        for (id, hash) in hashes {
            let growths = counts.growths;
            counts.count_insert();
            if counts.growths != growths {
                b.grew_at.push(id);
            }
            let i = id as usize;
            let Some(slot) = b.head(hash).filter(|_| i < ids) else {
                continue;
            };
            let (keys, rest) = b.words.split_at_mut(2 * ids);
            let (next, heads) = rest.split_at_mut(ids);
            keys[2 * i..2 * i + 2].copy_from_slice(&[hash as u32, (hash >> 32) as u32]);
            next[i] = heads[slot];
            heads[slot] = id;
        }
        (b.len, b.cap, b.growths) = (counts.len, counts.cap, counts.growths);
        b
    }

    fn heads(&self) -> &[u32] {
        self.words.get(3 * self.ids..).unwrap_or_default()
    }

    fn key(&self, id: TypeId) -> Option<i64> {
        let i = id as usize;
        let w = self.words.get(2 * i..2 * i + 2).filter(|_| i < self.ids)?;
        Some((u64::from(w[1]) << 32 | u64::from(w[0])) as i64)
    }

    fn next(&self, id: TypeId) -> TypeId {
        let i = id as usize;
        let link = (i < self.ids).then(|| self.words.get(2 * self.ids + i));
        link.flatten().copied().unwrap_or(0)
    }

    fn head(&self, hash: i64) -> Option<usize> {
        let heads = self.words.len().checked_sub(3 * self.ids)?;
        if heads < 2 {
            return None;
        }
        let bits = heads.trailing_zeros();
        // The top bits of a multiplicative mix: the keys are libbpf's
        // hashes, whose low bits are the last field's.
        let h = (hash as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Some((h >> (64 - bits)) as usize)
    }

    /// The table's growth count right after base id `id` was entered.
    fn growths_at(&self, id: TypeId) -> u32 {
        self.grew_at.partition_point(|&g| g <= id) as u32
    }
}

impl CandTable {
    /// libbpf's `hashmap_needs_to_grow` and `hashmap_grow`: grow before an
    /// insert that would fill the table past 75%, starting at 4 buckets.
    fn count_insert(&mut self) {
        if self.cap == 0 || (self.len + 1) * 4 / 3 > self.cap {
            self.cap = (self.cap * 2).max(4);
            self.growths += 1;
        }
        self.len += 1;
    }

    fn catch_up(list: &mut List, growths: u32) {
        if (growths - list.epoch) % 2 == 1 {
            list.ids.reverse();
        }
        list.epoch = growths;
    }

    /// A table holding the base candidates of `base`, and nothing else yet.
    pub(super) fn over_base(base: Arc<BaseEntries>) -> CandTable {
        CandTable {
            len: base.len,
            cap: base.cap,
            growths: base.growths,
            base,
            ..CandTable::default()
        }
    }

    /// Moves the base candidates of `hash` into `slots`, if it has any and
    /// is not there yet: the lists `add` would have built.
    fn take_base(&mut self, hash: i64) {
        let Some(slot) = self.base.head(hash) else {
            return;
        };
        if self.slots.contains_key(&hash) {
            return;
        }
        let b = &self.base;
        let mut ids = Vec::new();
        let mut id = b.heads().get(slot).copied().unwrap_or(0);
        while id != 0 {
            if b.key(id) == Some(hash) {
                ids.push(id);
            }
            id = b.next(id);
        }
        let Some((&first, rest)) = ids.split_last() else {
            return;
        };
        if rest.is_empty() {
            self.slots.insert(hash, first);
            return;
        }
        let mut list = List {
            epoch: b.growths_at(first),
            ids: vec![first],
        };
        for &id in rest.iter().rev() {
            Self::catch_up(&mut list, b.growths_at(id));
            list.ids.push(id);
        }
        self.slots.insert(hash, MANY | self.lists.len() as u32);
        self.lists.push(list);
    }

    /// Adds a candidate under `hash`, in front of the others (libbpf's
    /// `hashmap__append`).
    pub(super) fn add(&mut self, hash: i64, id: TypeId) {
        self.take_base(hash);
        self.count_insert();
        let growths = self.growths;
        match self.slots.entry(hash) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(id);
            }
            std::collections::hash_map::Entry::Occupied(mut e) => {
                let v = *e.get();
                if v & MANY == 0 {
                    // One id reads the same in either order.
                    e.insert(MANY | self.lists.len() as u32);
                    self.lists.push(List {
                        epoch: growths,
                        ids: vec![v, id],
                    });
                } else if let Some(list) = self.lists.get_mut((v & !MANY) as usize) {
                    Self::catch_up(list, growths);
                    list.ids.push(id);
                }
            }
        }
    }

    /// The candidates under `hash`, in the order libbpf would try them.
    pub(super) fn get(&mut self, hash: i64) -> Candidates<'_> {
        self.take_base(hash);
        let growths = self.growths;
        match self.slots.get(&hash) {
            None => Candidates::One(None),
            Some(&v) if v & MANY == 0 => Candidates::One(Some(v)),
            Some(&v) => match self.lists.get_mut((v & !MANY) as usize) {
                Some(list) => {
                    Self::catch_up(list, growths);
                    Candidates::Many(list.ids.iter().rev())
                }
                None => Candidates::One(None),
            },
        }
    }
}

/// An iterator over one key's candidates.
pub(super) enum Candidates<'a> {
    One(Option<TypeId>),
    Many(std::iter::Rev<std::slice::Iter<'a, TypeId>>),
}

impl Iterator for Candidates<'_> {
    type Item = TypeId;

    fn next(&mut self) -> Option<TypeId> {
        match self {
            Candidates::One(id) => id.take(),
            Candidates::Many(it) => it.next().copied(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A direct model of libbpf's buckets for one key: head insertion, and
    /// reversal of the list at each growth.
    #[test]
    fn order_follows_libbpf_growth() {
        let mut table = CandTable::default();
        let mut model: Vec<TypeId> = Vec::new();
        let (mut len, mut cap) = (0usize, 0usize);
        for id in 1..200u32 {
            // Every third entry goes under the key we watch.
            let key = if id % 3 == 0 { 7 } else { i64::from(id) * 1000 };
            if cap == 0 || (len + 1) * 4 / 3 > cap {
                cap = (cap * 2).max(4);
                model.reverse();
            }
            len += 1;
            if key == 7 {
                model.insert(0, id);
            }
            table.add(key, id);
            let out: Vec<TypeId> = table.get(7).collect();
            assert_eq!(out, model, "after adding {id}");
        }
    }

    /// Base candidates entered with `add_base` come out, with the own ones
    /// added after them, in the order of a table that got them all by `add`.
    #[test]
    fn base_entries_replay_add() {
        let key = |id: u32| i64::from(id % 7) * 1_000_003 - 3;
        let base_end = 300u32;
        let mut all = CandTable::default();
        // Some base types are not entered (VARs, DATASECs).
        let base = (1..base_end)
            .filter(|id| id % 11 != 0)
            .map(|id| (id, key(id)));
        for (id, k) in base.clone() {
            all.add(k, id);
        }
        let mut split = CandTable::over_base(Arc::new(BaseEntries::build(base_end, base)));
        // Keys looked up before and after own additions, and one never
        // touched until the end.
        for k in [key(1), key(2)] {
            assert_eq!(
                all.get(k).collect::<Vec<_>>(),
                split.get(k).collect::<Vec<_>>()
            );
        }
        for id in base_end..base_end + 500 {
            let k = if id % 5 == 0 {
                key(id)
            } else {
                i64::from(id) << 20
            };
            all.add(k, id);
            split.add(k, id);
            assert_eq!(
                all.get(k).collect::<Vec<_>>(),
                split.get(k).collect::<Vec<_>>()
            );
        }
        for id in 0..7 {
            let k = key(id);
            assert_eq!(
                all.get(k).collect::<Vec<_>>(),
                split.get(k).collect::<Vec<_>>()
            );
        }
        assert_eq!(split.get(12345).count(), 0);
    }
}
