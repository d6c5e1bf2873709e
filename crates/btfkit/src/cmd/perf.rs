use std::process::ExitCode;

#[derive(clap::Args)]
pub struct PerfArgs {}

pub fn run(_args: PerfArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'perf' is not built yet")
}
