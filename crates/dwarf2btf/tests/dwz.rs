//! dwz-compressed DWARF (as SUSE and Fedora ship debuginfo) against the
//! oracle of the same object before dwz: Debian's `dwz` moves the types
//! that units share into partial units, of the file itself or of an
//! alternate file (`-m`), and the BTF encoded from the result must hold
//! what the BTF encoded from the object before holds: the same types,
//! FUNCs and VARs (btf::diff finds no difference), as many of them, and
//! the same number of bytes. The bytes themselves may differ in order
//! only: the final dedup keeps types in the order it first meets them,
//! a unit's types that dwz moved are read after the unit's own, and dwz
//! orders the DIEs of its partial units its own way.

use std::path::{Path, PathBuf};
use std::process::Command;

use btf::diff::DiffOptions;
use btf::Btf;
use dwarf2btf::load::ElfFile;
use dwarf2btf::options::VarsMode;
use dwarf2btf::{EncodeOptions, NoProgress};
use testkit::Fixture;

const HEADER: &str = r#"
struct point { int x, y; };
struct shape {
    struct point p[4];
    const char *name;
    unsigned flags:3, kind:5;
    struct shape *next;
    union { long l; double d; } u;
};
typedef struct shape shape_t;
enum color { RED, GREEN = 5, BLUE = -1 };
typedef int (*visit_fn)(const shape_t *, enum color);
"#;

const A: &str = r#"
#include "t.h"
shape_t ga; enum color ca; visit_fn va;
int fa(struct shape *s) { return s->p[0].x + s->kind; }
int main(void) { return fa(&ga) + (va ? va(&ga, ca) : 0); }
"#;

const B: &str = r#"
#include "t.h"
shape_t gb; enum color cb;
int fb(struct shape *s, enum color c) { return s->p[1].y + c + (s->u.l > 0); }
int main(void) { return fb(&gb, cb); }
"#;

const C: &str = r#"
#include "t.h"
int fc(struct shape *s, enum color c) { return s->p[2].y + c + s->flags; }
"#;

const MAIN_C: &str = r#"
#include "t.h"
int fc(struct shape *s, enum color c);
shape_t gm; enum color cm;
int main(void) { return fc(&gm, cm) + gm.next->p[3].x; }
"#;

fn encode_with(
    path: &Path,
    dwz_alt: Option<&Path>,
    vars: VarsMode,
) -> Result<Btf, dwarf2btf::Error> {
    let elf = ElfFile::open(path)?;
    let opts = EncodeOptions {
        jobs: 2,
        vars,
        dwz_alt: dwz_alt.map(Path::to_owned),
        ..EncodeOptions::default()
    };
    dwarf2btf::encode(&elf, None, &opts, &NoProgress).map(|e| e.btf)
}

fn encode_result(path: &Path, dwz_alt: Option<&Path>) -> Result<Btf, dwarf2btf::Error> {
    encode_with(path, dwz_alt, VarsMode::default())
}

/// The oracle: `after` (dwz'd) encodes to what `before` does, with the
/// default options and with every variable (`--vars all`: dwz moves
/// `extern` declarations, which definitions complete, to partial units).
fn assert_same_btf(before: &Path, after: &Path) {
    for vars in [VarsMode::default(), VarsMode::All] {
        assert_same_btf_with(before, after, vars);
    }
}

fn assert_same_btf_with(before: &Path, after: &Path, vars: VarsMode) {
    let encode = |p: &Path| {
        encode_with(p, None, vars).unwrap_or_else(|e| panic!("encode {}: {e}", p.display()))
    };
    let (b, a) = (encode(before), encode(after));
    let d = btf::diff::diff(&b, &a, &DiffOptions::default());
    assert!(
        d.only_a.is_empty() && d.only_b.is_empty() && d.changed.is_empty() && d.equal > 0,
        "{} ({vars:?}): {} only before dwz, {} only after, {} changed",
        after.display(),
        d.only_a.len(),
        d.only_b.len(),
        d.changed.len()
    );
    assert_eq!(b.type_count(), a.type_count(), "{}", after.display());
    assert_eq!(
        b.to_bytes().len(),
        a.to_bytes().len(),
        "{}",
        after.display()
    );
}

/// Copies `path` to `path.orig` (the object before dwz).
fn keep_original(path: &Path) -> PathBuf {
    let orig = path.with_extension("orig");
    std::fs::copy(path, &orig).expect("copy");
    orig
}

