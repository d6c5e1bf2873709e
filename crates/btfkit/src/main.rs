//! btfkit: the command line. Thin by design: it parses arguments, calls the
//! libraries, and turns their results into text, JSON and exit codes.
//!
//! Exit codes: 0 success, 1 an error or problems found, 2 a usage error.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod cmd;

#[derive(Parser)]
#[command(
    name = "btfkit",
    version,
    about = "Ties kernel types (BTF) to kernel addresses (kallsyms)"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    report: cmd::report::ReportArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Print BTF as bpftool does: raw text, JSON or a C header
    Dump(cmd::dump::DumpArgs),
    /// BTF objects loaded in the kernel and what uses them (bpftool btf list)
    List(cmd::list::ListArgs),
    /// Validate BTF with the kernel verifier's rules (and the kernel itself)
    Check(cmd::check::CheckArgs),
    /// Encode BTF from an ELF's DWARF (pahole -J)
    Encode(cmd::encode::EncodeArgs),
    /// Deduplicate BTF (libbpf's btf__dedup)
    Dedup(cmd::dedup::DedupArgs),
    /// Semantic difference of two BTFs, by name and layout
    Diff(cmd::diff::DiffArgs),
    /// Every function instance: address, symbol, prototype, status
    Funcs(cmd::funcs::FuncsArgs),
    /// Addresses to symbols and types, names to instances
    Resolve(cmd::resolve::ResolveArgs),
    /// Dynamic kernel symbols in a perf.data file
    Perf(cmd::perf::PerfArgs),
    /// Watch kernel symbols come and go, live
    Watch(cmd::watch::WatchArgs),
    /// Print kernel variables of a crash dump or the live kernel by their BTF types
    Inspect(cmd::inspect::InspectArgs),
    /// pahole's command line (also when run as `pahole`): -J in kernel builds, layouts
    Pahole(cmd::pahole::PaholeArgs),
    /// Struct and union layouts with holes and cache lines, as pahole prints them
    Layout(cmd::layout::LayoutCli),
    /// Print a shell's completion script: bash, zsh, fish, elvish, powershell
    Completions(cmd::completions::CompletionsArgs),
    /// Write the manual pages (btfkit.1, btfkit-COMMAND.1) into a directory
    Man(cmd::man::ManArgs),
}

fn main() -> ExitCode {
    // Run as `pahole` (a symlink, `make PAHOLE=...`): pahole's command line.
    let mut args = std::env::args_os();
    if args
        .next()
        .is_some_and(|a| cmd::pahole::invoked_as_pahole(&a))
    {
        return finish(cmd::pahole::run_args(&args.collect::<Vec<_>>()), "pahole");
    }
    let cli = Cli::parse();
    let result = match cli.command {
        None => cmd::report::run(cli.report),
        Some(Command::Dump(a)) => cmd::dump::run(a),
        Some(Command::List(a)) => cmd::list::run(a),
        Some(Command::Check(a)) => cmd::check::run(a),
        Some(Command::Encode(a)) => cmd::encode::run(a),
        Some(Command::Dedup(a)) => cmd::dedup::run(a),
        Some(Command::Diff(a)) => cmd::diff::run(a),
        Some(Command::Funcs(a)) => cmd::funcs::run(a),
        Some(Command::Resolve(a)) => cmd::resolve::run(a),
        Some(Command::Perf(a)) => cmd::perf::run(a),
        Some(Command::Watch(a)) => cmd::watch::run(a),
        Some(Command::Inspect(a)) => cmd::inspect::run(a),
        Some(Command::Pahole(a)) => cmd::pahole::run(a),
        Some(Command::Layout(a)) => cmd::layout::run_cli(a),
        Some(Command::Completions(a)) => cmd::completions::run(a, Cli::command()),
        Some(Command::Man(a)) => cmd::man::run(a, Cli::command()),
    };
    finish(result, "btfkit")
}

/// The exit code of a command's result; errors are printed as `NAME: error: ...`.
fn finish(result: anyhow::Result<ExitCode>, name: &str) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            // A closed pipe (`btfkit dump | head`) is not an error worth a message.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("{name}: error: {e:#}");
            if cmd::pahole::is_usage(&e) {
                return ExitCode::from(2);
            }
            ExitCode::FAILURE
        }
    }
}
