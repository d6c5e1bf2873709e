//! The in-memory model of BTF types.
//!
//! A [`Type`] mirrors one on-disk record (`struct btf_type` plus the records
//! that follow it) closely enough that reading then writing is byte-exact,
//! while giving every field a name. Type ids are plain `u32`s: id 0 is `void`,
//! and in split BTF the ids of a module continue after those of its base.
//! The records that follow a struct, an enum, a prototype or a DATASEC are
//! [`Records`]: a slice of their own, a range of an [`Arena`]'s chunk, or
//! read in place from a mapped file.

use crate::format::*;
pub use crate::records::{Arena, Records};

/// A type id. 0 is `void`.
pub type TypeId = u32;

/// One BTF type: `struct btf_type` and the records that follow it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    /// Offset of the name in the string section (0: anonymous).
    pub name_off: u32,
    /// The `kind_flag` bit of `info`; its meaning depends on the kind:
    /// STRUCT/UNION bitfield offsets, ENUM/ENUM64 signedness, FWD union,
    /// DECL_TAG attribute. Kept raw so that it round-trips for every kind.
    pub kind_flag: bool,
    /// What the type is, by kind, with the kind's fields and records.
    pub data: TypeData,
}

/// A type's kind and the fields that kind has (the `size`/`type` word, the data after `struct btf_type`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeData {
    /// INT: an integer of `size` bytes.
    Int {
        /// Bytes the integer takes.
        size: u32,
        /// `BTF_INT_*` bits: signed, char, bool.
        encoding: u8,
        /// Bit offset of the value within its bytes (0 in practice).
        offset: u8,
        /// Bits of the value.
        bits: u8,
    },
    /// PTR: a pointer.
    Ptr {
        /// The pointed-to type (0: void).
        ty: TypeId,
    },
    /// ARRAY: element type, index type, element count.
    Array(Array),
    /// STRUCT: members at bit offsets.
    Struct {
        /// Bytes the struct takes.
        size: u32,
        /// The members, in order.
        members: Records<Member>,
    },
    /// UNION: members, all at offset 0 (bitfields aside).
    Union {
        /// Bytes the union takes.
        size: u32,
        /// The members, in order.
        members: Records<Member>,
    },
    /// Values are stored as raw 32-bit words; `kind_flag` says signed.
    Enum {
        /// Bytes a value of the enum takes.
        size: u32,
        /// The enumerators.
        values: Records<EnumValue>,
    },
    /// `kind_flag` set: `union`, otherwise `struct`.
    Fwd,
    /// TYPEDEF: a name for `ty`.
    Typedef {
        /// The type named.
        ty: TypeId,
    },
    /// VOLATILE: `volatile ty`.
    Volatile {
        /// The qualified type.
        ty: TypeId,
    },
    /// CONST: `const ty`.
    Const {
        /// The qualified type.
        ty: TypeId,
    },
    /// RESTRICT: `restrict ty`.
    Restrict {
        /// The qualified type.
        ty: TypeId,
    },
    /// FUNC: a function, its prototype and linkage.
    Func {
        /// The FUNC_PROTO.
        proto: TypeId,
        /// `BTF_FUNC_*`, carried in vlen.
        linkage: u32,
    },
    /// FUNC_PROTO: return type and parameters.
    FuncProto {
        /// The return type (0: void).
        ret: TypeId,
        /// The parameters; a last one of type 0 and no name is `...`.
        params: Records<Param>,
    },
    /// VAR: a variable.
    Var {
        /// The variable's type.
        ty: TypeId,
        /// `BTF_VAR_*`.
        linkage: u32,
    },
    /// DATASEC: the variables of an ELF data section.
    Datasec {
        /// Bytes of the section.
        size: u32,
        /// Each variable's id, offset and size, in offset order.
        vars: Records<VarSecinfo>,
    },
    /// FLOAT: a floating-point type.
    Float {
        /// Bytes it takes.
        size: u32,
    },
    /// `component_idx` -1 tags the type itself, otherwise a member or parameter.
    DeclTag {
        /// The tagged type.
        ty: TypeId,
        /// -1, or the index of the tagged member or parameter.
        component_idx: i32,
    },
    /// TYPE_TAG: `ty` with an attribute (`__user`, `__rcu`).
    TypeTag {
        /// The tagged type.
        ty: TypeId,
    },
    /// ENUM64: an enum of 64-bit values; `kind_flag` says signed.
    Enum64 {
        /// Bytes a value of the enum takes.
        size: u32,
        /// The enumerators.
        values: Vec<Enum64Value>,
    },
    /// Where one parameter of an inlined function is found (bpf-next):
    /// `size` is the parameter's size, `flags` the BTF_LOC_PARAM_* bits
    /// that say how to read `values` (register numbers, offsets, constants).
    LocParam {
        /// Bytes the parameter takes.
        size: u32,
        /// `BTF_LOC_PARAM_*` bits.
        flags: u32,
        /// Boxed, not a Vec: every `Type` is as large as its largest kind,
        /// and these rare kinds must not make millions of types larger.
        values: Box<[u32]>,
    },
    /// The LOC_PARAM of each parameter at an inline site; 0: no location.
    LocProto {
        /// The LOC_PARAM of each parameter, 0 where it has none.
        params: Vec<TypeId>,
    },
    /// The inline sites of one ELF section (named e.g. `inline.text`).
    Locsec {
        /// The inline sites.
        locs: Vec<Loc>,
    },
    /// A kind this crate does not know, read through the layout section:
    /// its words are kept as they are, so that it is written back unchanged.
    Unknown {
        /// The kind number.
        kind: Kind,
        /// The `size`/`type` word.
        size_or_type: u32,
        /// The vlen of `info`.
        vlen: u32,
        /// `info_sz + vlen * elem_sz` bytes as 32-bit words (boxed, as
        /// `LocParam::values`).
        words: Box<[u32]>,
    },
}

