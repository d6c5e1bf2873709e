//! `bt [PID|TASK|-a|-c CPU]`: backtraces from the kernel's ORC tables, as crash
//! prints them (`PID: 1  TASK: ...  CPU: 0  COMMAND: "init"`, then
//! ` #0 [sp] symbol+off at pc`), with each frame's module and the
//! prototype of that function instance; argument registers where a
//! frame's entry registers are known (its pc is the function's first
//! instruction and all registers are known: a CPU's note or a pt_regs).
//! Without an argument: the task CPU 0 runs (the crashing CPU's in a
//! kdump of a panic); as crash's: `-a`: the active task of every CPU (its
//! idle task on an idle CPU), `-c CPU[,CPU...]`: those CPUs' active
//! tasks; pid 0 is CPU 0's idle task. A decimal number is a pid, a hex one
//! a task's address (crash's `bt [pid | taskp]`). `foreach bt`: every
//! task, the idle tasks first.

use btf::TypeData;
use ksyms::BtfIndex;
use serde_json::{json, Value as Json};

use super::sym::{self, Described};
use crate::command::Reply;
use crate::error::{Error, Result};
use crate::format::json_addr;
use crate::kernel::task::{self, Task};
use crate::message::quoted;
use crate::program::Program;
use crate::unwind::{registers, Frame, Trace, Unwinder};

const USAGE: &str = "bt [PID|TASK|-a|-c CPU[,CPU...]]";

/// `foreach bt`, crash's: the backtrace of every task.
pub fn foreach(prog: &mut Program, arg: &str) -> Result<Reply> {
    if arg != "bt" {
        return Err(Error::Usage("foreach bt".into()));
    }
    run_on(prog, Which::Every)
}

/// `bt`: the backtrace of the task `arg` names (a pid or a `task_struct`
/// address), of the CPUs' active tasks (`-a`, `-c CPU,...`), or without an
/// argument of the task CPU 0 runs.
pub fn run(prog: &mut Program, arg: &str) -> Result<Reply> {
    let which = match arg.split_whitespace().collect::<Vec<_>>()[..] {
        [] => Which::Crashing,
        ["-a"] => Which::Cpus(None),
        ["-c", list] => Which::Cpus(Some(cpu_list(list)?)),
        [a] => Which::Task(a.to_owned()),
        _ => return Err(Error::Usage(USAGE.into())),
    };
    run_on(prog, which)
}

enum Which {
    /// The task of the crashing CPU (CPU 0 without a panic).
    Crashing,
    /// The active tasks of these CPUs (None: every CPU).
    Cpus(Option<Vec<usize>>),
    /// A pid or a task's address.
    Task(String),
    /// Every task, idle tasks first.
    Every,
}

/// `1`, `0,1`, `0-3,5`: CPU numbers.
fn cpu_list(s: &str) -> Result<Vec<usize>> {
    let bad = || Error::Usage(format!("{USAGE}: bad CPU list {}", quoted(s)));
    let mut out = Vec::new();
    for part in s.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        if a > b || b - a > 8192 {
            return Err(bad());
        }
        out.extend(a..=b);
    }
    Ok(out)
}

fn run_on(prog: &mut Program, which: Which) -> Result<Reply> {
    let prog = &*prog;
    let u = Unwinder::new(prog).map_err(|e| Error::at(1, e))?;
    let layout = u.layout;
    let mut problems = u.problems.clone();
    let tasks: Vec<u64> = match which {
        Which::Every => {
            let mut all = task::idle_tasks(prog).unwrap_or_else(|e| {
                problems.push(format!("idle tasks: {e}"));
                Vec::new()
            });
            let walk = task::for_each_task(prog, &layout).map_err(|e| Error::at(1, e))?;
            problems.extend(walk.problem);
            all.extend(walk.tasks);
            all
        }
        Which::Cpus(None) => u.curr.clone(),
        Which::Cpus(Some(cpus)) => cpus
            .iter()
            .map(|&c| {
                u.curr.get(c).copied().ok_or_else(|| {
                    Error::eval(
                        1,
                        format!("CPU {c}: the kernel has {} CPU ids", u.curr.len()),
                    )
                })
            })
            .collect::<Result<_>>()?,
        Which::Crashing => {
            let cpu = crashing_cpu(prog).unwrap_or(0);
            let t =
                u.curr.get(cpu).copied().ok_or_else(|| {
                    Error::eval(1, format!("which task CPU {cpu} runs is unknown"))
                })?;
            vec![t]
        }
        Which::Task(a) => vec![find_task(prog, &layout, &a)?],
    };
    let index = sym::btf_index(prog);
    let mut text = Vec::new();
    let mut out = Vec::new();
    for addr in tasks {
        match task::task(prog, &layout, addr) {
            Ok(t) => {
                let trace = u.task_trace(prog, &t);
                let (txt, js) = show(prog, &index, &t, &trace);
                text.push(txt);
                out.push(js);
            }
            Err(e) => problems.push(e.to_string()),
        }
    }
    for p in &problems {
        text.push(format!("bt: {p}"));
    }
    Ok(Reply {
        text: text.join("\n\n"),
        json: json!({ "tasks": out, "problems": problems }),
    })
}

