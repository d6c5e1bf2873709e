//! `log [-m]`: the kernel log like dmesg and crash's `log`, one record per
//! line with its `[seconds.micros]` timestamp; `-m` adds the level
//! (`<6>`) as crash does. A record that does not read is a line saying
//! why; the others still print.

use serde_json::json;

use crate::command::Reply;
use crate::error::{Error, Result};
use crate::kernel::printk::{line, read_log};
use crate::program::Program;

/// `log`: every record of the printk ring buffer, a line each; `-m` adds
/// the level.
pub fn run(prog: &mut Program, args: &str) -> Result<Reply> {
    let mut levels = false;
    for a in args.split_whitespace() {
        match a {
            "-m" => levels = true,
            _ => {
                return Err(Error::Usage(format!(
                    "log [-m]: unknown argument {}",
                    crate::message::quoted(a)
                )))
            }
        }
    }
    let log = read_log(prog)?;
    let mut lines = Vec::with_capacity(log.records.len());
    let mut list = Vec::with_capacity(log.records.len());
    for r in &log.records {
        let mut l = match (&r.problem, levels) {
            (Some(p), _) => format!("<{p}>"),
            (None, false) => line(r),
            (None, true) => {
                let l = line(r);
                // "[    1.234567] text" -> "[    1.234567] <6>text"
                match l.split_once("] ") {
                    Some((ts, t)) => format!("{ts}] <{}>{t}", r.level),
                    None => l,
                }
            }
        };
        if r.problem.is_some() && !r.text.is_empty() {
            l.push(' ');
            l.push_str(&r.text);
        }
        lines.push(l);
        list.push(json!({
            "seq": r.seq,
            "ts_nsec": r.ts_nsec,
            "level": r.level,
            "facility": r.facility,
            "caller": r.caller(),
            "continuation": r.continuation,
            "text": r.text,
            "error": r.problem,
        }));
    }
    if let Some(s) = &log.stopped {
        lines.push(format!("<log: {s}>"));
    }
    Ok(Reply {
        text: lines.join("\n"),
        json: json!({ "records": list, "error": log.stopped }),
    })
}
