//! `btfkit resolve`: addresses and `symbol+offset/size` (an oops line,
//! btfkit's own output) to symbols, offsets and prototypes; names to every
//! instance with its address and prototype; variables to their type. With
//! `--elf` a vmlinux with DWARF, a function's prototype is its instance's
//! own, from the DWARF at its address. With `--elf` a module (`.ko`), whose
//! every section starts at 0, addresses are shown and read as
//! `.init.text+0x0`, a bare hex address being a `.text` offset.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use btf::cdecl;
use btf::{Btf, TypeData};
use dwarf2btf::funcs::FuncModel;
use ksyms::kallsyms::{self, Hidden, PROC_KALLSYMS};
use ksyms::location::{parse_address, parse_symbol_offset, SymbolOffset};
use ksyms::{BtfIndex, FuncMatch, Symbol, SymbolKind, Symbols, Table, TrampolineTarget};
use serde::Serialize;

#[derive(clap::Args)]
pub struct ResolveArgs {
    /// BTF with the prototypes and types [default: the --elf file, else /sys/kernel/btf/vmlinux]
    #[arg(long)]
    btf: Option<PathBuf>,
    /// Base BTF of a split --btf (a module's: its vmlinux ELF, raw BTF or
    /// /sys/kernel/btf/vmlinux)
    #[arg(long, value_name = "BTF")]
    base: Option<PathBuf>,
    /// Symbols of a running kernel [default: /proc/kallsyms, unless --system-map or --elf is given]
    #[arg(long)]
    kallsyms: Option<PathBuf>,
    /// Link-time symbols (`nm -n`); moved by the KASLR offset when --kallsyms is given too
    #[arg(long)]
    system_map: Option<PathBuf>,
    /// vmlinux or module (.ko) with a symbol table, for exact sizes (takes
    /// precedence over --system-map); with DWARF, each function instance's
    /// own prototype. A module's addresses are section offsets, shown as
    /// `.init.text+0x0`; a hex address is a `.text` offset
    #[arg(long, value_name = "VMLINUX|MODULE")]
    elf: Option<PathBuf>,
    /// Print a JSON array, one object per result
    #[arg(long)]
    json: bool,
    /// Addresses (hex; `0x` or at least 8 digits; of a module given as
    /// --elf, a `.text` offset), `name+0xOFF[/0xSIZE]` (as an oops prints
    /// them, optionally followed by ` [module]`), `SECTION+0xOFF` (a
    /// section of a module given as --elf) or names. None, or `-`: one per
    /// line on stdin
    #[arg(value_name = "ADDR|NAME")]
    inputs: Vec<String>,
}

/// One answer. Keys are stable: scripts and tests read them.
#[derive(Serialize, Default)]
struct Resolved {
    input: String,
    kind: &'static str,
    addr: Option<String>,
    symbol: Option<String>,
    offset: Option<u64>,
    module: Option<String>,
    size: Option<u64>,
    btf_id: Option<u32>,
    prototype: Option<String>,
    /// Where the prototype comes from: "btf", or "dwarf" (the instance's
    /// own, from --elf).
    #[serde(skip_serializing_if = "Option::is_none")]
    prototype_from: Option<&'static str>,
    file: Option<String>,
    /// C type of a variable.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    ty: Option<String>,
    /// DATASEC of a variable (`.data..percpu`).
    #[serde(skip_serializing_if = "Option::is_none")]
    section: Option<String>,
    /// What a BPF trampoline is attached to.
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
    /// Why the input did not resolve.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The input was an address (text output shows `symbol+offset/size`).
    #[serde(skip)]
    by_addr: bool,
}

/// The symbol table `resolve` works on: a live kallsyms alone, or a System.map
/// or vmlinux (at link-time addresses, or moved to the live kernel's when a
/// kallsyms is given, with the live modules and BPF symbols added); and the
/// KASLR offset it was moved by (0 when it was not).
fn load_table(args: &ResolveArgs) -> anyhow::Result<(Table, i64)> {
    let linked: Option<Symbols> = match (&args.elf, &args.system_map) {
        (Some(elf), _) => Some(ksyms::elf::read(elf)?),
        (None, Some(map)) => Some(ksyms::system_map::read(map)?),
        (None, None) => None,
    };
    let live_path = match (&args.kallsyms, &linked) {
        (Some(p), _) => Some(p.clone()),
        (None, None) => Some(PathBuf::from(PROC_KALLSYMS)),
        (None, Some(_)) => None,
    };
    let live = live_path
        .map(|p| kallsyms::read(&p, Hidden::Error))
        .transpose()?;
    Ok(match (linked, live) {
        (Some(mut linked), Some(live)) => {
            let offset = ksyms::kaslr_offset(&linked, &live)?;
            linked.relocate(offset);
            linked.add_modules_from(&live);
            (Table::new(linked), offset)
        }
        (Some(linked), None) => (Table::new(linked), 0),
        (None, Some(live)) => (Table::new(live), 0),
        (None, None) => anyhow::bail!("no symbol source"),
    })
}

