//! `btfkit inspect`'s `bt -a` and `ps` against drgn 0.3 on the real dumps
//! of Debian's 6.1 cloud kernel (drgn reads the ELF dump; every dump
//! holds the same memory, so its answer is every format's): btfkit with
//! the kernel's own ORC tables,
//! kallsyms tables and BTF (`btfkit encode`, for the `addr=` prototypes),
//! drgn with Debian's DWARF vmlinux (its CFI).
//!
//! How backtraces compare, task by task (drgn's `for_each_task`):
//! - drgn's frames include inline frames (same pc, `is_inline`): only its
//!   non-inline frames are compared, one for one with btfkit's.
//! - drgn goes on past a syscall's user-mode `pt_regs` into user space
//!   (pcs below the kernel half); btfkit stops there and says so. drgn's
//!   frames are compared up to the first one outside the kernel half.
//! - names compare through symbols, not DWARF subprograms: drgn's
//!   `prog.symbol(pc)` (ELF symtab) against btfkit's kallsyms symbol. They
//!   are equal, or btfkit's is a label inside drgn's function
//!   (`entry_SYSCALL_64_after_hwframe` in `entry_SYSCALL_64`: kallsyms
//!   names the nearest label, the ELF symtab the sized function).

#[path = "../../kmem/tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value as Json;
use support::{drgn, dumps};

const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;

const DRGN_SCRIPT: &str = r#"
import json
from drgn.helpers.linux.pid import for_each_task
from drgn.helpers.linux.sched import task_cpu, task_state_to_char
for t in for_each_task(prog):
    frames = []
    for f in prog.stack_trace(t):
        try:
            s = prog.symbol(f.pc)
            sym = [s.name, s.address, s.size]
        except LookupError:
            sym = None
        frames.append({'pc': f.pc, 'inline': f.is_inline, 'symbol': sym})
    print(json.dumps({
        'pid': t.pid.value_(),
        'ppid': t.real_parent.tgid.value_(),
        'cpu': task_cpu(t),
        'state': task_state_to_char(t),
        'comm': t.comm.string_().decode(),
        'task': t.value_(),
        'frames': frames,
    }))
"#;

fn btfkit() -> &'static str {
    env!("CARGO_BIN_EXE_btfkit")
}

/// `btfkit inspect DUMP --btf BTF --json LINE...`: each line's value.
fn inspect(dump: &Path, btf: &Path, lines: &[&str]) -> Vec<Json> {
    let out = Command::new(btfkit())
        .arg("inspect")
        .arg(dump)
        .arg("--btf")
        .arg(btf)
        .arg("--json")
        .args(lines)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Json>(l).unwrap()["value"].clone())
        .collect()
}

/// btfkit's tasks by pid from `bt -a` or `ps` (which must report no problem).
fn tasks_by_pid(dump: &Path, btf: &Path, line: &str, format: &str) -> BTreeMap<u64, Json> {
    let v = inspect(dump, btf, &[line]).remove(0);
    assert_eq!(v["problems"], Json::Array(vec![]), "{format}: {line}");
    v["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["pid"].as_u64().unwrap(), t.clone()))
        .collect()
}

/// drgn's tasks by pid.
fn drgn_tasks(dump: &Path, vmlinux: &Path) -> BTreeMap<u64, Json> {
    drgn::run(dump, vmlinux, &[], DRGN_SCRIPT, "")
        .lines()
        .map(|l| {
            let v: Json = serde_json::from_str(l).unwrap();
            (v["pid"].as_u64().unwrap(), v)
        })
        .collect()
}

/// The dumps (ELF and a kdump format), Debian's vmlinux and a BTF with
/// address tags, when drgn is there; else a skip.
fn setup() -> Option<(dumps::Dumps, tempfile::TempDir, std::path::PathBuf)> {
    let d = dumps::dumps_or_skip()?;
    if !drgn::drgn_or_skip() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let btf = dir.path().join("vmlinux.btf");
    testkit::run_ok(
        Command::new(btfkit())
            .arg("encode")
            .arg(&d.kernel.vmlinux)
            .arg("-o")
            .arg(&btf),
    );
    Some((d, dir, btf))
}

#[test]
fn bt_every_task_equals_drgn_stack_trace() {
    let Some((d, _dir, btf)) = setup() else {
        return;
    };
    let theirs = drgn_tasks(&d.elf, &d.kernel.vmlinux);
    for (format, dump) in d.all() {
        let ours = tasks_by_pid(dump, &btf, "bt -a", format);
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{format}: the tasks"
        );
        let mut frames = 0;
        for (pid, t) in &theirs {
            let o = &ours[pid];
            let want: Vec<&Json> = t["frames"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["inline"] == false)
                .take_while(|f| f["pc"].as_u64().unwrap() >= KERNEL_HALF)
                .collect();
            let got = o["frames"].as_array().unwrap();
            let pcs = |v: &mut dyn Iterator<Item = &Json>| -> Vec<String> {
                v.map(|f| format!("{:#x}", f["pc"].as_u64().unwrap()))
                    .collect()
            };
            assert_eq!(
                pcs(&mut got.iter()),
                pcs(&mut want.iter().copied()),
                "{format}: pid {pid} ({}): program counters; btfkit ends: {}",
                t["comm"],
                o["end"]
            );
            assert_eq!(o["end"]["ok"], true, "{format}: pid {pid}: {}", o["end"]);
            for (g, w) in got.iter().zip(&want) {
                let name = g["symbol"].as_str().unwrap_or("?");
                let sym_addr = g["address"].as_u64().unwrap() - g["offset"].as_u64().unwrap();
                let w = w["symbol"].as_array().expect("drgn names every kernel pc");
                let (wname, waddr, wsize) = (
                    w[0].as_str().unwrap(),
                    w[1].as_u64().unwrap(),
                    w[2].as_u64().unwrap(),
                );
                assert!(
                    name == wname || (sym_addr > waddr && sym_addr < waddr + wsize),
                    "{format}: pid {pid}: btfkit names {:#x} {name}, drgn {wname}",
                    g["pc"].as_u64().unwrap_or(0)
                );
                frames += 1;
            }
        }
        assert!(frames > 5 * theirs.len(), "{format}: {frames} frames");
        // The guest's tasks sleep where their syscalls put them.
        let sleeper = theirs
            .values()
            .find(|t| t["comm"] == "sleep")
            .expect("the guest's sleep");
        let names: Vec<&str> = ours[&sleeper["pid"].as_u64().unwrap()]["frames"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["symbol"].as_str())
            .collect();
        assert!(names.contains(&"do_nanosleep"), "{format}: {names:?}");
    }
}

