//! A module's code at offset 0 of several sections: every section of a
//! relocatable object starts at 0, so `init_module` (`.init.text`+0),
//! `cleanup_module` (`.exit.text`+0) and the first function of `.text`
//! share an offset, and each FUNC must still carry the prototype of the
//! code at its own symbol. Oracles: the C declarations of an object
//! compiled here, pahole 1.32 (sid chroot) on the same object, and on
//! Debian's 6.1 modules binutils' `addr2line -j SECTION` (which DWARF
//! subprogram is at a symbol's section and offset) with pahole 1.32's
//! prototype of that subprogram.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use btf::{Btf, TypeData};
use ksyms::kernel_lookup::parse_unreachable_name;
use ksyms::module_sections::ModuleSections;
use object::{Object, ObjectSection, ObjectSymbol};
use testkit::Fixture;

mod common {
    pub mod addr2line;
}
use common::addr2line::addr2line;

const BTFKIT: &str = env!("CARGO_BIN_EXE_btfkit");

/// Two functions of different prototypes at offset 0 of `.text` and of
/// `.init.text`, one more at `.exit.text`+0, and the aliases a module's
/// `module_init`/`module_exit` make of the last two.
const SOURCE: &str = r#"
struct user { int uid; long flags; };
volatile long sink;
long text_first(struct user *u, int flags, char *buf)
{
	sink = u->flags + flags + buf[0];
	return sink;
}
__attribute__((section(".init.text"), noinline)) int mod_init(void)
{
	sink = 1;
	return 0;
}
__attribute__((section(".exit.text"), noinline)) void mod_exit(void)
{
	sink = 2;
}
int init_module(void) __attribute__((alias("mod_init")));
void cleanup_module(void) __attribute__((alias("mod_exit")));
"#;

/// Every symbol of the fixture with its declaration in SOURCE.
const DECLARED: &[(&str, &str)] = &[
    (
        "text_first",
        "long int text_first(struct user *u, int flags, char *buf)",
    ),
    ("mod_init", "int mod_init(void)"),
    ("init_module", "int init_module(void)"),
    ("mod_exit", "void mod_exit(void)"),
    ("cleanup_module", "void cleanup_module(void)"),
];

/// The fixture as a relocatable object (a module is one).
fn object_file(fx: &Fixture) -> PathBuf {
    fx.write("m.c", SOURCE);
    fx.cc("m.o", &["m.c"], &["-c", "-g", "-O2"])
}

/// Every FUNC of a BTF file: name -> prototypes, in C.
fn funcs(path: &Path) -> BTreeMap<String, Vec<String>> {
    let btf = btf::load_file(path, None).expect("BTF");
    funcs_of(&btf)
}

fn funcs_of(btf: &Btf) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (id, t) in btf.iter() {
        if matches!(t.data, TypeData::Func { .. }) {
            let name = btf.name_of(t).expect("FUNC name").to_owned();
            out.entry(name)
                .or_default()
                .push(btf::cdecl::func_prototype(btf, id));
        }
    }
    out
}

fn btfkit(args: &[&str]) -> Vec<u8> {
    testkit::run_ok(Command::new(BTFKIT).args(args))
}

#[test]
fn init_exit_and_text_functions_at_offset_0_have_their_c_declarations() {
    testkit::tool_or_skip("cc", "gcc");
    let fx = Fixture::new();
    let obj = object_file(&fx);
    let declared: HashMap<&str, &str> = DECLARED.iter().copied().collect();
    // The encoder: one FUNC per symbol, each with its own declaration.
    let out = fx.path("m.btf");
    btfkit(&[
        "encode",
        "--addr-tags",
        "all",
        "-o",
        out.to_str().expect("path"),
        obj.to_str().expect("path"),
    ]);
    let got = funcs(&out);
    let want: BTreeMap<String, Vec<String>> = DECLARED
        .iter()
        .map(|(n, d)| (n.to_string(), vec![d.to_string()]))
        .collect();
    assert_eq!(got, want);
    // The function model, as `btfkit funcs` prints it.
    let json = btfkit(&["funcs", "--json", obj.to_str().expect("path")]);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&json).expect("JSON");
    let mut seen = BTreeSet::new();
    for r in &rows {
        let symbol = r["symbol"].as_str().expect("symbol");
        assert_eq!(
            r["prototype"].as_str(),
            declared.get(symbol).copied(),
            "{symbol}: {r}"
        );
        assert_eq!(r["encoded"], true, "{r}");
        seen.insert(symbol);
    }
    assert_eq!(seen, declared.keys().copied().collect());
}