/// The function instances of a vmlinux's or module's DWARF by link-time
/// address (a module's keyed by section, as the symbol table's), and how
/// far the symbol table moved them (KASLR).
struct Dwarf {
    model: FuncModel,
    /// Per address, the instances there: one per symbol (aliases such as
    /// `init_module` share their function's code).
    by_addr: std::collections::HashMap<u64, Vec<usize>>,
    kaslr: i64,
}

impl Dwarf {
    /// The DWARF of `elf`, or None when it has none.
    fn load(elf: &std::path::Path, kaslr: i64) -> anyhow::Result<Option<Dwarf>> {
        let file = dwarf2btf::load::ElfFile::open(elf)?;
        if !dwarf2btf::funcs::has_dwarf(&file) {
            return Ok(None);
        }
        let model = FuncModel::from_elf(&file)
            .with_context(|| format!("cannot read the functions of {}", elf.display()))?;
        let mut by_addr = std::collections::HashMap::new();
        for (i, inst) in model.instances.iter().enumerate() {
            if inst.concrete.is_some() {
                by_addr.entry(inst.address).or_insert_with(Vec::new).push(i);
            }
        }
        Ok(Some(Dwarf {
            model,
            by_addr,
            kaslr,
        }))
    }

    /// The C prototype of the instance whose code starts at `addr` (a
    /// table address), named as `symbol` when it is one of the aliases
    /// there.
    fn prototype(&self, addr: u64, symbol: &str) -> Option<String> {
        let at = self.by_addr.get(&addr.wrapping_sub(self.kaslr as u64))?;
        let i = at
            .iter()
            .copied()
            .find(|&i| self.model.instances[i].symbol == symbol)
            .or_else(|| at.first().copied())?;
        self.model.prototype_c(&self.model.instances[i])
    }
}

fn kind_name(kind: SymbolKind) -> &'static str {
    match kind {
        SymbolKind::Function => "function",
        SymbolKind::Padding => "padding",
        SymbolKind::ColdFragment => "cold",
        SymbolKind::Data => "data",
        SymbolKind::BpfProgram { .. } => "bpf_prog",
        SymbolKind::BpfTrampoline(_) => "bpf_trampoline",
        SymbolKind::BpfDispatcher => "bpf_dispatcher",
        SymbolKind::Ftrace => "ftrace",
        SymbolKind::Kprobe => "kprobe",
        SymbolKind::Other => "other",
    }
}

struct Resolver<'a> {
    table: &'a Table,
    index: Option<BtfIndex<'a>>,
    dwarf: Option<Dwarf>,
}

