//! Base types re-emitted in split BTF: a module's named types that its base
//! already has, equal in layout down to every type they reach, yet written
//! again in the split part instead of referred to. Each copy is bytes in the
//! module, and worse, a type of its own: the verifier matches kfunc and
//! struct_ops arguments by type id, so a module's private `task_struct` is
//! not vmlinux's.
//!
//! "Equal" here is what C sees, not how an encoder spelled it: two type
//! graphs are equivalent when they have the same kinds, names, sizes,
//! members, offsets, values and element counts everywhere, with three
//! spellings of one C type taken as the same:
//! - a forward declaration (struct, union or enum without values) and the
//!   full type of its name;
//! - an array nest `T[a][b]` and the flat `T[a*b]` (pahole up to 1.24
//!   flattens, pahole 1.25 and later nest): the same elements at the same
//!   offsets;
//! - an ENUM and an ENUM64 of the same size and values (pahole 1.24 without
//!   enum64 support writes 64-bit enums as ENUM).
//!
//! The walk is the dedup's comparison made readable: it stops at the first
//! difference and says where it is (`module.core_layout.mtree: ...`), which
//! is what a person needs to see why an encoder did not refer to the base.

use rustc_hash::FxHashSet;

use crate::format::*;
use crate::types::*;
use crate::{Btf, Kind, Result};

/// A named type of a split BTF that its base has, equivalent, under the
/// same name and kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseDuplicate {
    /// The split part's copy.
    pub id: TypeId,
    /// The base's type.
    pub base_id: TypeId,
    /// The kind's name, as bpftool prints it (`STRUCT`).
    pub kind: &'static str,
    /// The type's name.
    pub name: String,
}

/// Where two type graphs first differ: the member path from the root (as
/// `name.member.member`) and what differs there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The member path from the root, `task_struct.mm*.pgd`.
    pub path: String,
    /// What differs there, both sides described.
    pub what: String,
}

/// Kinds whose names identify a type of the base.
fn named_kind(kind: Kind) -> bool {
    matches!(
        kind,
        BTF_KIND_INT
            | BTF_KIND_STRUCT
            | BTF_KIND_UNION
            | BTF_KIND_ENUM
            | BTF_KIND_ENUM64
            | BTF_KIND_TYPEDEF
            | BTF_KIND_FLOAT
    )
}

/// The split part's named types that the base has, by name and kind, each
/// with the base's type of that name it is closest to: the first that is
/// equivalent, else the first of that name and kind, and whether they are
/// equivalent. Empty for a BTF without a base.
pub fn same_named(btf: &Btf) -> Result<Vec<(BaseDuplicate, Option<Difference>)>> {
    let Some(base) = btf.base() else {
        return Ok(Vec::new());
    };
    let mut by_name: rustc_hash::FxHashMap<(&[u8], Kind), Vec<TypeId>> = Default::default();
    for (id, t) in base.iter() {
        if t.name_off != 0 && named_kind(t.kind()) {
            by_name
                .entry((base.str_bytes(t.name_off)?, kind_class(t.kind())))
                .or_default()
                .push(id);
        }
    }
    let mut out = Vec::new();
    for (id, t) in btf.iter() {
        if t.name_off == 0 || !named_kind(t.kind()) {
            continue;
        }
        let Some(cands) = by_name.get(&(btf.str_bytes(t.name_off)?, kind_class(t.kind()))) else {
            continue;
        };
        let mut first = None;
        let mut found = None;
        for &b in cands {
            // The base declared the enum without its values and the module
            // defines it: a definition the base lacks, not a copy (as a
            // struct the base has only as a FWD, which is another kind).
            if is_enum_decl(btf.get(b)?) && !is_enum_decl(t) {
                continue;
            }
            let d = first_difference(btf, id, b)?;
            if d.is_none() {
                found = Some((b, None));
                break;
            }
            first.get_or_insert((b, d));
        }
        let Some((base_id, diff)) = found.or(first) else {
            continue;
        };
        let dup = BaseDuplicate {
            id,
            base_id,
            kind: t.kind_name(),
            name: btf.name_of(t)?.to_string(),
        };
        out.push((dup, diff));
    }
    Ok(out)
}

