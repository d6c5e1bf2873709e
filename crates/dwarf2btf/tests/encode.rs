//! The encoder against its oracles: pahole 1.24 (`pahole -J`), Debian's
//! shipped BTF, bpftool and the running kernel's BTF verifier.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use btf::diff::{Category, DiffOptions};
use btf::Btf;
use dwarf2btf::load::ElfFile;
use dwarf2btf::{EncodeOptions, FuncMode, NoProgress};
use testkit::Fixture;

fn opts(jobs: usize) -> EncodeOptions {
    EncodeOptions {
        jobs,
        funcs: FuncMode::Pahole,
        ..EncodeOptions::default()
    }
}

fn encode(path: &Path, base: Option<Arc<Btf>>, jobs: usize) -> Btf {
    let elf = ElfFile::open(path).expect("open");
    dwarf2btf::encode(&elf, base, &opts(jobs), &NoProgress)
        .unwrap_or_else(|e| panic!("encode {}: {e}", path.display()))
        .btf
}

fn try_encode(path: &Path) -> Result<Btf, dwarf2btf::Error> {
    let elf = ElfFile::open(path)?;
    dwarf2btf::encode(&elf, None, &opts(2), &NoProgress).map(|e| e.btf)
}

/// Types per kind, without FUNC and FUNC_PROTO (function choice differs
/// from pahole's by design, see the issue), and without ARRAY and CONST:
/// pahole 1.24 flattens `char a[16][16]` into one ARRAY of 256, btfkit
/// nests an ARRAY per dimension as pahole >= 1.25 and clang do, which
/// changes how many ARRAYs and CONSTs of arrays there are (on Debian's
/// 6.1: 2,854 and 2,397 as pahole 1.32 has, 2,801 and 2,392 with 1.24).
/// Their layouts are compared flattened below, and their counts
/// equal pahole 1.32's (crates/btfkit/tests/pahole_cli.rs).
fn kinds(btf: &Btf) -> BTreeMap<&'static str, usize> {
    let mut m = dwarf2btf::encode::kind_counts(btf);
    for nested in ["FUNC", "FUNC_PROTO", "ARRAY", "CONST"] {
        m.remove(nested);
    }
    m
}

/// `pahole -J` (1.24, the flags Debian's kernel build uses) on a copy.
fn pahole_btf(pahole: &Path, elf: &Path, dir: &Path) -> Btf {
    let out = dir.join(format!(
        "{}.pahole.btf",
        elf.file_name().map_or("x".into(), |n| n.to_string_lossy())
    ));
    testkit::run_ok(
        Command::new(pahole)
            .arg("-J")
            .arg("--btf_gen_floats")
            .arg("-j")
            .arg("--lang_exclude=rust")
            .arg(format!("--btf_encode_detached={}", out.display()))
            .arg(elf),
    );
    btf::load_file(&out, None).expect("pahole's BTF")
}

/// Layouts with multi-dimensional arrays flattened: pahole 1.24 (the
/// oracle here, and Debian's .BTF) flattens them, pahole >= 1.25 nests
/// them as btfkit does.
fn layout_diff(a: &Btf, b: &Btf) -> btf::diff::Diff {
    btf::diff::diff(
        a,
        b,
        &DiffOptions {
            categories: vec![
                Category::Struct,
                Category::Union,
                Category::Enum,
                Category::Typedef,
            ],
            flat_arrays: true,
        },
    )
}

fn assert_same_layouts(what: &str, ours: &Btf, theirs: &Btf) {
    let d = layout_diff(ours, theirs);
    assert!(
        d.is_empty(),
        "{what}: layouts differ: only ours {:?}\nonly theirs {:?}\nchanged {:?}",
        d.only_a.iter().map(|o| &o.name).collect::<Vec<_>>(),
        d.only_b.iter().map(|o| &o.name).collect::<Vec<_>>(),
        d.changed.iter().map(|c| &c.name).collect::<Vec<_>>()
    );
}