impl Resolver<'_> {
    fn btf(&self) -> Option<&Btf> {
        self.index.as_ref().map(|i| i.btf())
    }

    /// Fills in what a symbol is: its FUNC and prototype, or its VAR and type.
    fn describe(&self, sym: &Symbol<'_>, out: &mut Resolved) {
        out.kind = kind_name(sym.kind);
        out.addr = Some(self.table.address_text(sym.addr));
        out.symbol = Some(sym.name.to_owned());
        out.module = sym.module.map(str::to_owned);
        out.size = sym.size;
        let Some(index) = &self.index else { return };
        let btf = index.btf();
        match sym.kind {
            SymbolKind::Function | SymbolKind::Padding | SymbolKind::ColdFragment => {
                let m = index.match_function(self.table, sym);
                out.btf_id = m.btf_id();
                out.prototype = m.btf_id().map(|id| cdecl::func_prototype(btf, id));
                out.prototype_from = out.prototype.as_ref().map(|_| "btf");
                // The DWARF of this very code says what it takes, whatever
                // FUNC the name leads to.
                let dwarf = (sym.kind == SymbolKind::Function)
                    .then(|| self.dwarf.as_ref()?.prototype(sym.addr, sym.name))
                    .flatten();
                let mut warnings = Vec::new();
                if let Some(parent) = sym.parent() {
                    let what = if sym.kind == SymbolKind::Padding {
                        "the padding before"
                    } else {
                        "an out-of-line part of"
                    };
                    warnings.push(format!("{} is {what} {parent}", sym.name));
                }
                if let Some(p) = dwarf {
                    // The FUNC of that prototype, if the BTF has one.
                    out.btf_id = index
                        .funcs(sym.name)
                        .iter()
                        .copied()
                        .find(|&id| cdecl::func_prototype(btf, id) == p);
                    out.prototype = Some(p);
                    out.prototype_from = Some("dwarf");
                } else if let FuncMatch::ByName {
                    funcs, instances, ..
                } = m
                {
                    if m.is_ambiguous() {
                        warnings.push(ambiguity(index, sym, funcs, instances));
                    }
                }
                out.warning = (!warnings.is_empty()).then(|| warnings.join("; "));
            }
            SymbolKind::Data | SymbolKind::Other => self.describe_var(sym.name, out),
            SymbolKind::BpfTrampoline(target) => {
                out.target = Some(match target {
                    TrampolineTarget::Kernel { btf_obj_id, btf_id } => {
                        // Object id 1 is vmlinux's BTF: the first one the kernel registers.
                        let func = (btf_obj_id == 1 && btf.start_id() <= 1)
                            .then(|| btf.type_by_id(btf_id))
                            .flatten()
                            .filter(|t| matches!(t.data, TypeData::Func { .. }))
                            .map(|_| format!(": {}", cdecl::func_prototype(btf, btf_id)))
                            .unwrap_or_default();
                        format!("btf_obj_id {btf_obj_id} btf_id {btf_id}{func}")
                    }
                    TrampolineTarget::Program { prog_id, btf_id } => {
                        format!("bpf prog id {prog_id} btf_id {btf_id}")
                    }
                });
            }
            _ => {}
        }
    }

    fn describe_var(&self, name: &str, out: &mut Resolved) {
        let Some(index) = &self.index else { return };
        let btf = index.btf();
        let vars = index.vars(name);
        let Some(&var) = vars.first() else { return };
        out.btf_id = Some(var);
        if let Some(TypeData::Var { ty, .. }) = btf.type_by_id(var).map(|t| &t.data) {
            out.prototype = Some(cdecl::declaration(btf, *ty, name));
            out.ty = Some(cdecl::type_name(btf, *ty));
        }
        out.section = index.var_section(var).map(str::to_owned);
        if vars.len() > 1 {
            out.warning = Some(format!(
                "{} BTF VARs are named {name}: the type shown is the first's",
                vars.len()
            ));
        }
    }

    fn resolve_addr(&self, input: &str, addr: u64) -> Resolved {
        let mut out = Resolved {
            input: input.to_owned(),
            by_addr: true,
            ..Default::default()
        };
        match self.table.lookup(addr) {
            Some(hit) => {
                self.describe(&hit.symbol, &mut out);
                out.offset = Some(hit.offset);
            }
            None => {
                out.kind = "unresolved";
                out.addr = Some(self.table.address_text(addr));
                out.error = Some(format!(
                    "no symbol of {} contains this address",
                    self.table.source().display()
                ));
            }
        }
        out
    }

    fn resolve_name(&self, input: &str) -> Vec<Resolved> {
        let base = ksyms::table::base_name(input);
        // A plain name also finds its clones (`name.isra.0`): they are
        // instances of the same source function. Never its fragments.
        let syms: Vec<Symbol<'_>> = self
            .table
            .instances(base)
            .filter(|s| {
                s.name == input || (base == input && s.kind == SymbolKind::Function && s.is_clone())
            })
            .collect();
        let new = || Resolved {
            input: input.to_owned(),
            ..Default::default()
        };
        if !syms.is_empty() {
            return syms
                .iter()
                .map(|s| {
                    let mut out = new();
                    self.describe(s, &mut out);
                    out.offset = Some(0);
                    out
                })
                .collect();
        }
        let mut out = new();
        let missing = format!("not in {}", self.table.source().display());
        if let Some(index) = &self.index {
            if !index.vars(input).is_empty() {
                out.kind = "variable";
                out.symbol = Some(input.to_owned());
                self.describe_var(input, &mut out);
                let w = format!("{missing}: no address (kallsyms lists variables only with CONFIG_KALLSYMS_ALL)");
                out.warning = Some(out.warning.map_or(w.clone(), |o| format!("{o}; {w}")));
                return vec![out];
            }
            if let Some(&func) = index.funcs(input).first() {
                out.kind = "function";
                out.symbol = Some(input.to_owned());
                out.btf_id = Some(func);
                out.prototype = self.btf().map(|b| cdecl::func_prototype(b, func));
                out.warning = Some(format!("{missing}: no address"));
                return vec![out];
            }
        }
        out.kind = "unresolved";
        out.error = Some(format!("no symbol, FUNC or VAR named {input}"));
        vec![out]
    }

    /// `name+off[/size] [module]`: the address `off` into the instance of
    /// that name (of that size, in that module, when several share it).
    fn resolve_symbol_offset(&self, input: &str, so: &SymbolOffset<'_>) -> Vec<Resolved> {
        let named: Vec<Symbol<'_>> = self
            .table
            .instances(ksyms::table::base_name(so.name))
            .filter(|s| s.name == so.name && (so.module.is_none() || s.module == so.module))
            .collect();
        let sized: Vec<Symbol<'_>> = named
            .iter()
            .copied()
            .filter(|s| so.size.is_some() && s.size == so.size)
            .collect();
        let syms = if sized.is_empty() { named } else { sized };
        if syms.is_empty() {
            return vec![Resolved {
                input: input.to_owned(),
                kind: "unresolved",
                error: Some(format!(
                    "no symbol {}{} in {}",
                    so.name,
                    so.module.map(|m| format!(" [{m}]")).unwrap_or_default(),
                    self.table.source().display()
                )),
                ..Default::default()
            }];
        }
        let n = syms.len();
        syms.iter()
            .map(|s| {
                let past_end = s.size.is_some_and(|size| so.offset >= size);
                let mut r = self.resolve_addr(input, s.addr.wrapping_add(so.offset));
                let mut warnings: Vec<String> = r.warning.take().into_iter().collect();
                if past_end {
                    r.error = Some(format!(
                        "offset {:#x} is past the end of {} at {} (size {:#x})",
                        so.offset,
                        so.name,
                        self.table.address_text(s.addr),
                        s.size.unwrap_or(0)
                    ));
                }
                if let (Some(said), Some(size)) = (so.size, s.size) {
                    if said != size {
                        warnings.push(format!(
                            "{} is {size:#x} bytes here, not {said:#x}: another build of the kernel?",
                            so.name
                        ));
                    }
                }
                if n > 1 {
                    warnings.push(format!(
                        "{n} symbols are named {}: one result each",
                        so.name
                    ));
                }
                r.warning = (!warnings.is_empty()).then(|| warnings.join("; "));
                r
            })
            .collect()
    }

    fn resolve(&self, input: &str) -> Vec<Resolved> {
        if let Some(addr) = parse_address(input) {
            return vec![self.resolve_addr(input, addr)];
        }
        match parse_symbol_offset(input) {
            Some(so) if self.is_section(&so) => {
                match self.table.section_address(so.name, so.offset) {
                    Some(addr) => vec![self.resolve_addr(input, addr)],
                    None => vec![Resolved {
                        input: input.to_owned(),
                        kind: "unresolved",
                        error: Some(format!(
                            "offset {:#x} does not fit section {} of {}",
                            so.offset,
                            so.name,
                            self.table.source().display()
                        )),
                        ..Default::default()
                    }],
                }
            }
            Some(so) => self.resolve_symbol_offset(input, &so),
            None => self.resolve_name(input),
        }
    }

    /// Whether `so` is `.init.text+0x10`: an offset in a section of the
    /// module given as --elf, as `address_text` shows it. A symbol of that
    /// name comes first.
    fn is_section(&self, so: &SymbolOffset<'_>) -> bool {
        so.name.starts_with('.')
            && so.size.is_none()
            && so.module.is_none()
            && self.table.section_address(so.name, 0).is_some()
            && self.table.by_name(so.name).next().is_none()
    }
}

