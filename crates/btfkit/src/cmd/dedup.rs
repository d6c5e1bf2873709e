//! `btfkit dedup IN.btf -o OUT.btf [--base B]`: libbpf's btf__dedup.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

#[derive(clap::Args)]
pub struct DedupArgs {
    /// Raw BTF or an ELF with a .BTF section
    input: PathBuf,
    /// Where to write the deduplicated raw BTF
    #[arg(short, long)]
    output: PathBuf,
    /// Base BTF when IN is split BTF (a module); types equal to base types become references to them
    #[arg(long)]
    base: Option<PathBuf>,
}

pub fn run(args: DedupArgs) -> anyhow::Result<ExitCode> {
    let mut btf = btf::load_file(&args.input, args.base.as_deref())
        .with_context(|| format!("cannot load BTF from {}", args.input.display()))?;
    let stats = btf::dedup::dedup_with_stats(&mut btf, &btf::dedup::DedupOptions::default())
        .with_context(|| format!("cannot deduplicate {}", args.input.display()))?;
    btf::output_file::write(&args.output, &btf.to_bytes(), None)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    eprintln!(
        "{} types -> {}, {} string bytes -> {}",
        stats.types_in, stats.types_out, stats.strings_in, stats.strings_out
    );
    Ok(ExitCode::SUCCESS)
}
