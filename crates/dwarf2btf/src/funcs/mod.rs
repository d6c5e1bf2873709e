//! The function model: every ELF STT_FUNC symbol joined to the DWARF
//! subprogram whose code starts at its address, with the source prototype,
//! each parameter's location at entry, and one verdict (`Status`) on whether
//! a BTF FUNC can describe what the compiled code takes.
//!
//! Joining is by address only, never by name: names repeat (static
//! functions in many files, clones) while an entry address is one piece of
//! code. Symbols at a subprogram's secondary range (`foo.cold`) are
//! fragments of it; `.part.N` clones are linked to the unsuffixed function
//! of the same unit. In a relocatable object (a module), where every
//! section starts at 0, addresses are keyed by section (ksyms::module_sections).

pub mod abi;
mod call_return;
pub mod collect;
pub mod ctype;
pub mod entry_code;
pub mod location;

use std::collections::BTreeMap;

use ksyms::module_sections::{symbol_address, ModuleSections};
use object::{Object, ObjectSymbol};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

pub use abi::{Returns, SigParam, SigType, Signature, Status};
pub use collect::{Concrete, SrcParam};
pub use location::EntryLoc;

use crate::error::{Error, Result};

/// The architecture the function model reads. [`ElfFile::object`] admits
/// only described architectures, and x86-64 is the one described; the
/// entry-code readers (`entry_code`, `call_return`) decode its
/// instructions. Every register fact of the model comes from here.
pub const ARCH: &arch::Arch = &arch::X86_64;
use crate::load::{DwarfSections, ElfFile};

/// ELF symbol binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Binding {
    /// STB_LOCAL: a `static` function, one of possibly many of its name.
    Local,
    /// STB_GLOBAL.
    Global,
    /// STB_WEAK: a definition that a global one of the same name overrides.
    Weak,
}

/// One function instance: one STT_FUNC symbol.
#[derive(Clone, Debug)]
pub struct Instance {
    /// Symbol-table name, with any compiler suffix.
    pub symbol: String,
    /// Source name (DWARF), or the symbol up to its first '.' without DWARF.
    pub name: String,
    /// The entry address: link-time, or keyed by section in a relocatable
    /// object (ksyms::module_sections).
    pub address: u64,
    /// The symbol's size in bytes (`st_size`).
    pub size: u64,
    /// The symbol's binding.
    pub binding: Binding,
    /// Index into [`FuncModel::concretes`].
    pub concrete: Option<usize>,
    /// For fragments and `.part` clones: the instance they belong to.
    pub parent: Option<usize>,
    /// The analysis's verdict ([`abi::analyse`]).
    pub status: Status,
    /// The prototype a FUNC may give it.
    pub signature: Signature,
    /// What the signature returns.
    pub returns: Returns,
    /// What changed, or why the instance cannot be encoded.
    pub detail: Option<String>,
}

impl Instance {
    /// The compiler suffix after the source name (".isra.0"), if any.
    pub fn suffix(&self) -> Option<&str> {
        self.symbol
            .strip_prefix(self.name.as_str())
            .filter(|s| s.starts_with('.'))
    }

    /// Whether a BTF FUNC can describe this instance truthfully.
    pub fn encodable(&self) -> bool {
        matches!(self.signature, Signature::Source | Signature::True { .. })
    }

    /// The name of the FUNC when the kernel attaches this name to this
    /// instance: the symbol-table name, suffix included, whether or not the
    /// compiler changed the ABI (BTF matches kallsyms, as asked in
    /// <https://lore.kernel.org/bpf/3f95f01b-9cc4-499b-a18d-5c4975f0b0e5@oracle.com/>). Other
    /// instances' FUNCs are named by `ksyms::kernel_lookup::KernelLookup::unreachable_name`.
    pub fn btf_name(&self) -> &str {
        &self.symbol
    }
}

/// Every function instance of one ELF file.
pub struct FuncModel {
    /// The DWARF subprograms with code (and the definitions without code
    /// placed at a symbol), unit by unit; [`Instance::concrete`] indexes it.
    pub concretes: Vec<Concrete>,
    /// Sorted by address, then symbol name.
    pub instances: Vec<Instance>,
    /// Problems that did not stop the analysis (each names its DIE offset).
    pub warnings: Vec<String>,
    /// Set for a pre-link kernel image: which addresses the final link moves.
    pub final_link: Option<ksyms::final_link::FinalLink>,
    /// kfuncs the verifier traces with the prototype of their `_impl` FUNC
    /// ([`crate::kfuncs::with_implicit_args`]).
    pub implicit_args: std::collections::BTreeSet<String>,
}

