//! `btfkit layout FILE [-C NAMES] [-F btf|dwarf] [--sizes] [--holes N]
//! [-E] [--hex] [--contains TYPE] [-y PREFIX] [-a]`: pahole's classic
//! layout view (what `pahole` prints without `-J`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

/// What `btfkit pahole` without `-J` passes on.
pub struct LayoutArgs {
    pub file: PathBuf,
    /// `--btf_base`
    pub base: Option<PathBuf>,
    /// `-C`, the comma list already split; empty: every struct and union
    pub classes: Vec<String>,
    /// `-F btf|dwarf`; `None`: DWARF when the file has it, else BTF (pahole's order)
    pub format: Option<String>,
    /// `--sizes`
    pub sizes: bool,
    /// `-H/--holes N`
    pub holes: Option<usize>,
    /// `-E/--expand_types`
    pub expand_types: bool,
    /// `--hex`
    pub hex: bool,
    /// `-i/--contains TYPE`: the comma list, already split
    pub contains: Vec<String>,
    /// `-y/--prefix_filter PREFIX`
    pub prefix: Option<String>,
    /// `-a/--anon_include`
    pub anon_include: bool,
}

#[derive(clap::Args)]
pub struct LayoutCli {
    /// An ELF with DWARF or .BTF, raw BTF, or /sys/kernel/btf/*
    file: PathBuf,
    /// Only these types (a comma-separated list, as pahole's -C)
    #[arg(short = 'C', long = "class_name", value_delimiter = ',')]
    classes: Vec<String>,
    /// Where the types come from: btf or dwarf
    #[arg(short = 'F', long = "format_path")]
    format: Option<String>,
    /// One line per struct: name, size, number of holes
    #[arg(short = 's', long)]
    sizes: bool,
    /// Only structs with at least this many holes
    #[arg(short = 'H', long)]
    holes: Option<usize>,
    /// Base BTF for split BTF (a module); `--btf_base` (pahole's name) also works
    #[arg(long = "base", alias = "btf_base")]
    btf_base: Option<PathBuf>,
    /// Follow typedefs and print member structs, unions and enums in full
    #[arg(short = 'E', long = "expand_types")]
    expand_types: bool,
    /// Offsets, sizes and enumerator values in hexadecimal
    #[arg(long = "hex")]
    hex: bool,
    /// List the structs and unions with a member of this type (a comma list)
    #[arg(short = 'i', long = "contains", value_delimiter = ',')]
    contains: Vec<String>,
    /// Only structs and unions whose name starts with PREFIX
    #[arg(short = 'y', long = "prefix_filter", value_name = "PREFIX")]
    prefix: Option<String>,
    /// Anonymous structs and unions too (those a typedef names)
    #[arg(short = 'a', long = "anon_include")]
    anon_include: bool,
}

impl From<LayoutCli> for LayoutArgs {
    fn from(c: LayoutCli) -> LayoutArgs {
        LayoutArgs {
            file: c.file,
            base: c.btf_base,
            classes: c.classes,
            format: c.format,
            sizes: c.sizes,
            holes: c.holes,
            expand_types: c.expand_types,
            hex: c.hex,
            contains: c.contains,
            prefix: c.prefix,
            anon_include: c.anon_include,
        }
    }
}

pub fn run_cli(args: LayoutCli) -> anyhow::Result<ExitCode> {
    run(args.into())
}

pub fn run(args: LayoutArgs) -> anyhow::Result<ExitCode> {
    // pahole's --contains takes the place of -C's names.
    let contains = !args.contains.is_empty();
    let classes = expand_class_files(if contains {
        &args.contains
    } else {
        &args.classes
    })?;
    let format = match args.format.as_deref() {
        Some("btf") => Format::Btf,
        Some("dwarf") => Format::Dwarf,
        Some(other) => {
            eprintln!("btfkit: unknown format '{other}' (btf or dwarf)");
            return Ok(ExitCode::from(2));
        }
        // pahole reads BTF whenever a base BTF is given.
        None if args.base.is_some() => Format::Btf,
        None => default_format(&args.file)?,
    };
    let cacheline = layout::host_cacheline_size();
    let filter = layout::Filter {
        min_holes: args.holes.unwrap_or(0),
        sizes: args.sizes,
        prefix: args.prefix.as_deref(),
        anon_include: args.anon_include,
        contains,
        view: layout::View {
            hex: args.hex,
            expand_types: args.expand_types,
        },
    };
    let (out, missing) = match format {
        Format::Btf => {
            let btf = btf::load_file(&args.file, args.base.as_deref())
                .map_err(|e| anyhow::anyhow!("cannot load BTF: {e}"))?;
            let mut layout = layout::Layout::from_btf(&btf, cacheline);
            let mut out = String::new();
            let mut missing = None;
            let mut seen = layout::Seen::default();
            if classes.is_empty() {
                layout.print_all(filter, &mut seen, &mut out);
            } else {
                for name in &classes {
                    match layout.find(name) {
                        Some(id) => layout.print_named(id, filter, &mut seen, &mut out),
                        None => {
                            missing = Some(name.clone());
                            break;
                        }
                    }
                }
            }
            // The process ends soon: handing the model's allocations back
            // one by one would only add to the run time.
            std::mem::forget(layout);
            std::mem::forget(btf);
            (out, missing)
        }
        Format::Dwarf => layout::dwarf::print(&args.file, &classes, filter, cacheline)
            .map_err(|e| anyhow::anyhow!("cannot read DWARF: {e}"))?,
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes())?;
    stdout.flush()?;
    // pahole reports the first name it could not find and still exits 0.
    if let Some(name) = missing {
        eprintln!("btfkit: type '{name}' not found");
    }
    Ok(ExitCode::SUCCESS)
}

/// pahole's `-C file://PATH`: the names are the lines of a file.
fn expand_class_files(classes: &[String]) -> anyhow::Result<Vec<String>> {
    let mut out = Vec::with_capacity(classes.len());
    for c in classes {
        match c.strip_prefix("file://") {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read the -C list {path}"))?;
                out.extend(text.lines().map(str::to_owned));
            }
            None => out.push(c.clone()),
        }
    }
    Ok(out)
}

enum Format {
    Btf,
    Dwarf,
}

/// pahole tries DWARF first, then BTF.
fn default_format(path: &std::path::Path) -> anyhow::Result<Format> {
    Ok(if layout::dwarf::has_dwarf(path)? {
        Format::Dwarf
    } else {
        Format::Btf
    })
}
