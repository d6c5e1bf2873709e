//! One description per architecture, as drgn keeps one
//! `drgn_architecture_info` per architecture: every fact about a machine
//! that btfkit's readers and its encoder apply is a field of an [`Arch`]
//! value, and code that needs one asks the input's description for it,
//! never tests the machine itself.
//!
//! An input is matched to its description by its ELF header
//! ([`Arch::of_elf`]: machine, class and byte order). An input of an
//! architecture that has no description is refused by name
//! ([`Unsupported`]); it is never read with another architecture's rules.
//! x86-64 is described today ([`X86_64`]); the others Linux builds BTF
//! for are named ([`machine_name`]) so that the refusal says which.

#![warn(missing_docs)]

mod x86_64;

pub use x86_64::X86_64;

/// A kernel's (major, minor) version, as the rules below are dated.
pub type Version = (u32, u32);

/// Everything btfkit needs to know of one architecture.
#[derive(Debug)]
pub struct Arch {
    /// The name users know it by ("x86-64").
    pub name: &'static str,
    /// The ELF `e_machine` of its objects.
    pub machine: u16,
    /// Its `utsname.machine` (`uname -m`; kdump headers carry it).
    pub uname_machine: &'static str,
    /// Bytes in a pointer (and an ELF class: 8 is ELFCLASS64).
    pub pointer_bytes: u8,
    /// Whether its objects are little-endian.
    pub little_endian: bool,
    /// The psABI's integer argument registers in order, by DWARF number.
    pub int_arg_regs: &'static [u16],
    /// A register's name in reports, by DWARF number.
    pub reg_name: fn(u16) -> String,
    /// The relocations of a relocatable object's debug sections.
    pub debug_relocs: DebugRelocs,
    /// The relocation kinds of a call's 32-bit PC-relative target in code
    /// (a relocatable object's calls are resolved by them).
    pub pc32_relocs: &'static [u32],
    /// The kernels' BPF trampolines on this architecture.
    pub trampolines: Trampolines,
}

/// How a relocatable object's debug sections are relocated (`.ko` DWARF
/// refers to code and to other debug sections through them).
#[derive(Debug)]
pub struct DebugRelocs {
    /// The kind a linker writes for a voided relocation (a reference to a
    /// discarded section).
    pub none: u32,
    /// The kinds that write a symbol's value plus the addend, with the
    /// bytes each writes.
    pub absolute: &'static [(u32, usize)],
}

impl DebugRelocs {
    /// The bytes a relocation of `kind` writes; `None` for a kind debug
    /// sections do not use.
    pub fn width(&self, kind: u32) -> Option<usize> {
        self.absolute
            .iter()
            .find(|&&(k, _)| k == kind)
            .map(|&(_, w)| w)
    }
}

/// When BPF trampolines came to an architecture and what they take.
#[derive(Debug)]
pub struct Trampolines {
    /// The most argument registers' worth a trampoline passes (an
    /// aggregate of two eightbytes counts two), from each version on (in
    /// version order; the first is the kernel they came with).
    pub max_arg_regs: &'static [(Version, u32)],
}

impl Trampolines {
    /// The most argument registers' worth a trampoline of `version`
    /// passes; 0 before trampolines came.
    pub fn max_arg_regs(&self, version: Version) -> u32 {
        self.max_arg_regs
            .iter()
            .take_while(|&&(v, _)| v <= version)
            .last()
            .map_or(0, |&(_, n)| n)
    }
}

/// Every architecture btfkit describes.
pub const ALL: &[&Arch] = &[&X86_64];

/// An input of an architecture btfkit has no description of.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("architecture {what}: btfkit has no description of it{described}", described = described_note())]
pub struct Unsupported {
    /// The architecture as the input names it ("AArch64 (e_machine 183,
    /// 64-bit little-endian)", "aarch64 (utsname machine)").
    pub what: String,
}

fn described_note() -> String {
    let names: Vec<&str> = ALL.iter().map(|a| a.name).collect();
    format!(" (described: {})", names.join(", "))
}

