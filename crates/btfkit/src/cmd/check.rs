//! `btfkit check FILE [--base B] [--target T] [--kernel] [--json]`: the
//! kernel verifier's rules, and optionally the kernel's verifier itself.
//! `btfkit check --attach BTF SYMBOLS [--json]`: what fentry does with each
//! FUNC of a vmlinux BTF in an unmodified kernel
//! (fentry::audit), and whether every address the BTF gives a
//! FUNC (addr tags, `..` names) is one of its symbol's; exit 1 on an unsafe
//! FUNC or a wrong address.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use btf::kernel;
use btf::validate::{Problem, Target};
use btf::Btf;
use serde::Serialize;

use super::count::count;

#[derive(clap::Args)]
pub struct CheckArgs {
    /// Raw BTF, an ELF with a .BTF section, or a file under /sys/kernel/btf
    pub file: PathBuf,
    /// Base BTF of a split BTF (a module's); found automatically under /sys/kernel/btf
    #[arg(long)]
    pub base: Option<PathBuf>,
    /// Whose rules: by default bpf-next's for a BTF with a layout section
    /// (32-byte header), Linux 6.18's for any other
    #[arg(long, value_enum, default_value_t = TargetArg::Auto, conflicts_with = "attach")]
    pub target: TargetArg,
    /// Also load it into the running kernel with BPF_BTF_LOAD (root or CAP_BPF)
    #[arg(long, conflicts_with = "attach")]
    pub kernel: bool,
    /// Audit fentry attach by name against SYMBOLS: the vmlinux ELF (also
    /// reads its __mcount_loc and DWARF), a System.map or /proc/kallsyms
    #[arg(long, requires = "symbols")]
    pub attach: bool,
    /// With --attach: the kernel's symbols (without --attach, a usage error)
    pub symbols: Option<PathBuf>,
    /// The result as JSON: the problems (with --attach: every FUNC);
    /// addresses are "0x..." strings
    #[arg(long)]
    pub json: bool,
}

/// `--target`: the validator's rule set, or the one the header calls for.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetArg {
    Auto,
    #[value(name = "linux-6.18")]
    Linux6_18,
    BpfNext,
}

impl TargetArg {
    /// The rules to check `btf` by: a layout section exists only in
    /// bpf-next's format, which no released kernel takes.
    fn resolve(self, btf: &Btf) -> Target {
        match self {
            TargetArg::Linux6_18 => Target::Linux6_18,
            TargetArg::BpfNext => Target::BpfNext,
            TargetArg::Auto if btf.header().hdr_len >= btf::format::BTF_HEADER_LAYOUT_LEN => {
                Target::BpfNext
            }
            TargetArg::Auto => Target::Linux6_18,
        }
    }
}

fn target_name(t: Target) -> &'static str {
    match t {
        Target::Linux6_18 => "linux-6.18",
        Target::BpfNext => "bpf-next",
    }
}

/// `check --json`: the file, the rules applied and what broke them.
#[derive(Serialize)]
struct Report<'a> {
    file: String,
    target: &'static str,
    types: usize,
    bytes: usize,
    problems: Vec<ProblemJson<'a>>,
    /// Split BTF: the base's types it re-emits instead of referring to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    base_duplicates: Vec<DuplicateJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel: Option<KernelVerdict>,
}

#[derive(Serialize)]
struct ProblemJson<'a> {
    /// 0 for the blob as a whole.
    id: u32,
    kind: &'a str,
    name: &'a str,
    /// Of the type's record in the BTF blob (its header included); None
    /// for the blob as a whole.
    offset: Option<usize>,
    rule: &'static str,
    message: &'a str,
}

/// A base type the split BTF has again (`btf::base_duplicates`).
#[derive(Serialize)]
struct DuplicateJson<'a> {
    id: u32,
    base_id: u32,
    kind: &'a str,
    name: &'a str,
}

/// What BPF_BTF_LOAD said.
#[derive(Serialize)]
struct KernelVerdict {
    accepted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The verifier's log, whole.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    log: Vec<String>,
}

/// The blob offset of each own type's record: the header, then the types
/// in id order from `type_off`.
fn type_offsets(btf: &Btf) -> Vec<usize> {
    let h = btf.header();
    let mut at = h.hdr_len as usize + h.type_off as usize;
    btf.own_types()
        .iter()
        .map(|t| {
            let here = at;
            at += t.encoded_len();
            here
        })
        .collect()
}

fn problem_json<'a>(p: &'a Problem, btf: &Btf, offsets: &[usize]) -> ProblemJson<'a> {
    let offset = (p.id >= btf.start_id())
        .then(|| offsets.get((p.id - btf.start_id()) as usize).copied())
        .flatten()
        .filter(|_| !p.kind.is_empty());
    ProblemJson {
        id: p.id,
        kind: p.kind,
        name: &p.name,
        offset,
        rule: p.rule.as_str(),
        message: &p.detail,
    }
}

