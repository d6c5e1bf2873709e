//! `btfkit pahole ARGS...`, also reached when the binary runs under the name
//! `pahole` (a symlink), so that `make PAHOLE=/path/to/pahole` builds a
//! kernel's BTF with btfkit. The arguments are pahole's, parsed the way its
//! argp parser takes them (`-jN` attached, `--opt=value` or `--opt value`,
//! bundled short flags), because kernel scripts pass exactly those forms.
//!
//! With `-J` or `--btf_encode_detached` it encodes: `.BTF` written into the
//! ELF in place (a complete new file renamed over the old one), or raw BTF
//! to a file. Without them it prints pahole's layout view (cmd/layout.rs).
//!
//! What each `--btf_features` name selects is the table [`FEATURES`];
//! docs/pahole-drop-in.md ("Feature names") shows the same table.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use dwarf2btf::{AddrTags, EncodeOptions, FuncMode, NoProgress, VarsMode};

use super::layout::LayoutArgs;

/// The pahole version btfkit answers to `--version`: the highest release
/// whose features btfkit all implements. Kernel scripts pick flags from it
/// (CONFIG_PAHOLE_VERSION): 1.26+ switches to `--btf_features`, 1.27+ adds
/// decl_tag_kfuncs and reproducible_build, 1.28 distilled_base and
/// global_var, 1.30 attributes, 1.31 layout; 1.32 reads dwz's alternate
/// files and DWARF whose units refer to each other (force_cu_merging). The
/// BTF of Debian 6.1's vmlinux and of Linux 7.2 built with GCC 16 and
/// clang 21 differs from pahole 1.32's only where btfkit keeps more or
/// where the machine code shows 1.32 is wrong (tests/pahole_cli.rs,
/// `encode_parity_with_pahole_1_32_*`).
pub const PAHOLE_VERSION: &str = "v1.32";

/// `btfkit pahole`: every argument goes to pahole's parser below.
#[derive(clap::Args)]
#[command(disable_help_flag = true, disable_version_flag = true)]
pub struct PaholeArgs {
    /// pahole's arguments (-J, -j, --btf_features=..., --btf_base, FILE, ...)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<OsString>,
}

/// What a `--btf_features` name does in btfkit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// btfkit always encodes this (no way to turn it off).
    Always,
    /// No effect: btfkit's function policy (`--funcs`) decides instead.
    FuncPolicy,
    /// Per-CPU variables (`--vars percpu`).
    Var,
    /// Every global variable (`--vars all`).
    GlobalVar,
    /// `.BTF.base` next to `.BTF` (split BTF over a distilled base).
    DistilledBase,
    /// The layout section (`--layout`; base BTF only, as pahole).
    Layout,
    /// `address_space(1)` type attributes on the bpf_arena pointers of
    /// kfuncs flagged KF_ARENA_* (kfuncs.rs).
    Attributes,
}

/// The feature names btfkit implements, as pahole 1.32 knows them, and
/// their effect (`--supported_btf_features` prints them; `all` selects
/// them all).
const FEATURES: &[(&str, Effect)] = &[
    ("encode_force", Effect::Always),
    ("var", Effect::Var),
    ("float", Effect::Always),
    ("decl_tag", Effect::Always),
    ("type_tag", Effect::Always),
    ("enum64", Effect::Always),
    ("optimized_func", Effect::FuncPolicy),
    ("consistent_func", Effect::FuncPolicy),
    ("decl_tag_kfuncs", Effect::Always),
    ("reproducible_build", Effect::Always),
    ("distilled_base", Effect::DistilledBase),
    ("global_var", Effect::GlobalVar),
    ("attributes", Effect::Attributes),
    ("true_signature", Effect::FuncPolicy),
    // pahole converts each unit alone unless units refer to each other
    // (link-time optimization), which it detects and then merges them
    // into one conversion; force_cu_merging merges every unit. btfkit
    // always reads into a unit's conversion the units it refers to
    // (dwarf2btf's partial_units.rs), and merging units that do not refer
    // to each other gives the same BTF after dedup: nothing to change.
    ("force_cu_merging", Effect::Always),
    ("layout", Effect::Layout),
];

/// pahole's default set: what `--btf_features=default` and a leading `+`
/// select.
const DEFAULT_FEATURES: &[&str] = &[
    "encode_force",
    "var",
    "float",
    "decl_tag",
    "type_tag",
    "enum64",
    "optimized_func",
    "consistent_func",
    "decl_tag_kfuncs",
];

