//! Questions about types that every reader of BTF asks: the type under
//! typedefs and qualifiers, a type's size, a type by name and kind, a
//! struct's members with their bit offsets, an enum's values.
//!
//! They are methods of [`Btf`], and look through to the base of split BTF.
//! Every walk along references is bounded ([`MAX_RESOLVE_DEPTH`]), so that
//! BTF with a reference loop (which validation rejects) gives `None`
//! rather than a hang.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use btf::Kind;
//! let btf = btf::load_file(std::path::Path::new(btf::SYSFS_VMLINUX), None)?;
//! let task = btf.find_by_name_kind("task_struct", Kind::STRUCT).expect("task_struct");
//! println!("{} bytes", btf.resolve_size(task).unwrap_or(0));
//! for m in btf.members(task) {
//!     let m = m?;
//!     println!("{:>8} {}", m.bit_offset, m.name);
//! }
//! # Ok(())
//! # }
//! ```

use crate::types::{Type, TypeData, TypeId};
use crate::{Btf, Kind, Result};

/// How many typedefs, qualifiers and arrays a walk follows before it
/// takes the chain for a loop (libbpf's `MAX_RESOLVE_DEPTH`).
pub const MAX_RESOLVE_DEPTH: usize = 32;

/// One member of a struct or union, as [`Btf::members`] gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberInfo<'a> {
    /// The member's name, "" when anonymous.
    pub name: &'a str,
    /// The member's type.
    pub ty: TypeId,
    /// Offset from the start of the struct in bits.
    pub bit_offset: u32,
    /// Width of a bitfield in bits; 0 for a member that is not one.
    pub bitfield_size: u32,
}

/// A member found by name ([`Btf::find_member`]), possibly inside
/// anonymous structs and unions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FoundMember {
    /// Offset in bits from the start of the outer type.
    pub bit_offset: u64,
    /// The member's type.
    pub ty: TypeId,
    /// Width of a bitfield in bits; 0 for a member that is not one.
    pub bits: u32,
}

/// One enumerator of an ENUM or ENUM64, as [`Btf::enumerators`] gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Enumerator<'a> {
    /// The enumerator's name.
    pub name: &'a str,
    /// Its value, sign-extended from the enum's size when the enum is
    /// signed (kind_flag), zero-extended otherwise; [`Enumerator::value`]
    /// reads it as C does.
    pub raw: u64,
    /// Whether the enum is signed.
    pub signed: bool,
}

impl Enumerator<'_> {
    /// The value as a signed number when the enum is signed.
    pub fn value(&self) -> i128 {
        c_number(self.raw, self.signed)
    }
}

/// An enumerator's 64-bit word ([`Type::enum_values`]) as the number C
/// reads: negative when the enum is signed and the top bit is set.
pub(crate) fn c_number(raw: u64, signed: bool) -> i128 {
    if signed {
        i128::from(raw as i64)
    } else {
        i128::from(raw)
    }
}

impl Type {
    /// The size a type of this kind has by itself: INT, STRUCT, UNION,
    /// ENUM, ENUM64, FLOAT and DATASEC carry it, a pointer has
    /// `ptr_size`; other kinds have none of their own.
    pub fn own_size(&self, ptr_size: u32) -> Option<u32> {
        match &self.data {
            TypeData::Int { size, .. }
            | TypeData::Struct { size, .. }
            | TypeData::Union { size, .. }
            | TypeData::Enum { size, .. }
            | TypeData::Enum64 { size, .. }
            | TypeData::Datasec { size, .. }
            | TypeData::Float { size } => Some(*size),
            TypeData::Ptr { .. } => Some(ptr_size),
            _ => None,
        }
    }
}

impl Btf {
    /// The type under typedefs, qualifiers and type tags (libbpf's
    /// `skip_mods_and_typedefs`). Void, an id out of range and any other
    /// kind are returned as they are; so is the type a loop of typedefs
    /// reached after [`MAX_RESOLVE_DEPTH`] steps.
    pub fn skip_mods_and_typedefs(&self, id: TypeId) -> TypeId {
        self.skip_while(id, |k| k.is_modifier_or_typedef())
    }

    /// The type under qualifiers and type tags, typedefs not looked
    /// through: the type as written (`const char` is `char`, `u8` stays
    /// `u8`).
    pub fn skip_mods(&self, id: TypeId) -> TypeId {
        self.skip_while(id, Kind::is_modifier)
    }

    fn skip_while(&self, mut id: TypeId, skip: impl Fn(Kind) -> bool) -> TypeId {
        for _ in 0..MAX_RESOLVE_DEPTH {
            match self.type_by_id(id) {
                Some(t) if skip(t.kind()) => id = t.ref_type().unwrap_or(0),
                _ => break,
            }
        }
        id
    }

    /// The type [`Btf::skip_mods_and_typedefs`] gives, `None` for void and
    /// ids out of range.
    pub fn resolved_type(&self, id: TypeId) -> Option<&Type> {
        self.type_by_id(self.skip_mods_and_typedefs(id))
    }

