//! `btfkit check` without `--attach`: the rules chosen by the header, the
//! JSON of its results, and a second file refused as a usage error. Oracles:
//! the running kernel's BPF_BTF_LOAD (what a Linux kernel takes), the raw
//! bytes at the offsets the JSON gives.

use std::path::Path;
use std::process::{Command, Output};

use btf::{Btf, SYSFS_VMLINUX};

fn btfkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .args(args)
        .output()
        .expect("run btfkit")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(out)))
}

#[test]
fn check_with_a_second_file_but_no_attach_is_a_usage_error() {
    let o = btfkit(&["check", SYSFS_VMLINUX, "/proc/kallsyms"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--attach"), "{}", text(&o));
}

/// `encode --layout` writes bpf-next's 32-byte header: `check` picks
/// bpf-next's rules by itself and finds nothing; asked for Linux 6.18's,
/// it finds the header problems the running kernel (a released one)
/// rejects the blob for.
#[test]
fn check_layout_output_by_bpf_next_rules_and_linux_rules_agree_with_kernel() {
    if testkit::tool_or_skip("cc", "gcc").is_none() {
        return;
    }
    let fx = testkit::Fixture::new();
    fx.write(
        "a.c",
        "struct s { int a; struct s *next; };\nint f(struct s *s) { return s->a; }\n",
    );
    let obj = fx.cc("a.o", &["a.c"], &["-g", "-O1", "-c"]);
    let out = fx.path("a.btf");
    let p = |p: &Path| p.to_str().expect("path").to_owned();
    let o = btfkit(&["encode", &p(&obj), "-o", &p(&out), "--layout"]);
    assert!(o.status.success(), "{}", text(&o));

    let o = btfkit(&["check", &p(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("OK (") && text(&o).contains("bpf-next rules"));
    let o = btfkit(&["check", "--json", &p(&out)]);
    assert_eq!(json(&o)["target"], "bpf-next");
    assert_eq!(json(&o)["problems"].as_array().map(Vec::len), Some(0));

    let o = btfkit(&["check", "--target", "linux-6.18", &p(&out)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("2 problems (linux-6.18 rules)"),
        "{}",
        text(&o)
    );

    let Some(()) = testkit::kernel_tier("loads BTF into the running kernel (root, bpf)") else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("BPF_BTF_LOAD needs root");
    }
    let o = btfkit(&[
        "check",
        "--json",
        "--kernel",
        "--target",
        "linux-6.18",
        &p(&out),
    ]);
    let v = json(&o);
    assert_eq!(v["kernel"]["accepted"], false, "{v}");
    assert!(!v["problems"].as_array().expect("problems").is_empty());
    assert_eq!(o.status.code(), Some(1));
}

/// A TYPEDEF of the running kernel's BTF made to name itself: `check
/// --json` gives its id, the offset of its record (the raw bytes there are
/// that TYPEDEF) and one problem, and the kernel's log names the same id.
#[test]
fn check_json_problem_id_and_offset_match_raw_bytes_and_kernel_log() {
    let vmlinux = match std::fs::read(SYSFS_VMLINUX) {
        Ok(b) => b,
        Err(e) => return testkit::skip(&format!("cannot read {SYSFS_VMLINUX}: {e}")),
    };
    let btf = Btf::parse(&vmlinux).expect("parse vmlinux");
    let h = btf.header();
    let mut off = h.hdr_len as usize + h.type_off as usize;
    let mut found = None;
    for (id, t) in btf.iter() {
        if t.kind_name() == "TYPEDEF" {
            found = Some((id, off));
            break;
        }
        off += t.encoded_len();
    }
    let (id, off) = found.expect("a TYPEDEF");
    let mut bad = vmlinux.clone();
    bad[off + 8..off + 12].copy_from_slice(&id.to_le_bytes());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("loop.btf");
    std::fs::write(&path, &bad).expect("write");
    let path = path.to_str().expect("path");

    let o = btfkit(&["check", "--json", path]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v = json(&o);
    assert_eq!(v["target"], "linux-6.18");
    let problems = v["problems"].as_array().expect("problems");
    let p = problems
        .iter()
        .find(|p| p["id"] == id)
        .unwrap_or_else(|| panic!("no problem of [{id}] in {v}"));
    assert_eq!(p["kind"], "TYPEDEF");
    let at = p["offset"].as_u64().expect("offset") as usize;
    let word = |o: usize| u32::from_le_bytes(bad[o..o + 4].try_into().expect("4 bytes"));
    assert_eq!(word(at + 4) >> 24 & 0x1f, 8, "kind TYPEDEF at the offset");
    assert_eq!(word(at + 8), id, "the TYPEDEF names itself");
    assert!(!p["message"].as_str().unwrap_or("").is_empty());

    let Some(()) = testkit::kernel_tier("loads BTF into the running kernel (root, bpf)") else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("BPF_BTF_LOAD needs root");
    }
    let o = btfkit(&["check", "--json", "--kernel", path]);
    let v = json(&o);
    assert_eq!(v["kernel"]["accepted"], false);
    let log: Vec<&str> = v["kernel"]["log"]
        .as_array()
        .expect("log")
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert!(
        log.iter().any(|l| l.contains(&format!("[{id}]"))),
        "{log:?}"
    );
}

/// One problem reads "1 problem".
#[test]
fn check_counts_one_problem_in_the_singular() {
    let vmlinux = match std::fs::read(SYSFS_VMLINUX) {
        Ok(b) => b,
        Err(e) => return testkit::skip(&format!("cannot read {SYSFS_VMLINUX}: {e}")),
    };
    let btf = Btf::parse(&vmlinux).expect("parse vmlinux");
    let (_, t) = btf
        .iter()
        .find(|(_, t)| t.kind_name() == "PTR")
        .expect("PTR");
    let h = btf.header();
    let off = h.hdr_len as usize
        + h.type_off as usize
        + btf
            .iter()
            .take_while(|(_, u)| !std::ptr::eq(*u, t))
            .map(|(_, u)| u.encoded_len())
            .sum::<usize>();
    let mut bad = vmlinux.clone();
    let past = btf.type_count() + 5;
    bad[off + 8..off + 12].copy_from_slice(&past.to_le_bytes());
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ptr.btf");
    std::fs::write(&path, &bad).expect("write");
    let o = btfkit(&["check", path.to_str().expect("path")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains(": 1 problem ("), "{}", text(&o));
}
