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
    // Old local offset -> new global offset, so that each string is hashed
    // once however many types refer to it.
    let mut remapped = vec![u32::MAX; old.len()];
    let mut new: Vec<u8> = Vec::with_capacity(old.len());
    match btf.base.as_deref() {
        Some(base) => map_to_base(base, old, start, types, &mut remapped)?,
        None => new.push(0),
    }
    let mut interned: FxHashMap<&[u8], u32> = FxHashMap::default();
    interned.reserve(old.len() / 16);
    interned.insert(b"", 0);
    for_each_own_str(types, start, |off, local| {
        if let Some(&done) = remapped.get(local).filter(|&&o| o != u32::MAX) {
            *off = done;
            return Ok(());
        }
        let s = string_at(old, local, *off)?;
        let new_off = *interned.entry(s).or_insert_with(|| {
            let o = start + new.len() as u32;
            new.extend_from_slice(s);
            new.push(0);
            o
        });
        remapped[local] = new_off;
        *off = new_off;
        Ok(())
    })?;
    Ok(new)
}

/// Calls `f(off, local)` for each string offset `off` in `types` that is
/// an own string's (not "", not the base's), whose offset in the own
/// section is `local`, until `f` fails.
fn for_each_own_str(
    types: &mut [Type],
    start: u32,
    mut f: impl FnMut(&mut u32, usize) -> Result<()>,
) -> Result<()> {
    let mut err = None;
    for t in types.iter_mut() {
        t.for_each_str_mut(|off| {
            if *off != 0 && *off >= start && err.is_none() {
                let local = (*off - start) as usize;
                err = f(off, local).err();
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
    }
    Ok(())
}

/// The string at local offset `local` of `section` (global offset `off`).
fn string_at(section: &[u8], local: usize, off: u32) -> Result<&[u8]> {
    let rest = section
        .get(local..)
        .ok_or_else(|| Error::StringOffset(off))?;
    let end = memchr::memchr(0, rest).ok_or_else(|| Error::StringUnterminated(off))?;
    Ok(&rest[..end])
}

/// Sets `remapped` of each string that `types` refer to and `base` holds
/// to the base's offset: all of them found at once, in one pass over the
/// base's strings rather than with an index of them (~100,000 strings of
/// a vmlinux, for the few thousand of a module).
fn map_to_base(
    base: &Btf,
    section: &[u8],
    start: u32,
    types: &mut [Type],
    remapped: &mut [u32],
) -> Result<()> {
    const QUEUED: u32 = u32::MAX - 1;
    let (mut locals, mut strs) = (Vec::new(), Vec::new());
    for_each_own_str(types, start, |off, local| {
        if remapped.get(local) != Some(&QUEUED) {
            strs.push(string_at(section, local, *off)?);
            locals.push(local);
            remapped[local] = QUEUED;
        }
        Ok(())
    })?;
    for (local, found) in locals.into_iter().zip(base.find_strs(&strs)) {
        remapped[local] = found.unwrap_or(u32::MAX);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Member, TypeData};
    use std::sync::Arc;

    /// A base whose string section holds "int" twice, and split BTF over
    /// it whose own strings repeat two of the base's.
    fn split() -> Btf {
        let mut base = Btf::new();
        let int = Type::new(
            1,
            TypeData::Int {
                size: 4,
                encoding: 0,
                offset: 0,
                bits: 32,
            },
        );
        base.set_contents(vec![int], b"\0int\0s\0int\0".to_vec());
        let base = Arc::new(base);
        let mut split = Btf::new_split(base);
        let own = split.add_own_str("own");
        let s = split.add_own_str("s");
        let int = split.add_own_str("int");
        split.add_type(Type::new(
            own,
            TypeData::Struct {
                size: 4,
                members: vec![Member {
                    name_off: s,
                    ty: 1,
                    offset: 0,
                }]
                .into(),
            },
        ));
        split.add_type(Type::new(int, TypeData::Typedef { ty: 1 }));
        split
    }

    #[test]
    fn a_string_the_base_holds_takes_its_first_offset_there_whether_or_not_it_is_indexed() {
        let btf = split();
        let base_len = btf.base().unwrap().strings_end();
        assert_eq!(base_len, 11);
        for indexed in [false, true] {
            if indexed {
                // find_strs then uses the base's index instead of its pass.
                assert_eq!(btf.base().unwrap().find_str("int"), Some(1));
            }
            let mut types = btf.own_types().to_vec();
            let new = dedup_strings(&btf, &mut types).unwrap();
            // Only "own" is left in the split section, without an empty
            // string before it (libbpf 1.1).
            assert_eq!(new, b"own\0");
            assert_eq!(types[0].name_off, base_len);
            let TypeData::Struct { members, .. } = &types[0].data else {
                panic!("{:?}", types[0]);
            };
            assert_eq!(members[0].name_off, 5);
            assert_eq!(types[1].name_off, 1);
        }
    }
}
