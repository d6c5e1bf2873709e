//! x86-64 registers by their DWARF numbers: which carry integer arguments,
//! and their names in reports. gimli's `X86_64` holds the numbering.

use gimli::{Register, X86_64};

/// Integer argument registers of the SysV ABI, in order: rdi, rsi, rdx,
/// rcx, r8, r9.
pub const ARG_REGS: [u16; 6] = [
    X86_64::RDI.0,
    X86_64::RSI.0,
    X86_64::RDX.0,
    X86_64::RCX.0,
    X86_64::R8.0,
    X86_64::R9.0,
];

/// A register's name: gimli's for the general-purpose and SSE registers,
/// `rip` for DWARF's return-address column (gimli's `RA`), `regN` past
/// xmm15 (no argument arrives there).
pub fn reg_name(r: u16) -> String {
    match r {
        16 => "rip".to_owned(),
        0..=32 => {
            X86_64::register_name(Register(r)).map_or_else(|| format!("reg{r}"), str::to_owned)
        }
        _ => format!("reg{r}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{reg_name, ARG_REGS};

    #[test]
    fn names_as_reports_print_them() {
        let args: Vec<String> = ARG_REGS.iter().map(|&r| reg_name(r)).collect();
        assert_eq!(args, ["rdi", "rsi", "rdx", "rcx", "r8", "r9"]);
        assert_eq!(reg_name(0), "rax");
        assert_eq!(reg_name(15), "r15");
        assert_eq!(reg_name(16), "rip");
        assert_eq!(reg_name(17), "xmm0");
        assert_eq!(reg_name(32), "xmm15");
        assert_eq!(reg_name(33), "reg33");
    }
}
