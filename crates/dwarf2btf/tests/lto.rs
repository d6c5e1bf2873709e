//! DWARF whose compilation units refer to each other, as link-time
//! optimization writes it: GCC's `-flto` puts the code in LTRANS units
//! whose subprograms point (DW_AT_abstract_origin, DW_FORM_ref_addr) at the
//! early-debug unit of each source file; clang's ThinLTO points what it
//! imports from another module at that module's unit. Oracles: pahole 1.32
//! (Debian sid, which merges such units into one conversion), the C
//! declarations of the fixture, and the same fixture built without LTO.
//!
//! The fixture: three units, an inline function of a header inlined in two
//! of them, a small function that ThinLTO imports into another module, a
//! struct defined in one unit and used through a pointer in another, and a
//! static function of one name in two units with two prototypes.

use std::path::{Path, PathBuf};
use std::process::Command;

use btf::diff::{diff, layout_text, Category, DiffOptions};
use btf::{Btf, TypeData};
use dwarf2btf::funcs::FuncModel;
use dwarf2btf::load::ElfFile;
use dwarf2btf::{EncodeOptions, NoProgress};
use testkit::Fixture;

mod common {
    pub mod dwarf_elf;
}

const COMMON_H: &str = r#"
struct point { int x, y; };
struct line { struct point a, b; long tag; };
struct stats;
static inline int dot(const struct point *p, const struct point *q)
{
	return p->x * q->x + p->y * q->y;
}
int line_len(struct line *l);
int scale(int v);
struct stats *stats_get(void);
long stats_total(struct stats *s, int which);
"#;

const A_C: &str = r#"
#include "common.h"
int counter = 3;
static int __attribute__((noinline)) helper(int v)
{
	counter += v;
	return v * 3;
}
int scale(int v) { return v * 7 + 1; }
int __attribute__((noinline)) line_len(struct line *l)
{
	return dot(&l->a, &l->b) + (int)l->tag + helper(l->a.x);
}
"#;

const B_C: &str = r#"
#include "common.h"
struct holder { struct line *l; unsigned flags : 3; };
static int __attribute__((noinline)) helper(const char *s)
{
	return s[0] + scale(s[1]);
}
int __attribute__((noinline)) use(struct holder *h, const char *s)
{
	return line_len(h->l) * 2 + h->flags + helper(s);
}
int main(int argc, char **argv)
{
	struct line l = { { 1, 2 }, { 3, argc }, 5 };
	struct holder h = { &l, 1 };
	return use(&h, argv[0]) + (int)stats_total(stats_get(), argc);
}
"#;

const C_C: &str = r#"
#include "common.h"
struct stats { long hits[4]; struct line last; };
static struct stats g;
struct stats *__attribute__((noinline)) stats_get(void) { return &g; }
long __attribute__((noinline)) stats_total(struct stats *s, int which)
{
	return s->hits[which & 3] + dot(&s->last.a, &s->last.b) + scale(which);
}
"#;

/// The C declaration of each function of the fixture (`long int` spelled
/// `long`, as clang names the type): a FUNC of that name, or of that name
/// and a compiler suffix, must have one of them.
const DECLARATIONS: &[(&str, &str)] = &[
    ("line_len", "int line_len(struct line *l)"),
    ("scale", "int scale(int v)"),
    ("helper", "int helper(int v)"),
    ("helper", "int helper(const char *s)"),
    ("use", "int use(struct holder *h, const char *s)"),
    ("main", "int main(int argc, char **argv)"),
    ("stats_get", "struct stats *stats_get(void)"),
    (
        "stats_total",
        "long stats_total(struct stats *s, int which)",
    ),
];

/// The functions that keep their code (noinline, or main) and whose FUNC
/// the early-debug DIEs alone describe under GCC's -flto.
const KEPT: &[&str] = &["line_len", "use", "main", "stats_get", "stats_total"];

/// pahole's flags in Linux 6.12's kernel build.
const FEATURES: &str = "--btf_features=encode_force,var,float,enum64,decl_tag,type_tag,\
optimized_func,consistent_func,decl_tag_kfuncs,attributes";