/// `btfkit check --attach` of a module (oracle: the module loader's rules,
/// which the booted kernels of kernel_boot.rs measure with this same
/// audit): the loader frees `.init*` sections after the module's init, so
/// their functions are not symbols a program can name; the fentry call
/// sites are the targets of `__mcount_loc`'s relocations (the section
/// itself holds zeros until the module is loaded).
#[test]
fn check_attach_of_a_module_by_the_loaders_rules_init_freed_mcount_relocations() {
    testkit::tool_or_skip("cc", "gcc");
    let fx = Fixture::new();
    fx.write("m.c", SOURCE);
    let obj = fx.cc(
        "m.o",
        &["m.c"],
        &["-c", "-g", "-O2", "-pg", "-mfentry", "-mrecord-mcount"],
    );
    let out = fx.path("m.btf");
    let (out, obj) = (out.to_str().expect("path"), obj.to_str().expect("path"));
    btfkit(&["encode", "--addr-tags", "all", "-o", out, obj]);
    let json = btfkit(&["check", "--attach", "--json", out, obj]);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&json).expect("JSON");
    let reach: BTreeMap<&str, (&str, Option<bool>)> = rows
        .iter()
        .map(|r| {
            (
                r["name"].as_str().expect("name"),
                (
                    r["reach"].as_str().expect("reach"),
                    r["fentry_site"].as_bool(),
                ),
            )
        })
        .collect();
    let want: BTreeMap<&str, (&str, Option<bool>)> = [
        ("text_first", ("attachable", Some(true))),
        ("mod_exit", ("attachable", Some(true))),
        ("cleanup_module", ("attachable", Some(true))),
        ("mod_init", ("not-a-symbol", None)),
        ("init_module", ("not-a-symbol", None)),
    ]
    .into_iter()
    .collect();
    assert_eq!(reach, want, "{}", String::from_utf8_lossy(&json));
    let text = btfkit(&["check", "--attach", out, obj]);
    let text = String::from_utf8_lossy(&text);
    assert!(!text.contains("call sites not checked"), "{text}");
}

/// Two static `dup`s of different prototypes in one module (two files
/// linked with `ld -r`, as kbuild links a module of several objects): the
/// first in the symbol table is in `.text.unlikely`, the other at `.text`+0,
/// the lowest key. Oracle: the module loader's lookup of a name
/// (find_kallsyms_symbol_value takes the first symbol of that name in
/// table order), which the encoder names `dup` after: the audit must judge
/// FUNC `dup` against that instance, not the lowest one.
#[test]
fn check_attach_of_a_module_resolves_a_name_to_its_first_symbol_as_the_loader() {
    testkit::tool_or_skip("cc", "gcc");
    testkit::tool_or_skip("ld", "binutils");
    let fx = Fixture::new();
    fx.write(
        "a.c",
        "__attribute__((cold, noinline)) static int dup(int x) { return x * 7 + 1; }\n\
         int a_entry(int x) { return dup(x) + 2; }\n",
    );
    fx.write(
        "b.c",
        "__attribute__((noinline)) static long dup(long a, long b) { return a * b - 3; }\n\
         long b_entry(long a, long b) { return dup(a, b) + dup(b, a); }\n",
    );
    let flags = ["-c", "-g", "-O2", "-pg", "-mfentry", "-mrecord-mcount"];
    let (a, b) = (
        fx.cc("a.o", &["a.c"], &flags),
        fx.cc("b.o", &["b.c"], &flags),
    );
    let obj = fx.path("m.o");
    testkit::run_ok(
        Command::new("ld")
            .arg("-r")
            .args([&a, &b])
            .arg("-o")
            .arg(&obj),
    );
    let out = fx.path("m.btf");
    let (out, obj) = (out.to_str().expect("path"), obj.to_str().expect("path"));
    btfkit(&["encode", "--addr-tags", "all", "-o", out, obj]);
    let json = btfkit(&["check", "--attach", "--json", out, obj]);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&json).expect("JSON");
    let dup = rows.iter().find(|r| r["name"] == "dup").expect("FUNC dup");
    assert_eq!(dup["reach"], "attachable", "{dup}");
    // The first `dup` of the table, at the start of .text.unlikely, with
    // its one argument.
    let address = dup["address"].as_str().expect("address");
    assert_eq!(address, ".text.unlikely+0x0", "{dup}");
    assert_eq!(dup["tags"], serde_json::json!([address]), "{dup}");
    assert_eq!(dup["arg_regs"], 1, "{dup}");
}

