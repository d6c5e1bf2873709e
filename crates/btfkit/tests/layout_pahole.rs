//! `btfkit layout` and `btfkit pahole` (pahole's classic view) against
//! their oracle, pahole 1.32 from Debian sid (run in the chroot that
//! scripts/sid-chroot.sh makes), at test time on the same real inputs: the
//! running kernel's BTF, Debian's 6.1 vmlinux (BTF and DWARF) and C
//! fixtures compiled here. Outputs must be equal byte for byte; a failure
//! names the first struct that differs and shows both.
//!
//! The oracle was pahole 1.24 (Debian 12) until btfkit followed 1.32, whose
//! default view says more: after a member of struct type, what that type
//! has of holes, bit holes, bit paddings and flexible arrays ("XXX last
//! struct has 1 hole, 1 bit hole"), totals of those in the statistics
//! ("member types with holes: 4, total: 6", "flexible array members: end:
//! 1"), `__aligned__` on zero-length arrays and after bitfields that end
//! early (from BTF), signed enumerators from BTF, one more newline after
//! each `-C` type, and typedefs of unions spelt out.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn btfkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .args(args)
        .output()
        .expect("run btfkit")
}

/// pahole 1.32's stdout, run in the sid chroot; the directory of each
/// argument that names a file (or a `file://` list) is bind-mounted there
/// at its own path (/sys is there already).
fn pahole(args: &[&str]) -> Option<Vec<u8>> {
    let sid = testkit::sid::sid_or_skip()?;
    let mut binds: Vec<PathBuf> = Vec::new();
    for a in args {
        let p = Path::new(a.strip_prefix("file://").unwrap_or(a));
        if let Some(dir) = p.parent().filter(|_| p.is_absolute() && p.exists()) {
            if !dir.starts_with("/sys") && !binds.iter().any(|b| b == dir) {
                binds.push(dir.to_owned());
            }
        }
    }
    let binds: Vec<&Path> = binds.iter().map(PathBuf::as_path).collect();
    Some(sid.run_ok(&binds, "pahole", args))
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
fn layout_every_struct_matches_pahole_1_32_btf_sysfs_vmlinux() {
    if let Some(p) = sysfs_vmlinux() {
        check_every_struct(p);
    }
}

#[test]
fn layout_every_struct_matches_pahole_1_32_btf_debian_vmlinux() {
    if let Some(k) = testkit::debian_kernel_or_skip() {
        check_every_struct(&k.vmlinux.to_string_lossy());
    }
}

/// Split BTF of Debian's modules over its vmlinux (`--btf_base`): pahole
/// lists the base's structs too, then the module's.
#[test]
fn layout_split_modules_match_pahole_1_32_btf_debian_modules() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let base = k.vmlinux.to_string_lossy().into_owned();
    let mut kos = Vec::new();
    let mut dirs = vec![k.image_modules.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "ko") {
                kos.push(p);
            }
        }
    }
    kos.sort();
    assert!(kos.len() > 100, "{} modules", kos.len());
    for ko in kos.iter().step_by(kos.len() / 3).take(3) {
        let ko = ko.to_string_lossy().into_owned();
        let Some(theirs) = pahole(&["-F", "btf", "--btf_base", &base, &ko]) else {
            return;
        };
        let ours = btfkit(&["layout", "--btf_base", &base, &ko]);
        assert_same(&ko, &ours.stdout, &theirs);
    }
}