/// The fixture compiled and linked by `cc` (a compiler driver) with
/// `flags` at both steps, into `out`.
fn build(fx: &Fixture, cc: &str, out: &str, flags: &[&str]) -> PathBuf {
    fx.write("common.h", COMMON_H);
    let sources = [("a.c", A_C), ("b.c", B_C), ("c.c", C_C)];
    let mut objects = Vec::new();
    for (name, text) in sources {
        fx.write(name, text);
        let o = format!("{out}.{name}.o");
        testkit::run_ok(
            Command::new(cc)
                .current_dir(fx.dir.path())
                .args(flags)
                .args(["-c", name, "-o", &o]),
        );
        objects.push(o);
    }
    testkit::run_ok(
        Command::new(cc)
            .current_dir(fx.dir.path())
            .args(flags)
            .arg("-o")
            .arg(out)
            .args(&objects),
    );
    fx.path(out)
}

/// Whether `exe`'s .debug_info refers from one unit into another
/// (DW_FORM_ref_addr in its abbreviations): the case under test.
fn refers_across_units(exe: &Path) -> bool {
    let out = testkit::run_ok(Command::new("readelf").arg("--debug-dump=abbrev").arg(exe));
    String::from_utf8_lossy(&out).contains("DW_FORM_ref_addr")
}

fn encode(exe: &Path) -> Btf {
    let elf = ElfFile::open(exe).expect("open the fixture");
    let opts = EncodeOptions {
        jobs: 2,
        ..EncodeOptions::default()
    };
    dwarf2btf::encode(&elf, None, &opts, &NoProgress)
        .expect("encode")
        .btf
}

fn pahole_1_32(sid: &testkit::sid::Sid, fx: &Fixture, exe: &Path) -> Btf {
    let out = fx.path("theirs.btf");
    sid.run_ok(
        &[fx.dir.path()],
        "pahole",
        [
            "-J".to_owned(),
            "-j".to_owned(),
            FEATURES.to_owned(),
            format!("--btf_encode_detached={}", out.display()),
            exe.display().to_string(),
        ],
    );
    btf::load_file(&out, None).expect("pahole 1.32's BTF")
}

/// `static int f(int a)` -> `int f(int a)`, `long int` -> `long`.
fn c_text(s: &str) -> String {
    s.trim_start_matches("static ").replace("long int", "long")
}

/// A symbol's source name: up to its first '.' (`helper.lto_priv.0`,
/// `helper..11e0`).
fn source_name(symbol: &str) -> &str {
    symbol.split('.').next().unwrap_or(symbol)
}

/// Every FUNC of `btf` has a prototype of [`DECLARATIONS`] under its own
/// name, and each of [`KEPT`] has a FUNC.
fn assert_funcs_are_the_declarations(btf: &Btf, what: &str) {
    let d = diff(btf, &Btf::new(), &DiffOptions::default());
    let mut seen = Vec::new();
    for o in d.only_a.iter().filter(|o| o.category == Category::Func) {
        let base = source_name(&o.name);
        for l in &o.layouts {
            let got = c_text(&layout_text(l));
            let ok = DECLARATIONS
                .iter()
                .filter(|(n, _)| *n == base)
                .any(|(n, decl)| got == decl.replacen(n, &o.name, 1));
            assert!(
                ok,
                "{what}: FUNC {} is `{got}`, not its C declaration",
                o.name
            );
        }
        seen.push(base.to_owned());
    }
    for k in KEPT {
        assert!(
            seen.iter().any(|s| s == k),
            "{what}: no FUNC for {k} (FUNCs: {seen:?})"
        );
    }
}

/// The function model's prototype of each instance of [`KEPT`] is its C
/// declaration (what `btfkit funcs` prints).
fn assert_model_is_the_declarations(exe: &Path, what: &str) {
    let elf = ElfFile::open(exe).expect("open the fixture");
    let model = FuncModel::from_elf(&elf).expect("function model");
    for k in KEPT {
        let inst = model
            .instances
            .iter()
            .find(|i| i.symbol == *k)
            .unwrap_or_else(|| panic!("{what}: no instance {k}"));
        let proto = model.prototype_c(inst).map(|p| c_text(&p));
        let want = DECLARATIONS.iter().find(|(n, _)| n == k).map(|d| d.1);
        assert_eq!(proto.as_deref(), want, "{what}: {k}: {:?}", inst.detail);
        assert!(inst.encodable(), "{what}: {k}: {:?}", inst.detail);
    }
}

