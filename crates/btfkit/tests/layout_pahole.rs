//! `btfkit layout` (pahole's classic view) against its oracle, Debian's
//! pahole 1.24, run at test time on the same real inputs: the running
//! kernel's BTF and Debian's 6.1 vmlinux. Outputs must be equal byte for
//! byte; a failure names the first struct that differs and shows both.

use std::path::Path;
use std::process::{Command, Output};

fn btfkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .args(args)
        .output()
        .expect("run btfkit")
}

/// pahole's stdout (its stderr carries "Unknown kind" notes for BTF kinds
/// 1.24 does not know, which are not part of the view).
fn pahole(args: &[&str]) -> Option<Vec<u8>> {
    let tool = testkit::tool_or_skip("pahole", "dwarves")?;
    Some(testkit::run_ok(Command::new(tool).args(args)))
}

/// Top-level blocks of the view: a block ends at a line at column 0 that
/// opens nothing (`};`, a one-line typedef, a `--sizes` line).
fn blocks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut pos) = (0, 0);
    for line in text.split_inclusive('\n') {
        pos += line.len();
        let body = line.trim_end_matches('\n');
        if !body.is_empty() && !body.starts_with('\t') && !body.ends_with('{') {
            out.push(&text[start..pos]);
            start = pos;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Panics unless equal, naming the first differing block with both texts
/// and a line diff of it.
fn assert_same(what: &str, ours: &[u8], theirs: &[u8]) {
    if ours == theirs {
        return;
    }
    let (a, b) = (
        String::from_utf8_lossy(ours),
        String::from_utf8_lossy(theirs),
    );
    let (ba, bb) = (blocks(&a), blocks(&b));
    let equal = ba.iter().zip(&bb).take_while(|(x, y)| x == y).count();
    let (x, y) = (
        ba.get(equal).copied().unwrap_or("<end>"),
        bb.get(equal).copied().unwrap_or("<end>"),
    );
    let mut diff = String::new();
    for (i, (l, r)) in x.lines().zip(y.lines()).enumerate() {
        if l != r {
            diff.push_str(&format!("line {}:\n- pahole: {r}\n+ btfkit: {l}\n", i + 1));
        }
    }
    panic!(
        "{what}: {equal} blocks equal ({} ours, {} pahole's), then\n--- pahole:\n{y}\n+++ btfkit:\n{x}\n{diff}",
        ba.len(),
        bb.len()
    );
}

fn sysfs_vmlinux() -> Option<&'static str> {
    let p = btf::SYSFS_VMLINUX;
    if !Path::new(p).exists() {
        testkit::skip("no /sys/kernel/btf/vmlinux (kernel without CONFIG_DEBUG_INFO_BTF)");
        return None;
    }
    Some(p)
}

/// The names of every struct and union pahole prints, in its order.
fn all_names(view: &str) -> Vec<String> {
    view.lines()
        .filter(|l| (l.starts_with("struct ") || l.starts_with("union ")) && l.ends_with(" {"))
        .filter_map(|l| l.split(' ').nth(1).map(str::to_owned))
        .collect()
}

fn check_every_struct(file: &str) {
    let Some(theirs) = pahole(&["-F", "btf", file]) else {
        return;
    };
    let ours = btfkit(&["layout", "-F", "btf", file]);
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    assert_same(&format!("every struct of {file}"), &ours.stdout, &theirs);
    let n = all_names(&String::from_utf8_lossy(&theirs)).len();
    assert!(n > 1000, "only {n} structs and unions in {file}");
}

#[test]
fn layout_every_struct_matches_pahole_btf_sysfs_vmlinux() {
    if let Some(p) = sysfs_vmlinux() {
        check_every_struct(p);
    }
}

#[test]
fn layout_every_struct_matches_pahole_btf_debian_vmlinux() {
    if let Some(k) = testkit::debian_kernel_or_skip() {
        check_every_struct(&k.vmlinux.to_string_lossy());
    }
}

/// `-C` with every name, forwards and backwards: pahole's guesses of
/// `__packed__` depend on what it printed before, so the order matters.
#[test]
fn layout_class_lists_match_pahole_btf_sysfs_vmlinux() {
    let Some(p) = sysfs_vmlinux() else { return };
    let Some(all) = pahole(&["-F", "btf", p]) else {
        return;
    };
    let mut names = all_names(&String::from_utf8_lossy(&all));
    let dir = tempfile::tempdir().expect("tempdir");
    for order in ["forward", "backward"] {
        if order == "backward" {
            names.reverse();
        }
        let list = dir.path().join(order);
        std::fs::write(&list, names.join("\n") + "\n").expect("write list");
        let arg = format!("file://{}", list.display());
        let Some(theirs) = pahole(&["-F", "btf", "-C", &arg, p]) else {
            return;
        };
        let ours = btfkit(&["layout", "-F", "btf", "-C", &arg, p]);
        assert!(ours.status.success());
        assert_same(
            &format!("-C with every name, {order}"),
            &ours.stdout,
            &theirs,
        );
    }
    // One name per run, a fresh state each time, for a spread of names.
    for name in names.iter().step_by(97) {
        let Some(theirs) = pahole(&["-F", "btf", "-C", name, p]) else {
            return;
        };
        let ours = btfkit(&["layout", "-F", "btf", "-C", name, p]);
        assert_same(&format!("-C {name}"), &ours.stdout, &theirs);
    }
}

/// Typedefs and enums by name, as `pahole -C` prints them too.
#[test]
fn layout_typedefs_and_enums_match_pahole_btf_sysfs_vmlinux() {
    let Some(p) = sysfs_vmlinux() else { return };
    let list = "cpumask_t,pid_type,bool,atomic_t,work_func_t,rwlock_t,__kernel_fsid_t";
    let Some(theirs) = pahole(&["-F", "btf", "-C", list, p]) else {
        return;
    };
    let ours = btfkit(&["layout", "-F", "btf", "-C", list, p]);
    assert_same("typedefs and enums", &ours.stdout, &theirs);
}

#[test]
fn layout_sizes_and_holes_match_pahole_btf_sysfs_vmlinux() {
    let Some(p) = sysfs_vmlinux() else { return };
    for args in [
        &["--sizes"][..],
        &["--holes", "1"],
        &["--holes", "3"],
        &["--sizes", "--holes", "2"],
    ] {
        let mut theirs_args = vec!["-F", "btf"];
        theirs_args.extend_from_slice(args);
        theirs_args.push(p);
        let Some(theirs) = pahole(&theirs_args) else {
            return;
        };
        let mut ours_args = vec!["layout"];
        ours_args.extend_from_slice(&theirs_args);
        let ours = btfkit(&ours_args);
        assert_same(&format!("{args:?}"), &ours.stdout, &theirs);
    }
}

/// pahole prints the names it finds up to the first it does not, says
/// "type 'X' not found" and still exits 0; btfkit does the same.
#[test]
fn layout_unknown_name_as_pahole_btf_sysfs_vmlinux() {
    let Some(p) = sysfs_vmlinux() else { return };
    let list = "list_head,no_such_struct_xyz,hlist_head";
    let Some(theirs) = pahole(&["-F", "btf", "-C", list, p]) else {
        return;
    };
    let ours = btfkit(&["layout", "-F", "btf", "-C", list, p]);
    assert!(ours.status.success());
    assert_same("unknown name", &ours.stdout, &theirs);
    let err = String::from_utf8_lossy(&ours.stderr);
    assert!(err.contains("type 'no_such_struct_xyz' not found"), "{err}");
}

#[test]
fn layout_bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing");
    let out = btfkit(&["layout", &missing.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&*missing.to_string_lossy()), "{err}");

    // A BTF header whose type section runs past the end.
    let mut corrupt = vec![0x9f, 0xeb, 1, 0, 24, 0, 0, 0];
    corrupt.extend_from_slice(&[0, 0, 0, 0, 0xff, 0, 0, 0, 0xff, 0, 0, 0, 1, 0, 0, 0]);
    let bad = dir.path().join("corrupt.btf");
    std::fs::write(&bad, &corrupt).expect("write");
    let out = btfkit(&["layout", &bad.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("corrupt.btf"), "{err}");
}
