//! Whether the code after a call uses the callee's return value: evidence
//! that a function whose value a compiler may have removed (abi.rs,
//! `removed_return`) still returns it. rax is caller-saved, so an
//! instruction right after `call f` that reads rax (or a part of it) reads
//! what `f` returned; a compiler that removed `f`'s value reads nothing
//! there (`__register_event.part.0` on Debian's 6.1: `call`, then `mov
//! %eax,%r12d`).
//!
//! Invariant: only behind a `call rel32` that ends at the return address
//! and reaches the callee's entry (EntryCode::call_target: by its
//! displacement, or in a relocatable object by its relocation), and only an
//! instruction whose encoding is in a short list of those that surely read
//! rax, eax or al, in every section with code there. Anything else is no
//! evidence: the value stays unproven.

use super::entry_code::EntryCode;

/// Whether the call that returns to `return_pc` calls `callee` and the
/// instruction at `return_pc` reads its return value.
pub fn reads_return_value(code: &EntryCode<'_>, return_pc: u64, callee: u64) -> bool {
    let called = return_pc.checked_sub(5).and_then(|at| code.call_target(at)) == Some(callee);
    let mut after = code.code_at(return_pc).peekable();
    called && after.peek().is_some() && after.all(reads_rax)
}

/// Whether the x86-64 instruction at the start of `code` reads rax, eax, ax
/// or al, by a list of encodings (an optional REX prefix, then one of
/// them); false for every other instruction.
fn reads_rax(code: &[u8]) -> bool {
    let (rex, rest) = match code.split_first() {
        Some((&p, rest)) if p & 0xf0 == 0x40 => (p, rest),
        _ => (0, code),
    };
    // REX.R extends ModRM.reg, REX.B ModRM.rm: set, they name r8-r15.
    let (ext_reg, ext_rm) = (rex & 0b100 != 0, rex & 0b001 != 0);
    // ModRM fields (mod, reg, rm); a register operand has mod 3.
    let modrm = |m: u8| (m >> 6, (m >> 3) & 7, m & 7);
    let reg_is_rax = |m: u8| modrm(m).1 == 0 && !ext_reg;
    let rm_is_rax = |m: u8| matches!(modrm(m), (3, _, 0)) && !ext_rm;
    match *rest {
        // mov reg -> r/m: the register is the source.
        [0x88 | 0x89, m, ..] => reg_is_rax(m),
        // test, cmp and add r/m, reg: both operands are read.
        [0x84 | 0x85 | 0x38 | 0x39 | 0x00 | 0x01, m, ..] => reg_is_rax(m) || rm_is_rax(m),
        // movsxd, movzx, movsx reg <- r/m.
        [0x63, m, ..] | [0x0f, 0xb6 | 0xb7 | 0xbe | 0xbf, m, ..] => rm_is_rax(m),
        // add (/0), and (/4), sub (/5) and cmp (/7) imm, r/m; test imm,
        // r/m (/0).
        [0x80 | 0x81 | 0x83, m, ..] => matches!(modrm(m).1, 0 | 4 | 5 | 7) && rm_is_rax(m),
        [0xf6 | 0xf7, m, ..] => modrm(m).1 == 0 && rm_is_rax(m),
        // cmp and test imm with al, eax or rax; cltq, cltd, cqto.
        [0x3c | 0x3d | 0xa8 | 0xa9, ..] | [0x98 | 0x99, ..] => true,
        // lea with rax as the base (no SIB byte, not RIP-relative).
        [0x8d, m, ..] => matches!(modrm(m), (1 | 2, _, 0)) && !ext_rm,
        // push rax.
        [0x50, ..] => !ext_rm,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::reads_rax;

    #[test]
    fn reads_rax_on_encodings_as_objdump_prints_them() {
        for (bytes, insn, reads) in [
            (&[0x89, 0xc3][..], "mov %eax,%ebx", true),
            (&[0x41, 0x89, 0xc4], "mov %eax,%r12d", true),
            (&[0x48, 0x89, 0xc5], "mov %rax,%rbp", true),
            (&[0x44, 0x89, 0xe0], "mov %r12d,%eax", false),
            (&[0x89, 0xd8], "mov %ebx,%eax", false),
            (&[0x48, 0x89, 0x43, 0x08], "mov %rax,0x8(%rbx)", true),
            (&[0x85, 0xc0], "test %eax,%eax", true),
            (&[0x84, 0xc0], "test %al,%al", true),
            (&[0x48, 0x85, 0xdb], "test %rbx,%rbx", false),
            (&[0x4c, 0x01, 0xe0], "add %r12,%rax", true),
            (&[0x49, 0x01, 0xc4], "add %rax,%r12", true),
            (&[0x48, 0x63, 0xd0], "movslq %eax,%rdx", true),
            (&[0x4c, 0x63, 0xe0], "movslq %eax,%r12", true),
            (&[0x48, 0x63, 0xc3], "movslq %ebx,%rax", false),
            (&[0x0f, 0xb6, 0xc0], "movzbl %al,%eax", true),
            (&[0x83, 0xf8, 0xfc], "cmp $0xfffffffc,%eax", true),
            (&[0x83, 0xc0, 0x01], "add $0x1,%eax", true),
            (&[0x48, 0x83, 0xc3, 0x01], "add $0x1,%rbx", false),
            (
                &[0x83, 0xc8, 0x01],
                "or $0x1,%eax (left out of the list)",
                false,
            ),
            (&[0x8d, 0x50, 0x01], "lea 0x1(%rax),%edx", true),
            (&[0x48, 0x8d, 0x04, 0x24], "lea (%rsp),%rax", false),
            (&[0x41, 0x8d, 0x40, 0x01], "lea 0x1(%r8),%eax", false),
            (
                &[0x48, 0x3d, 0x00, 0xf0, 0xff, 0xff],
                "cmp $0xfffffffffffff000,%rax",
                true,
            ),
            (&[0x48, 0x98], "cltq", true),
            (&[0x31, 0xc0], "xor %eax,%eax", false),
            (&[0xb8, 0x01, 0, 0, 0], "mov $0x1,%eax", false),
            (&[0x48, 0x8b, 0x03], "mov (%rbx),%rax", false),
            (&[0x41, 0x50], "push %r8", false),
            (&[0x50], "push %rax", true),
            (
                &[0x66, 0x89, 0xc3],
                "mov %ax,%bx (a prefix the list leaves out)",
                false,
            ),
            (&[], "nothing", false),
        ] {
            assert_eq!(reads_rax(bytes), reads, "{insn}");
        }
    }
}