const FIXTURE_A: &str = r#"
struct bits { unsigned a:3; int b:5; unsigned long c:40; char d; _Bool e:1; };
struct __attribute__((packed)) pk { char a; int b; long c; };
struct al { int x __attribute__((aligned(16))); char y; };
struct flex { int n; char data[]; };
struct anon { int k; union { int i; float f; }; struct { short s1, s2; }; };
enum neg { N1 = -1, N2 = 5 };
enum big { B1 = 0x100000000ULL, B2 = 1 };
enum bigneg { BN1 = -0x100000000LL, BN2 = 3 };
struct fwd_only;
struct usesfwd { struct fwd_only *p; union fwd_union *u; };
typedef int (*fp_t)(int, const char *, ...);
struct ops { void (*cb)(struct ops *, long); fp_t f; int (*arr[2])(void); };
typedef const volatile int cvint;
typedef cvint cvint2;
typedef cvint2 cvint3;
struct cv { const volatile unsigned long *const restrict p; volatile const char c; };
struct shared { int a; struct shared *next; };
struct same_name { int only_in_a; };
int matrix[3][4][5];
_Bool flag; double dd; long double ld; float ff;
struct bits gb; struct pk gp; struct al ga; struct flex *gf; struct anon gan;
enum neg gn; enum big gbig; enum bigneg gbn; struct usesfwd gu; struct ops go;
cvint3 gcv; struct cv gcvs; struct shared gs; struct same_name sna;
int vf(int a, ...) { return a; }
int main(void) { return vf(1, 2); }
"#;

const FIXTURE_B: &str = r#"
struct shared { int a; struct shared *next; };
struct same_name { long only_in_b; char z; };
struct same_name snb;
int bfunc(struct shared *s) { return s->a; }
"#;

fn fixture_elf(fx: &Fixture, name: &str, flags: &[&str]) -> PathBuf {
    fx.write("a.c", FIXTURE_A);
    fx.write("b.c", FIXTURE_B);
    fx.cc(name, &["a.c", "b.c"], flags)
}

fn count_named(btf: &Btf, kind: &str, name: &str) -> usize {
    btf.iter()
        .filter(|(_, t)| t.kind_name() == kind && btf.name_of(t).ok() == Some(name))
        .count()
}

fn fixture_matches_pahole(flags: &[&str]) {
    let Some(pahole) = testkit::tool_or_skip("pahole", "dwarves") else {
        return;
    };
    let fx = Fixture::new();
    let elf = fixture_elf(&fx, "fx", flags);
    let ours = encode(&elf, None, 2);
    let theirs = pahole_btf(&pahole, &elf, fx.dir.path());
    assert_eq!(kinds(&ours), kinds(&theirs), "kind counts, {flags:?}");
    assert_same_layouts(&format!("{flags:?}"), &ours, &theirs);
    // The same struct in two units is one type; two different structs
    // with one name stay two.
    assert_eq!(count_named(&ours, "STRUCT", "shared"), 1);
    assert_eq!(count_named(&ours, "STRUCT", "same_name"), 2);
    assert_eq!(count_named(&ours, "FWD", "fwd_only"), 1);
    // The bitfields: kind_flag and sizes.
    let (_, bits) = ours
        .iter()
        .find(|(_, t)| t.kind_name() == "STRUCT" && ours.name_of(t).ok() == Some("bits"))
        .expect("struct bits");
    assert!(bits.kind_flag);
    let sizes: Vec<u32> = bits
        .members()
        .iter()
        .map(|m| m.bitfield_size(true))
        .collect();
    assert_eq!(sizes, [3, 5, 40, 0, 1]);
    let offsets: Vec<u32> = bits.members().iter().map(|m| m.bit_offset(true)).collect();
    assert_eq!(offsets, [0, 3, 8, 48, 56]);
}

#[test]
fn fixture_o0_types_equal_pahole_1_24() {
    fixture_matches_pahole(&["-g", "-O0"]);
}

#[test]
fn fixture_o2_types_equal_pahole_1_24() {
    fixture_matches_pahole(&["-g", "-O2"]);
}

#[test]
fn fixture_dwarf4_types_equal_pahole_1_24() {
    fixture_matches_pahole(&["-gdwarf-4", "-O2"]);
}

#[test]
fn fixture_dwarf5_types_equal_pahole_1_24() {
    fixture_matches_pahole(&["-gdwarf-5", "-O0"]);
}

const FIXTURE_ARRAYS: &str = r#"
struct multidim {
    int a1d[5];
    int a2d[3][4];
    int a3d[2][3][4];
    char comm[16][16];
    int flex_len;
    char flex[][8];
};
struct multidim g;
"#;

