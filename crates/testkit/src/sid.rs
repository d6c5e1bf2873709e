//! Oracles from Debian sid (pahole 1.32, bpftool with libbpf 1.8, gcc 16,
//! clang) run inside the chroot that scripts/sid-chroot.sh makes and caches.
//!
//! Host paths a command reads or writes are bind-mounted at the same path
//! inside, so arguments need no translation:
//! `sid.run_ok(&[dir], "pahole", ["-C", "foo", obj])`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The made chroot and the script that enters it.
#[derive(Clone, Debug)]
pub struct Sid {
    /// The chroot's root directory (under the cache folder).
    pub root: PathBuf,
    script: PathBuf,
}

/// The sid chroot, or a skip naming the script that makes it.
pub fn sid_or_skip() -> Option<Sid> {
    static SID: OnceLock<Option<Sid>> = OnceLock::new();
    let sid = SID.get_or_init(find).clone();
    if sid.is_none() {
        crate::skip(if crate::is_root() {
            "the sid chroot is missing: run scripts/sid-chroot.sh"
        } else {
            "the sid chroot needs root (mount, chroot)"
        });
    }
    sid
}

/// The chroot when it is made with the script's current package list (its
/// `path` command checks the stamp) and we may enter it.
fn find() -> Option<Sid> {
    if !crate::is_root() {
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/sid-chroot.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg("path")
        .env("BTFKIT_CACHE", crate::cache_dir())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let root = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim_end());
    Some(Sid { root, script })
}

impl Sid {
    /// `program args...` inside the chroot, each of `binds` (files or
    /// directories) visible at its host path.
    pub fn command<I, S>(&self, binds: &[&Path], program: &str, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new("bash");
        cmd.arg(&self.script)
            .arg("run")
            .env("BTFKIT_CACHE", crate::cache_dir());
        for b in binds {
            cmd.arg("--bind").arg(b);
        }
        cmd.arg("--").arg(program).args(args);
        cmd
    }

    /// Runs [`Sid::command`] and returns its stdout; panics with its stderr
    /// when it fails.
    pub fn run_ok<I, S>(&self, binds: &[&Path], program: &str, args: I) -> Vec<u8>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        crate::run_ok(&mut self.command(binds, program, args))
    }
}
