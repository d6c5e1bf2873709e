//! `btfkit dedup IN.btf -o OUT.btf [--base B]`: libbpf's btf__dedup.

use std::io::Write;
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
    let mut btf = btf::load_file(&args.input, args.base.as_deref())
        .with_context(|| format!("cannot load BTF from {}", args.input.display()))?;
    let stats = btf::dedup::dedup_with_stats(&mut btf, &btf::dedup::DedupOptions::default())
        .with_context(|| format!("cannot deduplicate {}", args.input.display()))?;
    write_atomically(&args.output, &btf.to_bytes())
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    eprintln!(
        "{} types -> {}, {} string bytes -> {}",
        stats.types_in, stats.types_out, stats.strings_in, stats.strings_out
    );
    Ok(ExitCode::SUCCESS)
}

/// Writes `data` to a new file next to `path` and renames it over `path`,
/// so that a failed run never leaves a half-written output.
fn write_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(data)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        // Best effort: the error that matters is the one being returned.
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
