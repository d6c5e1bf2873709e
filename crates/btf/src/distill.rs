//! Distilled base BTF (libbpf's `btf__distill_base`, the kernel's
//! `.BTF.base`): a module's split BTF is rewritten over a minimal base that
//! describes only the base types it refers to, so that the kernel can
//! relocate it onto a vmlinux BTF other than the one it was encoded against
//! (an out-of-tree module built once, loaded into later kernels).
//!
//! Which base types are kept, and where:
//! - The base types a split type refers to, transitively, except that a
//!   *named* struct, union or enum ends the walk: the kernel matches it by
//!   name, so its members are not needed.
//! - Named INT, FLOAT, FWD, STRUCT, UNION, ENUM and ENUM64 go to the new base
//!   as bare descriptions: INT, FLOAT, FWD as they are; a struct or union as
//!   a FWD, or, when its size matters, as a struct/union of that size with no
//!   members; an enum as an ENUM of its size with no values. Size matters
//!   when a split struct or union embeds it (a member whose type leads to it
//!   through modifiers, typedefs and arrays, not through a pointer) and when
//!   the base has several composites of that name (the size picks one).
//!   Beyond libbpf, which looks only at the split's own structs and unions,
//!   the anonymous base composites that move into the split and the split's
//!   variables count as embedding too: their layout depends on that size,
//!   and libbpf itself cannot lay out (dump, resolve sizes of) a split whose
//!   anonymous union holds a FWD by value. The kernel's relocation then
//!   requires the same size, which the same kernel always has. A struct or
//!   union with bitfields (kind_flag set) is described by its size, never
//!   as a FWD: 6.12's relocation takes that kind_flag for "union" and would
//!   match the FWD to nothing (found by booting 6.12: "distilled base BTF
//!   type 'fs_context' is not mapped").
//! - Every other kept type (pointers, arrays, typedefs, modifiers, function
//!   prototypes, type tags, anonymous types in full) moves into the new
//!   split BTF, after the original split types.
//!
//! Invariant of the result: the new split BTF lists the original split
//! types first, in order; a reference to a base type points at its
//! description in the new base or its copy in the new split; other split ids
//! shift down by (old base count - new base count).

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::types::{Type, TypeData, TypeId};
use crate::{Btf, Kind};

/// What becomes of one kept base type.
#[derive(Clone, Copy, Default)]
struct Kept {
    used: bool,
    needs_size: bool,
    /// Its id in the new base or the new split.
    new_id: TypeId,
}

/// Distills `split`'s base: returns (new base, new split over it).
///
/// [`Error::Distill`] when `split` has no base (id 0), or refers to a base
/// type that can neither be described nor moved (a FUNC, VAR, DATASEC or
/// DECL_TAG of the base; its id); [`Error::TypeId`] for a reference to no type.
pub fn distill_base(split: &Btf) -> Result<(Arc<Btf>, Btf)> {
    let Some(base) = split.base() else {
        return Err(Error::Distill {
            id: 0,
            reason: "not split BTF (it has no base)".into(),
        });
    };
    let mut kept = used_base_types(split, base)?;
    keep_sizes_of_repeated_names(base, &mut kept);
    let new_base = Arc::new(new_base(base, &mut kept)?);
    let out = new_split(split, base, new_base.clone(), &mut kept)?;
    Ok((new_base, out))
}

/// Stage 1: the base types the split types need, and which need their size.
fn used_base_types(split: &Btf, base: &Btf) -> Result<Vec<Kept>> {
    let start = split.start_id();
    let mut kept = vec![Kept::default(); start as usize];
    let mut work = Vec::new();
    for (_, t) in split.iter() {
        mark_by_value(split, t, start, &mut kept);
        t.for_each_ref(|id| work.push(id));
    }
    while let Some(id) = work.pop() {
        if id == 0 || id >= start {
            continue;
        }
        let Some(k) = kept.get_mut(id as usize) else {
            return Err(Error::TypeId(id));
        };
        if k.used {
            continue;
        }
        k.used = true;
        let t = base.get(id)?;
        if !t.kind().is_c_type() {
            return Err(Error::Distill {
                id,
                reason: format!("split BTF refers to a base {}", t.kind_name()),
            });
        }
        if !is_named_fwd_candidate(t) {
            t.for_each_ref(|r| work.push(r));
        }
    }

    // Anonymous base composites move into the split in full: what they
    // embed keeps its size too.
    for id in 1..start {
        let t = base.get(id)?;
        if kept[id as usize].used && is_composite(t) && t.name_off == 0 {
            mark_by_value(split, t, start, &mut kept);
        }
    }
    Ok(kept)
}

/// Stage 2: composites whose name the base uses more than once keep their size.
fn keep_sizes_of_repeated_names(base: &Btf, kept: &mut [Kept]) {
    let mut names: HashMap<u32, u32> = HashMap::new();
    for (_, t) in base.iter() {
        if is_composite(t) && t.name_off != 0 {
            *names.entry(t.name_off).or_default() += 1;
        }
    }
    for (id, t) in base.iter() {
        if let Some(k) = kept.get_mut(id as usize) {
            if k.used && is_composite(t) && t.name_off != 0 && names.get(&t.name_off) > Some(&1) {
                k.needs_size = true;
            }
        }
    }
}

