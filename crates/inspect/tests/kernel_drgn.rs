//! `btfkit inspect`'s kernel-state commands against drgn 0.3 with Debian's
//! DWARF (vmlinux and the modules' debug .ko files) on the same real dumps
//! of Debian's 6.1 cloud kernel: `mod` against `for_each_module`, `log`
//! against `get_dmesg()` (and the guest's serial console), module symbols
//! read from `mod->kallsyms` against drgn's symbols from the debug .ko
//! files, `struct` against drgn's types and values.
//!
//! btfkit uses no DWARF here: the dump's own BTF and kallsyms tables.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use inspect::open::Options;
use serde_json::Value as Json;
use testkit::{drgn, dumps};

fn setup() -> Option<dumps::Dumps> {
    let d = dumps::dumps_or_skip()?;
    drgn::drgn_or_skip().then_some(d)
}

/// The modules' debug files drgn loads (Debian's dbg package).
fn debug_modules(d: &dumps::Dumps) -> Vec<PathBuf> {
    ["drivers/net/dummy.ko", "drivers/firmware/qemu_fw_cfg.ko"]
        .iter()
        .map(|m| d.kernel.dbg_modules.join("kernel").join(m))
        .collect()
}

/// The names of the functions in the `.init.text` of these object files.
fn init_text_functions(objects: &[&Path]) -> BTreeSet<String> {
    use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
    let mut names = BTreeSet::new();
    for path in objects {
        let data = std::fs::read(path).unwrap();
        let file = object::File::parse(&*data).unwrap();
        for sym in file.symbols() {
            let init = sym
                .section_index()
                .and_then(|i| file.section_by_index(i).ok())
                .is_some_and(|s| s.name() == Ok(".init.text"));
            if init && sym.kind() == SymbolKind::Text {
                names.insert(sym.name().unwrap().to_owned());
            }
        }
    }
    names
}

/// The dumps btfkit reads: ELF and one of each kdump-compressed codec family.
fn formats(d: &dumps::Dumps) -> Vec<(&'static str, &Path)> {
    vec![("elf", &d.elf), ("kdump-zlib", &d.kdump_zlib)]
}

/// An address in btfkit's JSON: a "0x..." string.
fn addr(j: &Json) -> u64 {
    let s = j.as_str().unwrap_or_else(|| panic!("not an address: {j}"));
    u64::from_str_radix(s.strip_prefix("0x").unwrap(), 16).unwrap()
}

/// `btfkit inspect DUMP LINE --json`'s value.
fn json_of(dump: &Path, line: &str) -> Json {
    let out = common::run_ok(&common::opts(dump, None), &[line], true);
    let j: Json = serde_json::from_str(&out).unwrap();
    j["value"].clone()
}

fn text_of(dump: &Path, line: &str) -> String {
    common::run_ok(&common::opts(dump, None), &[line], false)
}

#[test]
fn mod_equals_drgn_for_each_module() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = setup() else { return };
    // drgn 0.3: for_each_module() gives struct module *; 6.1 has core_layout.
    let script = r#"
from drgn.helpers.linux.module import for_each_module
for m in for_each_module(prog):
    print(m.value_(), m.name.string_().decode(), m.core_layout.base.value_(), m.core_layout.size.value_())
"#;
    let want = drgn::run(&d.elf, &d.kernel.vmlinux, &[], script, "");
    let want: Vec<String> = want.lines().map(str::to_owned).collect();
    assert!(
        want.iter().any(|l| l.contains(" dummy ")) && want.len() >= 2,
        "the guest loads dummy and qemu_fw_cfg: {want:?}"
    );
    for (fmt, dump) in formats(&d) {
        let v = json_of(dump, "mod");
        assert!(v["error"].is_null(), "{fmt}: {v}");
        let got: Vec<String> = v["modules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                format!(
                    "{} {} {} {}",
                    addr(&m["module"]),
                    m["name"].as_str().unwrap(),
                    addr(&m["base"]),
                    m["size"]
                )
            })
            .collect();
        assert_eq!(got, want, "{fmt}");
        // Debian builds module BTF: the kernel holds it for every module.
        for m in v["modules"].as_array().unwrap() {
            assert!(m["btf"]["size"].as_u64().unwrap() > 0, "{fmt}: {m}");
        }
    }
}