impl Arch {
    /// The description of objects with this ELF header, or why there is
    /// none.
    pub fn of_elf(
        machine: u16,
        is_64: bool,
        little_endian: bool,
    ) -> Result<&'static Arch, Unsupported> {
        let bytes = if is_64 { 8 } else { 4 };
        ALL.iter()
            .copied()
            .find(|a| {
                a.machine == machine && a.pointer_bytes == bytes && a.little_endian == little_endian
            })
            .ok_or_else(|| Unsupported {
                what: format!(
                    "{} (e_machine {machine}, {}-bit {})",
                    machine_name(machine),
                    bytes * 8,
                    if little_endian {
                        "little-endian"
                    } else {
                        "big-endian"
                    }
                ),
            })
    }

    /// The description of a kernel whose `utsname.machine` (`uname -m`,
    /// a kdump header's) is `machine`.
    pub fn of_uname(machine: &str) -> Result<&'static Arch, Unsupported> {
        ALL.iter()
            .copied()
            .find(|a| a.uname_machine == machine)
            .ok_or_else(|| Unsupported {
                what: format!("{machine} (utsname machine)"),
            })
    }

    /// [`Arch::of_elf`] of a parsed ELF file.
    pub fn of_object(obj: &object::File<'_>) -> Result<&'static Arch, Unsupported> {
        use object::Object;
        Arch::of_elf(elf_machine(obj), obj.is_64(), obj.is_little_endian())
    }
}

/// The `e_machine` of an ELF file's header.
fn elf_machine(obj: &object::File<'_>) -> u16 {
    use object::read::elf::FileHeader;
    match obj {
        object::File::Elf64(f) => f.elf_header().e_machine(f.endian()),
        object::File::Elf32(f) => f.elf_header().e_machine(f.endian()),
        _ => 0,
    }
}

/// `struct pt_regs` members that tell which architecture a BTF is of,
/// checked in order, by `uname -m`-style names: a BTF carries no ELF
/// header, and these architectures need no description to be named.
pub const PT_REGS_MEMBERS: &[(&str, &[&str])] = &[
    ("x86_64", &["r15", "orig_ax"]),
    ("i386", &["bx", "orig_ax"]),
    ("arm64", &["pstate", "orig_x0"]),
    ("arm", &["uregs"]),
    ("powerpc", &["gpr", "nip"]),
    ("s390", &["psw", "gprs"]),
    ("riscv", &["epc", "ra"]),
    ("loongarch", &["csr_era"]),
    ("mips", &["cp0_epc"]),
];

/// The name of an ELF machine, for the ones Linux kernels are built for
/// (and `EM_<number>` for any other).
pub fn machine_name(machine: u16) -> String {
    use object::elf::*;
    let name = match machine {
        EM_X86_64 => "x86-64",
        EM_386 => "i386",
        EM_AARCH64 => "AArch64",
        EM_ARM => "Arm",
        EM_S390 => "s390x",
        EM_PPC64 => "PowerPC64",
        EM_PPC => "PowerPC",
        EM_RISCV => "RISC-V",
        EM_LOONGARCH => "LoongArch",
        EM_MIPS => "MIPS",
        EM_SPARCV9 => "SPARC64",
        EM_BPF => "BPF",
        _ => return format!("EM_{machine}"),
    };
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_64_is_described_and_others_are_refused_by_name() {
        assert_eq!(Arch::of_elf(62, true, true).map(|a| a.name), Ok("x86-64"));
        let arm64 = Arch::of_elf(183, true, true).unwrap_err().to_string();
        assert_eq!(
            arm64,
            "architecture AArch64 (e_machine 183, 64-bit little-endian): btfkit has no description of it (described: x86-64)"
        );
        assert!(Arch::of_elf(22, true, false)
            .unwrap_err()
            .to_string()
            .contains("s390x"));
        // Right machine, wrong class or byte order: never read as x86-64.
        assert!(Arch::of_elf(62, false, true).is_err());
        assert!(Arch::of_elf(62, true, false).is_err());
        assert_eq!(machine_name(4242), "EM_4242");
        assert_eq!(Arch::of_uname("x86_64").map(|a| a.name), Ok("x86-64"));
        assert!(Arch::of_uname("aarch64")
            .unwrap_err()
            .to_string()
            .starts_with("architecture aarch64 (utsname machine)"));
    }

    #[test]
    fn trampoline_arguments_by_version() {
        let t = &X86_64.trampolines;
        assert_eq!(t.max_arg_regs((5, 4)), 0);
        assert_eq!(t.max_arg_regs((6, 1)), 6);
        assert_eq!(t.max_arg_regs((6, 5)), 12);
        assert_eq!(t.max_arg_regs((7, 2)), 12);
    }
}
