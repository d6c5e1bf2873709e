//! kfuncs: DECL_TAG "bpf_kfunc" on the FUNC of every function listed in a
//! `.BTF_ids` set8 that is flagged as a kfunc set, and what the kfunc's own
//! flags word asks for, as pahole 1.32 writes it: DECL_TAG "bpf_fastcall"
//! for KF_FASTCALL, and with `attributes` a type attribute
//! `address_space(1)` on the bpf_arena pointers KF_ARENA_RET/ARG1/ARG2 name.
//!
//! The kernel's BTF_SET8_START(name) emits a symbol `__BTF_ID__set8__name`
//! over `struct { u32 cnt; u32 flags; struct { u32 id, flags; } pairs[]; }`
//! and each BTF_ID_FLAGS(func, f) inside it a symbol `__BTF_ID__func__f__N`
//! at its pair, whose second word is the kfunc's flags.
//! A set whose flags word has BTF_SET8_KFUNCS (bit 0) lists kfuncs; a
//! function symbol inside such a set's [value, value + size) range is one.
//! Kernels before 6.9 have no such flag: they get no tags, as with pahole.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use btf::encoder_hooks::add_own_str;
use btf::{Btf, Param, Type, TypeData, TypeId};
use object::{Object, ObjectSection};

use crate::load::ElfInfo;

const SET8_PREFIX: &str = "__BTF_ID__set8__";
const FUNC_PREFIX: &str = "__BTF_ID__func__";
const BTF_SET8_KFUNCS: u32 = 1;
const KFUNC_TAG: &str = "bpf_kfunc";
const FASTCALL_TAG: &str = "bpf_fastcall";
/// The type attribute of bpf_arena pointers (`__arena`).
const ARENA_ATTR: &str = "address_space(1)";

/// kfunc flags (the kernel's include/linux/btf.h).
const KF_FASTCALL: u32 = 1 << 12;
const KF_ARENA_RET: u32 = 1 << 13;
const KF_ARENA_ARG1: u32 = 1 << 14;
const KF_ARENA_ARG2: u32 = 1 << 15;
const KF_IMPLICIT_ARGS: u32 = 1 << 16;

/// The `.BTF_ids` section of an ELF file and its kfunc sets.
struct KfuncSets<'d> {
    data: &'d [u8],
    addr: u64,
    index: usize,
    /// Where each `__BTF_ID__set8__` symbol of a kfunc set is: [value, value + size).
    ranges: Vec<(u64, u64)>,
}

impl KfuncSets<'_> {
    /// The `n`th u32 at address `value` of the section.
    fn word(&self, value: u64, n: u64) -> Option<u32> {
        let off = value
            .checked_sub(self.addr)?
            .checked_add(n.checked_mul(4)?)?;
        let off = usize::try_from(off).ok()?;
        let b = self.data.get(off..off.checked_add(4)?)?;
        Some(u32::from_le_bytes(b.try_into().ok()?))
    }
}

/// None when the file has no `.BTF_ids` or no kfunc set in it.
fn kfunc_sets<'d>(obj: &object::File<'d>, info: &ElfInfo<'_>) -> Option<KfuncSets<'d>> {
    let sec = info.section_by_name(".BTF_ids")?;
    let data = obj
        .section_by_index(object::SectionIndex(sec.index))
        .ok()?
        .data()
        .ok()?;
    let mut sets = KfuncSets {
        data,
        addr: sec.addr,
        index: sec.index,
        ranges: Vec::new(),
    };
    sets.ranges = info
        .symbols
        .iter()
        .filter(|s| s.section == Some(sec.index) && s.name.starts_with(SET8_PREFIX))
        .filter(|s| {
            sets.word(s.addr, 1)
                .is_some_and(|f| f & BTF_SET8_KFUNCS != 0)
        })
        .map(|s| (s.addr, s.addr.saturating_add(s.size)))
        .collect();
    (!sets.ranges.is_empty()).then_some(sets)
}

/// The kfuncs of an ELF file and their flags words (of the last set that
/// lists a name, in symbol-table order, as pahole). A kfunc is a
/// `__BTF_ID__func__` symbol inside a kfunc set. Its flags are the second
/// word of its pair in the image pahole reads, before resolve_btfids; in a
/// final vmlinux each set's pairs are sorted by BTF id, so a symbol no
/// longer marks its own pair and the flags are read by id instead
/// (`flags_by_id`; pahole 1.32 reads the sorted pairs by symbol, and
/// tags the wrong kfuncs bpf_fastcall). `base`: the BTF that a final
/// module's `.BTF` is split over.
pub fn kfuncs(
    obj: &object::File<'_>,
    info: &ElfInfo<'_>,
    base: Option<&Arc<Btf>>,
) -> BTreeMap<String, u32> {
    let mut kfuncs = BTreeMap::new();
    let Some(sets) = kfunc_sets(obj, info) else {
        return kfuncs;
    };
    let symbols: Vec<_> = kfunc_symbols(info, &sets).collect();
    // Later sets' flags win, as for the symbols below.
    let by_id: Option<BTreeMap<String, u32>> =
        flags_by_id(obj, &sets, &symbols, base).map(|pairs| pairs.into_iter().collect());
    for &(s, func) in &symbols {
        let flags = match &by_id {
            // A kfunc that resolve_btfids found no FUNC for keeps id 0:
            // which sorted pair is its own is not known.
            Some(by_id) => by_id.get(func).copied().unwrap_or(0),
            None => sets.word(s.addr, 1).unwrap_or(0),
        };
        kfuncs.insert(func.to_owned(), flags);
    }
    kfuncs
}