#[test]
fn log_equals_drgn_get_dmesg_and_the_console() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = setup() else { return };
    let script = r#"
import sys, json
from drgn.helpers.linux.printk import get_dmesg, get_printk_records
sys.stdout.write(get_dmesg(prog).decode('utf-8', 'replace'))
print('\x00')
for r in get_printk_records(prog):
    print(json.dumps([r.seq, r.timestamp, r.level, r.facility, r.continuation]))
"#;
    let out = drgn::run(&d.elf, &d.kernel.vmlinux, &[], script, "");
    let (dmesg, records) = out.split_once("\x00\n").unwrap();
    let want_meta: Vec<Json> = records
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(want_meta.len() > 100, "{} records", want_meta.len());
    for (fmt, dump) in formats(&d) {
        let got = text_of(dump, "log");
        assert_eq!(got, dmesg, "{fmt}: log vs get_dmesg()");
        let v = json_of(dump, "log");
        let got_meta: Vec<Json> = v["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                serde_json::json!([
                    r["seq"],
                    r["ts_nsec"],
                    r["level"],
                    r["facility"],
                    r["continuation"]
                ])
            })
            .collect();
        assert_eq!(got_meta, want_meta, "{fmt}: records");
    }
    // The serial console printed the records up to the console log level:
    // in order, each one a line of `log`.
    let console = std::fs::read_to_string(d.dir.join("console.txt")).unwrap();
    // The console repeats a record's timestamp on each line of its text.
    let log = text_of(&d.elf, "log");
    let mut prefix = "";
    let console_form: Vec<String> = log
        .lines()
        .map(|l| {
            if l.starts_with('[') && l.get(13..15) == Some("] ") {
                prefix = &l[..15];
                l.trim_end().to_owned()
            } else {
                format!("{prefix}{}", l.trim_end())
            }
        })
        .collect();
    let mut lines = console_form.iter();
    let mut matched = 0;
    for c in console.lines().map(str::trim_end) {
        let is_printk = c.starts_with('[') && c.get(13..15) == Some("] ");
        if !is_printk {
            continue;
        }
        assert!(
            lines.any(|l| l.as_str() == c),
            "console line not in `log` (in order): {c:?}"
        );
        matched += 1;
    }
    assert!(matched > 100, "{matched} console lines");
    let m = text_of(&d.elf, "log -m");
    assert!(
        m.starts_with("[    0.000000] <5>Linux version"),
        "{}",
        &m[..80]
    );
}

