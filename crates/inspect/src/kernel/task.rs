//! Tasks: the kernel's `for_each_process_thread` (every thread of every
//! process on `init_task.tasks`, through `signal->thread_head`), each
//! CPU's idle task (which no list has), a task's pid, parent, CPU, state
//! and name, and which task each CPU runs.
//!
//! Walks are bounded: a node seen twice (a list that loops) or more nodes
//! than [`MAX_TASKS`] ends the walk with a [`Walk::problem`] that says
//! where, and what was found so far stays.

use rustc_hash::FxHashSet;

use crate::error::{Error, Result};
use crate::program::Program;

/// More tasks than the kernel's PID_MAX_LIMIT (4M) cannot be real.
pub const MAX_TASKS: usize = 1 << 22;

/// Offsets in `struct task_struct` and `struct signal_struct`, from BTF.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    tasks: u64,
    pid: u64,
    tgid: u64,
    real_parent: u64,
    comm: u64,
    state: u64,
    exit_state: u64,
    cpu: u64,
    stack: u64,
    thread_sp: u64,
    signal: u64,
    thread_node: u64,
    thread_head: u64,
    on_cpu: u64,
}

impl Layout {
    /// The offsets from the program's BTF, whichever names this kernel
    /// version gives the members (`__state` or `state`, `cpu` in
    /// `thread_info` or not); [`Error::NoTaskMember`] for one it lacks.
    pub fn new(prog: &Program) -> Result<Layout> {
        let t = |path: &str| member(prog, "struct task_struct", path);
        // 5.14 renamed `state` to `__state`; x86 keeps `cpu` in thread_info since 5.16.
        let state = t("__state").or_else(|_| t("state"))?;
        let cpu = t("thread_info.cpu").or_else(|_| t("cpu"))?;
        Ok(Layout {
            tasks: t("tasks")?,
            pid: t("pid")?,
            tgid: t("tgid")?,
            real_parent: t("real_parent")?,
            comm: t("comm")?,
            state,
            exit_state: t("exit_state")?,
            cpu,
            stack: t("stack")?,
            thread_sp: t("thread.sp")?,
            signal: t("signal")?,
            thread_node: t("thread_node")?,
            on_cpu: t("on_cpu")?,
            thread_head: member(prog, "struct signal_struct", "thread_head")?,
        })
    }
}

/// The byte offset of a member the task readers need.
fn member(prog: &Program, ty: &'static str, path: &str) -> Result<u64> {
    prog.member_offset(ty, path)
        .map(|(o, _)| o)
        .ok_or_else(|| Error::NoTaskMember {
            ty,
            member: path.to_owned(),
        })
}

/// What `ps` shows of a task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// The `task_struct`'s kernel virtual address.
    pub addr: u64,
    /// `pid`: the thread's id.
    pub pid: u32,
    /// `tgid`: its process's id (the thread group leader's pid).
    pub tgid: u32,
    /// The real parent's tgid, as /proc's PPid.
    pub ppid: u32,
    /// The CPU it runs on or last ran on.
    pub cpu: u32,
    /// The kernel's state letter (`R S D T t X Z P I`).
    pub state: char,
    /// `comm`: its name, up to 16 bytes.
    pub comm: String,
    /// The base of its kernel stack.
    pub stack: u64,
    /// `thread.sp`: where a task that is not running saved its registers.
    pub thread_sp: u64,
    /// `on_cpu`: it is running on its CPU (at the time of the dump).
    pub on_cpu: bool,
}

/// Tasks found by a walk, and why it stopped early, if it did.
#[derive(Debug, Default)]
pub struct Walk {
    /// The `task_struct` addresses, in list order.
    pub tasks: Vec<u64>,
    /// Why the walk stopped before its end (None: it did not).
    pub problem: Option<String>,
}

fn read_u32(prog: &Program, addr: u64) -> Result<u32> {
    prog.memory()
        .read_u32(addr)
        .map_err(|error| Error::Reading { addr, error })
}