/// Multi-dimensional arrays nest one ARRAY per dimension, as clang's own
/// BTF has them (and pahole >= 1.25): `char comm[16][16]`, not `[256]`.
#[test]
fn fixture_nested_arrays_equal_clang_19_btf() {
    let Some(clang) = testkit::tool_or_skip("clang-19", "clang-19") else {
        return;
    };
    let fx = Fixture::new();
    fx.write("arrays.c", FIXTURE_ARRAYS);
    let obj = fx.path("arrays.o");
    testkit::run_ok(
        Command::new("gcc")
            .args(["-g", "-c", "-o"])
            .arg(&obj)
            .arg(fx.path("arrays.c")),
    );
    let ours = try_encode(&obj).expect("encode");
    let bpf = fx.path("arrays.bpf.o");
    testkit::run_ok(
        Command::new(clang)
            .args(["-g", "-O2", "-target", "bpf", "-c", "-o"])
            .arg(&bpf)
            .arg(fx.path("arrays.c")),
    );
    let theirs = btf::load_file(&bpf, None).expect("clang's .BTF");
    let d = btf::diff::diff(
        &ours,
        &theirs,
        &DiffOptions {
            categories: vec![Category::Struct],
            flat_arrays: false,
        },
    );
    assert!(d.is_empty(), "{d:?}");
    let (_, s) = ours
        .iter()
        .find(|(_, t)| ours.name_of(t).ok() == Some("multidim"))
        .expect("struct multidim");
    let decls: Vec<String> = btf::diff::diff(&ours, &btf::Btf::default(), &DiffOptions::default())
        .only_a
        .iter()
        .filter(|o| o.name == "multidim")
        .flat_map(|o| o.layouts.iter().map(btf::diff::layout_text))
        .collect();
    assert_eq!(s.members().len(), 6);
    for want in [
        "int a2d[3][4] at bit 160",
        "int a3d[2][3][4] at bit 544",
        "char comm[16][16] at bit 1312",
        "char flex[0][8] at bit 3392",
    ] {
        assert!(
            decls.iter().any(|d| d.contains(want)),
            "{want} in {decls:?}"
        );
    }
}

#[test]
fn fixture_compressed_debug_sections_equal_uncompressed() {
    let fx = Fixture::new();
    let plain = fixture_elf(&fx, "plain", &["-g", "-O2"]);
    let gz = fixture_elf(&fx, "gz", &["-g", "-O2", "-gz"]);
    let readelf = Command::new("readelf").arg("-SW").arg(&gz).output();
    if let Ok(out) = readelf {
        let text = String::from_utf8_lossy(&out.stdout);
        if !text
            .lines()
            .any(|l| l.contains(".debug_info") && l.contains(" C "))
        {
            return testkit::skip("cc -gz did not compress .debug_info");
        }
    }
    let a = encode(&plain, None, 2);
    let b = encode(&gz, None, 2);
    assert_eq!(a.to_bytes(), b.to_bytes());
}

#[test]
fn fixture_relocatable_object_equals_pahole_1_24() {
    let Some(pahole) = testkit::tool_or_skip("pahole", "dwarves") else {
        return;
    };
    let fx = Fixture::new();
    fx.write("a.c", FIXTURE_A);
    let obj = fx.cc("a.o", &["a.c"], &["-g", "-O2", "-c"]);
    let ours = encode(&obj, None, 2);
    let theirs = pahole_btf(&pahole, &obj, fx.dir.path());
    assert_eq!(kinds(&ours), kinds(&theirs));
    assert_same_layouts("a.o", &ours, &theirs);
}

#[test]
fn fixture_same_bytes_for_any_thread_count() {
    let fx = Fixture::new();
    let elf = fixture_elf(&fx, "fx", &["-g", "-O2"]);
    let one = encode(&elf, None, 1).to_bytes();
    let two = encode(&elf, None, 2).to_bytes();
    let four = encode(&elf, None, 4).to_bytes();
    assert_eq!(one, two);
    assert_eq!(one, four);
}

