//! `btfkit funcs FILE [--name N] [--ambiguous] [--json]`: every function
//! instance with its address, prototype and status; `--verify ELF BTF`
//! checks a BTF's addr tags against the DWARF.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use dwarf2btf::funcs::{FuncModel, Instance, Status};
use dwarf2btf::load::ElfFile;

#[derive(clap::Args)]
pub struct FuncsArgs {
    /// An ELF with DWARF (vmlinux, a module), or with --verify the ELF whose DWARF is the reference
    file: PathBuf,
    /// With --verify: the BTF (raw or in an ELF .BTF section) whose addr tags are checked
    btf: Option<PathBuf>,
    /// Only instances whose source name or symbol is N
    #[arg(long)]
    name: Option<String>,
    /// Only instances whose name alone does not pick out one address
    #[arg(long)]
    ambiguous: bool,
    /// One JSON object per instance, in an array
    #[arg(long)]
    json: bool,
    /// Print instance counts per status instead of rows
    #[arg(long)]
    summary: bool,
    /// Check every addr tag of BTF against the DWARF of FILE; exit 1 on a violation
    #[arg(long, requires = "btf")]
    verify: bool,
}

#[derive(serde::Serialize)]
struct Row<'a> {
    name: &'a str,
    symbol: &'a str,
    address: String,
    size: u64,
    binding: dwarf2btf::funcs::Binding,
    location: Option<String>,
    cu: Option<&'a str>,
    btf_id: Option<u32>,
    btf_name: Option<&'a str>,
    prototype: Option<String>,
    status: &'static str,
    encoded: bool,
    parent: Option<&'a str>,
    detail: Option<&'a str>,
}

pub fn run(args: FuncsArgs) -> anyhow::Result<ExitCode> {
    if args.verify {
        anyhow::bail!("--verify is not built yet");
    }
    let elf = ElfFile::open(&args.file)?;
    let model = FuncModel::from_elf(&elf)
        .with_context(|| format!("cannot build the function model of {}", args.file.display()))?;
    for w in &model.warnings {
        eprintln!("btfkit: warning: {}: {w}", args.file.display());
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.summary {
        let counts = model.status_counts();
        for s in Status::ALL {
            writeln!(
                out,
                "{:>8} {}",
                counts.get(&s).copied().unwrap_or(0),
                s.as_str()
            )?;
        }
        writeln!(out, "{:>8} instances", model.instances.len())?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let ambiguous = ambiguous_names(&model);
    let rows: Vec<Row> = model
        .instances
        .iter()
        .filter(|i| {
            args.name
                .as_deref()
                .is_none_or(|n| i.name == n || i.symbol == n)
        })
        .filter(|i| !args.ambiguous || ambiguous.contains(i.btf_name()))
        .map(|i| row(&model, i))
        .collect();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        for r in &rows {
            writeln!(
                out,
                "{} {:<32} {:<40} {:>6} {:<22} {}",
                r.address,
                r.symbol,
                r.location.as_deref().unwrap_or("-"),
                r.size,
                r.status,
                r.prototype.as_deref().unwrap_or("-"),
            )?;
            if !r.encoded {
                if let Some(d) = r.detail {
                    writeln!(out, "{:18} not encoded: {d}", "")?;
                }
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn row<'a>(model: &'a FuncModel, i: &'a Instance) -> Row<'a> {
    let c = model.concrete(i);
    Row {
        name: &i.name,
        symbol: &i.symbol,
        address: format!("{:#018x}", i.address),
        size: i.size,
        binding: i.binding,
        location: model.location(i),
        cu: c.map(|c| c.cu_name.as_str()),
        btf_id: None,
        btf_name: i.encodable().then(|| i.btf_name()),
        prototype: model.prototype_c(i),
        status: i.status.as_str(),
        encoded: i.encodable(),
        parent: i
            .parent
            .and_then(|p| model.instances.get(p))
            .map(|p| p.symbol.as_str()),
        detail: i.detail.as_deref(),
    }
}

/// FUNC names that do not pick out one symbol-table address by themselves.
fn ambiguous_names(model: &FuncModel) -> std::collections::HashSet<String> {
    let mut count: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for i in &model.instances {
        *count.entry(i.symbol.as_str()).or_default() += 1;
    }
    model
        .instances
        .iter()
        .filter(|i| i.encodable())
        .map(|i| i.btf_name())
        .filter(|n| count.get(n).copied().unwrap_or(0) != 1)
        .map(str::to_owned)
        .collect()
}
