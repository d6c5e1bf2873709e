//! `btfkit dump` and `btfkit diff` as a user runs them. Oracles: bpftool
//! (Debian's 7.1) run at test time on the same real files for `dump`; for
//! `diff`, a file compared with itself and files changed in known ways.

use std::path::Path;
use std::process::{Command, Output};

use btf::{Btf, Member, Type, TypeData};

fn btfkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .args(args)
        .output()
        .expect("run btfkit")
}

fn bpftool(args: &[&str]) -> Option<Vec<u8>> {
    let tool = testkit::tool_or_skip("bpftool", "bpftool")?;
    Some(testkit::run_ok(Command::new(tool).args(args)))
}

fn first_difference(ours: &[u8], theirs: &[u8]) -> String {
    let (a, b) = (
        String::from_utf8_lossy(ours),
        String::from_utf8_lossy(theirs),
    );
    match a.lines().zip(b.lines()).position(|(x, y)| x != y) {
        Some(i) => format!(
            "line {}: ours {:?}, bpftool {:?}",
            i + 1,
            a.lines().nth(i),
            b.lines().nth(i)
        ),
        None => format!("lengths: ours {}, bpftool {}", ours.len(), theirs.len()),
    }
}

#[test]
fn cli_dump_raw_matches_bpftool_sysfs_vmlinux() {
    let p = btf::SYSFS_VMLINUX;
    if !Path::new(p).exists() {
        return testkit::skip("/sys/kernel/btf/vmlinux is not present");
    }
    let Some(theirs) = bpftool(&["btf", "dump", "file", p]) else {
        return;
    };
    let out = btfkit(&["dump", p]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout == theirs,
        "{}",
        first_difference(&out.stdout, &theirs)
    );
}

#[test]
fn cli_dump_format_json_and_json_flag_equal_bpftool_json_sysfs_vmlinux() {
    let p = btf::SYSFS_VMLINUX;
    if !Path::new(p).exists() {
        return testkit::skip("/sys/kernel/btf/vmlinux is not present");
    }
    let Some(theirs) = bpftool(&["-j", "btf", "dump", "file", p]) else {
        return;
    };
    let theirs: serde_json::Value = serde_json::from_slice(&theirs).unwrap();
    // `--json` is `--format json`, as bpftool's -j.
    for flags in [&["--format", "json"][..], &["--json"], &["--json", "file"]] {
        let out = btfkit(&[&["dump"], flags, &[p]].concat());
        assert!(
            out.status.success(),
            "{flags:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ours: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(ours == theirs, "{flags:?}: JSON differs from bpftool -j");
    }
    // A format and -j at once is a usage error.
    let out = btfkit(&["dump", "--json", "--format", "c", p]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn cli_dump_raw_matches_bpftool_split_module_with_base() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let m = k.image_modules.join("kernel/net/key/af_key.ko");
    let (m, base) = (m.to_str().unwrap(), k.vmlinux.to_str().unwrap());
    let Some(theirs) = bpftool(&["btf", "dump", "file", m, "--base", base]) else {
        return;
    };
    let out = btfkit(&["dump", m, "--base", base]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout == theirs,
        "{}",
        first_difference(&out.stdout, &theirs)
    );
}

#[test]
fn cli_dump_bad_input_exits_1_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8]); 3] = [
        ("empty.btf", b""),
        ("truncated.btf", b"\x9f\xeb\x01\x00\x18\x00"),
        ("not-btf.bin", b"hello, world, this is not BTF at all"),
    ];
    for (name, bytes) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let out = btfkit(&["dump", p.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(name),
            "{name}: error does not name the file: {err}"
        );
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
    let out = btfkit(&["dump", "/nonexistent/file.btf"]);
    assert_eq!(out.status.code(), Some(1));
    let out = btfkit(&["dump", "--format", "yaml", "x"]);
    assert_eq!(out.status.code(), Some(2), "usage error");
}

#[test]
fn cli_diff_identical_sysfs_vmlinux_exits_0() {
    let p = btf::SYSFS_VMLINUX;
    if !Path::new(p).exists() {
        return testkit::skip("/sys/kernel/btf/vmlinux is not present");
    }
    let out = btfkit(&["diff", p, p]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("0 only in A, 0 only in B, 0 changed"),
        "{text}"
    );
}

