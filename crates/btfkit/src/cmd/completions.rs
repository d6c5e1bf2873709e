//! `btfkit completions bash|zsh|fish|elvish|powershell`: the shell's
//! completion script, generated from the clap definitions.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in
    shell: clap_complete::Shell,
}

pub fn run(args: CompletionsArgs, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    let name = command.get_name().to_owned();
    // Generated into memory: clap_complete panics when its writer fails
    // (a full disk, `> /dev/full`), where stdout's error is ours to report.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, name, &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)
        .and_then(|()| out.flush())
        .context("cannot write the completion script to stdout")?;
    Ok(ExitCode::SUCCESS)
}
