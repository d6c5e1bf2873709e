//! `btfkit inspect [VMCORE] [--btf F] [--kallsyms F] [LINE...] [--json]`:
//! crash-style commands and C expressions over a crash dump or the live
//! kernel (/proc/kcore), typed by BTF, printed like drgn. Without LINE: one
//! line from stdin at a time, with a prompt (history, completion) on a
//! terminal. `help` lists the commands; `q`, `quit` or `exit` end the
//! lines. Text longer than the terminal goes through a pager when stdout
//! is one.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use inspect::commands;
use inspect::message::Excerpt;
use inspect::open::Options;
use inspect::Program;

#[derive(clap::Args)]
pub struct InspectArgs {
    /// A vmcore (ELF, kdump-compressed, flattened), then commands or
    /// expressions (`help` lists the commands); a first argument that is
    /// neither an existing file nor looks like a path (a `/` where no
    /// expression has one, or a dump's name: vmcore, *.elf, dump.*) is a
    /// line for the live kernel
    #[arg(value_name = "VMCORE|LINE")]
    args: Vec<String>,
    /// BTF with the variables (e.g. `btfkit encode --vars all`); default:
    /// the dump's own, or /sys/kernel/btf/vmlinux live. Checked against the
    /// kernel (architecture, init_uts_ns's release, VMCOREINFO's sizes and
    /// offsets, where the variables are): another kernel's is refused
    #[arg(long)]
    btf: Option<PathBuf>,
    /// Symbols: /proc/kallsyms text or a System.map; default: the kernel's
    /// own tables in memory
    #[arg(long)]
    kallsyms: Option<PathBuf>,
    /// A module's BTF with its variables, NAME=FILE (repeatable): made by
    /// `btfkit encode --vars all --base BTF MODULE.ko` with BTF the --btf file
    #[arg(long = "btf-module", value_name = "NAME=FILE", value_parser = module_file)]
    btf_module: Vec<(String, PathBuf)>,
    /// One JSON object per line: {"expr"|"command", "value"|"error"}
    #[arg(long)]
    json: bool,
}

pub fn run(a: InspectArgs) -> anyhow::Result<ExitCode> {
    let mut args = a.args.into_iter().peekable();
    let vmcore = args.next_if(|first| is_dump(first)).map(PathBuf::from);
    let exprs: Vec<String> = args.collect();
    let opts = Options {
        vmcore,
        btf: a.btf,
        kallsyms: a.kallsyms,
        btf_modules: a.btf_module,
    };
    let mut prog = inspect::open::open(&opts)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut failed = false;
    if !exprs.is_empty() {
        for e in exprs.iter().take_while(|e| !commands::is_quit(e)) {
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
            if commands::is_quit(&line) {
                break;
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

/// Whether the first argument names a dump: an existing file (a FIFO or
/// /dev/null too: opening says why it is none), or something that looks
/// like a path and so must not be run against the live kernel by mistake.
fn is_dump(arg: &str) -> bool {
    let path = Path::new(arg);
    if path.exists() {
        return true;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let dump_name = name == "vmcore"
        || ["vmcore.", "vmcore-", "dump.", "dump-", "core."]
            .iter()
            .any(|p| name.starts_with(p))
        || [".vmcore", ".elf", ".kdump", ".dump", ".core", ".img"]
            .iter()
            .any(|s| name.ends_with(s));
    if dump_name {
        return true;
    }
    // `a/b` is an expression, `/var/crash/x`, `./x` and `crash/127.0.0.1-2024/x` are not.
    let is_expression = inspect::parse::Parser::new(arg, &|_| false)
        .and_then(|p| p.parse())
        .is_ok();
    let parent_exists = path
        .parent()
        .is_some_and(|d| !d.as_os_str().is_empty() && d.is_dir());
    arg.contains('/') && (!is_expression || parent_exists)
}

fn module_file(s: &str) -> Result<(String, PathBuf), String> {
    let (name, file) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAME=FILE"))?;
    Ok((name.to_owned(), PathBuf::from(file)))
}

/// Prints one line's reply or error; false on an error. In JSON, a
/// command's object is keyed "command", an expression's "expr". An error
/// shows a line longer than 100 bytes as 40 characters around its column.
fn show(prog: &mut Program, line: &str, json: bool, out: &mut impl Write) -> anyhow::Result<bool> {
    let r = commands::run_line(prog, line);
    let key = if commands::find(line).is_some() {
        "command"
    } else {
        "expr"
    };
    match (&r, json) {
        (Ok(reply), true) => {
            let j = serde_json::json!({ key: line, "value": reply.json });
            writeln!(out, "{j}")?;
        }
        (Ok(reply), false) if std::io::stdout().is_terminal() => {
            out.flush()?;
            inspect::pager::print(&reply.text)?;
        }
        (Ok(reply), false) => writeln!(out, "{}", reply.text)?,
        (Err(e), true) => {
            let j = serde_json::json!({ key: line, "error": e.to_string() });
            writeln!(out, "{j}")?;
        }
        (Err(e), false) => {
            out.flush()?;
            // A long line is shown around the error's column, a caret under it.
            let excerpt = Excerpt::new(line, e.column());
            eprintln!("btfkit: {}: {e}", excerpt.text);
            if let Some(caret) = excerpt.caret_line("btfkit: ".len()) {
                eprintln!("{caret}");
            }
        }
    }
    Ok(r.is_ok())
}
