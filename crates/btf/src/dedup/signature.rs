//! Type signatures: libbpf's hash and equality functions per kind, over
//! the fields that do not refer to other types.

use super::*;

pub(super) fn hash_common(t: &Type) -> i64 {
    combine(combine(combine(0, t.name_off), t.info()), t.size_or_type())
}

pub(super) fn equal_common(a: &Type, b: &Type) -> bool {
    a.name_off == b.name_off && a.info() == b.info() && a.size_or_type() == b.size_or_type()
}

/// libbpf 1.8's TYPEDEF signature: without the type it names, which pass 3
/// compares by walking the graph.
pub(super) fn hash_typedef(t: &Type) -> i64 {
    combine(combine(0, t.name_off), t.info())
}

pub(super) fn equal_typedef(a: &Type, b: &Type) -> bool {
    a.name_off == b.name_off && a.info() == b.info()
}

/// The hash of a type as it is entered in the table, a FUNC's without
/// address tags and a TYPEDEF's by libbpf 1.1; `None` for the kinds never
/// entered.
pub(super) fn plain_hash(t: &Type) -> Option<i64> {
    Some(match t.kind() {
        k if never_merged(k) => return None,
        BTF_KIND_INT | BTF_KIND_DECL_TAG => hash_int_tag(t),
        BTF_KIND_ENUM | BTF_KIND_ENUM64 => hash_enum(t),
        BTF_KIND_STRUCT | BTF_KIND_UNION => hash_struct(t),
        BTF_KIND_ARRAY => hash_array(t),
        BTF_KIND_FUNC_PROTO => hash_fnproto(t),
        _ => hash_common(t),
    })
}

/// The word after `struct btf_type` of an INT or a DECL_TAG.
pub(super) fn int_tag_word(t: &Type) -> u32 {
    match t.data {
        TypeData::Int {
            encoding,
            offset,
            bits,
            ..
        } => make_int(encoding, offset, bits),
        TypeData::DeclTag { component_idx, .. } => component_idx as u32,
        _ => 0,
    }
}

pub(super) fn hash_int_tag(t: &Type) -> i64 {
    combine(hash_common(t), int_tag_word(t))
}

pub(super) fn equal_int_tag(a: &Type, b: &Type) -> bool {
    equal_common(a, b) && int_tag_word(a) == int_tag_word(b)
}

/// Enums are hashed by name only, so that a forward enum meets full ones.
pub(super) fn hash_enum(t: &Type) -> i64 {
    combine(0, t.name_off)
}

pub(super) fn equal_enum(a: &Type, b: &Type) -> bool {
    if !equal_common(a, b) {
        return false;
    }
    match (&a.data, &b.data) {
        (TypeData::Enum { values: x, .. }, TypeData::Enum { values: y, .. }) => x == y,
        (TypeData::Enum64 { values: x, .. }, TypeData::Enum64 { values: y, .. }) => x == y,
        _ => false,
    }
}

pub(super) fn is_any_enum(t: &Type) -> bool {
    matches!(t.data, TypeData::Enum { .. } | TypeData::Enum64 { .. })
}

pub(super) fn is_enum_fwd(t: &Type) -> bool {
    is_any_enum(t) && t.vlen() == 0
}

/// A forward enum is compatible with any enum or enum64 of its name.
pub(super) fn compat_enum(a: &Type, b: &Type) -> bool {
    if !is_enum_fwd(a) && !is_enum_fwd(b) {
        return equal_enum(a, b);
    }
    a.name_off == b.name_off && is_any_enum(a) && is_any_enum(b)
}

pub(super) fn hash_struct(t: &Type) -> i64 {
    t.members().iter().fold(hash_common(t), |h, m| {
        combine(combine(h, m.name_off), m.offset)
    })
}

/// Equal but for the types the members refer to.
pub(super) fn shallow_equal_struct(a: &Type, b: &Type) -> bool {
    equal_common(a, b)
        && a.members().len() == b.members().len()
        && a.members()
            .iter()
            .zip(b.members())
            .all(|(x, y)| x.name_off == y.name_off && x.offset == y.offset)
}

pub(super) fn array_of(t: &Type) -> Option<&Array> {
    match &t.data {
        TypeData::Array(a) => Some(a),
        _ => None,
    }
}

pub(super) fn hash_array(t: &Type) -> i64 {
    let h = hash_common(t);
    match array_of(t) {
        Some(a) => combine(combine(combine(h, a.elem), a.index), a.nelems),
        None => h,
    }
}

pub(super) fn equal_array(a: &Type, b: &Type) -> bool {
    equal_common(a, b) && array_of(a) == array_of(b)
}

pub(super) fn compat_array(a: &Type, b: &Type) -> bool {
    equal_common(a, b) && array_of(a).map(|x| x.nelems) == array_of(b).map(|x| x.nelems)
}

pub(super) fn params_of(t: &Type) -> &[Param] {
    match &t.data {
        TypeData::FuncProto { params, .. } => params,
        _ => &[],
    }
}

pub(super) fn hash_fnproto(t: &Type) -> i64 {
    params_of(t)
        .iter()
        .fold(hash_common(t), |h, p| combine(combine(h, p.name_off), p.ty))
}

pub(super) fn equal_fnproto(a: &Type, b: &Type) -> bool {
    equal_common(a, b) && params_of(a) == params_of(b)
}

/// Equal but for the return and parameter types.
pub(super) fn compat_fnproto(a: &Type, b: &Type) -> bool {
    a.name_off == b.name_off
        && a.info() == b.info()
        && params_of(a)
            .iter()
            .zip(params_of(b))
            .all(|(x, y)| x.name_off == y.name_off)
}

/// The struct or union kind a FWD stands for.
pub(super) fn fwd_kind(t: &Type) -> Kind {
    if t.kind_flag {
        BTF_KIND_UNION
    } else {
        BTF_KIND_STRUCT
    }
}
