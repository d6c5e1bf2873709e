//! Backtraces from the kernel's own ORC tables, read from memory: no DWARF.
//!
//! The walk is the kernel's `unwind_next_frame` (arch/x86/kernel/
//! unwind_orc.c): for the current frame's ip (the call instruction's, ip -
//! 1, unless the ip is exact after an interrupt), the ORC entry says how to
//! find the caller's sp (from sp, bp or a register of a pt_regs), whether
//! the caller's ip is a return address below that sp (CALL) or in a
//! `struct pt_regs` there (REGS, or just its iret frame: REGS_PARTIAL), and
//! where the caller's bp is. Code without ORC (BPF, trampolines) is
//! unwound as if it kept a frame pointer; such frames are marked unreliable.
//!
//! Invariant that bounds the walk: on one stack, each frame's sp is above
//! the last one's (stacks grow down), so a walk that does not move up its
//! stack stops with "stack going in the wrong direction", and at most
//! [`MAX_FRAMES`] frames are taken. Every stop says why ([`End`]).

pub mod modules;
pub mod orc;
pub mod registers;

use kmem::prstatus::CpuRegs;

use crate::error::Result;
use crate::kernel::task::{self, Layout, Task};
use crate::program::Program;
use orc::{Found, Kind};
use registers::{Known, Start};

/// A stack deeper than this is taken for a loop.
pub const MAX_FRAMES: usize = 256;
/// x86-64 kernel and IRQ stack sizes (THREAD_SIZE, IRQ_STACK_SIZE without KASAN).
const STACK_SIZE: u64 = 16 << 10;

/// One frame.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    /// The frame's instruction pointer: a return address, or where the
    /// task was interrupted or stopped when `interrupted`.
    pub pc: u64,
    /// The stack pointer at `pc` (for a caller's frame: its sp once the
    /// callee has returned).
    pub sp: u64,
    /// The registers known at this frame (all of them after an interrupt).
    pub regs: Known,
    /// `pc` is exact (the first frame, or an interrupted one), not a return address.
    pub interrupted: bool,
    /// Found by the frame-pointer guess, not by ORC.
    pub guessed: bool,
}

/// Why a backtrace ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct End {
    /// The normal bottom (end of stack, user-mode registers) or a problem.
    pub ok: bool,
    /// Why, in words ("end of stack", "no unwind information for 0x...").
    pub why: String,
    /// The address the stop is about: the sp or pc where it stopped, the
    /// word that did not read, or the task without a start.
    pub at: u64,
}

/// A backtrace: its frames, innermost first, and why it ends.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The frames, the one where the task is first.
    pub frames: Vec<Frame>,
    /// Why the walk stopped after the last frame.
    pub end: End,
}

/// The stack an address is on, for the direction check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stack {
    Task,
    Irq(usize),
    /// An exception or entry stack, told apart by page.
    Other(u64),
}

/// The stacks a task's frames may be on: its own and the CPUs' IRQ stacks.
#[derive(Clone, Debug, Default)]
pub struct Stacks {
    /// The base (lowest address) of the task's kernel stack, `task->stack`.
    pub task: u64,
    /// Each CPU's IRQ stack as `[low, high)` addresses.
    pub irq: Vec<(u64, u64)>,
}

impl Stacks {
    fn of(&self, sp: u64) -> Stack {
        if sp.wrapping_sub(self.task) < STACK_SIZE {
            return Stack::Task;
        }
        if let Some(i) = self.irq.iter().position(|&(lo, hi)| sp >= lo && sp < hi) {
            return Stack::Irq(i);
        }
        Stack::Other(sp >> 12)
    }
}

/// Everything unwinding needs that is the same for every task: read once.
pub struct Unwinder {
    /// The ORC tables of the kernel image and the modules.
    pub tables: orc::Tables,
    /// Where the task readers find a task's members.
    pub layout: Layout,
    /// Each CPU's registers at the time of the dump, from its PRSTATUS
    /// note (none for the live kernel).
    pub cpus: Vec<CpuRegs>,
    /// The task each CPU runs.
    pub curr: Vec<u64>,
    irq_stacks: Vec<(u64, u64)>,
    /// The loaded modules' text and ORC tables.
    pub modules: Vec<modules::ModuleText>,
    /// Problems found while reading the above, for the reply.
    pub problems: Vec<String>,
}