/// The record that follows an ARRAY.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Array {
    /// The element type.
    pub elem: TypeId,
    /// The index type (an INT).
    pub index: TypeId,
    /// Number of elements.
    pub nelems: u32,
}

/// One member of a STRUCT or UNION.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Member {
    /// Offset of the member's name (0: anonymous).
    pub name_off: u32,
    /// The member's type.
    pub ty: TypeId,
    /// Raw offset word: a bit offset, or with the parent's kind_flag,
    /// `bitfield_size << 24 | bit_offset`.
    pub offset: u32,
}

impl Member {
    /// The member's offset in bits, given its parent's `kind_flag`.
    pub fn bit_offset(&self, kind_flag: bool) -> u32 {
        if kind_flag {
            member_bit_offset(self.offset)
        } else {
            self.offset
        }
    }
    /// The member's bitfield size in bits (0: not a bitfield), given its parent's `kind_flag`.
    pub fn bitfield_size(&self, kind_flag: bool) -> u32 {
        if kind_flag {
            member_bitfield_size(self.offset)
        } else {
            0
        }
    }
}

/// One enumerator of an ENUM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct EnumValue {
    /// Offset of its name.
    pub name_off: u32,
    /// Its value as a 32-bit word, signed when the enum's `kind_flag` is set.
    pub val: u32,
}

impl EnumValue {
    /// The value as the kernel's `btf_enum` means it, as a 64-bit word:
    /// sign-extended from 32 bits when the enum is signed (its
    /// `kind_flag`), zero-extended otherwise. Read it `as i64` when
    /// signed.
    ///
    /// ```
    /// use btf::EnumValue;
    /// let v = EnumValue { name_off: 0, val: 0xffff_ffff };
    /// assert_eq!(v.value(true) as i64, -1);
    /// assert_eq!(v.value(false), 0xffff_ffff);
    /// ```
    pub fn value(&self, signed: bool) -> u64 {
        if signed {
            self.val as i32 as i64 as u64
        } else {
            u64::from(self.val)
        }
    }
}

/// One enumerator of an ENUM64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Enum64Value {
    /// Offset of its name.
    pub name_off: u32,
    /// Its value, signed when the enum's `kind_flag` is set.
    pub val: u64,
}

/// One parameter of a FUNC_PROTO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Param {
    /// Offset of its name.
    pub name_off: u32,
    /// Its type (0 with no name: `...`).
    pub ty: TypeId,
}

