//! `btfkit pahole` / btfkit run as `pahole`: the command lines kernel builds
//! pass (6.1's pahole-flags.sh, 6.12's Makefile.btf, gen-btf.sh), checked on
//! C objects compiled here. Oracles: libbpf (bpftool parses what -J wrote),
//! the object's own bytes (everything outside the ELF header's section table
//! fields stays at its offset), and the kernel scripts' version parsing.
//! Bad input: an error naming the file, a non-zero exit, the object untouched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use testkit::kernel::Pahole;
use testkit::Fixture;

const BTFKIT: &str = env!("CARGO_BIN_EXE_btfkit");

const SOURCE: &str = r#"
struct point { int x, y; };
struct box { struct point lo, hi; const char *name; };
int counter = 1;
__attribute__((section(".data..percpu"))) long per_cpu_hits;
__attribute__((noinline)) int area(const struct box *b)
{
	return (b->hi.x - b->lo.x) * (b->hi.y - b->lo.y) + counter;
}
int main(void) { struct box b = { {0, 0}, {2, 3}, "b" }; return area(&b); }
"#;

/// An object with DWARF 5, relocatable like a module (a linked program
/// would merge `.data..percpu` into `.data`).
fn object(fx: &Fixture) -> PathBuf {
    fx.write("t.c", SOURCE);
    fx.cc("t.o", &["t.c"], &["-c", "-g", "-gdwarf-5", "-O2"])
}

/// btfkit under the name `pahole`, as `make PAHOLE=...` runs it.
fn pahole_link(fx: &Fixture) -> PathBuf {
    let link = fx.path("pahole");
    if !link.exists() {
        std::os::unix::fs::symlink(BTFKIT, &link).expect("symlink");
    }
    link
}