/// btfkit's BTF against pahole 1.32's: no difference in types; a FUNC only
/// btfkit has must be one pahole leaves out as the parity test of
/// pahole_cli.rs allows (here: a static function whose name has two
/// prototypes, which pahole drops and btfkit encodes under the symbol of
/// each instance); no FUNC only pahole has, none that differ.
fn assert_equals_pahole(ours: &Btf, theirs: &Btf, what: &str) {
    let d = diff(ours, theirs, &DiffOptions::default());
    for o in &d.only_a {
        assert!(
            o.category == Category::Func && source_name(&o.name) == "helper",
            "{what}: only btfkit has {:?} {}",
            o.category,
            o.name
        );
    }
    assert!(
        d.only_b.is_empty(),
        "{what}: only pahole has {:?}",
        d.only_b
    );
    assert!(
        d.changed.is_empty(),
        "{what}: changed: {:?}",
        d.changed
            .iter()
            .map(|c| (
                &c.name,
                c.unmatched_a.iter().map(layout_text).collect::<Vec<_>>()
            ))
            .collect::<Vec<_>>()
    );
    assert!(d.equal > 0, "{what}: nothing compared");
}

fn func_count(btf: &Btf) -> usize {
    btf.iter()
        .filter(|(_, t)| matches!(t.data, TypeData::Func { .. }))
        .count()
}

#[test]
fn gcc_lto_equals_pahole_1_32_and_the_c_declarations() {
    let fx = Fixture::new();
    let exe = build(&fx, "gcc", "lto", &["-g", "-O2", "-flto"]);
    assert!(
        refers_across_units(&exe),
        "gcc -flto wrote no DW_FORM_ref_addr"
    );
    let ours = encode(&exe);
    assert_funcs_are_the_declarations(&ours, "gcc -flto");
    assert_model_is_the_declarations(&exe, "gcc -flto");
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let theirs = pahole_1_32(&sid, &fx, &exe);
    assert_equals_pahole(&ours, &theirs, "gcc -flto");
}

#[test]
fn clang_thinlto_equals_pahole_1_32_and_the_c_declarations() {
    let Some(clang) = testkit::tool_or_skip("clang-19", "clang-19") else {
        return;
    };
    if testkit::tool_or_skip("ld.lld-19", "lld-19").is_none() {
        return;
    }
    let fx = Fixture::new();
    let clang = clang.display().to_string();
    let exe = build(
        &fx,
        &clang,
        "thin",
        &["-g", "-O2", "-flto=thin", "-fuse-ld=lld"],
    );
    assert!(
        refers_across_units(&exe),
        "ThinLTO wrote no DW_FORM_ref_addr"
    );
    let ours = encode(&exe);
    assert_funcs_are_the_declarations(&ours, "clang -flto=thin");
    assert_model_is_the_declarations(&exe, "clang -flto=thin");
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let theirs = pahole_1_32(&sid, &fx, &exe);
    assert_equals_pahole(&ours, &theirs, "clang -flto=thin");
}

/// The named types of the LTO build are those of the build without LTO
/// (btf::diff compares them by name and layout), and both have FUNCs.
#[test]
fn gcc_lto_has_the_named_types_of_the_build_without_lto() {
    let fx = Fixture::new();
    let lto = encode(&build(&fx, "gcc", "lto", &["-g", "-O2", "-flto"]));
    let plain = encode(&build(&fx, "gcc", "plain", &["-g", "-O2"]));
    let d = diff(&lto, &plain, &DiffOptions::default());
    let types = |c: &Category| *c != Category::Func && *c != Category::Var;
    let only: Vec<_> = d
        .only_a
        .iter()
        .chain(&d.only_b)
        .filter(|o| types(&o.category))
        .map(|o| &o.name)
        .collect();
    assert!(only.is_empty(), "named types of one build only: {only:?}");
    let changed: Vec<_> = d
        .changed
        .iter()
        .filter(|c| types(&c.category))
        .map(|c| &c.name)
        .collect();
    assert!(changed.is_empty(), "named types that differ: {changed:?}");
    assert!(func_count(&lto) >= KEPT.len() && func_count(&plain) >= KEPT.len());
}

