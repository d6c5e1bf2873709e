//! What evaluation needs to know about BTF types: sizes, the type under
//! typedefs and qualifiers, members by name (through anonymous structs and
//! unions), and types by their C names.

use btf::{Btf, Type, TypeData, TypeId};
use rustc_hash::FxHashMap;

/// BTF_INT_SIGNED: the encoding bit of a signed integer.
pub const INT_SIGNED: u8 = 1;
/// BTF_INT_CHAR: the encoding bit of a char type.
pub const INT_CHAR: u8 = 2;
/// BTF_INT_BOOL: the encoding bit of `_Bool`.
pub const INT_BOOL: u8 = 4;
use btf::query::FoundMember;

/// A member path `a.b.c` from a type.
pub fn member_path(btf: &Btf, id: TypeId, path: &str) -> Option<FoundMember> {
    let mut cur = FoundMember {
        bit_offset: 0,
        ty: id,
        bits: 0,
    };
    for part in path.split('.') {
        let (name, indexes) = part.split_once('[').unwrap_or((part, ""));
        let f = btf.find_member(cur.ty, name)?;
        cur = FoundMember {
            bit_offset: cur.bit_offset + f.bit_offset,
            ..f
        };
        // `m[2][1]`: into the array, an element at a time.
        for ix in indexes.split('[').filter(|s| !s.is_empty()) {
            let i: u64 = ix.trim_end_matches(']').parse().ok()?;
            let TypeData::Array(a) = btf.resolved_data(cur.ty)? else {
                return None;
            };
            let elem = a.elem;
            let size = btf.resolve_size(elem)?;
            cur = FoundMember {
                bit_offset: cur.bit_offset + i * size * 8,
                ty: elem,
                bits: 0,
            };
        }
    }
    Some(cur)
}

/// Every member name reachable from a type (anonymous members flattened), for completion.
pub fn member_names(btf: &Btf, id: TypeId, out: &mut Vec<String>) {
    let Some(t) = btf.type_by_id(btf.skip_mods_and_typedefs(id)) else {
        return;
    };
    for m in t.members() {
        match btf.str_at(m.name_off) {
            Ok("") => member_names(btf, m.ty, out),
            Ok(n) => out.push(n.to_owned()),
            Err(_) => {}
        }
    }
}

/// Types by C name: `struct x`, `union x`, `enum x`, and bare names of
/// typedefs, ints and floats. A complete struct wins over a forward one.
pub fn index_types(btf: &Btf) -> FxHashMap<String, TypeId> {
    let mut map: FxHashMap<String, TypeId> = FxHashMap::default();
    for (id, t) in btf.iter() {
        let Ok(name) = btf.name_of(t) else { continue };
        if name.is_empty() {
            continue;
        }
        let key = match &t.data {
            TypeData::Struct { .. } => format!("struct {name}"),
            TypeData::Union { .. } => format!("union {name}"),
            TypeData::Enum { .. } | TypeData::Enum64 { .. } => format!("enum {name}"),
            TypeData::Fwd => {
                let k = if t.kind_flag { "union" } else { "struct" };
                map.entry(format!("{k} {name}")).or_insert(id);
                continue;
            }
            TypeData::Typedef { .. } | TypeData::Int { .. } | TypeData::Float { .. } => {
                name.to_owned()
            }
            _ => continue,
        };
        let better = |old: TypeId| {
            matches!(
                btf.type_by_id(old),
                Some(Type {
                    data: TypeData::Fwd,
                    ..
                })
            )
        };
        match map.get(&key) {
            Some(&old) if !better(old) => {}
            _ => {
                map.insert(key, id);
            }
        }
    }
    map
}

/// C's spellings of the base types, as BTF names them.
pub fn canonical_base(name: &str) -> String {
    let words: Vec<&str> = name.split_whitespace().collect();
    let s = words.join(" ");
    match s.as_str() {
        "unsigned" | "unsigned int" => "unsigned int".into(),
        "signed" | "signed int" => "int".into(),
        "long" | "long int" | "signed long" | "signed long int" => "long".into(),
        "unsigned long" | "unsigned long int" | "long unsigned int" => "unsigned long".into(),
        "long long" | "long long int" | "signed long long" => "long long".into(),
        "unsigned long long" | "unsigned long long int" | "long long unsigned int" => {
            "unsigned long long".into()
        }
        "short" | "short int" | "signed short" => "short".into(),
        "unsigned short" | "unsigned short int" | "short unsigned int" => "unsigned short".into(),
        _ => s,
    }
}

/// The names GCC's DWARF (and so pahole's BTF) gives base types.
pub fn btf_base_aliases(name: &str) -> &[&'static str] {
    match name {
        "long" => &["long", "long int"],
        "unsigned long" => &["unsigned long", "long unsigned int"],
        "long long" => &["long long", "long long int"],
        "unsigned long long" => &["unsigned long long", "long long unsigned int"],
        "short" => &["short", "short int"],
        "unsigned short" => &["unsigned short", "short unsigned int"],
        "unsigned int" => &["unsigned int"],
        "int" => &["int"],
        "char" => &["char"],
        "unsigned char" => &["unsigned char"],
        "signed char" => &["signed char"],
        "_Bool" => &["_Bool"],
        _ => &[],
    }
}

/// Whether the type is an integer of one byte called some kind of char:
/// arrays of it print as strings.
pub fn is_char(btf: &Btf, id: TypeId) -> bool {
    let r = btf.skip_mods_and_typedefs(id);
    match btf.type_by_id(r) {
        Some(
            t @ Type {
                data: TypeData::Int { size: 1, .. },
                ..
            },
        ) => btf.name_of(t).is_ok_and(|n| n.contains("char")),
        _ => false,
    }
}

/// Whether the type is a char type as written (`char`, `signed char`,
/// `unsigned char`, qualifiers aside, typedefs not looked through): drgn
/// shows the string such a pointer points at, not a `u8 *`'s.
pub fn is_plain_char(btf: &Btf, id: TypeId) -> bool {
    btf.type_by_id(btf.skip_mods(id)).is_some_and(|t| {
        matches!(t.data, TypeData::Int { size: 1, .. })
            && btf.name_of(t).is_ok_and(|n| n.contains("char"))
    })
}