fn run(cmd: &Path, args: &[&str], file: Option<&Path>) -> Output {
    let mut c = Command::new(cmd);
    c.args(args).env("LLVM_OBJCOPY", "objcopy");
    if let Some(f) = file {
        c.arg(f);
    }
    c.output().expect("run pahole")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// libbpf's reading of the file's BTF (bpftool btf dump file), or a skip.
fn bpftool_dump(file: &Path) -> Option<String> {
    let bpftool = testkit::tool_or_skip("bpftool", "bpftool")?;
    let out = Command::new(bpftool)
        .args(["btf", "dump", "file"])
        .arg(file)
        .output()
        .expect("run bpftool");
    assert!(
        out.status.success(),
        "bpftool cannot read {}: {}",
        file.display(),
        text(&out)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Every byte of `old` that one of its sections holds (but the section
/// names, which may move to make room for `.BTF`'s) is at the same offset
/// in `new`, and so is its ELF header but e_shoff and e_shnum (the section
/// table moved to the end, one section longer).
fn assert_appended_only(old: &[u8], new: &[u8], what: &str) {
    use object::read::elf::{ElfFile64, FileHeader, SectionHeader};
    assert!(new.len() > old.len(), "{what}: nothing was added");
    for i in 0..64 {
        if (0x28..0x30).contains(&i) || (0x3c..0x3e).contains(&i) {
            continue;
        }
        assert_eq!(old[i], new[i], "{what}: ELF header byte {i:#x} changed");
    }
    let elf = ElfFile64::<object::Endianness>::parse(old).expect("parse the input");
    let endian = elf.endian();
    let shstrndx = elf.elf_header().e_shstrndx(endian) as usize;
    for (i, h) in elf.elf_section_table().iter().enumerate() {
        if i == shstrndx || h.sh_type(endian) == object::elf::SHT_NOBITS {
            continue;
        }
        let (at, len) = (h.sh_offset(endian) as usize, h.sh_size(endian) as usize);
        assert_eq!(
            &old[at..at + len],
            &new[at..at + len],
            "{what}: section {i} at {at:#x} changed"
        );
    }
}

#[test]
fn version_is_what_the_kernel_scripts_parse() {
    let fx = Fixture::new();
    let link = pahole_link(&fx);
    for out in [
        run(&link, &["--version"], None),
        run(Path::new(BTFKIT), &["pahole", "--version"], None),
    ] {
        assert!(out.status.success(), "{}", text(&out));
        let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
        // scripts/pahole-version.sh: sed -E 's/v([0-9]+)\.([0-9]+)/\1\2/'
        let (major, minor) = v
            .strip_prefix('v')
            .and_then(|r| r.split_once('.'))
            .unwrap_or_else(|| panic!("not vMAJOR.MINOR: {v}"));
        let n: u32 = format!("{major}{minor}").parse().expect("digits");
        // 6.12's Makefile.btf switches to --btf_features at 126.
        assert!(n >= 126, "{v}");
    }
}

/// `btfkit encode --embed` writes the input with .BTF appended (its other
/// bytes copied by the kernel from the input file), the same .BTF as `-o`.
#[test]
fn encode_embed_appends_the_btf_of_dash_o_bpftool() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let (btf, embedded) = (fx.path("t.btf"), fx.path("t.embedded.o"));
    let out = Command::new(BTFKIT)
        .args(["encode", "-o"])
        .arg(&btf)
        .arg("--embed")
        .arg(&embedded)
        .arg(&obj)
        .output()
        .expect("run btfkit");
    assert!(out.status.success(), "{}", text(&out));
    let before = std::fs::read(&obj).expect("read");
    let after = std::fs::read(&embedded).expect("read");
    assert_appended_only(&before, &after, "encode --embed");
    let raw = std::fs::read(&btf).expect("read");
    assert!(
        after.windows(raw.len()).any(|w| w == raw.as_slice()),
        "the embedded file does not hold the BTF of -o"
    );
    let (Some(dump), Some(raw_dump)) = (bpftool_dump(&embedded), bpftool_dump(&btf)) else {
        return;
    };
    assert_eq!(dump, raw_dump);
    assert!(dump.contains("STRUCT 'box' size=24 vlen=3"), "{dump}");
}

#[test]
fn kernel_6_1_command_line_writes_btf_in_place_libbpf() {
    let fx = Fixture::new();
    let link = pahole_link(&fx);
    let obj = object(&fx);
    let before = std::fs::read(&obj).expect("read");
    // scripts/link-vmlinux.sh with pahole-flags.sh's flags for >= 1.25.
    let out = run(
        &link,
        &[
            "-J",
            "--btf_gen_floats",
            "-j",
            "--lang_exclude=rust",
            "--skip_encoding_btf_inconsistent_proto",
            "--btf_gen_optimized",
        ],
        Some(&obj),
    );
    assert!(out.status.success(), "{}", text(&out));
    let after = std::fs::read(&obj).expect("read");
    assert_appended_only(&before, &after, "pahole -J");
    let Some(dump) = bpftool_dump(&obj) else {
        return;
    };
    assert!(dump.contains("STRUCT 'box' size=24 vlen=3"), "{dump}");
    assert!(dump.contains("FUNC 'area'"), "{dump}");
    assert!(dump.contains("VAR 'per_cpu_hits'"), "{dump}");
    assert!(!dump.contains("VAR 'counter'"), "{dump}");
    // The kernel build then keeps only .BTF (objcopy --only-section=.BTF).
    let only = fx.path("btf.o");
    let st = Command::new("objcopy")
        .args([
            "--only-section=.BTF",
            "--set-section-flags",
            ".BTF=alloc,readonly",
        ])
        .arg("--strip-all")
        .arg(&obj)
        .arg(&only)
        .status()
        .expect("objcopy");
    assert!(st.success());
    // Run again: the section is replaced, the old one no longer named.
    let out = run(
        &link,
        &["-J", "-j2", "--btf_features=encode_force,var"],
        Some(&obj),
    );
    assert!(out.status.success(), "{}", text(&out));
    let again = bpftool_dump(&obj).expect("bpftool");
    assert_eq!(dump, again, "a second -J changed the BTF");
}

#[test]
fn btf_features_accumulate_and_select_variables_libbpf() {
    let fx = Fixture::new();
    let link = pahole_link(&fx);
    let obj = object(&fx);
    let detached = |args: &[&str], name: &str| -> Option<String> {
        let out_file = fx.path(name);
        let mut all = args.to_vec();
        let arg = format!("--btf_encode_detached={}", out_file.display());
        all.push(&arg);
        let before = std::fs::read(&obj).expect("read");
        let out = run(&link, &all, Some(&obj));
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        assert_eq!(
            before,
            std::fs::read(&obj).expect("read"),
            "detached changed the ELF"
        );
        bpftool_dump(&out_file)
    };
    // 6.12's Makefile.btf, repeated --btf_features and unknown names.
    let Some(k612) = detached(
        &[
            "-J",
            "-j",
            "--btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs",
            "--btf_features=attributes",
            "--lang_exclude=rust",
        ],
        "612.btf",
    ) else {
        return;
    };
    assert!(k612.contains("VAR 'per_cpu_hits'"), "{k612}");
    assert!(!k612.contains("VAR 'counter'"), "{k612}");
    let Some(global) = detached(
        &["--btf_features=float", "--btf_features=global_var"],
        "g.btf",
    ) else {
        return;
    };
    assert!(global.contains("VAR 'counter'"), "{global}");
    let Some(novar) = detached(&["--btf_features=float,no_such_feature"], "n.btf") else {
        return;
    };
    assert!(!novar.contains("VAR '"), "{novar}");
    // A `+` keeps the default set (with var); btfkit's --vars overrides.
    let Some(plus) = detached(&["--btf_features=+reproducible_build"], "p.btf") else {
        return;
    };
    assert!(plus.contains("VAR 'per_cpu_hits'"), "{plus}");
    let Some(none) = detached(&["--btf_features=global_var", "--vars=none"], "v.btf") else {
        return;
    };
    assert!(!none.contains("VAR '"), "{none}");

    let strict = run(
        &link,
        &["-J", "--btf_features_strict=var,no_such_feature"],
        Some(&obj),
    );
    assert_eq!(strict.status.code(), Some(2), "{}", text(&strict));
    assert!(
        text(&strict).contains("no_such_feature"),
        "{}",
        text(&strict)
    );
    let supported = run(&link, &["--supported_btf_features"], None);
    let list = String::from_utf8_lossy(&supported.stdout);
    for f in [
        "encode_force",
        "var",
        "float",
        "decl_tag_kfuncs",
        "global_var",
    ] {
        assert!(list.trim().split(',').any(|n| n == f), "{f} not in {list}");
    }
}

/// `--btf_features=layout` writes bpf-next's layout section: a 32-byte
/// header that btfkit's reader (round-trip tested against libbpf's selftest
/// layout in crates/btf) accepts; without it, the 24-byte header.
#[test]
fn btf_features_layout_writes_the_layout_section() {
    let fx = Fixture::new();
    let link = pahole_link(&fx);
    let obj = object(&fx);
    for (features, hdr_len) in [
        ("--btf_features=var,layout", 32u32),
        ("--btf_features=var", 24),
    ] {
        let out_file = fx.path("layout.btf");
        let arg = format!("--btf_encode_detached={}", out_file.display());
        let out = run(&link, &["-J", features, &arg], Some(&obj));
        assert!(out.status.success(), "{features}: {}", text(&out));
        let bytes = std::fs::read(&out_file).expect("read the BTF");
        assert_eq!(
            bytes.get(4..8),
            Some(&hdr_len.to_le_bytes()[..]),
            "{features}"
        );
        let btf = btf::Btf::parse(&bytes).expect("parse");
        assert_eq!(btf.header().hdr_len, hdr_len, "{features}");
    }
}

#[test]
fn split_over_a_base_libbpf() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let Some(module) = std::fs::read_dir(k.dbg_modules.join("kernel/lib"))
        .ok()
        .and_then(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .find(|p| p.extension().is_some_and(|x| x == "ko"))
        })
    else {
        return testkit::skip("no debug module under dbg-modules/kernel/lib");
    };
    let fx = Fixture::new();
    let link = pahole_link(&fx);
    let ko = fx.path("m.ko");
    std::fs::copy(&module, &ko).expect("copy module");
    // scripts/Makefile.modfinal
    let base = k.vmlinux.to_string_lossy().into_owned();
    let out = run(&link, &["-J", "-j", "--btf_base", &base], Some(&ko));
    assert!(out.status.success(), "{}", text(&out));
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    let dump = Command::new(bpftool)
        .args(["btf", "dump", "file"])
        .arg(&ko)
        .args(["--base-btf", &base])
        .output()
        .expect("bpftool");
    assert!(dump.status.success(), "{}", text(&dump));
    let s = String::from_utf8_lossy(&dump.stdout);
    let first = s.lines().next().unwrap_or_default();
    // Split ids continue the base's: the module's first type is not [1].
    assert!(!first.starts_with("[1] "), "{first}");
}

fn assert_fails_untouched(out: &Output, file: &Path, before: &[u8], mention: &str, what: &str) {
    let code = out.status.code();
    assert!(
        matches!(code, Some(1 | 2)) && !text(out).contains("panicked"),
        "{what}: {:?}\n{}",
        out.status,
        text(out)
    );
    assert!(
        text(out).contains(mention),
        "{what}: no '{mention}' in {}",
        text(out)
    );
    assert_eq!(
        std::fs::read(file).expect("read"),
        before,
        "{what}: the object changed"
    );
    let dir = file.parent().expect("dir");
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
        .collect();
    assert!(
        leftovers.is_empty(),
        "{what}: temporary files left: {leftovers:?}"
    );
}

#[test]
fn bad_input_fails_naming_the_file_object_untouched() {
    let fx = Fixture::new();
    let link = pahole_link(&fx);
    fx.write("n.c", "int f(int x) { return x + 1; }\n");
    // No DWARF.
    let nodwarf = fx.cc("n.o", &["n.c"], &["-c", "-O2"]);
    let before = std::fs::read(&nodwarf).expect("read");
    let out = run(&link, &["-J", "-j"], Some(&nodwarf));
    assert_fails_untouched(&out, &nodwarf, &before, "n.o", "no DWARF");
    assert_eq!(out.status.code(), Some(1));
    // Truncated object.
    let obj = object(&fx);
    let full = std::fs::read(&obj).expect("read");
    let cut = fx.path("cut");
    std::fs::write(&cut, &full[..full.len() / 3]).expect("write");
    let before = std::fs::read(&cut).expect("read");
    let out = run(&link, &["-J"], Some(&cut));
    assert_fails_untouched(&out, &cut, &before, "cut", "truncated");
    assert_eq!(out.status.code(), Some(1));
    // Unknown flag: a usage error, nothing done.
    let out = run(&link, &["-J", "--no_such_flag"], Some(&obj));
    assert_fails_untouched(&out, &obj, &full, "--no_such_flag", "unknown flag");
    assert_eq!(out.status.code(), Some(2));
    // A missing file.
    let out = run(&link, &["-J"], Some(&fx.path("missing.o")));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("missing.o"), "{}", text(&out));
    // Detached output on a read-only file system.
    let out = run(
        &link,
        &["-J", "--btf_encode_detached=/proc/btfkit-test.btf"],
        Some(&obj),
    );
    assert_fails_untouched(
        &out,
        &obj,
        &full,
        "/proc/btfkit-test.btf",
        "read-only output",
    );
}

