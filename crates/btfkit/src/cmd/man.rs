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
    let dir = &args.dir;
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!("{}: not a directory", dir.display());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Every page is rendered before any is written, and each is written as
    // the other outputs are (fileio::output_file): whole or not at all.
    let mut command = command.disable_help_subcommand(true);
    command.build();
    let mut pages = Vec::new();
    render(command, &mut pages)?;
    for (name, roff) in &pages {
        let path = dir.join(name);
        fileio::output_file::write(&path, roff, None)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The pages of `command` and of its visible subcommands, as clap_mangen's
/// `generate_to` names them: (file name, roff text).
fn render(command: clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> anyhow::Result<()> {
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        render(sub.clone(), pages)?;
    }
    let man = clap_mangen::Man::new(command);
    let mut roff = Vec::new();
    man.render(&mut roff)?;
    pages.push((man.get_filename(), roff));
    Ok(())
}
