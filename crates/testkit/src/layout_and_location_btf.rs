//! BTF with bpf-next's layout section and location kinds, built with the
//! builder: shared by the btf crate's tests
//! (tests/layout_section_and_location_kinds.rs), the command line's
//! (layout_section_and_location_kinds_cli.rs) and the fuzz seeds
//! (testkit's examples/layout_and_location_seeds.rs).

use btf::format::*;
use btf::{Btf, Loc, Param, Type, TypeData, TypeId};

/// Adds an INT of `size` bytes, all bits used.
pub fn add_int(btf: &mut Btf, name: &str, size: u32, encoding: u8) -> TypeId {
    let n = btf.add_str(name);
    btf.add_type(Type::new(
        n,
        TypeData::Int {
            size,
            encoding,
            offset: 0,
            bits: (size * 8) as u8,
        },
    ))
}

/// The BTF of bpftool's selftest `bpftool_btf_dump` (`loc_dump`), which
/// builds it with libbpf's `btf__add_loc_param` & co.: an INT, a FUNC_PROTO
/// of five parameters, FUNC `foo`, six LOC_PARAMs of every form, a
/// LOC_PROTO over them and a LOCSEC `inline.text` with one site.
pub fn loc_btf() -> Btf {
    let mut btf = Btf::new();
    add_int(&mut btf, "int", 4, BTF_INT_SIGNED);
    let params = (1..=5)
        .map(|i| Param {
            name_off: btf.add_str(&format!("arg{i}")),
            ty: 1,
        })
        .collect();
    btf.add_type(Type::new(0, TypeData::FuncProto { ret: 1, params }));
    let n = btf.add_str("foo");
    btf.add_type(Type::new(
        n,
        TypeData::Func {
            proto: 2,
            linkage: BTF_FUNC_STATIC,
        },
    ));
    let params: [(u32, u32, [u32; 2]); 6] = [
        (4, BTF_LOC_PARAM_REG, [1, 0]),
        (
            8,
            BTF_LOC_PARAM_REG | BTF_LOC_PARAM_DEREF | BTF_LOC_PARAM_OFFSET,
            [2, 0x10],
        ),
        (
            8,
            BTF_LOC_PARAM_REG | BTF_LOC_PARAM_OFFSET | BTF_LOC_PARAM_SIGNED,
            [BTF_LOC_PARAM_FBREG, (-0x10i32) as u32],
        ),
        (
            8,
            BTF_LOC_PARAM_ADDR | BTF_LOC_PARAM_CONST,
            [0x9abcdef0, 0x12345678],
        ),
        (8, BTF_LOC_PARAM_CONST, [0xfeedface, 0xdeadbeef]),
        (
            8,
            BTF_LOC_PARAM_REG | BTF_LOC_PARAM_DEREF | BTF_LOC_PARAM_OFFSET | BTF_LOC_PARAM_SIGNED,
            [BTF_LOC_PARAM_FBREG, (-0x20i32) as u32],
        ),
    ];
    for (size, flags, values) in params {
        let n = if size == 4 { 1 } else { 2 };
        btf.add_type(Type::new(
            0,
            TypeData::LocParam {
                size,
                flags,
                values: values[..n].into(),
            },
        ));
    }
    btf.add_type(Type::new(
        0,
        TypeData::LocProto {
            params: (4..=9).collect(),
        },
    ));
    let n = btf.add_str("inline.text");
    btf.add_type(Type::new(
        n,
        TypeData::Locsec {
            locs: vec![Loc {
                func: 3,
                loc_proto: 10,
                offset: 64,
            }],
        },
    ));
    btf
}

fn le32(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn put_le32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// `btf` (little-endian, with a layout section) with one more layout
/// record appended, for kind `BTF_KIND_MAX + 1 + n` where `n` is the
/// number of records already past the known kinds; the strings move up.
/// Returns the blob and the offset of the new record.
pub fn with_extra_layout_record(blob: &[u8], info_sz: u8, elem_sz: u8) -> (Vec<u8>, usize) {
    let mut b = blob.to_vec();
    let (str_off, layout_off, layout_len) = (le32(&b, 16), le32(&b, 24), le32(&b, 28));
    let hdr = le32(&b, 4) as usize;
    let at = hdr + (layout_off + layout_len) as usize;
    b.splice(at..at, [info_sz, elem_sz, 0, 0]);
    put_le32(&mut b, 16, str_off + 4);
    put_le32(&mut b, 28, layout_len + 4);
    (b, at)
}

/// Rewrites the `info` word of the type at `type_at` (offset in the blob).
pub fn set_info(b: &mut [u8], type_at: usize, info: u32) {
    put_le32(b, type_at + 4, info);
}
