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

/// `btfkit inspect DUMP` with `input` on stdin.
fn inspect_stdin(dump: &Path, input: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .arg("inspect")
        .arg(dump)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    out
}

/// As a compiler shows an error in a long line: a window of it around the
/// column, `…` where cut, and a caret under the column on the next line;
/// the message names what was written by its start, end and length. A
/// 10 MB line gives a few hundred bytes of stderr, not the line twice.
#[test]
fn a_long_line_s_error_shows_a_window_around_its_column_with_a_caret_like_a_compiler() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let half = "1+".repeat(2_500_000);
    let odd = format!("{half}${half}1");
    let name = "a".repeat(10_000_000);
    let number = format!("0x{}", "f".repeat(10_000_000));
    let input = format!("{odd}\n{name}\n{number}\nper_cpu(runqueues, 1).cpu\n");
    let o = inspect_stdin(&d.kdump_zlib, input.as_bytes());
    let err = no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{}", &err[..err.len().min(2000)]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "(int)1\n");
    assert!(
        err.len() < 1500,
        "{} bytes of stderr:\n{}",
        err.len(),
        &err[..2000]
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 6, "{err}");

    // The unexpected character, in the middle of the window, the caret under it.
    let col = half.len() + 1;
    assert!(
        lines[0].starts_with("btfkit: …1+1+")
            && lines[0].ends_with(&format!("…: column {col}: unexpected character '$'")),
        "{}",
        lines[0]
    );
    let caret = lines[1].chars().count() - 1;
    assert!(
        lines[1].ends_with('^') && lines[1].trim() == "^",
        "{}",
        lines[1]
    );
    assert_eq!(
        lines[0].chars().nth(caret),
        Some('$'),
        "{}\n{}",
        lines[0],
        lines[1]
    );

    // At column 1: the window starts there.
    assert!(
        lines[2].starts_with("btfkit: aaaa")
            && lines[2].contains("…: column 1: no variable, function or enumerator \"aaaa")
            && lines[2].ends_with("aaaa\" (10000000 bytes)"),
        "{}",
        lines[2]
    );
    assert_eq!(lines[3], format!("{}^", " ".repeat("btfkit: ".len())));
    assert!(
        lines[4].contains(": column 1: bad number \"0xffff")
            && lines[4].ends_with("ffff\" (10000002 bytes)"),
        "{}",
        lines[4]
    );
}

/// crash's `struct task_struct 0` says once that 0 does not read; here the
/// same: one error naming the address (and the column of ADDR), not a
/// "not mapped" per member; a struct that reads still prints.
#[test]
fn a_struct_at_an_unmapped_address_is_one_error_naming_the_address_as_crash_says_it() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let o = inspect(
        &d.kdump_zlib,
        &[
            "struct task_struct 0",
            "struct task_struct.pid,comm 0x10",
            "struct rq ffffc8fffffff000",
            "struct rq.cpu &per_cpu(runqueues, 1)",
        ],
    );
    let err = no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        ".cpu = (int)1\n",
        "{err}"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    for (line, want) in lines.iter().zip([
        "btfkit: struct task_struct 0: column 20: virtual address 0x0 is not mapped",
        "btfkit: struct task_struct.pid,comm 0x10: column 29: virtual address 0x10 is not mapped",
        "btfkit: struct rq ffffc8fffffff000: column 11: virtual address 0xffffc8fffffff000 is not mapped",
    ]) {
        assert!(line.starts_with(want), "{line}");
    }
}

/// A cast to a name the BTF has no type of names that type (C compilers:
/// "unknown type name"), as a cast to an unknown struct does; a name in
/// parentheses that an operator follows is still an expression.
#[test]
fn a_cast_to_an_unknown_type_names_the_type_as_a_c_compiler_does() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let o = inspect(
        &d.elf,
        &[
            "(no_such_typedef)1",
            "(no_such_typedef *)0",
            "sizeof(no_such_typedef)",
            "(struct no_such_type *)0",
            "(u64)1",
            "(per_cpu(runqueues, 1).cpu) + 1",
        ],
    );
    let err = no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .collect::<Vec<_>>(),
        ["(u64)1", "(long)2"],
        "{err}"
    );
    for want in [
        "btfkit: (no_such_typedef)1: column 2: unknown type \"no_such_typedef\"",
        "btfkit: (no_such_typedef *)0: column 2: unknown type \"no_such_typedef\"",
        "btfkit: sizeof(no_such_typedef): column 8: unknown type \"no_such_typedef\"",
        "btfkit: (struct no_such_type *)0: column 2: no type \"struct no_such_type\" in the BTF",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    assert!(!err.contains("unexpected"), "{err}");
}

/// crash's `bt [pid | taskp]`: a decimal number is a pid, however large
/// (no kernel address is all decimal digits), and a pid no task has says
/// so; a hex kernel address is a task.
#[test]
fn bt_takes_a_decimal_number_as_a_pid_and_a_hex_address_as_a_task_as_crash_does() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let one = inspect(&d.kdump_zlib, &["bt 1"]);
    assert!(one.status.success(), "{}", no_panic(&one));
    let text = String::from_utf8_lossy(&one.stdout).into_owned();
    assert!(text.starts_with("PID: 1  TASK: "), "{text}");
    let task = text["PID: 1  TASK: ".len()..].split(' ').next().unwrap();
    for arg in [task.to_owned(), format!("0x{task}")] {
        let o = inspect(&d.kdump_zlib, &[&format!("bt {arg}")]);
        assert!(o.status.success(), "{arg}: {}", no_panic(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout), text, "{arg}");
    }
    let o = inspect(
        &d.kdump_zlib,
        &[
            "bt 999999999",
            "bt 4194304",
            "bt 99999999999999999999",
            "bt 12ab",
        ],
    );
    let err = no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            "btfkit: bt 999999999: column 4: no task with pid 999999999",
            "btfkit: bt 4194304: column 4: no task with pid 4194304",
            "btfkit: bt 99999999999999999999: column 4: no task with pid 99999999999999999999",
            "btfkit: bt 12ab: usage: bt [PID|TASK|-a|-c CPU[,CPU...]]: \"12ab\" is neither a pid nor a task address",
        ],
        "{err}"
    );
}