/// In place on a read-only object: refused before encoding. As root, the
/// file is made read-only by a read-only bind mount of its directory in a
/// private mount namespace (root ignores file modes).
#[test]
fn read_only_object_is_refused_untouched() {
    let fx = Fixture::new();
    let link = pahole_link(&fx);
    let obj = object(&fx);
    let full = std::fs::read(&obj).expect("read");
    let out = if testkit::is_root() {
        let Some(unshare) = testkit::tool_or_skip("unshare", "util-linux") else {
            return;
        };
        let dir = fx.dir.path().display().to_string();
        Command::new(unshare)
            .args(["--mount", "--propagation", "private", "sh", "-c"])
            .arg(format!(
                "mount --bind -o ro '{dir}' '{dir}' && mount -o remount,bind,ro '{dir}' && exec \"$0\" -J -j \"$1\"",
            ))
            .arg(&link)
            .arg(&obj)
            .output()
            .expect("run unshare")
    } else {
        let mut perm = std::fs::metadata(&obj).expect("stat").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o444);
        std::fs::set_permissions(&obj, perm).expect("chmod");
        run(&link, &["-J", "-j"], Some(&obj))
    };
    assert!(
        !text(&out).contains("mount:"),
        "cannot set up the read-only mount: {}",
        text(&out)
    );
    assert_fails_untouched(&out, &obj, &full, "cannot write", "read-only object");
    assert!(text(&out).contains("/t.o"), "{}", text(&out));
}

// ---- Against pahole 1.32 (Debian sid, in the chroot scripts/sid-chroot.sh makes).

/// pahole 1.32 run in the sid chroot on `obj` with `args`, writing raw BTF
/// to `out` (the fixture's directory is bound into the chroot).
fn pahole_1_32(sid: &testkit::sid::Sid, fx: &Fixture, args: &[&str], obj: &Path, out: &Path) {
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.push(format!("--btf_encode_detached={}", out.display()));
    all.push(obj.display().to_string());
    sid.run_ok(&[fx.dir.path()], "pahole", &all);
}

/// btfkit as `pahole` with the same arguments.
fn pahole_btfkit(fx: &Fixture, args: &[&str], obj: &Path, out: &Path) {
    let arg = format!("--btf_encode_detached={}", out.display());
    let mut all = args.to_vec();
    all.push(&arg);
    let o = run(&pahole_link(fx), &all, Some(obj));
    assert!(o.status.success(), "{args:?}: {}", text(&o));
}

/// The VARs of a BTF file, by DATASEC: "section: name name ...".
fn datasec_vars(file: &Path) -> Vec<String> {
    let btf = btf::load_file(file, None).expect("BTF");
    btf.iter()
        .filter_map(|(_, t)| match &t.data {
            btf::TypeData::Datasec { vars, .. } => {
                let names: Vec<&str> = vars
                    .iter()
                    .filter_map(|v| btf.name_of(btf.type_by_id(v.ty)?).ok())
                    .collect();
                Some(format!(
                    "{}: {}",
                    btf.name_of(t).unwrap_or("?"),
                    names.join(" ")
                ))
            }
            _ => None,
        })
        .collect()
}

/// `default`, a leading `+`, `all`, `--btf_gen_all`, repeated lists and
/// unknown names select the same variables as with pahole 1.32.
#[test]
fn btf_features_default_plus_all_select_as_pahole_1_32() {
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let fx = Fixture::new();
    let obj = object(&fx);
    let lists: &[&[&str]] = &[
        &[],
        &["--btf_features=default"],
        &["--btf_features=+global_var"],
        &["--btf_features=default,global_var"],
        &["--btf_features=var,+global_var"],
        &["--btf_features=all"],
        &["--btf_gen_all"],
        &["--btf_features=float", "--btf_features=var"],
        &["--btf_features=float,no_such_feature"],
        &["--btf_features=+no_such_feature"],
    ];
    for (i, args) in lists.iter().enumerate() {
        let (theirs, ours) = (fx.path(&format!("{i}.132")), fx.path(&format!("{i}.ours")));
        pahole_1_32(&sid, &fx, args, &obj, &theirs);
        pahole_btfkit(&fx, args, &obj, &ours);
        assert_eq!(datasec_vars(&ours), datasec_vars(&theirs), "{args:?}");
    }
    // Strict lists: an unknown name stops both (btfkit: a usage error).
    let theirs = sid
        .command(
            &[fx.dir.path()],
            "pahole",
            ["--btf_features_strict=var,no_such_feature", "-J"],
        )
        .arg(&obj)
        .output()
        .expect("run pahole 1.32");
    assert!(!theirs.status.success());
    let ours = run(
        &pahole_link(&fx),
        &["--btf_features_strict=var,no_such_feature", "-J"],
        Some(&obj),
    );
    assert_eq!(ours.status.code(), Some(2), "{}", text(&ours));
}