/// A usage error: exit code 2.
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.into()))
}

/// Whether `err` is a usage error (exit code 2).
pub fn is_usage(err: &anyhow::Error) -> bool {
    err.downcast_ref::<Usage>().is_some()
}

/// The parsed command line.
#[derive(Default)]
struct Options {
    encode: bool,
    detached: Option<PathBuf>,
    base: Option<PathBuf>,
    /// None: one thread (pahole's default); Some(0): all cores.
    jobs: Option<usize>,
    /// The features every --btf_features selected (accumulated), with
    /// `default` and `all` expanded.
    features: Vec<&'static str>,
    features_given: bool,
    /// A name of a `--btf_features_strict` list that btfkit does not know.
    strict_unknown: Option<String>,
    skip_vars: bool,
    lang_exclude: Vec<String>,
    funcs: Option<FuncMode>,
    vars: Option<VarsMode>,
    addr_tags: Option<AddrTags>,
    classes: Vec<String>,
    format: Option<String>,
    sizes: bool,
    holes: Option<usize>,
    expand_types: bool,
    hex: bool,
    contains: Vec<String>,
    prefix: Option<String>,
    anon_include: bool,
    version: bool,
    supported: bool,
    help: bool,
    files: Vec<PathBuf>,
}

/// Long options: name, and whether a value follows (`--name=v` or
/// `--name v`).
const LONG: &[(&str, bool)] = &[
    ("btf_encode", false),
    ("jobs", false),
    ("btf_features", true),
    ("btf_features_strict", true),
    ("btf_gen_all", false),
    ("supported_btf_features", false),
    ("btf_gen_floats", false),
    ("btf_gen_optimized", false),
    ("skip_encoding_btf_inconsistent_proto", false),
    ("skip_encoding_btf_vars", false),
    ("lang_exclude", true),
    ("btf_base", true),
    ("btf_encode_detached", true),
    ("class_name", true),
    ("format_path", true),
    ("sizes", false),
    ("holes", true),
    ("expand_types", false),
    ("hex", false),
    ("contains", true),
    ("prefix_filter", true),
    ("anon_include", false),
    ("version", false),
    ("help", false),
    ("funcs", true),
    ("vars", true),
    ("addr-tags", true),
];

fn parse(args: &[OsString]) -> anyhow::Result<Options> {
    let mut o = Options::default();
    let mut it = args.iter();
    let mut only_files = false;
    while let Some(arg) = it.next() {
        let Some(s) = arg
            .to_str()
            .filter(|s| !only_files && s.starts_with('-') && s.len() > 1)
        else {
            o.files.push(PathBuf::from(arg));
            continue;
        };
        if s == "--" {
            only_files = true;
        } else if let Some(long) = s.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let Some(&(name, takes)) = LONG.iter().find(|(n, _)| *n == name) else {
                return Err(usage(format!("unrecognized option '--{name}'")));
            };
            let value = match (takes, inline) {
                (true, Some(v)) => Some(v),
                (true, None) => Some(
                    it.next()
                        .and_then(|v| v.to_str())
                        .ok_or_else(|| usage(format!("option '--{name}' requires an argument")))?
                        .to_owned(),
                ),
                // `--jobs=N` is the long form of `-jN`.
                (false, Some(v)) if name == "jobs" => Some(v),
                (false, Some(_)) => {
                    return Err(usage(format!(
                        "option '--{name}' doesn't allow an argument"
                    )))
                }
                (false, None) => None,
            };
            long_option(&mut o, name, value)?;
        } else {
            short_options(&mut o, &s[1..], &mut it)?;
        }
    }
    Ok(o)
}