/// The .debug_info offset of the DW_AT_abstract_origin value of the first
/// unit-level subprogram with code of `exe`, and that code's address, from
/// readelf's dump (an LTRANS unit's function, under GCC's -flto).
fn first_concrete_origin(exe: &Path) -> (usize, u64) {
    let out = testkit::run_ok(Command::new("readelf").arg("--debug-dump=info").arg(exe));
    let text = String::from_utf8_lossy(&out);
    let mut in_sub = false;
    let mut origin = None;
    for line in text.lines() {
        if line.contains(": Abbrev Number") {
            in_sub = line.trim_start().starts_with("<1>") && line.contains("DW_TAG_subprogram");
            origin = None;
            continue;
        }
        if !in_sub {
            continue;
        }
        let hex = |l: &str| {
            let start = l.find('<')? + 1;
            let end = start + l[start..].find('>')?;
            usize::from_str_radix(&l[start..end], 16).ok()
        };
        if line.contains("DW_AT_abstract_origin") {
            origin = hex(line);
        } else if line.contains("DW_AT_low_pc") {
            let pc = line.rsplit(':').next().map(str::trim).unwrap_or("");
            let pc = u64::from_str_radix(pc.trim_start_matches("0x"), 16).expect("low_pc");
            if let Some(o) = origin {
                return (o, pc);
            }
        }
    }
    panic!("no unit-level subprogram with an abstract origin and a low_pc");
}