#[test]
fn embed_writes_a_btf_section_bpftool_reads() {
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    let fx = Fixture::new();
    let elf = fixture_elf(&fx, "fx", &["-g", "-O2"]);
    let btf = encode(&elf, None, 2);
    let data = std::fs::read(&elf).expect("read");
    let image = dwarf2btf::embed::embed_btf(&data, &btf.to_bytes()).expect("embed");
    let out = fx.path("fx.btf.elf");
    let perm = std::fs::metadata(&elf).expect("stat").permissions();
    fileio::output_file::write(&out, &image, Some(perm)).expect("write");
    // Re-embedding replaces the section instead of adding a second one.
    let again = dwarf2btf::embed::embed_btf(&image, &btf.to_bytes()).expect("embed again");
    assert_eq!(again.len(), image.len(), "the file does not grow");
    let out2 = fx.path("fx.btf2.elf");
    fileio::output_file::write(&out2, &again, None).expect("write");
    for f in [&out, &out2] {
        let dump = testkit::run_ok(Command::new(&bpftool).args(["btf", "dump", "file"]).arg(f));
        assert!(String::from_utf8_lossy(&dump).contains("STRUCT 'shared'"));
        let read = btf::load_file(f, None).expect("load embedded");
        assert_eq!(read.to_bytes(), btf.to_bytes());
    }
    // The program still runs: nothing loaded moved.
    let status = Command::new(&out).status().expect("run");
    assert_eq!(status.code(), Some(1), "main returns vf(1, 2) = 1");
}

// ---- bad input: an error naming the file (and DIE offset), never a panic.

fn assert_error(path: &Path, what: &str) -> String {
    match try_encode(path) {
        Ok(_) => panic!("{what}: expected an error"),
        Err(e) => {
            let msg = e.to_string();
            assert!(
                msg.contains(&path.display().to_string()),
                "{what}: error does not name the file: {msg}"
            );
            msg
        }
    }
}

#[test]
fn bad_input_without_dwarf_is_an_error() {
    let fx = Fixture::new();
    fx.write("a.c", FIXTURE_A);
    let elf = fx.cc("nodwarf", &["a.c"], &["-O2"]);
    let msg = assert_error(&elf, "no DWARF");
    assert!(msg.contains("DWARF"), "{msg}");
}

#[test]
fn bad_input_without_symbols_still_encodes_types() {
    let fx = Fixture::new();
    let elf = fixture_elf(&fx, "fx", &["-g", "-O2"]);
    let stripped = fx.path("stripped");
    testkit::run_ok(
        Command::new("strip")
            .arg("-s")
            .arg("--keep-section=.debug_*")
            .arg(&elf)
            .arg("-o")
            .arg(&stripped),
    );
    let btf = try_encode(&stripped).expect("types without symbols");
    assert_eq!(count_named(&btf, "STRUCT", "shared"), 1);
}

#[test]
fn bad_input_not_elf_is_an_error() {
    let fx = Fixture::new();
    let p = fx.write("junk", "this is not an ELF file at all, just text\n");
    assert_error(&p, "not ELF");
}

fn patched(fx: &Fixture, from: &Path, name: &str, patch: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut data = std::fs::read(from).expect("read");
    patch(&mut data);
    let p = fx.path(name);
    std::fs::write(&p, data).expect("write");
    p
}

/// File offset and size of a section, from `readelf -SW`.
fn section_range(elf: &Path, name: &str) -> Option<(usize, usize)> {
    let out = Command::new("readelf").arg("-SW").arg(elf).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().any(|w| w == name))?;
    let after = line.split(']').nth(1)?;
    let f: Vec<&str> = after.split_whitespace().collect();
    let off = usize::from_str_radix(f.get(3)?, 16).ok()?;
    let size = usize::from_str_radix(f.get(4)?, 16).ok()?;
    Some((off, size))
}

#[test]
fn bad_input_32_bit_and_big_endian_are_unsupported() {
    let fx = Fixture::new();
    let elf = fixture_elf(&fx, "fx", &["-g", "-O0"]);
    fx.write(
        "m.c",
        "struct s { int a; } v; int main(void) { return 0; }\n",
    );
    let m32 = Command::new("cc")
        .current_dir(fx.dir.path())
        .args(["-m32", "-g", "-o", "m32", "m.c"])
        .status();
    let elf32 = if m32.is_ok_and(|s| s.success()) {
        fx.path("m32")
    } else {
        // No multilib: a 64-bit file whose header says ELFCLASS32.
        patched(&fx, &elf, "class32", |d| {
            if let Some(b) = d.get_mut(4) {
                *b = 1;
            }
        })
    };
    try_encode(&elf32).expect_err("32-bit ELF");
    let be = patched(&fx, &elf, "bigendian", |d| {
        if let Some(b) = d.get_mut(5) {
            *b = 2;
        }
    });
    try_encode(&be).expect_err("big-endian ELF");
    // Another machine is refused by name, never encoded with x86-64's
    // rules (oracle: the e_machine written, as readelf -h shows it).
    let arm64 = patched(&fx, &elf, "arm64", |d| {
        if let Some(m) = d.get_mut(18..20) {
            m.copy_from_slice(&183u16.to_le_bytes());
        }
    });
    let e = try_encode(&arm64).expect_err("AArch64 ELF").to_string();
    assert!(e.contains("architecture AArch64 (e_machine 183"), "{e}");
}

