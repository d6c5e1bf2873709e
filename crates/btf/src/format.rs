//! The on-disk layout of BTF: the project's `uapi/linux/btf.h`.
//!
//! Everything here is a plain constant or a helper that packs and unpacks
//! the `info` word; reading and writing live in `read.rs` and `write.rs`.
//! The `BTF_KIND_*` constants are [`Kind`]s under their uapi names.

pub use crate::kind::Kind;

/// `btf_header.magic`, little-endian on disk for little-endian targets.
pub const BTF_MAGIC: u16 = 0xeb9f;
/// The only BTF version there is.
pub const BTF_VERSION: u8 = 1;
/// The classic header: magic, version, flags, hdr_len, type_off/len, str_off/len.
pub const BTF_HEADER_LEN: u32 = 24;
/// The 2026 header adds `layout_off` and `layout_len` (a section describing
/// each kind's record sizes, so that readers can skip kinds they don't know).
pub const BTF_HEADER_LAYOUT_LEN: u32 = 32;

/// Size of `struct btf_type`: name_off, info, size/type.
pub const BTF_TYPE_LEN: usize = 12;

/// `BTF_KIND_UNKN`, the uapi name of [`Kind::UNKN`].
pub const BTF_KIND_UNKN: Kind = Kind::UNKN;
/// `BTF_KIND_INT`, the uapi name of [`Kind::INT`].
pub const BTF_KIND_INT: Kind = Kind::INT;
/// `BTF_KIND_PTR`, the uapi name of [`Kind::PTR`].
pub const BTF_KIND_PTR: Kind = Kind::PTR;
/// `BTF_KIND_ARRAY`, the uapi name of [`Kind::ARRAY`].
pub const BTF_KIND_ARRAY: Kind = Kind::ARRAY;
/// `BTF_KIND_STRUCT`, the uapi name of [`Kind::STRUCT`].
pub const BTF_KIND_STRUCT: Kind = Kind::STRUCT;
/// `BTF_KIND_UNION`, the uapi name of [`Kind::UNION`].
pub const BTF_KIND_UNION: Kind = Kind::UNION;
/// `BTF_KIND_ENUM`, the uapi name of [`Kind::ENUM`].
pub const BTF_KIND_ENUM: Kind = Kind::ENUM;
/// `BTF_KIND_FWD`, the uapi name of [`Kind::FWD`].
pub const BTF_KIND_FWD: Kind = Kind::FWD;
/// `BTF_KIND_TYPEDEF`, the uapi name of [`Kind::TYPEDEF`].
pub const BTF_KIND_TYPEDEF: Kind = Kind::TYPEDEF;
/// `BTF_KIND_VOLATILE`, the uapi name of [`Kind::VOLATILE`].
pub const BTF_KIND_VOLATILE: Kind = Kind::VOLATILE;
/// `BTF_KIND_CONST`, the uapi name of [`Kind::CONST`].
pub const BTF_KIND_CONST: Kind = Kind::CONST;
/// `BTF_KIND_RESTRICT`, the uapi name of [`Kind::RESTRICT`].
pub const BTF_KIND_RESTRICT: Kind = Kind::RESTRICT;
/// `BTF_KIND_FUNC`, the uapi name of [`Kind::FUNC`].
pub const BTF_KIND_FUNC: Kind = Kind::FUNC;
/// `BTF_KIND_FUNC_PROTO`, the uapi name of [`Kind::FUNC_PROTO`].
pub const BTF_KIND_FUNC_PROTO: Kind = Kind::FUNC_PROTO;
/// `BTF_KIND_VAR`, the uapi name of [`Kind::VAR`].
pub const BTF_KIND_VAR: Kind = Kind::VAR;
/// `BTF_KIND_DATASEC`, the uapi name of [`Kind::DATASEC`].
pub const BTF_KIND_DATASEC: Kind = Kind::DATASEC;
/// `BTF_KIND_FLOAT`, the uapi name of [`Kind::FLOAT`].
pub const BTF_KIND_FLOAT: Kind = Kind::FLOAT;
/// `BTF_KIND_DECL_TAG`, the uapi name of [`Kind::DECL_TAG`].
pub const BTF_KIND_DECL_TAG: Kind = Kind::DECL_TAG;
/// `BTF_KIND_TYPE_TAG`, the uapi name of [`Kind::TYPE_TAG`].
pub const BTF_KIND_TYPE_TAG: Kind = Kind::TYPE_TAG;
/// `BTF_KIND_ENUM64`, the uapi name of [`Kind::ENUM64`].
pub const BTF_KIND_ENUM64: Kind = Kind::ENUM64;
/// `BTF_KIND_LOC_PARAM`, the uapi name of [`Kind::LOC_PARAM`].
pub const BTF_KIND_LOC_PARAM: Kind = Kind::LOC_PARAM;
/// `BTF_KIND_LOC_PROTO`, the uapi name of [`Kind::LOC_PROTO`].
pub const BTF_KIND_LOC_PROTO: Kind = Kind::LOC_PROTO;
/// `BTF_KIND_LOCSEC`, the uapi name of [`Kind::LOCSEC`].
pub const BTF_KIND_LOCSEC: Kind = Kind::LOCSEC;
/// The last kind this crate knows ([`Kind::MAX_KNOWN`]).
pub const BTF_KIND_MAX: Kind = Kind::MAX_KNOWN;
/// The last kind the Linux 6.18 verifier knows.
pub const BTF_KIND_MAX_6_18: Kind = Kind::MAX_6_18;