impl FuncModel {
    /// Builds the model from an ELF file with DWARF.
    pub fn from_elf(elf: &ElfFile) -> Result<FuncModel> {
        let obj = elf.object()?;
        let sections = DwarfSections::load(elf, &obj)?;
        let dwarf = sections.dwarf();
        let symbols = read_symbols(&obj);
        let unique = unique_names(symbols.iter().map(|s| (s.0.as_str(), s.1)));
        let code = entry_code::EntryCode::of(&obj);
        let concretes = collect_all(elf, &dwarf, &|name| unique.get(name).copied(), &code)?;
        Ok(FuncModel {
            final_link: ksyms::final_link::FinalLink::of(&obj),
            implicit_args: crate::kfuncs::with_implicit_args(&obj),
            ..FuncModel::join(concretes, symbols)
        })
    }

    /// Joins concrete subprograms with symbols (name, address, size, binding).
    pub fn join(concretes: Vec<Concrete>, symbols: Vec<(String, u64, u64, Binding)>) -> FuncModel {
        let warnings: Vec<String> = concretes.iter().filter_map(|c| c.error.clone()).collect();
        let index = JoinIndex::new(&concretes, &symbols);
        let mut instances: Vec<Instance> = symbols
            .into_iter()
            .map(|(symbol, address, size, binding)| index.instance(symbol, address, size, binding))
            .collect();
        instances.sort_by(|a, b| (a.address, &a.symbol).cmp(&(b.address, &b.symbol)));
        link_parents(&concretes, &mut instances);
        mark_inconsistent(&concretes, &mut instances);
        FuncModel {
            concretes,
            instances,
            warnings,
            final_link: None,
            implicit_args: Default::default(),
        }
    }

    /// Whether the kernel build's final link moves this instance's code, so
    /// that the BTF neither tags it nor names a FUNC after its address.
    pub fn moved_by_final_link(&self, inst: &Instance) -> bool {
        self.final_link.is_some_and(|f| f.moves(inst.address))
    }

    /// The DWARF subprogram whose code `inst` is (None without DWARF).
    pub fn concrete(&self, inst: &Instance) -> Option<&Concrete> {
        inst.concrete.and_then(|i| self.concretes.get(i))
    }

    /// Source file and line of an instance ("kernel/irq/irqdesc.c:244").
    pub fn location(&self, inst: &Instance) -> Option<String> {
        let c = self.concrete(inst)?;
        Some(format!("{}:{}", c.decl_file.as_deref()?, c.decl_line))
    }

    /// The prototype in C: the true one when the ABI changed, else the source one.
    pub fn prototype_c(&self, inst: &Instance) -> Option<String> {
        let c = self.concrete(inst)?;
        let ret = inst.returns.of(c).map_or("void", |r| r.c.as_str());
        match &inst.signature {
            Signature::Source => Some(c_prototype(
                ret,
                inst.btf_name(),
                c.params.iter().map(|p| (p.ty.c.as_str(), p.name.as_str())),
                c.varargs,
            )),
            Signature::True { params } => Some(c_prototype(
                ret,
                inst.btf_name(),
                params.iter().map(|p| (p.c.as_str(), p.name.as_str())),
                false,
            )),
            Signature::Unwritable { .. } | Signature::None => (inst.status != Status::Fragment)
                .then(|| {
                    c_prototype(
                        &c.ret.c,
                        &inst.name,
                        c.params.iter().map(|p| (p.ty.c.as_str(), p.name.as_str())),
                        c.varargs,
                    )
                }),
        }
    }

    /// Instance counts per status.
    pub fn status_counts(&self) -> BTreeMap<Status, usize> {
        let mut m = BTreeMap::new();
        for i in &self.instances {
            *m.entry(i.status).or_default() += 1;
        }
        m
    }
}

/// What [`FuncModel::join`] looks symbols up in, built once from the
/// concrete subprograms and the symbols.
struct JoinIndex<'c> {
    concretes: &'c [Concrete],
    /// Entry address -> concretes starting there (several units may
    /// describe one piece of code under different names: memcpy, __memcpy).
    by_entry: FxHashMap<u64, Vec<usize>>,
    /// The same for subprograms without code, which count only where none
    /// has code.
    bodiless: FxHashMap<u64, Vec<usize>>,
    /// Subprograms of a relocatable object whose code is in no known
    /// section (ksyms::module_sections), by name: they describe no symbol.
    untied: FxHashMap<&'c str, u64>,
    /// Secondary ranges (hot/cold splitting), for fragments: start -> (end,
    /// concrete).
    secondary: BTreeMap<u64, (u64, usize)>,
    /// Whether the code at an address returns its source's value
    /// (abi::analyse): no symbol there names a clone that may drop it.
    keeps_return: FxHashMap<u64, bool>,
}

