//! drgn 0.3 (PyPI) as the oracle: a Python script run against a dump with
//! Debian's DWARF vmlinux.

use std::path::Path;
use std::process::Command;

/// `python3` with drgn importable, else a skip naming the package.
pub fn drgn_or_skip() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import drgn"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::skip("drgn is not installed (pip install drgn, listed in .ci/pip.d/inspect)");
    }
    ok
}

/// Runs `script` with `prog` bound to a drgn Program over `dump` with the
/// DWARF `vmlinux` (and module debug files under `modules`, if given);
/// `input` goes to its stdin. Returns stdout.
pub fn run(dump: &Path, vmlinux: &Path, modules: &[&Path], script: &str, input: &str) -> String {
    let prelude = "import sys, drgn\n\
        prog = drgn.Program()\n\
        prog.set_core_dump(sys.argv[1])\n\
        prog.load_debug_info(sys.argv[2:])\n";
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(format!("{prelude}{script}"))
        .arg(dump)
        .arg(vmlinux)
        .args(modules)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        let input = input.to_owned();
        std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    }
    let out = child.wait_with_output().expect("drgn script");
    assert!(
        out.status.success(),
        "drgn script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}
