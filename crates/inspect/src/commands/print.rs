//! `p EXPR`, `p/x EXPR`, `p/d EXPR`: the value of a C expression, with
//! integers, enums and pointers in their natural radix, in hex or in
//! decimal. A line that is no command is printed as by `p`.

use crate::command::Reply;
use crate::error::Result;
use crate::format::Radix;
use crate::program::Program;

/// `p EXPR`: the value as drgn prints it (integers in decimal, enums by
/// name, a pointer with what it points at).
pub fn natural(prog: &mut Program, expr: &str) -> Result<Reply> {
    print_in(prog, expr, Radix::Natural)
}

/// `p/x EXPR`: integers, enums and pointers in hex.
pub fn hex(prog: &mut Program, expr: &str) -> Result<Reply> {
    print_in(prog, expr, Radix::Hex)
}

/// `p/d EXPR`: integers, enums and pointers in decimal.
pub fn decimal(prog: &mut Program, expr: &str) -> Result<Reply> {
    print_in(prog, expr, Radix::Decimal)
}

fn print_in(prog: &mut Program, expr: &str, radix: Radix) -> Result<Reply> {
    let v = prog.eval_str(expr)?;
    Ok(Reply {
        text: prog.evaluated_text(&v, radix),
        json: prog.evaluated_json(&v),
    })
}
