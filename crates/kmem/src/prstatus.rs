//! Per-CPU register sets from a dump's NT_PRSTATUS notes.
//!
//! Both the kernel (crash_save_cpu) and QEMU (dump-guest-memory) write one
//! `CORE` NT_PRSTATUS note per CPU, in CPU order, so the n-th note is CPU
//! n's. On x86-64 `struct elf_prstatus` holds `pr_pid` at byte 32 and
//! `pr_reg` (a `struct user_regs_struct`, 27 registers) at byte 112.

use crate::Note;

/// The note type of a CPU's register set.
pub const NT_PRSTATUS: u32 = 1;

const PR_PID: usize = 32;
const PR_REG: usize = 112;

/// The names of `struct user_regs_struct`'s registers, in its order.
pub const REG_NAMES: [&str; 27] = [
    "r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx", "rsi",
    "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs",
    "gs",
];

/// One CPU's registers when the dump was taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuRegs {
    /// The CPU, by the note's position.
    pub cpu: usize,
    /// `pr_pid`: the task's pid for the kernel's notes, the CPU index + 1 for QEMU's.
    pub pid: u32,
    /// In `struct user_regs_struct` order ([`REG_NAMES`]).
    pub regs: [u64; 27],
}

impl CpuRegs {
    /// A register by its [`REG_NAMES`] name (`"rip"`, `"cs"`...).
    pub fn get(&self, name: &str) -> Option<u64> {
        let i = REG_NAMES.iter().position(|&n| n == name)?;
        self.regs.get(i).copied()
    }
    /// The instruction pointer.
    pub fn rip(&self) -> u64 {
        self.regs[16]
    }
    /// The stack pointer.
    pub fn rsp(&self) -> u64 {
        self.regs[19]
    }
    /// The frame pointer.
    pub fn rbp(&self) -> u64 {
        self.regs[4]
    }
    /// The CPU was in user mode (the low bits of CS are the privilege level).
    pub fn user_mode(&self) -> bool {
        self.regs[17] & 3 != 0
    }
}

/// Every `CORE` NT_PRSTATUS note's registers; a note too short for them is
/// skipped but still counts as its CPU.
pub fn cpu_regs(notes: &[Note]) -> Vec<CpuRegs> {
    notes
        .iter()
        .filter(|n| n.name == "CORE" && n.ntype == NT_PRSTATUS)
        .enumerate()
        .filter_map(|(cpu, n)| {
            let word = |at: usize| -> Option<u64> {
                let b = n.desc.get(at..at + 8)?;
                Some(u64::from_le_bytes(b.try_into().ok()?))
            };
            let pid = u32::from_le_bytes(n.desc.get(PR_PID..PR_PID + 4)?.try_into().ok()?);
            let mut regs = [0u64; 27];
            for (i, r) in regs.iter_mut().enumerate() {
                *r = word(PR_REG + i * 8)?;
            }
            Some(CpuRegs { cpu, pid, regs })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_by_position_and_short_notes_skipped() {
        let mut desc = vec![0u8; PR_REG + 27 * 8];
        desc[PR_PID..PR_PID + 4].copy_from_slice(&7u32.to_le_bytes());
        desc[PR_REG + 16 * 8..PR_REG + 17 * 8]
            .copy_from_slice(&0xffff_ffff_8100_0000u64.to_le_bytes());
        let note = |desc: Vec<u8>| Note {
            name: "CORE".into(),
            ntype: NT_PRSTATUS,
            desc,
        };
        let notes = vec![note(vec![0; 40]), note(desc)];
        let regs = cpu_regs(&notes);
        assert_eq!(regs.len(), 1);
        assert_eq!((regs[0].cpu, regs[0].pid), (1, 7));
        assert_eq!(regs[0].rip(), 0xffff_ffff_8100_0000);
        assert_eq!(regs[0].get("rip"), Some(regs[0].rip()));
    }
}
