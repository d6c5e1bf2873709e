//! x86-64: the SysV psABI, ELF64 little-endian.

use gimli::{Register, X86_64 as Regs};
use object::elf;

use crate::{Arch, DebugRelocs, Trampolines};

/// A register's name: gimli's for the general-purpose and SSE registers,
/// `rip` for DWARF's return-address column (gimli's `RA`), `regN` past
/// xmm15 (no argument arrives there).
fn reg_name(r: u16) -> String {
    match r {
        16 => "rip".to_owned(),
        0..=32 => Regs::register_name(Register(r)).map_or_else(|| format!("reg{r}"), str::to_owned),
        _ => format!("reg{r}"),
    }
}

/// x86-64 Linux.
pub const X86_64: Arch = Arch {
    name: "x86-64",
    machine: elf::EM_X86_64,
    uname_machine: "x86_64",
    pointer_bytes: 8,
    little_endian: true,
    // rdi, rsi, rdx, rcx, r8, r9.
    int_arg_regs: &[
        Regs::RDI.0,
        Regs::RSI.0,
        Regs::RDX.0,
        Regs::RCX.0,
        Regs::R8.0,
        Regs::R9.0,
    ],
    reg_name,
    // A `__thread` variable's location is its offset in the thread's TLS
    // block (DW_OP_GNU_push_tls_address): the DTPOFF kinds.
    debug_relocs: DebugRelocs {
        none: elf::R_X86_64_NONE,
        absolute: &[
            (elf::R_X86_64_64, 8),
            (elf::R_X86_64_DTPOFF64, 8),
            (elf::R_X86_64_32, 4),
            (elf::R_X86_64_32S, 4),
            (elf::R_X86_64_DTPOFF32, 4),
        ],
    },
    pc32_relocs: &[elf::R_X86_64_PC32, elf::R_X86_64_PLT32],
    // Trampolines came with 5.5 and took arguments in the six argument
    // registers only; 6.5 ("bpf, x86: allow function arguments up to 12
    // for TRACING") passes the rest from the stack, up to
    // MAX_BPF_FUNC_ARGS registers' worth (arch_prepare_bpf_trampoline's
    // nr_regs).
    trampolines: Trampolines {
        max_arg_regs: &[((5, 5), 6), ((6, 5), 12)],
    },
};

#[cfg(test)]
mod tests {
    use super::X86_64;

    #[test]
    fn register_names_as_reports_print_them() {
        let name = X86_64.reg_name;
        let args: Vec<String> = X86_64.int_arg_regs.iter().map(|&r| name(r)).collect();
        assert_eq!(args, ["rdi", "rsi", "rdx", "rcx", "r8", "r9"]);
        assert_eq!(name(0), "rax");
        assert_eq!(name(15), "r15");
        assert_eq!(name(16), "rip");
        assert_eq!(name(17), "xmm0");
        assert_eq!(name(32), "xmm15");
        assert_eq!(name(33), "reg33");
    }
}