/// `--supported_btf_features` lists what btfkit implements, in pahole
/// 1.32's order: its whole list (`force_cu_merging` too: btfkit reads
/// into a unit's conversion the units it refers to, which is what the
/// merging is for), and `layout`, which Debian's pahole 1.32 hides because
/// its libbpf 1.7 cannot write the layout section.
#[test]
fn supported_btf_features_are_pahole_1_32_s_that_btfkit_implements() {
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let fx = Fixture::new();
    let theirs = sid.run_ok(&[], "pahole", ["--supported_btf_features"]);
    let theirs = String::from_utf8_lossy(&theirs);
    let mut want: Vec<&str> = theirs.trim().split(',').collect();
    want.push("layout");
    let ours = run(&pahole_link(&fx), &["--supported_btf_features"], None);
    assert!(ours.status.success(), "{}", text(&ours));
    assert_eq!(String::from_utf8_lossy(&ours.stdout).trim(), want.join(","));
}

/// A `.BTF_ids` kfunc set as the kernel's BTF_SET8_START/BTF_ID_FLAGS
/// macros lay it out, with KF_FASTCALL (1 << 12) on `kf_fast` and
/// KF_ARENA_RET | KF_ARENA_ARG1 | KF_ARENA_ARG2 (7 << 13) on `kf_arena`.
const KFUNCS: &str = r#"
struct arena_obj { int v; };
__attribute__((noinline)) int kf_fast(int x) { return x * 3; }
__attribute__((noinline)) struct arena_obj *kf_arena(struct arena_obj *a, struct arena_obj *b)
{
	return a->v > b->v ? a : b;
}
__attribute__((noinline)) int kf_plain(int x) { return x + 1; }
__attribute__((noinline)) int not_a_kfunc(int x) { return x - 1; }
asm(".pushsection .BTF_ids,\"a\"\n"
    ".p2align 2\n"
    "__BTF_ID__set8__kset:\n"
    ".long 3\n.long 1\n"
    "__BTF_ID__func__kf_fast__1:\n.long 0\n.long 0x1000\n"
    "__BTF_ID__func__kf_arena__2:\n.long 0\n.long 0xe000\n"
    "__BTF_ID__func__kf_plain__3:\n.long 0\n.long 0\n"
    ".size __BTF_ID__set8__kset, .-__BTF_ID__set8__kset\n"
    ".popsection\n");
int main(int argc, char **argv)
{
	struct arena_obj a = { argc }, b = { 2 };
	return kf_fast(argc) + kf_arena(&a, &b)->v + kf_plain(argc) + not_a_kfunc(argc);
}
"#;

/// Each FUNC with its prototype (type attributes spelled out) and its
/// DECL_TAGs, sorted.
fn funcs_with_tags(file: &Path) -> Vec<String> {
    use btf::diff::{diff, layout_text, Category, DiffOptions};
    let btf = btf::load_file(file, None).expect("BTF");
    let d = diff(
        &btf,
        &btf::Btf::default(),
        &DiffOptions {
            categories: vec![Category::Func],
            ..DiffOptions::default()
        },
    );
    let mut out: Vec<String> = d
        .only_a
        .iter()
        .flat_map(|o| {
            o.layouts
                .iter()
                .map(|l| format!("{}: {}", o.name, layout_text(l)))
        })
        .collect();
    out.extend(decl_tags(&btf));
    out.sort();
    out
}

/// Every DECL_TAG, as "TARGET tagged VALUE".
fn decl_tags(btf: &btf::Btf) -> Vec<String> {
    btf.iter()
        .filter_map(|(_, t)| {
            let btf::TypeData::DeclTag { ty, .. } = t.data else {
                return None;
            };
            let target = btf.type_by_id(ty).and_then(|f| btf.name_of(f).ok());
            Some(format!(
                "{} tagged {}",
                target.unwrap_or("?"),
                btf.name_of(t).unwrap_or("?")
            ))
        })
        .collect()
}

/// decl_tag_kfuncs and attributes as pahole 1.32 writes them: "bpf_kfunc"
/// on every kfunc, "bpf_fastcall" on KF_FASTCALL ones, and with
/// `attributes` the bpf_arena pointers of KF_ARENA_* kfuncs point to an
/// `address_space(1)` type attribute (TYPE_TAG with kind_flag).
#[test]
fn kfunc_tags_and_arena_attributes_as_pahole_1_32() {
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let fx = Fixture::new();
    fx.write("k.c", KFUNCS);
    let exe = fx.cc("k", &["k.c"], &["-g", "-O2"]);
    for args in [
        &["--btf_features=default"][..],
        &["--btf_features=default,attributes"][..],
    ] {
        let (theirs, ours) = (fx.path("k.132"), fx.path("k.ours"));
        pahole_1_32(&sid, &fx, args, &exe, &theirs);
        pahole_btfkit(&fx, args, &exe, &ours);
        let (theirs, ours) = (funcs_with_tags(&theirs), funcs_with_tags(&ours));
        assert_eq!(ours, theirs, "{args:?}");
        let fast = "kf_fast tagged bpf_fastcall".to_owned();
        assert!(ours.contains(&fast), "{ours:?}");
        let arena = ours.iter().any(|f| f.contains("address_space(1)"));
        assert_eq!(arena, args[0].ends_with("attributes"), "{ours:?}");
    }
}

/// A final kernel image's kfunc set: resolve_btfids wrote each pair's BTF id
/// and sorted the pairs by it, so the `__BTF_ID__func__` symbols, which stay
/// where the pre-link image had them, mark other functions' pairs. Here
/// every symbol marks another kfunc's pair (KFUNCS compiled again with
/// its pairs so patched and its BTF embedded as `.BTF`); the flags must
/// come by id, as the kernel reads them: `kf_fast` alone is bpf_fastcall.
#[test]
fn kfunc_flags_of_a_final_image_by_btf_id_as_the_kernel_reads_its_set() {
    if testkit::tool_or_skip("objcopy", "binutils").is_none() {
        return;
    }
    let fx = Fixture::new();
    let image = final_kfunc_image(&fx, None);
    let out = fx.path("final.btf");
    pahole_btfkit(&fx, &["--btf_features=default"], &image, &out);
    assert_final_kfunc_tags(&out, None);
}

