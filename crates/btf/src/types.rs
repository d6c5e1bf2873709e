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

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    /// Offset of the name in the string section (0: anonymous).
    pub name_off: u32,
    /// The `kind_flag` bit of `info`; its meaning depends on the kind:
    /// STRUCT/UNION bitfield offsets, ENUM/ENUM64 signedness, FWD union,
    /// DECL_TAG attribute. Kept raw so that it round-trips for every kind.
    pub kind_flag: bool,
    pub data: TypeData,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeData {
    Int {
        size: u32,
        encoding: u8,
        offset: u8,
        bits: u8,
    },
    Ptr {
        ty: TypeId,
    },
    Array(Array),
    Struct {
        size: u32,
        members: Records<Member>,
    },
    Union {
        size: u32,
        members: Records<Member>,
    },
    /// Values are stored as raw 32-bit words; `kind_flag` says signed.
    Enum {
        size: u32,
        values: Records<EnumValue>,
    },
    /// `kind_flag` set: `union`, otherwise `struct`.
    Fwd,
    Typedef {
        ty: TypeId,
    },
    Volatile {
        ty: TypeId,
    },
    Const {
        ty: TypeId,
    },
    Restrict {
        ty: TypeId,
    },
    Func {
        proto: TypeId,
        linkage: u32,
    },
    FuncProto {
        ret: TypeId,
        params: Records<Param>,
    },
    Var {
        ty: TypeId,
        linkage: u32,
    },
    Datasec {
        size: u32,
        vars: Records<VarSecinfo>,
    },
    Float {
        size: u32,
    },
    /// `component_idx` -1 tags the type itself, otherwise a member or parameter.
    DeclTag {
        ty: TypeId,
        component_idx: i32,
    },
    TypeTag {
        ty: TypeId,
    },
    Enum64 {
        size: u32,
        values: Vec<Enum64Value>,
    },
    /// Where one parameter of an inlined function is found (bpf-next):
    /// `size` is the parameter's size, `flags` the BTF_LOC_PARAM_* bits
    /// that say how to read `values` (register numbers, offsets, constants).
    LocParam {
        size: u32,
        flags: u32,
        /// Boxed, not a Vec: every `Type` is as large as its largest kind,
        /// and these rare kinds must not make millions of types larger.
        values: Box<[u32]>,
    },
    /// The LOC_PARAM of each parameter at an inline site; 0: no location.
    LocProto {
        params: Vec<TypeId>,
    },
    /// The inline sites of one ELF section (named e.g. `inline.text`).
    Locsec {
        locs: Vec<Loc>,
    },
    /// A kind this crate does not know, read through the layout section:
    /// its words are kept as they are, so that it is written back unchanged.
    Unknown {
        kind: u8,
        size_or_type: u32,
        vlen: u32,
        /// `info_sz + vlen * elem_sz` bytes as 32-bit words (boxed, as
        /// `LocParam::values`).
        words: Box<[u32]>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Array {
    pub elem: TypeId,
    pub index: TypeId,
    pub nelems: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Member {
    pub name_off: u32,
    pub ty: TypeId,
    /// Raw offset word: a bit offset, or with the parent's kind_flag,
    /// `bitfield_size << 24 | bit_offset`.
    pub offset: u32,
}

impl Member {
    pub fn bit_offset(&self, kind_flag: bool) -> u32 {
        if kind_flag {
            member_bit_offset(self.offset)
        } else {
            self.offset
        }
    }
    pub fn bitfield_size(&self, kind_flag: bool) -> u32 {
        if kind_flag {
            member_bitfield_size(self.offset)
        } else {
            0
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct EnumValue {
    pub name_off: u32,
    pub val: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Enum64Value {
    pub name_off: u32,
    pub val: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct Param {
    pub name_off: u32,
    pub ty: TypeId,
}

/// One inline site of a LOCSEC: the inlined FUNC, the LOC_PROTO with its
/// parameters' locations, and the site's offset from the section's base.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Loc {
    pub func: TypeId,
    pub loc_proto: TypeId,
    pub offset: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct VarSecinfo {
    pub ty: TypeId,
    pub offset: u32,
    pub size: u32,
}

// Read in place from a mapped type section (see records.rs).
crate::records::record!(Member, EnumValue, Param, VarSecinfo);

impl Type {
    pub fn new(name_off: u32, data: TypeData) -> Type {
        Type {
            name_off,
            kind_flag: false,
            data,
        }
    }

    /// The BTF_KIND_* number of this type.
    pub fn kind(&self) -> u8 {
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
            TypeData::Ptr { ty }
            | TypeData::Typedef { ty }
            | TypeData::Volatile { ty }
            | TypeData::Const { ty }
            | TypeData::Restrict { ty }
            | TypeData::TypeTag { ty }
            | TypeData::Var { ty, .. }
            | TypeData::DeclTag { ty, .. } => *ty,
            TypeData::Func { proto, .. } => *proto,
            TypeData::FuncProto { ret, .. } => *ret,
            TypeData::Array(_)
            | TypeData::Fwd
            | TypeData::LocProto { .. }
            | TypeData::Locsec { .. } => 0,
        }
    }

    /// Bytes this type takes on disk.
    pub fn encoded_len(&self) -> usize {
        BTF_TYPE_LEN
            + match &self.data {
                TypeData::Int { .. } => 4,
                TypeData::Array(_) => BTF_ARRAY_LEN,
                TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
                    members.len() * BTF_MEMBER_LEN
                }
                TypeData::Enum { values, .. } => values.len() * BTF_ENUM_LEN,
                TypeData::Enum64 { values, .. } => values.len() * BTF_ENUM64_LEN,
                TypeData::FuncProto { params, .. } => params.len() * BTF_PARAM_LEN,
                TypeData::Var { .. } => BTF_VAR_LEN,
                TypeData::Datasec { vars, .. } => vars.len() * BTF_VAR_SECINFO_LEN,
                TypeData::DeclTag { .. } => BTF_DECL_TAG_LEN,
                TypeData::LocParam { values, .. } => {
                    BTF_LOC_PARAM_LEN + values.len() * BTF_LOC_VALUE_LEN
                }
                TypeData::LocProto { params } => params.len() * BTF_LOC_PROTO_PARAM_LEN,
                TypeData::Locsec { locs } => locs.len() * BTF_LOC_LEN,
                TypeData::Unknown { words, .. } => words.len() * 4,
                _ => 0,
            }
    }

    /// For types that refer to exactly one other type (modifiers, typedef,
    /// pointer, func, var, tags): that type.
    pub fn ref_type(&self) -> Option<TypeId> {
        match &self.data {
            TypeData::Ptr { ty }
            | TypeData::Typedef { ty }
            | TypeData::Volatile { ty }
            | TypeData::Const { ty }
            | TypeData::Restrict { ty }
            | TypeData::TypeTag { ty }
            | TypeData::Var { ty, .. }
            | TypeData::DeclTag { ty, .. } => Some(*ty),
            TypeData::Func { proto, .. } => Some(*proto),
            _ => None,
        }
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
            TypeData::Ptr { ty }
            | TypeData::Typedef { ty }
            | TypeData::Volatile { ty }
            | TypeData::Const { ty }
            | TypeData::Restrict { ty }
            | TypeData::TypeTag { ty }
            | TypeData::Var { ty, .. }
            | TypeData::DeclTag { ty, .. } => f(ty),
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

    /// Members of a STRUCT or UNION.
    pub fn members(&self) -> &[Member] {
        match &self.data {
            TypeData::Struct { members, .. } | TypeData::Union { members, .. } => members,
            _ => &[],
        }
    }

    pub fn is_modifier(&self) -> bool {
        matches!(
            self.data,
            TypeData::Volatile { .. }
                | TypeData::Const { .. }
                | TypeData::Restrict { .. }
                | TypeData::TypeTag { .. }
        )
    }
}