#[test]
fn bad_input_truncated_dwarf_is_an_error_with_offset() {
    let fx = Fixture::new();
    let elf = fixture_elf(&fx, "fx", &["-g", "-O0"]);
    let Some((off, size)) = section_range(&elf, ".debug_info") else {
        return testkit::skip("readelf could not locate .debug_info");
    };
    // The first unit's length claims far more than the section holds.
    let long = patched(&fx, &elf, "unit_too_long", |d| {
        if let Some(s) = d.get_mut(off..off + 4) {
            s.copy_from_slice(&((size as u32) * 4).to_le_bytes());
        }
    });
    let msg = assert_error(&long, "unit longer than the section");
    assert!(msg.contains("offset"), "{msg}");
    // Garbage in the middle of the DIEs: an error or a warning, no panic.
    for (i, fill) in [0xffu8, 0x00, 0x7f].into_iter().enumerate() {
        let junk = patched(&fx, &elf, &format!("junk{i}"), |d| {
            let start = off + size / 3;
            if let Some(s) = d.get_mut(start..start + size / 3) {
                s.fill(fill);
            }
        });
        let _ = try_encode(&junk);
    }
    // Every truncation point of the first unit: never a panic.
    for cut in (12..size.min(400)).step_by(7) {
        let t = patched(&fx, &elf, "cut", |d| {
            if let Some(s) = d.get_mut(off + cut..off + size) {
                s.fill(0);
            }
        });
        let _ = try_encode(&t);
    }
}

#[test]
fn bad_input_corrupt_relocations_are_errors_naming_section_and_offset() {
    let fx = Fixture::new();
    fx.write("a.c", FIXTURE_A);
    let obj = fx.cc("a.o", &["a.c"], &["-g", "-O2", "-c"]);
    let Some((off, size)) = section_range(&obj, ".rela.debug_info").filter(|r| r.1 >= 24) else {
        return testkit::skip("readelf found no .rela.debug_info in the object");
    };
    // Elf64_Rela: r_offset, r_info (symbol << 32 | type), r_addend.
    let field = |rec: usize, at: usize| off + rec * 24 + at;
    let last = size / 24 - 1;
    let cases: [(&str, usize, u64, &str); 3] = [
        (
            "offset past the section",
            field(0, 0),
            u64::MAX - 3,
            "out of bounds",
        ),
        (
            "a PC-relative kind",
            field(last, 8),
            2,
            "unsupported kind 2",
        ),
        (
            "a symbol past the table",
            field(0, 8),
            0xffff_ff00_0000_0001,
            "out of range",
        ),
    ];
    for (what, at, value, expect) in cases {
        let bad = patched(&fx, &obj, "bad.o", |d| {
            d[at..at + 8].copy_from_slice(&value.to_le_bytes());
        });
        let msg = assert_error(&bad, what);
        assert!(
            msg.contains(".debug_info") && msg.contains("relocation at 0x") && msg.contains(expect),
            "{what}: {msg}"
        );
    }
    // The relocation section's header says SHT_REL (implicit addends, which
    // x86-64 never uses): refused, not read as RELA records.
    let data = std::fs::read(&obj).expect("read");
    let word = |at: usize, n: usize| {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&data[at..at + n]);
        u64::from_le_bytes(b) as usize
    };
    let (shoff, shentsize, shnum) = (word(0x28, 8), word(0x3a, 2), word(0x3c, 2));
    let rela = (0..shnum)
        .find(|&i| word(shoff + i * shentsize + 0x18, 8) == off)
        .expect("the section header of .rela.debug_info");
    let rel = patched(&fx, &obj, "rel.o", |d| {
        let at = shoff + rela * shentsize + 4;
        d[at..at + 4].copy_from_slice(&9u32.to_le_bytes());
    });
    let msg = assert_error(&rel, "SHT_REL");
    assert!(msg.contains("are not RELA"), "{msg}");
}