/// The base types re-emitted in split BTF `btf`: its named types that the
/// base has under the same name and kind with an equivalent graph, in id
/// order. Empty for a BTF without a base.
pub fn base_duplicates(btf: &Btf) -> Result<Vec<BaseDuplicate>> {
    Ok(same_named(btf)?
        .into_iter()
        .filter_map(|(d, diff)| diff.is_none().then_some(d))
        .collect())
}

/// An enum declared without its values (`enum e;`).
fn is_enum_decl(t: &Type) -> bool {
    matches!(t.kind(), BTF_KIND_ENUM | BTF_KIND_ENUM64) && t.vlen() == 0
}

/// ENUM and ENUM64 are one class: the same C enum, by another encoder.
fn kind_class(kind: Kind) -> Kind {
    if kind == BTF_KIND_ENUM64 {
        BTF_KIND_ENUM
    } else {
        kind
    }
}

/// One step of the walk: the pair, the label of the edge that reached it,
/// and the step that reached it (for the path).
struct Step {
    a: TypeId,
    b: TypeId,
    label: String,
    parent: usize,
}

/// The first difference between the graphs of types `a` and `b` of `btf`
/// (any ids, split or base), depth first in member order; `None` when they
/// are equivalent (see the module's comment). Pairs met again are taken as
/// equal, which closes cycles (`struct list_head`).
pub fn first_difference(btf: &Btf, a: TypeId, b: TypeId) -> Result<Option<Difference>> {
    let mut steps = vec![Step {
        a,
        b,
        label: String::new(),
        parent: usize::MAX,
    }];
    let mut todo = vec![0usize];
    let mut seen: FxHashSet<(TypeId, TypeId)> = FxHashSet::default();
    while let Some(i) = todo.pop() {
        let (a, b) = (steps[i].a, steps[i].b);
        if a == b || !seen.insert((a, b)) {
            continue;
        }
        let mut next = Vec::new();
        if let Some(what) = compare(btf, a, b, &mut next)? {
            return Ok(Some(Difference {
                path: path(btf, &steps, i),
                what,
            }));
        }
        for (a, b, label) in next.into_iter().rev() {
            steps.push(Step {
                a,
                b,
                label,
                parent: i,
            });
            todo.push(steps.len() - 1);
        }
    }
    Ok(None)
}

/// `root.member.member` for step `i`; anonymous steps (pointers, typedefs)
/// add nothing but a `*` or `[]`.
fn path(btf: &Btf, steps: &[Step], mut i: usize) -> String {
    let mut parts = Vec::new();
    while i != usize::MAX {
        parts.push(steps[i].label.clone());
        i = steps[i].parent;
    }
    let root = btf
        .type_by_id(steps[0].a)
        .and_then(|t| btf.name_of(t).ok())
        .unwrap_or("(anon)")
        .to_string();
    parts.reverse();
    let mut s = root;
    for p in parts.into_iter().filter(|p| !p.is_empty()) {
        s.push_str(&p);
    }
    s
}

/// A short description of type `id`: kind, name, size or count.
fn describe(btf: &Btf, id: TypeId) -> String {
    if id == 0 {
        return "void".into();
    }
    let Some(t) = btf.type_by_id(id) else {
        return format!("[{id}] (missing)");
    };
    let name = btf.name_of(t).unwrap_or("?");
    let name = if name.is_empty() { "(anon)" } else { name };
    match &t.data {
        TypeData::Array(a) => format!("ARRAY[{}] of {}", a.nelems, describe_short(btf, a.elem)),
        TypeData::Ptr { ty } => format!("PTR to {}", describe_short(btf, *ty)),
        _ => format!(
            "{} '{name}' size={} vlen={}",
            t.kind_name(),
            size_of(t),
            t.vlen()
        ),
    }
}

fn describe_short(btf: &Btf, id: TypeId) -> String {
    match btf.type_by_id(id) {
        _ if id == 0 => "void".into(),
        Some(t) => {
            let name = btf.name_of(t).unwrap_or("?");
            format!(
                "{} '{}'",
                t.kind_name(),
                if name.is_empty() { "(anon)" } else { name }
            )
        }
        None => format!("[{id}]"),
    }
}