#[test]
fn ps_equals_drgn_for_each_task() {
    let Some((d, _dir, btf)) = setup() else {
        return;
    };
    let theirs = drgn_tasks(&d.elf, &d.kernel.vmlinux);
    for (format, dump) in d.all() {
        let ours: BTreeMap<u64, Json> = tasks_by_pid(dump, &btf, "ps", format)
            .into_iter()
            .map(|(pid, t)| {
                let row = serde_json::json!({
                    "pid": t["pid"], "ppid": t["ppid"], "cpu": t["cpu"],
                    "state": t["state"], "comm": t["comm"], "task": t["task"],
                });
                (pid, row)
            })
            .collect();
        let theirs: BTreeMap<u64, Json> = theirs
            .clone()
            .into_iter()
            .map(|(pid, mut t)| {
                t.as_object_mut().unwrap().remove("frames");
                (pid, t)
            })
            .collect();
        assert_eq!(ours, theirs, "{format}");
        for comm in dumps::GUEST_TASKS {
            assert!(
                ours.values().any(|t| t["comm"] == *comm),
                "{format}: {comm}"
            );
        }
    }
}

/// The modules' text and ORC tables the unwinder reads (its own walk of
/// `modules`) against drgn's `for_each_module` (DWARF types); and each
/// module's ORC lookup finds, for every entry's address, that entry.
#[test]
fn module_orc_tables_equal_drgn_for_each_module() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    if !drgn::drgn_or_skip() {
        return;
    }
    let script = r#"
import json
from drgn.helpers.linux.module import for_each_module
for m in for_each_module(prog):
    print(json.dumps([m.name.string_().decode(), m.core_layout.base.value_(),
        m.core_layout.text_size.value_(), m.arch.orc_unwind_ip.value_(),
        m.arch.orc_unwind.value_(), m.arch.num_orcs.value_()]))
"#;
    let mut theirs: Vec<Json> = drgn::run(&d.elf, &d.kernel.vmlinux, &[], script, "")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let opts = inspect::open::Options {
        vmcore: Some(d.elf.clone()),
        ..Default::default()
    };
    let prog = inspect::open::open(&opts).unwrap();
    let (mods, problem) = inspect::unwind::modules::read(&prog);
    assert_eq!(problem, None);
    let mut ours: Vec<Json> = mods
        .iter()
        .map(|m| serde_json::json!([m.name, m.base, m.size, m.orc_ip, m.orc_entries, m.num_orcs]))
        .collect();
    theirs.sort_by_key(|v| v.to_string());
    ours.sort_by_key(|v| v.to_string());
    assert_eq!(ours, theirs);
    assert!(ours.iter().any(|m| m[0] == "dummy"), "{ours:?}");
    let format = inspect::unwind::orc::Format::for_release("6.1").unwrap();
    let tables = inspect::unwind::orc::Tables::read(&prog, format, mods.clone());
    let mut checked = 0;
    for m in &mods {
        // Each distinct address's last entry (the kernel's rightmost match).
        let mut by_ip = BTreeMap::new();
        for i in 0..m.num_orcs {
            let at = m.orc_ip + i * 4;
            let rel = prog.memory().read_u32(at).unwrap() as i32;
            let ip = at.wrapping_add_signed(i64::from(rel));
            let mut b = [0u8; 6];
            prog.memory()
                .read_virt(m.orc_entries + i * 6, &mut b)
                .unwrap();
            by_ip.insert(ip, inspect::unwind::orc::decode(b, format));
        }
        for (ip, want) in by_ip.into_iter().filter(|&(ip, _)| m.contains(ip)) {
            match tables.find(&prog, ip) {
                inspect::unwind::orc::Found::Entry(e) => assert_eq!(e, want, "{} {ip:#x}", m.name),
                _ => panic!("{} {ip:#x}: no entry", m.name),
            }
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked}");
}
