//! `rd ADDR [COUNT]`, crash's rd: COUNT (default 1) 64-bit words of kernel
//! memory from ADDR, two to a line in crash's layout:
//! `ffffffff82a0f000:  0000000100000d81 ffffffff82a0f008   ........`
//! (the address, the words in hex, then their bytes as ASCII, `.` for a
//! byte that does not print). ADDR is an address in hex, a symbol (its
//! address, as crash reads `rd jiffies`), or an expression: a pointer's or
//! integer's value, else where the value is (`init_task.comm`).

use serde_json::json;

use super::sym;
use crate::command::Reply;
use crate::error::{Error, Result};
use crate::eval::Evaluated;
use crate::format::json_addr;
use crate::program::Program;

/// Words on a line, as crash prints 64-bit words.
const PER_LINE: usize = 2;
/// More words than anyone reads at once; a mistyped COUNT stops here.
const MAX_WORDS: u64 = 1 << 20;

const USAGE: &str = "rd ADDR|SYMBOL [COUNT]";

/// `rd ADDR|SYMBOL [COUNT]`: COUNT 64-bit words from where `args` says,
/// two to a line.
pub fn run(prog: &mut Program, args: &str) -> Result<Reply> {
    let args = args.trim();
    if args.is_empty() {
        return Err(Error::Usage(USAGE.into()));
    }
    // A last word that is a number is COUNT (decimal, or hex with 0x).
    let (expr, count) = match args.rsplit_once(char::is_whitespace) {
        Some((e, c)) => match parse_count(c) {
            Some(n) => (e.trim_end(), n),
            None => (args, 1),
        },
        None => (args, 1),
    };
    if count == 0 || count > MAX_WORDS {
        return Err(Error::Usage(format!(
            "{USAGE}: COUNT from 1 to {MAX_WORDS}"
        )));
    }
    let start = address(prog, expr)?;
    let mut words = Vec::new();
    let mut stopped = None;
    for i in 0..count {
        let at = start.wrapping_add(i * 8);
        match prog.memory().read_u64(at) {
            Ok(w) => words.push(w),
            Err(error) if words.is_empty() => return Err(Error::Memory { col: 1, error }),
            Err(e) => {
                stopped = Some(format!("rd: {at:x}: {e}"));
                break;
            }
        }
    }
    let mut lines: Vec<String> = words
        .chunks(PER_LINE)
        .enumerate()
        .map(|(i, chunk)| line(start.wrapping_add((i * PER_LINE * 8) as u64), chunk))
        .collect();
    lines.extend(stopped.clone());
    Ok(Reply {
        text: lines.join("\n"),
        json: json!({
            "address": json_addr(start),
            "words": words.iter().map(|&w| json_addr(w)).collect::<Vec<_>>(),
            "error": stopped,
        }),
    })
}

fn parse_count(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Where ADDR points (see the module documentation).
fn address(prog: &mut Program, expr: &str) -> Result<u64> {
    if let Some(a) = sym::parse_address(expr) {
        return Ok(a);
    }
    let named: Vec<u64> = prog.symbols().by_name(expr).map(|s| s.addr).collect();
    if let Some(&first) = named.first() {
        if named.iter().all(|&a| a == first) {
            return Ok(first);
        }
    }
    let v = match prog.eval_str(expr)? {
        Evaluated::One(v) => v,
        Evaluated::Many(_) => return Err(Error::eval(1, "ADDR is a list, not an address")),
    };
    match prog.scalar(&v, 1) {
        Ok(x) if prog.is_scalar(v.ty) => Ok(x),
        _ => v
            .address()
            .ok_or_else(|| Error::eval(1, "ADDR is neither an address nor in memory")),
    }
}

/// One line of crash's rd: `ADDR:  WORD WORD   ASCII`, a short last line
/// padded so that its ASCII lines up.
fn line(addr: u64, words: &[u64]) -> String {
    let mut s = format!("{addr:016x}:  ");
    let mut ascii = String::new();
    for w in words {
        s.push_str(&format!("{w:016x} "));
        ascii.extend(w.to_le_bytes().iter().map(|&b| {
            if (0x20..0x7f).contains(&b) {
                b as char
            } else {
                '.'
            }
        }));
    }
    s.push_str(&" ".repeat(17 * (PER_LINE - words.len())));
    s.push_str("  ");
    s.push_str(&ascii);
    s
}

#[cfg(test)]
mod tests {
    /// crash's layout (memory.c display_memory: "%016lx:  ", "%016lx "
    /// per word, the ASCII column at 53 after two spaces).
    #[test]
    fn lines_as_crash_prints_them() {
        assert_eq!(
            super::line(0xffff8810d1d9bd98, &[0xffffffff813271d4, 0x6f6c6c6568]),
            "ffff8810d1d9bd98:  ffffffff813271d4 0000006f6c6c6568   .q2.....hello..."
        );
        let one = super::line(0xffffffff81e10000, &[0x0000000100c36ca0]);
        assert_eq!(
            one,
            format!(
                "ffffffff81e10000:  0000000100c36ca0 {}  .l......",
                " ".repeat(17)
            )
        );
        assert_eq!(one.find(".l"), Some(55));
    }
}