#[test]
fn init_exit_and_text_functions_at_offset_0_as_pahole_1_32() {
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let fx = Fixture::new();
    let obj = object_file(&fx);
    let (theirs, ours) = (fx.path("m.132"), fx.path("m.ours"));
    for (pahole, out) in [(None, &theirs), (Some(BTFKIT), &ours)] {
        let args = [
            "--btf_features=default".to_string(),
            format!("--btf_encode_detached={}", out.display()),
            obj.display().to_string(),
        ];
        match pahole {
            None => {
                sid.run_ok(&[fx.dir.path()], "pahole", &args);
            }
            Some(b) => {
                testkit::run_ok(Command::new(b).arg("pahole").args(&args));
            }
        }
    }
    let (theirs, ours) = (funcs(&theirs), funcs(&ours));
    // pahole names FUNCs after DWARF subprograms (no aliases): each of
    // its FUNCs is btfkit's too, with the same prototype.
    assert!(!theirs.is_empty());
    for (name, protos) in &theirs {
        assert_eq!(ours.get(name), Some(protos), "{name}");
    }
    assert_eq!(
        ours.get("init_module"),
        Some(&vec!["int init_module(void)".to_string()])
    );
}

/// A function symbol of a module: its section's name and its offset there.
struct Placed {
    section: String,
    offset: u64,
}

/// The function symbols of a module: its address key (ksyms::module_sections)
/// -> names and place, and each name's first symbol in table order (the
/// one a module's name lookup returns).
struct ModuleSymbols {
    by_key: HashMap<u64, (Vec<String>, Placed)>,
    first: HashMap<String, u64>,
}

fn module_symbols(ko: &Path) -> ModuleSymbols {
    let data = std::fs::read(ko).expect("read module");
    let file = object::File::parse(&*data).expect("module ELF");
    let sections = ModuleSections::of(&file).expect("relocatable");
    let mut m = ModuleSymbols {
        by_key: HashMap::new(),
        first: HashMap::new(),
    };
    for s in file.symbols() {
        let (Some(index), Ok(name)) = (s.section_index(), s.name()) else {
            continue;
        };
        if s.kind() != object::SymbolKind::Text || name.is_empty() {
            continue;
        }
        let section = file
            .section_by_index(index)
            .and_then(|x| x.name().map(str::to_owned))
            .expect("section name");
        let key = sections.key(index.0, s.address());
        m.first.entry(name.to_owned()).or_insert(key);
        m.by_key
            .entry(key)
            .or_insert_with(|| {
                (
                    Vec::new(),
                    Placed {
                        section,
                        offset: s.address(),
                    },
                )
            })
            .0
            .push(name.to_owned());
    }
    m
}