/// Lines of the kernel's log shown on rejection: the error is at the end,
/// after one line per type checked.
const LOG_TAIL_LINES: usize = 40;

pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    if args.attach {
        return attach(&args);
    }
    if let Some(symbols) = &args.symbols {
        clap::Error::raw(
            clap::error::ErrorKind::UnknownArgument,
            format!(
                "check takes one BTF; {} (kernel symbols) is only read by `check --attach BTF SYMBOLS`\n",
                symbols.display()
            ),
        )
        .exit();
    }
    let file = &args.file;
    let blob = btf::read_blob(file)?;
    let base = match btf::default_base(file, args.base.as_deref()) {
        Some(b) => Some(Arc::new(btf::load_file(&b, None)?)),
        None => None,
    };
    let btf = btf::parse_any(&blob, base).with_context(|| format!("{}", file.display()))?;

    let target = args.target.resolve(&btf);
    let mut problems = btf::validate::validate_blob_for(&blob, &btf, target);
    problems.extend(btf::validate::validate_for(&btf, target));
    problems.sort_by_key(|p| p.id);
    let mut ok = problems.is_empty();
    // Types of the base that a split BTF has again instead of referring to
    // (a walk of its graph: only once the ids are known to be valid).
    let duplicates = if ok {
        btf::base_duplicates::base_duplicates(&btf)?
    } else {
        Vec::new()
    };
    // Written with `?` rather than println!, so that a closed pipe
    // (`btfkit check X | head`) ends the run instead of panicking.
    let mut out = std::io::stdout().lock();
    let checked = Checked {
        file,
        btf: &btf,
        blob: &blob,
        target,
        problems: &problems,
        duplicates: &duplicates,
        kernel: args.kernel,
    };
    ok = if args.json {
        checked.write_json(&mut out, ok)?
    } else {
        checked.write_text(&mut out, ok)?
    };
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What `check` found of one BTF, to report.
struct Checked<'a> {
    file: &'a std::path::Path,
    btf: &'a Btf,
    blob: &'a [u8],
    target: Target,
    problems: &'a [Problem],
    duplicates: &'a [btf::base_duplicates::BaseDuplicate],
    /// `--kernel`: load it into the running kernel too.
    kernel: bool,
}

impl Checked<'_> {
    /// `--json`: the report as one object; whether all is well (`ok`,
    /// and the kernel's verdict).
    fn write_json(&self, out: &mut impl Write, mut ok: bool) -> anyhow::Result<bool> {
        let offsets = type_offsets(self.btf);
        let kernel = if self.kernel {
            Some(load_into_kernel(self.btf, self.blob)?)
        } else {
            None
        };
        ok &= kernel.as_ref().is_none_or(|k| k.accepted) && self.duplicates.is_empty();
        let report = Report {
            file: self.file.display().to_string(),
            target: target_name(self.target),
            types: self.btf.own_types().len(),
            bytes: self.blob.len(),
            problems: self
                .problems
                .iter()
                .map(|p| problem_json(p, self.btf, &offsets))
                .collect(),
            base_duplicates: self
                .duplicates
                .iter()
                .map(|d| DuplicateJson {
                    id: d.id,
                    base_id: d.base_id,
                    kind: d.kind,
                    name: &d.name,
                })
                .collect(),
            kernel,
        };
        serde_json::to_writer_pretty(&mut *out, &report)?;
        writeln!(out)?;
        Ok(ok)
    }

    /// The report as text; whether all is well (`ok`, no duplicates of
    /// base types, and the kernel's verdict).
    fn write_text(&self, out: &mut impl Write, mut ok: bool) -> anyhow::Result<bool> {
        if ok && self.duplicates.is_empty() {
            writeln!(
                out,
                "{}: OK ({}, {} bytes; {} rules)",
                self.file.display(),
                count(self.btf.own_types().len(), "type"),
                self.blob.len(),
                target_name(self.target)
            )?;
        } else if !ok {
            for p in self.problems {
                writeln!(out, "{p} [{}]", p.rule)?;
            }
            writeln!(
                out,
                "{}: {} ({} rules)",
                self.file.display(),
                count(self.problems.len(), "problem"),
                target_name(self.target)
            )?;
        }
        if let Some(line) = btf::base_duplicates::summary(self.duplicates) {
            writeln!(out, "{}: {line}", self.file.display())?;
            ok = false;
        }
        if self.kernel {
            if self.btf.base().is_some() {
                writeln!(
                    out,
                    "kernel: BPF_BTF_LOAD takes no base: loading the split BTF merged with its base"
                )?;
            }
            let verdict = load_into_kernel(self.btf, self.blob)?;
            print_verdict(out, &verdict)?;
            ok &= verdict.accepted;
        }
        Ok(ok)
    }
}