fn dwz(dir: &Path, args: &[&str]) {
    testkit::run_ok(Command::new("dwz").current_dir(dir).args(args));
}

/// The unit types of a file's .debug_info, and whether it links to an
/// alternate file: what dwz did to it.
fn dwz_shape(path: &Path) -> (usize, bool) {
    let data = std::fs::read(path).expect("read");
    let obj = object::File::parse(&*data).expect("ELF");
    use object::{Object, ObjectSection};
    let section = |name: &str| {
        obj.section_by_name(name)
            .and_then(|s| s.data().ok())
            .unwrap_or(&[])
    };
    let dwarf = gimli::Dwarf::load(|id| {
        Ok::<_, gimli::Error>(gimli::EndianSlice::new(
            section(id.name()),
            gimli::LittleEndian,
        ))
    })
    .expect("DWARF");
    let mut partial = 0;
    let mut units = dwarf.units();
    while let Some(h) = units.next().expect("unit header") {
        let abbrevs = dwarf.abbreviations(&h).expect("abbreviations");
        let mut entries = h.entries(&abbrevs);
        let (_, root) = entries.next_dfs().expect("DIE").expect("root DIE");
        if root.tag() == gimli::DW_TAG_partial_unit {
            partial += 1;
        }
    }
    let linked = obj.section_by_name(".gnu_debugaltlink").is_some()
        || obj.section_by_name(".debug_sup").is_some();
    (partial, linked)
}

fn fixture_or_skip() -> Option<Fixture> {
    testkit::tool_or_skip("dwz", "dwz")?;
    testkit::tool_or_skip("cc", "gcc")?;
    let fx = Fixture::new();
    fx.write("t.h", HEADER);
    fx.write("a.c", A);
    fx.write("b.c", B);
    fx.write("c.c", C);
    fx.write("main.c", MAIN_C);
    Some(fx)
}

/// Two programs, `dwz -m common.debug`: their shared types move into
/// partial units of the alternate file, referred to with
/// DW_FORM_GNU_ref_alt and named with DW_FORM_GNU_strp_alt.
#[test]
fn dwz_multifile_same_btf_as_before_dwz() {
    let Some(fx) = fixture_or_skip() else { return };
    for (args, sup) in [(&[][..], false), (&["--dwarf-5"][..], true)] {
        let a = fx.cc("a", &["a.c"], &["-g", "-O1"]);
        let b = fx.cc("b", &["b.c"], &["-g", "-O1"]);
        let (a0, b0) = (keep_original(&a), keep_original(&b));
        let mut cmd: Vec<&str> = args.to_vec();
        cmd.extend(["-m", "common.debug", "-M", "common.debug", "a", "b"]);
        dwz(fx.dir.path(), &cmd);
        let (partial, linked) = dwz_shape(&fx.path("common.debug"));
        assert!(partial > 0, "dwz {cmd:?} made no partial unit");
        assert!(
            dwz_shape(&a).1 && linked == sup,
            "dwz {cmd:?}: link sections"
        );
        for (before, after) in [(&a0, &a), (&b0, &b)] {
            assert_same_btf(before, after);
        }
        std::fs::remove_file(fx.path("common.debug")).expect("rm");
    }
}

/// One program of two units, `dwz` alone: partial units in the file
/// itself, imported with DW_TAG_imported_unit, referred to with
/// DW_FORM_ref_addr.
#[test]
fn dwz_single_file_same_btf_as_before_dwz() {
    let Some(fx) = fixture_or_skip() else { return };
    let m = fx.cc("m", &["main.c", "c.c"], &["-g", "-O1"]);
    let m0 = keep_original(&m);
    dwz(fx.dir.path(), &["m"]);
    let (partial, linked) = dwz_shape(&m);
    assert!(partial > 0 && !linked, "dwz made no partial unit in m");
    assert_same_btf(&m0, &m);
}

