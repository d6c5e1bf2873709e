//! `btfkit dump FILE [--base B] [--format raw|json|c]`: print BTF as bpftool does.

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

#[derive(clap::Args)]
pub struct DumpArgs {
    /// Raw BTF, an ELF with a .BTF section, or /sys/kernel/btf/*
    file: PathBuf,
    /// Base BTF for split BTF (a module); /sys/kernel/btf/MODULE finds vmlinux by itself
    #[arg(long)]
    base: Option<PathBuf>,
    /// Output format, as `bpftool btf dump file FILE [format c]` and `bpftool -j`
    #[arg(long, value_enum, default_value_t = Format::Raw)]
    format: Format,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Format {
    Raw,
    Json,
    C,
}

/// Types of kinds this btfkit does not know were read through the layout
/// section and are shown as UNKNOWN_KIND_n (kind 0: UNKNOWN) with no
/// fields: say so once per kind.
fn warn_unknown_kinds(args: &DumpArgs, btf: &btf::Btf) {
    let mut counts = std::collections::BTreeMap::new();
    for (_, t) in btf.iter() {
        if let btf::TypeData::Unknown { kind, .. } = t.data {
            *counts.entry(kind).or_insert(0usize) += 1;
        }
    }
    for (kind, n) in counts {
        eprintln!(
            "warning: {}: {n} type(s) of kind {kind}, unknown to btfkit, shown as {} without their fields (sized by the layout section)",
            args.file.display(),
            btf::format::kind_name(kind)
        );
    }
}

pub fn run(args: DumpArgs) -> anyhow::Result<ExitCode> {
    // LoadError's message already names the file and the cause; as an
    // anyhow source it would print the cause a second time.
    let btf = btf::load_file(&args.file, args.base.as_deref())
        .map_err(|e| anyhow::anyhow!("cannot load BTF: {e}"))?;
    warn_unknown_kinds(&args, &btf);
    let mut stdout = std::io::stdout().lock();
    match args.format {
        // These two stage their output in large chunks themselves: a
        // BufWriter would only add a copy.
        Format::Raw => btf::dump::raw::dump(&btf, &mut stdout),
        Format::Json => btf::dump::json::dump(&btf, &mut stdout),
        Format::C => {
            let mut out = BufWriter::with_capacity(1 << 20, &mut stdout);
            btf::dump::c::dump(&btf, &mut out).and_then(|()| out.flush())
        }
    }
    .with_context(|| format!("cannot dump {}", args.file.display()))?;
    // The process ends here: handing vmlinux's ~40,000 allocations back to
    // malloc one by one would only add a few percent to the run time.
    std::mem::forget(btf);
    Ok(ExitCode::SUCCESS)
}
