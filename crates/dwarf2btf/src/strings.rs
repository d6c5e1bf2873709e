//! The string section of a BTF under construction (one per segment, one for
//! the output).
//!
//! Every string is stored once. In split BTF (a module's), a string the
//! base BTF has is stored too: the dedup's string pass maps each such
//! string to the base's offset, all of them in one pass over the base's
//! strings, where a lookup per string here would need an index of the
//! whole base per process. Units of a segment write into the segment's
//! table directly, so their strings are interned once, not once per unit
//! and again per segment. Names that are .debug_str offsets (DW_FORM_strp)
//! are cached by that offset: the linker merges equal strings of
//! .debug_str, so the cache answers most names without hashing their
//! bytes.

use std::sync::Arc;

use btf::encoder_hooks::StringIndex;
use btf::Btf;
use rustc_hash::FxHashMap;

/// An interning string table whose offsets are those of the finished
/// BTF: with a base, they continue the base's string section, as in
/// split BTF. Offset 0 is the empty string.
pub struct Strings {
    base: Option<Arc<Btf>>,
    /// Offset of the first own string: the base's string section size.
    start: u32,
    /// Own strings, starting with the empty string.
    bytes: Vec<u8>,
    index: StringIndex,
    /// .debug_str offset -> offset here (u32 keys: a smaller table, and
    /// this lookup runs for most DIEs; larger offsets skip the cache).
    strp: FxHashMap<u32, u32>,
}

impl Strings {
    /// An empty table (only the empty string), split over `base` when
    /// given: its first own string gets the offset just past the base's
    /// string section.
    pub fn new(base: Option<Arc<Btf>>) -> Strings {
        let start = base.as_ref().map_or(0, |b| b.strings_end());
        Strings {
            base,
            start,
            bytes: vec![0],
            index: StringIndex::default(),
            strp: FxHashMap::default(),
        }
    }

    /// The offset of `s`, added if new. The empty string is 0.
    pub fn add(&mut self, s: &[u8]) -> u32 {
        if s.is_empty() {
            return 0;
        }
        self.start + self.index.intern(&mut self.bytes, s)
    }
    /// The offset of the string at .debug_str offset `strp`; `bytes` reads
    /// it when it is not cached yet.
    pub fn add_strp<'d>(&mut self, strp: usize, bytes: impl FnOnce() -> Option<&'d [u8]>) -> u32 {
        let Ok(key) = u32::try_from(strp) else {
            return bytes().map_or(0, |s| self.add(s));
        };
        if let Some(&off) = self.strp.get(&key) {
            return off;
        }
        let off = bytes().map_or(0, |s| self.add(s));
        self.strp.insert(key, off);
        off
    }

    /// The string at `off` ("" when out of range).
    pub fn get(&self, off: u32) -> &[u8] {
        match off.checked_sub(self.start) {
            Some(own) => self.own(own),
            None => self
                .base
                .as_ref()
                .and_then(|b| b.str_bytes(off).ok())
                .unwrap_or(&[]),
        }
    }

    fn own(&self, off: u32) -> &[u8] {
        let rest = self.bytes.get(off as usize..).unwrap_or(&[]);
        &rest[..memchr::memchr(0, rest).unwrap_or(rest.len())]
    }

    /// The base BTF the offsets continue, if any.
    pub fn base(&self) -> Option<&Arc<Btf>> {
        self.base.as_ref()
    }

    /// The own string section and its index (local offsets, as
    /// [`btf::Btf::set_contents_indexed`] takes it).
    pub fn into_indexed(self) -> (Vec<u8>, StringIndex) {
        (self.bytes, self.index)
    }
}