impl<'c> JoinIndex<'c> {
    /// Index stage: the concretes by entry address, name and secondary
    /// range, and the addresses whose code keeps its return value.
    fn new(concretes: &'c [Concrete], symbols: &[(String, u64, u64, Binding)]) -> Self {
        let mut by_entry: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
        let mut bodiless: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
        for (i, c) in concretes.iter().enumerate() {
            let map = if c.bodiless {
                &mut bodiless
            } else {
                &mut by_entry
            };
            map.entry(c.entry).or_default().push(i);
        }
        let untied: FxHashMap<&str, u64> = concretes
            .iter()
            .filter(|c| c.untied)
            .filter_map(|c| Some((c.name.as_deref()?, c.die)))
            .collect();
        let mut secondary: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
        for (i, c) in concretes.iter().enumerate() {
            for &(lo, hi) in &c.ranges {
                if !(lo <= c.entry && c.entry < hi) {
                    secondary.insert(lo, (hi, i));
                }
            }
        }
        let mut keeps_return: FxHashMap<u64, bool> = FxHashMap::default();
        for (name, address, ..) in symbols {
            *keeps_return.entry(*address).or_insert(true) &= !abi::may_drop_return(name);
        }
        JoinIndex {
            concretes,
            by_entry,
            bodiless,
            untied,
            secondary,
            keeps_return,
        }
    }

    /// Instance stage: one symbol joined to the subprogram at its address,
    /// else to the one it is a fragment of, else told why none describes it.
    fn instance(&self, symbol: String, address: u64, size: u64, binding: Binding) -> Instance {
        let concretes = self.concretes;
        let base = symbol.split('.').next().unwrap_or(&symbol).to_owned();
        let mut inst = Instance {
            name: base,
            symbol,
            address,
            size,
            binding,
            concrete: None,
            parent: None,
            status: Status::NoDwarf,
            signature: Signature::None,
            returns: Returns::Source,
            detail: None,
        };
        if let Some(ci) = self.pick(&mut inst) {
            self.analyse(&mut inst, ci);
        } else if let Some((_, &(hi, ci))) = self.secondary.range(..=address).next_back() {
            if address < hi {
                inst.concrete = Some(ci);
                inst.status = Status::Fragment;
                inst.detail = Some(format!(
                    "code of {} (DIE {:#x}), not an entry point",
                    concretes[ci].name.as_deref().unwrap_or("?"),
                    concretes[ci].die
                ));
            }
        }
        if inst.status == Status::NoDwarf && inst.detail.is_none() {
            inst.detail = Some(match self.untied.get(inst.name.as_str()) {
                Some(die) => format!(
                    "no DWARF subprogram starts here; the one named {} (DIE {die:#x}) has a code address tied to no section",
                    inst.name
                ),
                None => "no DWARF subprogram starts here (assembly?)".into(),
            });
        }
        inst
    }

    /// Pick stage: the concrete whose code starts at the instance's
    /// address (one of its name first), else the one definition without
    /// code placed there; says why when several are and none can be taken.
    fn pick(&self, inst: &mut Instance) -> Option<usize> {
        let concretes = self.concretes;
        self.by_entry
            .get(&inst.address)
            .and_then(|list| {
                list.iter()
                    .copied()
                    .find(|&ci| names_match(concretes[ci].name.as_deref(), &inst.symbol))
                    .or(list.first().copied())
            })
            .or_else(|| match self.bodiless.get(&inst.address).map(Vec::as_slice) {
                Some(&[ci]) if concretes[ci].name.as_deref() == Some(&inst.symbol) => Some(ci),
                // A weak default and its override (the bpf_jit_supports_*
                // of kernel/bpf/core.c and the JIT's), folded away by the
                // compiler: whichever one is at the symbol, the prototype
                // is the same.
                Some(several @ [first, ..])
                    if concretes[*first].name.as_deref() == Some(&inst.symbol)
                        && several
                            .iter()
                            .all(|&ci| same_source_prototype(&concretes[*first], &concretes[ci])) =>
                {
                    Some(*first)
                }
                Some(several) => {
                    inst.detail = Some(format!(
                        "no DWARF subprogram starts here, and {} definitions without code are named {}",
                        several.len(),
                        inst.symbol
                    ));
                    None
                }
                None => None,
            })
    }

