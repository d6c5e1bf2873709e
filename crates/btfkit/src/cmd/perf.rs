//! `btfkit perf PERF.DATA [--json] [--symbolize]`: the dynamic kernel
//! symbols of a recording with their lifetimes, the BPF programs they belong
//! to, and with `--symbolize` the kernel samples resolved at their time:
//! through the dynamic symbols first, then through kallsyms.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use perfdata::dynsyms::{tag_text, DynSym, End};
use perfdata::header::Format;
use perfdata::records::kind_name;
use perfdata::timeline::{Options, SamplePoint, Timeline};
use perfdata::{format_time, PerfData};
use serde_json::{json, Value};

#[derive(clap::Args)]
pub struct PerfArgs {
    /// A perf.data file, file or pipe format (`-` reads a stream from stdin)
    file: PathBuf,
    /// One JSON document instead of text
    #[arg(long)]
    json: bool,
    /// Resolve the kernel samples: dynamic symbols at the sample's time, then kallsyms
    #[arg(long)]
    symbolize: bool,
    /// The kallsyms that --symbolize resolves against
    #[arg(long, default_value = ksyms::kallsyms::PROC_KALLSYMS)]
    kallsyms: PathBuf,
}

pub fn run(args: PerfArgs) -> anyhow::Result<ExitCode> {
    let perf = PerfData::open(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let timeline = Timeline::build(
        &perf,
        Options {
            samples: args.symbolize,
        },
    );
    let symbolized = if args.symbolize {
        Some(symbolize(&perf, &timeline, &args.kallsyms))
    } else {
        None
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        let doc = to_json(&perf, &timeline, symbolized.as_ref());
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else {
        write_text(&mut out, &perf, &timeline, symbolized.as_ref())?;
    }
    out.flush()?;
    drop(out);
    let name = args.file.display();
    for w in perf.warnings.iter().chain(&perf.features.warnings) {
        eprintln!("btfkit: warning: {name}: {w}");
    }
    for e in &timeline.errors {
        eprintln!("btfkit: warning: {name}: record skipped: {e}");
    }
    if let Some(s) = &symbolized {
        for w in &s.warnings {
            eprintln!("btfkit: warning: {w}");
        }
    }
    if let Some(e) = &timeline.stopped {
        eprintln!("btfkit: error: {name}: reading stopped: {e}");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// The C prototype of each BPF function whose program perf saved with BTF
/// (HEADER_BPF_PROG_INFO's func_info names a FUNC in the program's BTF
/// from HEADER_BPF_BTF), by the function's address.
fn bpf_prototypes(perf: &PerfData) -> BTreeMap<u64, String> {
    let f = &perf.features;
    let mut out = BTreeMap::new();
    for info in f.bpf_progs.iter().filter(|i| i.btf_id != 0) {
        let Some(blob) = f.bpf_btfs.iter().find(|b| b.id == info.btf_id) else {
            continue;
        };
        let Ok(btf) = btf::Btf::parse(&blob.data) else {
            continue;
        };
        for (&addr, &(_, type_id)) in info.jited_ksyms.iter().zip(&info.func_info) {
            out.insert(addr, btf::cdecl::func_prototype(&btf, type_id));
        }
    }
    out
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

fn end_name(s: &DynSym) -> Option<&'static str> {
    s.end.map(|e| match e {
        End::Unregistered => "unregistered",
        End::Superseded { .. } => "superseded",
    })
}

fn symbol_json(index: usize, s: &DynSym, protos: &BTreeMap<u64, String>) -> Value {
    json!({
        "index": index,
        "name": s.name,
        "addr": hex(s.addr),
        "len": s.len,
        "type": s.type_name(),
        "registered": s.registered,
        "unregistered": s.unregistered,
        "end": end_name(s),
        "superseded_by": match s.end { Some(End::Superseded { by }) => Some(by), _ => None },
        "bpf_prog_id": s.bpf.map(|b| b.id),
        "bpf_tag": s.bpf.map(|b| tag_text(&b.tag)),
        "btf_prototype": protos.get(&s.addr).filter(|_| s.ksym_type == perfdata::records::ksym_type::BPF),
        "register_offset": s.register_offset.map(hex),
        "unregister_offset": s.unregister_offset.map(hex),
    })
}

fn to_json(perf: &PerfData, t: &Timeline, sym: Option<&Symbolized>) -> Value {
    let f = &perf.features;
    let table = &t.tracker.table;
    let protos = bpf_prototypes(perf);
    let records: BTreeMap<&str, u64> = t
        .record_counts
        .iter()
        .map(|(&k, &n)| (kind_name(k), n))
        .collect();
    let infos: BTreeMap<u32, &perfdata::features::BpfProgInfo> =
        f.bpf_progs.iter().map(|p| (p.id, p)).collect();
    let mut ids: Vec<u32> = t.tracker.progs.keys().copied().collect();
    ids.extend(infos.keys().filter(|id| !t.tracker.progs.contains_key(id)));
    ids.sort_unstable();
    let progs: Vec<Value> = ids
        .iter()
        .map(|id| {
            let life = t.tracker.progs.get(id);
            let info = infos.get(id);
            json!({
                "id": id,
                "tag": life.map(|l| tag_text(&l.tag)).or_else(|| info.map(|i| tag_text(&i.tag))),
                "name": info.map(|i| i.name.as_str()),
                "loaded": life.and_then(|l| l.loaded),
                "unloaded": life.and_then(|l| l.unloaded),
                "symbols": life.map(|l| l.symbols.clone()).unwrap_or_default(),
                "prog_info": info.map(|i| json!({
                    "type": i.prog_type,
                    "load_time": i.load_time,
                    "btf_id": i.btf_id,
                    "jited_ksyms": i.jited_ksyms.iter().map(|&a| hex(a)).collect::<Vec<_>>(),
                    "jited_func_lens": i.jited_func_lens,
                })),
            })
        })
        .collect();
    let mut doc = json!({
        "file": perf.path().display().to_string(),
        "format": match perf.format() { Format::File => "file", Format::Pipe => "pipe" },
        "hostname": f.hostname,
        "osrelease": f.osrelease,
        "arch": f.arch,
        "perf_version": f.version,
        "cmdline": f.cmdline,
        "records": records,
        "time_ordered": t.time_ordered,
        "symbols": table.symbols().iter().enumerate().map(|(i, s)| symbol_json(i, s, &protos)).collect::<Vec<_>>(),
        "bpf_programs": progs,
        "bpf_btf": f.bpf_btfs.iter().map(|b| json!({"id": b.id, "size": b.data.len()})).collect::<Vec<_>>(),
        "kernel_maps": t.kernel_maps.iter().map(|m| json!({
            "name": m.name,
            "start": hex(m.start),
            "end": hex(m.start.saturating_add(m.len)),
            "pgoff": hex(m.pgoff),
        })).collect::<Vec<_>>(),
        "warnings": table.warnings().iter().map(|w| w.to_string()).collect::<Vec<_>>(),
        "errors": perf.warnings.iter().chain(&t.errors).chain(&perf.features.warnings).map(|e| e.to_string()).collect::<Vec<_>>(),
        "stopped": t.stopped.as_ref().map(|e| e.to_string()),
    });
    if let (Some(s), Some(obj)) = (sym, doc.as_object_mut()) {
        obj.insert("symbolized".into(), s.to_json());
    }
    doc
}

fn opt_time(t: Option<u64>) -> String {
    t.map_or_else(|| "-".into(), format_time)
}

fn write_text(
    out: &mut impl Write,
    perf: &PerfData,
    t: &Timeline,
    sym: Option<&Symbolized>,
) -> std::io::Result<()> {
    let f = &perf.features;
    let format = match perf.format() {
        Format::File => "file",
        Format::Pipe => "pipe",
    };
    let total: u64 = t.record_counts.values().sum();
    write!(
        out,
        "{}: {format} format, {}, {}",
        perf.path().display(),
        super::count::count(perf.attrs.entries().len(), "attr"),
        super::count::count(total as usize, "record")
    )?;
    if let Some(r) = &f.osrelease {
        write!(out, ", kernel {r}")?;
    }
    if let Some(h) = &f.hostname {
        write!(out, " on {h}")?;
    }
    writeln!(out)?;
    let table = &t.tracker.table;
    write_lifetimes(out, t)?;
    write_bpf_programs(out, perf, t)?;
    if !t.kernel_maps.is_empty() {
        writeln!(out, "\nkernel maps: {}", t.kernel_maps.len())?;
        for m in &t.kernel_maps {
            writeln!(
                out,
                "  {:016x}-{:016x} {}",
                m.start,
                m.start.saturating_add(m.len),
                m.name
            )?;
        }
    }
    if !table.warnings().is_empty() {
        writeln!(out, "\nwarnings:")?;
        for w in table.warnings() {
            writeln!(out, "  {w}")?;
        }
    }
    if let Some(s) = sym {
        s.write_text(out)?;
    }
    Ok(())
}

/// The dynamic kernel symbols' lifetimes, one line each.
fn write_lifetimes(out: &mut impl Write, t: &Timeline) -> std::io::Result<()> {
    let table = &t.tracker.table;
    writeln!(
        out,
        "\ndynamic kernel symbols: {}",
        super::count::count(table.len(), "lifetime")
    )?;
    if !table.is_empty() {
        writeln!(
            out,
            "{:<20} {:<20} {:<18} {:>6} {:<7} {:<12} NAME",
            "REGISTERED", "UNREGISTERED", "ADDRESS", "LEN", "TYPE", "BPF ID"
        )?;
    }
    for s in table.symbols() {
        let unreg = match s.end {
            Some(End::Superseded { .. }) => format!("{}*", opt_time(s.unregistered)),
            _ => opt_time(s.unregistered),
        };
        writeln!(
            out,
            "{:<20} {:<20} {:016x}   {:>6} {:<7} {:<12} {}",
            opt_time(s.registered),
            unreg,
            s.addr,
            s.len,
            s.type_name(),
            s.bpf.map_or_else(|| "-".into(), |b| b.id.to_string()),
            s.name
        )?;
    }
    if table
        .symbols()
        .iter()
        .any(|s| matches!(s.end, Some(End::Superseded { .. })))
    {
        writeln!(out, "(* ended by another symbol registered over it)")?;
    }
    Ok(())
}

/// The BPF programs the records speak of, then those only perf's
/// header lists.
fn write_bpf_programs(out: &mut impl Write, perf: &PerfData, t: &Timeline) -> std::io::Result<()> {
    let f = &perf.features;
    if !t.tracker.progs.is_empty() || !f.bpf_progs.is_empty() {
        writeln!(out, "\nBPF programs:")?;
        for p in t.tracker.progs.values() {
            let info = f.bpf_progs.iter().find(|i| i.id == p.id);
            writeln!(
                out,
                "  id {:<6} tag {}  loaded {:<20} unloaded {:<20} {}{}",
                p.id,
                tag_text(&p.tag),
                opt_time(p.loaded),
                opt_time(p.unloaded),
                super::count::count(p.symbols.len(), "symbol"),
                info.map_or_else(String::new, |i| format!("  name {}", i.name))
            )?;
        }
        // Programs perf saw (HEADER_BPF_PROG_INFO) but no record speaks of.
        for i in f
            .bpf_progs
            .iter()
            .filter(|i| !t.tracker.progs.contains_key(&i.id))
        {
            writeln!(
                out,
                "  id {:<6} tag {}  name {} ({}, from HEADER_BPF_PROG_INFO)",
                i.id,
                tag_text(&i.tag),
                i.name,
                super::count::count(i.jited_ksyms.len(), "function")
            )?;
        }
    }
    Ok(())
}

/// Where a sample's symbol came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    Dynamic,
    Kallsyms,
    Unresolved,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Dynamic => "dynamic",
            Source::Kallsyms => "kallsyms",
            Source::Unresolved => "unresolved",
        }
    }
}

/// Where a sample resolved: source, symbol (or the address), module.
type Resolved = (Source, String, Option<String>);

#[derive(Default)]
struct Symbolized {
    kernel_samples: u64,
    /// Samples per resolution.
    counts: BTreeMap<Resolved, u64>,
    warnings: Vec<String>,
}

impl Symbolized {
    fn by_count(&self) -> Vec<(&Resolved, u64)> {
        let mut rows: Vec<_> = self.counts.iter().map(|(k, &n)| (k, n)).collect();
        rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        rows
    }

    fn per_source(&self, source: Source) -> u64 {
        self.counts
            .iter()
            .filter(|((s, _, _), _)| *s == source)
            .map(|(_, n)| n)
            .sum()
    }

    fn to_json(&self) -> Value {
        json!({
            "kernel_samples": self.kernel_samples,
            "dynamic": self.per_source(Source::Dynamic),
            "kallsyms": self.per_source(Source::Kallsyms),
            "unresolved": self.per_source(Source::Unresolved),
            "symbols": self.by_count().iter().map(|((source, name, module), n)| json!({
                "symbol": name,
                "module": module,
                "source": source.as_str(),
                "samples": n,
            })).collect::<Vec<_>>(),
        })
    }

    fn write_text(&self, out: &mut impl Write) -> std::io::Result<()> {
        writeln!(
            out,
            "\nkernel samples: {} (dynamic symbols {}, kallsyms {}, unresolved {})",
            self.kernel_samples,
            self.per_source(Source::Dynamic),
            self.per_source(Source::Kallsyms),
            self.per_source(Source::Unresolved)
        )?;
        writeln!(out, "{:>8}  {:<10} SYMBOL", "SAMPLES", "SOURCE")?;
        for ((source, name, module), n) in self.by_count() {
            match module {
                Some(m) => writeln!(out, "{n:>8}  {:<10} {name} [{m}]", source.as_str())?,
                None => writeln!(out, "{n:>8}  {:<10} {name}", source.as_str())?,
            }
        }
        Ok(())
    }
}

/// Resolves each kernel sample: the dynamic symbol live at that address at
/// the sample's time, else kallsyms. Kallsyms describes the kernel now, so
/// its own dynamic symbols (`[bpf]`, `[__builtin__ftrace]`...) are not used:
/// they may be other code than what ran at the sample's time.
fn symbolize(perf: &PerfData, t: &Timeline, kallsyms: &Path) -> Symbolized {
    let mut out = Symbolized::default();
    let table = match ksyms::kallsyms::read(kallsyms, ksyms::kallsyms::Hidden::Error) {
        Ok(syms) => Some(ksyms::Table::new(syms)),
        Err(e) => {
            // ksyms' errors name the file.
            out.warnings
                .push(format!("{e}; only dynamic symbols are resolved"));
            None
        }
    };
    if let Some(table) = &table {
        check_same_kernel(perf, t, table, kallsyms, &mut out.warnings);
    }
    for s in t.samples.iter().filter(|s| s.in_kernel()) {
        out.kernel_samples += 1;
        let key = resolve(s, t, table.as_ref());
        *out.counts.entry(key).or_default() += 1;
    }
    out
}

fn resolve(s: &SamplePoint, t: &Timeline, table: Option<&ksyms::Table>) -> Resolved {
    // Without a time only what is live at the end can be meant.
    let time = s.time.unwrap_or(u64::MAX);
    if let Some((_, sym, _)) = t.tracker.table.lookup(s.ip, time) {
        let module = match sym.ksym_type {
            perfdata::records::ksym_type::BPF => "bpf",
            _ => "dynamic",
        };
        return (Source::Dynamic, sym.name.clone(), Some(module.to_owned()));
    }
    if let Some(hit) = table.and_then(|k| k.lookup(s.ip)) {
        let pseudo = hit
            .symbol
            .module
            .is_some_and(ksyms::table::is_pseudo_module);
        if !pseudo {
            return (
                Source::Kallsyms,
                hit.symbol.name.to_owned(),
                hit.symbol.module.map(str::to_owned),
            );
        }
    }
    (Source::Unresolved, format!("{:#x}", s.ip), None)
}

/// Kallsyms must be the recorded kernel's, in the same boot: same release,
/// and `_text` where the recording's kernel map says it was (KASLR moves it
/// at every boot).
fn check_same_kernel(
    perf: &PerfData,
    t: &Timeline,
    table: &ksyms::Table,
    kallsyms: &Path,
    warnings: &mut Vec<String>,
) {
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .ok();
    if let (Some(rec), Some(run), true) = (
        &perf.features.osrelease,
        &running,
        kallsyms == Path::new(ksyms::kallsyms::PROC_KALLSYMS),
    ) {
        if rec != run {
            warnings.push(format!(
                "recorded on kernel {rec}, resolving with the running kernel {run}'s kallsyms"
            ));
        }
    }
    let recorded_text = t
        .kernel_maps
        .iter()
        .find(|m| m.name.starts_with("[kernel.kallsyms]"))
        .map(|m| m.start);
    let kallsyms_text = table.by_name("_text").next().map(|s| s.addr);
    if let (Some(r), Some(k)) = (recorded_text, kallsyms_text) {
        if r != k {
            warnings.push(format!(
                "the recording's kernel text starts at {r:#x}, {}'s _text at {k:#x}: another boot or kernel, kernel symbols will be wrong",
                kallsyms.display()
            ));
        }
    }
}