impl Unwinder {
    /// Reads what every backtrace needs: the ORC tables (their format by
    /// the kernel release), the modules, the task layout, which task each
    /// CPU runs and the CPUs' registers. Only a missing task member is an
    /// error; the rest goes to [`Unwinder::problems`].
    pub fn new(prog: &Program) -> Result<Unwinder> {
        let layout = Layout::new(prog)?;
        let mut problems = Vec::new();
        let release = kernel_release(prog);
        let format = release
            .as_deref()
            .and_then(orc::Format::for_release)
            .unwrap_or_else(|| {
                problems.push(format!(
                    "kernel release unknown ({}): ORC entries read as 6.4+",
                    release.as_deref().unwrap_or("init_uts_ns unreadable")
                ));
                orc::Format::V3
            });
        let (mods, problem) = modules::read(prog);
        problems.extend(problem);
        let tables = orc::Tables::read(prog, format, mods.clone());
        problems.extend(tables.problems.iter().cloned());
        let curr = task::cpu_curr(prog).unwrap_or_else(|e| {
            problems.push(format!("which task each CPU runs: {e}"));
            Vec::new()
        });
        let irq_stacks = irq_stacks(prog, curr.len());
        Ok(Unwinder {
            tables,
            layout,
            cpus: kmem::prstatus::cpu_regs(prog.memory().notes()),
            curr,
            irq_stacks,
            modules: mods,
            problems,
        })
    }

    /// The CPU running `task`, if one is.
    pub fn running_on(&self, task: u64) -> Option<u32> {
        self.curr.iter().position(|&t| t == task).map(|c| c as u32)
    }

    /// The backtrace of a task.
    pub fn task_trace(&self, prog: &Program, t: &Task) -> Trace {
        match registers::start(prog, t, self.running_on(t.addr), &self.cpus) {
            Ok(s) => {
                let stacks = Stacks {
                    task: t.stack,
                    irq: self.irq_stacks.clone(),
                };
                unwind(prog, &self.tables, &stacks, s)
            }
            Err(registers::NoStart { ok, why }) => Trace {
                frames: Vec::new(),
                end: End {
                    ok,
                    why,
                    at: t.addr,
                },
            },
        }
    }
}

/// Unwinds from `start` with `tables`, on `stacks`.
pub fn unwind(prog: &Program, tables: &orc::Tables, stacks: &Stacks, start: Start) -> Trace {
    let mut frames = vec![Frame {
        pc: start.ip,
        sp: start.sp,
        regs: start.regs,
        interrupted: start.signal,
        guessed: false,
    }];
    let mut at = OrcState {
        prog,
        tables,
        ip: start.ip,
        sp: start.sp,
        bp: start.bp,
        regs: start.regs,
        signal: start.signal,
    };
    let end = loop {
        if frames.len() >= MAX_FRAMES {
            break stop(false, format!("more than {MAX_FRAMES} frames"), at.sp);
        }
        let prev = (at.sp, stacks.of(at.sp));
        let guessed = match at.step() {
            Ok(guessed) => guessed,
            Err(end) => break end,
        };
        if stacks.of(at.sp) == prev.1 && at.sp <= prev.0 {
            let why = format!(
                "stack going in the wrong direction (sp {:#x} after {:#x})",
                at.sp, prev.0
            );
            break stop(false, why, at.ip);
        }
        frames.push(Frame {
            pc: at.ip,
            sp: at.sp,
            regs: at.regs,
            interrupted: at.signal,
            guessed,
        });
    };
    Trace { frames, end }
}

/// Where unwinding stopped, and whether that is where a stack ends.
fn stop(ok: bool, why: String, at: u64) -> End {
    End { ok, why, at }
}

