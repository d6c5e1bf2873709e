//! [`Builder`]: BTF assembled type by type, by name, as libbpf's
//! `btf__add_*` functions do.
//!
//! Each `add_*` interns the names it is given and returns the new type's
//! id, so that later types can refer to it; [`Builder::finish`] gives the
//! [`Btf`]. The builder packs what the format packs (bitfield offsets and
//! the kind flag, enum signedness, linkage) but checks nothing a validator
//! checks: [`crate::validate::validate`] tells whether the result is what
//! the kernel accepts.
//!
//! ```
//! use btf::builder::{Builder, Field};
//! use btf::format::BTF_INT_SIGNED;
//!
//! let mut b = Builder::new();
//! let int = b.add_int("int", 4, BTF_INT_SIGNED);
//! let long = b.add_int("long", 8, BTF_INT_SIGNED);
//! let point = b.add_struct(
//!     "point",
//!     16,
//!     &[Field::new("x", int, 0), Field::new("y", long, 64)],
//! );
//! let ptr = b.add_ptr(point);
//! b.add_typedef("point_t", ptr);
//! let btf = b.finish();
//! assert!(btf::validate::validate(&btf).is_empty());
//! assert_eq!(btf.resolve_size(point), Some(16));
//! ```

use std::sync::Arc;

use crate::format::{BTF_VAR_GLOBAL_ALLOCATED, BTF_VAR_STATIC};
use crate::types::{
    Array, Enum64Value, EnumValue, Member, Param, Type, TypeData, TypeId, VarSecinfo,
};
use crate::Btf;

/// One member of a struct or union for [`Builder::add_struct`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// The member's name; "" for an anonymous member.
    pub name: &'a str,
    /// The member's type.
    pub ty: TypeId,
    /// Offset from the start of the struct in bits.
    pub bit_offset: u32,
    /// Width in bits of a bitfield; 0 for a member that is not one.
    pub bitfield_size: u32,
}

impl<'a> Field<'a> {
    /// A member that is not a bitfield.
    pub fn new(name: &'a str, ty: TypeId, bit_offset: u32) -> Field<'a> {
        Field {
            name,
            ty,
            bit_offset,
            bitfield_size: 0,
        }
    }

    /// A bitfield `bits` wide.
    pub fn bitfield(name: &'a str, ty: TypeId, bit_offset: u32, bits: u32) -> Field<'a> {
        Field {
            bitfield_size: bits,
            ..Field::new(name, ty, bit_offset)
        }
    }
}

/// Linkage of a FUNC or VAR for the builder (BTF writes FUNC linkage in
/// `vlen` and VAR linkage in its record, with the same numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    /// `static`: local to its object.
    Static,
    /// Global, defined here.
    Global,
    /// Global, defined elsewhere (`extern`).
    Extern,
}

impl Linkage {
    fn func(self) -> u32 {
        match self {
            Linkage::Static => crate::format::BTF_FUNC_STATIC,
            Linkage::Global => crate::format::BTF_FUNC_GLOBAL,
            Linkage::Extern => crate::format::BTF_FUNC_EXTERN,
        }
    }

    fn var(self) -> u32 {
        match self {
            Linkage::Static => BTF_VAR_STATIC,
            Linkage::Global => BTF_VAR_GLOBAL_ALLOCATED,
            Linkage::Extern => crate::format::BTF_VAR_GLOBAL_EXTERN,
        }
    }
}

/// Builds a [`Btf`] type by type. See the module documentation.
#[derive(Debug, Default)]
pub struct Builder {
    btf: Btf,
}

impl Builder {
    /// A builder of base BTF (ids from 1).
    pub fn new() -> Builder {
        Builder { btf: Btf::new() }
    }

    /// A builder of split BTF over `base`: ids continue after the base's,
    /// and names the base has are the base's strings.
    pub fn new_split(base: Arc<Btf>) -> Builder {
        Builder {
            btf: Btf::new_split(base),
        }
    }

    /// The BTF built so far (to look types up while building).
    pub fn btf(&self) -> &Btf {
        &self.btf
    }

    /// The BTF built.
    pub fn finish(self) -> Btf {
        self.btf
    }

    fn add(&mut self, name: &str, kind_flag: bool, data: TypeData) -> TypeId {
        let name_off = self.btf.add_str(name);
        self.btf.add_type(Type {
            name_off,
            kind_flag,
            data,
        })
    }

