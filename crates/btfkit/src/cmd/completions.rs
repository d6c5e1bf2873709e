//! `btfkit completions bash|zsh|fish|elvish|powershell`: the shell's
//! completion script, generated from the clap definitions.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in
    shell: clap_complete::Shell,
}

pub fn run(args: CompletionsArgs, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    let name = command.get_name().to_owned();
    clap_complete::generate(args.shell, &mut command, name, &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}
