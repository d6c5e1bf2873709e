//! `btfkit inspect` against drgn 0.3 on the same real dumps of Debian's
//! 6.1 cloud kernel: btfkit with BTF (`btfkit encode --vars all`) and the
//! kallsyms tables in the dump, drgn with Debian's DWARF vmlinux. Every
//! value compares as JSON (see inspect::format): variables of whole
//! sections, struct members, strings, per-CPU values, list walks, modules.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use inspect::open::Options;
use serde_json::Value as Json;
use testkit::{drgn, dumps};

/// BTF with every variable, encoded once per test binary.
fn vars_btf(vmlinux: &Path) -> PathBuf {
    static BTF: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    BTF.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("vmlinux.btf");
        common::encode(vmlinux, None, true, &out);
        (dir, out)
    })
    .1
    .clone()
}

/// Runs `btfkit inspect DUMP --btf BTF --json` with one expression per stdin line.
fn inspect_json(dump: &Path, btf: &Path, exprs: &[String]) -> Vec<Json> {
    let out = common::inspect(&common::opts(dump, Some(btf)), exprs, true);
    let lines: Vec<Json> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), exprs.len(), "{}", out.stderr);
    lines
}

/// drgn's side: each line is a Python expression giving a drgn Object (or
/// a list of them); printed in btfkit's JSON form.
const DRGN_SCRIPT: &str = r#"
import json
from drgn import Object, FaultError, TypeKind
from drgn.helpers.linux.list import list_for_each_entry, hlist_for_each_entry
from drgn.helpers.linux.rbtree import rbtree_inorder_for_each_entry
from drgn.helpers.linux.percpu import per_cpu, per_cpu_ptr

def under(t):
    while t.kind == TypeKind.TYPEDEF:
        t = t.type
    return t

def is_char(t):
    t = under(t)
    return t.kind == TypeKind.INT and t.size == 1 and 'char' in t.name

