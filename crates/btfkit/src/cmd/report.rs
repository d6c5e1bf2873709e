//! `btfkit` with no arguments: what the running kernel's BTF and kallsyms
//! say about each other: coverage of functions and variables by BTF,
//! ambiguous names, clones, BPF programs and trampolines, modules.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use btf::format::{kind_name, BTF_KIND_MAX};
use btf::Btf;
use ksyms::kallsyms::{self, Hidden, PROC_KALLSYMS};
use ksyms::{BtfIndex, SymbolKind, Table};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
    /// BTF to report on
    #[arg(long, default_value = btf::SYSFS_VMLINUX, hide = true)]
    btf: PathBuf,
    /// kallsyms to report on
    #[arg(long, default_value = PROC_KALLSYMS, hide = true)]
    kallsyms: PathBuf,
}

#[derive(Serialize)]
struct KindCount {
    kind: &'static str,
    count: usize,
}

#[derive(Serialize, Default)]
struct BtfReport {
    path: String,
    bytes: u64,
    types: u32,
    kinds: Vec<KindCount>,
    funcs: usize,
    vars: usize,
    addr_tags: bool,
}

#[derive(Serialize, Default)]
struct Report {
    btf: Option<BtfReport>,
    kallsyms: String,
    symbols: usize,
    addresses_visible: bool,
    /// Function text symbols of the kernel image, without `__pfx_` and `.cold`.
    functions: usize,
    function_names: usize,
    function_names_with_btf: usize,
    /// Names with several addresses in the kernel image.
    ambiguous_names: usize,
    ambiguous_instances: usize,
    ambiguous_names_with_btf: usize,
    /// Ambiguous instances that an address tag links to exactly one FUNC.
    ambiguous_instances_tagged: usize,
    clones: BTreeMap<&'static str, usize>,
    padding: usize,
    bpf_programs: Vec<String>,
    bpf_trampolines: usize,
    bpf_dispatchers: usize,
    ftrace: usize,
    kprobes: usize,
    modules: usize,
    module_symbols: usize,
    data_symbols: usize,
    vars_with_type: usize,
    data_symbols_with_var: usize,
    /// What this run could not see, and why.
    notes: Vec<String>,
}

const CLONE_SUFFIXES: [(&str, &str); 5] = [
    (".isra", ".isra."),
    (".constprop", ".constprop."),
    (".part", ".part."),
    (".cold", ".cold"),
    (".llvm.", ".llvm."),
];

fn btf_report(path: &Path, btf: &Btf, index: &BtfIndex<'_>) -> BtfReport {
    let mut counts = vec![0usize; usize::from(BTF_KIND_MAX) + 1];
    for (_, t) in btf.iter() {
        if let Some(c) = counts.get_mut(usize::from(t.kind())) {
            *c += 1;
        }
    }
    let funcs = counts
        .get(usize::from(btf::format::BTF_KIND_FUNC))
        .copied()
        .unwrap_or(0);
    BtfReport {
        path: path.display().to_string(),
        bytes: std::fs::metadata(path).map_or(0, |m| m.len()),
        types: btf.type_count() - 1,
        kinds: counts
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(k, &count)| KindCount {
                kind: kind_name(btf::Kind::new(k as u8)),
                count,
            })
            .collect(),
        funcs,
        vars: index.var_count(),
        addr_tags: index.has_addr_tags(),
    }
}