fn read_u64(prog: &Program, addr: u64) -> Result<u64> {
    prog.memory()
        .read_u64(addr)
        .map_err(|error| Error::Reading { addr, error })
}

/// Every thread of every process but the idle tasks, in list order, like
/// the kernel's `for_each_process_thread` and drgn's `for_each_task`.
pub fn for_each_task(prog: &Program, l: &Layout) -> Result<Walk> {
    let mut tasks = Vec::new();
    let problem = visit_tasks(prog, l, |t| tasks.push(t))?;
    Ok(Walk { tasks, problem })
}

/// As [`for_each_task`], each task handed to `visit` when the walk finds
/// it: read then, its page is still among the dump's last pages decoded
/// (a compressed dump decodes a page again once 256 others came after it).
/// Returns why the walk stopped early, if it did.
pub fn visit_tasks(
    prog: &Program,
    l: &Layout,
    mut visit: impl FnMut(u64),
) -> Result<Option<String>> {
    let init = prog
        .symbol("init_task")
        .ok_or(Error::NoTaskSymbol("init_task"))?;
    let mut seen = FxHashSet::default();
    let mut count = 0usize;
    let head = init.wrapping_add(l.tasks);
    let mut node = head;
    loop {
        node = match read_u64(prog, node) {
            Ok(n) => n,
            Err(e) => return Ok(Some(format!("task list: {e}"))),
        };
        if node == head {
            return Ok(None);
        }
        if !seen.insert(node) || seen.len() > MAX_TASKS {
            return Ok(Some(format!("task list loops at {node:#x}")));
        }
        let leader = node.wrapping_sub(l.tasks);
        if let Err(e) = threads(prog, l, leader, &mut count, &mut visit) {
            return Ok(Some(e.to_string()));
        }
    }
}

/// The threads of a process (its leader first, as the kernel lists them);
/// `count`: tasks visited so far.
fn threads(
    prog: &Program,
    l: &Layout,
    leader: u64,
    count: &mut usize,
    visit: &mut impl FnMut(u64),
) -> Result<()> {
    let signal = read_u64(prog, leader.wrapping_add(l.signal))?;
    let head = signal.wrapping_add(l.thread_head);
    let mut node = head;
    let mut seen = FxHashSet::default();
    loop {
        node = read_u64(prog, node).map_err(|e| Error::Threads {
            leader,
            error: Box::new(e),
        })?;
        if node == head {
            return Ok(());
        }
        if !seen.insert(node) || *count > MAX_TASKS {
            return Err(Error::ThreadsLoop { leader, node });
        }
        *count += 1;
        visit(node.wrapping_sub(l.thread_node));
    }
}

/// The state letter of `fs/proc/array.c`'s task_state_array: the highest
/// reported bit of `__state | exit_state` (R 0, S 1, D 2, T 4, t 8, X 0x10,
/// Z 0x20, P 0x40), and I for TASK_IDLE (UNINTERRUPTIBLE | NOLOAD, 0x402).
/// These values are the kernel's ABI for /proc since 4.14.
pub fn state_char(state: u32, exit_state: u32) -> char {
    const REPORT: u32 = 0x7f;
    const TASK_IDLE: u32 = 0x402;
    const RTLOCK_WAIT: u32 = 0x1000;
    if state == TASK_IDLE {
        return 'I';
    }
    let mut s = (state | exit_state) & REPORT;
    if state == RTLOCK_WAIT {
        s = 2;
    }
    let index = (32 - s.leading_zeros()) as usize;
    "RSDTtXZPI".chars().nth(index).unwrap_or('?')
}