/// The same for a final module, whose `.BTF` is split and whose set holds
/// ids past its base's: read over the base the encode is given
/// (`--btf_base`), or over the module's own `.BTF.base` (an out-of-tree
/// module's distilled base) when it has one.
#[test]
fn kfunc_flags_of_a_final_module_by_btf_id_over_its_base() {
    if testkit::tool_or_skip("objcopy", "binutils").is_none() {
        return;
    }
    let fx = Fixture::new();
    fx.write(
        "base.c",
        "struct base_only { long a, b; };\nstruct base_only g;\nint main(void) { return g.a; }\n",
    );
    let base_exe = fx.cc("base", &["base.c"], &["-g", "-O2"]);
    let base = fx.path("base.btf");
    pahole_btfkit(&fx, &["--btf_features=default"], &base_exe, &base);
    let image = final_kfunc_image(&fx, Some(&base));
    let base_arg = format!("--btf_base={}", base.display());
    let over_base = fx.path("over-base.btf");
    pahole_btfkit(
        &fx,
        &["--btf_features=default", &base_arg],
        &image,
        &over_base,
    );
    assert_final_kfunc_tags(&over_base, Some(&base));

    let distilled = fx.path("final-distilled");
    objcopy(
        &[&format!("--add-section=.BTF.base={}", base.display())],
        &image,
        &distilled,
    );
    let own_base = fx.path("own-base.btf");
    pahole_btfkit(&fx, &["--btf_features=default"], &distilled, &own_base);
    assert_final_kfunc_tags(&own_base, None);
}

/// The kfunc tags KFUNCS's flags give.
const FINAL_KFUNC_TAGS: [&str; 4] = [
    "kf_arena tagged bpf_kfunc",
    "kf_fast tagged bpf_fastcall",
    "kf_fast tagged bpf_kfunc",
    "kf_plain tagged bpf_kfunc",
];

/// The kfunc tags of a BTF file (split over `base`), compared with those
/// KFUNCS's flags give.
fn assert_final_kfunc_tags(file: &Path, base: Option<&Path>) {
    let tags = kfunc_tags(&btf::load_file(file, base).expect("BTF"));
    assert_eq!(
        tags,
        FINAL_KFUNC_TAGS.map(str::to_owned).into(),
        "{}",
        file.display()
    );
}

