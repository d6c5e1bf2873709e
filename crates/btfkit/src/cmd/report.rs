use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ReportArgs {}

pub fn run(_args: ReportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'report' is not built yet")
}
