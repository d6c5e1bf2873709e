use std::process::ExitCode;

#[derive(clap::Args)]
pub struct DumpArgs {}

pub fn run(_args: DumpArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'dump' is not built yet")
}