/// Two Debian modules linked (dwz takes executables and shared objects,
/// not ET_REL) and compressed together with `dwz -m`.
#[test]
fn dwz_debian_modules_same_btf_as_before_dwz() {
    let Some(fx) = fixture_or_skip() else { return };
    let mods = testkit::cache_dir().join("dbg-modules/kernel");
    let names = ["fs/configfs/configfs.ko", "net/key/af_key.ko"];
    if names.iter().any(|n| !mods.join(n).is_file()) {
        return testkit::skip(&format!(
            "no Debian modules with DWARF under {} (scripts/fetch-debian-kernel.sh)",
            mods.display()
        ));
    }
    let mut linked = Vec::new();
    for n in names {
        let out = fx.path(
            Path::new(n)
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("name"),
        );
        testkit::run_ok(
            Command::new("ld")
                .args(["-e", "0", "--unresolved-symbols=ignore-all", "-o"])
                .arg(&out)
                .arg(mods.join(n)),
        );
        linked.push((keep_original(&out), out));
    }
    dwz(
        fx.dir.path(),
        &["-m", "mods.debug", "-M", "mods.debug", "configfs", "af_key"],
    );
    assert!(dwz_shape(&fx.path("mods.debug")).0 > 0, "no partial units");
    for (before, after) in &linked {
        assert_same_btf(before, after);
    }
}

/// Bad input: the alternate file missing, or another file with another
/// build-id, is an error naming both files; a DW_FORM_GNU_ref_alt offset
/// past the alternate file's units is an error with the offset.
#[test]
fn dwz_bad_alternate_file_errors() {
    let Some(fx) = fixture_or_skip() else { return };
    fx.cc("a", &["a.c"], &["-g", "-O1"]);
    fx.cc("b", &["b.c"], &["-g", "-O1"]);
    let other = fx.cc("other", &["b.c"], &["-g", "-O0"]);
    dwz(
        fx.dir.path(),
        &["-m", "common.debug", "-M", "common.debug", "a", "b"],
    );
    let a = fx.path("a");
    let moved = fx.path("elsewhere.debug");
    std::fs::rename(fx.path("common.debug"), &moved).expect("mv");
    let e = encode_result(&a, None)
        .expect_err("alternate file missing")
        .to_string();
    assert!(
        e.contains(&a.display().to_string()) && e.contains("common.debug") && e.contains("missing"),
        "{e}"
    );
    let e = encode_result(&a, Some(&other))
        .expect_err("another build-id")
        .to_string();
    assert!(
        e.contains(&other.display().to_string()) && e.contains("build-id"),
        "{e}"
    );
    // Given outright, the moved file is the right one.
    assert!(encode_result(&a, Some(&moved)).is_ok());
    std::fs::rename(&moved, fx.path("common.debug")).expect("mv");

    // The first DW_FORM_GNU_ref_alt of `a` (a DW_AT_import), pointed past
    // the alternate file's .debug_info.
    let mut data = std::fs::read(&a).expect("read");
    let at = first_ref_alt(&data).expect("a has a DW_FORM_GNU_ref_alt");
    data[at..at + 4].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let bad = fx.path("a.bad");
    std::fs::write(&bad, &data).expect("write");
    let e = encode_result(&bad, Some(&fx.path("common.debug")))
        .expect_err("corrupt ref_alt")
        .to_string();
    assert!(e.contains("0x7ffffff0") && e.contains("a.bad"), "{e}");
}

/// File offset of the value of the first DW_FORM_GNU_ref_alt attribute.
fn first_ref_alt(data: &[u8]) -> Option<usize> {
    use object::{Object, ObjectSection};
    let obj = object::File::parse(data).ok()?;
    let info = obj.section_by_name(".debug_info")?;
    let (file_offset, _) = info.file_range()?;
    let section = |name: &str| {
        obj.section_by_name(name)
            .and_then(|s| s.data().ok())
            .unwrap_or(&[])
    };
    let dwarf = gimli::Dwarf::load(|id| {
        Ok::<_, gimli::Error>(gimli::EndianSlice::new(
            section(id.name()),
            gimli::LittleEndian,
        ))
    })
    .ok()?;
    let mut units = dwarf.units();
    while let Ok(Some(h)) = units.next() {
        let unit_start = h.offset().as_debug_info_offset()?.0;
        let abbrevs = dwarf.abbreviations(&h).ok()?;
        let mut raw = h.entries_raw(&abbrevs, None).ok()?;
        while !raw.is_empty() {
            let abbrev = match raw.read_abbreviation() {
                Ok(Some(abbrev)) => abbrev,
                Ok(None) => continue,
                Err(_) => return None,
            };
            for spec in abbrev.attributes() {
                let at = raw.next_offset().0;
                raw.read_attribute(*spec).ok()?;
                if spec.form() == gimli::DW_FORM_GNU_ref_alt {
                    return usize::try_from(file_offset)
                        .ok()
                        .map(|f| f + unit_start + at);
                }
            }
        }
    }
    None
}