    /// What [`Btf::resolved_type`] is.
    pub fn resolved_data(&self, id: TypeId) -> Option<&TypeData> {
        self.resolved_type(id).map(|t| &t.data)
    }

    /// The size in bytes of a value of the type, through typedefs,
    /// qualifiers, VARs, DECL_TAGs and arrays, a pointer taking
    /// `ptr_size` bytes (libbpf's `btf__resolve_size`). `None` for void, a
    /// forward declaration, a function, a chain longer than
    /// [`MAX_RESOLVE_DEPTH`], or a size past `u32::MAX`.
    pub fn resolve_size_with(&self, mut id: TypeId, ptr_size: u32) -> Option<u64> {
        let mut nelems: u64 = 1;
        let mut size = None;
        for _ in 0..MAX_RESOLVE_DEPTH {
            let t = self.type_by_id(id)?;
            if let Some(s) = t.own_size(ptr_size) {
                size = Some(u64::from(s));
                break;
            }
            let through =
                |k: Kind| k.is_modifier_or_typedef() || matches!(k, Kind::VAR | Kind::DECL_TAG);
            if let Some(ty) = t.ref_type_in(through) {
                id = ty;
                continue;
            }
            match &t.data {
                TypeData::Array(a) => {
                    if nelems != 0 && u64::from(a.nelems) > u64::from(u32::MAX) / nelems {
                        return None;
                    }
                    nelems *= u64::from(a.nelems);
                    id = a.elem;
                }
                _ => return None,
            }
        }
        let size = size?;
        if nelems != 0 && size > u64::from(u32::MAX) / nelems {
            return None;
        }
        Some(nelems * size)
    }

    /// [`Btf::resolve_size_with`] for 8-byte pointers (every 64-bit kernel).
    pub fn resolve_size(&self, id: TypeId) -> Option<u64> {
        self.resolve_size_with(id, 8)
    }

    /// The first type, in id order from the base's, with this name and
    /// kind (libbpf's `btf__find_by_name_kind`).
    pub fn find_by_name_kind(&self, name: &str, kind: Kind) -> Option<TypeId> {
        self.find_all_by_name_kind(name, kind).next()
    }

