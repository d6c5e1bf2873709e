//! Test support shared by every crate's tests.
//!
//! Tests that need something the machine may lack (an oracle such as bpftool,
//! Debian's kernel, root) call [`skip`] with the reason. Locally that prints
//! the reason and the test returns; with `BTFKIT_STRICT=1` (set by `.ci/run`)
//! it fails instead, so CI can never go green by skipping.
//!
//! Tests come in three tiers (docs/testing.md): hermetic tests, which need
//! nothing; oracle tests, which skip when their tool or input is missing;
//! and the kernel tier (kernel builds, QEMU boots and the dumps made by
//! them, live-kernel tests that need root and BPF), which runs only when
//! `BTFKIT_KERNEL_TESTS=1`: such a test starts with [`kernel_tier`].

use std::path::PathBuf;
use std::process::Command;

pub mod compressed;
pub mod drgn;
pub mod dumps;
pub mod funcs_fixture;
pub mod kernel;
pub mod layout_and_location_btf;
pub mod objdump;
pub mod qemu;
pub mod sid;

/// Skips the calling test with `reason`, or fails it under `BTFKIT_STRICT=1`.
/// Use as `let Some(x) = ... else { return testkit::skip("why") };`.
pub fn skip(reason: &str) {
    if std::env::var_os("BTFKIT_STRICT").is_some_and(|v| v == "1") {
        panic!("BTFKIT_STRICT=1 and this test would skip: {reason}");
    }
    // Straight to the stderr handle: libtest captures `eprintln!` of passing
    // tests, and a skip must be seen (scripts/test.sh counts these lines).
    // One write, so that the line is not cut by libtest's own output.
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("SKIP: {reason}\n").as_bytes());
}

/// The environment variable that opts in to the kernel tier.
pub const KERNEL_TESTS: &str = "BTFKIT_KERNEL_TESTS";

/// Whether the kernel tier runs (`BTFKIT_KERNEL_TESTS=1`), without a skip:
/// for a hermetic test that asks the running kernel as well when allowed.
pub fn kernel_tier_on() -> bool {
    std::env::var_os(KERNEL_TESTS).is_some_and(|v| v == "1")
}

/// The gate of a kernel-tier test: `Some(())` when `BTFKIT_KERNEL_TESTS=1`,
/// else a skip (`SKIP: kernel tier (set BTFKIT_KERNEL_TESTS=1): <what>`;
/// a failure under `BTFKIT_STRICT=1`). `what` says what puts the test in
/// the tier. Use as `testkit::kernel_tier("boots a 7.2 kernel")?;` or
/// `let Some(()) = testkit::kernel_tier("...") else { return };`.
pub fn kernel_tier(what: &str) -> Option<()> {
    if kernel_tier_on() {
        return Some(());
    }
    skip(&format!("kernel tier (set {KERNEL_TESTS}=1): {what}"));
    None
}

/// The cache of large real inputs (see scripts/fetch-debian-kernel.sh).
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("BTFKIT_CACHE") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join("btfkit")
}

/// Debian's debug kernel, if scripts/fetch-debian-kernel.sh has fetched it.
pub struct DebianKernel {
    pub dir: PathBuf,
    pub vmlinux: PathBuf,
    pub system_map: PathBuf,
    /// Debug modules (DWARF), tree under `kernel/`.
    pub dbg_modules: PathBuf,
    /// Shipped modules (split .BTF), same tree.
    pub image_modules: PathBuf,
    /// The bootable image of the same kernel.
    pub vmlinuz: PathBuf,
}

pub fn debian_kernel() -> Option<DebianKernel> {
    let dir = cache_dir();
    let k = DebianKernel {
        vmlinux: dir.join("vmlinux"),
        system_map: dir.join("System.map"),
        dbg_modules: dir.join("dbg-modules"),
        image_modules: dir.join("image-modules"),
        vmlinuz: dir.join("vmlinuz"),
        dir,
    };
    (k.vmlinux.is_file() && k.system_map.is_file()).then_some(k)
}

/// Debian's kernel, or a skip naming the script that fetches it.
pub fn debian_kernel_or_skip() -> Option<DebianKernel> {
    let k = debian_kernel();
    if k.is_none() {
        skip("Debian's debug kernel is not cached: run scripts/fetch-debian-kernel.sh");
    }
    k
}

/// Debian's kernel with its bootable image (QEMU tests), or a skip.
pub fn debian_vmlinuz_or_skip() -> Option<DebianKernel> {
    let k = debian_kernel_or_skip()?;
    if !k.vmlinuz.is_file() {
        skip("no vmlinuz in the cache: rerun scripts/fetch-debian-kernel.sh");
        return None;
    }
    Some(k)
}

/// The path of a tool on PATH, or a skip saying which package provides it.
pub fn tool_or_skip(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        skip(&format!(
            "{name} is not installed (apt-get install {package})"
        ));
    }
    found
}

/// Whether we run as root (BPF_BTF_LOAD, perf_event_open system-wide).
pub fn is_root() -> bool {
    // Read our own status rather than call geteuid: no unsafe in tests.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

/// Runs a command and returns its stdout; panics with stderr on failure.
pub fn run_ok(cmd: &mut Command) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// C sources compiled at test time with the machine's `cc`.
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, contents).expect("write fixture");
        p
    }

    /// Compiles and links `sources` (names written with [`Fixture::write`])
    /// into `out` with extra `flags` (e.g. `-g -O2`).
    pub fn cc(&self, out: &str, sources: &[&str], flags: &[&str]) -> PathBuf {
        let o = self.path(out);
        let mut cmd = Command::new("cc");
        cmd.current_dir(self.dir.path())
            .args(flags)
            .arg("-o")
            .arg(&o);
        cmd.args(sources);
        run_ok(&mut cmd);
        o
    }
}

impl Default for Fixture {
    fn default() -> Self {
        Fixture::new()
    }
}