#[test]
fn module_symbols_from_memory_equal_drgn_with_the_debug_modules() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = setup() else { return };
    let prog = inspect::open::open(&inspect::open::Options {
        vmcore: Some(d.kdump_zlib.clone()),
        ..Default::default()
    })
    .unwrap();
    let mods = inspect::kernel::module::for_each_module(&prog).unwrap();
    let mut mine = Vec::new();
    for m in &mods.modules {
        for s in inspect::kernel::module::module_symbols(&prog, m).unwrap() {
            // The table at open has them: addresses name their module's symbols.
            let hit = prog.symbols().lookup(s.addr).unwrap();
            assert_eq!(hit.symbol.module, Some(m.name.as_str()), "{s:?}");
            assert_eq!(hit.offset, 0, "{s:?}");
            if s.type_char.eq_ignore_ascii_case(&b't') {
                mine.push((m.name.clone(), m.base, m.size, s.addr, s.name));
            }
        }
    }
    assert!(mine.len() > 20, "{} function symbols", mine.len());
    // drgn: the symbols of the debug .ko files, placed where the dump's
    // kernel loaded them; for each of ours, the names drgn has there, and
    // drgn's functions in each module's core text.
    let input: String = mine
        .iter()
        .map(|(_, _, _, a, _)| format!("{a}\n"))
        .collect();
    let ranges: Vec<String> = mods
        .modules
        .iter()
        .map(|m| format!("({}, {})", m.base, m.base + m.size))
        .collect();
    let script = format!(
        r#"
import sys
from drgn import SymbolKind
for line in sys.stdin:
    a = int(line)
    print(' '.join(sorted(s.name for s in prog.symbols(a) if s.address == a)) or '-')
print('\x00')
for lo, hi in [{}]:
    for s in prog.symbols():
        if lo <= s.address < hi and s.kind == SymbolKind.FUNC:
            print(s.address, s.name)
"#,
        ranges.join(", ")
    );
    let dbg = debug_modules(&d);
    let dbg: Vec<&Path> = dbg.iter().map(PathBuf::as_path).collect();
    let out = drgn::run(&d.elf, &d.kernel.vmlinux, &dbg, &script, &input);
    let (names, funcs) = out.split_once("\x00\n").unwrap();
    for ((module, _, _, addr, name), theirs) in mine.iter().zip(names.lines()) {
        assert!(
            theirs.split(' ').any(|n| n == name),
            "{module}: {name} at {addr:#x}: drgn has {theirs:?}"
        );
    }
    let ours: BTreeSet<(u64, &str)> = mine
        .iter()
        .map(|(_, _, _, a, n)| (*a, n.as_str()))
        .collect();
    // A module's init code is freed once its init function returns, and
    // its symbols leave `mod->kallsyms`; drgn still places them at the
    // address the module's sysfs section attributes remember, which a
    // module loaded later may have reused for its core (seen when the
    // guest ran slowly enough for the free to come first).
    let init_funcs = init_text_functions(&dbg);
    let theirs: BTreeSet<(u64, &str)> = funcs
        .lines()
        .map(|l| {
            let (a, n) = l.split_once(' ').unwrap();
            (a.parse().unwrap(), n)
        })
        .filter(|(_, n)| !init_funcs.contains(*n))
        .collect();
    assert!(theirs.len() > 20, "{theirs:?}");
    let missing: Vec<_> = theirs.difference(&ours).collect();
    assert!(
        missing.is_empty(),
        "drgn's functions not in ours: {missing:?}"
    );
}

/// `struct -o TYPE`'s members (name, offset) and `struct TYPE ADDR`'s
/// scalar members against drgn's type and object, for vmlinux types and a
/// module's type (from the module BTF in the dump's memory, against drgn's
/// from the module's DWARF).
#[test]
fn struct_equals_drgn_for_kernel_and_module_types() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = setup() else { return };
    // Objects at addresses drgn knows: init_task, the first module, the
    // printk ring's first info, the first fw_cfg entry of qemu_fw_cfg.
    let script = r#"
import json
from drgn import Object, TypeKind
from drgn.helpers.linux.module import for_each_module
def under(t):
    while t.kind == TypeKind.TYPEDEF:
        t = t.type
    return t
# btfkit's JSON: pointers as "0x..." strings, enums by enumerator name.
def conv(o):
    t = under(o.type_)
    v = o.value_()
    if t.kind == TypeKind.POINTER:
        return hex(v)
    if t.kind == TypeKind.ENUM:
        return next((e.name for e in t.enumerators if e.value == v), v)
    return v