/// KFUNCS as resolve_btfids leaves a final image: encoded (over `base`,
/// as a module), its set's pairs given their FUNCs' ids and sorted by id,
/// each under the symbol of the next kfunc by id, and the BTF embedded as
/// `.BTF`.
fn final_kfunc_image(fx: &Fixture, base: Option<&Path>) -> PathBuf {
    fx.write("k.c", KFUNCS);
    let exe = fx.cc("k", &["k.c"], &["-g", "-O2"]);
    let btf_file = fx.path("k.btf");
    let base_arg = base.map(|b| format!("--btf_base={}", b.display()));
    let mut args = vec!["--btf_features=default"];
    args.extend(base_arg.as_deref());
    pahole_btfkit(fx, &args, &exe, &btf_file);
    let btf = btf::load_file(&btf_file, base).expect("BTF");
    let id = |name: &str| {
        btf.find_by_name_kind(name, btf::Kind::FUNC)
            .unwrap_or_else(|| panic!("no FUNC {name}"))
    };
    // KFUNCS's pairs in order; then by id, as resolve_btfids sorts them.
    let pre_link = [
        ("kf_fast", "0x1000"),
        ("kf_arena", "0xe000"),
        ("kf_plain", "0"),
    ];
    let mut sorted = pre_link.map(|(name, flags)| (name, id(name), flags));
    sorted.sort_by_key(|p| p.1);
    let mut source = KFUNCS.to_owned();
    for (i, (name, flags)) in pre_link.iter().enumerate() {
        let n = i + 1;
        let old = format!(r#""__BTF_ID__func__{name}__{n}:\n.long 0\n.long {flags}\n""#);
        // The i-th pair by id, under the label of the next kfunc by id.
        let (_, id, flags) = sorted[i];
        let label = sorted[(i + 1) % sorted.len()].0;
        let new = format!(r#""__BTF_ID__func__{label}__{n}:\n.long {id}\n.long {flags}\n""#);
        assert!(source.contains(&old), "{old}");
        source = source.replace(&old, &new);
    }
    fx.write("final.c", &source);
    let unsorted = fx.cc("final-no-btf", &["final.c"], &["-g", "-O2"]);
    let image = fx.path("final");
    objcopy(
        &[&format!("--add-section=.BTF={}", btf_file.display())],
        &unsorted,
        &image,
    );
    image
}

fn objcopy(args: &[&str], from: &Path, to: &Path) {
    let o = Command::new("objcopy")
        .args(args)
        .args([from, to])
        .output()
        .expect("objcopy");
    assert!(o.status.success(), "{}", text(&o));
}

/// Linux 7.2's scripts/Makefile.btf flags for pahole >= 1.31.
const FLAGS_7_2: &[&str] = &[
    "-J",
    "-j",
    "--btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs,attributes,layout",
    "--lang_exclude=rust",
];

/// One class of differences: how many, and a few names.
#[derive(Default)]
struct Class {
    count: usize,
    examples: Vec<String>,
}

impl Class {
    fn add(&mut self, name: &str) {
        self.count += 1;
        if self.examples.len() < 4 {
            self.examples.push(name.to_owned());
        }
    }
}

/// Debian 6.1's vmlinux encoded by pahole 1.32 and by btfkit with 7.2's
/// flags, compared with `btfkit diff`'s machinery. Every difference is
/// printed by class. Structs, unions, enums, typedefs and variables must be
/// identical; a FUNC only pahole 1.32 has must be one fentry cannot attach
/// by its name (no symbol is named so: btfkit names the clone by its exact
/// symbol, or cannot write the clone's changed ABI), or a name with several
/// definitions without code (btfkit does not choose among them); a FUNC
/// whose prototype differs must be the one of the DWARF of the code the
/// kernel attaches the name to.
#[test]
fn encode_parity_with_pahole_1_32_on_debian_6_1() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    parity_with_pahole_1_32(&k.vmlinux, "Debian 6.1 vmlinux", &[]);
}

/// The same on the vmlinux of Linux 7.2 built here with GCC 16 (its DWARF;
/// the kernel build is scripts/kernel/build.sh's, with btfkit as pahole).
#[test]
fn encode_parity_with_pahole_1_32_on_7_2_gcc16() {
    let Some(()) = testkit::kernel_tier("builds Linux 7.2 with btfkit as pahole") else {
        return;
    };
    let Some(k) = testkit::kernel::build("7.2", "gcc", Pahole::Btfkit, Path::new(BTFKIT)) else {
        return;
    };
    parity_with_pahole_1_32(&k.join("vmlinux"), "7.2 GCC 16 vmlinux", &[]);
}

/// The same with clang 21. pahole 1.32 is wrong about one FUNC there:
///
/// `arch_bpf_timed_may_goto` (`static u64 arch_bpf_timed_may_goto(void)`):
/// the symbol, at the lowest (only) address of the name, is the assembly
/// of arch/x86/net/bpf_timed_may_goto.S (`lea 0x0(%rbp,%r10,1),%r10;
/// push %rbp; ... mov %r10,%rdi; call bpf_check_timed_may_goto; mov
/// %rax,%r10; ... pop %rax; leave; ret`): it takes its argument in r10 and
/// returns its result in r10 with rax restored, as JITed BPF code calls
/// it, and starts without an ftrace site. The prototype pahole writes is
/// that of kernel/bpf/core.c's `__weak` default, whose code (`endbr64;
/// nopl; xor %eax,%eax; ret` at another address) the link overrode and
/// left without a symbol.
#[test]
fn encode_parity_with_pahole_1_32_on_7_2_clang() {
    let Some(()) = testkit::kernel_tier("builds Linux 7.2 with btfkit as pahole") else {
        return;
    };
    let Some(k) = testkit::kernel::build("7.2", "clang", Pahole::Btfkit, Path::new(BTFKIT)) else {
        return;
    };
    parity_with_pahole_1_32(
        &k.join("vmlinux"),
        "7.2 clang vmlinux",
        &["arch_bpf_timed_may_goto"],
    );
}

/// `vmlinux` encoded by pahole 1.32 and by btfkit with 7.2's flags; prints
/// the differences by class and fails on one outside the allowed classes.
/// `pahole_wrong`: FUNCs only pahole 1.32 has whose prototype the machine
/// code shows is not the one of the code at the symbol (the caller gives
/// the evidence); each must also be a symbol whose code no DWARF
/// subprogram describes while a subprogram of that name has code elsewhere.
fn parity_with_pahole_1_32(vmlinux: &Path, what: &str, pahole_wrong: &[&str]) {
    use btf::diff::{diff, Category, DiffOptions};
    use fentry::verify::{prototype_matches, Compare};
    use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let fx = Fixture::new();
    let (theirs, ours) = (fx.path("vmlinux.132.btf"), fx.path("vmlinux.ours.btf"));
    let mut args: Vec<String> = FLAGS_7_2.iter().map(|a| a.to_string()).collect();
    args.push(format!("--btf_encode_detached={}", theirs.display()));
    args.push(vmlinux.display().to_string());
    sid.run_ok(&[fx.dir.path(), vmlinux], "pahole", &args);
    pahole_btfkit(&fx, FLAGS_7_2, vmlinux, &ours);
    let (theirs, ours) = (
        btf::load_file(&theirs, None).expect("pahole 1.32's BTF"),
        btf::load_file(&ours, None).expect("btfkit's BTF"),
    );
    let d = diff(&ours, &theirs, &DiffOptions::default());

    let elf = dwarf2btf::load::ElfFile::open(vmlinux).expect("vmlinux");
    let model = dwarf2btf::funcs::FuncModel::from_elf(&elf).expect("function model");
    let symbols: HashSet<&str> = model.instances.iter().map(|i| i.symbol.as_str()).collect();
    // The instance the kernel attaches each name to: the lowest address.
    let mut pick: HashMap<&str, &dwarf2btf::funcs::Instance> = HashMap::new();
    for i in &model.instances {
        pick.entry(i.symbol.as_str()).or_insert(i);
    }
    let ours_funcs: Vec<&str> = d
        .only_a
        .iter()
        .filter(|o| o.category == Category::Func)
        .map(|o| o.name.as_str())
        .collect();

    let mut classes: BTreeMap<&str, Class> = BTreeMap::new();
    let mut bad: BTreeMap<&str, Class> = BTreeMap::new();
    for o in &d.only_a {
        let class = match o.category {
            Category::Func if o.name.contains("..") => {
                "only btfkit: FUNC of another instance (<symbol>..<address>)"
            }
            Category::Func if o.name.contains('.') => {
                "only btfkit: FUNC named by its exact clone symbol"
            }
            Category::Func => "only btfkit: FUNC under its plain symbol name",
            _ => {
                bad.entry("only btfkit: a named type or VAR")
                    .or_default()
                    .add(&o.name);
                continue;
            }
        };
        classes.entry(class).or_default().add(&o.name);
    }
    for o in &d.only_b {
        if o.category != Category::Func {
            bad.entry("only pahole 1.32: a named type or VAR")
                .or_default()
                .add(&o.name);
            continue;
        }
        let clone = ours_funcs.iter().any(|f| {
            f.strip_prefix(o.name.as_str())
                .is_some_and(|r| r.starts_with('.'))
        });
        let elsewhere = |i: &dwarf2btf::funcs::Instance| {
            i.status == dwarf2btf::funcs::Status::NoDwarf
                && model.concretes.iter().any(|c| {
                    !c.bodiless
                        && c.name.as_deref() == Some(o.name.as_str())
                        && c.entry != i.address
                })
        };
        let class = match pick.get(o.name.as_str()) {
            Some(i) if pahole_wrong.contains(&o.name.as_str()) && elsewhere(i) => {
                "only pahole 1.32: the prototype of code at another address (see the test)"
            }
            None if clone => "only pahole 1.32: no symbol of that name; btfkit has the clone's",
            None => "only pahole 1.32: no symbol of that name; the clone's ABI is unwritable",
            Some(i)
                if i.detail
                    .as_deref()
                    .is_some_and(|d| d.contains("definitions without code")) =>
            {
                "only pahole 1.32: several definitions without code"
            }
            Some(_) => {
                bad.entry("only pahole 1.32: an attachable FUNC")
                    .or_default()
                    .add(&o.name);
                continue;
            }
        };
        assert!(
            !symbols.contains(o.name.as_str())
                || class.contains("several")
                || class.contains("another address")
        );
        classes.entry(class).or_default().add(&o.name);
    }
    for c in &d.changed {
        // btfkit's FUNC has the names, types and registers the DWARF of the
        // code at the symbol gives (btfkit funcs --verify's comparison:
        // an eightbyte the model calls `u64` is `long unsigned int` there).
        let ours_func = ours.find_by_name_kind(&c.name, btf::Kind::FUNC);
        let matches = match (pick.get(c.name.as_str()), ours_func) {
            (Some(i), Some(f)) => [Compare::Names, Compare::Types]
                .into_iter()
                .all(|how| prototype_matches(&model, i, &ours, f, how).is_ok()),
            _ => false,
        };
        let class = if c.category == Category::Func && matches {
            "changed: btfkit's is the DWARF of the code at the symbol"
        } else {
            bad.entry("changed: other").or_default().add(&c.name);
            continue;
        };
        classes.entry(class).or_default().add(&c.name);
    }
    println!(
        "{what}, 7.2's flags: btfkit vs pahole 1.32 ({} equal)",
        d.equal
    );
    println!("| class | count | examples |\n|---|---|---|");
    for (name, c) in classes.iter().chain(&bad) {
        println!("| {name} | {} | {} |", c.count, c.examples.join(", "));
    }

    // The kfunc tags of the image's own BTF, which the kernel build made
    // from the image before resolve_btfids sorted each kfunc set's pairs by
    // BTF id: btfkit reads the flags of this final image by id.
    let own = btf::load_file(vmlinux, None).expect("the image's own .BTF");
    let (own_tags, our_tags) = (kfunc_tags(&own), kfunc_tags(&ours));
    let wrong = |tags: &BTreeSet<String>| {
        tags.symmetric_difference(&own_tags)
            .cloned()
            .collect::<Vec<_>>()
    };
    println!(
        "{what}: {} kfunc tags in the image's own BTF; pahole 1.32 differs on {:?}",
        own_tags.len(),
        wrong(&kfunc_tags(&theirs))
    );
    assert!(
        wrong(&our_tags).is_empty(),
        "{what}: kfunc tags other than the image's own: {:?}",
        wrong(&our_tags)
    );
    assert!(
        bad.is_empty(),
        "{what}: differences outside the allowed classes (above)"
    );
}

/// Every "bpf_kfunc" and "bpf_fastcall" DECL_TAG, as "FUNC tagged TAG".
fn kfunc_tags(btf: &btf::Btf) -> std::collections::BTreeSet<String> {
    decl_tags(btf)
        .into_iter()
        .filter(|t| t.ends_with(" tagged bpf_kfunc") || t.ends_with(" tagged bpf_fastcall"))
        .collect()
}

/// C in the shapes clang 21 gives the kernel's functions (7.2's
/// free_all, verbose_invalid_scalar, retval_range_within, cnum32_umin),
/// built as the kernel builds it: `-pg -mfentry` (an ftrace site first)
/// and IBT (`endbr64` before it). clang starts every location list after
/// those 9 bytes, not at the entry address.
const CLANG_ENTRY: &str = r#"
#include <stdbool.h>

struct node { struct node *next; void *data; };
struct range { int lo, hi; bool wide; };
struct val { long lo, hi; int lo32, hi32; };
struct span { unsigned int base, size; };

void sink(const void *p);

/* Its result unused: clang drops it (DW_CC_nocall). n: in rdi from the
 * ftrace site on, no DW_OP_entry_value later; percpu: DW_OP_breg1 0,
 * masked and converted to 1 bit. */
static __attribute__((noinline)) int free_all(struct node *n, void *ctx, bool percpu)
{
	int cnt = 0;

	while (n) {
		struct node *t = n->next;

		if (percpu)
			sink(n->data);
		sink(ctx);
		n = t;
		cnt++;
	}
	return cnt;
}

/* ctx unused: clang drops it (DW_CC_nocall), and keeps the count, which
 * main compares right after each call. */
static __attribute__((noinline)) int count_nodes(struct node *n, void *ctx)
{
	int cnt = 0;

	for (; n; n = n->next)
		cnt++;
	return cnt;
}

/* The second eightbyte of r unused: clang drops it, and ctx and name move
 * up to rcx and r8 (main's calls put them there). */
static __attribute__((noinline)) void report(void *env, void *reg, struct range r,
					     const char *ctx, const char *name)
{
	sink(env);
	sink(reg);
	sink((void *)(long)r.lo);
	sink(ctx);
	sink(name);
}

/* Its ABI kept; r in pieces of 4, 4 and 1 bytes: lo in rdi, wide in rsi. */
__attribute__((noinline)) bool range_within(struct range r, const struct val *v)
{
	if (r.wide)
		return r.lo <= v->lo32 && v->hi32 <= r.hi;
	return r.lo <= v->lo && v->hi <= r.hi;
}

static inline bool span_wraps(struct span s)
{
	return s.size > 0xffffffffu - s.base;
}

/* Its ABI kept; s in pieces: rdi, and rdi shifted right by 32. */
__attribute__((noinline)) unsigned int span_min(struct span s)
{
	return span_wraps(s) ? 0 : s.base;
}

int main(int argc, char **argv)
{
	struct range r = { argc, argc + 1, argc > 2 };
	struct val v = { argc, argc * 2, argc, argc * 2 };
	struct span s = { argc, argc * 3 };

	free_all((struct node *)argv[1], argv[2], argc > 3);
	free_all((struct node *)argv[3], argv[0], argc > 4);
	report(argv, argv[1], r, argv[2], argv[3]);
	report(argv[4], argv, r, argv[1], argv[3]);
	if (count_nodes((struct node *)argv[5], argv[6]) > 2)
		sink(argv);
	if (count_nodes((struct node *)argv[6], argv[7]) > 3)
		sink(argv[1]);
	return range_within(r, &v) + span_min(s);
}

void sink(const void *p) { __asm__ volatile("" :: "r"(p)); }

__asm__(".globl __fentry__\n.type __fentry__, @function\n__fentry__: ret\n");
"#;

/// Each FUNC btfkit writes for CLANG_ENTRY: the C declarations (clang
/// names `bool` `_Bool`), but `free_all` returns nothing (clang removed its
/// value), `count_nodes` takes n alone (its value kept: main reads eax
/// after each call), and for `report` what its code takes: env, reg, the
/// first eightbyte of r, ctx, name.
const CLANG_ENTRY_FUNCS: &[&str] = &[
    "count_nodes: static int count_nodes(struct node *n)",
    "free_all: static void free_all(struct node *n, void *ctx, _Bool percpu)",
    "main: static int main(int argc, char **argv)",
    "range_within: static _Bool range_within(struct range r, const struct val *v)",
    "report: static void report(void *env, void *reg, long unsigned int r__coerce0, const char *ctx, const char *name)",
    "sink: static void sink(const void *p)",
    "span_min: static unsigned int span_min(struct span s)",
];

/// `exe` with the 5-byte `call __fentry__` at each function's entry (past
/// an `endbr64`) overwritten by a 5-byte NOP, as objtool's `--mnop` does
/// in a kernel build; the number of sites.
fn nop_ftrace_sites(exe: &Path, out: &Path) -> usize {
    use object::{Object, ObjectSection, ObjectSymbol};
    let mut bytes = std::fs::read(exe).expect("read the program");
    let sites: Vec<usize> = {
        let obj = object::File::parse(&*bytes).expect("parse the program");
        let fentry = obj
            .symbols()
            .find(|s| s.name() == Ok("__fentry__"))
            .map(|s| s.address())
            .expect("__fentry__");
        obj.symbols()
            .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != fentry)
            .filter_map(|s| {
                let section = obj.section_by_index(s.section_index()?).ok()?;
                let (file_start, _) = section.file_range()?;
                let mut at = s.address();
                let off = |a: u64| (a - section.address() + file_start) as usize;
                if bytes.get(off(at)..off(at) + 4) == Some(&[0xf3, 0x0f, 0x1e, 0xfa]) {
                    at += 4;
                }
                let call = bytes.get(off(at)..off(at) + 5)?;
                let rel = i32::from_le_bytes(call[1..5].try_into().ok()?);
                (call[0] == 0xe8 && (at + 5).wrapping_add_signed(rel.into()) == fentry)
                    .then(|| off(at))
            })
            .collect()
    };
    for &at in &sites {
        bytes[at..at + 5].copy_from_slice(&[0x0f, 0x1f, 0x44, 0x00, 0x00]);
    }
    std::fs::write(out, bytes).expect("write the program");
    sites.len()
}