#[test]
fn bad_input_unknown_tags_and_forms() {
    let fx = Fixture::new();
    let elf = fixture_elf(&fx, "fx", &["-g", "-O0"]);
    let Some((aoff, asize)) = section_range(&elf, ".debug_abbrev") else {
        return testkit::skip("readelf could not locate .debug_abbrev");
    };
    // An abbreviation: code (uleb), tag (uleb), children (u8), then
    // (attr, form) pairs ended by (0, 0). Give the DW_TAG_base_type
    // abbreviations (0x24) an unknown tag: a warning, types still encoded.
    let unknown_tag = patched(&fx, &elf, "unknown_tag", |d| {
        let mut i = aoff;
        while i + 2 < aoff + asize {
            if d.get(i + 1) == Some(&0x24) && d.get(i + 2).is_some_and(|&c| c <= 1) {
                if let Some(b) = d.get_mut(i + 1) {
                    *b = 0x7e;
                }
            }
            i += 1;
        }
    });
    let _ = try_encode(&unknown_tag);
    // An unknown form (0x7f) for DW_AT_name (0x03): gimli cannot size the
    // attribute, so the unit is an error naming the DIE offset.
    let unknown_form = patched(&fx, &elf, "unknown_form", |d| {
        let mut i = aoff;
        while i + 1 < aoff + asize {
            if d.get(i) == Some(&0x03)
                && matches!(
                    d.get(i + 1),
                    Some(&0x0e) | Some(&0x08) | Some(&0x1f) | Some(&0x25)
                )
            {
                if let Some(b) = d.get_mut(i + 1) {
                    *b = 0x7f;
                }
                break;
            }
            i += 1;
        }
    });
    if let Err(e) = try_encode(&unknown_form) {
        assert!(e.to_string().contains(&unknown_form.display().to_string()));
    }
}

// ---- Debian's kernel.

struct Ours {
    /// Our vmlinux BTF, and where it was written.
    btf: Arc<Btf>,
    file: PathBuf,
    _dir: tempfile::TempDir,
}

/// Our vmlinux BTF, encoded once per test process.
fn ours_vmlinux() -> Option<&'static Ours> {
    static OURS: OnceLock<Option<Ours>> = OnceLock::new();
    let k = testkit::debian_kernel_or_skip()?;
    OURS.get_or_init(|| {
        let btf = encode(&k.vmlinux, None, 2);
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("vmlinux.btf");
        std::fs::write(&file, btf.to_bytes()).expect("write");
        Some(Ours {
            btf: Arc::new(btf),
            file,
            _dir: dir,
        })
    })
    .as_ref()
}

#[test]
fn encode_debian_vmlinux_accepted_by_kernel_btf_load() {
    let Some(()) = testkit::kernel_tier("loads BTF into the running kernel (root, bpf)") else {
        return;
    };
    let Some(ours) = ours_vmlinux() else { return };
    if !testkit::is_root() {
        return testkit::skip("BPF_BTF_LOAD needs root");
    }
    if let Err(e) = btf::kernel::load(&ours.btf.to_bytes()) {
        panic!("the kernel rejected our vmlinux BTF: {e}");
    }
}

#[test]
fn encode_debian_vmlinux_layouts_equal_debian_btf() {
    let Some(ours) = ours_vmlinux() else { return };
    let Some(k) = testkit::debian_kernel() else {
        return;
    };
    let debian = btf::load_file(&k.vmlinux, None).expect("Debian's .BTF");
    assert_same_layouts("vmlinux vs Debian's .BTF", &ours.btf, &debian);
}

#[test]
fn encode_kind_counts_match_pahole_1_24() {
    let Some(ours) = ours_vmlinux() else { return };
    let Some(pahole) = testkit::tool_or_skip("pahole", "dwarves") else {
        return;
    };
    let Some(k) = testkit::debian_kernel() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let theirs = pahole_btf(&pahole, &k.vmlinux, dir.path());
    // pahole 1.24 drops the per-CPU variable at offset 0 of .data..percpu
    // (named through DW_AT_specification); btfkit keeps it, as pahole
    // >= 1.25 does.
    let mut ours_kinds = kinds(&ours.btf);
    assert_eq!(
        percpu_at_offset_0(&ours.btf).as_deref(),
        Some("fixed_percpu_data")
    );
    assert_eq!(percpu_at_offset_0(&theirs), None);
    if let Some(n) = ours_kinds.get_mut("VAR") {
        *n -= 1;
    }
    assert_eq!(ours_kinds, kinds(&theirs));
}

