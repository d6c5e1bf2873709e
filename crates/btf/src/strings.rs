//! String interning for builders.
//!
//! The index maps a string's hash to its offset in the section; the bytes
//! themselves stay in the section only, so interning costs one u32 per string.
//! Public for builders of string sections outside a [`crate::Btf`] (the
//! DWARF encoder's per-segment tables).

use rustc_hash::FxHashMap;

#[derive(Clone, Debug, Default)]
pub struct StringIndex {
    /// Hash of the bytes -> offset of the string. On a collision with a
    /// different string the next key is tried (open addressing on the key):
    /// one slot and no allocation per string.
    map: FxHashMap<u64, u32>,
}

/// The step between the keys one hash probes.
const PROBE: u64 = 0x9e37_79b9_7f4a_7c15;

fn hash(s: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(s)
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
    pub fn build(section: &[u8]) -> StringIndex {
        let mut index = StringIndex::default();
        index.map.reserve(section.len() / 16);
        let mut off = 0usize;
        while off < section.len() {
            let end = section[off..]
                .iter()
                .position(|&b| b == 0)
                .map_or(section.len(), |e| off + e);
            let s = &section[off..end];
            if let Err(key) = index.find(section, s) {
                index.map.insert(key, off as u32);
            }
            off = end + 1;
        }
        index
    }

    /// The offset of `s`, or the free key where it would go.
    fn find(&self, section: &[u8], s: &[u8]) -> Result<u32, u64> {
        let mut key = hash(s);
        loop {
            match self.map.get(&key) {
                Some(&o) if is_at(section, o, s) => return Ok(o),
                Some(_) => key = key.wrapping_add(PROBE),
                None => return Err(key),
            }
        }
    }

    /// The offset of `s` in `section`, if it is there.
    pub fn get(&self, section: &[u8], s: &[u8]) -> Option<u32> {
        self.find(section, s).ok()
    }

    /// Returns the local offset of `s`, appending it to `section` if new.
    pub fn intern(&mut self, section: &mut Vec<u8>, s: &[u8]) -> u32 {
        match self.find(section, s) {
            Ok(o) => o,
            Err(key) => {
                let off = section.len() as u32;
                section.extend_from_slice(s);
                section.push(0);
                self.map.insert(key, off);
                off
            }
        }
    }
}
