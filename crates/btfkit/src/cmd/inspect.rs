//! `btfkit inspect [VMCORE] [--btf F] [--kallsyms F] [LINE...] [--json]`:
//! crash-style commands and C expressions over a crash dump or the live
//! kernel (/proc/kcore), typed by BTF, printed like drgn. Without LINE: one
//! line from stdin at a time, with a prompt (history, completion) on a
//! terminal. `help` lists the commands.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use inspect::command;
use inspect::open::Options;
use inspect::Program;

#[derive(clap::Args)]
pub struct InspectArgs {
    /// A vmcore (ELF, kdump-compressed, flattened), then commands or
    /// expressions (`help` lists the commands); a first argument that is not
    /// a file is a line for the live kernel
    #[arg(value_name = "VMCORE|LINE")]
    args: Vec<String>,
    /// BTF with the variables (e.g. `btfkit encode --vars all`); default:
    /// the dump's own, or /sys/kernel/btf/vmlinux live
    #[arg(long)]
    btf: Option<PathBuf>,
    /// Symbols: /proc/kallsyms text or a System.map; default: the kernel's
    /// own tables in memory
    #[arg(long)]
    kallsyms: Option<PathBuf>,
    /// One JSON object per line: {"expr"|"command", "value"|"error"}
    #[arg(long)]
    json: bool,
}

pub fn run(a: InspectArgs) -> anyhow::Result<ExitCode> {
    let mut args = a.args.into_iter().peekable();
    let vmcore = args
        .next_if(|first| std::path::Path::new(first).is_file())
        .map(PathBuf::from);
    let exprs: Vec<String> = args.collect();
    let opts = Options {
        vmcore,
        btf: a.btf,
        kallsyms: a.kallsyms,
    };
    let mut prog = inspect::open::open(&opts)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut failed = false;
    if !exprs.is_empty() {
        for e in &exprs {
            failed |= !show(&mut prog, e, a.json, &mut out)?;
        }
    } else if std::io::stdin().is_terminal() {
        drop(out);
        inspect::prompt::run(&mut prog, a.json)?;
        return Ok(ExitCode::SUCCESS);
    } else {
        for line in std::io::stdin().lock().lines() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            failed |= !show(&mut prog, line.trim(), a.json, &mut out)?;
        }
    }
    out.flush()?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints one line's reply or error; false on an error. In JSON, a
/// command's object is keyed "command", an expression's "expr".
fn show(prog: &mut Program, line: &str, json: bool, out: &mut impl Write) -> anyhow::Result<bool> {
    let r = command::run_line(prog, line);
    let key = if command::find(line).is_some() {
        "command"
    } else {
        "expr"
    };
    match (&r, json) {
        (Ok(reply), true) => {
            let j = serde_json::json!({ key: line, "value": reply.json });
            writeln!(out, "{j}")?;
        }
        (Ok(reply), false) => writeln!(out, "{}", reply.text)?,
        (Err(e), true) => {
            let j = serde_json::json!({ key: line, "error": e.to_string() });
            writeln!(out, "{j}")?;
        }
        (Err(e), false) => {
            out.flush()?;
            eprintln!("btfkit: {line}: {e}");
        }
    }
    Ok(r.is_ok())
}