objs = [
    ('task_struct', prog['init_task'].address_of_()),
    ('module', next(iter(for_each_module(prog)))),
    ('printk_info', prog['prb'].desc_ring.infos),
    ('fw_cfg_sysfs_entry', Object(prog, 'struct fw_cfg_sysfs_entry *',
        prog.read_u64(prog.symbol('fw_cfg_entry_cache').address) - 128)),
]
for name, p in objs:
    t = prog.type('struct ' + name)
    members = [[m.name, m.bit_offset // 8] for m in t.members if m.name]
    o = p[0]
    vals = {}
    for m in t.members:
        if m.name and under(m.type).kind in (TypeKind.INT, TypeKind.POINTER, TypeKind.ENUM, TypeKind.BOOL) and m.bit_field_size is None:
            vals[m.name] = conv(o.member_(m.name))
    print(json.dumps([name, p.value_(), members, vals]))
"#;
    let dbg = debug_modules(&d);
    let dbg: Vec<&Path> = dbg.iter().map(PathBuf::as_path).collect();
    let out = drgn::run(&d.elf, &d.kernel.vmlinux, &dbg, script, "");
    let mut checked = 0;
    for line in out.lines() {
        let want: Json = serde_json::from_str(line).unwrap();
        let (name, addr) = (want[0].as_str().unwrap(), want[1].as_u64().unwrap());
        let layout = json_of(&d.kdump_zlib, &format!("struct -o {name}"));
        let got: Vec<Json> = layout["members"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["name"] != "")
            .map(|m| serde_json::json!([m["name"], m["offset"]]))
            .collect();
        assert_eq!(&Json::Array(got), &want[2], "{name}: member offsets");
        let value = json_of(&d.kdump_zlib, &format!("struct {name} {addr:#x}"));
        for (member, v) in want[3].as_object().unwrap() {
            assert_eq!(&value[member], v, "{name} at {addr:#x}: {member}");
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked} members compared");
}

/// Module variables: the kernel's module BTF of 6.1 has none, so a BTF
/// file of the module (`btfkit encode --vars all --base BTF dummy.ko`)
/// gives them with `--btf-module dummy=FILE`; their addresses come from
/// the module's symbols in memory. drgn reads them with the module's DWARF.
#[test]
fn module_variables_from_a_btf_module_file_equal_drgn() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = setup() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (vars, module) = (dir.path().join("vmlinux.btf"), dir.path().join("dummy.btf"));
    common::encode(&d.kernel.vmlinux, None, true, &vars);
    let ko = &debug_modules(&d)[0];
    common::encode(ko, Some(&vars), true, &module);
    let exprs = [
        "numdummies",
        "&numdummies",
        "&dummy_link_ops",
        "dummy_link_ops.priv_size",
        "dummy_link_ops.kind",
        "dummy_link_ops.setup",
        "&dummy_netdev_ops",
        "dummy_netdev_ops.ndo_init",
    ];
    let input: String = exprs.iter().map(|e| format!("{e}\n")).collect();
    // In btfkit's JSON: addresses and pointers as "0x..." strings.
    let script = r#"
import sys, json
from drgn import TypeKind
for line in sys.stdin:
    e = line.strip()
    if e.startswith('&'):
        print(json.dumps(hex(prog[e[1:]].address_)))
    else:
        head, *path = e.split('.')
        o = prog[head]
        for p in path:
            o = o.member_(p)
        t = o.type_
        while t.kind == TypeKind.TYPEDEF:
            t = t.type
        v = o.value_()
        print(json.dumps(hex(v) if t.kind == TypeKind.POINTER else v))
"#;
    let dbg = debug_modules(&d);
    let dbg: Vec<&Path> = dbg.iter().map(PathBuf::as_path).collect();
    let want = drgn::run(&d.elf, &d.kernel.vmlinux, &dbg, script, &input);
    let opts = Options {
        btf_modules: vec![("dummy".to_owned(), module.clone())],
        ..common::opts(&d.kdump_zlib, Some(&vars))
    };
    let out = common::run_ok(&opts, &exprs, true);
    let got: Vec<String> = out
        .lines()
        .map(|l| {
            let j: Json = serde_json::from_str(l).unwrap();
            assert!(j["error"].is_null(), "{l}");
            j["value"].to_string()
        })
        .collect();
    let want: Vec<String> = want.lines().map(str::to_owned).collect();
    assert_eq!(got, want, "{exprs:?}");
}
