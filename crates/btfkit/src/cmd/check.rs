//! `btfkit check FILE [--base B] [--kernel]`: the kernel verifier's rules, and
//! optionally the kernel's verifier itself. `btfkit check --attach BTF
//! SYMBOLS [--json]`: what fentry does with each FUNC of a vmlinux BTF in an
//! unmodified kernel (dwarf2btf::funcs::attach); exit 1 on an unsafe FUNC.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use btf::kernel::{self, KernelError};
use btf::Btf;

#[derive(clap::Args)]
pub struct CheckArgs {
    /// Raw BTF, an ELF with a .BTF section, or a file under /sys/kernel/btf
    pub file: PathBuf,
    /// Base BTF of a split BTF (a module's); found automatically under /sys/kernel/btf
    #[arg(long)]
    pub base: Option<PathBuf>,
    /// Also load it into the running kernel with BPF_BTF_LOAD (root or CAP_BPF)
    #[arg(long)]
    pub kernel: bool,
    /// Audit fentry attach by name against SYMBOLS: the vmlinux ELF (also
    /// reads its __mcount_loc and DWARF), a System.map or /proc/kallsyms
    #[arg(long, requires = "symbols")]
    pub attach: bool,
    /// With --attach: the kernel's symbols
    pub symbols: Option<PathBuf>,
    /// With --attach: every FUNC as JSON
    #[arg(long, requires = "attach")]
    pub json: bool,
}

/// Lines of the kernel's log shown on rejection: the error is at the end,
/// after one line per type checked.
const LOG_TAIL_LINES: usize = 40;

pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    if args.attach {
        return attach(&args);
    }
    let file = &args.file;
    let blob = btf::read_blob(file)?;
    let base = match btf::default_base(file, args.base.as_deref()) {
        Some(b) => Some(Arc::new(btf::load_file(&b, None)?)),
        None => None,
    };
    let btf = btf::parse_any(&blob, base).with_context(|| format!("{}", file.display()))?;

    let mut problems = btf::validate::validate_blob(&blob, &btf);
    problems.extend(btf::validate::validate(&btf));
    problems.sort_by_key(|p| p.id);
    let mut ok = problems.is_empty();
    // Types of the base that a split BTF has again instead of referring to
    // (a walk of its graph: only once the ids are known to be valid).
    let duplicates = ok.then(|| btf::base_duplicates::summary(&btf));
    let duplicates = duplicates.transpose()?.flatten();
    // Written with `?` rather than println!, so that a closed pipe
    // (`btfkit check X | head`) ends the run instead of panicking.
    let mut out = std::io::stdout().lock();
    if ok && duplicates.is_none() {
        writeln!(
            out,
            "{}: OK ({} types, {} bytes)",
            file.display(),
            btf.own_types().len(),
            blob.len()
        )?;
    } else if !ok {
        for p in &problems {
            writeln!(out, "{p} [{}]", p.rule)?;
        }
        writeln!(out, "{}: {} problems", file.display(), problems.len())?;
    }
    if let Some(line) = duplicates {
        writeln!(out, "{}: {line}", file.display())?;
        ok = false;
    }

    if args.kernel {
        ok &= load_into_kernel(&mut out, &btf, &blob)?;
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Loads the blob with BPF_BTF_LOAD and says what the kernel thought: true
/// if it accepted it. Lack of privilege is an error, not a verdict.
fn load_into_kernel(out: &mut impl Write, btf: &Btf, blob: &[u8]) -> anyhow::Result<bool> {
    let standalone;
    let blob = if btf.base().is_some() {
        writeln!(
            out,
            "kernel: BPF_BTF_LOAD takes no base: loading the split BTF merged with its base"
        )?;
        standalone = kernel::standalone_blob(btf);
        &standalone[..]
    } else {
        blob
    };
    match kernel::load(blob) {
        Ok(_fd) => {
            writeln!(out, "kernel: accepted")?;
            Ok(true)
        }
        Err(KernelError::Rejected { error, log }) => {
            writeln!(out, "kernel: rejected: {error}")?;
            let lines: Vec<&str> = log.lines().collect();
            let from = lines.len().saturating_sub(LOG_TAIL_LINES);
            if from > 0 {
                writeln!(
                    out,
                    "kernel log (last {} of {} lines):",
                    lines.len() - from,
                    lines.len()
                )?;
            } else {
                writeln!(out, "kernel log:")?;
            }
            for l in &lines[from..] {
                writeln!(out, "  {l}")?;
            }
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// `--attach BTF SYMBOLS`.
fn attach(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    use dwarf2btf::funcs::attach::{self, AuditInput, Reach};
    let Some(symbols_path) = &args.symbols else {
        anyhow::bail!("--attach needs BTF and SYMBOLS");
    };
    let btf = btf::load_file(&args.file, args.base.as_deref())
        .with_context(|| format!("cannot load BTF from {}", args.file.display()))?;
    let (table, is_elf) = load_symbols(symbols_path)?;
    let symbols = kernel_symbols(&table);
    let (sites, model) = if is_elf {
        let sites = fentry_sites(symbols_path);
        let elf = dwarf2btf::load::ElfFile::open(symbols_path)?;
        let model = if dwarf2btf::funcs::has_dwarf(&elf) {
            Some(
                dwarf2btf::funcs::FuncModel::from_elf(&elf).with_context(|| {
                    format!(
                        "cannot build the function model of {}",
                        symbols_path.display()
                    )
                })?,
            )
        } else {
            None
        };
        (sites, model)
    } else {
        (None, None)
    };
    let rows = attach::audit(
        &btf,
        &AuditInput {
            symbols: &symbols,
            fentry_sites: sites.as_deref(),
            model: model.as_ref(),
        },
    );
    let counts = attach::counts(&rows);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
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
        let summary: Vec<String> = Reach::ALL
            .iter()
            .map(|k| format!("{} {}", counts.get(k).copied().unwrap_or(0), k.as_str()))
            .collect();
        writeln!(
            out,
            "{}: {} FUNCs: {}{}",
            args.file.display(),
            rows.len(),
            summary.join(", "),
            match (&sites, &model) {
                (None, _) => " (no __mcount_loc: call sites not checked)",
                (_, None) => " (no DWARF: prototypes checked by addr tags only)",
                _ => "",
            }
        )?;
    }
    out.flush()?;
    Ok(if counts.contains_key(&Reach::Unsafe) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The symbols of SYMBOLS (an ELF, a kallsyms file or a System.map), and
/// whether it is an ELF.
pub(crate) fn load_symbols(path: &std::path::Path) -> anyhow::Result<(ksyms::Table, bool)> {
    let is_elf = std::fs::File::open(path)
        .and_then(|mut f| {
            let mut magic = [0u8; 4];
            std::io::Read::read_exact(&mut f, &mut magic).map(|_| magic == *b"\x7fELF")
        })
        .unwrap_or(false);
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
pub(crate) fn kernel_symbols(
    table: &ksyms::Table,
) -> Vec<dwarf2btf::funcs::attach::KernelSymbol<'_>> {
    table
        .iter()
        .filter(|s| s.module.is_none())
        .map(|s| dwarf2btf::funcs::attach::KernelSymbol {
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
