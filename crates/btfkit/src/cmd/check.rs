//! `btfkit check FILE [--base B] [--kernel]`: the kernel verifier's rules, and
//! optionally the kernel's verifier itself.

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
}

/// Lines of the kernel's log shown on rejection: the error is at the end,
/// after one line per type checked.
const LOG_TAIL_LINES: usize = 40;

pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
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
    // Written with `?` rather than println!, so that a closed pipe
    // (`btfkit check X | head`) ends the run instead of panicking.
    let mut out = std::io::stdout().lock();
    if ok {
        writeln!(
            out,
            "{}: OK ({} types, {} bytes)",
            file.display(),
            btf.own_types().len(),
            blob.len()
        )?;
    } else {
        for p in &problems {
            writeln!(out, "{p} [{}]", p.rule)?;
        }
        writeln!(out, "{}: {} problems", file.display(), problems.len())?;
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