/// The size an INT, struct, union, enum or FLOAT carries; 0 for others.
fn size_of(t: &Type) -> u32 {
    match t.data {
        TypeData::Ptr { .. } => 0,
        _ => t.own_size(0).unwrap_or(0),
    }
}

/// An array nest flattened: the total element count and the innermost
/// element type (not an array). Bounded by the number of types, so that a
/// cycle of arrays in corrupt input ends.
fn flat_array(btf: &Btf, mut id: TypeId) -> (u64, TypeId) {
    let mut n = 1u64;
    for _ in 0..btf.type_count() {
        match btf.type_by_id(id).map(|t| &t.data) {
            Some(TypeData::Array(a)) => {
                n = n.saturating_mul(u64::from(a.nelems));
                id = a.elem;
            }
            _ => break,
        }
    }
    (n, id)
}

/// The enumerators of ENUM or ENUM64 `id` as (name, value) pairs, in the
/// same width whatever the kind ([`Btf::enumerators`]).
fn enumerators(btf: &Btf, id: TypeId) -> Result<Vec<(&str, u64)>> {
    Ok(btf
        .enumerators(id)?
        .iter()
        .map(|e| (e.name, e.raw))
        .collect())
}

/// Compares `a` and `b` shallowly; pushes the pairs to compare next onto
/// `next` with their labels. `Some(what)` if they differ.
fn compare(
    btf: &Btf,
    a: TypeId,
    b: TypeId,
    next: &mut Vec<(TypeId, TypeId, String)>,
) -> Result<Option<String>> {
    let (ta, tb) = (btf.get(a)?, btf.get(b)?);
    let differ = || Ok(Some(both(btf, a, b)));
    if a == 0 || b == 0 {
        return differ();
    }
    let (ka, kb) = (ta.kind(), tb.kind());
    let same_name = btf.str_bytes(ta.name_off)? == btf.str_bytes(tb.name_off)?;
    if same_name && ta.name_off != 0 && (is_fwd_of(ta, tb) || is_fwd_of(tb, ta)) {
        return Ok(None);
    }
    if !same_name {
        return differ();
    }
    match (&ta.data, &tb.data) {
        (TypeData::Array(_), TypeData::Array(_)) => {
            let (na, ea) = flat_array(btf, a);
            let (nb, eb) = flat_array(btf, b);
            if na != nb {
                return differ();
            }
            next.push((ea, eb, "[]".into()));
        }
        (TypeData::Int { .. }, TypeData::Int { .. })
        | (TypeData::Float { .. }, TypeData::Float { .. }) => {
            if ta != tb {
                return differ();
            }
        }
        (
            TypeData::Enum { .. } | TypeData::Enum64 { .. },
            TypeData::Enum { .. } | TypeData::Enum64 { .. },
        ) => return compare_enums(btf, (a, ta), (b, tb)),
        (TypeData::Struct { .. }, TypeData::Struct { .. })
        | (TypeData::Union { .. }, TypeData::Union { .. }) => {
            return compare_members(btf, (a, ta), (b, tb), next)
        }
        (
            TypeData::FuncProto {
                ret: ra,
                params: pa,
            },
            TypeData::FuncProto {
                ret: rb,
                params: pb,
            },
        ) => {
            if pa.len() != pb.len() {
                return differ();
            }
            next.push((*ra, *rb, "()".into()));
            for (i, (x, y)) in pa.iter().zip(pb.iter()).enumerate() {
                next.push((x.ty, y.ty, format!("(arg {i})")));
            }
        }
        (
            TypeData::Func {
                proto: pa,
                linkage: la,
            },
            TypeData::Func {
                proto: pb,
                linkage: lb,
            },
        ) => {
            if la != lb {
                return differ();
            }
            next.push((*pa, *pb, String::new()));
        }
        _ if ka == kb => match (ta.ref_type(), tb.ref_type()) {
            (Some(ra), Some(rb)) => {
                let label = if ka == BTF_KIND_PTR { "*" } else { "" };
                next.push((ra, rb, label.into()));
            }
            _ => {
                if ta != tb {
                    return differ();
                }
            }
        },
        _ => return differ(),
    }
    Ok(None)
}

