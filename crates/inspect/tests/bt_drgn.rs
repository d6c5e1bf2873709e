//! `btfkit inspect`'s `bt`, `foreach bt` and `ps` against drgn 0.3 on the real dumps
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

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value as Json;
use testkit::{drgn, dumps};

const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;

const DRGN_SCRIPT: &str = r#"
import json
from drgn.helpers.linux.cpumask import for_each_possible_cpu
from drgn.helpers.linux.pid import for_each_task
from drgn.helpers.linux.sched import cpu_curr, idle_task, task_cpu, task_state_to_char
cpus = list(for_each_possible_cpu(prog))
active = {cpu_curr(prog, c).value_(): c for c in cpus}
idle = [idle_task(prog, c) for c in cpus]
for t in idle + list(for_each_task(prog)):
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
        'task': hex(t.value_()),
        'active_on': active.get(t.value_()),
        'frames': frames,
    }))
"#;

/// An address in btfkit's JSON: a "0x..." string.
fn addr(j: &Json) -> u64 {
    let s = j.as_str().unwrap_or_else(|| panic!("not an address: {j}"));
    u64::from_str_radix(s.strip_prefix("0x").unwrap(), 16).unwrap()
}

/// `btfkit inspect DUMP --btf BTF --json LINE...`: each line's value.
fn inspect(dump: &Path, btf: &Path, lines: &[&str]) -> Vec<Json> {
    common::run_ok(&common::opts(dump, Some(btf)), lines, true)
        .lines()
        .map(|l| serde_json::from_str::<Json>(l).unwrap()["value"].clone())
        .collect()
}

/// btfkit's tasks from `bt ...`, `foreach bt` or `ps` (which must report
/// no problem), in its order.
fn tasks_of(dump: &Path, btf: &Path, line: &str, format: &str) -> Vec<Json> {
    let v = inspect(dump, btf, &[line]).remove(0);
    assert_eq!(v["problems"], Json::Array(vec![]), "{format}: {line}");
    v["tasks"].as_array().unwrap().clone()
}

/// Tasks by their address ("0x..."): pid 0 is every CPU's idle task.
fn by_task(tasks: Vec<Json>) -> BTreeMap<String, Json> {
    tasks
        .into_iter()
        .map(|t| (t["task"].as_str().unwrap().to_owned(), t))
        .collect()
}

/// drgn's tasks: each CPU's idle task (`idle_task`), then `for_each_task`.
fn drgn_tasks(dump: &Path, vmlinux: &Path) -> Vec<Json> {
    drgn::run(dump, vmlinux, &[], DRGN_SCRIPT, "")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
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
    common::encode(&d.kernel.vmlinux, None, false, &btf);
    Some((d, dir, btf))
}

/// btfkit's backtrace of a task against drgn's (see the module
/// documentation); returns the frames compared.
fn compare_trace(format: &str, o: &Json, t: &Json) -> usize {
    let who = format!(
        "{format}: pid {} ({}) at {}",
        t["pid"], t["comm"], t["task"]
    );
    let want: Vec<&Json> = t["frames"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["inline"] == false)
        .take_while(|f| f["pc"].as_u64().unwrap() >= KERNEL_HALF)
        .collect();
    let got = o["frames"].as_array().unwrap();
    let ours: Vec<u64> = got.iter().map(|f| addr(&f["pc"])).collect();
    let theirs: Vec<u64> = want.iter().map(|f| f["pc"].as_u64().unwrap()).collect();
    assert_eq!(
        ours, theirs,
        "{who}: program counters; btfkit ends: {}",
        o["end"]
    );
    assert_eq!(o["end"]["ok"], true, "{who}: {}", o["end"]);
    for (g, w) in got.iter().zip(&want) {
        let name = g["symbol"].as_str().unwrap_or("?");
        let sym_addr = addr(&g["address"]) - g["offset"].as_u64().unwrap();
        // drgn has no symbol for the boot code an idle task of CPU 0 starts
        // in (init text): its pc compared equal above, that is all.
        let Some(w) = w["symbol"].as_array() else {
            assert!(
                t["pid"] == 0,
                "{who}: drgn names every pc of a task but idle ones"
            );
            continue;
        };
        let (wname, waddr, wsize) = (
            w[0].as_str().unwrap(),
            w[1].as_u64().unwrap(),
            w[2].as_u64().unwrap(),
        );
        assert!(
            name == wname || (sym_addr > waddr && sym_addr < waddr + wsize),
            "{who}: btfkit names {} {name}, drgn {wname}",
            g["pc"]
        );
    }
    got.len()
}

