//! `btfkit man DIR`: manual pages generated from the clap definitions,
//! btfkit.1 and one btfkit-COMMAND.1 per command, written into DIR (e.g.
//! /usr/local/share/man/man1).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

#[derive(clap::Args)]
pub struct ManArgs {
    /// Where to write the pages (created if missing)
    dir: PathBuf,
}

pub fn run(args: ManArgs, command: clap::Command) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("cannot create {}", args.dir.display()))?;
    clap_mangen::generate_to(command, &args.dir)
        .with_context(|| format!("cannot write the manual pages into {}", args.dir.display()))?;
    Ok(ExitCode::SUCCESS)
}
