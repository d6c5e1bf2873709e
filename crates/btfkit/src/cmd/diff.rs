use std::process::ExitCode;

#[derive(clap::Args)]
pub struct DiffArgs {}

pub fn run(_args: DiffArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'diff' is not built yet")
}