fn ambiguity(index: &BtfIndex<'_>, sym: &Symbol<'_>, funcs: usize, instances: usize) -> String {
    let name = sym
        .parent()
        .map_or(sym.base_name(), ksyms::table::base_name);
    let why = if index.has_addr_tags() {
        "no address tag names this instance"
    } else {
        "this BTF has no address tags"
    };
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let mut msg = format!(
        "{name} is ambiguous: {} and {} share the name, and {why}: the prototype shown may \
         belong to another instance",
        plural(funcs, "BTF FUNC"),
        plural(instances, "instance"),
    );
    if funcs > 1 {
        let candidates: Vec<String> = index
            .funcs(name)
            .iter()
            .map(|&id| format!("[{id}] {}", cdecl::func_prototype(index.btf(), id)))
            .collect();
        msg.push_str(&format!(" (candidates: {})", candidates.join("; ")));
    }
    msg
}

fn print_text(out: &mut impl Write, r: &Resolved) -> std::io::Result<()> {
    if let Some(err) = &r.error {
        return writeln!(out, "{}: ?? ({err})", r.input);
    }
    write!(out, "{}:", r.input)?;
    if let (true, Some(sym)) = (r.by_addr, &r.symbol) {
        write!(out, " {sym}+{:#x}", r.offset.unwrap_or(0))?;
        if let Some(size) = r.size {
            write!(out, "/{size:#x}")?;
        }
    } else if let Some(addr) = &r.addr {
        write!(out, " {addr}")?;
        if let Some(sym) = r.symbol.as_deref().filter(|s| *s != r.input) {
            write!(out, " {sym}")?;
        }
        if let Some(size) = r.size {
            write!(out, " size {size:#x}")?;
        }
    }
    if let Some(m) = &r.module {
        write!(out, " [{m}]")?;
    }
    write!(out, " {}", r.kind)?;
    if let Some(p) = &r.prototype {
        write!(out, ": {p}")?;
    }
    if let Some(s) = &r.section {
        write!(out, " in {s}")?;
    }
    if let Some(id) = r.btf_id {
        write!(out, " (btf_id {id})")?;
    }
    if let Some(t) = &r.target {
        write!(out, " -> {t}")?;
    }
    writeln!(out)?;
    if let Some(w) = &r.warning {
        writeln!(out, "  warning: {w}")?;
    }
    Ok(())
}

