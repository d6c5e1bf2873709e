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
fn cli_dump_json_equals_bpftool_json_sysfs_vmlinux() {
    let p = btf::SYSFS_VMLINUX;
    if !Path::new(p).exists() {
        return testkit::skip("/sys/kernel/btf/vmlinux is not present");
    }
    let Some(theirs) = bpftool(&["-j", "btf", "dump", "file", p]) else {
        return;
    };
    let out = btfkit(&["dump", "--format", "json", p]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let theirs: serde_json::Value = serde_json::from_slice(&theirs).unwrap();
    assert!(ours == theirs, "JSON differs from bpftool -j");
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
    assert!(text.contains("size 8 -> 12"), "{text}");
    assert!(text.contains("member y: offset 32 -> 64"), "{text}");
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