fn short_options(
    o: &mut Options,
    flags: &str,
    rest: &mut std::slice::Iter<'_, OsString>,
) -> anyhow::Result<()> {
    for (i, c) in flags.char_indices() {
        let attached = &flags[i + c.len_utf8()..];
        match c {
            'J' => o.encode = true,
            's' => o.sizes = true,
            'E' => o.expand_types = true,
            'a' => o.anon_include = true,
            'j' => {
                o.jobs = Some(jobs(attached)?);
                return Ok(());
            }
            'C' | 'F' | 'H' | 'i' | 'y' => {
                let value = if attached.is_empty() {
                    rest.next()
                        .and_then(|v| v.to_str())
                        .ok_or_else(|| usage(format!("option requires an argument -- '{c}'")))?
                        .to_owned()
                } else {
                    attached.to_owned()
                };
                let name = match c {
                    'C' => "class_name",
                    'F' => "format_path",
                    'i' => "contains",
                    'y' => "prefix_filter",
                    _ => "holes",
                };
                return long_option(o, name, Some(value));
            }
            _ => return Err(usage(format!("invalid option -- '{c}'"))),
        }
    }
    Ok(())
}

/// `-j` alone: all cores; `-jN`: N threads.
fn jobs(value: &str) -> anyhow::Result<usize> {
    if value.is_empty() {
        return Ok(0);
    }
    value
        .parse()
        .map_err(|_| usage(format!("invalid number of jobs '{value}'")))
}

fn long_option(o: &mut Options, name: &str, value: Option<String>) -> anyhow::Result<()> {
    let v = value.unwrap_or_default();
    match name {
        "btf_encode" => o.encode = true,
        "jobs" => o.jobs = Some(jobs(&v)?),
        "btf_features" | "btf_features_strict" => {
            select_features(o, &v, name == "btf_features_strict")
        }
        "btf_gen_all" => select_features(o, "all", false),
        "supported_btf_features" => o.supported = true,
        // Floats are always encoded; the optimized/inconsistent-prototype
        // choices belong to the function policy (--funcs).
        "btf_gen_floats" | "btf_gen_optimized" | "skip_encoding_btf_inconsistent_proto" => {}
        "skip_encoding_btf_vars" => o.skip_vars = true,
        "lang_exclude" => o
            .lang_exclude
            .extend(v.split(',').map(|l| l.trim().to_ascii_lowercase())),
        "btf_base" => o.base = Some(PathBuf::from(v)),
        "btf_encode_detached" => {
            o.encode = true;
            o.detached = Some(PathBuf::from(v));
        }
        "class_name" => o.classes.extend(
            v.split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
        ),
        "format_path" => o.format = Some(v),
        "sizes" => o.sizes = true,
        "holes" => {
            o.holes = Some(
                v.parse()
                    .map_err(|_| usage(format!("--holes: not a number: '{v}'")))?,
            )
        }
        "expand_types" => o.expand_types = true,
        "hex" => o.hex = true,
        "contains" => o.contains.extend(
            v.split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
        ),
        "prefix_filter" => o.prefix = Some(v),
        "anon_include" => o.anon_include = true,
        "version" => o.version = true,
        "help" => o.help = true,
        "funcs" => {
            o.funcs = Some(match v.as_str() {
                "exact" => FuncMode::Exact,
                "pahole" => FuncMode::Pahole,
                _ => return Err(usage(format!("--funcs: exact or pahole, not '{v}'"))),
            })
        }
        "vars" => {
            o.vars = Some(match v.as_str() {
                "percpu" => VarsMode::Percpu,
                "all" => VarsMode::All,
                "none" => VarsMode::None,
                _ => return Err(usage(format!("--vars: percpu, all or none, not '{v}'"))),
            })
        }
        "addr-tags" => {
            o.addr_tags = Some(match v.as_str() {
                "ambiguous" => AddrTags::Ambiguous,
                "all" => AddrTags::All,
                "none" => AddrTags::None,
                _ => {
                    return Err(usage(format!(
                        "--addr-tags: ambiguous, all or none, not '{v}'"
                    )))
                }
            })
        }
        _ => return Err(usage(format!("unrecognized option '--{name}'"))),
    }
    Ok(())
}

/// Adds the features of one `--btf_features` list, as pahole 1.32 reads
/// it: `default` is pahole's default set, a leading `+` adds the list to
/// that set, `all` is every feature btfkit implements; other names are
/// ignored, or remembered as an error for a `--btf_features_strict` list.
fn select_features(o: &mut Options, list: &str, strict: bool) {
    o.features_given = true;
    let list = match list.strip_prefix('+') {
        Some(rest) => {
            o.features.extend_from_slice(DEFAULT_FEATURES);
            rest
        }
        None => list,
    };
    for f in list.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        match f {
            "default" => o.features.extend_from_slice(DEFAULT_FEATURES),
            "all" => o.features.extend(FEATURES.iter().map(|(n, _)| *n)),
            _ => match FEATURES.iter().find(|(n, _)| *n == f) {
                Some((n, _)) => o.features.push(n),
                None if strict => {
                    o.strict_unknown.get_or_insert_with(|| f.to_owned());
                }
                None => {}
            },
        }
    }
}

