//! `btfkit funcs FILE [BTF] [--base B] [--name N] [--ambiguous] [--json]`: every
//! function instance with its address, prototype and status, and whether
//! fentry reaches it by name through a FUNC of BTF (default: FILE's own
//! .BTF section); `--verify ELF BTF` checks a BTF's addr tags against the
//! DWARF.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use dwarf2btf::funcs::{FuncModel, Instance, Status};
use dwarf2btf::load::ElfFile;

use super::count::count;

#[derive(clap::Args)]
pub struct FuncsArgs {
    /// An ELF with DWARF (vmlinux, a module), or with --verify the ELF whose DWARF is the reference
    file: PathBuf,
    /// The BTF whose FUNCs fentry attaches through (default: FILE's .BTF
    /// section); with --verify, the BTF whose addr tags are checked
    btf: Option<PathBuf>,
    /// Base BTF of a split BTF (a module's: its vmlinux ELF, raw BTF or
    /// /sys/kernel/btf/vmlinux)
    #[arg(long, value_name = "BTF")]
    base: Option<PathBuf>,
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
    /// Why an encoded instance has no addr tag and no FUNC by address:
    /// its code moves in the kernel build's final link (pre-link image).
    #[serde(skip_serializing_if = "Option::is_none")]
    address_not_final: Option<&'static str>,
    /// What fentry does with this instance's symbol name.
    fentry: Fentry,
}

/// How fentry reaches an instance by its symbol name in an unmodified
/// kernel (the lowest-address symbol of a name wins).
#[derive(Clone, Debug, Default, serde::Serialize)]
struct Fentry {
    /// The kernel attaches this symbol name to this instance.
    by_name: bool,
    /// The FUNC a program names to get here by name (None: no FUNC of
    /// the BTF does, or no BTF).
    func: Option<u32>,
    /// The audit's verdict on that FUNC (attachable, unsafe, ...).
    verdict: Option<&'static str>,
    /// The FUNC that describes this instance by its addr tag, for tools
    /// that attach by address (kprobe, kprobe_multi).
    tagged_func: Option<u32>,
}