/// Bits of `info` as bpf-next defines them: vlen 0-23, kind 24-30,
/// kind_flag 31. Linux 6.18 and older use only vlen 0-15 and kind 24-28 and
/// reject the other bits ([`BTF_INFO_UNUSED_MASK_6_18`]).
pub const BTF_INFO_VLEN_MASK: u32 = 0x00ff_ffff;
/// Where the kind starts in `info`.
pub const BTF_INFO_KIND_SHIFT: u32 = 24;
/// The kind's bits in `info` after the shift (7 bits; 5 before bpf-next).
pub const BTF_INFO_KIND_MASK: u32 = 0x7f;
/// Where `kind_flag` is in `info`.
pub const BTF_INFO_KFLAG_SHIFT: u32 = 31;
/// The `info` bits Linux 6.18 reserves: vlen 16-23 and kind 29-30.
pub const BTF_INFO_UNUSED_MASK_6_18: u32 = 0x60ff_0000;
/// The largest kind number `info` can hold (`BTF_MAX_KIND`).
pub const BTF_MAX_KIND: Kind = Kind::MAX;

/// The kind in `info`.
pub const fn info_kind(info: u32) -> Kind {
    Kind::new(((info >> BTF_INFO_KIND_SHIFT) & BTF_INFO_KIND_MASK) as u8)
}
/// The vlen in `info` (24 bits).
pub const fn info_vlen(info: u32) -> u32 {
    info & BTF_INFO_VLEN_MASK
}
/// The `kind_flag` bit of `info`.
pub const fn info_kflag(info: u32) -> bool {
    info >> BTF_INFO_KFLAG_SHIFT != 0
}
/// Packs `info`; a vlen past 24 bits is cut to them, as libbpf's BTF_INFO_ENC does.
pub const fn make_info(kind: Kind, kind_flag: bool, vlen: u32) -> u32 {
    ((kind_flag as u32) << BTF_INFO_KFLAG_SHIFT)
        | (((kind.as_u8() as u32) & BTF_INFO_KIND_MASK) << BTF_INFO_KIND_SHIFT)
        | (vlen & BTF_INFO_VLEN_MASK)
}

