//! `btfkit inspect [VMCORE] [--btf F] [--kallsyms F] [EXPR...] [--json]`:
//! C expressions over a crash dump or the live kernel (/proc/kcore), typed
//! by BTF, printed like drgn. Without EXPR: one expression per line from
//! stdin, with a prompt (history, completion) on a terminal.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use inspect::open::Options;
use inspect::Program;

#[derive(clap::Args)]
pub struct InspectArgs {
    /// A vmcore (ELF, kdump-compressed, flattened), then expressions; a
    /// first argument that is not a file is an expression on the live kernel
    #[arg(value_name = "VMCORE|EXPR")]
    args: Vec<String>,
    /// BTF with the variables (e.g. `btfkit encode --vars all`); default:
    /// the dump's own, or /sys/kernel/btf/vmlinux live
    #[arg(long)]
    btf: Option<PathBuf>,
    /// Symbols: /proc/kallsyms text or a System.map; default: the kernel's
    /// own tables in memory
    #[arg(long)]
    kallsyms: Option<PathBuf>,
    /// One JSON object per expression: {"expr", "value"} or {"expr", "error"}
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

/// Prints one expression's value or error; false on an error.
fn show(prog: &mut Program, expr: &str, json: bool, out: &mut impl Write) -> anyhow::Result<bool> {
    let r = prog.eval_str(expr);
    match (&r, json) {
        (Ok(v), true) => {
            let j = serde_json::json!({ "expr": expr, "value": prog.evaluated_json(v) });
            writeln!(out, "{j}")?;
        }
        (Ok(v), false) => writeln!(out, "{}", prog.evaluated_text(v))?,
        (Err(e), true) => {
            let j = serde_json::json!({ "expr": expr, "error": e.to_string() });
            writeln!(out, "{j}")?;
        }
        (Err(e), false) => {
            out.flush()?;
            eprintln!("btfkit: {expr}: {e}");
        }
    }
    Ok(r.is_ok())
}