/// `A vs B`: the two types described.
fn both(btf: &Btf, a: TypeId, b: TypeId) -> String {
    format!("{} vs {}", describe(btf, a), describe(btf, b))
}

/// A forward declaration stands for the full type of its name: whether
/// `f` is one for `full`.
fn is_fwd_of(f: &Type, full: &Type) -> bool {
    match full.kind() {
        BTF_KIND_STRUCT => f.kind() == BTF_KIND_FWD && !f.kind_flag,
        BTF_KIND_UNION => f.kind() == BTF_KIND_FWD && f.kind_flag,
        BTF_KIND_ENUM | BTF_KIND_ENUM64 => {
            matches!(f.kind(), BTF_KIND_ENUM | BTF_KIND_ENUM64) && f.vlen() == 0
        }
        _ => false,
    }
}

/// [`compare`] for two enums (ENUM or ENUM64): size and enumerators, then
/// the sign where the kinds are the same.
fn compare_enums(
    btf: &Btf,
    (a, ta): (TypeId, &Type),
    (b, tb): (TypeId, &Type),
) -> Result<Option<String>> {
    if size_of(ta) != size_of(tb) || enumerators(btf, a)? != enumerators(btf, b)? {
        return Ok(Some(both(btf, a, b)));
    }
    if ta.kind() == tb.kind() && ta.kind_flag != tb.kind_flag {
        return Ok(Some(format!(
            "{} signed {} vs signed {}",
            describe(btf, a),
            ta.kind_flag,
            tb.kind_flag
        )));
    }
    Ok(None)
}

/// [`compare`] for two structs or two unions: sizes, then each member's
/// name, offset and bitfield size; the members' types are pushed onto
/// `next`.
fn compare_members(
    btf: &Btf,
    (a, ta): (TypeId, &Type),
    (b, tb): (TypeId, &Type),
    next: &mut Vec<(TypeId, TypeId, String)>,
) -> Result<Option<String>> {
    let (ma, mb) = (ta.members(), tb.members());
    if ta.size_or_type() != tb.size_or_type() || ma.len() != mb.len() {
        return Ok(Some(both(btf, a, b)));
    }
    for (x, y) in ma.iter().zip(mb) {
        let xn = btf.str_bytes(x.name_off)?;
        if xn != btf.str_bytes(y.name_off)?
            || x.bit_offset(ta.kind_flag) != y.bit_offset(tb.kind_flag)
            || x.bitfield_size(ta.kind_flag) != y.bitfield_size(tb.kind_flag)
        {
            return Ok(Some(format!(
                "member '{}' at bit {} ({} bits) vs '{}' at bit {} ({} bits)",
                String::from_utf8_lossy(xn),
                x.bit_offset(ta.kind_flag),
                x.bitfield_size(ta.kind_flag),
                String::from_utf8_lossy(btf.str_bytes(y.name_off)?),
                y.bit_offset(tb.kind_flag),
                y.bitfield_size(tb.kind_flag),
            )));
        }
        let label = if xn.is_empty() {
            ".(anon)".to_string()
        } else {
            format!(".{}", String::from_utf8_lossy(xn))
        };
        next.push((x.ty, y.ty, label));
    }
    Ok(None)
}

/// How many names [`summary`] lists before `...`.
const SUMMARY_NAMES: usize = 10;

/// `btfkit check`'s verdict on the duplicates [`base_duplicates`] found:
/// "split BTF duplicates N base types (task_struct, ...)", or `None` when
/// there are none.
pub fn summary(dups: &[BaseDuplicate]) -> Option<String> {
    if dups.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = dups
        .iter()
        .take(SUMMARY_NAMES)
        .map(|d| d.name.as_str())
        .collect();
    if dups.len() > SUMMARY_NAMES {
        names.push("...");
    }
    Some(format!(
        "split BTF duplicates {} base types ({})",
        dups.len(),
        names.join(", ")
    ))
}
