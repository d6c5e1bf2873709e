//! String interning for builders.
//!
//! The index maps a string's hash to its offset in the section; the bytes
//! themselves stay in the section only, so interning costs a slot of two
//! words per string (at most half of the slots are used).
//! Public for builders of string sections outside a [`crate::Btf`] (the
//! DWARF encoder's per-segment tables).

use crate::hugepages::ZeroedWords;

/// An open-addressing table (linear probing, at most half full) of two
/// words per slot: the string's offset + 1 (0: a free slot) and its 32-bit
/// hash, which rejects most other strings without reading their bytes and
/// lets the table grow without reading any. A base's index (~100,000
/// strings, 2 MiB) fills one huge page: lookups in it miss no TLB.
#[derive(Clone, Debug, Default)]
pub struct StringIndex {
    slots: ZeroedWords,
    len: usize,
}

/// 32 bits of the hash of `s`.
fn hash(s: &[u8]) -> u32 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    let h = BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(s);
    (h ^ h >> 32) as u32
}

/// The bit of `s` in a filter of `2^bits` bits: from its length and its
/// first and last 8 bytes, cheaper than a hash of all its bytes and about
/// as different between names.
fn filter_bit(s: &[u8], bits: u32) -> usize {
    let (head, tail) = match (s.first_chunk::<8>(), s.last_chunk::<8>()) {
        (Some(h), Some(t)) => (u64::from_le_bytes(*h), u64::from_le_bytes(*t)),
        _ => {
            let mut w = [0; 8];
            w[..s.len()].copy_from_slice(s);
            (u64::from_le_bytes(w), 0)
        }
    };
    let key = (head.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ tail.rotate_left(29) ^ s.len() as u64)
        .wrapping_mul(0xbf58_476d_1ce4_e5b9);
    (key >> (64 - bits)) as usize
}

/// Whether the string at `off` is `s`: without finding its end first (one
/// comparison of `s.len() + 1` bytes at most).
fn is_at(section: &[u8], off: u32, s: &[u8]) -> bool {
    section
        .get(off as usize..)
        .is_some_and(|rest| rest.starts_with(s) && rest.get(s.len()).is_none_or(|&b| b == 0))
}

impl StringIndex {
    /// An index of every string of `section` (the first of duplicates).
    ///
    /// A base's table is larger than the caches, and each insert's first
    /// read of it misses: the strings go in batches, whose slots are read
    /// together first (independent loads, which the processor overlaps)
    /// and then filled, from the cache.
    pub fn build(section: &[u8]) -> StringIndex {
        const BATCH: usize = 16;
        // ~16 bytes per string in kernel BTF.
        let mut index = StringIndex::with_slots((section.len() / 8).next_power_of_two());
        let mut batch = [(0u32, 0u32, 0u32); BATCH];
        let mut off = 0usize;
        while off < section.len() {
            let mut n = 0;
            while n < BATCH && off < section.len() {
                let end = memchr::memchr(0, &section[off..]).map_or(section.len(), |e| off + e);
                batch[n] = (off as u32, end as u32, hash(&section[off..end]));
                n += 1;
                off = end + 1;
            }
            let touched = batch[..n].iter().fold(0u32, |acc, &(.., h)| {
                acc ^ index.slots.get(2 * index.home(h)).copied().unwrap_or(0)
            });
            std::hint::black_box(touched);
            for &(start, end, h) in &batch[..n] {
                let s = &section[start as usize..end as usize];
                if let Err(slot) = index.find(section, s, h) {
                    index.insert(slot, start, h);
                }
            }
        }
        index
    }

    fn with_slots(slots: usize) -> StringIndex {
        StringIndex {
            slots: ZeroedWords::new(2 * slots.max(2)),
            len: 0,
        }
    }

    /// The number of slots (a power of two, or 0).
    fn capacity(&self) -> usize {
        self.slots.len() / 2
    }

    fn mask(&self) -> usize {
        self.capacity().saturating_sub(1)
    }

    /// The first slot that `h` probes: the top bits of a multiplicative mix.
    fn home(&self, h: u32) -> usize {
        let bits = self.capacity().trailing_zeros();
        (h.wrapping_mul(0x9e37_79b9) as u64 >> (32 - bits)) as usize
    }

