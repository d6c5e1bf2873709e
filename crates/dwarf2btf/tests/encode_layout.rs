//! `EncodeOptions::layout` (`btfkit encode --layout`, pahole's
//! `--btf_features=layout`): base BTF gets bpf-next's 32-byte header and a
//! layout section placed as libbpf's selftest `btf_kind_encoding` requires
//! (between types and strings, 4-byte aligned, one record per kind); split
//! BTF gets none, as pahole master's btf_encoder writes it ("only add layout
//! to base BTF"). No libbpf from a package registry reads the layout
//! section yet (1.7.0 is the newest), so placement is checked against the
//! selftest's rules, not by a libbpf.

use std::sync::Arc;

use btf::format::*;
use btf::Btf;
use dwarf2btf::load::ElfFile;
use dwarf2btf::{EncodeOptions, FuncMode, NoProgress};
use testkit::Fixture;

fn word(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

#[test]
fn encode_layout_base_has_layout_section_split_has_none_as_pahole() {
    if testkit::tool_or_skip("cc", "gcc").is_none() {
        return;
    }
    let fx = Fixture::new();
    fx.write(
        "a.c",
        "struct node { struct node *next; int v; };\nint f(struct node *n) { return n->v; }\n",
    );
    let obj = fx.cc("a.o", &["a.c"], &["-g", "-O1", "-c"]);
    let elf = ElfFile::open(&obj).expect("open");
    let opts = EncodeOptions {
        funcs: FuncMode::Pahole,
        layout: true,
        ..EncodeOptions::default()
    };
    let base = dwarf2btf::encode(&elf, None, &opts, &NoProgress)
        .expect("encode")
        .btf;
    let b = base.to_bytes();
    assert_eq!(word(&b, 4), BTF_HEADER_LAYOUT_LEN, "hdr_len");
    let (type_off, type_len, str_off) = (word(&b, 8), word(&b, 12), word(&b, 16));
    let (layout_off, layout_len) = (word(&b, 24), word(&b, 28));
    assert_eq!(layout_off % 4, 0);
    assert_eq!(layout_off, type_off + type_len);
    assert_eq!(str_off, layout_off + layout_len);
    assert_eq!(
        layout_len as usize,
        BTF_LAYOUT_LEN * (usize::from(BTF_KIND_MAX) + 1)
    );
    let parsed = Btf::parse(&b).expect("parse");
    assert_eq!(parsed.to_bytes(), b);
    assert!(btf::validate::validate_for(&parsed, btf::validate::Target::BpfNext).is_empty());

    // Without the option, the classic header; the types are the same.
    let plain = dwarf2btf::encode(
        &elf,
        None,
        &EncodeOptions {
            layout: false,
            ..opts.clone()
        },
        &NoProgress,
    )
    .expect("encode")
    .btf;
    assert_eq!(word(&plain.to_bytes(), 4), BTF_HEADER_LEN);
    assert_eq!(plain.own_types(), base.own_types());

    // Split over the base: no layout section of its own.
    let split = dwarf2btf::encode(&elf, Some(Arc::new(parsed)), &opts, &NoProgress)
        .expect("encode split")
        .btf;
    let s = split.to_bytes();
    assert_eq!(
        word(&s, 4),
        BTF_HEADER_LEN,
        "split BTF has the classic header"
    );
}