/// Clang's parameter locations at a kernel function's entry: location
/// lists that start past `endbr64` and the ftrace site (a `call __fentry__`
/// in the linked program, one with a relocation in the object, a NOP as
/// objtool leaves it), narrow values as masked and converted argument
/// registers, aggregates cut into their members. btfkit has every FUNC
/// pahole 1.32 has, the same but for `free_all`, and the C declarations;
/// and `report`, which pahole 1.32 leaves out, with what its code takes.
/// `free_all`'s result is unused, and clang removed it (DW_CC_nocall with
/// every parameter in place): pahole 1.32 says it returns `int`, btfkit
/// `void`, and objdump shows its code reaching `ret` without writing rax.
/// Each FUNC's parameters are where the DWARF of its code puts them (funcs
/// --verify's comparison). `--funcs pahole` leaves both changed functions
/// out.
#[test]
fn clang_entry_locations_as_pahole_1_32_and_the_c_declarations() {
    use btf::diff::{diff, Category, DiffOptions};
    use fentry::verify::{prototype_matches, Compare};
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let fx = Fixture::new();
    let source = fx.write("entry.c", CLANG_ENTRY);
    let flags = ["-g", "-O2", "-pg", "-mfentry", "-fcf-protection=branch"];
    let (exe, obj, nop) = (fx.path("entry"), fx.path("entry.o"), fx.path("entry.nop"));
    for (out, extra) in [(&exe, None), (&obj, Some("-c"))] {
        let mut args: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        args.extend(extra.map(str::to_owned));
        args.extend(["-o".into(), out.display().to_string()]);
        args.push(source.display().to_string());
        sid.run_ok(&[fx.dir.path()], "clang", &args);
    }
    assert_eq!(nop_ftrace_sites(&exe, &nop), 7, "ftrace sites");
    let free_all = testkit::objdump::code_to_first_ret(&exe, "free_all");
    assert!(
        !free_all.iter().any(|i| testkit::objdump::writes_rax(i)),
        "free_all writes rax before its ret: {free_all:?}"
    );
    let main = testkit::objdump::code_to_first_ret(&exe, "main");
    let after_calls: Vec<&String> = main
        .windows(2)
        .filter(|w| w[0].starts_with("call") && w[0].ends_with("<count_nodes>"))
        .map(|w| &w[1])
        .collect();
    assert!(
        after_calls.len() == 2 && after_calls.iter().all(|i| i.ends_with(",%eax")),
        "main does not compare count_nodes' value right after each call: {main:?}"
    );
    for input in [&exe, &obj, &nop] {
        let what = input.display().to_string();
        let (theirs, ours) = (fx.path("entry.132"), fx.path("entry.ours"));
        pahole_1_32(&sid, &fx, FLAGS_7_2, input, &theirs);
        pahole_btfkit(&fx, FLAGS_7_2, input, &ours);
        let funcs: Vec<String> = funcs_with_tags(&ours)
            .into_iter()
            .filter(|f| !f.contains(" tagged "))
            .collect();
        assert_eq!(funcs, CLANG_ENTRY_FUNCS, "{what}");
        let (ours, theirs) = (
            btf::load_file(&ours, None).expect("btfkit's BTF"),
            btf::load_file(&theirs, None).expect("pahole 1.32's BTF"),
        );
        let d = diff(
            &ours,
            &theirs,
            &DiffOptions {
                categories: vec![Category::Func],
                ..DiffOptions::default()
            },
        );
        let only_ours: Vec<&str> = d.only_a.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(only_ours, ["count_nodes", "report"], "{what}");
        let changed: Vec<&str> = d.changed.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(changed, ["free_all"], "{what}");
        assert!(d.only_b.is_empty(), "{what}: {d:?}");

        let elf = dwarf2btf::load::ElfFile::open(input).expect("the input");
        let model = dwarf2btf::funcs::FuncModel::from_elf(&elf).expect("function model");
        for f in CLANG_ENTRY_FUNCS {
            let name = f.split(':').next().unwrap_or_default();
            let inst = model.instances.iter().find(|i| i.symbol == name);
            let func = ours.find_by_name_kind(name, btf::Kind::FUNC);
            let (Some(inst), Some(func)) = (inst, func) else {
                panic!("{what}: {name}: no instance or no FUNC");
            };
            for how in [Compare::Names, Compare::Types] {
                prototype_matches(&model, inst, &ours, func, how)
                    .unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
            }
        }
    }

    // `--funcs pahole` writes source prototypes: none for the three
    // functions clang changed (DW_CC_nocall), and the others the same.
    let pahole_mode = fx.path("entry.pahole-mode");
    let o = run(
        Path::new(BTFKIT),
        &[
            "encode",
            "--funcs",
            "pahole",
            "-o",
            &pahole_mode.display().to_string(),
            &exe.display().to_string(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o));
    let kept: Vec<&str> = CLANG_ENTRY_FUNCS
        .iter()
        .copied()
        .filter(|f| {
            !["free_all:", "report:", "count_nodes:"]
                .iter()
                .any(|n| f.starts_with(n))
        })
        .collect();
    assert_eq!(funcs_with_tags(&pahole_mode), kept);
}
