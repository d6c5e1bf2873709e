//! `ps`: each CPU's idle task (`swapper/N`, pid 0, as crash lists them),
//! then every task (drgn's `for_each_task`, the kernel's
//! `for_each_process_thread`), with pid, parent pid, CPU, state and name,
//! in crash's columns; `>` marks the task a CPU is running (its active
//! task, an idle task on an idle CPU).

use serde_json::json;

use crate::command::Reply;
use crate::error::{Error, Result};
use crate::format::json_addr;
use crate::kernel::task::{self, Layout};
use crate::program::Program;

/// `ps`: the idle tasks, then every task, a line each (it takes no
/// arguments).
pub fn run(prog: &mut Program, arg: &str) -> Result<Reply> {
    if !arg.is_empty() {
        return Err(Error::syntax(1, "usage: ps"));
    }
    let prog = &*prog;
    let layout = Layout::new(prog).map_err(|e| Error::at(1, e))?;
    let mut problems = Vec::new();
    let idle = task::idle_tasks(prog).unwrap_or_else(|e| {
        problems.push(format!("idle tasks: {e}"));
        Vec::new()
    });
    let curr = task::cpu_curr(prog).unwrap_or_default();
    let mut lines = vec!["   PID    PPID  CPU       TASK        ST  COMM".to_owned()];
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let mut show = |t: u64| match task::task(prog, &layout, t) {
        Ok(t) => {
            let running = curr.contains(&t.addr);
            lines.push(format!(
                "{}{:>6} {:>7} {:>4}  {:016x}  {}   {}",
                if running { '>' } else { ' ' },
                t.pid,
                t.ppid,
                t.cpu,
                t.addr,
                t.state,
                t.comm
            ));
            rows.push(json!({
                "pid": t.pid,
                "ppid": t.ppid,
                "cpu": t.cpu,
                "task": json_addr(t.addr),
                "state": t.state.to_string(),
                "comm": t.comm,
                "running": running,
            }));
        }
        Err(e) => errors.push(e.to_string()),
    };
    idle.iter().for_each(|&t| show(t));
    // Each task read as the walk finds it, while its page is cached.
    let stopped = task::visit_tasks(prog, &layout, &mut show).map_err(|e| Error::at(1, e))?;
    problems.extend(stopped);
    problems.extend(errors);
    for p in &problems {
        lines.push(format!("ps: {p}"));
    }
    Ok(Reply {
        text: lines.join("\n"),
        json: json!({ "tasks": rows, "problems": problems }),
    })
}
