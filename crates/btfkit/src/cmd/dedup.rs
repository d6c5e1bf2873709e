use std::process::ExitCode;

#[derive(clap::Args)]
pub struct DedupArgs {}

pub fn run(_args: DedupArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'dedup' is not built yet")
}
