//! Bad input never crashes btfkit: corrupted copies of the running kernel's
//! BTF, made at test time, give a clear error naming the offset or the type
//! id and exit code 1 (2 for usage errors), never a panic or a signal.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use btf::format::*;
use btf::{Btf, TypeData, SYSFS_VMLINUX};

const BIN: &str = env!("CARGO_BIN_EXE_btfkit");

fn vmlinux_or_skip() -> Option<Vec<u8>> {
    match std::fs::read(SYSFS_VMLINUX) {
        Ok(b) => Some(b),
        Err(e) => {
            testkit::skip(&format!("cannot read {SYSFS_VMLINUX}: {e}"));
            None
        }
    }
}

fn btfkit(args: &[&str], file: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .arg(file)
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

/// Exit code 0 or 1, no panic (101) and no signal.
fn assert_no_crash(out: &Output, what: &str) {
    let code = out.status.code();
    assert!(
        matches!(code, Some(0 | 1)) && !text(out).contains("panicked"),
        "{what}: {:?}\n{}",
        out.status,
        text(out)
    );
}

/// Exit code 1 with every one of `mentions` in the output.
fn assert_fails_naming(out: &Output, mentions: &[&str], what: &str) {
    assert_no_crash(out, what);
    assert_eq!(out.status.code(), Some(1), "{what}: {}", text(out));
    for m in mentions {
        assert!(text(out).contains(m), "{what}: no '{m}' in:\n{}", text(out));
    }
}

/// Where each type's record starts in the blob, by id.
fn type_offsets(blob: &[u8], btf: &Btf) -> Vec<(u32, usize, &'static str)> {
    let h = btf.header();
    let mut off = h.hdr_len as usize + h.type_off as usize;
    let mut out = Vec::new();
    for (id, t) in btf.iter() {
        out.push((id, off, t.kind_name()));
        off += t.encoded_len();
    }
    assert!(off <= blob.len());
    out
}

fn put_u32(blob: &mut [u8], off: usize, v: u32) {
    blob[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn first_of_kind(blob: &[u8], btf: &Btf, kind: &str) -> (u32, usize) {
    type_offsets(blob, btf)
        .into_iter()
        .find(|&(_, _, k)| k == kind)
        .map(|(id, off, _)| (id, off))
        .unwrap_or_else(|| panic!("no {kind} in vmlinux BTF"))
}

struct Corrupt {
    dir: tempfile::TempDir,
}

impl Corrupt {
    fn new() -> Corrupt {
        Corrupt {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, bytes).expect("write corrupted copy");
        p
    }
}

const DUMPS: &[&[&str]] = &[
    &["dump"],
    &["dump", "--format", "json"],
    &["dump", "--format", "c"],
];

#[test]
fn empty_file() {
    let c = Corrupt::new();
    let p = c.write("empty", &[]);
    assert_fails_naming(&btfkit(&["check"], &p), &["empty"], "check empty");
    for d in DUMPS {
        assert_fails_naming(&btfkit(d, &p), &["empty"], "dump empty");
    }
}

#[test]
fn truncated_header() {
    let Some(vmlinux) = vmlinux_or_skip() else {
        return;
    };
    let c = Corrupt::new();
    let p = c.write("short", &vmlinux[..10]);
    assert_fails_naming(&btfkit(&["check"], &p), &["offset"], "check short header");
    for d in DUMPS {
        assert_fails_naming(&btfkit(d, &p), &["offset"], "dump short header");
    }
}

#[test]
fn section_lengths_past_the_end() {
    let Some(vmlinux) = vmlinux_or_skip() else {
        return;
    };
    let c = Corrupt::new();
    let mut long_strings = vmlinux.clone();
    put_u32(&mut long_strings, 20, 0x7fff_0000);
    let truncated = &vmlinux[..vmlinux.len() / 2];
    for (name, bytes) in [("str_len", &long_strings[..]), ("cut", truncated)] {
        let p = c.write(name, bytes);
        let what = format!("check {name}");
        assert_fails_naming(&btfkit(&["check"], &p), &["section", "0x"], &what);
        for d in DUMPS {
            assert_fails_naming(&btfkit(d, &p), &["section"], &format!("dump {name}"));
        }
    }
}

#[test]
fn unknown_kind() {
    let Some(vmlinux) = vmlinux_or_skip() else {
        return;
    };
    let btf = Btf::parse(&vmlinux).expect("parse vmlinux");
    let (id, off) = first_of_kind(&vmlinux, &btf, "STRUCT");
    let mut bad = vmlinux.clone();
    put_u32(&mut bad, off + 4, make_info(btf::Kind::new(25), false, 0));
    let c = Corrupt::new();
    let p = c.write("kind", &bad);
    let mentions = ["unknown kind 25", &format!("[{id}]")];
    assert_fails_naming(&btfkit(&["check"], &p), &mentions, "check unknown kind");
    for d in DUMPS {
        assert_fails_naming(&btfkit(d, &p), &mentions, "dump unknown kind");
    }
}

#[test]
fn string_offset_out_of_range() {
    let Some(vmlinux) = vmlinux_or_skip() else {
        return;
    };
    let btf = Btf::parse(&vmlinux).expect("parse vmlinux");
    let (id, off) = first_of_kind(&vmlinux, &btf, "STRUCT");
    let mut bad = vmlinux.clone();
    put_u32(&mut bad, off, 0x00ff_fff0);
    let c = Corrupt::new();
    let p = c.write("name", &bad);
    let out = btfkit(&["check"], &p);
    assert_fails_naming(&out, &[&format!("[{id}]"), "name offset 0xfffff0"], "check");
    for d in DUMPS {
        assert_no_crash(&btfkit(d, &p), "dump with a bad name offset");
    }
}

#[test]
fn type_id_out_of_range() {
    let Some(vmlinux) = vmlinux_or_skip() else {
        return;
    };
    let btf = Btf::parse(&vmlinux).expect("parse vmlinux");
    let (id, off) = first_of_kind(&vmlinux, &btf, "PTR");
    let mut bad = vmlinux.clone();
    put_u32(&mut bad, off + 8, btf.type_count() + 5);
    let c = Corrupt::new();
    let p = c.write("ptr", &bad);
    let out = btfkit(&["check"], &p);
    assert_fails_naming(
        &out,
        &[&format!("[{id}] PTR"), "past the last type"],
        "check",
    );
    for d in DUMPS {
        assert_no_crash(&btfkit(d, &p), "dump with a dangling pointer");
    }
}

/// A TYPEDEF that names itself, and two structs that contain each other:
/// dumping them as C must not recurse forever.
#[test]
fn reference_loops() {
    let Some(vmlinux) = vmlinux_or_skip() else {
        return;
    };
    let btf = Btf::parse(&vmlinux).expect("parse vmlinux");
    let c = Corrupt::new();

    let (id, off) = first_of_kind(&vmlinux, &btf, "TYPEDEF");
    let mut self_typedef = vmlinux.clone();
    put_u32(&mut self_typedef, off + 8, id);

    // Two structs whose first member has the other's type.
    let structs: Vec<(u32, usize)> = type_offsets(&vmlinux, &btf)
        .into_iter()
        .filter(|&(id, _, k)| {
            k == "STRUCT"
                && matches!(&btf.type_by_id(id).map(|t| &t.data),
                    Some(TypeData::Struct { members, .. }) if !members.is_empty())
        })
        .map(|(id, off, _)| (id, off))
        .take(2)
        .collect();
    let [(a, a_off), (b, b_off)] = structs[..] else {
        panic!("vmlinux has fewer than two structs with members");
    };
    let mut mutual = vmlinux.clone();
    let first_member_type = BTF_TYPE_LEN + 4;
    put_u32(&mut mutual, a_off + first_member_type, b);
    put_u32(&mut mutual, b_off + first_member_type, a);

    for (name, bytes, mention) in [
        ("typedef", self_typedef, format!("[{id}] TYPEDEF")),
        ("structs", mutual, format!("[{a}] STRUCT")),
    ] {
        let p = c.write(name, &bytes);
        let out = btfkit(&["check"], &p);
        assert_fails_naming(&out, &[&mention, "loop"], &format!("check {name} loop"));
        for d in DUMPS {
            assert_no_crash(&btfkit(d, &p), &format!("dump {name} loop"));
        }
    }
}

/// A fixed-seed xorshift: the same flips on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn random_byte_flips() {
    let Some(vmlinux) = vmlinux_or_skip() else {
        return;
    };
    let c = Corrupt::new();
    let mut rng = Rng(0xb7f0_5eed_0bad_f11e);
    let mut failures = 0;
    for i in 0..300 {
        let mut bad = vmlinux.clone();
        for _ in 0..1 + rng.next() % 3 {
            // Half the flips hit the header and the first types, where a
            // flip changes the most.
            let range = if rng.next() % 2 == 0 { 4096 } else { bad.len() };
            let at = rng.next() as usize % range;
            bad[at] ^= 1 << (rng.next() % 8);
        }
        let p = c.write("flipped", &bad);
        let out = btfkit(&["check"], &p);
        assert_no_crash(&out, &format!("check, flip set #{i}"));
        failures += usize::from(out.status.code() == Some(1));
        // A dump of the whole of vmlinux takes a while: one in twenty.
        if i % 20 == 0 {
            for d in DUMPS {
                assert_no_crash(&btfkit(d, &p), &format!("{d:?}, flip set #{i}"));
            }
        }
    }
    assert!(
        failures > 50,
        "only {failures} of 300 corruptions were caught"
    );
}

/// An input path that cannot be opened: the path and the OS's reason, each
/// once.
#[test]
fn an_unopenable_path_is_named_with_its_reason_once() {
    let c = Corrupt::new();
    let file = c.write("plain", b"not a directory");
    let out = btfkit(&["encode", "-o", "/dev/null"], &file.join("vmlinux"));
    assert_fails_naming(&out, &["plain/vmlinux", "Not a directory"], "encode");
    assert_eq!(
        text(&out).matches("Not a directory").count(),
        1,
        "{}",
        text(&out)
    );
}

#[test]
fn usage_errors_exit_2() {
    let out = Command::new(BIN).arg("check").output().expect("run btfkit");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = Command::new(BIN)
        .args(["check", "--no-such-flag", "x"])
        .output()
        .expect("run btfkit");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn check_accepts_sysfs_vmlinux() {
    if vmlinux_or_skip().is_none() {
        return;
    }
    let out = btfkit(&["check"], Path::new(SYSFS_VMLINUX));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).starts_with(&format!("{SYSFS_VMLINUX}: OK (")));
}

/// With --kernel the kernel's verdict and log are shown; without privilege
/// the error says what is missing.
#[test]
fn check_kernel_shows_the_kernel_log() {
    let Some(()) = testkit::kernel_tier("loads BTF into the running kernel (root, bpf)") else {
        return;
    };
    let Some(vmlinux) = vmlinux_or_skip() else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("BPF_BTF_LOAD needs root");
    }
    let btf = Btf::parse(&vmlinux).expect("parse vmlinux");
    let (id, off) = first_of_kind(&vmlinux, &btf, "TYPEDEF");
    let mut bad = vmlinux.clone();
    put_u32(&mut bad, off + 8, id);
    let c = Corrupt::new();
    let p = c.write("loop", &bad);
    let out = btfkit(&["check", "--kernel"], &p);
    assert_fails_naming(
        &out,
        &["kernel: rejected", "Loop detected", &format!("[{id}]")],
        "check --kernel",
    );

    let good = c.write("good", &vmlinux);
    let out = btfkit(&["check", "--kernel"], &good);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("kernel: accepted"), "{}", text(&out));

    let Some(setpriv) = testkit::tool_or_skip("setpriv", "util-linux") else {
        return;
    };
    std::fs::set_permissions(
        c.dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod tempdir");
    std::fs::set_permissions(&good, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod copy");
    let out = Command::new(setpriv)
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .arg(BIN)
        .args(["check", "--kernel"])
        .arg(&good)
        .output()
        .expect("run btfkit as nobody");
    assert_fails_naming(&out, &["needs root or CAP_BPF"], "check --kernel as nobody");
}