def conv(o, depth=0):
    try:
        t = under(o.type_)
        k = t.kind
        if k in (TypeKind.INT, TypeKind.BOOL):
            return o.value_()
        # Addresses as "0x..." strings, enums by enumerator name (btfkit's JSON).
        if k == TypeKind.POINTER:
            return hex(o.value_())
        if k == TypeKind.ENUM:
            v = o.value_()
            return next((e.name for e in t.enumerators if e.value == v), v)
        if k == TypeKind.FLOAT:
            return o.value_()
        if k == TypeKind.ARRAY:
            if t.length is None or t.length == 0:
                return []
            if is_char(t.type):
                return o.string_().decode('latin-1')
            return [conv(o[i], depth + 1) for i in range(t.length)]
        if k in (TypeKind.STRUCT, TypeKind.UNION):
            d = {}
            for i, m in enumerate(t.members):
                if m.name:
                    d[m.name] = conv(o.member_(m.name), depth + 1)
                else:
                    d['@%d' % i] = conv(Object(prog, m.type, address=o.address_ + m.bit_offset // 8), depth + 1)
            return d
        if k == TypeKind.FUNCTION:
            return hex(o.address_)
        return None
    except FaultError as e:
        return {'error': str(e)}

for line in sys.stdin:
    try:
        v = eval(line)
        out = [conv(x) for x in v] if isinstance(v, list) else conv(v)
        print(json.dumps({'value': out}))
    except Exception as e:
        print(json.dumps({'error': '%s: %s' % (type(e).__name__, e)}))
"#;

/// Read errors compare equal whatever their wording.
fn normalize(v: &Json) -> Json {
    match v {
        Json::Object(m) if m.contains_key("error") => Json::String("ERROR".into()),
        Json::Object(m) => Json::Object(m.iter().map(|(k, v)| (k.clone(), normalize(v))).collect()),
        Json::Array(a) => Json::Array(a.iter().map(normalize).collect()),
        Json::Number(n) if n.is_f64() => Json::from(n.as_f64().unwrap_or(0.0).to_bits()),
        v => v.clone(),
    }
}

fn py_name(name: &str) -> String {
    format!("prog[{name:?}]")
}

/// Expression pairs (btfkit, drgn) and which group each belongs to.
fn expressions(
    btf: &btf::Btf,
    ambiguous: &std::collections::HashSet<String>,
    task_addrs: &[u64],
    module_addrs: &[u64],
) -> Vec<(String, String, &'static str)> {
    use btf::TypeData;
    let mut out = Vec::new();
    // Every variable of these sections whose value is at most 512 bytes.
    let mut sections: BTreeMap<&str, Vec<(String, u64)>> = BTreeMap::new();
    for (_, t) in btf.iter() {
        let TypeData::Datasec { vars, .. } = &t.data else {
            continue;
        };
        let sec = btf.name_of(t).unwrap_or("");
        for v in vars {
            let Some(vt) = btf.type_by_id(v.ty) else {
                continue;
            };
            let name = btf.name_of(vt).unwrap_or("").to_owned();
            sections
                .entry(sec)
                .or_default()
                .push((name, u64::from(v.size)));
        }
    }
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, _) in sections.values().flatten() {
        *count.entry(name).or_default() += 1;
    }
    // Names several statics share are ambiguous (btfkit says so; drgn picks one).
    let unique = |n: &str| count.get(n) == Some(&1) && !ambiguous.contains(n);
    for sec in [
        ".data..read_mostly",
        ".data..ro_after_init",
        ".bss",
        ".data",
    ] {
        for (name, size) in sections.get(sec).into_iter().flatten() {
            if *size <= 512 && !name.contains('.') && unique(name) {
                out.push((name.clone(), py_name(name), "section variables"));
            }
        }
    }
    for (name, size) in sections.get(".data..percpu").into_iter().flatten() {
        if *size <= 256 && !name.contains('.') && unique(name) {
            for cpu in 0..2 {
                out.push((
                    format!("per_cpu({name}, {cpu})"),
                    format!("per_cpu({}, {cpu})", py_name(name)),
                    "per-CPU values",
                ));
            }
        }
    }
    for m in [
        "comm",
        "pid",
        "tgid",
        "flags",
        "prio",
        "policy",
        "tasks",
        "se.vruntime",
        "mm",
        "real_parent",
        "cred",
        "thread.sp",
        "on_cpu",
        "__state",
    ] {
        out.push((
            format!("init_task.{m}"),
            format!("prog['init_task'].{m}"),
            "struct members",
        ));
    }
    for cpu in 0..2 {
        for m in [
            "nr_running",
            "cpu",
            "clock",
            "curr",
            "nr_switches",
            "cfs.nr_running",
            "cfs.min_vruntime",
        ] {
            out.push((
                format!("per_cpu(runqueues, {cpu}).{m}"),
                format!("per_cpu(prog['runqueues'], {cpu}).{m}"),
                "per-CPU values",
            ));
        }
    }
    out.push((
        "list_for_each_entry(struct task_struct, &init_task.tasks, tasks)".into(),
        "list(list_for_each_entry('struct task_struct', prog['init_task'].tasks.address_of_(), 'tasks'))".into(),
        "list walks",
    ));
    out.push((
        "list_for_each_entry(struct module, &modules, list)".into(),
        "list(list_for_each_entry('struct module', prog['modules'].address_of_(), 'list'))".into(),
        "list walks",
    ));
    out.push((
        "rbtree_inorder_for_each_entry(struct vmap_area, &vmap_area_root, rb_node)".into(),
        "list(rbtree_inorder_for_each_entry('struct vmap_area', prog['vmap_area_root'].address_of_(), 'rb_node'))".into(),
        "list walks",
    ));
    out.push((
        "hlist_for_each_entry(struct task_struct, &init_struct_pid.tasks[0], pid_links[0])".into(),
        "list(hlist_for_each_entry('struct task_struct', prog['init_struct_pid'].tasks[0].address_of_(), 'pid_links[0]'))".into(),
        "list walks",
    ));
    for &a in task_addrs {
        for m in [
            "comm",
            "pid",
            "__state",
            "prio",
            "parent->comm",
            "mm",
            "se.sum_exec_runtime",
        ] {
            out.push((
                format!("((struct task_struct *){a:#x})->{m}"),
                format!(
                    "Object(prog, 'struct task_struct *', {a:#x}).{}",
                    m.replace("->", ".")
                ),
                "strings and members of every task",
            ));
        }
        out.push((
            format!(
                "container_of(&((struct task_struct *){a:#x})->tasks, struct task_struct, tasks)"
            ),
            format!("Object(prog, 'struct task_struct *', {a:#x})"),
            "strings and members of every task",
        ));
    }
    for &a in module_addrs {
        for m in [
            "name",
            "state",
            "num_syms",
            "core_layout.size",
            "core_layout.base",
            "refcnt",
            "version",
            "taints",
            "list",
            "num_kp",
        ] {
            out.push((
                format!("((struct module *){a:#x})->{m}"),
                format!("Object(prog, 'struct module *', {a:#x}).{m}"),
                "module data",
            ));
        }
    }
    out
}

/// How many System.map lines carry each name.
fn symbol_counts(system_map: &std::path::Path) -> std::collections::HashMap<String, usize> {
    let mut seen = std::collections::HashMap::new();
    for l in std::fs::read_to_string(system_map).unwrap().lines() {
        if let Some(n) = l.split(' ').nth(2) {
            *seen.entry(n.to_owned()).or_insert(0) += 1;
        }
    }
    seen
}

/// The dumps, the BTF with every variable (path and loaded), when drgn is
/// there to compare with; else a skip.
fn dumps_with_drgn() -> Option<(dumps::Dumps, PathBuf, btf::Btf)> {
    let d = dumps::dumps_or_skip()?;
    if !drgn::drgn_or_skip() {
        return None;
    }
    let btf_path = vars_btf(&d.kernel.vmlinux);
    let btf = btf::load_file(&btf_path, None).unwrap();
    Some((d, btf_path, btf))
}

/// The expressions of [`expressions`] for the dumps' tasks and modules (walked
/// by btfkit itself on the ELF dump, and compared with drgn as the rest).
fn pairs_for(
    d: &dumps::Dumps,
    btf_path: &Path,
    btf: &btf::Btf,
) -> Vec<(String, String, &'static str)> {
    let walk = |e: &str| -> Vec<u64> {
        let v = inspect_json(&d.elf, btf_path, &[e.to_owned()]);
        v[0]["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| u64::from_str_radix(x.as_str().unwrap().trim_start_matches("0x"), 16).unwrap())
            .collect()
    };
    let tasks = walk("list_for_each_entry(struct task_struct, &init_task.tasks, tasks)");
    let modules = walk("list_for_each_entry(struct module, &modules, list)");
    assert!(
        tasks.len() > 40 && modules.len() >= 2,
        "{} tasks, {} modules",
        tasks.len(),
        modules.len()
    );
    // Names kallsyms has more than once (statics of different files).
    let seen = symbol_counts(&d.kernel.system_map);
    let ambiguous = seen
        .into_iter()
        .filter(|(_, c)| *c > 1)
        .map(|(n, _)| n)
        .collect();
    expressions(btf, &ambiguous, &tasks, &modules)
}

/// drgn's answers on `dump`, one per pair.
fn drgn_values(
    d: &dumps::Dumps,
    dump: &Path,
    pairs: &[(String, String, &'static str)],
) -> Vec<Json> {
    let input: String = pairs.iter().map(|p| format!("{}\n", p.1)).collect();
    let oracle = drgn::run(dump, &d.kernel.vmlinux, &[], DRGN_SCRIPT, &input);
    let oracle: Vec<Json> = oracle
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(oracle.len(), pairs.len());
    oracle
}

/// How btfkit's answers compare with drgn's.
#[derive(Default)]
struct Comparison<'a> {
    equal: BTreeMap<&'a str, usize>,
    drgn_failed: Vec<String>,
    /// drgn could not read memory the dump left out; btfkit's error names an address.
    both_fault: usize,
    differ: Vec<String>,
}

impl Comparison<'_> {
    fn total(&self) -> usize {
        self.equal.values().sum()
    }
}

/// drgn's read errors (FaultError) are allowed only when `filtered`: the
/// dump left pages out, and btfkit must then fail too, naming an address.
fn compare<'a>(
    pairs: &'a [(String, String, &'static str)],
    oracle: &[Json],
    ours: &[Json],
    filtered: bool,
) -> Comparison<'a> {
    let mut c = Comparison::default();
    for ((p, want), got) in pairs.iter().zip(oracle).zip(ours) {
        // A read drgn could not do: raised, or caught by conv() as the value.
        let fault = want["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("FaultError"))
            || want["value"]
                .as_object()
                .is_some_and(|m| m.len() == 1 && m.get("error").is_some_and(Json::is_string));
        if filtered && fault {
            match got["error"].as_str() {
                Some(e) if e.contains("0x") => c.both_fault += 1,
                _ => c.differ.push(format!(
                    "{}: drgn {}\n  btfkit {got} (an error naming the address expected)",
                    p.0, want["error"]
                )),
            }
            continue;
        }
        // drgn gives no value (null) for names it resolves to a declaration only.
        let Some(want) = want.get("value").filter(|v| !v.is_null()) else {
            c.drgn_failed.push(format!("{}: {}", p.1, want["error"]));
            continue;
        };
        match got.get("value") {
            Some(v) if normalize(v) == normalize(want) => *c.equal.entry(p.2).or_default() += 1,
            Some(v) => c
                .differ
                .push(format!("{} / {}:\n  btfkit {v}\n  drgn   {want}", p.0, p.1)),
            None => c.differ.push(format!(
                "{}: btfkit error {}\n  drgn {want}",
                p.0, got["error"]
            )),
        }
    }
    c
}