/// The ORC unwinder's state: one frame's registers, as the kernel's
/// `unwind_next_frame` keeps them.
struct OrcState<'p> {
    prog: &'p Program,
    tables: &'p orc::Tables,
    ip: u64,
    sp: u64,
    bp: u64,
    regs: Known,
    /// `ip` is exact (an interrupted frame), not a return address.
    signal: bool,
}

impl OrcState<'_> {
    fn read(&self, a: u64, what: &str) -> Result<u64, End> {
        self.prog
            .memory()
            .read_u64(a)
            .map_err(|e| stop(false, format!("{what} unreadable: {e}"), a))
    }

    /// Moves to the caller's frame; whether its entry was guessed (frame
    /// pointers, where no ORC table covers the ip).
    fn step(&mut self) -> Result<bool, End> {
        let (entry, guessed) = self.entry()?;
        let cfa = self.cfa(&entry)?;
        let (next_ip, new_sp) = self.caller(&entry, cfa)?;
        self.bp = match entry.bp_reg {
            orc::REG_UNDEFINED => self.regs.get(self.prog, registers::BP).unwrap_or(self.bp),
            orc::REG_PREV_SP => self.read(
                cfa.wrapping_add_signed(i64::from(entry.bp_offset)),
                "saved bp",
            )?,
            orc::REG_BP => self.read(
                self.bp.wrapping_add_signed(i64::from(entry.bp_offset)),
                "saved bp",
            )?,
            r => return Err(stop(false, format!("ORC bp register {r} unknown"), self.ip)),
        };
        self.ip = next_ip;
        self.sp = new_sp;
        Ok(guessed)
    }

    /// The ORC entry of this frame's ip, or why unwinding ends here.
    fn entry(&self) -> Result<(orc::Entry, bool), End> {
        let ip = self.ip;
        let lookup = if self.signal { ip } else { ip.wrapping_sub(1) };
        let (entry, guessed) = if ip == 0 {
            // A call through a NULL pointer: the return address is at sp.
            (NULL_ENTRY, false)
        } else {
            match self.tables.find(self.prog, lookup) {
                Found::Entry(e) => (e, false),
                Found::NoTable => (FP_ENTRY, true),
                Found::Bad(why) => return Err(stop(false, why, ip)),
            }
        };
        match entry.kind {
            Kind::EndOfStack => Err(stop(true, "end of stack".into(), self.sp)),
            Kind::Undefined => Err(stop(
                false,
                format!("no unwind information for {ip:#x}"),
                ip,
            )),
            Kind::Unknown(t) => Err(stop(false, format!("ORC entry of unknown type {t}"), ip)),
            _ => Ok((entry, guessed)),
        }
    }

    /// The canonical frame address: where the caller's stack pointer was
    /// before the call, from the entry's sp register and offset.
    fn cfa(&self, entry: &orc::Entry) -> Result<u64, End> {
        let reg = |word: usize, name: &str| {
            self.regs
                .get(self.prog, word)
                .ok_or_else(|| stop(false, format!("{name} unknown at {:#x}", self.ip), self.ip))
        };
        let off = i64::from(entry.sp_offset);
        Ok(match entry.sp_reg {
            orc::REG_SP => self.sp.wrapping_add_signed(off),
            orc::REG_BP => self.bp.wrapping_add_signed(off),
            orc::REG_SP_INDIRECT => self.read(self.sp, "indirect sp")?.wrapping_add_signed(off),
            orc::REG_BP_INDIRECT => self.read(self.bp.wrapping_add_signed(off), "indirect sp")?,
            orc::REG_R10 => reg(registers::R10, "r10")?,
            orc::REG_R13 => reg(registers::R13, "r13")?,
            orc::REG_DI => reg(registers::DI, "rdi")?,
            orc::REG_DX => reg(registers::DX, "rdx")?,
            r => return Err(stop(false, format!("ORC sp register {r} unknown"), self.ip)),
        })
    }

    /// The caller's ip and sp, from the return address at the CFA or from
    /// the registers an exception saved there; sets what registers the
    /// caller's frame knows.
    fn caller(&mut self, entry: &orc::Entry, cfa: u64) -> Result<(u64, u64), End> {
        let user_mode = |pt: u64| {
            self.read(pt.wrapping_add(registers::CS as u64 * 8), "pt_regs cs")
                .map(|cs| cs & 3 != 0)
        };
        let sp_word = registers::SP as u64 * 8;
        match entry.kind {
            Kind::Regs => {
                if user_mode(cfa)? {
                    return Err(stop(true, "user-mode registers (pt_regs)".into(), cfa));
                }
                let ip = self.read(cfa.wrapping_add(registers::IP as u64 * 8), "pt_regs ip")?;
                let sp = self.read(cfa.wrapping_add(sp_word), "pt_regs sp")?;
                self.regs = Known::PtRegs {
                    addr: cfa,
                    full: true,
                };
                self.signal = true;
                Ok((ip, sp))
            }
            Kind::RegsPartial => {
                let pt = cfa.wrapping_sub(registers::IRET_FRAME_OFFSET);
                if user_mode(pt)? {
                    return Err(stop(true, "user-mode registers (iret frame)".into(), cfa));
                }
                let ip = self.read(cfa, "iret frame ip")?;
                let sp = self.read(pt.wrapping_add(sp_word), "iret frame sp")?;
                self.regs = Known::PtRegs {
                    addr: pt,
                    full: false,
                };
                self.signal = true;
                Ok((ip, sp))
            }
            _ => {
                let ip = self.read(cfa.wrapping_sub(8), "return address")?;
                self.regs = Known::None;
                self.signal = entry.signal && self.tables.format() == orc::Format::V3;
                Ok((ip, cfa))
            }
        }
    }
}