    /// Every type with this name and kind, in id order from the base's.
    pub fn find_all_by_name_kind<'a>(
        &'a self,
        name: &'a str,
        kind: Kind,
    ) -> impl Iterator<Item = TypeId> + 'a {
        // A name that is in no string section names no type: no walk.
        let present = name.is_empty() || self.find_str(name).is_some();
        (1..self.type_count()).filter(move |&id| {
            present
                && self.type_by_id(id).is_some_and(|t| {
                    t.kind() == kind && self.str_at(t.name_off).is_ok_and(|n| n == name)
                })
        })
    }

    /// The members of the STRUCT or UNION `id` is, or is under typedefs
    /// and qualifiers, with their bit offsets and bitfield sizes; none
    /// for any other type. A member whose name offset is out of range or
    /// not UTF-8 is that error, never an anonymous member.
    pub fn members(&self, id: TypeId) -> impl Iterator<Item = Result<MemberInfo<'_>>> + '_ {
        let t = self.resolved_type(id);
        let kind_flag = t.is_some_and(|t| t.kind_flag);
        t.map(Type::members)
            .unwrap_or_default()
            .iter()
            .map(move |m| {
                Ok(MemberInfo {
                    name: self.str_at(m.name_off)?,
                    ty: m.ty,
                    bit_offset: m.bit_offset(kind_flag),
                    bitfield_size: m.bitfield_size(kind_flag),
                })
            })
    }

    /// The member `name` of a struct or union (under typedefs and
    /// qualifiers), looking into anonymous struct and union members as C
    /// does; its offset is from the start of the outer type.
    pub fn find_member(&self, id: TypeId, name: &str) -> Option<FoundMember> {
        self.find_member_at(id, name, 0)
    }

    fn find_member_at(&self, id: TypeId, name: &str, depth: usize) -> Option<FoundMember> {
        if depth > MAX_RESOLVE_DEPTH {
            return None;
        }
        // A member with a bad name is neither the one looked for nor an
        // anonymous one to look into.
        for m in self.members(id).flatten() {
            let off = u64::from(m.bit_offset);
            if m.name == name {
                return Some(FoundMember {
                    bit_offset: off,
                    ty: m.ty,
                    bits: m.bitfield_size,
                });
            }
            if m.name.is_empty() {
                if let Some(f) = self.find_member_at(m.ty, name, depth + 1) {
                    return Some(FoundMember {
                        bit_offset: off + f.bit_offset,
                        ..f
                    });
                }
            }
        }
        None
    }

    /// The enumerators of the ENUM or ENUM64 `id` is, or is under
    /// typedefs and qualifiers; none for any other type. An enumerator
    /// whose name offset is out of range or not UTF-8 is an error.
    pub fn enumerators(&self, id: TypeId) -> Result<Vec<Enumerator<'_>>> {
        let Some(t) = self.resolved_type(id) else {
            return Ok(Vec::new());
        };
        t.enum_values()
            .map(|(name_off, raw)| {
                Ok(Enumerator {
                    name: self.str_at(name_off)?,
                    raw,
                    signed: t.kind_flag,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Array, EnumValue, Member};

    /// `typedef const struct s { int a; int b:3; } t; t arr[4];`
    fn sample() -> (Btf, [TypeId; 5]) {
        let mut b = Btf::new();
        let int_name = b.add_str("int");
        let int = b.add_type(Type::new(
            int_name,
            TypeData::Int {
                size: 4,
                encoding: crate::format::BTF_INT_SIGNED,
                offset: 0,
                bits: 32,
            },
        ));
        let (s_name, a, bb) = (b.add_str("s"), b.add_str("a"), b.add_str("b"));
        let members = vec![
            Member {
                name_off: a,
                ty: int,
                offset: 0,
            },
            Member {
                name_off: bb,
                ty: int,
                offset: 3 << 24 | 32,
            },
        ];
        let mut st = Type::new(
            s_name,
            TypeData::Struct {
                size: 8,
                members: members.into(),
            },
        );
        st.kind_flag = true;
        let s = b.add_type(st);
        let c = b.add_type(Type::new(0, TypeData::Const { ty: s }));
        let t_name = b.add_str("t");
        let t = b.add_type(Type::new(t_name, TypeData::Typedef { ty: c }));
        let arr = b.add_type(Type::new(
            0,
            TypeData::Array(Array {
                elem: t,
                index: int,
                nelems: 4,
            }),
        ));
        (b, [int, s, c, t, arr])
    }

    #[test]
    fn sizes_and_skips_go_through_typedefs_qualifiers_and_arrays() {
        let (b, [int, s, c, t, arr]) = sample();
        assert_eq!(b.skip_mods_and_typedefs(t), s);
        assert_eq!(b.skip_mods(t), t);
        assert_eq!(b.skip_mods(c), s);
        assert_eq!(b.skip_mods_and_typedefs(0), 0);
        assert_eq!(b.resolve_size(arr), Some(32));
        assert_eq!(b.resolve_size(int), Some(4));
        assert_eq!(b.resolve_size(0), None);
        assert_eq!(b.find_by_name_kind("s", Kind::STRUCT), Some(s));
        assert_eq!(b.find_by_name_kind("s", Kind::UNION), None);
        assert_eq!(b.find_by_name_kind("nothing", Kind::STRUCT), None);
        let m: Vec<(&str, u32, u32)> = b
            .members(t)
            .map(|m| m.expect("member name"))
            .map(|m| (m.name, m.bit_offset, m.bitfield_size))
            .collect();
        assert_eq!(m, [("a", 0, 0), ("b", 32, 3)]);
        assert_eq!(
            b.find_member(t, "b").map(|f| (f.bit_offset, f.bits)),
            Some((32, 3))
        );
    }

    #[test]
    fn a_typedef_loop_ends_without_a_size() {
        let mut b = Btf::new();
        // [1] typedef -> [2] typedef -> [1]
        b.add_type(Type::new(0, TypeData::Typedef { ty: 2 }));
        b.add_type(Type::new(0, TypeData::Typedef { ty: 1 }));
        assert_eq!(b.resolve_size(1), None);
        assert!(b.members(1).next().is_none());
    }

    #[test]
    fn signed_enumerators_read_as_c_does() {
        let mut b = Btf::new();
        let n = b.add_str("minus_one");
        let mut e = Type::new(
            0,
            TypeData::Enum {
                size: 4,
                values: vec![EnumValue {
                    name_off: n,
                    val: u32::MAX,
                }]
                .into(),
            },
        );
        e.kind_flag = true;
        let id = b.add_type(e);
        let v = b.enumerators(id).expect("names");
        assert_eq!((v[0].name, v[0].value()), ("minus_one", -1));
    }

    #[test]
    fn a_member_with_a_bad_name_is_an_error_not_an_anonymous_member() {
        let mut b = Btf::new();
        let int = b.add_str("int");
        let x = b.add_str("x");
        let int = b.add_type(Type::new(
            int,
            TypeData::Int {
                size: 4,
                encoding: 1,
                offset: 0,
                bits: 32,
            },
        ));
        // struct inner { int x; }
        let inner = b.add_type(Type::new(
            0,
            TypeData::Struct {
                size: 4,
                members: vec![Member {
                    name_off: x,
                    ty: int,
                    offset: 0,
                }]
                .into(),
            },
        ));
        // struct outer { struct inner <name past the strings>; }
        let outer = b.add_type(Type::new(
            0,
            TypeData::Struct {
                size: 4,
                members: vec![Member {
                    name_off: 0xffff_fff0,
                    ty: inner,
                    offset: 0,
                }]
                .into(),
            },
        ));
        assert!(b.members(outer).all(|m| m.is_err()));
        assert_eq!(b.find_member(inner, "x").map(|f| f.ty), Some(int));
        assert!(b.find_member(outer, "x").is_none());
    }
}
