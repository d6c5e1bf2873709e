//! The on-disk layout of BTF: the project's `uapi/linux/btf.h`.
//!
//! Everything here is a plain constant or a helper that packs and unpacks
//! the `info` word; reading and writing live in `read.rs` and `write.rs`.

/// `btf_header.magic`, little-endian on disk for little-endian targets.
pub const BTF_MAGIC: u16 = 0xeb9f;
pub const BTF_VERSION: u8 = 1;
/// The classic header: magic, version, flags, hdr_len, type_off/len, str_off/len.
pub const BTF_HEADER_LEN: u32 = 24;
/// The 2026 header adds `layout_off` and `layout_len` (a section describing
/// each kind's record sizes, so that readers can skip kinds they don't know).
pub const BTF_HEADER_LAYOUT_LEN: u32 = 32;

/// Size of `struct btf_type`: name_off, info, size/type.
pub const BTF_TYPE_LEN: usize = 12;

pub const BTF_KIND_UNKN: u8 = 0;
pub const BTF_KIND_INT: u8 = 1;
pub const BTF_KIND_PTR: u8 = 2;
pub const BTF_KIND_ARRAY: u8 = 3;
pub const BTF_KIND_STRUCT: u8 = 4;
pub const BTF_KIND_UNION: u8 = 5;
pub const BTF_KIND_ENUM: u8 = 6;
pub const BTF_KIND_FWD: u8 = 7;
pub const BTF_KIND_TYPEDEF: u8 = 8;
pub const BTF_KIND_VOLATILE: u8 = 9;
pub const BTF_KIND_CONST: u8 = 10;
pub const BTF_KIND_RESTRICT: u8 = 11;
pub const BTF_KIND_FUNC: u8 = 12;
pub const BTF_KIND_FUNC_PROTO: u8 = 13;
pub const BTF_KIND_VAR: u8 = 14;
pub const BTF_KIND_DATASEC: u8 = 15;
pub const BTF_KIND_FLOAT: u8 = 16;
pub const BTF_KIND_DECL_TAG: u8 = 17;
pub const BTF_KIND_TYPE_TAG: u8 = 18;
pub const BTF_KIND_ENUM64: u8 = 19;
pub const BTF_KIND_MAX: u8 = BTF_KIND_ENUM64;

/// Bits of `info`: vlen 0-15, kind 24-28, kind_flag 31. Everything else must be 0.
pub const BTF_INFO_VLEN_MASK: u32 = 0xffff;
pub const BTF_INFO_KIND_SHIFT: u32 = 24;
pub const BTF_INFO_KIND_MASK: u32 = 0x1f;
pub const BTF_INFO_KFLAG_SHIFT: u32 = 31;
pub const BTF_INFO_UNUSED_MASK: u32 = !(BTF_INFO_VLEN_MASK
    | (BTF_INFO_KIND_MASK << BTF_INFO_KIND_SHIFT)
    | (1 << BTF_INFO_KFLAG_SHIFT));

pub const fn info_kind(info: u32) -> u8 {
    ((info >> BTF_INFO_KIND_SHIFT) & BTF_INFO_KIND_MASK) as u8
}
pub const fn info_vlen(info: u32) -> u16 {
    (info & BTF_INFO_VLEN_MASK) as u16
}
pub const fn info_kflag(info: u32) -> bool {
    info >> BTF_INFO_KFLAG_SHIFT != 0
}
pub const fn make_info(kind: u8, kind_flag: bool, vlen: u16) -> u32 {
    ((kind_flag as u32) << BTF_INFO_KFLAG_SHIFT)
        | ((kind as u32) << BTF_INFO_KIND_SHIFT)
        | vlen as u32
}

/// INT data word: encoding 24-27, offset 16-23, bits 0-7.
pub const BTF_INT_SIGNED: u8 = 1 << 0;
pub const BTF_INT_CHAR: u8 = 1 << 1;
pub const BTF_INT_BOOL: u8 = 1 << 2;
pub const fn int_encoding(data: u32) -> u8 {
    ((data >> 24) & 0x0f) as u8
}
pub const fn int_offset(data: u32) -> u8 {
    ((data >> 16) & 0xff) as u8
}
pub const fn int_bits(data: u32) -> u8 {
    (data & 0xff) as u8
}
pub const fn make_int(encoding: u8, offset: u8, bits: u8) -> u32 {
    ((encoding as u32) << 24) | ((offset as u32) << 16) | bits as u32
}

/// With kind_flag set on a STRUCT/UNION, a member's `offset` packs the
/// bitfield size in the top 8 bits and the bit offset in the low 24.
pub const fn member_bitfield_size(offset: u32) -> u32 {
    offset >> 24
}
pub const fn member_bit_offset(offset: u32) -> u32 {
    offset & 0x00ff_ffff
}

/// FUNC linkage, carried in vlen.
pub const BTF_FUNC_STATIC: u16 = 0;
pub const BTF_FUNC_GLOBAL: u16 = 1;
pub const BTF_FUNC_EXTERN: u16 = 2;

/// VAR linkage.
pub const BTF_VAR_STATIC: u32 = 0;
pub const BTF_VAR_GLOBAL_ALLOCATED: u32 = 1;
pub const BTF_VAR_GLOBAL_EXTERN: u32 = 2;

/// Record sizes that follow `struct btf_type` for each kind.
pub const BTF_ARRAY_LEN: usize = 12;
pub const BTF_MEMBER_LEN: usize = 12;
pub const BTF_ENUM_LEN: usize = 8;
pub const BTF_PARAM_LEN: usize = 8;
pub const BTF_VAR_LEN: usize = 4;
pub const BTF_VAR_SECINFO_LEN: usize = 12;
pub const BTF_DECL_TAG_LEN: usize = 4;
pub const BTF_ENUM64_LEN: usize = 12;

/// The kernel's limits (kernel/bpf/btf.c).
pub const BTF_MAX_TYPE: u32 = 0x000f_ffff;
pub const BTF_MAX_NAME_OFFSET: u32 = 0x00ff_ffff;
pub const BTF_MAX_VLEN: u32 = 0xffff;
pub const KSYM_NAME_LEN: usize = 512;

/// The name bpftool prints for a kind.
pub const fn kind_name(kind: u8) -> &'static str {
    match kind {
        BTF_KIND_INT => "INT",
        BTF_KIND_PTR => "PTR",
        BTF_KIND_ARRAY => "ARRAY",
        BTF_KIND_STRUCT => "STRUCT",
        BTF_KIND_UNION => "UNION",
        BTF_KIND_ENUM => "ENUM",
        BTF_KIND_FWD => "FWD",
        BTF_KIND_TYPEDEF => "TYPEDEF",
        BTF_KIND_VOLATILE => "VOLATILE",
        BTF_KIND_CONST => "CONST",
        BTF_KIND_RESTRICT => "RESTRICT",
        BTF_KIND_FUNC => "FUNC",
        BTF_KIND_FUNC_PROTO => "FUNC_PROTO",
        BTF_KIND_VAR => "VAR",
        BTF_KIND_DATASEC => "DATASEC",
        BTF_KIND_FLOAT => "FLOAT",
        BTF_KIND_DECL_TAG => "DECL_TAG",
        BTF_KIND_TYPE_TAG => "TYPE_TAG",
        BTF_KIND_ENUM64 => "ENUM64",
        _ => "UNKNOWN",
    }
}