/// The encoder's options and whether to distill the base, from the
/// command line: pahole's flags first, btfkit's own options over them.
fn encode_options(o: &Options) -> anyhow::Result<(EncodeOptions, bool)> {
    let has = |effect: Effect| {
        o.features
            .iter()
            .any(|f| FEATURES.iter().any(|(n, e)| n == f && *e == effect))
    };
    if let Some(bad) = &o.strict_unknown {
        return Err(usage(format!(
            "unknown BTF feature '{bad}' (--btf_features_strict); supported: {}",
            supported_features()
        )));
    }
    // pahole: without --btf_features, per-CPU variables unless
    // --skip_encoding_btf_vars; with it, only what is selected.
    let vars = if has(Effect::GlobalVar) {
        VarsMode::All
    } else if o.skip_vars {
        VarsMode::None
    } else if !o.features_given || has(Effect::Var) {
        VarsMode::Percpu
    } else {
        VarsMode::None
    };
    let distill = has(Effect::DistilledBase);
    let opts = EncodeOptions {
        jobs: o.jobs.unwrap_or(1),
        funcs: o.funcs.unwrap_or_default(),
        vars: o.vars.unwrap_or(vars),
        addr_tags: o.addr_tags.unwrap_or_default(),
        keep_rust: !o.lang_exclude.iter().any(|l| l == "rust"),
        no_dedup: false,
        layout: has(Effect::Layout),
        attributes: has(Effect::Attributes),
        dwz_alt: None,
    };
    Ok((opts, distill))
}

/// The names `--supported_btf_features` lists, comma-separated as pahole
/// prints them.
fn supported_features() -> String {
    FEATURES
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(",")
}

const HELP: &str = "\
Usage: pahole [OPTION...] FILE
btfkit's pahole personality: encode BTF in a kernel build, or print layouts.

  -J, --btf_encode             encode BTF into FILE's .BTF section (in place)
      --btf_encode_detached=F  write raw BTF to F instead (FILE is not changed)
      --btf_base=F             encode split BTF over F (a module over vmlinux)
  -j, -jN, --jobs[=N]          threads (all cores without N; default 1)
      --btf_features=LIST      pahole feature names (docs/pahole-drop-in.md lists their effect)
      --btf_features_strict=L  the same, rejecting unknown names
      --btf_gen_all            every feature (--btf_features=all)
      --supported_btf_features print the feature names btfkit supports
      --btf_gen_floats, --btf_gen_optimized,
      --skip_encoding_btf_inconsistent_proto   accepted (see docs/pahole-drop-in.md)
      --skip_encoding_btf_vars no variables
      --lang_exclude=LANGS     leave out compilation units of LANGS (rust)
      --funcs=exact|pahole     btfkit: function policy
      --vars=percpu|all|none   btfkit: variables
      --addr-tags=ambiguous|all|none  btfkit: DECL_TAG addr= tags
  -C, --class_name=NAMES       layout view: these structs/unions (comma list)
  -F, --format_path=btf|dwarf  layout view: read BTF or DWARF
  -s, --sizes                  layout view: sizes only
  -H, --holes=N                layout view: structs with at least N holes
  -E, --expand_types           layout view: follow typedefs, member types in full
      --hex                    layout view: offsets and sizes in hexadecimal
  -i, --contains=TYPE          layout view: structs and unions with a TYPE member
  -y, --prefix_filter=PREFIX   layout view: names starting with PREFIX
  -a, --anon_include           layout view: anonymous structs a typedef names
      --version                print the pahole version btfkit stands in for
";

pub fn run(args: PaholeArgs) -> anyhow::Result<ExitCode> {
    run_args(&args.args)
}

/// Runs pahole's command line `args` (without the program name).
pub fn run_args(args: &[OsString]) -> anyhow::Result<ExitCode> {
    let o = parse(args)?;
    if o.help {
        print!("{HELP}");
        return Ok(ExitCode::SUCCESS);
    }
    if o.version {
        println!("{PAHOLE_VERSION}");
        return Ok(ExitCode::SUCCESS);
    }
    if o.supported {
        println!("{}", supported_features());
        return Ok(ExitCode::SUCCESS);
    }
    if !o.encode {
        return layout(o);
    }
    let [file] = o.files.as_slice() else {
        return Err(usage(format!(
            "-J takes one ELF file, got {}",
            o.files.len()
        )));
    };
    encode(&o, file)
}

