//! `btfkit dedup`: the command around btf::dedup (whose output is compared
//! with libbpf's in crates/btf/tests/dedup_libbpf.rs).

use std::process::Command;

use btf::builder::Builder;
use btf::{Btf, Type, TypeData};

/// `int` and a pointer to it, twice over.
fn duplicated() -> Btf {
    let mut b = Builder::new();
    for _ in 0..2 {
        let int = b.add_int("int", 4, btf::format::BTF_INT_SIGNED);
        b.add_ptr(int);
    }
    b.finish()
}

fn btfkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
}

/// `btfkit dedup INPUT -o OUTPUT`.
fn run_dedup(input: &std::path::Path, output: &std::path::Path) -> std::process::Output {
    btfkit()
        .arg("dedup")
        .arg(input)
        .arg("-o")
        .arg(output)
        .output()
        .expect("run btfkit")
}

#[test]
fn dedup_writes_the_deduplicated_btf_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.btf");
    let output = dir.path().join("out.btf");
    std::fs::write(&input, duplicated().to_bytes()).expect("write input");
    let out = run_dedup(&input, &output);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let btf = btf::load_file(&output, None).expect("the output loads");
    assert_eq!(btf.own_types().len(), 2, "one int, one pointer");
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["in.btf", "out.btf"],
        "no temporary file is left behind"
    );
}

#[test]
fn dedup_failure_leaves_no_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("bad.btf");
    let output = dir.path().join("out.btf");
    let mut bad = Btf::new();
    bad.add_type(Type::new(0, TypeData::Ptr { ty: 42 }));
    std::fs::write(&input, bad.to_bytes()).expect("write input");
    let out = run_dedup(&input, &output);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[1]"), "the error names the type: {stderr}");
    assert!(!output.exists());
}