/// The name of the VAR at offset 0 of `.data..percpu`, if any.
fn percpu_at_offset_0(btf: &Btf) -> Option<String> {
    let (_, sec) = btf.iter().find(|(_, t)| {
        t.kind_name() == "DATASEC" && btf.name_of(t).ok() == Some(".data..percpu")
    })?;
    let btf::TypeData::Datasec { vars, .. } = &sec.data else {
        return None;
    };
    let first = vars.iter().find(|v| v.offset == 0)?;
    let var = btf.type_by_id(first.ty)?;
    btf.name_of(var).ok().map(str::to_owned)
}

/// Every `.ko` under `root`, sorted by path.
fn all_modules(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "ko") {
                out.push(p);
            }
        }
    }
    let mut all = Vec::new();
    walk(root, &mut all);
    all.sort();
    all
}

/// 20 debug modules spread over the tree, in a fixed order.
fn twenty_modules(root: &Path) -> Vec<PathBuf> {
    let all = all_modules(root);
    let step = (all.len() / 20).max(1);
    all.into_iter().step_by(step).take(20).collect()
}

#[test]
fn encode_debian_modules_split_over_our_vmlinux() {
    let Some(ours) = ours_vmlinux() else { return };
    let Some(k) = testkit::debian_kernel() else {
        return;
    };
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    let debian_base = Arc::new(btf::load_file(&k.vmlinux, None).expect("Debian's .BTF"));
    let base_names: std::collections::HashSet<&str> = ours
        .btf
        .iter()
        .filter_map(|(_, t)| ours.btf.name_of(t).ok())
        .filter(|n| !n.is_empty())
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let modules = twenty_modules(&k.dbg_modules);
    assert_eq!(modules.len(), 20, "fewer than 20 debug modules");
    for m in modules {
        let rel = m.strip_prefix(&k.dbg_modules).expect("under dbg-modules");
        let btf = encode(&m, Some(ours.btf.clone()), 2);
        let out = dir.path().join("m.btf");
        std::fs::write(&out, btf.to_bytes()).expect("write");
        testkit::run_ok(
            Command::new(&bpftool)
                .arg("--base-btf")
                .arg(&ours.file)
                .args(["btf", "dump", "file"])
                .arg(&out),
        );
        let shipped = k.image_modules.join(rel);
        let data = std::fs::read(&shipped).expect("shipped module");
        let theirs = btf::parse_any(&data, Some(debian_base.clone())).expect("shipped .BTF");
        // pahole 1.24 copies a base type into the module when the walk
        // from it meets a FWD the base has (file_system_type in mlx4_ib);
        // btfkit refers to the base's type instead: such a name may be
        // only theirs, when our base has it.
        let mut d = layout_diff(&btf, &theirs);
        d.only_b.retain(|o| !base_names.contains(o.name.as_str()));
        assert!(
            d.is_empty(),
            "{}: layouts differ: only ours {:?}\nonly theirs {:?}\nchanged {:?}",
            rel.display(),
            d.only_a.iter().map(|o| &o.name).collect::<Vec<_>>(),
            d.only_b.iter().map(|o| &o.name).collect::<Vec<_>>(),
            d.changed.iter().map(|c| &c.name).collect::<Vec<_>>()
        );
    }
}

#[test]
fn encode_debian_module_same_bytes_for_any_thread_count() {
    let Some(ours) = ours_vmlinux() else { return };
    let Some(k) = testkit::debian_kernel() else {
        return;
    };
    let m = twenty_modules(&k.dbg_modules)
        .into_iter()
        .next()
        .expect("a module");
    let one = encode(&m, Some(ours.btf.clone()), 1).to_bytes();
    let two = encode(&m, Some(ours.btf.clone()), 2).to_bytes();
    assert_eq!(one, two);
}

/// The largest debug module (mlx5_core.ko, 17 MiB of DWARF) is cut into
/// several segments, deduplicated apart and then together: the same bytes
/// at any thread count, and the layouts of the .BTF Debian's pahole made.
/// It is split over our vmlinux, whose multi-dimensional arrays are nested
/// as the module's are: over Debian's (pahole 1.24 flattens them) the
/// structs that hold one would not dedup into the base.
#[test]
fn encode_debian_largest_module_in_segments_same_bytes_and_layouts_as_pahole() {
    let Some(ours) = ours_vmlinux() else { return };
    let Some(k) = testkit::debian_kernel() else {
        return;
    };
    let largest = all_modules(&k.dbg_modules)
        .into_iter()
        .max_by_key(|m| std::fs::metadata(m).map_or(0, |md| md.len()))
        .expect("a module");
    let debian_base = Arc::new(btf::load_file(&k.vmlinux, None).expect("Debian's .BTF"));
    let one = encode(&largest, Some(ours.btf.clone()), 1);
    let two = encode(&largest, Some(ours.btf.clone()), 2).to_bytes();
    let four = encode(&largest, Some(ours.btf.clone()), 4).to_bytes();
    assert!(
        one.to_bytes() == two && two == four,
        "bytes differ by thread count"
    );
    let rel = largest
        .strip_prefix(&k.dbg_modules)
        .expect("under dbg-modules");
    let data = std::fs::read(k.image_modules.join(rel)).expect("shipped module");
    let theirs = btf::parse_any(&data, Some(debian_base)).expect("shipped .BTF");
    assert_same_layouts(&rel.display().to_string(), &one, &theirs);
}

