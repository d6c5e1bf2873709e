//! `btfkit dedup IN.btf -o OUT.btf [--base B]`: libbpf's btf__dedup.

use std::path::{Path, PathBuf};
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
    // An output that is an input would destroy it: refused before anything
    // is read.
    let mut inputs = vec![args.input.as_path()];
    inputs.extend(args.base.as_deref());
    fileio::output_file::refuse_input(&args.output, &inputs)?;
    let mut btf = btf::load_file(&args.input, args.base.as_deref()).context("cannot load BTF")?;
    if let Some(base) = &args.base {
        refuse_if_not_split(&btf, &args.input, base)?;
    }
    let stats = btf::dedup::dedup_with_stats(&mut btf, &btf::dedup::DedupOptions::default())
        .with_context(|| format!("cannot deduplicate {}", args.input.display()))?;
    fileio::output_file::write(&args.output, &btf.to_bytes(), None)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    eprintln!(
        "{} types -> {}, {} string bytes -> {}",
        stats.types_in, stats.types_out, stats.strings_in, stats.strings_out
    );
    Ok(ExitCode::SUCCESS)
}

/// Refuses an input that is not split BTF over `base`: read over a base it
/// was not made for, its type ids and string offsets point into the wrong
/// types and strings, and the dedup would write nonsense that `check`
/// rejects. The kernel verifier's rules tell: such BTF breaks them.
fn refuse_if_not_split(btf: &btf::Btf, input: &Path, base: &Path) -> anyhow::Result<()> {
    let problems = btf::validate::validate(btf);
    let Some(first) = problems.first() else {
        return Ok(());
    };
    let standalone = btf::load_file(input, None)
        .ok()
        .is_some_and(|b| btf::validate::validate(&b).is_empty());
    let hint = if standalone {
        "it is complete BTF without a base: drop --base".to_string()
    } else {
        format!("is it split over another base than {}?", base.display())
    };
    anyhow::bail!(
        "{} is not valid split BTF over {} ({} problems, first: {first}); {hint}",
        input.display(),
        base.display(),
        problems.len()
    )
}
