//! `btfkit pahole` / btfkit run as `pahole`: the command lines kernel builds
//! pass (6.1's pahole-flags.sh, 6.12's Makefile.btf, gen-btf.sh), checked on
//! C objects compiled here. Oracles: libbpf (bpftool parses what -J wrote),
//! the object's own bytes (everything outside the ELF header's section table
//! fields stays at its offset), and the kernel scripts' version parsing.
//! Bad input: an error naming the file, a non-zero exit, the object untouched.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
