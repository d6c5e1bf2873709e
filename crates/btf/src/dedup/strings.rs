//! Pass 1: string deduplication (libbpf's `btf_dedup_strings`).
//!
//! The new string section holds each referenced string once, in the order in
//! which the types first refer to them (type by type, the type's name first,
//! then its members', values' or parameters' names). Strings nothing refers
//! to disappear. In split BTF, a string the base already has is replaced by
//! the base's offset (the first one, if the base holds it twice) and is not
//! copied; the split section then starts with the first string of its own,
//! not with an empty string, exactly as libbpf 1.1 writes it.

use rustc_hash::FxHashMap;

use crate::types::Type;
use crate::{Btf, Error, Result};

/// Rewrites every string offset in `types` (the own types of `btf`) and
/// returns the new own string section.
pub(super) fn dedup_strings(btf: &Btf, types: &mut [Type]) -> Result<Vec<u8>> {
    let old = &btf.strings[..];
    let start = btf.start_str_off;
    let base = btf.base.as_deref();
    let mut new: Vec<u8> = Vec::with_capacity(old.len());
    if base.is_none() {
        new.push(0);
    }
    let mut interned: FxHashMap<&[u8], u32> = FxHashMap::default();
    interned.reserve(old.len() / 16);
    interned.insert(b"", 0);
    // Old local offset -> new global offset, so that each string is hashed
    // once however many types refer to it.
    let mut remapped = vec![u32::MAX; old.len()];
    let mut err = None;
    for t in types.iter_mut() {
        t.for_each_str_mut(|off| {
            if *off == 0 || *off < start || err.is_some() {
                return;
            }
            let local = (*off - start) as usize;
            let Some(&done) = remapped.get(local) else {
                err = Some(Error::StringOffset(*off));
                return;
            };
            if done != u32::MAX {
                *off = done;
                return;
            }
            let Some(end) = memchr::memchr(0, &old[local..]) else {
                err = Some(Error::StringUnterminated(*off));
                return;
            };
            let s = &old[local..local + end];
            let new_off = match base.and_then(|b| b.find_str_bytes(s)) {
                Some(b) => b,
                None => *interned.entry(s).or_insert_with(|| {
                    let o = start + new.len() as u32;
                    new.extend_from_slice(s);
                    new.push(0);
                    o
                }),
            };
            remapped[local] = new_off;
            *off = new_off;
        });
        if let Some(e) = err {
            return Err(e);
        }
    }
    Ok(new)
}