/// INT data word: encoding 24-27, offset 16-23, bits 0-7.
pub const BTF_INT_SIGNED: u8 = 1 << 0;
/// INT encoding: a character type.
pub const BTF_INT_CHAR: u8 = 1 << 1;
/// INT encoding: a boolean.
pub const BTF_INT_BOOL: u8 = 1 << 2;
/// The encoding bits (`BTF_INT_*`) of an INT's data word.
pub const fn int_encoding(data: u32) -> u8 {
    ((data >> 24) & 0x0f) as u8
}
/// The bit offset of an INT's data word.
pub const fn int_offset(data: u32) -> u8 {
    ((data >> 16) & 0xff) as u8
}
/// The bit count of an INT's data word.
pub const fn int_bits(data: u32) -> u8 {
    (data & 0xff) as u8
}
/// Packs an INT's data word.
pub const fn make_int(encoding: u8, offset: u8, bits: u8) -> u32 {
    ((encoding as u32) << 24) | ((offset as u32) << 16) | bits as u32
}

/// With kind_flag set on a STRUCT/UNION, a member's `offset` packs the
/// bitfield size in the top 8 bits and the bit offset in the low 24.
pub const fn member_bitfield_size(offset: u32) -> u32 {
    offset >> 24
}
/// The bit offset in a member's offset word of a kind_flag STRUCT/UNION.
pub const fn member_bit_offset(offset: u32) -> u32 {
    offset & 0x00ff_ffff
}

/// FUNC linkage, carried in vlen.
pub const BTF_FUNC_STATIC: u32 = 0;
/// FUNC linkage: global.
pub const BTF_FUNC_GLOBAL: u32 = 1;
/// FUNC linkage: extern.
pub const BTF_FUNC_EXTERN: u32 = 2;

/// VAR linkage.
pub const BTF_VAR_STATIC: u32 = 0;
/// VAR linkage: global, defined here.
pub const BTF_VAR_GLOBAL_ALLOCATED: u32 = 1;
/// VAR linkage: global, defined elsewhere.
pub const BTF_VAR_GLOBAL_EXTERN: u32 = 2;

/// Record sizes that follow `struct btf_type` for each kind.
pub const BTF_ARRAY_LEN: usize = 12;
/// Size of `struct btf_member`.
pub const BTF_MEMBER_LEN: usize = 12;
/// Size of `struct btf_enum`.
pub const BTF_ENUM_LEN: usize = 8;
/// Size of `struct btf_param`.
pub const BTF_PARAM_LEN: usize = 8;
/// Size of `struct btf_var`.
pub const BTF_VAR_LEN: usize = 4;
/// Size of `struct btf_var_secinfo`.
pub const BTF_VAR_SECINFO_LEN: usize = 12;
/// Size of `struct btf_decl_tag`.
pub const BTF_DECL_TAG_LEN: usize = 4;
/// Size of `struct btf_enum64`.
pub const BTF_ENUM64_LEN: usize = 12;
/// LOC_PARAM: `u32 flags`, then vlen `u32` values.
pub const BTF_LOC_PARAM_LEN: usize = 4;
/// Size of one LOC_PARAM value.
pub const BTF_LOC_VALUE_LEN: usize = 4;
/// LOC_PROTO: vlen `u32` LOC_PARAM ids.
pub const BTF_LOC_PROTO_PARAM_LEN: usize = 4;
/// LOCSEC: vlen `struct btf_loc { u32 func; u32 loc_proto; u32 offset; }`.
pub const BTF_LOC_LEN: usize = 12;

/// LOC_PARAM flags (`enum btf_loc_param_flags`).
pub const BTF_LOC_PARAM_SIGNED: u32 = 0x1;
/// LOC_PARAM flag: the parameter is a constant, in the values (low, high word).
pub const BTF_LOC_PARAM_CONST: u32 = 0x2;
/// LOC_PARAM flag: the constant is an address.
pub const BTF_LOC_PARAM_ADDR: u32 = 0x4;
/// LOC_PARAM flag: the first value is a register number.
pub const BTF_LOC_PARAM_REG: u32 = 0x8;
/// LOC_PARAM flag: the parameter is in memory at the register (plus offset), not in it.
pub const BTF_LOC_PARAM_DEREF: u32 = 0x10;
/// LOC_PARAM flag: the value after the register is an offset added to it.
pub const BTF_LOC_PARAM_OFFSET: u32 = 0x20;
/// Every LOC_PARAM flag.
pub const BTF_LOC_PARAM_FLAGS_MASK: u32 = 0x3f;
/// The register number that means the frame base (DW_OP_fbreg).
pub const BTF_LOC_PARAM_FBREG: u32 = 0xffff_ffff;