    /// Analysis stage: the picked concrete's name, and the verdict on its
    /// prototype (none when its DWARF could not be read).
    fn analyse(&self, inst: &mut Instance, ci: usize) {
        let c = &self.concretes[ci];
        inst.concrete = Some(ci);
        if let Some(n) = &c.name {
            inst.name = n.clone();
        }
        if let Some(e) = &c.error {
            // Unreadable DWARF proves nothing about the code.
            inst.signature = Signature::Unwritable { reason: e.clone() };
            inst.detail = Some(e.clone());
        } else {
            let v = abi::analyse(c, inst.suffix(), &|e| {
                self.keeps_return.get(&e) == Some(&true)
            });
            inst.status = v.status;
            inst.signature = v.signature;
            inst.returns = v.returns;
            inst.detail = v.detail;
        }
    }
}

/// Whether a symbol names the DWARF function `name`: equal, or `name`
/// followed by a compiler suffix (`.isra.0`).
pub fn names_match(name: Option<&str>, symbol: &str) -> bool {
    name.is_some_and(|n| {
        !n.is_empty()
            && symbol
                .strip_prefix(n)
                .is_some_and(|r| r.is_empty() || r.starts_with('.'))
    })
}

/// Whether `elf` is an ELF file with a non-empty `.debug_info`.
pub fn has_dwarf(elf: &ElfFile) -> bool {
    use object::ObjectSection;
    elf.object().is_ok_and(|obj| {
        obj.section_by_name(".debug_info")
            .is_some_and(|s| s.size() > 0)
    })
}

/// `ret name(type a, type b)`, with C declarator spacing for pointers.
pub fn c_prototype<'a>(
    ret: &str,
    name: &str,
    params: impl Iterator<Item = (&'a str, &'a str)>,
    varargs: bool,
) -> String {
    let mut args: Vec<String> = params.map(|(t, n)| c_decl(t, n)).collect();
    if varargs {
        args.push("...".into());
    }
    if args.is_empty() {
        args.push("void".into());
    }
    format!("{} {}({})", ret, name, args.join(", ")).replace("* ", "*")
}

/// A declaration from a type's C text and a name. Function-pointer and
/// array types put the name inside the declarator.
fn c_decl(ty: &str, name: &str) -> String {
    if name.is_empty() {
        return ty.to_owned();
    }
    if let Some(i) = ty.find("(*)") {
        return format!("{}(*{}){}", &ty[..i], name, &ty[i + 3..]);
    }
    if ty.ends_with('*') {
        format!("{ty}{name}")
    } else {
        format!("{ty} {name}")
    }
}

/// Each function symbol name that one symbol alone carries, with its address.
pub fn unique_names<'a>(symbols: impl Iterator<Item = (&'a str, u64)>) -> FxHashMap<&'a [u8], u64> {
    let mut seen: FxHashMap<&[u8], Option<u64>> = FxHashMap::default();
    for (name, addr) in symbols {
        seen.entry(name.as_bytes())
            .and_modify(|a| *a = None)
            .or_insert(Some(addr));
    }
    seen.into_iter()
        .filter_map(|(n, a)| Some((n, a?)))
        .collect()
}

/// Parses every unit in parallel; output order is unit order.
fn collect_all(
    elf: &ElfFile,
    dwarf: &crate::load::Dwarf<'_>,
    orphan: collect::Orphan<'_>,
    code: &entry_code::EntryCode<'_>,
) -> Result<Vec<Concrete>> {
    let mut headers = Vec::new();
    let mut iter = dwarf.units();
    loop {
        match iter.next() {
            Ok(Some(h)) => headers.push(h),
            Ok(None) => break,
            Err(source) => {
                return Err(Error::Dwarf {
                    path: elf.path().to_owned(),
                    offset: headers
                        .last()
                        .and_then(|h: &gimli::UnitHeader<_>| h.offset().as_debug_info_offset())
                        .map_or(0, |o| o.0 as u64),
                    error: source,
                })
            }
        }
    }
    let tables = crate::partial_units::UnitTables::default();
    let per_unit: Vec<Result<Vec<Concrete>>> = headers
        .into_par_iter()
        .map(|h| {
            let offset = h.offset().as_debug_info_offset().map_or(0, |o| o.0 as u64);
            collect::collect_unit(dwarf, h, &tables, orphan, code).map_err(|source| Error::Dwarf {
                path: elf.path().to_owned(),
                offset,
                error: source,
            })
        })
        .collect();
    let mut out = Vec::new();
    for r in per_unit {
        out.extend(r?);
    }
    Ok(out)
}

