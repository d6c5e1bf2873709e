//! What evaluation needs to know about BTF types: sizes, the type under
//! typedefs and qualifiers, members by name (through anonymous structs and
//! unions), and types by their C names.

use btf::{Btf, Type, TypeData, TypeId};
use rustc_hash::FxHashMap;

pub const INT_SIGNED: u8 = 1;
pub const INT_CHAR: u8 = 2;
pub const INT_BOOL: u8 = 4;
/// Typedef chains longer than this are taken for a cycle.
const MAX_CHAIN: usize = 32;

/// The type under typedefs, qualifiers and type tags (id 0 stays void).
pub fn resolve(btf: &Btf, mut id: TypeId) -> TypeId {
    for _ in 0..MAX_CHAIN {
        match btf.type_by_id(id).map(|t| &t.data) {
            Some(
                TypeData::Typedef { ty }
                | TypeData::Const { ty }
                | TypeData::Volatile { ty }
                | TypeData::Restrict { ty }
                | TypeData::TypeTag { ty },
            ) => id = *ty,
            _ => return id,
        }
    }
    id
}

pub fn data(btf: &Btf, id: TypeId) -> Option<&TypeData> {
    btf.type_by_id(resolve(btf, id)).map(|t| &t.data)
}

/// Bytes a value of the type takes; `None` for void, functions and unknown ids.
pub fn size_of(btf: &Btf, id: TypeId) -> Option<u64> {
    let mut id = resolve(btf, id);
    let mut mult = 1u64;
    for _ in 0..MAX_CHAIN {
        let n = match &btf.type_by_id(id)?.data {
            TypeData::Int { size, .. }
            | TypeData::Struct { size, .. }
            | TypeData::Union { size, .. }
            | TypeData::Enum { size, .. }
            | TypeData::Enum64 { size, .. }
            | TypeData::Float { size }
            | TypeData::Datasec { size, .. } => u64::from(*size),
            TypeData::Ptr { .. } => 8,
            TypeData::Array(a) => {
                mult = mult.checked_mul(u64::from(a.nelems))?;
                id = resolve(btf, a.elem);
                continue;
            }
            _ => return None,
        };
        return mult.checked_mul(n);
    }
    None
}

/// A member found by name: its offset in bits from the start of the
/// outer type, its type, and its bitfield size (0: not a bitfield).
#[derive(Clone, Copy, Debug)]
pub struct Found {
    pub bit_offset: u64,
    pub ty: TypeId,
    pub bits: u32,
}

/// Looks `name` up in a struct or union, descending into anonymous members.
pub fn member(btf: &Btf, id: TypeId, name: &str) -> Option<Found> {
    member_at(btf, id, name, 0)
}

fn member_at(btf: &Btf, id: TypeId, name: &str, depth: usize) -> Option<Found> {
    if depth > MAX_CHAIN {
        return None;
    }
    let t = btf.type_by_id(resolve(btf, id))?;
    for m in t.members() {
        let off = u64::from(m.bit_offset(t.kind_flag));
        let mname = btf.str_at(m.name_off).unwrap_or("");
        if mname == name {
            return Some(Found {
                bit_offset: off,
                ty: m.ty,
                bits: m.bitfield_size(t.kind_flag),
            });
        }
        if mname.is_empty() {
            if let Some(f) = member_at(btf, m.ty, name, depth + 1) {
                return Some(Found {
                    bit_offset: off + f.bit_offset,
                    ..f
                });
            }
        }
    }
    None
}

/// A member path `a.b.c` from a type.
pub fn member_path(btf: &Btf, id: TypeId, path: &str) -> Option<Found> {
    let mut cur = Found {
        bit_offset: 0,
        ty: id,
        bits: 0,
    };
    for part in path.split('.') {
        let (name, indexes) = part.split_once('[').unwrap_or((part, ""));
        let f = member(btf, cur.ty, name)?;
        cur = Found {
            bit_offset: cur.bit_offset + f.bit_offset,
            ..f
        };
        // `m[2][1]`: into the array, an element at a time.
        for ix in indexes.split('[').filter(|s| !s.is_empty()) {
            let i: u64 = ix.trim_end_matches(']').parse().ok()?;
            let TypeData::Array(a) = data(btf, cur.ty)? else {
                return None;
            };
            let elem = a.elem;
            let size = size_of(btf, elem)?;
            cur = Found {
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
    let Some(t) = btf.type_by_id(resolve(btf, id)) else {
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
    let r = resolve(btf, id);
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
pub fn is_plain_char(btf: &Btf, mut id: TypeId) -> bool {
    for _ in 0..MAX_CHAIN {
        match btf.type_by_id(id) {
            Some(t) if t.is_modifier() => id = t.ref_type().unwrap_or(0),
            Some(t) => {
                return matches!(t.data, TypeData::Int { size: 1, .. })
                    && btf.name_of(t).is_ok_and(|n| n.contains("char"))
            }
            None => return false,
        }
    }
    false
}