/// An abstract origin that no unit holds (a DW_FORM_ref_addr past the end
/// of .debug_info, written over the one of an LTRANS function): the
/// function model leaves that function unencoded and says why, the others
/// keep their prototypes, and the encoder stops with an error naming the
/// offset (never a FUNC with a wrong prototype). Oracle: the C declarations.
#[test]
fn gcc_lto_origin_in_no_unit_leaves_the_function_out() {
    use object::{Object, ObjectSection};
    let fx = Fixture::new();
    let exe = build(&fx, "gcc", "lto", &["-g", "-O2", "-flto"]);
    let (at, pc) = first_concrete_origin(&exe);
    let mut bytes = std::fs::read(&exe).expect("read the fixture");
    let info = {
        let obj = object::File::parse(&*bytes).expect("ELF");
        let s = obj.section_by_name(".debug_info").expect(".debug_info");
        s.file_range().expect("in the file").0 as usize
    };
    let bad: u32 = 0x7fff_fff0;
    bytes[info + at..info + at + 4].copy_from_slice(&bad.to_le_bytes());
    let broken = fx.path("broken");
    std::fs::write(&broken, &bytes).expect("write");

    let elf = ElfFile::open(&broken).expect("open");
    let model = FuncModel::from_elf(&elf).expect("function model");
    let inst = model
        .instances
        .iter()
        .find(|i| i.address == pc)
        .expect("the instance of the broken DIE");
    assert!(!inst.encodable(), "{}: {:?}", inst.symbol, inst.signature);
    let detail = inst.detail.as_deref().unwrap_or("");
    assert!(detail.contains("abstract origin"), "{detail}");
    for k in KEPT {
        if let Some(i) = model
            .instances
            .iter()
            .find(|i| i.symbol == *k && i.address != pc)
        {
            let want = DECLARATIONS.iter().find(|(n, _)| n == k).map(|d| d.1);
            let proto = model.prototype_c(i).map(|p| c_text(&p));
            assert_eq!(proto.as_deref(), want, "{k}");
        }
    }

    let opts = EncodeOptions {
        jobs: 2,
        ..EncodeOptions::default()
    };
    let err = match dwarf2btf::encode(&elf, None, &opts, &NoProgress) {
        Ok(_) => panic!("a reference into no unit was encoded"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains(&format!("{bad:#x}")), "{err}");
}

/// Two compilation units that refer to each other (DW_FORM_ref_addr both
/// ways): `struct sa { int x; struct sb *b; }` in one, `struct sb { int y;
/// struct sa *a; }` in the other, each pointer's DW_AT_type in the other
/// unit. A relocatable x86-64 ELF object.
fn cycle_object() -> Vec<u8> {
    use gimli::write::{
        AttributeValue as V, Dwarf, EndianVec, LineProgram, Reference, Sections, Unit,
    };
    use gimli::{constants as dw, Encoding, Format, LittleEndian};

    let encoding = Encoding {
        format: Format::Dwarf32,
        version: 5,
        address_size: 8,
    };
    let mut dwarf = Dwarf::new();
    let ua = dwarf.units.add(Unit::new(encoding, LineProgram::none()));
    let ub = dwarf.units.add(Unit::new(encoding, LineProgram::none()));
    // (unit, struct, its pointer DIE, the int) of each side.
    let mut made = Vec::new();
    for (u, file, sname) in [(ua, "a.c", "sa"), (ub, "b.c", "sb")] {
        let unit = dwarf.units.get_mut(u);
        let root = unit.root();
        let r = unit.get_mut(root);
        r.set(
            dw::DW_AT_producer,
            V::String(b"GNU C17 12.2.0 -flto".to_vec()),
        );
        r.set(dw::DW_AT_language, V::Language(dw::DW_LANG_C11));
        r.set(dw::DW_AT_name, V::String(file.into()));
        let int = unit.add(root, dw::DW_TAG_base_type);
        let e = unit.get_mut(int);
        e.set(dw::DW_AT_name, V::String(b"int".to_vec()));
        e.set(dw::DW_AT_byte_size, V::Data1(4));
        e.set(dw::DW_AT_encoding, V::Encoding(dw::DW_ATE_signed));
        let s = unit.add(root, dw::DW_TAG_structure_type);
        let e = unit.get_mut(s);
        e.set(dw::DW_AT_name, V::String(sname.into()));
        e.set(dw::DW_AT_byte_size, V::Data1(16));
        let ptr = unit.add(root, dw::DW_TAG_pointer_type);
        unit.get_mut(ptr).set(dw::DW_AT_byte_size, V::Data1(8));
        made.push((u, s, ptr, int));
    }
    for (i, &(u, s, ptr, int)) in made.iter().enumerate() {
        let (ou, os, _, _) = made[1 - i];
        let unit = dwarf.units.get_mut(u);
        unit.get_mut(ptr)
            .set(dw::DW_AT_type, V::DebugInfoRef(Reference::Entry(ou, os)));
        let other = if i == 0 { "b" } else { "a" };
        for (name, ty, off) in [(if i == 0 { "x" } else { "y" }, int, 0u8), (other, ptr, 8)] {
            let m = unit.add(s, dw::DW_TAG_member);
            let e = unit.get_mut(m);
            e.set(dw::DW_AT_name, V::String(name.into()));
            e.set(dw::DW_AT_type, V::UnitRef(ty));
            e.set(dw::DW_AT_data_member_location, V::Data1(off));
        }
    }
    let mut sections = Sections::new(EndianVec::new(LittleEndian));
    dwarf.write(&mut sections).expect("write DWARF");
    common::dwarf_elf::elf_with(&sections)
}

/// Units that refer to each other in a cycle: each struct's pointer
/// member points to the other struct (not void), each struct is encoded
/// once, and the BTF equals pahole 1.32's.
#[test]
fn units_in_a_cycle_equal_pahole_1_32() {
    let fx = Fixture::new();
    let obj = fx.path("cycle.o");
    std::fs::write(&obj, cycle_object()).expect("write");
    let ours = encode(&obj);
    for (s, other) in [("sa", "sb"), ("sb", "sa")] {
        let structs: Vec<_> = ours
            .iter()
            .filter(|(_, t)| {
                matches!(t.data, TypeData::Struct { .. }) && ours.str_at(t.name_off).ok() == Some(s)
            })
            .collect();
        assert_eq!(structs.len(), 1, "struct {s}");
        let TypeData::Struct { members, .. } = &structs[0].1.data else {
            unreachable!()
        };
        let ptr = members.get(1).expect("pointer member").ty;
        let Some(TypeData::Ptr { ty }) = ours.get(ptr).ok().map(|t| &t.data) else {
            panic!("{s}: member 2 is no pointer");
        };
        let target = ours.get(*ty).expect("pointee");
        assert_eq!(ours.str_at(target.name_off).ok(), Some(other), "{s}");
    }
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let theirs = pahole_1_32(&sid, &fx, &obj);
    let d = diff(&ours, &theirs, &DiffOptions::default());
    assert!(
        d.only_a.is_empty() && d.only_b.is_empty() && d.changed.is_empty() && d.equal >= 2,
        "only btfkit: {:?}; only pahole: {:?}; changed: {:?}",
        d.only_a.iter().map(|o| &o.name).collect::<Vec<_>>(),
        d.only_b.iter().map(|o| &o.name).collect::<Vec<_>>(),
        d.changed.iter().map(|c| &c.name).collect::<Vec<_>>()
    );
}