#[test]
fn foreach_bt_every_task_and_idle_task_equals_drgn_stack_trace() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some((d, _dir, btf)) = setup() else {
        return;
    };
    let theirs = by_task(drgn_tasks(&d.elf, &d.kernel.vmlinux));
    for (format, dump) in d.all() {
        let ours = by_task(tasks_of(dump, &btf, "foreach bt", format));
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{format}: the tasks"
        );
        let mut frames = 0;
        for (task, t) in &theirs {
            frames += compare_trace(format, &ours[task], t);
        }
        assert!(frames > 5 * theirs.len(), "{format}: {frames} frames");
        // The guest's tasks sleep where their syscalls put them.
        let sleeper = theirs
            .values()
            .find(|t| t["comm"] == "sleep")
            .expect("the guest's sleep");
        let names: Vec<&str> = ours[sleeper["task"].as_str().unwrap()]["frames"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["symbol"].as_str())
            .collect();
        assert!(names.contains(&"do_nanosleep"), "{format}: {names:?}");
    }
}

/// crash's `bt -a` (each CPU's active task, idle tasks included), `bt -c
/// CPU` and `bt 0` (CPU 0's idle task) against drgn's `cpu_curr` and
/// `idle_task` and their stack traces.
#[test]
fn bt_a_c_and_pid_0_equal_drgn_cpu_curr_and_idle_task() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some((d, _dir, btf)) = setup() else {
        return;
    };
    let all = drgn_tasks(&d.elf, &d.kernel.vmlinux);
    let mut active: Vec<&Json> = all.iter().filter(|t| !t["active_on"].is_null()).collect();
    active.sort_by_key(|t| t["active_on"].as_u64());
    assert!(active.len() >= 2, "the guest has 2 CPUs: {active:?}");
    let idle0 = &all[0];
    assert_eq!(
        (idle0["pid"].as_u64(), idle0["cpu"].as_u64()),
        (Some(0), Some(0))
    );
    for (format, dump) in d.all() {
        let ours = tasks_of(dump, &btf, "bt -a", format);
        let tasks = |v: &[&Json]| -> Vec<String> {
            v.iter()
                .map(|t| t["task"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(
            tasks(&ours.iter().collect::<Vec<_>>()),
            tasks(&active),
            "{format}: bt -a is each CPU's active task, in CPU order"
        );
        for (o, t) in ours.iter().zip(&active) {
            compare_trace(format, o, t);
        }
        for (cpu, t) in active.iter().enumerate() {
            let one = tasks_of(dump, &btf, &format!("bt -c {cpu}"), format);
            assert_eq!(one.len(), 1, "{format}: bt -c {cpu}");
            assert_eq!(one[0]["task"], t["task"], "{format}: bt -c {cpu}");
        }
        let zero = tasks_of(dump, &btf, "bt 0", format);
        assert_eq!(zero[0]["task"], idle0["task"], "{format}: bt 0");
        assert_eq!(zero[0]["comm"], "swapper/0", "{format}: bt 0");
        compare_trace(format, &zero[0], idle0);
    }
}

/// `ps` as crash's: each CPU's idle task (drgn's `idle_task`) first, then
/// drgn's `for_each_task`, with `>` (JSON `running`) on each CPU's active
/// task (drgn's `cpu_curr`).
#[test]
fn ps_equals_drgn_idle_task_and_for_each_task_with_cpu_curr_marked() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some((d, _dir, btf)) = setup() else {
        return;
    };
    let theirs: Vec<Json> = drgn_tasks(&d.elf, &d.kernel.vmlinux)
        .into_iter()
        .map(|mut t| {
            let o = t.as_object_mut().unwrap();
            o.remove("frames");
            let running = !o.remove("active_on").unwrap().is_null();
            o.insert("running".into(), Json::Bool(running));
            t
        })
        .collect();
    for (format, dump) in d.all() {
        let ours: Vec<Json> = tasks_of(dump, &btf, "ps", format)
            .into_iter()
            .map(|t| {
                serde_json::json!({
                    "pid": t["pid"], "ppid": t["ppid"], "cpu": t["cpu"],
                    "state": t["state"], "comm": t["comm"], "task": t["task"],
                    "running": t["running"],
                })
            })
            .collect();
        assert_eq!(ours, theirs, "{format}");
        for comm in dumps::GUEST_TASKS {
            assert!(ours.iter().any(|t| t["comm"] == *comm), "{format}: {comm}");
        }
        let idle: Vec<&Json> = ours.iter().filter(|t| t["pid"] == 0).collect();
        assert!(idle.len() >= 2, "{format}: {idle:?}");
        for (cpu, t) in idle.iter().enumerate() {
            assert_eq!(t["comm"], format!("swapper/{cpu}"), "{format}");
        }
        let text = common::run_ok(&common::opts(dump, Some(&btf)), &["ps"], false);
        let marked = text.lines().filter(|l| l.starts_with('>')).count();
        let running = ours.iter().filter(|t| t["running"] == true).count();
        assert_eq!(marked, running, "{format}: {text}");
    }
}

/// The modules' text and ORC tables the unwinder reads (its own walk of
/// `modules`) against drgn's `for_each_module` (DWARF types); and each
/// module's ORC lookup finds, for every entry's address, that entry.
#[test]
fn module_orc_tables_equal_drgn_for_each_module() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
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
