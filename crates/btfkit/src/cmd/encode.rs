//! `btfkit encode ELF [-o OUT.btf] [--embed OUT.elf] [--base VMLINUX] [-j N]
//! [--funcs exact|pahole] [--vars percpu|all|none] [--addr-tags ambiguous|all|none]`:
//! BTF from DWARF, as `pahole -J` makes it.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use dwarf2btf::{AddrTags, EncodeOptions, FuncMode, Progress, VarsMode};

#[derive(clap::Args)]
pub struct EncodeArgs {
    /// ELF file with DWARF (vmlinux or a kernel module)
    elf: PathBuf,
    /// Write raw (detached) BTF here
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Write a copy of ELF with a .BTF section here
    #[arg(long)]
    embed: Option<PathBuf>,
    /// Encode split BTF over this base (vmlinux ELF or raw BTF), for modules
    #[arg(long)]
    base: Option<PathBuf>,
    /// Worker threads (default: all cores)
    #[arg(short, long, default_value_t = 0)]
    jobs: usize,
    /// Which functions to encode
    #[arg(long, value_enum, default_value_t = Funcs::Exact)]
    funcs: Funcs,
    /// Which variables to encode
    #[arg(long, value_enum, default_value_t = Vars::Percpu)]
    vars: Vars,
    /// Which FUNCs get DECL_TAG "addr=0x..." tags
    #[arg(long, value_enum, default_value_t = Tags::Ambiguous)]
    addr_tags: Tags,
    /// Encode Rust compilation units too
    #[arg(long)]
    keep_rust: bool,
    /// Write a layout section (bpf-next's BTF header of 32 bytes) so that
    /// readers can skip kinds they do not know; not for split BTF (--base)
    #[arg(long)]
    layout: bool,
    /// dwz's alternate debug file, instead of the one the ELF's
    /// .gnu_debugaltlink or .debug_sup names
    #[arg(long, value_name = "FILE")]
    dwz_alt: Option<std::path::PathBuf>,
    /// Print each stage's duration and the type counts
    #[arg(short, long)]
    verbose: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Funcs {
    Exact,
    Pahole,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Vars {
    Percpu,
    All,
    None,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Tags {
    Ambiguous,
    All,
    None,
}

/// A progress bar on stderr when it is a terminal; with `-v`, stage
/// durations.
struct Bar {
    bar: Mutex<Option<indicatif::ProgressBar>>,
    draw: bool,
    verbose: bool,
    stage: Mutex<Option<(String, std::time::Instant)>>,
}

impl Progress for Bar {
    fn stage(&self, name: &str, total: u64) {
        self.log_stage(Some(name));
        if !self.draw {
            return;
        }
        let Ok(mut slot) = self.bar.lock() else {
            return;
        };
        if let Some(old) = slot.take() {
            old.finish_and_clear();
        }
        let bar = if total > 0 {
            let b = indicatif::ProgressBar::new(total);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{msg:32} [{bar:40}] {pos}/{len} {elapsed}")
            {
                b.set_style(style.progress_chars("=> "));
            }
            b
        } else {
            let b = indicatif::ProgressBar::new_spinner();
            b.enable_steady_tick(std::time::Duration::from_millis(120));
            b
        };
        bar.set_message(name.to_owned());
        *slot = Some(bar);
    }

    fn advance(&self, n: u64) {
        if let Ok(slot) = self.bar.lock() {
            if let Some(b) = slot.as_ref() {
                b.inc(n);
            }
        }
    }
}

impl Bar {
    fn log_stage(&self, next: Option<&str>) {
        if !self.verbose {
            return;
        }
        if let Ok(mut stage) = self.stage.lock() {
            if let Some((name, start)) = stage.take() {
                eprintln!("{name}: {:.2?}", start.elapsed());
            }
            *stage = next.map(|n| (n.to_owned(), std::time::Instant::now()));
        }
    }

    fn done(&self) {
        self.log_stage(None);
        if let Ok(mut slot) = self.bar.lock() {
            if let Some(b) = slot.take() {
                b.finish_and_clear();
            }
        }
    }
}

pub fn run(args: EncodeArgs) -> anyhow::Result<ExitCode> {
    if args.output.is_none() && args.embed.is_none() {
        anyhow::bail!("nothing to write: give -o OUT.btf and/or --embed OUT.elf");
    }
    // An output that is an input would destroy it: refused before anything
    // is read. `--embed` onto the ELF itself is `pahole -J` in place (the
    // ELF plus its .BTF, replaced whole), not a loss.
    let others: Vec<&std::path::Path> = [args.base.as_deref(), args.dwz_alt.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if let Some(out) = &args.output {
        let mut inputs = vec![args.elf.as_path()];
        inputs.extend(&others);
        fileio::output_file::refuse_input(out, &inputs)?;
    }
    if let Some(out) = &args.embed {
        fileio::output_file::refuse_input(out, &others)?;
    }
    let base = match &args.base {
        Some(b) => Some(Arc::new(
            btf::load_file(b, None).context("cannot load base BTF")?,
        )),
        None => None,
    };
    let opts = EncodeOptions {
        jobs: args.jobs,
        funcs: match args.funcs {
            Funcs::Exact => FuncMode::Exact,
            Funcs::Pahole => FuncMode::Pahole,
        },
        vars: match args.vars {
            Vars::Percpu => VarsMode::Percpu,
            Vars::All => VarsMode::All,
            Vars::None => VarsMode::None,
        },
        addr_tags: match args.addr_tags {
            Tags::Ambiguous => AddrTags::Ambiguous,
            Tags::All => AddrTags::All,
            Tags::None => AddrTags::None,
        },
        keep_rust: args.keep_rust,
        no_dedup: false,
        layout: args.layout,
        attributes: false,
        dwz_alt: args.dwz_alt.clone(),
    };
    let elf = dwarf2btf::load::ElfFile::open(&args.elf)?;
    let bar = Bar {
        bar: Mutex::new(None),
        draw: std::io::stderr().is_terminal(),
        verbose: args.verbose,
        stage: Mutex::new(None),
    };
    let encoded = dwarf2btf::encode(&elf, base, &opts, &bar);
    bar.done();
    let encoded = encoded?;
    for w in &encoded.warnings {
        eprintln!("btfkit: warning: {w}");
    }
    if args.verbose {
        eprintln!(
            "{} types before dedup, {} after",
            encoded.types_before_dedup,
            encoded.btf.type_count()
        );
    }
    let bytes = encoded.btf.to_bytes();
    if let Some(out) = &args.output {
        fileio::output_file::write(out, &bytes, None)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    if let Some(out) = &args.embed {
        // Streamed from the input (its unchanged bytes copied in the
        // kernel), as `pahole -J` in place is.
        let perm = std::fs::metadata(&args.elf).ok().map(|m| m.permissions());
        match dwarf2btf::embed::write_embedded(out, &elf, &[(".BTF", &bytes)], perm) {
            Ok(()) => {}
            Err(e @ dwarf2btf::Error::Embed { .. }) => anyhow::bail!("{}: {e}", args.elf.display()),
            Err(e) => return Err(e.into()),
        }
    }
    // The process ends here: freeing the BTF and the base's ~100,000 types
    // one by one would cost a module's encode a tenth of its time.
    std::mem::forget(encoded);
    Ok(ExitCode::SUCCESS)
}
