//! Kernels built from Debian's sources with a given pahole, by
//! scripts/kernel/build.sh (cached under the cache folder: a rerun with the
//! same sources, options and pahole binary finds the result at once). 6.1
//! and 6.12 are built on the host, 7.2 in the sid chroot (its sources,
//! GCC 16 and clang 21 are there).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The pahole a kernel is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pahole {
    /// The btfkit binary under test, through a symlink named `pahole`.
    Btfkit,
    /// Debian 12's pahole 1.24 (the control of the 6.1 build).
    Debian124,
    /// Debian sid's pahole 1.32 in the sid chroot (the control of 7.2).
    Sid132,
}

impl Pahole {
    /// The result's label in the cache (build.sh's NAME).
    pub fn label(self) -> &'static str {
        match self {
            Pahole::Btfkit => "btfkit",
            Pahole::Debian124 | Pahole::Sid132 => "pahole",
        }
    }

    /// What the kernel's CONFIG_PAHOLE_VERSION says of this pahole
    /// (`btfkit`: the btfkit binary under test).
    pub fn config_version(self, btfkit: &Path) -> String {
        match self {
            Pahole::Btfkit => {
                let out = Command::new(btfkit)
                    .args(["pahole", "--version"])
                    .output()
                    .expect("btfkit pahole --version");
                String::from_utf8_lossy(&out.stdout)
                    .trim()
                    .replace(['v', '.'], "")
            }
            Pahole::Debian124 => "124".to_owned(),
            Pahole::Sid132 => "132".to_owned(),
        }
    }
}

/// The pahole argument of build.sh: btfkit through a symlink named `pahole`
/// (at a fixed path in the cache, so that the kernel's config does not
/// change with the test binary's location), Debian's pahole, or `sid`.
fn pahole_arg(which: Pahole, btfkit: &Path) -> Option<PathBuf> {
    match which {
        Pahole::Btfkit => {
            let dir = crate::cache_dir().join("kernels/bin");
            std::fs::create_dir_all(&dir).expect("create the cache");
            let link = dir.join("pahole");
            let target = btfkit.canonicalize().expect("btfkit binary");
            if std::fs::read_link(&link).ok().as_deref() != Some(target.as_path()) {
                let tmp = dir.join(format!(".pahole.{}", std::process::id()));
                let _ = std::fs::remove_file(&tmp);
                std::os::unix::fs::symlink(&target, &tmp).expect("symlink");
                std::fs::rename(&tmp, &link).expect("rename symlink");
            }
            Some(link)
        }
        Pahole::Debian124 => {
            let p = crate::tool_or_skip("pahole", "dwarves")?;
            let out = Command::new(&p).arg("--version").output().ok()?;
            let v = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            if v != "v1.24" {
                crate::skip(&format!(
                    "the control needs Debian's pahole v1.24, found {v}"
                ));
                return None;
            }
            Some(p)
        }
        // build.sh runs the chroot's own pahole for this name.
        Pahole::Sid132 => Some(PathBuf::from("sid")),
    }
}

/// Builds (or finds cached) kernel `version` ("6.1", "6.12", "7.2") with
/// compiler `cc` ("gcc", "clang") and pahole `which` (`btfkit`: the btfkit
/// binary under test); the result directory (see scripts/kernel/build.sh),
/// or a skip naming what is missing. One build at a time in a process
/// (build.sh also locks the object tree against other processes). Kernel
/// builds are the kernel tier's: without `BTFKIT_KERNEL_TESTS=1` this skips
/// as [`crate::kernel_tier`] does.
pub fn build(version: &str, cc: &str, which: Pahole, btfkit: &Path) -> Option<PathBuf> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    crate::kernel_tier("builds a kernel")?;
    if version == "7.2" || which == Pahole::Sid132 {
        crate::sid::sid_or_skip()?;
    } else {
        let tarball = format!("/usr/src/linux-source-{version}.tar.xz");
        if !Path::new(&tarball).is_file() {
            crate::skip(&format!(
                "{tarball} is missing (apt-get install linux-source-{version})"
            ));
            return None;
        }
        for (tool, package) in [
            ("make", "make"),
            ("bc", "bc"),
            ("flex", "flex"),
            ("bison", "bison"),
        ] {
            crate::tool_or_skip(tool, package)?;
        }
        if cc == "clang" {
            crate::tool_or_skip("clang-19", "clang-19")?;
            crate::tool_or_skip("ld.lld-19", "lld-19")?;
            crate::tool_or_skip("llvm-objcopy-19", "llvm-19")?;
        } else {
            crate::tool_or_skip("gcc", "gcc")?;
        }
    }
    let pahole = pahole_arg(which, btfkit)?;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kernel/build.sh");
    let out = Command::new("bash")
        .arg(script)
        .args([version, cc])
        .arg(&pahole)
        .arg(which.label())
        .env("BTFKIT_CACHE", crate::cache_dir())
        .output()
        .expect("run scripts/kernel/build.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprint!("{stderr}");
    assert!(
        out.status.success(),
        "kernel {version} {cc} build with {} failed:\n{stderr}",
        pahole.display()
    );
    Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}