/// Every defined STT_FUNC symbol of the ELF symbol table, at its address
/// (a relocatable object's keyed by section: ksyms::module_sections).
pub fn read_symbols(obj: &object::File<'_>) -> Vec<(String, u64, u64, Binding)> {
    let sections = ModuleSections::of(obj);
    obj.symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.section_index().is_some())
        .filter_map(|s| {
            let name = s.name().ok()?;
            if name.is_empty() {
                return None;
            }
            let binding = if s.is_weak() {
                Binding::Weak
            } else if s.is_global() {
                Binding::Global
            } else {
                Binding::Local
            };
            let address = symbol_address(sections.as_ref(), &s);
            Some((name.to_owned(), address, s.size(), binding))
        })
        .collect()
}

/// Links `.cold` fragments to the instance owning their code, and `.part.N`
/// clones to the unsuffixed instance of the same unit.
fn link_parents(concretes: &[Concrete], instances: &mut [Instance]) {
    let by_concrete: FxHashMap<usize, usize> = instances
        .iter()
        .enumerate()
        .filter(|(_, i)| i.status != Status::Fragment)
        .filter_map(|(n, i)| Some((i.concrete?, n)))
        .collect();
    let by_symbol_unit: FxHashMap<(&str, u64), usize> = instances
        .iter()
        .enumerate()
        .filter_map(|(n, i)| Some(((i.symbol.as_str(), concretes.get(i.concrete?)?.unit), n)))
        .collect();
    let mut parents = vec![None; instances.len()];
    for (n, inst) in instances.iter().enumerate() {
        let Some(ci) = inst.concrete else { continue };
        if inst.status == Status::Fragment {
            parents[n] = by_concrete.get(&ci).copied();
        } else if inst.suffix().is_some_and(|s| s.starts_with(".part.")) {
            let unit = concretes[ci].unit;
            parents[n] = by_symbol_unit.get(&(inst.name.as_str(), unit)).copied();
        }
    }
    for (inst, p) in instances.iter_mut().zip(parents) {
        inst.parent = p;
    }
}

/// Whether two subprograms have the same source prototype: the same C
/// types and names of return value and parameters, variadic alike, and the
/// same structural fingerprints where both were computed (one struct name
/// built against different headers differs there). The FUNC writer
/// (func_policy::exact) groups by the same things.
fn same_source_prototype(a: &Concrete, b: &Concrete) -> bool {
    let same = |x: &ctype::TypeInfo, y: &ctype::TypeInfo| {
        x.c == y.c && (x.shape == 0 || y.shape == 0 || x.shape == y.shape)
    };
    a.error.is_none()
        && b.error.is_none()
        && a.name == b.name
        && a.varargs == b.varargs
        && same(&a.ret, &b.ret)
        && a.params.len() == b.params.len()
        && a.params
            .iter()
            .zip(&b.params)
            .all(|(p, q)| p.name == q.name && same(&p.ty, &q.ty))
}

/// Marks instances whose source prototype differs from another instance's
/// of the same name (compared by structural fingerprint, so one struct name
/// built against different headers counts as different).
fn mark_inconsistent(concretes: &[Concrete], instances: &mut [Instance]) {
    type Key = (u64, Vec<u64>, bool);
    let key = |c: &Concrete| -> Key {
        (
            c.ret.shape,
            c.params.iter().map(|p| p.ty.shape).collect(),
            c.varargs,
        )
    };
    let mut protos: FxHashMap<&str, Vec<Key>> = FxHashMap::default();
    for inst in instances.iter() {
        let Some(c) = inst.concrete.and_then(|i| concretes.get(i)) else {
            continue;
        };
        if inst.status == Status::Fragment || inst.signature != Signature::Source {
            continue;
        }
        let k = key(c);
        let v = protos.entry(inst.name.as_str()).or_default();
        if !v.contains(&k) {
            v.push(k);
        }
    }
    let inconsistent: rustc_hash::FxHashSet<String> = protos
        .into_iter()
        .filter(|(_, v)| v.len() > 1)
        .map(|(n, _)| n.to_owned())
        .collect();
    for inst in instances.iter_mut() {
        if matches!(
            inst.status,
            Status::Consistent | Status::OptimizedParameters
        ) && inst.signature == Signature::Source
            && inconsistent.contains(&inst.name)
        {
            inst.status = Status::InconsistentPrototype;
        }
    }
}