/// `crashing_cpu` of a kdump taken at a panic (-1 otherwise).
fn crashing_cpu(prog: &Program) -> Option<usize> {
    let a = prog.symbol("crashing_cpu")?;
    let c = prog.memory().read_u32(a).ok()? as i32;
    usize::try_from(c).ok()
}

/// A task by pid or address, as crash's `bt [pid | taskp]` takes them: a
/// decimal number is a pid (0: CPU 0's idle task), whatever its size (no
/// kernel address is all decimal digits); a hex number (`0x...`, or more
/// than 8 hex digits with a letter) is a task's address.
fn find_task(prog: &Program, layout: &task::Layout, a: &str) -> Result<u64> {
    if !a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()) {
        let no_task = || Error::eval(1, format!("no task with pid {a}"));
        // Larger than any pid: PID_MAX_LIMIT is 4M.
        let Ok(pid) = a.parse::<u32>() else {
            return Err(no_task());
        };
        if pid == 0 {
            let idle = task::idle_tasks(prog).map_err(|e| Error::at(1, e))?;
            return idle
                .first()
                .copied()
                .ok_or_else(|| Error::eval(1, "CPU 0 has no idle task"));
        }
        let walk = task::for_each_task(prog, layout).map_err(|e| Error::at(1, e))?;
        return task::find_pid(prog, layout, &walk.tasks, pid).ok_or_else(no_task);
    }
    sym::parse_address(a).ok_or_else(|| {
        Error::Usage(format!(
            "{USAGE}: {} is neither a pid nor a task address",
            quoted(a)
        ))
    })
}

fn show(prog: &Program, index: &BtfIndex<'_>, t: &Task, trace: &Trace) -> (String, Json) {
    let mut lines = vec![format!(
        "PID: {}  TASK: {:x}  CPU: {}  COMMAND: \"{}\"",
        t.pid, t.addr, t.cpu, t.comm
    )];
    let mut frames = Vec::new();
    for (i, f) in trace.frames.iter().enumerate() {
        let d = sym::describe(prog, index, f.pc);
        let mut line = format!(
            " #{i:<2}[{:016x}] {} at {:016x}",
            f.sp,
            d.name_offset(),
            f.pc
        );
        if let Some(m) = &d.module {
            line.push_str(&format!(" [{m}]"));
        }
        if f.guessed {
            line.push_str(" (frame-pointer guess)");
        }
        lines.push(line);
        if let Some(p) = &d.prototype {
            lines.push(format!("     {p};"));
        }
        let args = arguments(prog, index, &d, f);
        if !args.is_empty() {
            let list: Vec<String> = args.iter().map(|(n, v)| format!("{n}={v:#x}")).collect();
            lines.push(format!("     ({})", list.join(", ")));
        }
        let mut js = d.to_json();
        if let Json::Object(o) = &mut js {
            o.insert("index".into(), json!(i));
            o.insert("sp".into(), json_addr(f.sp));
            o.insert("pc".into(), json_addr(f.pc));
            o.insert("interrupted".into(), json!(f.interrupted));
            o.insert("guessed".into(), json!(f.guessed));
            if !args.is_empty() {
                let a: serde_json::Map<String, Json> =
                    args.into_iter().map(|(n, v)| (n, json_addr(v))).collect();
                o.insert("arguments".into(), Json::Object(a));
            }
        }
        frames.push(js);
    }
    let e = &trace.end;
    lines.push(if e.ok {
        format!("    -- {} at {:x}", e.why, e.at)
    } else {
        format!("    unwinding stopped: {} at {:x}", e.why, e.at)
    });
    let js = json!({
        "pid": t.pid,
        "task": json_addr(t.addr),
        "cpu": t.cpu,
        "comm": t.comm,
        "frames": frames,
        "end": { "ok": e.ok, "why": e.why, "at": json_addr(e.at) },
    });
    (lines.join("\n"), js)
}

/// The argument registers by the prototype's parameter names, when the
/// frame is at its function's first instruction with all registers known.
fn arguments(prog: &Program, index: &BtfIndex<'_>, d: &Described, f: &Frame) -> Vec<(String, u64)> {
    if d.offset != 0 || !f.interrupted || !f.regs.is_full() {
        return Vec::new();
    }
    let Some(hit) = prog.symbols().lookup(f.pc) else {
        return Vec::new();
    };
    let Some(func) = index.match_function(prog.symbols(), &hit.symbol).btf_id() else {
        return Vec::new();
    };
    let btf = prog.btf();
    let params = btf
        .type_by_id(func)
        .and_then(|t| match t.data {
            TypeData::Func { proto, .. } => btf.type_by_id(proto),
            _ => None,
        })
        .map(|p| match &p.data {
            TypeData::FuncProto { params, .. } => params.to_vec(),
            _ => Vec::new(),
        })
        .unwrap_or_default();
    params
        .iter()
        .zip(registers::ARGS)
        .filter_map(|(p, (reg, word))| {
            let name = btf
                .str_at(p.name_off)
                .ok()
                .filter(|n| !n.is_empty())
                .unwrap_or(reg);
            Some((name.to_owned(), f.regs.get(prog, word)?))
        })
        .collect()
}