/// Stage 3: the new base: bare descriptions of the named kinds.
fn new_base(base: &Btf, kept: &mut [Kept]) -> Result<Btf> {
    let start = kept.len() as TypeId;
    let mut new_base = Btf::new();
    for id in 1..start {
        let k = kept[id as usize];
        let t = base.get(id)?;
        if !k.used || !goes_to_base(t) {
            continue;
        }
        let name = new_base.add_str(base.name_of(t)?);
        let data = match &t.data {
            TypeData::Struct { size, .. } if k.needs_size => TypeData::Struct {
                size: *size,
                members: Default::default(),
            },
            TypeData::Union { size, .. } if k.needs_size => TypeData::Union {
                size: *size,
                members: Default::default(),
            },
            // The kernel's relocation (btf_relocate.c, 6.12) reads a base
            // struct's kind_flag (bitfield offsets) as "union" when matching
            // a FWD, so a FWD never matches a struct with bitfields: such a
            // struct is described by its size instead, which matches by name.
            TypeData::Struct { size, .. } | TypeData::Union { size, .. } if t.kind_flag => {
                match t.data {
                    TypeData::Union { .. } => TypeData::Union {
                        size: *size,
                        members: Default::default(),
                    },
                    _ => TypeData::Struct {
                        size: *size,
                        members: Default::default(),
                    },
                }
            }
            TypeData::Struct { .. } => TypeData::Fwd,
            TypeData::Union { .. } => TypeData::Fwd,
            TypeData::Enum { size, .. } | TypeData::Enum64 { size, .. } => TypeData::Enum {
                size: *size,
                values: Default::default(),
            },
            other => other.clone(),
        };
        let kind_flag = match t.data {
            TypeData::Union { .. } => !k.needs_size && !t.kind_flag,
            TypeData::Fwd => t.kind_flag,
            TypeData::Struct { .. } | TypeData::Enum { .. } | TypeData::Enum64 { .. } => false,
            _ => t.kind_flag,
        };
        kept[id as usize].new_id = new_base.add_type(Type {
            name_off: name,
            kind_flag,
            data,
        });
    }
    Ok(new_base)
}

/// Stage 4: the new split: the split types, then the other kept base types,
/// their references moved to the new ids.
fn new_split(split: &Btf, base: &Btf, new_base: Arc<Btf>, kept: &mut [Kept]) -> Result<Btf> {
    let start = split.start_id();
    let mut out = Btf::new_split(new_base.clone());
    for (_, t) in split.iter() {
        let t = copy_strings(split, t, &mut out)?;
        out.add_type(t);
    }
    for id in 1..start {
        let t = base.get(id)?;
        if kept[id as usize].used && !goes_to_base(t) {
            let t = copy_strings(base, t, &mut out)?;
            kept[id as usize].new_id = out.add_type(t);
        }
    }
    let shift = start - new_base.type_count();
    let first = out.start_id();
    for id in first..out.type_count() {
        if let Some(t) = out.type_by_id_mut(id) {
            t.for_each_ref_mut(|r| {
                if *r != 0 && *r < start {
                    *r = kept.get(*r as usize).map_or(0, |k| k.new_id);
                } else if *r >= start {
                    *r -= shift;
                }
            });
        }
    }
    Ok(out)
}

fn is_composite(t: &Type) -> bool {
    matches!(t.data, TypeData::Struct { .. } | TypeData::Union { .. })
}

/// A named struct, union or enum: matched by name, its contents not needed.
fn is_named_fwd_candidate(t: &Type) -> bool {
    t.name_off != 0
        && matches!(
            t.data,
            TypeData::Struct { .. }
                | TypeData::Union { .. }
                | TypeData::Enum { .. }
                | TypeData::Enum64 { .. }
        )
}

/// Named INT, FLOAT, FWD, STRUCT, UNION, ENUM, ENUM64 live in the new base.
fn goes_to_base(t: &Type) -> bool {
    t.name_off != 0
        && matches!(
            t.data,
            TypeData::Int { .. }
                | TypeData::Float { .. }
                | TypeData::Fwd
                | TypeData::Struct { .. }
                | TypeData::Union { .. }
                | TypeData::Enum { .. }
                | TypeData::Enum64 { .. }
        )
}

/// Marks what a type holds by value: a struct's or union's members, a
/// variable's type.
fn mark_by_value(split: &Btf, t: &Type, start: TypeId, kept: &mut [Kept]) {
    match &t.data {
        TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
            for m in members {
                mark_embedded(split, m.ty, start, kept);
            }
        }
        TypeData::Var { ty, .. } => mark_embedded(split, *ty, start, kept),
        _ => {}
    }
}

/// Marks the base struct or union a member embeds (through modifiers,
/// typedefs, type tags and arrays of the split or the base; a pointer ends
/// the walk).
fn mark_embedded(split: &Btf, mut id: TypeId, start: TypeId, kept: &mut [Kept]) {
    // A chain longer than all types is a loop (bad input): stop.
    for _ in 0..split.type_count() {
        if id == 0 {
            return;
        }
        let Some(t) = split.type_by_id(id) else {
            return;
        };
        id = match &t.data {
            TypeData::Array(a) => a.elem,
            TypeData::Struct { .. } | TypeData::Union { .. } => {
                if id < start {
                    if let Some(k) = kept.get_mut(id as usize) {
                        k.needs_size = true;
                    }
                }
                return;
            }
            _ => match t.ref_type_in(Kind::is_modifier_or_typedef) {
                Some(ty) => ty,
                None => return,
            },
        };
    }
}

/// `t` with its strings re-interned from `from` into `to`.
fn copy_strings(from: &Btf, t: &Type, to: &mut Btf) -> Result<Type> {
    let mut t = t.clone();
    let mut err = None;
    t.for_each_str_mut(|off| match from.str_at(*off) {
        Ok(s) => *off = to.add_str(s),
        Err(e) => {
            err.get_or_insert(e);
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(t),
    }
}
