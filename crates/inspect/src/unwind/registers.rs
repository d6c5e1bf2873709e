//! Where an unwind starts, and the registers known along the way.
//!
//! A task that a CPU was running when the dump was taken starts from that
//! CPU's NT_PRSTATUS registers. A task that is not running starts from
//! what `__switch_to_asm` pushed: `thread.sp` points at a `struct
//! inactive_task_frame` whose last words are the saved bp and the return
//! address into `__schedule` (or `ret_from_fork` for a task that never ran).
//! A running task without a register note (the live kernel) has no known
//! registers: its stack changes under us.

use kmem::prstatus::CpuRegs;

use crate::kernel::task::Task;
use crate::program::Program;

/// `struct pt_regs` (x86-64), whose first 21 words have the order of
/// NT_PRSTATUS' `user_regs_struct`: word indexes of the registers ORC uses.
pub const BP: usize = 4;
/// r10's word.
pub const R10: usize = 7;
/// rdx's word.
pub const DX: usize = 12;
/// rdi's word.
pub const DI: usize = 14;
/// rip's word: the first of the iret frame.
pub const IP: usize = 16;
/// cs's word: its low two bits are the privilege level (3: user mode).
pub const CS: usize = 17;
/// rsp's word.
pub const SP: usize = 19;
/// `pt_regs` from `ip` on: what an exception or interrupt pushed.
pub const IRET_FRAME_OFFSET: u64 = (IP * 8) as u64;
/// r13's word.
pub const R13: usize = 2;
/// The argument registers of the x86-64 calling convention, as pt_regs words.
pub const ARGS: [(&str, usize); 6] = [
    ("rdi", 14),
    ("rsi", 13),
    ("rdx", 12),
    ("rcx", 11),
    ("r8", 9),
    ("r9", 8),
];

/// The registers known at a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Known {
    /// None: only ip, sp and bp, which the unwinder tracks itself.
    None,
    /// A CPU's register note: all of them.
    Cpu([u64; 21]),
    /// A `struct pt_regs` in memory; `full` false when only the iret frame is valid.
    PtRegs {
        /// The `struct pt_regs`' kernel virtual address.
        addr: u64,
        /// Every word is valid (a full pt_regs); false: only the iret frame
        /// (ip, cs, flags, sp, ss).
        full: bool,
    },
}

impl Known {
    /// Register `word` (a pt_regs word index), if known.
    pub fn get(&self, prog: &Program, word: usize) -> Option<u64> {
        match *self {
            Known::None => None,
            Known::Cpu(r) => r.get(word).copied(),
            Known::PtRegs { addr, full } => {
                if !full && word < IP {
                    return None;
                }
                prog.memory()
                    .read_u64(addr.wrapping_add(word as u64 * 8))
                    .ok()
            }
        }
    }

    /// Whether every register is known: a CPU's note or a full pt_regs.
    pub fn is_full(&self) -> bool {
        matches!(self, Known::Cpu(_) | Known::PtRegs { full: true, .. })
    }
}

/// Where a task's unwind begins.
#[derive(Clone, Copy, Debug)]
pub struct Start {
    /// The instruction pointer the unwind starts at.
    pub ip: u64,
    /// The stack pointer there.
    pub sp: u64,
    /// The frame pointer (rbp) there.
    pub bp: u64,
    /// The other registers known there.
    pub regs: Known,
    /// `ip` is exact (interrupted), not a return address.
    pub signal: bool,
    /// The CPU's registers, when the task was running.
    pub cpu: Option<u32>,
}

/// Why a task has no starting registers: part of the reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoStart {
    /// A normal state, not a problem: the task runs in user mode, so its
    /// trace has no kernel frames and ends at its user-mode registers.
    pub ok: bool,
    /// Why, in words.
    pub why: String,
}

impl From<String> for NoStart {
    fn from(why: String) -> NoStart {
        NoStart { ok: false, why }
    }
}

impl From<&str> for NoStart {
    fn from(why: &str) -> NoStart {
        why.to_owned().into()
    }
}

/// The starting registers of `task`; `running` is the CPU running it, if one does.
pub fn start(
    prog: &Program,
    task: &Task,
    running: Option<u32>,
    cpus: &[CpuRegs],
) -> Result<Start, NoStart> {
    if let Some(cpu) = running {
        let note = cpus
            .iter()
            .find(|c| c.cpu == cpu as usize && c.rip() != 0)
            .ok_or_else(|| {
                format!(
                    "running on CPU {cpu}, whose registers the dump does not have (live kernel)"
                )
            })?;
        if note.user_mode() {
            return Err(NoStart {
                ok: true,
                why: format!(
                    "running in user mode on CPU {cpu} at {:#x}: no kernel frames",
                    note.rip()
                ),
            });
        }
        let mut words = [0u64; 21];
        words.copy_from_slice(&note.regs[..21]);
        return Ok(Start {
            ip: note.rip(),
            sp: note.rsp(),
            bp: note.rbp(),
            regs: Known::Cpu(words),
            signal: true,
            cpu: Some(cpu),
        });
    }
    let size = prog
        .type_size("struct inactive_task_frame")
        .ok_or("the BTF has no struct inactive_task_frame")?;
    let member = |m: &str| {
        prog.member_offset("struct inactive_task_frame", m)
            .map(|(o, _)| o)
            .ok_or_else(|| format!("the BTF has no inactive_task_frame member {m}"))
    };
    let frame = task.thread_sp;
    let read = |o: u64| {
        prog.memory()
            .read_u64(frame.wrapping_add(o))
            .map_err(|e| format!("saved registers at thread.sp {frame:#x}: {e}"))
    };
    let ip = read(member("ret_addr")?)?;
    let bp = read(member("bp")?)?;
    Ok(Start {
        ip,
        sp: frame.wrapping_add(size),
        bp,
        regs: Known::None,
        signal: prog.symbol("ret_from_fork") == Some(ip),
        cpu: None,
    })
}