#[test]
fn debian_module_funcs_have_the_prototype_at_their_section_offset_addr2line_pahole_1_32() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    testkit::tool_or_skip("addr2line", "binutils");
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let modules = [
        "fs/configfs/configfs.ko",
        "fs/fat/fat.ko",
        "fs/isofs/isofs.ko",
    ];
    let mut checked = 0;
    let mut init_exit = 0;
    let mut wrong = Vec::new();
    for rel in modules {
        let src = k.dbg_modules.join("kernel").join(rel);
        if !src.is_file() {
            return testkit::skip(&format!("{} is not cached", src.display()));
        }
        let fx = Fixture::new();
        let ko = fx.path("m.ko");
        std::fs::copy(&src, &ko).expect("copy module");
        let (theirs, ours) = (fx.path("m.132"), fx.path("m.ours"));
        sid.run_ok(
            &[fx.dir.path()],
            "pahole",
            [
                "--btf_features=default".to_string(),
                format!("--btf_encode_detached={}", theirs.display()),
                ko.display().to_string(),
            ],
        );
        btfkit(&[
            "encode",
            "-o",
            ours.to_str().expect("path"),
            ko.to_str().expect("path"),
        ]);
        let (theirs, ours) = (funcs(&theirs), funcs(&ours));
        let symbols = module_symbols(&ko);
        // Each FUNC of btfkit's: the code it describes.
        let mut at: Vec<(String, u64)> = Vec::new();
        for name in ours.keys() {
            let key = match parse_unreachable_name(name) {
                Some((_, key)) => Some(key),
                None => symbols.first.get(name).copied(),
            };
            let key = key.unwrap_or_else(|| panic!("{rel}: FUNC {name} names no symbol"));
            at.push((name.clone(), key));
        }
        let mut by_section: BTreeMap<&str, Vec<(String, u64)>> = BTreeMap::new();
        for (name, key) in &at {
            let (_, placed) = symbols
                .by_key
                .get(key)
                .unwrap_or_else(|| panic!("{rel}: FUNC {name}: no function symbol at {key:#x}"));
            by_section
                .entry(placed.section.as_str())
                .or_default()
                .push((name.clone(), placed.offset));
        }
        for (section, funcs) in by_section {
            let offsets: Vec<u64> = funcs.iter().map(|f| f.1).collect();
            let subprograms = addr2line(&ko, section, &offsets);
            for ((func, offset), sub) in funcs.iter().zip(subprograms) {
                let symbol = parse_unreachable_name(func).map_or(func.as_str(), |(s, _)| s);
                // A compiler suffix: btfkit gives the clone's true
                // signature, pahole the source's.
                if symbol.contains('.') {
                    continue;
                }
                let Some([want]) = theirs.get(&sub).map(Vec::as_slice) else {
                    continue;
                };
                // The prototype with the function's name as `F`.
                let unnamed = |p: &str, name: &str| p.replacen(&format!("{name}("), "F(", 1);
                let want = unnamed(want, &sub);
                for got in &ours[func] {
                    let got = unnamed(got, func);
                    if got != want {
                        wrong.push(format!(
                            "{rel}: {func} at {section}+{offset:#x} ({sub}): {got} != {want}"
                        ));
                    }
                }
                checked += 1;
                if matches!(symbol, "init_module" | "cleanup_module") {
                    init_exit += 1;
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    eprintln!("{checked} FUNCs checked, {init_exit} of them init_module/cleanup_module");
    assert!(init_exit >= 2 * modules.len() - 1, "{init_exit}");
    assert!(checked > 100, "{checked}");
}

/// One inline function in two units: `ld.lld -r` keeps one copy of its
/// COMDAT section and voids (R_X86_64_NONE) the other unit's DWARF
/// relocation to the discarded copy, as in clang-built modules.
const COMDAT: &str = r#"
struct S { int v; };
inline __attribute__((noinline)) int shared(S *s, int k) { return s->v + k; }
int UNIT(S *s) { return shared(s, 1); }
"#;

#[test]
fn subprogram_of_code_lld_discarded_gives_no_prototype_and_says_why_c_declarations() {
    let Some(clang) = testkit::tool_or_skip("clang-19", "clang-19") else {
        return;
    };
    let Some(lld) = testkit::tool_or_skip("ld.lld-19", "lld-19") else {
        return;
    };
    let fx = Fixture::new();
    for unit in ["a", "b"] {
        fx.write(&format!("{unit}.cc"), &COMDAT.replace("UNIT", unit));
        testkit::run_ok(
            Command::new(&clang)
                .current_dir(fx.dir.path())
                .args(["-g", "-O2", "-c", "-x", "c++"])
                .arg(format!("{unit}.cc"))
                .args(["-o", &format!("{unit}.o")]),
        );
    }
    let obj = fx.path("ab.o");
    testkit::run_ok(
        Command::new(&lld)
            .current_dir(fx.dir.path())
            .args(["-r", "a.o", "b.o", "-o"])
            .arg(&obj),
    );
    let out = Command::new(BTFKIT)
        .args(["funcs", "--json"])
        .arg(&obj)
        .output()
        .expect("run btfkit");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("code address is tied to no section").count(),
        1,
        "{stderr}"
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    let protos: BTreeSet<(&str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["symbol"].as_str().expect("symbol"),
                r["prototype"].as_str().expect("prototype"),
            )
        })
        .collect();
    let want: BTreeSet<(&str, &str)> = [
        ("_Z1aP1S", "int _Z1aP1S(struct S *s)"),
        ("_Z1bP1S", "int _Z1bP1S(struct S *s)"),
        ("_Z6sharedP1Si", "int _Z6sharedP1Si(struct S *s, int k)"),
    ]
    .into_iter()
    .collect();
    assert_eq!(protos, want);
    // The encoder: a FUNC per symbol, none with the voided copy's
    // prototype at `.text`+0.
    let btf = fx.path("ab.btf");
    btfkit(&[
        "encode",
        "-o",
        btf.to_str().expect("path"),
        obj.to_str().expect("path"),
    ]);
    let want: BTreeMap<String, Vec<String>> = want
        .iter()
        .map(|(n, p)| (n.to_string(), vec![p.to_string()]))
        .collect();
    assert_eq!(funcs(&btf), want);
}
