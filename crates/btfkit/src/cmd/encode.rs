use std::process::ExitCode;

#[derive(clap::Args)]
pub struct EncodeArgs {}

pub fn run(_args: EncodeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'encode' is not built yet")
}