fn assert_equal(name: &str, c: &Comparison, pairs: usize) {
    eprintln!(
        "{name}: {} expressions equal drgn's {:?}; {} fail in both on pages left out; drgn could not evaluate {}",
        c.total(),
        c.equal,
        c.both_fault,
        c.drgn_failed.len()
    );
    assert!(
        c.differ.is_empty(),
        "{name}: {} of {pairs} differ:\n{}",
        c.differ.len(),
        c.differ[..c.differ.len().min(60)].join("\n")
    );
    assert!(c.total() >= 500, "{name}: only {} compared", c.total());
    assert!(
        c.drgn_failed.len() * 20 < pairs,
        "{name}: drgn failed on {}: {:?}",
        c.drgn_failed.len(),
        &c.drgn_failed[..c.drgn_failed.len().min(10)]
    );
}

/// [`dumps_with_drgn`] and makedumpfile's outputs.
fn dumps_and_makedumpfile_with_drgn(
) -> Option<(dumps::Dumps, dumps::Makedumpfile, PathBuf, btf::Btf)> {
    let (d, btf_path, btf) = dumps_with_drgn()?;
    let mdf = dumps::makedumpfile_or_skip(&d)?;
    Some((d, mdf, btf_path, btf))
}

/// Every format QEMU writes (and our recompressions), and makedumpfile's
/// unfiltered outputs (zlib, lzo, flattened) made from the same memory,
/// against drgn on the QEMU ELF dump.
#[test]
fn inspect_values_equal_drgn_with_dwarf_on_every_dump_format() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some((d, mdf, btf_path, btf)) = dumps_and_makedumpfile_with_drgn() else {
        return;
    };
    let pairs = pairs_for(&d, &btf_path, &btf);
    let oracle = drgn_values(&d, &d.elf, &pairs);
    let exprs: Vec<String> = pairs.iter().map(|p| p.0.clone()).collect();
    for (name, dump) in d.all().into_iter().chain(mdf.full()) {
        let ours = inspect_json(dump, &btf_path, &exprs);
        assert_equal(name, &compare(&pairs, &oracle, &ours, false), pairs.len());
    }
}

