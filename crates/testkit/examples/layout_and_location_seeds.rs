//! Writes fuzz seeds with bpf-next's layout section and location kinds
//! into DIR (scripts/fuzz.sh runs it):
//! `cargo run -p testkit --example layout_and_location_seeds -- DIR`.
//!
//! - `loc.btf`: bpftool's location-kinds selftest BTF, classic header;
//! - `loc-layout.btf`: the same with a layout section;
//! - `unknown-kind.btf`: with a layout record for kind 23 shaped like a
//!   LOC_PARAM (one info word, 4-byte records), and LOC_PARAM [5] turned
//!   into that kind;
//! - `wide-vlen.btf`: a struct of 70,000 members (vlen past 16 bits).

use std::path::PathBuf;

use btf::format::*;
use btf::{Btf, Member, Type, TypeData};
use testkit::layout_and_location_btf as fixtures;

fn main() -> std::io::Result<()> {
    let dir = PathBuf::from(std::env::args_os().nth(1).unwrap_or_else(|| ".".into()));
    std::fs::create_dir_all(&dir)?;
    let mut btf = fixtures::loc_btf();
    std::fs::write(dir.join("loc.btf"), btf.to_bytes())?;
    btf.set_layout(true);
    let with_layout = btf.to_bytes();
    std::fs::write(dir.join("loc-layout.btf"), &with_layout)?;

    let (mut unknown, _) = fixtures::with_extra_layout_record(&with_layout, 4, 4);
    let at: usize = btf.own_types()[..4].iter().map(Type::encoded_len).sum();
    let t = &btf.own_types()[4];
    fixtures::set_info(&mut unknown, 32 + at, 23 << 24 | t.vlen());
    std::fs::write(dir.join("unknown-kind.btf"), unknown)?;

    let mut wide = Btf::new();
    fixtures::add_int(&mut wide, "int", 4, BTF_INT_SIGNED);
    let members = (0..70_000u32)
        .map(|i| Member {
            name_off: 0,
            ty: 1,
            offset: i * 32,
        })
        .collect();
    wide.add_type(Type::new(
        0,
        TypeData::Struct {
            size: 280_000,
            members,
        },
    ));
    std::fs::write(dir.join("wide-vlen.btf"), wide.to_bytes())
}