// ---- --vars all (issue 5).

const VARS_FIXTURE: &str = r#"
int data_int = 1;
static long static_long = 2;
const int ro_int = 3;
int bss_arr[10];
static struct pair { int a, b; } static_pair;
__thread int tls_int;
int use(void) { static int local_static; return data_int + static_long + bss_arr[1] + static_pair.a + local_static++ + tls_int; }
int main(void) { return use() + ro_int; }
"#;

fn datasecs(btf: &Btf) -> BTreeMap<String, Vec<(String, u32, u32)>> {
    let mut out = BTreeMap::new();
    for (_, t) in btf.iter() {
        if let btf::TypeData::Datasec { vars, .. } = &t.data {
            let entries = vars
                .iter()
                .map(|v| {
                    let name = btf
                        .type_by_id(v.ty)
                        .and_then(|var| btf.name_of(var).ok())
                        .unwrap_or("?")
                        .to_owned();
                    (name, v.offset, v.size)
                })
                .collect();
            out.insert(btf.name_of(t).unwrap_or("?").to_owned(), entries);
        }
    }
    out
}

/// `elf` encoded with every variable (`--vars all`).
fn encode_vars_all(elf: &Path) -> Btf {
    let e = ElfFile::open(elf).expect("open");
    let opts = EncodeOptions {
        vars: dwarf2btf::VarsMode::All,
        ..opts(2)
    };
    dwarf2btf::encode(&e, None, &opts, &NoProgress)
        .expect("encode")
        .btf
}

#[test]
fn vars_all_one_datasec_per_section_sorted() {
    let fx = Fixture::new();
    fx.write("v.c", VARS_FIXTURE);
    let elf = fx.cc("v", &["v.c"], &["-g", "-O0"]);
    let secs = datasecs(&encode_vars_all(&elf));
    let names = |sec: &str| -> Vec<String> {
        secs.get(sec)
            .map(|v| v.iter().map(|e| e.0.clone()).collect())
            .unwrap_or_default()
    };
    assert!(names(".data").contains(&"data_int".to_owned()), "{secs:?}");
    assert!(
        names(".data").contains(&"static_long".to_owned()),
        "{secs:?}"
    );
    assert!(names(".rodata").contains(&"ro_int".to_owned()), "{secs:?}");
    assert!(names(".bss").contains(&"bss_arr".to_owned()), "{secs:?}");
    assert!(
        names(".bss").contains(&"static_pair".to_owned()),
        "{secs:?}"
    );
    // Only top-level variables: a function's static is not one.
    assert!(!secs
        .values()
        .flatten()
        .any(|e| e.0.starts_with("local_static")));
    for (sec, entries) in &secs {
        assert!(
            entries.windows(2).all(|w| w[0].1 + w[0].2 <= w[1].1),
            "{sec}: entries not sorted or overlapping: {entries:?}"
        );
    }
    // The default is per-CPU variables only: none in a program.
    let percpu = encode(&elf, None, 2);
    assert!(datasecs(&percpu).is_empty());
}

#[test]
fn encode_debian_vmlinux_vars_all_accepted_by_kernel() {
    let Some(()) = testkit::kernel_tier("loads BTF into the running kernel (root, bpf)") else {
        return;
    };
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("BPF_BTF_LOAD needs root");
    }
    let btf = encode_vars_all(&k.vmlinux);
    let secs = datasecs(&btf);
    assert!(secs.len() > 3, "{:?}", secs.keys().collect::<Vec<_>>());
    assert!(secs.get(".data..percpu").is_some_and(|v| v.len() > 300));
    if let Err(e) = btf::kernel::load(&btf.to_bytes()) {
        panic!("the kernel rejected our vmlinux BTF with all variables: {e}");
    }
}