/// Reads what `ps` shows of the task at `addr`.
pub fn task(prog: &Program, l: &Layout, addr: u64) -> Result<Task> {
    let comm = prog
        .memory()
        .read_cstr(addr.wrapping_add(l.comm), 16)
        .map_err(|error| Error::TaskName { addr, error })?;
    let parent = read_u64(prog, addr.wrapping_add(l.real_parent))?;
    Ok(Task {
        addr,
        pid: read_u32(prog, addr.wrapping_add(l.pid))?,
        tgid: read_u32(prog, addr.wrapping_add(l.tgid))?,
        ppid: read_u32(prog, parent.wrapping_add(l.tgid))?,
        cpu: read_u32(prog, addr.wrapping_add(l.cpu))?,
        state: state_char(
            read_u32(prog, addr.wrapping_add(l.state))?,
            read_u32(prog, addr.wrapping_add(l.exit_state))?,
        ),
        comm: String::from_utf8_lossy(&comm).into_owned(),
        stack: read_u64(prog, addr.wrapping_add(l.stack))?,
        thread_sp: read_u64(prog, addr.wrapping_add(l.thread_sp))?,
        on_cpu: read_u32(prog, addr.wrapping_add(l.on_cpu))? != 0,
    })
}

/// The task each CPU runs: per-CPU `current_task` (up to 6.1) or
/// `pcpu_hot.current_task` (6.2+), for CPUs 0 to `nr_cpu_ids - 1`.
pub fn cpu_curr(prog: &Program) -> Result<Vec<u64>> {
    let var = match prog.symbol("current_task") {
        Some(v) => v,
        None => {
            let hot = prog.symbol("pcpu_hot").ok_or(Error::NoCurrentTask)?;
            hot.wrapping_add(member(prog, "struct pcpu_hot", "current_task")?)
        }
    };
    (0..nr_cpu_ids(prog)?)
        .map(|cpu| {
            let base = prog.per_cpu_offset(cpu, 0)?;
            read_u64(prog, base.wrapping_add(var))
        })
        .collect()
}

/// `nr_cpu_ids`: CPUs 0 to this minus one may exist.
fn nr_cpu_ids(prog: &Program) -> Result<u64> {
    let nr = prog
        .symbol("nr_cpu_ids")
        .ok_or(Error::NoTaskSymbol("nr_cpu_ids"))
        .and_then(|a| read_u32(prog, a).map_err(|_| Error::Unreadable("nr_cpu_ids")))?;
    Ok(u64::from(nr.min(8192)))
}

/// Each CPU's idle task (`swapper/N`, pid 0), as drgn's `idle_task`:
/// per-CPU `runqueues.idle`, for the CPUs that have one (0: CPU 0's is
/// `init_task`).
pub fn idle_tasks(prog: &Program) -> Result<Vec<u64>> {
    let rq = prog
        .symbol("runqueues")
        .ok_or(Error::NoTaskSymbol("runqueues"))?;
    let off = member(prog, "struct rq", "idle")?;
    let mut out = Vec::new();
    for cpu in 0..nr_cpu_ids(prog)? {
        let base = prog.per_cpu_offset(cpu, 0)?;
        match read_u64(prog, base.wrapping_add(rq).wrapping_add(off))? {
            0 => break,
            t => out.push(t),
        }
    }
    Ok(out)
}

/// A task by pid (the first thread with that pid) among `tasks`.
pub fn find_pid(prog: &Program, l: &Layout, tasks: &[u64], pid: u32) -> Option<u64> {
    tasks
        .iter()
        .copied()
        .find(|&t| read_u32(prog, t.wrapping_add(l.pid)).is_ok_and(|p| p == pid))
}

#[cfg(test)]
mod tests {
    use super::state_char;

    #[test]
    fn state_letters_as_proc_gives_them() {
        assert_eq!(state_char(0, 0), 'R');
        assert_eq!(state_char(1, 0), 'S');
        assert_eq!(state_char(2, 0), 'D');
        assert_eq!(state_char(0x402, 0), 'I');
        assert_eq!(state_char(0, 0x20), 'Z');
        assert_eq!(state_char(0x100, 0x10), 'X');
        assert_eq!(state_char(0x80, 0), 'R');
    }
}