fn layout(o: Options) -> anyhow::Result<ExitCode> {
    let file = match o.files.as_slice() {
        [] => PathBuf::from(btf::SYSFS_VMLINUX),
        [f] => f.clone(),
        _ => return Err(usage("the layout view takes one file")),
    };
    super::layout::run(LayoutArgs {
        file,
        base: o.base,
        classes: o.classes,
        format: o.format,
        sizes: o.sizes,
        holes: o.holes,
        expand_types: o.expand_types,
        hex: o.hex,
        contains: o.contains,
        prefix: o.prefix,
        anon_include: o.anon_include,
    })
}

fn encode(o: &Options, file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let (opts, distill) = encode_options(o)?;
    // A detached output that is an input would destroy it: refused before
    // anything is read. Without one, FILE itself gets its .BTF (pahole's
    // in-place -J, replaced whole).
    let base_input: Vec<&std::path::Path> = o.base.as_deref().into_iter().collect();
    match &o.detached {
        Some(out) => {
            let mut inputs = vec![file];
            inputs.extend(&base_input);
            fileio::output_file::refuse_input(out, &inputs)?;
        }
        None => fileio::output_file::refuse_input(file, &base_input)?,
    }
    // Refuse an in-place ELF that cannot be written (a read-only file or file
    // system) before the long encode; a detached output fails at its write.
    if o.detached.is_none() {
        std::fs::OpenOptions::new()
            .write(true)
            .open(file)
            .with_context(|| format!("cannot write {}", file.display()))?;
    }
    let base = match &o.base {
        Some(b) => Some(Arc::new(
            btf::load_file(b, None).context("cannot load base BTF")?,
        )),
        None => None,
    };
    let elf = dwarf2btf::load::ElfFile::open(file)?;
    let encoded = dwarf2btf::encode(&elf, base, &opts, &NoProgress)?;
    for w in &encoded.warnings {
        eprintln!("btfkit: warning: {w}");
    }
    // A raw file has no place for a .BTF.base: distilled_base applies to -J
    // in place only.
    if let Some(out) = &o.detached {
        let bytes = encoded.btf.to_bytes();
        fileio::output_file::write(out, &bytes, None)
            .with_context(|| format!("cannot write {}", out.display()))?;
        // Left to the process exit, as below: freeing ~100,000 types one by
        // one is wasted time.
        std::mem::forget(encoded);
        return Ok(ExitCode::SUCCESS);
    }
    // A module for other kernels: .BTF over a distilled .BTF.base (without a
    // base there is nothing to distill, as in pahole).
    let (btf, base_bytes) = if distill && encoded.btf.base().is_some() {
        let (dbase, split) = btf::distill::distill_base(&encoded.btf)
            .with_context(|| format!("{}: distilled_base", file.display()))?;
        (split.to_bytes(), Some(dbase.to_bytes()))
    } else {
        (encoded.btf.to_bytes(), None)
    };
    let mut sections: Vec<(&str, &[u8])> = vec![(".BTF", &btf)];
    if let Some(b) = &base_bytes {
        sections.push((".BTF.base", b));
    }
    // Streamed from the mapped input: no second copy of a vmlinux in memory.
    let perm = std::fs::metadata(file).ok().map(|m| m.permissions());
    match dwarf2btf::embed::write_embedded(file, &elf, &sections, perm) {
        Ok(()) => {}
        Err(e @ dwarf2btf::Error::Embed { .. }) => anyhow::bail!("{}: {e}", file.display()),
        Err(e) => return Err(e.into()),
    }
    // The process ends here (a kernel build runs one per module): freeing
    // the BTF and the base's ~100,000 types one by one is wasted time.
    std::mem::forget(encoded);
    Ok(ExitCode::SUCCESS)
}

/// Whether the program runs under the name `pahole` (the basename of `argv[0]`).
pub fn invoked_as_pahole(argv0: &OsStr) -> bool {
    std::path::Path::new(argv0).file_name() == Some(OsStr::new("pahole"))
}