/// makedumpfile with dump level 31 (zero, cache, user and free pages left
/// out), ELF and kdump-compressed: drgn on each filtered dump is the
/// oracle. What drgn reads btfkit reads equal; what drgn cannot read (a
/// page the kdump bitmap leaves out) btfkit refuses with an error naming
/// the address. In the ELF one, pages left out read as zeros in both.
#[test]
fn inspect_values_equal_drgn_on_makedumpfile_filtered_dumps() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some((d, mdf, btf_path, btf)) = dumps_and_makedumpfile_with_drgn() else {
        return;
    };
    let mut pairs = pairs_for(&d, &btf_path, &btf);
    // A word of pages spread over the guest's 512 MiB through the direct
    // map: free, cache and user pages among them are left out.
    for pfn in (0..0x20000u64).step_by(331) {
        let off = pfn * 0x1000 + 8;
        pairs.push((
            format!("*(unsigned long *)(page_offset_base + {off:#x})"),
            format!(
                "Object(prog, 'unsigned long', address=prog['page_offset_base'].value_() + {off:#x})"
            ),
            "direct-map pages",
        ));
    }
    let exprs: Vec<String> = pairs.iter().map(|p| p.0.clone()).collect();
    for (name, dump, says_left_out) in mdf.filtered() {
        let oracle = drgn_values(&d, dump, &pairs);
        let ours = inspect_json(dump, &btf_path, &exprs);
        let c = compare(&pairs, &oracle, &ours, true);
        assert_equal(name, &c, pairs.len());
        assert!(
            !says_left_out || c.both_fault > 0,
            "{name}: no expression met a page left out"
        );
    }
}

