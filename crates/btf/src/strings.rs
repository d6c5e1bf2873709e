//! String interning for builders.
//!
//! The index maps a string's hash to its offset in the section; the bytes
//! themselves stay in the section only, so interning costs one u32 per string.

use rustc_hash::FxHashMap;

#[derive(Clone, Debug, Default)]
pub(crate) struct StringIndex {
    /// hash of the bytes -> offsets of strings with that hash (almost always one).
    map: FxHashMap<u64, Vec<u32>>,
}

fn hash(s: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(s)
}

fn at(section: &[u8], off: u32) -> &[u8] {
    let rest = &section[off as usize..];
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    &rest[..end]
}

impl StringIndex {
    pub(crate) fn build(section: &[u8]) -> StringIndex {
        let mut index = StringIndex::default();
        let mut off = 0usize;
        while off < section.len() {
            let end = section[off..]
                .iter()
                .position(|&b| b == 0)
                .map_or(section.len(), |e| off + e);
            let s = &section[off..end];
            let slot = index.map.entry(hash(s)).or_default();
            if !slot.iter().any(|&o| at(section, o) == s) {
                slot.push(off as u32);
            }
            off = end + 1;
        }
        index
    }

    pub(crate) fn get(&self, section: &[u8], s: &[u8]) -> Option<u32> {
        self.map
            .get(&hash(s))?
            .iter()
            .copied()
            .find(|&o| at(section, o) == s)
    }

    /// Returns the local offset of `s`, appending it to `section` if new.
    pub(crate) fn intern(&mut self, section: &mut Vec<u8>, s: &[u8]) -> u32 {
        let slot = self.map.entry(hash(s)).or_default();
        if let Some(o) = slot.iter().copied().find(|&o| at(section, o) == s) {
            return o;
        }
        let off = section.len() as u32;
        section.extend_from_slice(s);
        section.push(0);
        slot.push(off);
        off
    }
}

/// Finds `s` as a whole string in a section without an index.
pub(crate) fn find_linear(section: &[u8], s: &[u8]) -> Option<u32> {
    let mut off = 0usize;
    while off < section.len() {
        let end = section[off..]
            .iter()
            .position(|&b| b == 0)
            .map_or(section.len(), |e| off + e);
        if &section[off..end] == s {
            return Some(off as u32);
        }
        off = end + 1;
    }
    None
}
