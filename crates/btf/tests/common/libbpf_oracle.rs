//! The libbpf oracle program (tests/oracle/libbpf_dedup.c), built at test
//! time against Debian's libbpf-dev (1.1) or against the newest libbpf (1.7.0, from crates.io) built by
//! scripts/fetch-libbpf.sh, and the comparisons the dedup tests make.

use std::path::{Path, PathBuf};
use std::process::Command;

use testkit::{run_ok, Fixture};

/// Builds the oracle in `fx` as `name`: against the libbpf installed at
/// `libbpf` (include/, lib/libbpf.a), or the system's (`-lbpf`).
pub fn build(fx: &Fixture, libbpf: Option<&Path>, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/libbpf_dedup.c");
    let exe = fx.path(name);
    let mut cmd = Command::new("cc");
    cmd.args(["-O2", "-Wall", "-o"]).arg(&exe);
    match libbpf {
        Some(dir) => {
            cmd.arg(format!("-I{}", dir.join("include").display()))
                .arg(&src)
                .arg(dir.join("lib/libbpf.a"))
                .args(["-lelf", "-lz"]);
        }
        None => {
            cmd.arg(&src).arg("-lbpf");
        }
    }
    run_ok(&mut cmd);
    exe
}

/// Concatenates `inputs` (over `base`, if given) with the oracle into `out`.
pub fn concat<P: AsRef<Path>>(oracle: &Path, out: &Path, base: Option<&Path>, inputs: &[P]) {
    let mut cmd = Command::new(oracle);
    cmd.arg("concat").arg(out);
    if let Some(b) = base {
        cmd.arg("--base").arg(b);
    }
    cmd.args(inputs.iter().map(AsRef::as_ref));
    run_ok(&mut cmd);
}

/// libbpf's dedup of `input`: its bytes, or what it said when it refused.
pub fn try_dedup(oracle: &Path, input: &Path, base: Option<&Path>) -> Result<Vec<u8>, String> {
    let out = input.with_extension("libbpf");
    let mut cmd = Command::new(oracle);
    cmd.arg("dedup").arg(&out).arg(input);
    if let Some(b) = base {
        cmd.arg("--base").arg(b);
    }
    let o = cmd.output().expect("run the libbpf oracle");
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).into_owned());
    }
    Ok(std::fs::read(&out).expect("read libbpf's output"))
}

/// Where two blobs first differ, said in terms of the BTF layout.
pub fn assert_same(ours: &[u8], libbpf: &[u8], what: &str) {
    if ours == libbpf {
        return;
    }
    let at = ours
        .iter()
        .zip(libbpf)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(libbpf.len()));
    panic!(
        "{what}: our dedup differs from libbpf's at byte {at:#x} (ours {} bytes, libbpf {} bytes)",
        ours.len(),
        libbpf.len()
    );
}
