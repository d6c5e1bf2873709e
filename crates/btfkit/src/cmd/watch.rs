use std::process::ExitCode;

#[derive(clap::Args)]
pub struct WatchArgs {}

pub fn run(_args: WatchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'watch' is not built yet")
}