pub fn run(args: FuncsArgs) -> anyhow::Result<ExitCode> {
    if args.verify {
        return verify(&args);
    }
    if !has_dwarf(&args.file) {
        return from_btf(&args);
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
    let reach = fentry_reach(&args, &model)?;
    // A module's addresses are keys: shown as `.init.text+0x0`.
    let sections = elf
        .object()
        .ok()
        .and_then(|o| ksyms::module_sections::NamedSections::of(&o));
    let rows: Vec<Row> = model
        .instances
        .iter()
        .filter(|i| {
            args.name
                .as_deref()
                .is_none_or(|n| i.name == n || i.symbol == n)
        })
        .filter(|i| !args.ambiguous || ambiguous.contains(i.btf_name()))
        .map(|i| row(&model, i, &reach, sections.as_ref()))
        .collect();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{:<18} {:<32} {:<40} {:>6} {:<22} {:<24} PROTOTYPE",
            "ADDRESS", "SYMBOL", "LOCATION", "SIZE", "STATUS", "FENTRY"
        )?;
        for r in &rows {
            writeln!(
                out,
                "{:<18} {:<32} {:<40} {:>6} {:<22} {:<24} {}",
                r.address,
                r.symbol,
                r.location.as_deref().unwrap_or("-"),
                r.size,
                r.status,
                fentry_text(&r.fentry),
                r.prototype.as_deref().unwrap_or("-"),
            )?;
            if !r.encoded {
                if let Some(d) = r.detail {
                    writeln!(out, "{:18} not encoded: {d}", "")?;
                }
            }
            if let Some(why) = r.address_not_final {
                writeln!(out, "{:18} {why}", "")?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `fentry=[ID]` (attachable by name through FUNC ID), `fentry=[ID]:unsafe`
/// and the like for other verdicts, `fentry=no-func` when the kernel picks
/// this instance but no FUNC has its name (`fentry=name:no-btf`: no BTF
/// was read), `fentry=-` when the kernel
/// attaches the name elsewhere (`fentry=-,tag=[ID]`: FUNC ID describes it
/// by address).
fn fentry_text(f: &Fentry) -> String {
    match (f.by_name, f.func, f.verdict) {
        (false, _, _) => match f.tagged_func {
            Some(id) => format!("fentry=-,tag=[{id}]"),
            None => "fentry=-".into(),
        },
        (true, Some(id), Some("attachable")) => format!("fentry=[{id}]"),
        (true, Some(id), Some(v)) => format!("fentry=[{id}]:{v}"),
        (true, Some(id), None) => format!("fentry=[{id}]"),
        (true, None, Some(v)) => format!("fentry=name:{v}"),
        (true, None, None) => "fentry=no-func".into(),
    }
}

/// Per instance address: how fentry reaches it (see [`Fentry`]).
struct Reach {
    /// (FUNC name, address the kernel attaches it to) -> (FUNC id, verdict).
    by_name: HashMap<(String, u64), (u32, &'static str)>,
    /// Address -> FUNC tagged with it.
    tagged: HashMap<u64, u32>,
    /// Whether a BTF was read (else no FUNC ids are known).
    have_btf: bool,
    /// Symbol name -> the address an exact-match kernel lookup returns.
    picks: HashMap<String, u64>,
}

fn fentry_reach(args: &FuncsArgs, model: &FuncModel) -> anyhow::Result<Reach> {
    use fentry::audit::{self, AuditInput};
    let table = match super::check::load_symbols(&args.file) {
        Ok((t, _)) => t,
        Err(e) => {
            eprintln!("btfkit: warning: fentry reach not shown: {e:#}");
            return Ok(Reach {
                by_name: HashMap::new(),
                tagged: HashMap::new(),
                have_btf: false,
                picks: HashMap::new(),
            });
        }
    };
    // A module's addresses are keyed by section, as its model's.
    let elf = ElfFile::open(&args.file)?;
    let obj = elf.object()?;
    let module_input = audit::module_input(&obj);
    let module = module_input.is_some();
    let (symbols, module_sites) = match module_input {
        Some((symbols, sites)) => (symbols, Some(sites)),
        None => (super::check::kernel_symbols(&table), None),
    };
    let lookup = ksyms::kernel_lookup::KernelLookup::new(
        symbols.iter().map(|s| (s.name, s.address)),
        module,
    );
    let btf = match &args.btf {
        Some(p) => Some(btf::load_file(p, args.base.as_deref()).context("cannot load BTF")?),
        None => match btf::load_file(&args.file, args.base.as_deref()) {
            Ok(btf) => Some(btf),
            // A debug vmlinux or module has no .BTF: rows without FUNCs. A
            // module's own .BTF without --base: the rows, and a warning
            // that says how to get its FUNCs. Any other failure (a --base
            // that does not load, a corrupt .BTF) is an error.
            Err(e) => match &e {
                btf::Error::File { error, .. } if matches!(**error, btf::Error::NoBtfSection) => {
                    None
                }
                btf::Error::File { error, .. }
                    if args.base.is_none() && matches!(**error, btf::Error::NeedsBase) =>
                {
                    eprintln!("btfkit: warning: fentry reach not shown: {e}");
                    None
                }
                _ => return Err(e).context("cannot load BTF"),
            },
        },
    };
    let mut reach = Reach {
        by_name: HashMap::new(),
        tagged: HashMap::new(),
        have_btf: btf.is_some(),
        picks: lookup
            .exact_picks()
            .map(|(n, a)| (n.to_owned(), a))
            .collect(),
    };
    let Some(btf) = btf else {
        return Ok(reach);
    };
    let sites = module_sites.or_else(|| ksyms::mcount::read(&args.file).ok());
    let rows = audit::audit(
        &btf,
        &AuditInput {
            symbols: &symbols,
            module,
            fentry_sites: sites.as_deref(),
            model: Some(model),
            version: fentry::kernel_rules::kernel_version(&obj),
        },
    );
    for r in &rows {
        if let Some(a) = r.address {
            reach
                .by_name
                .entry((r.name.clone(), a))
                .or_insert((r.btf_id, r.reach.as_str()));
        }
        for &t in &r.tags {
            reach.tagged.entry(t).or_insert(r.btf_id);
        }
    }
    Ok(reach)
}

fn row<'a>(
    model: &'a FuncModel,
    i: &'a Instance,
    reach: &Reach,
    sections: Option<&ksyms::module_sections::NamedSections>,
) -> Row<'a> {
    let c = model.concrete(i);
    let by_name = reach.picks.get(i.symbol.as_str()) == Some(&i.address);
    let named = reach
        .by_name
        .get(&(i.symbol.clone(), i.address))
        .filter(|_| by_name);
    let fentry = Fentry {
        by_name,
        func: named.map(|n| n.0),
        verdict: named
            .map(|n| n.1)
            .or((by_name && !reach.have_btf).then_some("no-btf")),
        tagged_func: reach.tagged.get(&i.address).copied(),
    };
    // The FUNC that describes this instance: its addr tag's, or its name's
    // where fentry reaches it and the audit found the prototypes equal.
    use fentry::audit::Reach as Verdict;
    let same_prototype = fentry
        .verdict
        .is_some_and(|v| v != Verdict::Unsafe.as_str() && v != Verdict::Unverified.as_str());
    let btf_id = fentry
        .tagged_func
        .or(fentry.func.filter(|_| same_prototype));
    Row {
        name: &i.name,
        symbol: &i.symbol,
        address: sections
            .and_then(|s| s.text(i.address))
            .unwrap_or_else(|| format!("{:#018x}", i.address)),
        size: i.size,
        binding: i.binding,
        location: model.location(i),
        cu: c.map(|c| c.cu_name.as_str()),
        btf_id,
        btf_name: i.encodable().then(|| i.btf_name()),
        prototype: model.prototype_c(i),
        status: i.status.as_str(),
        encoded: i.encodable(),
        parent: i
            .parent
            .and_then(|p| model.instances.get(p))
            .map(|p| p.symbol.as_str()),
        detail: i.detail.as_deref(),
        address_not_final: (i.encodable() && model.moved_by_final_link(i))
            .then_some(ksyms::final_link::MOVED),
        fentry,
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

/// Whether FILE is an ELF with DWARF (else it is read as BTF).
fn has_dwarf(path: &std::path::Path) -> bool {
    ElfFile::open(path).is_ok_and(|elf| dwarf2btf::funcs::has_dwarf(&elf))
}

#[derive(serde::Serialize)]
struct BtfRow {
    name: String,
    address: Option<String>,
    btf_id: u32,
    prototype: String,
    status: &'static str,
}

/// Rows from a BTF: one per addr tag, one per untagged FUNC.
fn from_btf(args: &FuncsArgs) -> anyhow::Result<ExitCode> {
    let btf = btf::load_file(&args.file, args.base.as_deref()).context("cannot load BTF")?;
    let tags = fentry::verify::addr_tags(&btf);
    let mut tagged: std::collections::HashMap<u32, Vec<u64>> = std::collections::HashMap::new();
    for t in &tags {
        tagged.entry(t.func).or_default().push(t.address);
    }
    let mut per_name: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut rows = Vec::new();
    for (id, t) in btf.iter() {
        if !matches!(t.data, btf::TypeData::Func { .. }) {
            continue;
        }
        let name = btf.name_of(t).unwrap_or("").to_owned();
        if args.name.as_deref().is_some_and(|n| n != name) {
            continue;
        }
        let prototype = btf::cdecl::func_prototype(&btf, id);
        match tagged.get(&id) {
            Some(addrs) => {
                for a in addrs {
                    *per_name.entry(name.clone()).or_default() += 1;
                    rows.push(BtfRow {
                        name: name.clone(),
                        address: Some(format!("{a:#018x}")),
                        btf_id: id,
                        prototype: prototype.clone(),
                        status: "tagged",
                    });
                }
            }
            None => {
                *per_name.entry(name.clone()).or_default() += 1;
                rows.push(BtfRow {
                    name,
                    address: None,
                    btf_id: id,
                    prototype,
                    status: "untagged",
                });
            }
        }
    }
    if args.ambiguous {
        rows.retain(|r| per_name.get(&r.name).copied().unwrap_or(0) > 1);
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        writeln!(out, "{:<18} [BTF_ID] {:<8} PROTOTYPE", "ADDRESS", "STATUS")?;
        for r in &rows {
            writeln!(
                out,
                "{:<18} [{}] {:<8} {}",
                r.address.as_deref().unwrap_or("-"),
                r.btf_id,
                r.status,
                r.prototype
            )?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `--verify ELF BTF`: every addr tag checked against the DWARF.
fn verify(args: &FuncsArgs) -> anyhow::Result<ExitCode> {
    let Some(btf_path) = &args.btf else {
        anyhow::bail!("--verify needs ELF and BTF");
    };
    let elf = ElfFile::open(&args.file)?;
    let model = FuncModel::from_elf(&elf)
        .with_context(|| format!("cannot build the function model of {}", args.file.display()))?;
    let btf = btf::load_file(btf_path, args.base.as_deref()).context("cannot load BTF")?;
    let tags = fentry::verify::addr_tags(&btf);
    let violations = fentry::verify::verify(&model, &btf);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        serde_json::to_writer_pretty(&mut out, &violations)?;
        writeln!(out)?;
    } else {
        for v in &violations {
            writeln!(
                out,
                "{:#018x} [{}] {}: {}",
                v.address, v.func, v.name, v.problem
            )?;
        }
        writeln!(
            out,
            "{} checked, {}",
            count(tags.len(), "addr tag"),
            count(violations.len(), "violation")
        )?;
    }
    out.flush()?;
    Ok(if violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