/// The `__BTF_ID__func__` symbols inside a kfunc set, each with the name
/// of its function, in symbol-table order.
fn kfunc_symbols<'i>(
    info: &'i ElfInfo<'_>,
    sets: &'i KfuncSets<'_>,
) -> impl Iterator<Item = (&'i crate::load::Symbol<'i>, &'i str)> + 'i {
    info.symbols
        .iter()
        .filter(|s| s.section == Some(sets.index))
        .filter(|s| {
            sets.ranges
                .iter()
                .any(|&(lo, hi)| lo <= s.addr && s.addr < hi)
        })
        .filter_map(|s| {
            let rest = s.name.strip_prefix(FUNC_PREFIX)?;
            // `vfs_close__1` -> `vfs_close`: the suffix is "__" and a number.
            let (func, n) = rest.rsplit_once("__")?;
            let numbered = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
            (!func.is_empty() && numbered).then_some((s, func))
        })
}

/// The kfuncs of an image whose `.BTF_ids` resolve_btfids patched (the
/// final vmlinux or module), each with its flags, in set order. Read as
/// the kernel reads a kfunc set: `cnt` pairs of (BTF id, flags) after the
/// set's 8-byte header, each id naming a FUNC of the image's own `.BTF`.
/// A module's `.BTF` is split: over its `.BTF.base` (the distilled base of
/// an out-of-tree module, which its ids count from) or else over `base`
/// (the vmlinux BTF the encode is given).
///
/// None for a pre-link image (every id still 0), one whose `.BTF` does not
/// parse, or one whose ids name a function that none of `symbols` (the
/// sets' [`kfunc_symbols`]) names (a module's `.BTF` read over another
/// kernel's base): then the flags are read by symbol, as pahole does.
fn flags_by_id(
    obj: &object::File<'_>,
    sets: &KfuncSets<'_>,
    symbols: &[(&crate::load::Symbol<'_>, &str)],
    base: Option<&Arc<Btf>>,
) -> Option<Vec<(String, u32)>> {
    let mut pairs = Vec::new();
    for &(set, _) in &sets.ranges {
        for i in 0..u64::from(sets.word(set, 0).unwrap_or(0)) {
            let (Some(id), Some(flags)) = (sets.word(set, 2 + 2 * i), sets.word(set, 3 + 2 * i))
            else {
                break;
            };
            if id != 0 {
                pairs.push((id, flags));
            }
        }
    }
    if pairs.is_empty() {
        return None;
    }
    let section = |name| obj.section_by_name(name).and_then(|s| s.data().ok());
    let data = section(".BTF")?;
    let btf = match section(".BTF.base") {
        Some(distilled) => Btf::parse_split(data, Arc::new(Btf::parse(distilled).ok()?)),
        None => match base {
            Some(base) => Btf::parse_split(data, base.clone()),
            None => Btf::parse(data),
        },
    }
    .ok()?;
    let name = |id| {
        let t = btf.type_by_id(id)?;
        if !matches!(t.data, TypeData::Func { .. }) {
            return None;
        }
        btf.name_of(t).ok()
    };
    let named: BTreeSet<&str> = symbols.iter().map(|&(_, f)| f).collect();
    let mut by_id = Vec::with_capacity(pairs.len());
    for (id, flags) in pairs {
        let name = name(id)?;
        if !named.contains(name) {
            return None;
        }
        by_id.push((name.to_owned(), flags));
    }
    Some(by_id)
}

/// The kfuncs whose flags have KF_IMPLICIT_ARGS in any set (7.x:
/// arguments the verifier supplies), in a final kernel image
/// (`flags_by_id`). resolve_btfids takes the flags of the first set8, by
/// set name, that holds the kfunc's symbol; the sets of one kfunc give it
/// the same flags in 7.2. The kernel build gives such a kfunc's FUNC the
/// prototype a BPF program calls, without them, and keeps the code's
/// prototype on a FUNC named `<kfunc>_impl` (added, or the legacy function
/// of that name); the verifier traces the kfunc with the `_impl` prototype
/// (7.2's kernel/bpf/verifier.c, btf_attach_func_proto). A pre-link image
/// has none.
pub fn with_implicit_args(obj: &object::File<'_>) -> BTreeSet<String> {
    let info = ElfInfo::new(obj);
    kfunc_sets(obj, &info)
        .and_then(|sets| {
            let symbols: Vec<_> = kfunc_symbols(&info, &sets).collect();
            flags_by_id(obj, &sets, &symbols, None)
        })
        .unwrap_or_default()
        .into_iter()
        .filter(|&(_, flags)| flags & KF_IMPLICIT_ARGS != 0)
        .map(|(name, _)| name)
        .collect()
}

/// Tags every FUNC whose name is a kfunc (component -1): "bpf_kfunc", and
/// "bpf_fastcall" when its flags have KF_FASTCALL. With `attributes`, the
/// pointers its KF_ARENA_* flags name become pointers to an
/// `address_space(1)` type attribute of their pointee. Returns the number of
/// kfunc FUNCs; `warnings` gets a kfunc whose flagged type is no pointer.
pub fn tag_kfuncs(
    btf: &mut Btf,
    obj: &object::File<'_>,
    info: &ElfInfo<'_>,
    attributes: bool,
    warnings: &mut Vec<String>,
) -> usize {
    let kfuncs = kfuncs(obj, info, btf.base());
    if kfuncs.is_empty() {
        return 0;
    }
    let funcs: Vec<(TypeId, u32)> = btf
        .iter()
        .filter(|(_, t)| matches!(t.data, TypeData::Func { .. }))
        .filter_map(|(id, t)| Some((id, *kfuncs.get(btf.name_of(t).ok()?)?)))
        .collect();
    if funcs.is_empty() {
        // No string either: every string of an encode is used.
        return 0;
    }
    if attributes {
        for &(id, flags) in &funcs {
            if flags & (KF_ARENA_RET | KF_ARENA_ARG1 | KF_ARENA_ARG2) != 0 {
                if let Err(what) = arena_pointers(btf, id, flags) {
                    let name = btf.type_by_id(id).and_then(|t| btf.name_of(t).ok());
                    warnings.push(format!(
                        "kfunc {}: {what} is no pointer, no {ARENA_ATTR} attribute",
                        name.unwrap_or("?")
                    ));
                }
            }
        }
    }
    let kfunc = add_own_str(btf, KFUNC_TAG);
    let fastcall = funcs
        .iter()
        .any(|&(_, f)| f & KF_FASTCALL != 0)
        .then(|| add_own_str(btf, FASTCALL_TAG));
    for &(id, flags) in &funcs {
        let tags = [Some(kfunc), fastcall.filter(|_| flags & KF_FASTCALL != 0)];
        for tag in tags.into_iter().flatten() {
            btf.add_type(Type::new(
                tag,
                TypeData::DeclTag {
                    ty: id,
                    component_idx: -1,
                },
            ));
        }
    }
    funcs.len()
}

/// Gives FUNC `func` a prototype whose return type (KF_ARENA_RET) and first
/// and second parameters (KF_ARENA_ARG1, ARG2) point to an
/// `address_space(1)` attribute of what they pointed to (a prototype of its
/// own when other FUNCs share its prototype). Nothing changes when a
/// flagged type is no pointer (the error names it).
fn arena_pointers(btf: &mut Btf, func: TypeId, flags: u32) -> Result<(), &'static str> {
    let Some(TypeData::Func { proto, .. }) = btf.type_by_id(func).map(|t| &t.data) else {
        return Ok(());
    };
    let proto = *proto;
    let Some(TypeData::FuncProto { ret, params }) = btf.type_by_id(proto).map(|t| &t.data) else {
        return Ok(());
    };
    let mut ret = *ret;
    let mut params: Vec<Param> = params.iter().copied().collect();
    let pointee = |btf: &Btf, id: TypeId| match btf.type_by_id(id).map(|t| &t.data) {
        Some(TypeData::Ptr { ty }) => Some(*ty),
        _ => None,
    };
    // Check every flagged type before adding any.
    let mut targets: Vec<(Option<usize>, TypeId)> = Vec::new();
    if flags & KF_ARENA_RET != 0 {
        targets.push((None, pointee(btf, ret).ok_or("the return type")?));
    }
    for (flag, i, what) in [
        (KF_ARENA_ARG1, 0, "parameter 1"),
        (KF_ARENA_ARG2, 1, "parameter 2"),
    ] {
        if flags & flag != 0 {
            let ty = params.get(i).and_then(|p| pointee(btf, p.ty)).ok_or(what)?;
            targets.push((Some(i), ty));
        }
    }
    let attr = add_own_str(btf, ARENA_ATTR);
    for (slot, ty) in targets {
        let mut tag = Type::new(attr, TypeData::TypeTag { ty });
        tag.kind_flag = true;
        let tag = btf.add_type(tag);
        let ptr = btf.add_type(Type::new(0, TypeData::Ptr { ty: tag }));
        match slot {
            None => ret = ptr,
            Some(i) => params[i].ty = ptr,
        }
    }
    let data = TypeData::FuncProto {
        ret,
        params: params.into(),
    };
    // Before the dedup a prototype is the funcs policy's own: only FUNCs
    // refer to it.
    let shared = btf.iter().any(|(id, t)| {
        id != func && matches!(t.data, TypeData::Func { proto: p, .. } if p == proto)
    });
    if shared {
        let new = btf.add_type(Type::new(0, data));
        if let Some(TypeData::Func { proto, .. }) = btf.type_by_id_mut(func).map(|t| &mut t.data) {
            *proto = new;
        }
    } else if let Some(t) = btf.type_by_id_mut(proto) {
        t.data = data;
    }
    Ok(())
}