pub fn run(args: ResolveArgs) -> anyhow::Result<ExitCode> {
    let (table, kaslr) = load_table(&args)?;
    let btf_path = args
        .btf
        .clone()
        .or_else(|| args.elf.clone())
        .unwrap_or_else(|| PathBuf::from(btf::SYSFS_VMLINUX));
    let btf = match btf::load_file(&btf_path, args.base.as_deref()) {
        Ok(b) => Some(b),
        // Without BTF, symbols still resolve; only an explicit --btf must load.
        Err(e) if args.btf.is_none() && args.elf.is_none() => {
            eprintln!("btfkit: warning: no prototypes: {e:#}");
            None
        }
        Err(e) => return Err(e.into()),
    };
    let index = btf.as_ref().map(|b| {
        let mut index = BtfIndex::new(b);
        if index.has_addr_tags() {
            index.calibrate(&table);
        }
        index
    });
    let dwarf = match &args.elf {
        Some(elf) => Dwarf::load(elf, kaslr)?,
        None => None,
    };
    let resolver = Resolver {
        table: &table,
        index,
        dwarf,
    };

    let from_stdin = args.inputs.is_empty() || args.inputs.iter().any(|i| i == "-");
    let stdin_lines: Vec<String> = if from_stdin {
        std::io::stdin()
            .lock()
            .lines()
            .collect::<Result<_, _>>()
            .context("reading stdin")?
    } else {
        Vec::new()
    };
    let inputs = args
        .inputs
        .iter()
        .filter(|i| i.as_str() != "-")
        .map(String::as_str)
        .chain(
            stdin_lines
                .iter()
                .map(|l| l.trim())
                .filter(|l| !l.is_empty()),
        );

    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut all_resolved = true;
    let mut first = true;
    if args.json {
        out.write_all(b"[")?;
    }
    for input in inputs {
        for r in resolver.resolve(input) {
            all_resolved &= r.error.is_none();
            if args.json {
                out.write_all(if first { b"\n  " } else { b",\n  " })?;
                serde_json::to_writer(&mut out, &r)?;
            } else {
                print_text(&mut out, &r)?;
            }
            first = false;
        }
    }
    if args.json {
        out.write_all(if first { b"]\n" } else { b"\n]\n" })?;
    }
    out.flush()?;
    Ok(if all_resolved {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