/// `-C` with every name, forwards and backwards: pahole's guesses of
/// `__packed__` depend on what it printed before, so the order matters.
#[test]
fn layout_class_lists_match_pahole_1_32_btf_sysfs_vmlinux() {
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
fn layout_typedefs_and_enums_match_pahole_1_32_btf_sysfs_vmlinux() {
    let Some(p) = sysfs_vmlinux() else { return };
    let list = "cpumask_t,pid_type,bool,atomic_t,work_func_t,rwlock_t,__kernel_fsid_t";
    let Some(theirs) = pahole(&["-F", "btf", "-C", list, p]) else {
        return;
    };
    let ours = btfkit(&["layout", "-F", "btf", "-C", list, p]);
    assert_same("typedefs and enums", &ours.stdout, &theirs);
}

#[test]
fn layout_sizes_and_holes_match_pahole_1_32_btf_sysfs_vmlinux() {
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
fn layout_unknown_name_as_pahole_1_32_btf_sysfs_vmlinux() {
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

    // Truncated real BTF, an object without DWARF or .BTF, a truncated
    // ELF: each an error naming the file, exit 1, nothing on stdout.
    let fx = testkit::Fixture::new();
    fx.write("t.c", FIXTURE);
    let plain = fx.cc("plain.o", &["t.c"], &["-c", "-O0"]);
    let dwarf = fx.cc("dwarf.o", &["t.c"], &["-c", "-g", "-O0"]);
    let elf = std::fs::read(&dwarf).expect("read object");
    let cut_elf = dir.path().join("cut.o");
    std::fs::write(&cut_elf, &elf[..elf.len().min(3000)]).expect("write");
    let mut cases = vec![
        (vec!["-F", "dwarf"], plain.clone(), "DWARF"),
        (vec![], plain, ".BTF"),
        (vec![], cut_elf.clone(), "ELF"),
        (vec!["-F", "dwarf"], cut_elf, "ELF"),
    ];
    if let Some(p) = sysfs_vmlinux() {
        let btf = std::fs::read(p).expect("read vmlinux BTF");
        let half = dir.path().join("half.btf");
        std::fs::write(&half, &btf[..btf.len() / 2]).expect("write");
        cases.push((vec![], half, "outside"));
    }
    for (flags, file, what) in cases {
        let f = file.to_string_lossy().into_owned();
        let mut args = vec!["layout"];
        args.extend(flags.iter().copied());
        args.push(&f);
        let out = btfkit(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&*f) && err.contains(what), "{args:?}: {err}");
    }
    let out = btfkit(&["layout", "-F", "bogus", &bad.to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
}

/// Debian's vmlinux DWARF (about 2,800 units): every struct and union as
/// pahole -F dwarf prints them (first definition of each, in unit order),
/// `--sizes`, and a `-C` sample of 200.
#[test]
fn layout_dwarf_matches_pahole_1_32_dwarf_debian_vmlinux() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let v = k.vmlinux.to_string_lossy().into_owned();
    let Some(all) = pahole(&["-F", "dwarf", &v]) else {
        return;
    };
    let ours = btfkit(&["layout", "-F", "dwarf", &v]);
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    assert_same("every struct of the vmlinux DWARF", &ours.stdout, &all);

    let Some(theirs) = pahole(&["-F", "dwarf", "--sizes", &v]) else {
        return;
    };
    // Without -F: DWARF, as pahole prefers for an ELF that has it.
    let ours = btfkit(&["layout", "--sizes", &v]);
    assert_same("--sizes of the vmlinux DWARF", &ours.stdout, &theirs);

    let sample = dwarf_sample(&String::from_utf8_lossy(&all));
    assert_eq!(sample.len(), 200);
    let dir = tempfile::tempdir().expect("tempdir");
    let list = dir.path().join("sample");
    std::fs::write(&list, sample.join("\n") + "\n").expect("write list");
    let arg = format!("file://{}", list.display());
    let Some(theirs) = pahole(&["-F", "dwarf", "-C", &arg, &v]) else {
        return;
    };
    let ours = btfkit(&["layout", "-F", "dwarf", "-C", &arg, &v]);
    assert!(ours.status.success());
    assert!(
        ours.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    assert_same(
        "-C with 200 structs of the vmlinux DWARF",
        &ours.stdout,
        &theirs,
    );
}

/// 200 struct and union names, chosen deterministically from pahole's own
/// listing: up to 20 of each tricky kind (bitfields, packed, aligned,
/// anonymous unions and structs, flexible arrays, function pointers,
/// forced paddings, unions), then an even spread. They keep pahole's
/// order, so that its unit-by-unit `-C` lookup finds every one.
fn dwarf_sample(view: &str) -> Vec<String> {
    let named: Vec<(String, &str)> = blocks(view)
        .into_iter()
        .filter_map(|b| {
            let head = b.lines().next()?;
            let rest = head
                .strip_prefix("struct ")
                .or_else(|| head.strip_prefix("union "))?;
            let name = rest.strip_suffix(" {")?;
            Some((name.to_owned(), b))
        })
        .collect();
    let is_bitfield = |b: &str| {
        b.lines().any(|l| {
            l.split(';')
                .next()
                .and_then(|d| d.rsplit(':').next())
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
        })
    };
    let kinds: [&dyn Fn(&str) -> bool; 9] = [
        &is_bitfield,
        &|b| b.contains("__packed__"),
        &|b| b.contains("__aligned__"),
        &|b| b.contains("\tunion {"),
        &|b| b.contains("[];"),
        &|b| b.contains("\tstruct {"),
        &|b| b.contains("(*"),
        &|b| b.contains("Force padding"),
        &|b| b.starts_with("union "),
    ];
    let mut chosen = std::collections::BTreeSet::new();
    for kind in kinds {
        let of_kind: Vec<usize> = (0..named.len()).filter(|&i| kind(named[i].1)).collect();
        let step = (of_kind.len() / 20).max(1);
        chosen.extend(of_kind.iter().step_by(step).take(20));
    }
    let step = (named.len() / 80).max(1);
    let mut i = 0;
    while chosen.len() < 200 && i < named.len() {
        chosen.insert(i);
        i += step;
    }
    let mut names: Vec<String> = Vec::new();
    for i in chosen {
        if !names.contains(&named[i].0) {
            names.push(named[i].0.clone());
        }
    }
    names.truncate(200);
    names
}

/// Small C fixtures for constructs the kernel has few of: DWARF 4 and 5
/// bitfields (offsets counted from either end), packed and aligned
/// structs, flexible and multi-dimensional arrays, negative enumerators,
/// anonymous members, variadic function pointers; read from DWARF and
/// from the BTF pahole -J encodes of the same object.
#[test]
fn layout_fixtures_match_pahole_1_32_dwarf_and_btf() {
    if testkit::sid::sid_or_skip().is_none() {
        return;
    }
    let fx = testkit::Fixture::new();
    fx.write("t.c", FIXTURE);
    for v in ["4", "5"] {
        let obj = fx.cc(
            &format!("t{v}.o"),
            &["t.c"],
            &["-c", "-g", &format!("-gdwarf-{v}"), "-O0"],
        );
        let o = obj.to_string_lossy().into_owned();
        for args in [
            &["-F", "dwarf"][..],
            &["-F", "dwarf", "-C", "nested,uses,un,neg,anon_t"],
            &["-F", "dwarf", "--sizes"],
        ] {
            let mut a = args.to_vec();
            a.push(&o);
            let Some(theirs) = pahole(&a) else { return };
            let mut ours_args = vec!["layout"];
            ours_args.extend_from_slice(&a);
            let ours = btfkit(&ours_args);
            assert_same(&format!("DWARF {v} {args:?}"), &ours.stdout, &theirs);
        }
        // pahole -J adds .BTF to a copy; both read that BTF.
        let with_btf = fx.path(&format!("t{v}-btf.o"));
        std::fs::copy(&obj, &with_btf).expect("copy");
        let wb = with_btf.to_string_lossy().into_owned();
        pahole(&["-J", &wb]);
        let Some(theirs) = pahole(&["-F", "btf", &wb]) else {
            return;
        };
        let ours = btfkit(&["layout", "-F", "btf", &wb]);
        assert_same(&format!("BTF of DWARF {v}"), &ours.stdout, &theirs);
        assert!(theirs.len() > 2000, "fixture view too small");
    }
}

/// Runs `pahole ARGS` (1.32) and `btfkit pahole ARGS` and compares them.
fn check_pahole_args(what: &str, args: &[&str]) {
    let Some(theirs) = pahole(args) else { return };
    let mut ours_args = vec!["pahole"];
    ours_args.extend_from_slice(args);
    let ours = btfkit(&ours_args);
    assert!(
        ours.status.success(),
        "{what} {args:?}: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
    assert_same(&format!("{what} {args:?}"), &ours.stdout, &theirs);
}

/// The view flags people use daily, alone and together, over a whole
/// file: `--hex`, `-E` (expand types), `-a` (anonymous structs under their
/// typedef), `-y PREFIX`, `--contains TYPE`, `--sizes` with filters, and
/// `-C` lists under `-E --hex`.
const VIEW_FLAGS: &[&[&str]] = &[
    &["--hex"],
    &["-E"],
    &["-a"],
    &["-y", "tcp_"],
    &["--contains", "list_head"],
    &["-E", "--hex", "-a"],
    &["--contains", "list_head", "-y", "s"],
    &["--sizes", "-a", "-y", "b"],
    &["-H", "2", "-y", "sk", "--hex"],
    &[
        "-E",
        "--hex",
        "-C",
        "task_struct,kref,atomic_t,qspinlock,cpumask_t,pid_type,rwlock_t",
    ],
];

#[test]
fn layout_view_flags_match_pahole_1_32_btf_debian_vmlinux() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let v = k.vmlinux.to_string_lossy().into_owned();
    for flags in VIEW_FLAGS {
        let mut args = vec!["-F", "btf"];
        args.extend_from_slice(flags);
        args.push(&v);
        check_pahole_args("BTF of the vmlinux", &args);
    }
    // Every typedef by name, plain and expanded: anonymous bodies, unions,
    // enums, function pointers, chains of typedefs.
    let btf = btf::load_file(&k.vmlinux, None).expect("load the vmlinux BTF");
    let mut names: Vec<&str> = (1..btf.type_count())
        .filter_map(|id| btf.type_by_id(id))
        .filter(|t| matches!(t.data, btf::TypeData::Typedef { .. }))
        .filter_map(|t| btf.str_at(t.name_off).ok())
        .collect();
    names.sort_unstable();
    names.dedup();
    assert!(names.len() > 1000, "{} typedefs", names.len());
    let dir = tempfile::tempdir().expect("tempdir");
    let list = dir.path().join("typedefs");
    std::fs::write(&list, names.join("\n") + "\n").expect("write list");
    let arg = format!("file://{}", list.display());
    check_pahole_args("every typedef", &["-F", "btf", "-C", &arg, &v]);
    check_pahole_args("every typedef", &["-F", "btf", "-E", "-C", &arg, &v]);
}

/// The same flags from DWARF (all units, in unit order): the expanded
/// view of every struct, `--contains` found in the first unit that has
/// the type, `-C` under `-E`.
#[test]
fn layout_view_flags_match_pahole_1_32_dwarf_debian_vmlinux() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let v = k.vmlinux.to_string_lossy().into_owned();
    for flags in [
        &["-E", "--hex", "-a"][..],
        &["--contains", "list_head", "-y", "s"],
        &["-y", "tcp_", "--hex"],
        &["-E", "-C", "task_struct,atomic_t,cpumask_t"],
    ] {
        let mut args = vec!["-F", "dwarf"];
        args.extend_from_slice(flags);
        args.push(&v);
        check_pahole_args("DWARF of the vmlinux", &args);
    }
}

/// `btfkit layout` takes the flags under pahole's long and short names
/// and prints what `btfkit pahole` (checked above against 1.32) prints.
#[test]
fn layout_view_flags_long_and_short_names_agree() {
    let Some(p) = sysfs_vmlinux() else { return };
    let pahole_form = btfkit(&["pahole", "-F", "btf", "-aE", "--hex", "-y", "s", p]);
    assert!(pahole_form.status.success());
    for args in [
        &["layout", "-F", "btf", "-a", "-E", "--hex", "-y", "s", p][..],
        &[
            "layout",
            "-F",
            "btf",
            "--anon_include",
            "--expand_types",
            "--hex",
            "--prefix_filter",
            "s",
            p,
        ],
        &[
            "pahole",
            "-F",
            "btf",
            "--anon_include",
            "--expand_types",
            "--hex",
            "--prefix_filter=s",
            p,
        ],
    ] {
        let out = btfkit(args);
        assert!(out.status.success(), "{args:?}");
        assert_same(&format!("{args:?}"), &out.stdout, &pahole_form.stdout);
    }
    let a = btfkit(&["layout", "-F", "btf", "-i", "list_head", p]);
    let b = btfkit(&["pahole", "-F", "btf", "--contains=list_head", p]);
    assert!(a.status.success() && !a.stdout.is_empty());
    assert_same("--contains", &a.stdout, &b.stdout);
}

/// The view flags on the C fixtures, from DWARF 4 and 5 and from the BTF
/// pahole 1.32 encodes of them.
#[test]
fn layout_view_flags_match_pahole_1_32_fixtures() {
    if testkit::sid::sid_or_skip().is_none() {
        return;
    }
    let fx = testkit::Fixture::new();
    fx.write("t.c", FIXTURE);
    let flag_sets: &[&[&str]] = &[
        &["-E"],
        &["--hex"],
        &["-a"],
        &["-aE", "--hex"],
        &["--contains", "packed"],
        &["--contains", "inner_pad,flex"],
        &["-y", "n"],
        &["-y", "anon", "-a"],
        &[
            "-E",
            "--hex",
            "-C",
            "nested,uses,anon_t,un_t,chain,emb,holder2",
        ],
    ];
    for v in ["4", "5"] {
        let obj = fx.cc(
            &format!("f{v}.o"),
            &["t.c"],
            &["-c", "-g", &format!("-gdwarf-{v}"), "-O0"],
        );
        let with_btf = fx.path(&format!("f{v}-btf.o"));
        std::fs::copy(&obj, &with_btf).expect("copy");
        let wb = with_btf.to_string_lossy().into_owned();
        if pahole(&["-J", &wb]).is_none() {
            return;
        }
        let o = obj.to_string_lossy().into_owned();
        for flags in flag_sets {
            for (format, file) in [("dwarf", &o), ("btf", &wb)] {
                let mut args = vec!["-F", format];
                args.extend_from_slice(flags);
                args.push(file);
                check_pahole_args(&format!("DWARF {v} fixture"), &args);
            }
        }
    }
}

const FIXTURE: &str = r#"
struct bits { unsigned a:3, b:5; unsigned char c; unsigned long d:40, e:24; int f:7; short g; long long h:1; };
struct __attribute__((packed)) packed { char a; int b; short c; long d; };
struct aligned { char a; int b __attribute__((aligned(16))); char c; } __attribute__((aligned(64)));
struct flex { int n; char data[]; };
struct multi { int m[2][3]; const char *const names[4]; volatile unsigned long v; };
enum neg { N_MINUS = -1, N_ZERO, N_BIG = 0x7fffffff };
struct nested {
	union { int i; float f; struct { short lo, hi; }; } u;
	struct { enum { A = -2, B } kind; void (*cb)(int, ...); int (*ops[2])(const char *, struct nested *); };
	enum neg e;
	struct packed p;
	struct bits bf;
	char tail;
};
typedef struct { long x; char y; } anon_t;
struct uses { anon_t a; anon_t *pa; struct { int z; } *pz; _Bool flag; double dbl; long double ld; __int128 big; };
union un { struct packed p; struct aligned al; char c[3]; };
struct inner_pad { long a; char b; };
struct outer { struct inner_pad ip; char c; struct inner_pad ip2[2]; int last; };
typedef union un un_t;
typedef unsigned int u32_t;
typedef u32_t my_u32;
typedef struct { my_u32 x; un_t u; } anon_chain_t;
struct emb { short s; struct flex f; };
struct zz2 { int a; char zz[0][6]; };
struct holder2 { struct zz2 x; struct flex y; struct emb e; long w; int t[2][3][4]; };
struct chain { my_u32 a; const my_u32 b; anon_chain_t c; un_t *pu; struct emb e; };
void use(struct bits *a, struct packed *b, struct aligned *c, struct flex *d, struct multi *e,
	 struct nested *f, struct uses *g, union un *h, struct outer *o, struct chain *ch,
	 struct holder2 *h2) {}
"#;