/// `--kallsyms System.map` (link-time addresses, moved by KERNELOFFSET)
/// gives the same values as the kallsyms tables read from the dump.
#[test]
fn inspect_with_system_map_equals_kallsyms_in_memory() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let btf_path = vars_btf(&d.kernel.vmlinux);
    let exprs: Vec<String> = [
        "init_task.comm",
        "init_uts_ns.name.release",
        "per_cpu(runqueues, 1).cpu",
        "list_for_each_entry(struct module, &modules, list)",
        "nr_cpu_ids",
        "&init_task",
    ]
    .map(str::to_owned)
    .to_vec();
    let mem = inspect_json(&d.kdump_zstd, &btf_path, &exprs);
    let opts = Options {
        kallsyms: Some(d.kernel.system_map.clone()),
        ..common::opts(&d.kdump_zstd, Some(&btf_path))
    };
    let map: Vec<Json> = common::run_ok(&opts, &exprs, true)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(map, mem);
    assert!(mem.iter().all(|v| v.get("value").is_some()), "{mem:?}");
}

/// The text form equals drgn's `str(obj)`: scalars, enums, pointers (with
/// the symbol they point at), strings of every scalar variable of .data and
/// .bss, and a few structs and pointers to structs (printed dereferenced).
#[test]
fn inspect_text_equals_drgn_str() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    use btf::TypeData;
    let Some((d, btf_path, btf)) = dumps_with_drgn() else {
        return;
    };
    let seen = symbol_counts(&d.kernel.system_map);
    let mut names = Vec::new();
    for (_, t) in btf.iter() {
        let TypeData::Datasec { vars, .. } = &t.data else {
            continue;
        };
        if !matches!(btf.name_of(t), Ok(".data" | ".bss")) {
            continue;
        }
        for v in vars {
            let Some(vt) = btf.type_by_id(v.ty) else {
                continue;
            };
            let TypeData::Var { ty, .. } = vt.data else {
                continue;
            };
            let name = btf.name_of(vt).unwrap().to_owned();
            let scalar = matches!(
                btf.resolved_data(ty),
                Some(TypeData::Int { .. } | TypeData::Enum { .. } | TypeData::Ptr { .. })
            );
            let ptr_to_compound = matches!(btf.resolved_data(ty), Some(TypeData::Ptr { ty: p })
                if matches!(btf.resolved_data(*p), Some(TypeData::Struct { .. } | TypeData::Union { .. })));
            if scalar && !ptr_to_compound && seen.get(&name) == Some(&1) {
                names.push(name);
            }
        }
    }
    names.sort();
    names.dedup();
    let mut exprs: Vec<(String, String)> = names.iter().map(|n| (n.clone(), py_name(n))).collect();
    for (e, p) in [
        ("init_task.tasks", "prog['init_task'].tasks"),
        ("init_task.sched_class", "prog['init_task'].sched_class"),
        (
            "per_cpu(runqueues, 0).cfs.tasks_timeline",
            "per_cpu(prog['runqueues'], 0).cfs.tasks_timeline",
        ),
        ("init_task.thread_info", "prog['init_task'].thread_info"),
        ("init_uts_ns.name", "prog['init_uts_ns'].name"),
        ("init_task.comm", "prog['init_task'].comm"),
    ] {
        exprs.push((e.into(), p.into()));
    }
    // One value per record: records are separated by a line with a NUL.
    let script = "from drgn.helpers.linux.percpu import per_cpu\n\
                  for line in sys.stdin:\n    print(str(eval(line)) + '\\n\\0')\n";
    let input: String = exprs.iter().map(|e| format!("{}\n", e.1)).collect();
    let want = drgn::run(&d.elf, &d.kernel.vmlinux, &[], script, &input);
    let want: Vec<&str> = want.split("\n\0\n").filter(|s| !s.is_empty()).collect();
    assert_eq!(want.len(), exprs.len());
    let run = |exprs: &[(String, String)]| {
        let lines: Vec<&str> = exprs.iter().map(|e| e.0.as_str()).collect();
        common::inspect(&common::opts(&d.elf, Some(&btf_path)), &lines, false).stdout
    };
    let split = names.len();
    // The symbol a pointer points into comes from kallsyms for btfkit and
    // from the ELF symbol table (with local labels like .LC2) for drgn:
    // compared without it.
    let unsym = |t: &str| -> String {
        t.split(')')
            .map(|part| match part.split_once(" = ") {
                Some((sym, rest)) if sym.contains("+0x") && !sym.contains(' ') => rest.to_owned(),
                _ => part.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(")")
    };
    let mut same = 0;
    // Scalars: one line each, all in one program.
    let scalars = run(&exprs[..split]);
    for ((e, w), g) in exprs.iter().zip(&want).zip(scalars.lines()) {
        // Variables DWARF has no location for: drgn has no value to compare.
        if w.contains("<optimized out>") {
            continue;
        }
        // drgn reads what a NULL pointer points at from the ELF segment
        // QEMU (paging off) puts at virtual address 0: no part of the kernel.
        // The same for any address below the kernel's half (per-CPU
        // offsets): btfkit cannot read them, drgn reads physical memory.
        let low = g
            .rsplit_once(")0x")
            .and_then(|(_, a)| u64::from_str_radix(a, 16).ok())
            .is_some_and(|a| a < 0xffff_8000_0000_0000);
        let w = match w.split_once(" = ") {
            Some((head, _)) if low => head.trim_start_matches('*').to_owned(),
            _ => w.trim_end().to_owned(),
        };
        assert_eq!(unsym(g), unsym(&w), "{}", e.0);
        same += 1;
    }
    // Structs: several lines, one program each.
    for (e, w) in exprs[split..].iter().zip(&want[split..]) {
        let g = run(std::slice::from_ref(e));
        assert_eq!(unsym(g.trim_end()), unsym(w.trim_end()), "{}", e.0);
        same += 1;
    }
    eprintln!("{same} values print as drgn prints them");
    assert!(same >= 300, "{same}");
}
