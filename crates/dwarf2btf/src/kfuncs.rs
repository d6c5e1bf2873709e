//! kfuncs: DECL_TAG "bpf_kfunc" on the FUNC of every function listed in a
//! `.BTF_ids` set8 that is flagged as a kfunc set.
//!
//! The kernel's BTF_SET8_START(name) emits a symbol `__BTF_ID__set8__name`
//! over `struct { u32 cnt; u32 flags; struct { u32 id, flags; } pairs[]; }`
//! and each BTF_ID_FLAGS(func, f) inside it a symbol `__BTF_ID__func__f__N`.
//! A set whose flags word has BTF_SET8_KFUNCS (bit 0) lists kfuncs; a
//! function symbol inside such a set's [value, value + size) range is one.
//! Kernels before 6.9 have no such flag: they get no tags, as with pahole.

use std::collections::BTreeSet;

use btf::{Btf, Type, TypeData};
use object::{Object, ObjectSection};

use crate::load::ElfInfo;

const SET8_PREFIX: &str = "__BTF_ID__set8__";
const FUNC_PREFIX: &str = "__BTF_ID__func__";
const BTF_SET8_KFUNCS: u32 = 1;
const KFUNC_TAG: &str = "bpf_kfunc";

/// Names of the kfuncs of an ELF file.
pub fn kfunc_names(obj: &object::File<'_>, info: &ElfInfo<'_>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let Some(sec) = info.section_by_name(".BTF_ids") else {
        return names;
    };
    let Some(data) = obj
        .section_by_index(object::SectionIndex(sec.index))
        .ok()
        .and_then(|s| s.data().ok())
    else {
        return names;
    };
    let flags_at = |value: u64| -> Option<u32> {
        let off = usize::try_from(value.checked_sub(sec.addr)?.checked_add(4)?).ok()?;
        let b = data.get(off..off.checked_add(4)?)?;
        Some(u32::from_le_bytes(b.try_into().ok()?))
    };
    let in_section = |s: &&crate::load::Symbol<'_>| s.section == Some(sec.index);
    let ranges: Vec<(u64, u64)> = info
        .symbols
        .iter()
        .filter(in_section)
        .filter(|s| s.name.starts_with(SET8_PREFIX))
        .filter(|s| flags_at(s.addr).is_some_and(|f| f & BTF_SET8_KFUNCS != 0))
        .map(|s| (s.addr, s.addr.saturating_add(s.size)))
        .collect();
    if ranges.is_empty() {
        return names;
    }
    for s in info.symbols.iter().filter(in_section) {
        let Some(rest) = s.name.strip_prefix(FUNC_PREFIX) else {
            continue;
        };
        // `vfs_close__1` -> `vfs_close`: the suffix is "__" and a number.
        let Some((func, n)) = rest.rsplit_once("__") else {
            continue;
        };
        if func.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if ranges.iter().any(|&(lo, hi)| lo <= s.addr && s.addr < hi) {
            names.insert(func.to_owned());
        }
    }
    names
}

/// Adds DECL_TAG "bpf_kfunc" (component -1) to every FUNC whose name is a
/// kfunc. Returns the number of tags added.
pub fn tag_kfuncs(btf: &mut Btf, obj: &object::File<'_>, info: &ElfInfo<'_>) -> usize {
    let names = kfunc_names(obj, info);
    if names.is_empty() {
        return 0;
    }
    let funcs: Vec<u32> = btf
        .iter()
        .filter(|(_, t)| matches!(t.data, TypeData::Func { .. }))
        .filter(|(_, t)| btf.name_of(t).is_ok_and(|n| names.contains(n)))
        .map(|(id, _)| id)
        .collect();
    if funcs.is_empty() {
        // No string either: every string of an encode is used.
        return 0;
    }
    let tag = btf.add_own_str(KFUNC_TAG);
    for &id in &funcs {
        btf.add_type(Type::new(
            tag,
            TypeData::DeclTag {
                ty: id,
                component_idx: -1,
            },
        ));
    }
    funcs.len()
}