fn build(args: &ReportArgs) -> anyhow::Result<Report> {
    let mut r = Report {
        kallsyms: args.kallsyms.display().to_string(),
        ..Default::default()
    };
    let btf = match btf::load_file(&args.btf, None) {
        Ok(b) => Some(b),
        Err(e) => {
            r.notes.push(format!("no BTF: {e}"));
            None
        }
    };
    let table = Table::new(kallsyms::read(&args.kallsyms, Hidden::Allow)?);
    let mut index = btf.as_ref().map(BtfIndex::new);
    if let (Some(index), Some(btf)) = (&mut index, &btf) {
        if index.has_addr_tags() && !table.addresses_hidden() {
            index.calibrate(&table);
        }
        r.btf = Some(btf_report(&args.btf, btf, index));
    }
    r.symbols = table.len();
    r.addresses_visible = !table.addresses_hidden();
    if table.addresses_hidden() {
        r.notes.push(
            "kallsyms addresses read as zero (kernel.kptr_restrict, kernel.perf_event_paranoid; \
             run as root to see them): names with several addresses are counted by name, \
             sizes and address tags are not checked"
                .to_owned(),
        );
    }

    // Per name in the kernel image: how many function instances.
    let mut instances: HashMap<&str, usize> = HashMap::new();
    let mut data_names: Vec<&str> = Vec::new();
    let mut modules = HashSet::new();
    for s in table.iter() {
        for (label, pattern) in CLONE_SUFFIXES {
            if s.name.contains(pattern) {
                *r.clones.entry(label).or_default() += 1;
            }
        }
        match s.kind {
            SymbolKind::BpfProgram { .. } => r.bpf_programs.push(s.name.to_owned()),
            SymbolKind::BpfTrampoline(_) => r.bpf_trampolines += 1,
            SymbolKind::BpfDispatcher => r.bpf_dispatchers += 1,
            SymbolKind::Ftrace => r.ftrace += 1,
            SymbolKind::Kprobe => r.kprobes += 1,
            _ if s.in_module() => {
                r.module_symbols += 1;
                modules.insert(s.module);
            }
            SymbolKind::Function => {
                r.functions += 1;
                *instances.entry(s.name).or_default() += 1;
            }
            SymbolKind::Padding => r.padding += 1,
            SymbolKind::Data => data_names.push(s.name),
            _ => {}
        }
    }
    r.modules = modules.len();
    r.data_symbols = data_names.len();
    r.function_names = instances.len();
    r.ambiguous_names = instances.values().filter(|&&n| n > 1).count();
    r.ambiguous_instances = instances.values().filter(|&&n| n > 1).sum();
    if let Some(index) = &index {
        let has_func = |name: &str| {
            !index.funcs(name).is_empty() || !index.funcs(ksyms::table::base_name(name)).is_empty()
        };
        r.function_names_with_btf = instances.keys().filter(|n| has_func(n)).count();
        r.ambiguous_names_with_btf = instances
            .iter()
            .filter(|&(n, &c)| c > 1 && has_func(n))
            .count();
        if index.has_addr_tags() && !table.addresses_hidden() {
            r.ambiguous_instances_tagged = table
                .iter()
                .filter(|s| {
                    s.kind == SymbolKind::Function
                        && s.module.is_none()
                        && instances.get(s.name).is_some_and(|&c| c > 1)
                        && index.funcs_at(s.addr).next().is_some()
                })
                .count();
        }
        r.vars_with_type = index.var_count();
        r.data_symbols_with_var = data_names
            .iter()
            .filter(|n| !index.vars(n).is_empty())
            .count();
    }
    Ok(r)
}

fn pct(part: usize, whole: usize) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

fn print_text(out: &mut impl Write, r: &Report) -> std::io::Result<()> {
    let mut rows = Vec::new();
    let mut row = |label: &str, value: String, note: String| {
        rows.push((label.to_owned(), value, note));
    };
    btf_rows(&mut row, r);
    symbol_rows(&mut row, r);
    bpf_and_module_rows(&mut row, r);
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).min(32);
    for (label, value, note) in &rows {
        let line = format!("{label:<w0$}  {value:>w1$}  {note}");
        writeln!(out, "{}", line.trim_end())?;
    }
    for n in &r.notes {
        writeln!(out, "note: {n}")?;
    }
    Ok(())
}

