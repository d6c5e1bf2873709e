use std::process::ExitCode;

#[derive(clap::Args)]
pub struct FuncsArgs {}

pub fn run(_args: FuncsArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("'funcs' is not built yet")
}