/// Loads the blob with BPF_BTF_LOAD and says what the kernel thought.
/// Lack of privilege is an error, not a verdict. BPF_BTF_LOAD takes no
/// base: a split BTF is loaded merged with its base.
fn load_into_kernel(btf: &Btf, blob: &[u8]) -> anyhow::Result<KernelVerdict> {
    let standalone;
    let blob = if btf.base().is_some() {
        standalone = kernel::standalone_blob(btf);
        &standalone[..]
    } else {
        blob
    };
    match kernel::load(blob) {
        Ok(_fd) => Ok(KernelVerdict {
            accepted: true,
            error: None,
            log: Vec::new(),
        }),
        Err(btf::Error::KernelRejected { error, log }) => Ok(KernelVerdict {
            accepted: false,
            error: Some(error.to_string()),
            log: log.lines().map(str::to_owned).collect(),
        }),
        Err(e) => Err(e.into()),
    }
}

fn print_verdict(out: &mut impl Write, v: &KernelVerdict) -> std::io::Result<()> {
    if let (false, Some(error)) = (v.accepted, &v.error) {
        writeln!(out, "kernel: rejected: {error}")?;
        let from = v.log.len().saturating_sub(LOG_TAIL_LINES);
        if from > 0 {
            writeln!(
                out,
                "kernel log (last {} of {} lines):",
                v.log.len() - from,
                v.log.len()
            )?;
        } else {
            writeln!(out, "kernel log:")?;
        }
        for l in &v.log[from..] {
            writeln!(out, "  {l}")?;
        }
    } else {
        writeln!(out, "kernel: accepted")?;
    }
    Ok(())
}