/// One inline site of a LOCSEC: the inlined FUNC, the LOC_PROTO with its
/// parameters' locations, and the site's offset from the section's base.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Loc {
    /// The inlined FUNC.
    pub func: TypeId,
    /// The LOC_PROTO with the site's parameter locations.
    pub loc_proto: TypeId,
    /// The site's offset from the section's start.
    pub offset: u32,
}

/// One variable of a DATASEC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct VarSecinfo {
    /// The VAR.
    pub ty: TypeId,
    /// Its offset in the section.
    pub offset: u32,
    /// Its size in bytes.
    pub size: u32,
}

// Read in place from a mapped type section (see records.rs).
crate::records::record!(Member, EnumValue, Param, VarSecinfo);

/// A pattern for the kinds whose `type` word is the one type they refer
/// to, binding it to `$ty`: the references ([`Kind::is_reference`]), VAR
/// and DECL_TAG. FUNC refers to one type too, under another name.
macro_rules! one_ref {
    ($ty:ident) => {
        TypeData::Ptr { ty: $ty }
            | TypeData::Typedef { ty: $ty }
            | TypeData::Volatile { ty: $ty }
            | TypeData::Const { ty: $ty }
            | TypeData::Restrict { ty: $ty }
            | TypeData::TypeTag { ty: $ty }
            | TypeData::Var { ty: $ty, .. }
            | TypeData::DeclTag { ty: $ty, .. }
    };
}

impl Type {
    /// A type with this name offset and data, `kind_flag` clear.
    pub fn new(name_off: u32, data: TypeData) -> Type {
        Type {
            name_off,
            kind_flag: false,
            data,
        }
    }

    /// The kind of this type.
    pub fn kind(&self) -> Kind {
        match self.data {
            TypeData::Int { .. } => BTF_KIND_INT,
            TypeData::Ptr { .. } => BTF_KIND_PTR,
            TypeData::Array(_) => BTF_KIND_ARRAY,
            TypeData::Struct { .. } => BTF_KIND_STRUCT,
            TypeData::Union { .. } => BTF_KIND_UNION,
            TypeData::Enum { .. } => BTF_KIND_ENUM,
            TypeData::Fwd => BTF_KIND_FWD,
            TypeData::Typedef { .. } => BTF_KIND_TYPEDEF,
            TypeData::Volatile { .. } => BTF_KIND_VOLATILE,
            TypeData::Const { .. } => BTF_KIND_CONST,
            TypeData::Restrict { .. } => BTF_KIND_RESTRICT,
            TypeData::Func { .. } => BTF_KIND_FUNC,
            TypeData::FuncProto { .. } => BTF_KIND_FUNC_PROTO,
            TypeData::Var { .. } => BTF_KIND_VAR,
            TypeData::Datasec { .. } => BTF_KIND_DATASEC,
            TypeData::Float { .. } => BTF_KIND_FLOAT,
            TypeData::DeclTag { .. } => BTF_KIND_DECL_TAG,
            TypeData::TypeTag { .. } => BTF_KIND_TYPE_TAG,
            TypeData::Enum64 { .. } => BTF_KIND_ENUM64,
            TypeData::LocParam { .. } => BTF_KIND_LOC_PARAM,
            TypeData::LocProto { .. } => BTF_KIND_LOC_PROTO,
            TypeData::Locsec { .. } => BTF_KIND_LOCSEC,
            TypeData::Unknown { kind, .. } => kind,
        }
    }