    /// An integer of `size` bytes, all of whose bits are used, with the
    /// `BTF_INT_*` `encoding` bits (signed, char, bool).
    pub fn add_int(&mut self, name: &str, size: u32, encoding: u8) -> TypeId {
        let bits = u8::try_from(size.saturating_mul(8)).unwrap_or(u8::MAX);
        self.add(
            name,
            false,
            TypeData::Int {
                size,
                encoding,
                offset: 0,
                bits,
            },
        )
    }

    /// A floating-point type of `size` bytes.
    pub fn add_float(&mut self, name: &str, size: u32) -> TypeId {
        self.add(name, false, TypeData::Float { size })
    }

    /// A pointer to `ty` (0: `void *`).
    pub fn add_ptr(&mut self, ty: TypeId) -> TypeId {
        self.add("", false, TypeData::Ptr { ty })
    }

    /// An array of `nelems` elements of `elem`, indexed by the integer
    /// type `index`.
    pub fn add_array(&mut self, elem: TypeId, index: TypeId, nelems: u32) -> TypeId {
        self.add(
            "",
            false,
            TypeData::Array(Array {
                elem,
                index,
                nelems,
            }),
        )
    }

    fn members(&mut self, fields: &[Field<'_>]) -> (bool, Vec<Member>) {
        // Bitfield sizes need the kind flag, which then packs every offset.
        let kind_flag = fields.iter().any(|f| f.bitfield_size != 0);
        let members = fields
            .iter()
            .map(|f| Member {
                name_off: self.btf.add_str(f.name),
                ty: f.ty,
                offset: if kind_flag {
                    f.bitfield_size << 24 | f.bit_offset
                } else {
                    f.bit_offset
                },
            })
            .collect();
        (kind_flag, members)
    }

    /// A struct of `size` bytes with these members ("" for an anonymous
    /// struct). With a bitfield among them the kind flag is set.
    pub fn add_struct(&mut self, name: &str, size: u32, fields: &[Field<'_>]) -> TypeId {
        let (kind_flag, members) = self.members(fields);
        let data = TypeData::Struct {
            size,
            members: members.into(),
        };
        self.add(name, kind_flag, data)
    }

    /// A union of `size` bytes with these members, as [`Builder::add_struct`].
    pub fn add_union(&mut self, name: &str, size: u32, fields: &[Field<'_>]) -> TypeId {
        let (kind_flag, members) = self.members(fields);
        let data = TypeData::Union {
            size,
            members: members.into(),
        };
        self.add(name, kind_flag, data)
    }

    /// An enum of `size` bytes: an ENUM when every value fits 32 bits, an
    /// ENUM64 otherwise; signed (kind flag) when a value is negative.
    pub fn add_enum(&mut self, name: &str, size: u32, values: &[(&str, i64)]) -> TypeId {
        let signed = values.iter().any(|&(_, v)| v < 0);
        let fits = |v: i64| {
            if signed {
                i32::try_from(v).is_ok()
            } else {
                u32::try_from(v).is_ok()
            }
        };
        let data = if values.iter().all(|&(_, v)| fits(v)) {
            let values: Vec<EnumValue> = values
                .iter()
                .map(|&(n, v)| EnumValue {
                    name_off: self.btf.add_str(n),
                    // Two's complement in 32 bits, as BTF stores it.
                    val: v as u32,
                })
                .collect();
            TypeData::Enum {
                size,
                values: values.into(),
            }
        } else {
            let values = values
                .iter()
                .map(|&(n, v)| Enum64Value {
                    name_off: self.btf.add_str(n),
                    val: v as u64,
                })
                .collect();
            TypeData::Enum64 { size, values }
        };
        self.add(name, signed, data)
    }

    /// A forward declaration of a struct, or of a union.
    pub fn add_fwd(&mut self, name: &str, union: bool) -> TypeId {
        self.add(name, union, TypeData::Fwd)
    }

    /// A typedef of `ty`.
    pub fn add_typedef(&mut self, name: &str, ty: TypeId) -> TypeId {
        self.add(name, false, TypeData::Typedef { ty })
    }

    /// `const ty`.
    pub fn add_const(&mut self, ty: TypeId) -> TypeId {
        self.add("", false, TypeData::Const { ty })
    }

    /// `volatile ty`.
    pub fn add_volatile(&mut self, ty: TypeId) -> TypeId {
        self.add("", false, TypeData::Volatile { ty })
    }

    /// `restrict ty`.
    pub fn add_restrict(&mut self, ty: TypeId) -> TypeId {
        self.add("", false, TypeData::Restrict { ty })
    }

    /// A type tag (`__attribute__((btf_type_tag(name)))`) on `ty`.
    pub fn add_type_tag(&mut self, name: &str, ty: TypeId) -> TypeId {
        self.add(name, false, TypeData::TypeTag { ty })
    }

    /// A function prototype returning `ret` (0: void) with these named
    /// parameters; a last parameter of type 0 and no name is `...`.
    pub fn add_func_proto(&mut self, ret: TypeId, params: &[(&str, TypeId)]) -> TypeId {
        let params: Vec<Param> = params
            .iter()
            .map(|&(n, ty)| Param {
                name_off: self.btf.add_str(n),
                ty,
            })
            .collect();
        self.add(
            "",
            false,
            TypeData::FuncProto {
                ret,
                params: params.into(),
            },
        )
    }

    /// A function of prototype `proto`.
    pub fn add_func(&mut self, name: &str, proto: TypeId, linkage: Linkage) -> TypeId {
        let linkage = linkage.func();
        self.add(name, false, TypeData::Func { proto, linkage })
    }

    /// A variable of type `ty`.
    pub fn add_var(&mut self, name: &str, ty: TypeId, linkage: Linkage) -> TypeId {
        let linkage = linkage.var();
        self.add(name, false, TypeData::Var { ty, linkage })
    }

    /// A data section (`.data`, `.bss`...) of `size` bytes holding these
    /// variables: (VAR id, offset, size), in offset order.
    pub fn add_datasec(&mut self, name: &str, size: u32, vars: &[(TypeId, u32, u32)]) -> TypeId {
        let vars: Vec<VarSecinfo> = vars
            .iter()
            .map(|&(ty, offset, size)| VarSecinfo { ty, offset, size })
            .collect();
        self.add(
            name,
            false,
            TypeData::Datasec {
                size,
                vars: vars.into(),
            },
        )
    }

    /// A declaration tag (`__attribute__((btf_decl_tag(name)))`) on `ty`
    /// itself (`component_idx` `None`) or on its member or parameter of
    /// that index.
    pub fn add_decl_tag(&mut self, name: &str, ty: TypeId, component_idx: Option<u32>) -> TypeId {
        let component_idx = component_idx.map_or(-1, |i| i32::try_from(i).unwrap_or(i32::MAX));
        self.add(name, false, TypeData::DeclTag { ty, component_idx })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::*;

    #[test]
    fn enums_pick_their_kind_and_sign_from_the_values() {
        let mut b = Builder::new();
        let small = b.add_enum("small", 4, &[("A", 0), ("B", u32::MAX.into())]);
        let neg = b.add_enum("neg", 4, &[("M", -1)]);
        let big = b.add_enum("big", 8, &[("X", 1 << 40)]);
        let btf = b.finish();
        let t = |id| btf.type_by_id(id).unwrap();
        assert_eq!(
            (t(small).kind(), t(small).kind_flag),
            (BTF_KIND_ENUM, false)
        );
        assert_eq!((t(neg).kind(), t(neg).kind_flag), (BTF_KIND_ENUM, true));
        assert_eq!(t(big).kind(), BTF_KIND_ENUM64);
        assert_eq!(btf.enumerators(neg).expect("names")[0].value(), -1);
        assert_eq!(
            btf.enumerators(small).expect("names")[1].value(),
            i128::from(u32::MAX)
        );
    }

    #[test]
    fn bitfields_set_the_kind_flag_and_pack_offsets() {
        let mut b = Builder::new();
        let int = b.add_int("unsigned int", 4, 0);
        let s = b.add_struct(
            "flags",
            4,
            &[
                Field::bitfield("a", int, 0, 1),
                Field::bitfield("b", int, 1, 3),
            ],
        );
        let btf = b.finish();
        assert!(btf.type_by_id(s).unwrap().kind_flag);
        let m: Vec<(u32, u32)> = btf
            .members(s)
            .map(|m| m.expect("member name"))
            .map(|m| (m.bit_offset, m.bitfield_size))
            .collect();
        assert_eq!(m, [(0, 1), (1, 3)]);
        assert!(crate::validate::validate(&btf).is_empty());
    }
}
