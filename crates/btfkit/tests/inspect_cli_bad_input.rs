//! `btfkit inspect` on bad input, on the real dumps: syntax errors and
//! unknown names name the column, unmapped addresses name the address, a
//! broken dump names the file and offset; the other expressions still
//! print; the exit status is 1; no panic.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

use testkit::dumps;

fn inspect(dump: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .arg("inspect")
        .arg(dump)
        .args(args)
        .output()
        .unwrap()
}

fn no_panic(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn bad_expressions_name_the_column_and_the_rest_still_print() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let o = inspect(
        &d.kdump_zlib,
        &[
            "per_cpu(runqueues, 0).cpu",
            "per_cpu(runqueues, 1).nr_running +",
            "(struct no_such_type *)0",
            "per_cpu(runqueues, 0).no_such_member",
            "*(unsigned long *)0xffffc8fffffff000",
            "per_cpu(runqueues, 7)",
            "init_task.comm",
            "1 / 0",
            "per_cpu(runqueues, 1).cpu",
        ],
    );
    let err = no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    // The good ones print (Debian's own BTF has per-CPU variables only).
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["(int)0", "(int)1"],
        "{out}\n{err}"
    );
    for want in [
        "per_cpu(runqueues, 1).nr_running +: column 35: unexpected end of expression",
        "(struct no_such_type *)0: column 2: no type \"struct no_such_type\" in the BTF",
        "per_cpu(runqueues, 0).no_such_member: column 22: struct rq has no member \"no_such_member\"",
        "*(unsigned long *)0xffffc8fffffff000: column 1: virtual address 0xffffc8fffffff000 is not mapped",
        "per_cpu(runqueues, 7): column 1: CPU 7: the kernel has 2 CPU ids",
        "init_task.comm: column 1: init_task (0x",
        "1 / 0: column 3: division by zero",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
}

#[test]
fn broken_dumps_name_the_file_and_offset() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.kdump");
    let data = std::fs::read(&d.kdump_zlib).unwrap();
    std::fs::write(&cut, &data[..data.len() / 3]).unwrap();
    let o = inspect(&cut, &["per_cpu(runqueues, 0).cpu"]);
    let err = no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cut.kdump") && err.contains("truncated") && err.contains("file offset 0x"),
        "{err}"
    );
    assert!(o.stdout.is_empty());

    let junk = dir.path().join("junk");
    std::fs::write(&junk, b"KDUMP   but nothing else").unwrap();
    let o = inspect(&junk, &["1"]);
    let err = no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("junk") && err.contains("truncated"), "{err}");
}

/// A first argument that names a file, or looks like a path, is a dump:
/// when it cannot be one, the error names it (and never /proc/kcore, which
/// reading it as a line for the live kernel would give).
#[test]
fn inspect_dump_paths_that_are_no_dump_say_so_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a dump\n").unwrap();
    let missing_dir = dir.path().join("no-such-dir").join("x");
    let cases: Vec<(String, &str)> = vec![
        ("/dev/null".into(), "character device"),
        (dir.path().display().to_string(), "directory"),
        (text.display().to_string(), "cannot be read as a crash dump"),
        ("/var/crash/no-such-dump-here".into(), "No such file"),
        ("vmcore.7".into(), "No such file"),
        ("./vmcore-typo".into(), "No such file"),
        (missing_dir.display().to_string(), "No such file"),
    ];
    for (arg, why) in cases {
        let o = Command::new(env!("CARGO_BIN_EXE_btfkit"))
            .current_dir(dir.path())
            .args(["inspect", &arg, "init_task.pid"])
            .output()
            .unwrap();
        let err = no_panic(&o);
        assert_eq!(o.status.code(), Some(1), "{arg}: {err}");
        assert!(err.contains(&arg) && err.contains(why), "{arg}: {err}");
        assert!(!err.contains("kcore"), "{arg} read as a line: {err}");
        assert!(o.stdout.is_empty(), "{arg}");
    }
}

/// A line that reads as a command btfkit does not have (crash's `vm 1`,
/// `kmem -s`) says "unknown command"; `void *` does not dereference (an
/// error in C and in drgn, whose `cast('void *', ...)[0]` raises); a walk
/// gives its entries, not one value, to an operator.
#[test]
fn unknown_commands_and_void_say_so_and_the_rest_still_print() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let o = inspect(
        &d.elf,
        &[
            "vm 1",
            "kmem -s",
            "per_cpu(runqueues, 1).cpu",
            "*(void *)&per_cpu(runqueues, 0)",
            "(void)per_cpu(runqueues, 0).cpu",
            "((void *)&per_cpu(runqueues, 0))[0]",
        ],
    );
    let err = no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for want in [
        "vm 1: unknown command \"vm\"",
        "kmem -s: unknown command \"kmem\"",
        "*(void *)&per_cpu(runqueues, 0): column 1: * cannot dereference void *",
        "(void)per_cpu(runqueues, 0).cpu: column 1: a value cast to void has none",
        "((void *)&per_cpu(runqueues, 0))[0]: column 33: [] cannot dereference void *",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "(int)1");
}