/// `--attach BTF SYMBOLS`.
fn attach(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    use fentry::audit::{self, AuditInput, Reach};
    let Some(symbols_path) = &args.symbols else {
        anyhow::bail!("--attach needs BTF and SYMBOLS");
    };
    let btf = btf::load_file(&args.file, args.base.as_deref()).context("cannot load BTF")?;
    let (table, is_elf) = load_symbols(symbols_path)?;
    let elf = is_elf
        .then(|| dwarf2btf::load::ElfFile::open(symbols_path))
        .transpose()?;
    // An ELF of an architecture without a description is refused here,
    // never audited with another architecture's rules.
    let obj = elf.as_ref().map(|e| e.object()).transpose()?;
    // A module's addresses are keyed by section, as its BTF's addr tags.
    // Its tags may name any of its functions; a program, only those its
    // kallsyms keeps after init.
    let module = obj.as_ref().and_then(audit::module_input);
    let symbols = match (&obj, &module) {
        (Some(o), Some(_)) => audit::elf_symbols(o),
        _ => kernel_symbols(&table),
    };
    let is_module = module.is_some();
    let (after_init, module_sites) = module.unzip();
    let (sites, model) = if let Some(elf) = &elf {
        let sites = module_sites.or_else(|| fentry_sites(symbols_path));
        let model = if dwarf2btf::funcs::has_dwarf(elf) {
            Some(dwarf2btf::funcs::FuncModel::from_elf(elf).with_context(|| {
                format!(
                    "cannot build the function model of {}",
                    symbols_path.display()
                )
            })?)
        } else {
            None
        };
        (sites, model)
    } else {
        (None, None)
    };
    let rows = audit::audit(
        &btf,
        &AuditInput {
            symbols: after_init.as_deref().unwrap_or(&symbols),
            module: is_module,
            fentry_sites: sites.as_deref(),
            model: model.as_ref(),
            version: obj.as_ref().and_then(fentry::kernel_rules::kernel_version),
        },
    );
    let counts = audit::counts(&rows);
    let wrong = audit::wrong_addresses(&btf, &symbols);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        write_attach_json(&mut out, &rows, &wrong, &table)?;
    } else {
        let note = match (&sites, &model) {
            (None, _) => " (no __mcount_loc: call sites not checked)",
            (_, None) => " (no DWARF: prototypes checked by addr tags only)",
            _ => "",
        };
        write_attach_text(&mut out, &args.file, &rows, &wrong, &counts, note)?;
    }
    out.flush()?;
    Ok(
        if counts.contains_key(&Reach::Unsafe) || !wrong.is_empty() {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// `check --attach --json`: a row per FUNC, with the wrong addresses
/// of its instances.
fn write_attach_json(
    out: &mut impl Write,
    rows: &[fentry::audit::FuncReach],
    wrong: &[fentry::audit::WrongAddress],
    table: &ksyms::Table,
) -> anyhow::Result<()> {
    let mut wrong_of: std::collections::HashMap<u32, Vec<WrongAddressJson<'_>>> =
        std::collections::HashMap::new();
    for w in wrong {
        wrong_of
            .entry(w.btf_id)
            .or_default()
            .push(WrongAddressJson {
                address: table.address_text(w.address),
                reason: &w.reason,
            });
    }
    let rows: Vec<AttachJson<'_>> = rows
        .iter()
        .map(|r| AttachJson {
            wrong_addresses: wrong_of.remove(&r.btf_id).unwrap_or_default(),
            ..AttachJson::new(r, table)
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &rows)?;
    writeln!(out)?;
    Ok(())
}

/// `check --attach`'s text: a line per FUNC that is not attachable and
/// per wrong address, then the count of each verdict and `note`.
fn write_attach_text(
    out: &mut impl Write,
    file: &std::path::Path,
    rows: &[fentry::audit::FuncReach],
    wrong: &[fentry::audit::WrongAddress],
    counts: &std::collections::BTreeMap<fentry::audit::Reach, usize>,
    note: &str,
) -> std::io::Result<()> {
    use fentry::audit::Reach;
    for r in rows.iter().filter(|r| r.reach != Reach::Attachable) {
        writeln!(
            out,
            "[{}] {} {}: {}",
            r.btf_id,
            r.name,
            r.reach.as_str(),
            r.reason
        )?;
    }
    for w in wrong {
        writeln!(out, "[{}] {} wrong-address: {}", w.btf_id, w.name, w.reason)?;
    }
    let mut summary: Vec<String> = Reach::ALL
        .iter()
        .map(|k| format!("{} {}", counts.get(k).copied().unwrap_or(0), k.as_str()))
        .collect();
    summary.push(format!("{} wrong-address", wrong.len()));
    writeln!(
        out,
        "{}: {}: {}{}",
        file.display(),
        count(rows.len(), "FUNC"),
        summary.join(", "),
        note
    )?;
    Ok(())
}

/// One FUNC of `check --attach --json`: the audit's row with its
/// addresses as "0x..." strings (JSON numbers lose the low digits of kernel
/// addresses in jq and JavaScript), a module's as `.init.text+0x0` where
/// they are in another section than `.text`.
#[derive(Serialize)]
struct AttachJson<'a> {
    btf_id: u32,
    name: &'a str,
    reach: fentry::audit::Reach,
    address: Option<String>,
    fentry_site: Option<bool>,
    tags: Vec<String>,
    arg_regs: u32,
    reason: &'a str,
    /// Its addr tags, or the address in its `..` name, that are not an
    /// address of a function symbol of its name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    wrong_addresses: Vec<WrongAddressJson<'a>>,
}

/// One of [`AttachJson::wrong_addresses`].
#[derive(Serialize)]
struct WrongAddressJson<'a> {
    address: String,
    reason: &'a str,
}

impl<'a> AttachJson<'a> {
    fn new(r: &'a fentry::audit::FuncReach, table: &ksyms::Table) -> Self {
        AttachJson {
            btf_id: r.btf_id,
            name: &r.name,
            reach: r.reach,
            address: r.address.map(|a| table.address_text(a)),
            fentry_site: r.fentry_site,
            tags: r.tags.iter().map(|&a| table.address_text(a)).collect(),
            arg_regs: r.arg_regs,
            reason: &r.reason,
            wrong_addresses: Vec::new(),
        }
    }
}

/// The symbols of SYMBOLS (an ELF, compressed or not, a kallsyms file or a
/// System.map), and whether it is an ELF.
pub(crate) fn load_symbols(path: &std::path::Path) -> anyhow::Result<(ksyms::Table, bool)> {
    let is_elf = ksyms::elf::looks_like_elf(path);
    let raw = if is_elf {
        ksyms::elf::read(path)?
    } else if path.to_string_lossy().contains("kallsyms") {
        ksyms::kallsyms::read(path, ksyms::kallsyms::Hidden::Error)?
    } else {
        ksyms::system_map::read(path)?
    };
    Ok((ksyms::Table::new(raw), is_elf))
}

/// The kernel image's symbols as the audit takes them.
pub(crate) fn kernel_symbols(table: &ksyms::Table) -> Vec<fentry::audit::KernelSymbol<'_>> {
    table
        .iter()
        .filter(|s| s.module.is_none())
        .map(|s| fentry::audit::KernelSymbol {
            name: s.name,
            address: s.addr,
            size: s.size.unwrap_or(0),
            function: matches!(s.type_char, 't' | 'T' | 'w' | 'W'),
        })
        .collect()
}

/// The fentry call sites of a vmlinux, or None (with a warning) when it
/// has none to read.
pub(crate) fn fentry_sites(path: &std::path::Path) -> Option<Vec<u64>> {
    match ksyms::mcount::read(path) {
        Ok(s) => Some(s),
        Err(e) => {
            eprintln!("btfkit: warning: fentry call sites not checked: {e}");
            None
        }
    }
}