/// The kernel's entry for ip 0: the caller's return address is at sp.
const NULL_ENTRY: orc::Entry = orc::Entry {
    sp_offset: 8,
    bp_offset: 0,
    sp_reg: orc::REG_SP,
    bp_reg: orc::REG_UNDEFINED,
    kind: Kind::Call,
    signal: false,
};

/// The kernel's guess for code without ORC: a frame-pointer frame.
const FP_ENTRY: orc::Entry = orc::Entry {
    sp_offset: 16,
    bp_offset: -16,
    sp_reg: orc::REG_BP,
    bp_reg: orc::REG_PREV_SP,
    kind: Kind::Call,
    signal: false,
};

/// `init_uts_ns.name.release`.
pub fn kernel_release(prog: &Program) -> Option<String> {
    let ns = prog.symbol("init_uts_ns")?;
    let (name, _) = prog.member_offset("struct uts_namespace", "name")?;
    let (release, _) = prog.member_offset("struct new_utsname", "release")?;
    let b = prog
        .memory()
        .read_cstr(ns.wrapping_add(name + release), 65)
        .ok()?;
    Some(String::from_utf8_lossy(&b).into_owned())
}

/// Each CPU's IRQ stack `[lo, hi)`: per-CPU `hardirq_stack_ptr` (up to
/// 6.1) or `pcpu_hot.hardirq_stack_ptr` (6.2+) points at its top word.
fn irq_stacks(prog: &Program, cpus: usize) -> Vec<(u64, u64)> {
    let var = prog.symbol("hardirq_stack_ptr").or_else(|| {
        let hot = prog.symbol("pcpu_hot")?;
        let (off, _) = prog.member_offset("struct pcpu_hot", "hardirq_stack_ptr")?;
        Some(hot.wrapping_add(off))
    });
    let Some(var) = var else { return Vec::new() };
    (0..cpus as u64)
        .filter_map(|cpu| {
            let base = prog.per_cpu_offset(cpu, 0).ok()?;
            let top = prog.memory().read_u64(base.wrapping_add(var)).ok()?;
            let hi = top.wrapping_add(8);
            Some((hi.wrapping_sub(STACK_SIZE), hi))
        })
        .collect()
}