/// Size of `struct btf_layout { u8 info_sz; u8 elem_sz; u16 flags; }`, the
/// layout section's record: one per kind, indexed by kind number.
pub const BTF_LAYOUT_LEN: usize = 4;

/// One kind's entry in the layout section: the bytes that follow its
/// `struct btf_type` are `info_sz + vlen * elem_sz`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KindLayout {
    /// Bytes after `struct btf_type` whatever the vlen.
    pub info_sz: u8,
    /// Bytes per vlen element.
    pub elem_sz: u8,
    /// Flags of the kind (none are defined: 0).
    pub flags: u16,
}

/// The layout of every kind this crate knows, as libbpf writes it
/// (`layouts[]` in libbpf's btf.c, bpf-next with the location kinds).
pub const fn known_layout(kind: Kind) -> Option<KindLayout> {
    let (info_sz, elem_sz) = match kind {
        BTF_KIND_UNKN | BTF_KIND_PTR | BTF_KIND_FWD | BTF_KIND_TYPEDEF | BTF_KIND_VOLATILE
        | BTF_KIND_CONST | BTF_KIND_RESTRICT | BTF_KIND_FUNC | BTF_KIND_FLOAT
        | BTF_KIND_TYPE_TAG => (0, 0),
        BTF_KIND_INT => (4, 0),
        BTF_KIND_ARRAY => (BTF_ARRAY_LEN, 0),
        BTF_KIND_STRUCT | BTF_KIND_UNION => (0, BTF_MEMBER_LEN),
        BTF_KIND_ENUM => (0, BTF_ENUM_LEN),
        BTF_KIND_FUNC_PROTO => (0, BTF_PARAM_LEN),
        BTF_KIND_VAR => (BTF_VAR_LEN, 0),
        BTF_KIND_DATASEC => (0, BTF_VAR_SECINFO_LEN),
        BTF_KIND_DECL_TAG => (BTF_DECL_TAG_LEN, 0),
        BTF_KIND_ENUM64 => (0, BTF_ENUM64_LEN),
        BTF_KIND_LOC_PARAM => (BTF_LOC_PARAM_LEN, BTF_LOC_VALUE_LEN),
        BTF_KIND_LOC_PROTO => (0, BTF_LOC_PROTO_PARAM_LEN),
        BTF_KIND_LOCSEC => (0, BTF_LOC_LEN),
        _ => return None,
    };
    Some(KindLayout {
        info_sz: info_sz as u8,
        elem_sz: elem_sz as u8,
        flags: 0,
    })
}

/// The kernel's limits (kernel/bpf/btf.c).
pub const BTF_MAX_TYPE: u32 = 0x000f_ffff;
/// The largest string offset a name may have.
pub const BTF_MAX_NAME_OFFSET: u32 = 0x00ff_ffff;
/// bpf-next's vlen limit (24 bits); Linux 6.18's is [`BTF_MAX_VLEN_6_18`].
pub const BTF_MAX_VLEN: u32 = 0x00ff_ffff;
/// Linux 6.18's vlen limit (16 bits).
pub const BTF_MAX_VLEN_6_18: u32 = 0xffff;
/// The longest symbol name kallsyms holds, NUL included (`KSYM_NAME_LEN`).
pub const KSYM_NAME_LEN: usize = 512;

/// The name bpftool prints for a kind ([`Kind::name`]).
pub const fn kind_name(kind: Kind) -> &'static str {
    kind.name()
}