    /// The offset of `s` (whose hash is `h`), or the free slot where it
    /// would go.
    fn find(&self, section: &[u8], s: &[u8], h: u32) -> Result<u32, usize> {
        if self.slots.is_empty() {
            return Err(0);
        }
        let mask = self.mask();
        let mut i = self.home(h);
        loop {
            match (self.slots.get(2 * i), self.slots.get(2 * i + 1)) {
                (Some(&0), _) | (None, _) => return Err(i),
                (Some(&o), Some(&sh)) if sh == h && is_at(section, o - 1, s) => return Ok(o - 1),
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Fills free slot `slot` (from `find`), growing the table past half
    /// full.
    fn insert(&mut self, slot: usize, off: u32, h: u32) {
        if 2 * (self.len + 1) > self.capacity() {
            self.grow();
            let slot = self.free_slot(h);
            return self.insert(slot, off, h);
        }
        if let Some(pair) = self.slots.get_mut(2 * slot..2 * slot + 2) {
            pair.copy_from_slice(&[off + 1, h]);
            self.len += 1;
        }
    }

    /// The first free slot of `h`'s probe sequence.
    fn free_slot(&self, h: u32) -> usize {
        let mask = self.mask();
        let mut i = self.home(h);
        while self.slots.get(2 * i).is_some_and(|&o| o != 0) {
            i = (i + 1) & mask;
        }
        i
    }

    /// Twice the slots; entries move by their stored hash.
    fn grow(&mut self) {
        let mut bigger = StringIndex::with_slots(2 * self.capacity());
        for pair in self.slots.chunks_exact(2) {
            if pair[0] != 0 {
                let slot = bigger.free_slot(pair[1]);
                bigger.insert(slot, pair[0] - 1, pair[1]);
            }
        }
        *self = bigger;
    }

    /// Where each string of this index (over `section`) first starts in
    /// `other`: for the string at offset `o` of `section`, `at[o]` (or
    /// `u32::MAX` if `other` does not hold it).
    ///
    /// This is how a split BTF's strings meet a base's without an index of
    /// the base: one pass over `other`'s strings. A filter of 2^18 bits,
    /// one per `filter_bit` of this index's strings, rejects most strings
    /// of `other` before they are hashed (a module's few thousand strings
    /// set ~2% of it), so the pass costs about finding the ends of
    /// `other`'s strings: ~1 ms for a vmlinux's, where an index of them
    /// takes ~3 ms.
    pub fn locate_in(&self, section: &[u8], other: &[u8]) -> Vec<u32> {
        const BITS: u32 = 18;
        let mut filter = vec![0u64; 1 << (BITS - 6)];
        for pair in self.slots.chunks_exact(2).filter(|p| p[0] != 0) {
            let rest = section.get(pair[0] as usize - 1..).unwrap_or(&[]);
            let k = filter_bit(&rest[..memchr::memchr(0, rest).unwrap_or(rest.len())], BITS);
            filter[k / 64] |= 1 << (k % 64);
        }
        let mut at = vec![u32::MAX; section.len()];
        // Each string's end: its NUL, or the end of `other` for a last
        // string without one.
        let unterminated = other.last().is_some_and(|&b| b != 0);
        let ends = memchr::memchr_iter(0, other).chain(unterminated.then_some(other.len()));
        let mut start = 0;
        for end in ends {
            let s = &other[start..end];
            let k = filter_bit(s, BITS);
            if filter[k / 64] & 1 << (k % 64) != 0 {
                if let Ok(o) = self.find(section, s, hash(s)) {
                    if let Some(slot @ &mut u32::MAX) = at.get_mut(o as usize) {
                        *slot = start as u32;
                    }
                }
            }
            start = end + 1;
        }
        at
    }

    /// The offset of `s` in `section`, if it is there.
    pub fn get(&self, section: &[u8], s: &[u8]) -> Option<u32> {
        self.find(section, s, hash(s)).ok()
    }

    /// Returns the local offset of `s`, appending it to `section` if new.
    pub fn intern(&mut self, section: &mut Vec<u8>, s: &[u8]) -> u32 {
        let h = hash(s);
        match self.find(section, s, h) {
            Ok(o) => o,
            Err(slot) => {
                let off = section.len() as u32;
                section.extend_from_slice(s);
                section.push(0);
                self.insert(slot, off, h);
                off
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_keeps_the_first_of_duplicates_and_finds_every_string() {
        let section = b"\0int\0long\0int\0in\0";
        let index = StringIndex::build(section);
        assert_eq!(index.get(section, b"int"), Some(1));
        assert_eq!(index.get(section, b"long"), Some(5));
        assert_eq!(index.get(section, b"in"), Some(14));
        assert_eq!(index.get(section, b""), Some(0));
        assert_eq!(index.get(section, b"i"), None);
        assert_eq!(StringIndex::default().get(section, b"int"), None);
    }

    #[test]
    fn locate_in_finds_the_first_occurrence_of_each_string_in_another_section() {
        let mut own = Vec::new();
        let mut index = StringIndex::default();
        let names: [&[u8]; 6] = [b"int", b"task_struct", b"mine", b"in", b"t", b"end"];
        let offs = names.map(|n| index.intern(&mut own, n));
        // "in" is in `other` only as a prefix and "t" only as a suffix:
        // neither is a string of it. Its last string has no NUL.
        let other = b"\0long\0int\0task_struct\0int\0inn\0struct\0end";
        let at = index.locate_in(&own, other);
        assert_eq!(at[offs[0] as usize], 6);
        assert_eq!(at[offs[1] as usize], 10);
        assert_eq!(at[offs[2] as usize], u32::MAX);
        assert_eq!(at[offs[3] as usize], u32::MAX);
        assert_eq!(at[offs[4] as usize], u32::MAX);
        assert_eq!(at[offs[5] as usize], 37);
        assert_eq!(at.len(), own.len());
    }

    #[test]
    fn intern_grows_past_a_huge_page_and_keeps_every_offset() {
        // 300,000 strings: the table grows from empty through the size
        // where it gets a mapping of its own.
        let mut section = Vec::new();
        let mut index = StringIndex::default();
        let offs: Vec<u32> = (0..300_000u32)
            .map(|i| index.intern(&mut section, format!("s{i}").as_bytes()))
            .collect();
        for (i, &off) in offs.iter().enumerate() {
            assert_eq!(index.intern(&mut section, format!("s{i}").as_bytes()), off);
        }
        let rebuilt = StringIndex::build(&section);
        assert_eq!(rebuilt.get(&section, b"s299999"), offs.last().copied());
        assert_eq!(index.clone().get(&section, b"s12345"), Some(offs[12345]));
    }
}
