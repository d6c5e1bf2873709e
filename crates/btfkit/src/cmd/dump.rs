//! `btfkit dump FILE|id N [--base B] [--format raw|json|c] [--json]`: print
//! BTF as bpftool does, from a file or from a BTF object loaded in the
//! kernel (`bpftool btf dump id N`).

use std::ffi::OsString;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

#[derive(clap::Args)]
pub struct DumpArgs {
    /// Raw BTF, an ELF with a .BTF section or /sys/kernel/btf/* (also
    /// `file FILE`); or `id N`: the BTF object the kernel has loaded with
    /// id N (`btfkit list`; root), as `bpftool btf dump id N`
    #[arg(value_name = "FILE|id N", num_args = 1..=2, required = true)]
    source: Vec<OsString>,
    /// Base BTF for split BTF (a module); /sys/kernel/btf/MODULE and a
    /// module's BTF object find vmlinux by themselves
    #[arg(long)]
    base: Option<PathBuf>,
    /// Output format, as `bpftool btf dump file FILE [format c]` and `bpftool -j`
    #[arg(long, value_enum, default_value_t = Format::Raw)]
    format: Format,
    /// Same as `--format json` (bpftool's -j; btfkit's -j is a job count,
    /// as pahole's, in `encode`)
    #[arg(long, conflicts_with = "format")]
    json: bool,
}

/// Where the BTF comes from.
enum Source {
    File(PathBuf),
    Id(u32),
}

impl DumpArgs {
    /// `FILE`, `file FILE` or `id N`; anything else is a usage error.
    fn source(&self) -> Source {
        match &self.source[..] {
            [file] => Source::File(PathBuf::from(file)),
            [kw, file] if kw == "file" => Source::File(PathBuf::from(file)),
            [kw, id] if kw == "id" => match id.to_str().and_then(|s| s.parse().ok()) {
                Some(n) => Source::Id(n),
                None => clap::Error::raw(
                    clap::error::ErrorKind::InvalidValue,
                    format!("'{}' is not a BTF object id\n", id.to_string_lossy()),
                )
                .exit(),
            },
            _ => clap::Error::raw(
                clap::error::ErrorKind::WrongNumberOfValues,
                "dump takes FILE, `file FILE` or `id N`\n",
            )
            .exit(),
        }
    }

    /// What the output and messages call the source.
    fn name(&self) -> String {
        match self.source() {
            Source::File(f) => f.display().to_string(),
            Source::Id(n) => format!("BTF object id {n}"),
        }
    }
}

/// BTF object `id` of the running kernel. A module's is split over
/// vmlinux's, which --base or /sys/kernel/btf/vmlinux gives, as bpftool
/// finds it.
fn load_id(id: u32, base: Option<&Path>) -> anyhow::Result<btf::Btf> {
    let (bytes, name, kernel) = btf::loaded::read(id)?;
    let what = || format!("BTF object id {id} ({name})");
    let base = match base {
        Some(b) => Some(b.to_owned()),
        None if kernel && name != "vmlinux" => Some(PathBuf::from(btf::SYSFS_VMLINUX)),
        None => None,
    };
    match base {
        Some(b) => {
            let base =
                btf::load_file(&b, None).map_err(|e| anyhow::anyhow!("cannot load BTF: {e}"))?;
            btf::Btf::parse_split(&bytes, Arc::new(base)).with_context(what)
        }
        None => btf::Btf::parse(&bytes).with_context(what),
    }
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
fn warn_unknown_kinds(name: &str, btf: &btf::Btf) {
    let mut counts = std::collections::BTreeMap::new();
    for (_, t) in btf.iter() {
        if let btf::TypeData::Unknown { kind, .. } = t.data {
            *counts.entry(kind).or_insert(0usize) += 1;
        }
    }
    for (kind, n) in counts {
        eprintln!(
            "warning: {name}: {} of kind {kind}, unknown to btfkit, shown as {} without their fields (sized by the layout section)",
            super::count::count(n, "type"),
            btf::format::kind_name(kind)
        );
    }
}

pub fn run(args: DumpArgs) -> anyhow::Result<ExitCode> {
    // load_file's error already names the file and the cause; as an
    // anyhow source it would print the cause a second time.
    let btf = match args.source() {
        Source::File(f) => btf::load_file(&f, args.base.as_deref())
            .map_err(|e| anyhow::anyhow!("cannot load BTF: {e}"))?,
        Source::Id(id) => load_id(id, args.base.as_deref())?,
    };
    let name = args.name();
    warn_unknown_kinds(&name, &btf);
    let format = if args.json { Format::Json } else { args.format };
    let mut stdout = std::io::stdout().lock();
    match format {
        // These two stage their output in large chunks themselves: a
        // BufWriter would only add a copy.
        Format::Raw => btf::dump::raw::dump(&btf, &mut stdout),
        Format::Json => btf::dump::json::dump(&btf, &mut stdout),
        Format::C => {
            let mut out = BufWriter::with_capacity(1 << 20, &mut stdout);
            btf::dump::c::dump(&btf, &mut out).and_then(|()| out.flush())
        }
    }
    .with_context(|| format!("cannot dump {name}"))?;
    // The process ends here: handing vmlinux's ~40,000 allocations back to
    // malloc one by one would only add a few percent to the run time.
    std::mem::forget(btf);
    Ok(ExitCode::SUCCESS)
}
