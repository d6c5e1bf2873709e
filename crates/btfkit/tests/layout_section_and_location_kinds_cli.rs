//! The layout section and location kinds from the command line: `dump` of
//! a kind read through the layout section (a warning, exit 0), `diff --only
//! inline` on inline sites, `encode --layout`. The blobs are testkit's
//! fixtures (bpftool's location-kinds selftest BTF).

use std::path::Path;
use std::process::{Command, Output};

use btf::TypeData;
use testkit::layout_and_location_btf as fixtures;
use testkit::Fixture;

fn btfkit(args: &[&Path]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .args(args)
        .output()
        .expect("run btfkit")
}

#[test]
fn cli_dump_unknown_kind_warns_and_prints_unknown_kind_n() {
    let fx = Fixture::new();
    let mut btf = fixtures::loc_btf();
    btf.set_layout(true);
    let (mut blob, _) = fixtures::with_extra_layout_record(&btf.to_bytes(), 4, 4);
    // LOC_PARAM [5] becomes kind 23, which the new record shapes alike.
    let at: usize = btf.own_types()[..4]
        .iter()
        .map(btf::Type::encoded_len)
        .sum();
    fixtures::set_info(&mut blob, 32 + at, 23 << 24 | btf.own_types()[4].vlen());
    let file = fx.path("unknown.btf");
    std::fs::write(&file, blob).expect("write");
    let o = btfkit(&[Path::new("dump"), &file]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning:") && err.contains("UNKNOWN_KIND_23"),
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("\n[5] UNKNOWN_KIND_23 '(anon)'\n[6] LOC_PARAM"),
        "{out}"
    );
}

#[test]
fn cli_diff_only_inline_reports_a_moved_parameter() {
    let fx = Fixture::new();
    let a = fixtures::loc_btf();
    let mut b = fixtures::loc_btf();
    if let Some(TypeData::LocParam { values, .. }) = b.type_by_id_mut(4).map(|t| &mut t.data) {
        values[0] = 7;
    }
    let (pa, pb) = (fx.path("a.btf"), fx.path("b.btf"));
    std::fs::write(&pa, a.to_bytes()).expect("write");
    std::fs::write(&pb, b.to_bytes()).expect("write");
    let o = btfkit(&[
        Path::new("diff"),
        &pa,
        &pb,
        Path::new("--only"),
        Path::new("inline"),
    ]);
    assert_eq!(o.status.code(), Some(1), "differences exit 1");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("~ inline foo"), "{out}");
    assert!(out.contains("reg1") && out.contains("reg7"), "{out}");
    let same = btfkit(&[Path::new("diff"), &pa, &pa]);
    assert_eq!(same.status.code(), Some(0));
}

#[test]
fn cli_encode_layout_writes_32_byte_header() {
    if testkit::tool_or_skip("cc", "gcc").is_none() {
        return;
    }
    let fx = Fixture::new();
    fx.write(
        "a.c",
        "struct s { int a; struct s *next; };\nint f(struct s *s) { return s->a; }\n",
    );
    let obj = fx.cc("a.o", &["a.c"], &["-g", "-O1", "-c"]);
    let out = fx.path("a.btf");
    let o = btfkit(&[
        Path::new("encode"),
        &obj,
        Path::new("-o"),
        &out,
        Path::new("--layout"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let b = std::fs::read(&out).expect("read");
    assert_eq!(&b[4..8], &32u32.to_le_bytes(), "hdr_len");
    assert_ne!(&b[28..32], &0u32.to_le_bytes(), "layout_len");
    let dump = btfkit(&[Path::new("dump"), &out]);
    assert!(dump.status.success());
    assert!(String::from_utf8_lossy(&dump.stdout).contains("STRUCT 's'"));
}