    /// The name bpftool prints for this type's kind.
    pub fn kind_name(&self) -> &'static str {
        kind_name(self.kind())
    }

    /// The vlen field as written: the record count, or FUNC linkage.
    /// `info` keeps 24 bits of it.
    pub fn vlen(&self) -> u32 {
        match &self.data {
            TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
                members.len() as u32
            }
            TypeData::Enum { values, .. } => values.len() as u32,
            TypeData::Enum64 { values, .. } => values.len() as u32,
            TypeData::FuncProto { params, .. } => params.len() as u32,
            TypeData::Datasec { vars, .. } => vars.len() as u32,
            TypeData::Func { linkage, .. } => *linkage,
            TypeData::LocParam { values, .. } => values.len() as u32,
            TypeData::LocProto { params } => params.len() as u32,
            TypeData::Locsec { locs } => locs.len() as u32,
            TypeData::Unknown { vlen, .. } => *vlen,
            _ => 0,
        }
    }

    /// The `info` word: kind, kind_flag and vlen.
    pub fn info(&self) -> u32 {
        make_info(self.kind(), self.kind_flag, self.vlen())
    }

    /// The `size`/`type` word of `struct btf_type`.
    pub fn size_or_type(&self) -> u32 {
        match &self.data {
            TypeData::Int { size, .. }
            | TypeData::Struct { size, .. }
            | TypeData::Union { size, .. }
            | TypeData::Enum { size, .. }
            | TypeData::Enum64 { size, .. }
            | TypeData::Datasec { size, .. }
            | TypeData::LocParam { size, .. }
            | TypeData::Float { size } => *size,
            TypeData::Unknown { size_or_type, .. } => *size_or_type,
            one_ref!(ty) => *ty,
            TypeData::Func { proto, .. } => *proto,
            TypeData::FuncProto { ret, .. } => *ret,
            TypeData::Array(_)
            | TypeData::Fwd
            | TypeData::LocProto { .. }
            | TypeData::Locsec { .. } => 0,
        }
    }

    /// Bytes this type takes on disk: `struct btf_type` and what its
    /// kind's layout ([`known_layout`]) has follow it for its vlen.
    pub fn encoded_len(&self) -> usize {
        BTF_TYPE_LEN
            + match &self.data {
                TypeData::Unknown { words, .. } => words.len() * 4,
                _ => known_layout(self.kind()).map_or(0, |l| {
                    usize::from(l.info_sz) + self.vlen() as usize * usize::from(l.elem_sz)
                }),
            }
    }

    /// For types that refer to exactly one other type (modifiers, typedef,
    /// pointer, func, var, tags): that type.
    pub fn ref_type(&self) -> Option<TypeId> {
        match &self.data {
            one_ref!(ty) => Some(*ty),
            TypeData::Func { proto, .. } => Some(*proto),
            _ => None,
        }
    }

    /// [`Type::ref_type`], to change.
    pub fn ref_type_mut(&mut self) -> Option<&mut TypeId> {
        match &mut self.data {
            one_ref!(ty) => Some(ty),
            TypeData::Func { proto, .. } => Some(proto),
            _ => None,
        }
    }

    /// The type this one refers to ([`Type::ref_type`]) when its kind is
    /// in `group`, one of [`Kind`]'s groups: `t.ref_type_in(Kind::is_modifier)`
    /// is the type a modifier qualifies or tags, `None` for any other kind.
    ///
    /// ```
    /// use btf::{Kind, Type, TypeData};
    /// let c = Type::new(0, TypeData::Const { ty: 7 });
    /// assert_eq!(c.ref_type_in(Kind::is_modifier), Some(7));
    /// assert_eq!(c.ref_type_in(|k| k == Kind::PTR), None);
    /// ```
    pub fn ref_type_in(&self, group: impl Fn(Kind) -> bool) -> Option<TypeId> {
        self.ref_type().filter(|_| group(self.kind()))
    }

    /// Every type id this type refers to, in on-disk order.
    pub fn for_each_ref(&self, mut f: impl FnMut(TypeId)) {
        match &self.data {
            TypeData::Array(a) => {
                f(a.elem);
                f(a.index);
            }
            TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
                members.iter().for_each(|m| f(m.ty))
            }
            TypeData::FuncProto { ret, params } => {
                f(*ret);
                params.iter().for_each(|p| f(p.ty));
            }
            TypeData::Datasec { vars, .. } => vars.iter().for_each(|v| f(v.ty)),
            TypeData::LocProto { params } => params.iter().for_each(|&p| f(p)),
            TypeData::Locsec { locs } => locs.iter().for_each(|l| {
                f(l.func);
                f(l.loc_proto);
            }),
            _ => {
                if let Some(t) = self.ref_type() {
                    f(t)
                }
            }
        }
    }

    /// Moves this type's records (members, enumerators, parameters, a
    /// DATASEC's variables) into `arena`, letting go of where they were.
    pub(crate) fn move_records_to(&mut self, arena: &mut Arena) {
        match &mut self.data {
            TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
                *members = arena.alloc(members)
            }
            TypeData::Enum { values, .. } => *values = arena.alloc(values),
            TypeData::FuncProto { params, .. } => *params = arena.alloc(params),
            TypeData::Datasec { vars, .. } => *vars = arena.alloc(vars),
            _ => {}
        }
    }

    /// Mutable access to every type id this type refers to (for remapping).
    pub fn for_each_ref_mut(&mut self, mut f: impl FnMut(&mut TypeId)) {
        match &mut self.data {
            TypeData::Array(a) => {
                f(&mut a.elem);
                f(&mut a.index);
            }
            TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
                members.iter_mut().for_each(|m| f(&mut m.ty))
            }
            TypeData::FuncProto { ret, params } => {
                f(ret);
                params.iter_mut().for_each(|p| f(&mut p.ty));
            }
            TypeData::Datasec { vars, .. } => vars.iter_mut().for_each(|v| f(&mut v.ty)),
            TypeData::LocProto { params } => params.iter_mut().for_each(f),
            TypeData::Locsec { locs } => locs.iter_mut().for_each(|l| {
                f(&mut l.func);
                f(&mut l.loc_proto);
            }),
            one_ref!(ty) => f(ty),
            TypeData::Func { proto, .. } => f(proto),
            TypeData::Int { .. }
            | TypeData::Enum { .. }
            | TypeData::Enum64 { .. }
            | TypeData::Fwd
            | TypeData::Float { .. }
            | TypeData::LocParam { .. }
            | TypeData::Unknown { .. } => {}
        }
    }

    /// Every string offset this type holds (its name, members', params', values').
    pub fn for_each_str_mut(&mut self, mut f: impl FnMut(&mut u32)) {
        f(&mut self.name_off);
        match &mut self.data {
            TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
                members.iter_mut().for_each(|m| f(&mut m.name_off))
            }
            TypeData::Enum { values, .. } => values.iter_mut().for_each(|v| f(&mut v.name_off)),
            TypeData::Enum64 { values, .. } => values.iter_mut().for_each(|v| f(&mut v.name_off)),
            TypeData::FuncProto { params, .. } => {
                params.iter_mut().for_each(|p| f(&mut p.name_off))
            }
            _ => {}
        }
    }

    /// The enumerators of an ENUM or ENUM64, none for any other kind:
    /// each one's name offset and its value as a 64-bit word, an ENUM's
    /// sign-extended when the enum is signed ([`EnumValue::value`]). The
    /// enum is signed when its `kind_flag` is set; read a value `as i64`
    /// then.
    ///
    /// ```
    /// use btf::{EnumValue, Type, TypeData};
    /// let values = vec![EnumValue { name_off: 1, val: 0xffff_fffe }];
    /// let mut t = Type::new(0, TypeData::Enum { size: 4, values: values.into() });
    /// assert_eq!(t.enum_values().collect::<Vec<_>>(), [(1, 0xffff_fffe)]);
    /// t.kind_flag = true;
    /// assert_eq!(t.enum_values().map(|(_, v)| v as i64).collect::<Vec<_>>(), [-2]);
    /// ```
    pub fn enum_values(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        let signed = self.kind_flag;
        let (narrow, wide): (&[EnumValue], &[Enum64Value]) = match &self.data {
            TypeData::Enum { values, .. } => (values, &[]),
            TypeData::Enum64 { values, .. } => (&[], values),
            _ => (&[], &[]),
        };
        let narrow = narrow.iter().map(move |v| (v.name_off, v.value(signed)));
        narrow.chain(wide.iter().map(|v| (v.name_off, v.val)))
    }

    /// Members of a STRUCT or UNION.
    pub fn members(&self) -> &[Member] {
        match &self.data {
            TypeData::Struct { members, .. } | TypeData::Union { members, .. } => members,
            _ => &[],
        }
    }

    /// A qualifier or type tag ([`Kind::is_modifier`]).
    pub fn is_modifier(&self) -> bool {
        self.kind().is_modifier()
    }
}
