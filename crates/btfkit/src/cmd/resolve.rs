use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ResolveArgs {}

pub fn run(_args: ResolveArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'resolve' is not built yet")
}
