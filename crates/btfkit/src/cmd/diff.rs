//! `btfkit diff A B [--base B] [--base-a X] [--base-b Y] [--only KINDS] [--json]`:
//! semantic difference of two BTFs by name and layout. Exit 0 when equal,
//! 1 when they differ, as diff(1) does.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use btf::diff::{layout_text, Category, Diff, DiffOptions, Only};

#[derive(clap::Args)]
pub struct DiffArgs {
    /// First BTF: raw, an ELF with .BTF, or /sys/kernel/btf/*
    a: PathBuf,
    /// Second BTF
    b: PathBuf,
    /// Base of A and B when they are split BTF (modules of one kernel)
    #[arg(long)]
    base: Option<PathBuf>,
    /// Base of A when A is split BTF (a module); overrides --base
    #[arg(long)]
    base_a: Option<PathBuf>,
    /// Base of B when B is split BTF (a module); overrides --base
    #[arg(long)]
    base_b: Option<PathBuf>,
    /// Compare only these, comma-separated: struct,union,enum,typedef,func,var,inline
    #[arg(long, value_delimiter = ',', value_parser = parse_category)]
    only: Vec<Category>,
    /// Print the difference as JSON
    #[arg(long)]
    json: bool,
}

fn parse_category(s: &str) -> Result<Category, String> {
    Category::from_name(s)
        .ok_or_else(|| format!("'{s}' is none of struct, union, enum, typedef, func, var, inline"))
}

fn load(path: &Path, base: Option<&Path>) -> anyhow::Result<btf::Btf> {
    // load_file's error already names the file and the cause; as an
    // anyhow source it would print the cause a second time.
    btf::load_file(path, base).map_err(|e| anyhow::anyhow!("cannot load BTF: {e}"))
}

pub fn run(args: DiffArgs) -> anyhow::Result<ExitCode> {
    let a = load(&args.a, args.base_a.as_deref().or(args.base.as_deref()))?;
    let b = load(&args.b, args.base_b.as_deref().or(args.base.as_deref()))?;
    let mut opts = DiffOptions::default();
    if !args.only.is_empty() {
        opts.categories = args.only.clone();
    }
    let d = btf::diff::diff(&a, &b, &opts);
    let mut out = BufWriter::new(std::io::stdout().lock());
    if args.json {
        serde_json::to_writer_pretty(&mut out, &d)?;
        writeln!(out)?;
    } else {
        print_text(&mut out, &args, &d)?;
    }
    out.flush()?;
    Ok(if d.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_text(out: &mut impl Write, args: &DiffArgs, d: &Diff) -> std::io::Result<()> {
    writeln!(out, "--- A: {}", args.a.display())?;
    writeln!(out, "+++ B: {}", args.b.display())?;
    print_only(out, "-", d.only_a.as_slice())?;
    print_only(out, "+", d.only_b.as_slice())?;
    for c in &d.changed {
        let counts = if c.count_a == 1 && c.count_b == 1 {
            String::new()
        } else {
            format!(" ({} in A, {} in B)", c.count_a, c.count_b)
        };
        writeln!(out, "~ {} {}{counts}", c.category.as_str(), c.name)?;
        if c.details.is_empty() {
            for l in &c.unmatched_a {
                writeln!(out, "    - {}", layout_text(l))?;
            }
            for l in &c.unmatched_b {
                writeln!(out, "    + {}", layout_text(l))?;
            }
        } else {
            for line in &c.details {
                writeln!(out, "    {line}")?;
            }
        }
    }
    writeln!(
        out,
        "{} only in A, {} only in B, {} changed, {} equal",
        d.only_a.len(),
        d.only_b.len(),
        d.changed.len(),
        d.equal
    )
}

fn print_only(out: &mut impl Write, sign: &str, only: &[Only]) -> std::io::Result<()> {
    for o in only {
        for l in &o.layouts {
            writeln!(
                out,
                "{sign} {} {}: {}",
                o.category.as_str(),
                o.name,
                layout_text(l)
            )?;
        }
    }
    Ok(())
}
