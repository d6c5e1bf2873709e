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

use rustc_hash::FxHashMap;

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

    /// Room for `n` more keys: entering a base's types one by one would
    /// grow the map a dozen times (libbpf's growth count, which decides the
    /// order, is kept apart in `count_insert`).
    pub(super) fn reserve(&mut self, n: usize) {
        self.slots.reserve(n);
    }

    /// Adds a candidate under `hash`, in front of the others (libbpf's
    /// `hashmap__append`).
    pub(super) fn add(&mut self, hash: i64, id: TypeId) {
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
}