/// A struct whose member moves, an enum whose value changes, a typedef
/// only in A: each reported, exit 1, and the same in `--json`.
#[test]
fn cli_diff_reports_builder_changes_exits_1() {
    let mut a = Btf::new();
    let n = a.add_str("int");
    let int = a.add_type(Type::new(
        n,
        TypeData::Int {
            size: 4,
            encoding: 1,
            offset: 0,
            bits: 32,
        },
    ));
    let (x, y, s) = (a.add_str("x"), a.add_str("y"), a.add_str("point"));
    let member = |name_off, offset| Member {
        name_off,
        ty: int,
        offset,
    };
    let point = a.add_type(Type::new(
        s,
        TypeData::Struct {
            size: 8,
            members: vec![member(x, 0), member(y, 32)].into(),
        },
    ));
    let mut b = a.clone();
    if let Some(Type {
        data: TypeData::Struct { size, members },
        ..
    }) = b.type_by_id_mut(point)
    {
        *size = 12;
        members[1].offset = 64;
    }
    let n = a.add_str("point_t");
    a.add_type(Type::new(n, TypeData::Typedef { ty: point }));

    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (dir.path().join("a.btf"), dir.path().join("b.btf"));
    std::fs::write(&pa, a.to_bytes()).unwrap();
    std::fs::write(&pb, b.to_bytes()).unwrap();
    let (pa, pb) = (pa.to_str().unwrap(), pb.to_str().unwrap());

    let out = btfkit(&["diff", pa, pb]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("- typedef point_t: struct point"), "{text}");
    assert!(text.contains("~ struct point"), "{text}");
    assert!(text.contains("size 8 -> 12 bytes"), "{text}");
    assert!(text.contains("member y: offset bit 32 -> 64"), "{text}");
    assert!(
        text.contains("1 only in A, 0 only in B, 1 changed, 0 equal"),
        "{text}"
    );

    let out = btfkit(&["diff", "--json", pa, pb]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["only_a"][0]["name"], "point_t");
    assert_eq!(v["changed"][0]["name"], "point");
    assert_eq!(v["changed"][0]["category"], "struct");

    let out = btfkit(&["diff", "--only", "typedef", pa, pa]);
    assert_eq!(out.status.code(), Some(0));
    let out = btfkit(&["diff", "--only", "struct", pa, pb]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 only in A"));
}

/// `diff` says its units: sizes in bytes, offsets in bits; and a qualifier
/// once (`const int c[2]` is CONST -> ARRAY -> CONST -> INT in BTF from
/// GCC's DWARF). Oracle: pahole's layout of the same objects, in bytes.
#[test]
fn cli_diff_units_agree_with_pahole_layout_const_said_once() {
    let Some(pahole) = testkit::tool_or_skip("pahole", "dwarves") else {
        return;
    };
    if testkit::tool_or_skip("cc", "gcc").is_none() {
        return;
    }
    let fx = testkit::Fixture::new();
    fx.write(
        "a.c",
        "struct p { int x; const int c[2]; long y; };\nstruct p gp;\n",
    );
    fx.write(
        "b.c",
        "struct p { int x; const int c[3]; char pad[8]; long y; };\nstruct p gp;\n",
    );
    let mut files = Vec::new();
    for n in ["a", "b"] {
        let obj = fx.cc(&format!("{n}.o"), &[&format!("{n}.c")], &["-g", "-c"]);
        let out = fx.path(&format!("{n}.btf"));
        let o = btfkit(&["encode", obj.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        // pahole: `/* size: N, ...` and `long int y; /* OFFSET SIZE */`.
        let layout = testkit::run_ok(Command::new(&pahole).args(["-C", "p"]).arg(&obj));
        let layout = String::from_utf8_lossy(&layout).into_owned();
        let first_number = |s: &str| -> u64 {
            s.trim_start()
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|d| d.parse().ok())
                .unwrap_or_else(|| panic!("a number in {s:?} of {layout}"))
        };
        let size = layout
            .split_once("/* size:")
            .map(|(_, r)| first_number(r))
            .expect("size");
        let offset = |member: &str| -> Option<u64> {
            layout
                .lines()
                .find(|l| l.contains(member))
                .and_then(|l| l.split_once("/*"))
                .map(|(_, r)| first_number(r))
        };
        files.push((out, size, offset(" y;").expect("y"), offset(" pad[8];")));
    }
    let out = btfkit(&[
        "diff",
        files[0].0.to_str().unwrap(),
        files[1].0.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let (sa, sb) = (files[0].1, files[1].1);
    let (ya, yb) = (files[0].2, files[1].2);
    assert!(text.contains(&format!("size {sa} -> {sb} bytes")), "{text}");
    assert!(
        text.contains(&format!("member y: offset bit {} -> {}", ya * 8, yb * 8)),
        "{text}"
    );
    let pad = files[1].3.expect("pad in b");
    assert!(
        text.contains(&format!("+ member char pad[8] at bit {}", pad * 8)),
        "{text}"
    );
    assert!(text.contains("const int"), "{text}");
    assert!(!text.contains("const const"), "{text}");
}
