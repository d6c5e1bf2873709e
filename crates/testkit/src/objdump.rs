//! objdump as the oracle for what machine code does.

use std::path::Path;
use std::process::Command;

/// objdump's instructions of the function `name` in `elf` (AT&T syntax,
/// without addresses), from its entry to its first `ret`: the path a call
/// takes when every conditional branch on the way falls through.
pub fn code_to_first_ret(elf: &Path, name: &str) -> Vec<String> {
    let out = crate::run_ok(
        Command::new("objdump")
            .args(["-d", "--no-show-raw-insn", &format!("--disassemble={name}")])
            .arg(elf),
    );
    let mut code = Vec::new();
    for line in String::from_utf8_lossy(&out).lines() {
        let Some((_, insn)) = line.split_once(":\t") else {
            continue;
        };
        let insn = insn.trim().to_owned();
        let ret = insn.starts_with("ret");
        code.push(insn);
        if ret {
            return code;
        }
    }
    panic!(
        "objdump finds no ret in {name} of {}: {code:?}",
        elf.display()
    );
}

/// Whether an AT&T instruction writes rax or a part of it (its last operand,
/// the destination).
pub fn writes_rax(insn: &str) -> bool {
    ["%rax", "%eax", "%ax", "%al"]
        .iter()
        .any(|r| insn.ends_with(&format!(",{r}")) || insn.ends_with(&format!(" {r}")))
}
