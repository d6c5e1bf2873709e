//! Which DWARF subprogram's code is at an offset of a section of a
//! relocatable object (a module), as binutils' addr2line finds it: the
//! oracle for module code (shared by module_sections.rs and
//! resolve_module_sections.rs).

use std::path::Path;
use std::process::Command;

/// The DWARF subprogram whose code is at each offset of a section,
/// as binutils' addr2line finds it (`-i`: the outermost function last).
pub fn addr2line(ko: &Path, section: &str, offsets: &[u64]) -> Vec<String> {
    let mut cmd = Command::new("addr2line");
    cmd.args(["-f", "-i", "-a", "-e"])
        .arg(ko)
        .args(["-j", section]);
    for o in offsets {
        cmd.arg(format!("{o:#x}"));
    }
    let out = String::from_utf8(testkit::run_ok(&mut cmd)).expect("UTF-8");
    // Per address: "0x<address>", then function and file:line pairs.
    let mut names = Vec::new();
    let mut lines = out.lines().peekable();
    while let Some(l) = lines.next() {
        assert!(l.starts_with("0x"), "addr2line: {out}");
        let mut last = String::new();
        while let Some(f) = lines.next_if(|l| !l.starts_with("0x")) {
            last = f.to_owned();
            lines.next();
        }
        names.push(last);
    }
    names
}