/// The report's lines on the BTF: its types by kind and whether it has
/// address tags.
fn btf_rows(row: &mut impl FnMut(&str, String, String), r: &Report) {
    if let Some(b) = &r.btf {
        row("BTF", b.path.clone(), format!("{} bytes", b.bytes));
        row("  types", b.types.to_string(), String::new());
        for k in &b.kinds {
            row(
                &format!("    {}", k.kind),
                k.count.to_string(),
                String::new(),
            );
        }
        let tags = if b.addr_tags {
            "has addr=0x tags: instances link exactly"
        } else {
            "no addr=0x tags: functions link by name only"
        };
        row(
            "  address tags",
            (if b.addr_tags { "yes" } else { "no" }).to_owned(),
            tags.to_owned(),
        );
    }
}

/// The report's lines on kallsyms and the kernel image's functions.
fn symbol_rows(row: &mut impl FnMut(&str, String, String), r: &Report) {
    row(
        "kallsyms",
        r.kallsyms.clone(),
        super::count::count(r.symbols, "symbol").to_string(),
    );
    row(
        "  addresses",
        (if r.addresses_visible {
            "visible"
        } else {
            "hidden"
        })
        .to_owned(),
        String::new(),
    );
    row(
        "functions (kernel image)",
        r.functions.to_string(),
        format!(
            "{}, without __pfx_ and .cold",
            super::count::count(r.function_names, "name")
        ),
    );
    if r.btf.is_some() {
        row(
            "  names with a BTF FUNC",
            r.function_names_with_btf.to_string(),
            pct(r.function_names_with_btf, r.function_names),
        );
    }
    row(
        "  ambiguous names",
        r.ambiguous_names.to_string(),
        format!(
            "{} share them",
            super::count::count(r.ambiguous_instances, "instance")
        ),
    );
    if let Some(b) = &r.btf {
        row(
            "    with a BTF FUNC",
            r.ambiguous_names_with_btf.to_string(),
            "by name: which instance is unknown without address tags".to_owned(),
        );
        if b.addr_tags {
            row(
                "    instances tagged",
                r.ambiguous_instances_tagged.to_string(),
                pct(r.ambiguous_instances_tagged, r.ambiguous_instances),
            );
        }
    }
    row("  __pfx_ padding", r.padding.to_string(), String::new());
    for (label, _) in CLONE_SUFFIXES {
        let n = r.clones.get(label).copied().unwrap_or(0);
        row(&format!("  {label} symbols"), n.to_string(), String::new());
    }
}

/// The report's lines on BPF, ftrace, modules and data symbols.
fn bpf_and_module_rows(row: &mut impl FnMut(&str, String, String), r: &Report) {
    let progs = r
        .bpf_programs
        .iter()
        .take(5)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let more = if r.bpf_programs.len() > 5 {
        ", ..."
    } else {
        ""
    };
    row(
        "BPF programs",
        r.bpf_programs.len().to_string(),
        format!("{progs}{more}"),
    );
    row(
        "BPF trampolines",
        r.bpf_trampolines.to_string(),
        String::new(),
    );
    row(
        "BPF dispatchers",
        r.bpf_dispatchers.to_string(),
        String::new(),
    );
    row(
        "ftrace / kprobe pages",
        format!("{} / {}", r.ftrace, r.kprobes),
        String::new(),
    );
    row(
        "modules",
        r.modules.to_string(),
        super::count::count(r.module_symbols, "symbol").to_string(),
    );
    row(
        "data symbols (kernel image)",
        r.data_symbols.to_string(),
        "all of them only with CONFIG_KALLSYMS_ALL".to_owned(),
    );
    if r.btf.is_some() {
        row(
            "  with a BTF VAR",
            r.data_symbols_with_var.to_string(),
            String::new(),
        );
        row(
            "variables in BTF",
            r.vars_with_type.to_string(),
            "VARs, with their types".to_owned(),
        );
    }
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let report = build(&args)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        // Serialized first, so that a closed pipe is a plain io::Error.
        let text = serde_json::to_string_pretty(&report)?;
        writeln!(out, "{text}")?;
    } else {
        print_text(&mut out, &report)?;
    }
    Ok(ExitCode::SUCCESS)
}
