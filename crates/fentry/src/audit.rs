//! The fentry audit (`btfkit check --attach BTF SYMBOLS`): for every FUNC
//! of a vmlinux BTF, what an unmodified kernel does when a tracing program
//! names it, predicted from the kernel's own rules (ksyms::kernel_lookup for the name,
//! `btf_distill_func_proto` for the prototype, ftrace for the call site).
//!
//! Invariant: a FUNC is `Attachable` only when the kernel resolves its name
//! to a function whose entry has an fentry call site (when the table of
//! sites is known) and something proves that the FUNC's prototype is the
//! one of the code there: an `addr=` tag at that address, the DWARF of that
//! instance, or the name having a single function symbol and a single FUNC.
//! A FUNC whose tags or DWARF say it describes other code is `Unsafe`;
//! one where nothing says which instance it describes is `Unverified`.
//!
//! Addresses (`wrong_addresses`): every `addr=` tag is the address of a
//! function symbol of its FUNC's name, and every FUNC named
//! `<symbol>..<address>` names a function symbol at that address, in the
//! image the symbols come from. A BTF encoded from a kernel's pre-link
//! image by a tool that does not know which code the final link moves
//! (ksyms::final_link) fails this for init and exit code.

use std::collections::BTreeSet;

use arch::Arch;
use btf::{Btf, TypeData, TypeId};
use dwarf2btf::funcs::{FuncModel, Status};
pub use ksyms::image_symbols::{elf_symbols, module_input, KernelSymbol};
use ksyms::kernel_lookup::{parse_unreachable_name, unreachable_head, KernelLookup, Picks};
use rustc_hash::FxHashMap;

use crate::kernel_rules::UNION_ARGUMENTS;
use crate::verify::{addr_tags, prototype_matches, Compare};

/// What the audit knows besides the BTF.
pub struct AuditInput<'a> {
    /// Every symbol of the kernel image.
    pub symbols: &'a [KernelSymbol<'a>],
    /// The symbols are a module's ([`module_input`]): the kernel resolves a
    /// name to the module's first symbol of that name in table order
    /// (find_kallsyms_symbol_value), not to the lowest address.
    pub module: bool,
    /// Addresses of the fentry call sites (`__mcount_loc`), sorted; None
    /// when the symbol source does not have them.
    pub fentry_sites: Option<&'a [u64]>,
    /// The function model of the same kernel, when its DWARF is at hand.
    pub model: Option<&'a FuncModel>,
    /// The kernel's (major, minor) version, when known
    /// ([`kernel_version`](crate::kernel_rules::kernel_version)): it
    /// decides which argument types trampolines take. None: the rules of
    /// the kernels before 6.19 (no union arguments).
    pub version: Option<(u32, u32)>,
}

/// What happens when a tracing program attaches to a FUNC by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reach {
    /// Attaches to the code whose prototype the FUNC carries.
    Attachable,
    /// Attaches to code whose prototype is not the FUNC's.
    Unsafe,
    /// Nothing says whether the FUNC describes the code the kernel picks.
    Unverified,
    /// The verifier refuses the prototype for trampolines.
    UnsupportedPrototype,
    /// `kallsyms_lookup_name` finds nothing ("cannot be found").
    NotASymbol,
    /// The symbol the kernel picks for that name is not code.
    NotAFunction,
    /// The code has no fentry call site (notrace, noinstr): attach fails.
    NoFentrySite,
}

impl Reach {
    /// Every outcome, in declaration order: the order in which the summary
    /// line of `btfkit check --attach` counts them.
    pub const ALL: [Reach; 7] = [
        Reach::Attachable,
        Reach::Unsafe,
        Reach::Unverified,
        Reach::UnsupportedPrototype,
        Reach::NotASymbol,
        Reach::NotAFunction,
        Reach::NoFentrySite,
    ];

    /// The outcome's kebab-case name, as the text and JSON reports spell it
    /// (the same as its serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            Reach::Attachable => "attachable",
            Reach::Unsafe => "unsafe",
            Reach::Unverified => "unverified",
            Reach::UnsupportedPrototype => "unsupported-prototype",
            Reach::NotASymbol => "not-a-symbol",
            Reach::NotAFunction => "not-a-function",
            Reach::NoFentrySite => "no-fentry-site",
        }
    }
}

/// The audit of one FUNC.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FuncReach {
    /// The FUNC's type id in the audited BTF.
    pub btf_id: TypeId,
    /// The FUNC's name, the name a tracing program attaches by.
    pub name: String,
    /// What attaching by that name does.
    pub reach: Reach,
    /// Where the kernel attaches the name (the exact-match lookup's address).
    pub address: Option<u64>,
    /// Whether that code has an fentry call site (None: not known).
    pub fentry_site: Option<bool>,
    /// The FUNC's addr tags.
    pub tags: Vec<u64>,
    /// Argument registers the prototype takes (x86-64; 6.1's trampolines
    /// take at most 6, later kernels pass more on the stack).
    pub arg_regs: u32,
    /// Why it is not attachable (empty when it is).
    pub reason: String,
}

/// Largest number of arguments the verifier takes (MAX_BPF_FUNC_ARGS).
const MAX_BPF_FUNC_ARGS: usize = 12;

/// Audits every FUNC of `btf` (own types; a split BTF's base is not).
pub fn audit(btf: &Btf, input: &AuditInput<'_>) -> Vec<FuncReach> {
    let lookup = KernelLookup::new(
        input.symbols.iter().map(|s| (s.name, s.address)),
        input.module,
    );
    let unions = input.version.is_some_and(|v| v >= UNION_ARGUMENTS);
    // Function symbols by name, and sizes by address.
    let mut functions: FxHashMap<&str, Vec<u64>> = FxHashMap::default();
    let mut size_at: FxHashMap<u64, u64> = FxHashMap::default();
    for s in input.symbols.iter().filter(|s| s.function) {
        functions.entry(s.name).or_default().push(s.address);
        let e = size_at.entry(s.address).or_default();
        *e = (*e).max(s.size);
    }
    let mut tags_of: FxHashMap<TypeId, Vec<u64>> = FxHashMap::default();
    for t in addr_tags(btf) {
        tags_of.entry(t.func).or_default().push(t.address);
    }
    let mut funcs_named: FxHashMap<&str, Vec<TypeId>> = FxHashMap::default();
    for (id, t) in btf.iter() {
        if matches!(t.data, TypeData::Func { .. }) {
            funcs_named
                .entry(btf.name_of(t).unwrap_or(""))
                .or_default()
                .push(id);
        }
    }
    let mut instances_at: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    if let Some(model) = input.model {
        for (n, i) in model.instances.iter().enumerate() {
            if i.status != Status::Fragment && i.concrete.is_some() {
                instances_at.entry(i.address).or_default().push(n);
            }
        }
    }
    let symbol = |n: &str| {
        input
            .symbols
            .iter()
            .find(|s| s.name == n)
            .map(|s| s.address)
    };
    let init_text = symbol("__init_begin").zip(symbol("__init_end"));
    let cx = Context {
        btf,
        input,
        init_text,
        functions: &functions,
        funcs_named: &funcs_named,
        tags_of: &tags_of,
        instances_at: &instances_at,
    };
    let mut out = Vec::new();
    for (id, t) in btf.iter() {
        let TypeData::Func { proto, .. } = t.data else {
            continue;
        };
        let name = btf.name_of(t).unwrap_or("");
        let mut tags = tags_of.get(&id).cloned().unwrap_or_default();
        tags.sort_unstable();
        let picks = lookup.picks(name);
        let traced = cx.traced(id, name, proto);
        let mut row = FuncReach {
            btf_id: id,
            name: name.to_owned(),
            reach: Reach::Attachable,
            address: picks.exact.or(picks.stripped),
            fentry_site: None,
            tags,
            arg_regs: arg_regs(btf, traced.as_ref().map_or(proto, |t| t.1), unions),
            reason: String::new(),
        };
        if let Some(a) = row.address {
            row.fentry_site = input
                .fentry_sites
                .map(|sites| has_site(sites, a, size_at.get(&a).copied().unwrap_or(0)));
        }
        (row.reach, row.reason) = cx.judge(id, traced, name, picks, &row);
        out.push(row);
    }
    out
}

struct Context<'a, 'b> {
    btf: &'a Btf,
    input: &'a AuditInput<'b>,
    /// [__init_begin, __init_end): .init.text and .exit.text, freed after boot.
    init_text: Option<(u64, u64)>,
    functions: &'a FxHashMap<&'b str, Vec<u64>>,
    funcs_named: &'a FxHashMap<&'a str, Vec<TypeId>>,
    tags_of: &'a FxHashMap<TypeId, Vec<u64>>,
    /// Model instances (with DWARF, not fragments) by address.
    instances_at: &'a FxHashMap<u64, Vec<usize>>,
}

impl Context<'_, '_> {
    /// The FUNC whose prototype the verifier traces FUNC `id` with, and that
    /// prototype: its own, or for a kfunc with implicit arguments the one of
    /// its `_impl` FUNC (the kernel's first of that name); an error when the
    /// BTF has none (the load fails).
    fn traced(&self, id: TypeId, name: &str, proto: TypeId) -> Result<(TypeId, TypeId), String> {
        if !self
            .input
            .model
            .is_some_and(|m| m.implicit_args.contains(name))
        {
            return Ok((id, proto));
        }
        let impl_name = format!("{name}_impl");
        let found = self.funcs_named.get(impl_name.as_str()).and_then(|v| {
            let f = *v.first()?;
            match self.btf.type_by_id(f)?.data {
                TypeData::Func { proto, .. } => Some((f, proto)),
                _ => None,
            }
        });
        found.ok_or_else(|| {
            format!("kfunc with implicit arguments: the verifier traces it with the prototype of FUNC {impl_name}, which the BTF does not have")
        })
    }

    /// The verdict, in the kernel's order: prototype, name, then the code.
    /// `traced`: the FUNC and prototype the verifier traces it with.
    fn judge(
        &self,
        id: TypeId,
        traced: Result<(TypeId, TypeId), String>,
        name: &str,
        picks: Picks,
        row: &FuncReach,
    ) -> (Reach, String) {
        let (traced, proto) = match traced {
            Ok(t) => t,
            Err(why) => return (Reach::UnsupportedPrototype, why),
        };
        let unions = self.input.version.is_some_and(|v| v >= UNION_ARGUMENTS);
        if let Err(why) = distill(self.btf, proto, unions) {
            return (Reach::UnsupportedPrototype, why);
        }
        if picks.is_none() {
            let why = match parse_unreachable_name(name) {
                Some((sym, a)) => format!(
                    "named for the instance of {sym} at {a:#x}, which the kernel does not pick for {sym}"
                ),
                None => format!("no symbol is named {name}"),
            };
            return (Reach::NotASymbol, why);
        }
        for p in picks.addresses() {
            if !self.functions.get(name).is_some_and(|v| v.contains(&p)) {
                return (
                    Reach::NotAFunction,
                    format!("the symbol {name} the kernel picks ({p:#x}) is not code"),
                );
            }
        }
        // Init code is gone once user space runs: ftrace_free_init_mem drops
        // its call sites and the attach fails (EINVAL, measured on 6.1 and
        // 6.12), whatever the FUNC says. Its addr tags are no proof either:
        // pahole reads .tmp_vmlinux1, laid out before .BTF is added, and
        // the init sections come after .BTF (0x200000 lower there on 6.1-gcc).
        if let Some((start, end)) = self.init_text {
            if let Some(p) = picks.addresses().find(|p| (start..end).contains(p)) {
                return (
                    Reach::NoFentrySite,
                    format!("{name} at {p:#x} is init code (between __init_begin and __init_end), freed after boot"),
                );
            }
        }
        if let Some((reach, why)) = self.safety(id, traced, name, picks, &row.tags) {
            return (reach, why);
        }
        if row.fentry_site == Some(false) {
            return (
                Reach::NoFentrySite,
                format!(
                    "{name} at {:#x} has no __mcount_loc entry (notrace/noinstr)",
                    row.address.unwrap_or(0)
                ),
            );
        }
        (Reach::Attachable, String::new())
    }

    /// None when the FUNC's prototype (the one of FUNC `traced` the verifier
    /// uses) is the one of every instance the kernel picks for its name.
    fn safety(
        &self,
        id: TypeId,
        traced: TypeId,
        name: &str,
        picks: Picks,
        tags: &[u64],
    ) -> Option<(Reach, String)> {
        let addrs: Vec<u64> = picks.addresses().collect();
        if !tags.is_empty() {
            if let Some(p) = addrs.iter().find(|p| !tags.contains(p)) {
                return Some((
                    Reach::Unsafe,
                    format!(
                        "tagged for {}, but the kernel attaches {name} at {p:#x}",
                        hex_list(tags)
                    ),
                ));
            }
        }
        let mut proven = !tags.is_empty();
        if let Some(model) = self.input.model {
            for &p in &addrs {
                let insts: Vec<_> = self
                    .instances_at
                    .get(&p)
                    .into_iter()
                    .flatten()
                    .filter_map(|&n| model.instances.get(n))
                    .collect();
                if insts.is_empty() {
                    continue;
                }
                let mut problems = Vec::new();
                for inst in &insts {
                    match prototype_matches(model, inst, self.btf, traced, Compare::Types) {
                        Ok(()) => problems.clear(),
                        Err(e) => problems.push(format!("{}: {e}", inst.symbol)),
                    }
                    if problems.is_empty() {
                        break;
                    }
                }
                if !problems.is_empty() {
                    return Some((
                        Reach::Unsafe,
                        format!(
                            "the kernel attaches {name} at {p:#x}, whose code takes another prototype ({})",
                            problems.join("; ")
                        ),
                    ));
                }
                proven = true;
            }
        }
        if proven {
            return None;
        }
        // Neither tags nor DWARF: another FUNC of the name tagged at the
        // pick describes it; a name of one function and one FUNC is clear.
        let others = self.funcs_named.get(name).map_or(&[][..], Vec::as_slice);
        if let Some(o) = others.iter().find(|&&o| {
            o != id
                && self
                    .tags_of
                    .get(&o)
                    .is_some_and(|t| addrs.iter().all(|p| t.contains(p)))
        }) {
            return Some((
                Reach::Unsafe,
                format!("FUNC [{o}] of the same name describes the code the kernel attaches to"),
            ));
        }
        let instances = self.functions.get(name).map_or(0, Vec::len);
        if instances == 1 && others.len() == 1 {
            return None;
        }
        Some((
            Reach::Unverified,
            format!(
                "{instances} function symbols and {} FUNCs are named {name}; no addr tag or DWARF says which one this FUNC describes",
                others.len()
            ),
        ))
    }
}

/// An address the BTF gives a FUNC that is not one of its symbol's.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WrongAddress {
    /// The FUNC's type id in the audited BTF.
    pub btf_id: TypeId,
    /// The FUNC's name (`<symbol>..<address>` for a FUNC named by address).
    pub name: String,
    /// The `addr=` tag's address, or the one in a `..` name.
    pub address: u64,
    /// Why the address is wrong, in words, with where the image's function
    /// symbols of that name are (or that there are none).
    pub reason: String,
}

/// Every `addr=` tag of `btf` (own types) that is not the address of a
/// function symbol of its FUNC's name, and every FUNC named
/// `<symbol>..<address>` whose address is not a function symbol of that
/// name; in type id order.
pub fn wrong_addresses(btf: &Btf, symbols: &[KernelSymbol<'_>]) -> Vec<WrongAddress> {
    let mut by_name: FxHashMap<&str, Vec<u64>> = FxHashMap::default();
    let mut at: FxHashMap<u64, Vec<&str>> = FxHashMap::default();
    for s in symbols.iter().filter(|s| s.function) {
        by_name.entry(s.name).or_default().push(s.address);
        at.entry(s.address).or_default().push(s.name);
    }
    for v in by_name.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    let mut tags_of: FxHashMap<TypeId, Vec<u64>> = FxHashMap::default();
    for t in addr_tags(btf) {
        tags_of.entry(t.func).or_default().push(t.address);
    }
    // Where a name's function symbols are, for the reason.
    let whereabouts = |name: &str| match by_name.get(name).map(Vec::as_slice) {
        None | Some([]) => format!("no function symbol is named {name}"),
        Some(addrs) if addrs.len() <= 4 => format!("{name} is at {}", hex_list(addrs)),
        Some(addrs) => format!(
            "{name} is at {} and {} more",
            hex_list(&addrs[..4]),
            addrs.len() - 4
        ),
    };
    let mut out = Vec::new();
    for (id, t) in btf.iter() {
        if !matches!(t.data, TypeData::Func { .. }) {
            continue;
        }
        let name = btf.name_of(t).unwrap_or("");
        let tags = tags_of.get(&id).map_or(&[][..], Vec::as_slice);
        let mut wrong = |address: u64, reason: String| {
            out.push(WrongAddress {
                btf_id: id,
                name: name.to_owned(),
                address,
                reason,
            })
        };
        match parse_unreachable_name(name) {
            Some((head, named)) => {
                let here = at.get(&named).map_or(&[][..], Vec::as_slice);
                if !here.iter().any(|s| unreachable_head(s, named) == head) {
                    let symbol = here
                        .iter()
                        .find(|s| s.starts_with(head))
                        .copied()
                        .unwrap_or(head);
                    wrong(
                        named,
                        format!(
                            "named for {head} at {named:#x}, but no function symbol {head} is there ({})",
                            whereabouts(symbol)
                        ),
                    );
                }
                for &a in tags.iter().filter(|&&a| a != named) {
                    wrong(a, format!("addr={a:#x}, but its name says {named:#x}"));
                }
            }
            None => {
                for &a in tags {
                    if !by_name.get(name).is_some_and(|v| v.contains(&a)) {
                        wrong(
                            a,
                            format!(
                                "addr={a:#x} is not the address of a function symbol {name} ({})",
                                whereabouts(name)
                            ),
                        );
                    }
                }
            }
        }
    }
    out
}

/// Whether a call site lies in [start, start + size) (the kernel's
/// `ftrace_location` looks there for a symbol's start; with IBT the call
/// follows an `endbr64`).
fn has_site(sites: &[u64], start: u64, size: u64) -> bool {
    let i = sites.partition_point(|&s| s < start);
    sites
        .get(i)
        .is_some_and(|&s| s == start || s < start.saturating_add(size.max(1)))
}

fn hex_list(a: &[u64]) -> String {
    a.iter()
        .map(|a| format!("{a:#x}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The kernel's `__get_type_size`: (size, aggregate). Void has size 0;
/// pointers, integers, enums and structs have a size, and unions where the
/// kernel takes them (`unions`: 6.19 on, kernel_rules.rs); anything else is
/// refused (None).
fn type_size(btf: &Btf, id: TypeId, unions: bool) -> Option<(u64, bool)> {
    if id == 0 {
        return Some((0, false));
    }
    Some(match &btf.resolved_type(id)?.data {
        TypeData::Ptr { .. } => (8, false),
        TypeData::Int { size, .. }
        | TypeData::Enum { size, .. }
        | TypeData::Enum64 { size, .. } => (u64::from(*size), false),
        // Before 6.19 the kernel's __btf_type_is_struct takes STRUCT only:
        // a union argument is refused (measured: "arg0 type UNION is
        // unsupported" for release_pages on 6.12).
        TypeData::Struct { size, .. } => (u64::from(*size), true),
        TypeData::Union { size, .. } if unions => (u64::from(*size), true),
        _ => return None,
    })
}

/// The checks of the kernel's `btf_distill_func_proto` (6.1 to 7.2).
fn distill(btf: &Btf, proto: TypeId, unions: bool) -> Result<(), String> {
    let Some(TypeData::FuncProto { ret, params }) = btf.type_by_id(proto).map(|t| &t.data) else {
        return Err("no FUNC_PROTO".into());
    };
    if params.len() > MAX_BPF_FUNC_ARGS {
        return Err(format!(
            "{} arguments, the verifier takes {MAX_BPF_FUNC_ARGS}",
            params.len()
        ));
    }
    match type_size(btf, *ret, unions) {
        Some((_, false)) => {}
        _ => return Err("the return type is not a scalar or pointer".into()),
    }
    for (i, p) in params.iter().enumerate() {
        if p.ty == 0 && i + 1 == params.len() {
            return Err("variable arguments".into());
        }
        match type_size(btf, p.ty, unions) {
            Some((1..=16, _)) => {}
            Some((0, _)) => return Err(format!("argument {i} is void")),
            _ => {
                return Err(format!(
                    "argument {i} ({}) is not a scalar, pointer or aggregate of at most 16 bytes",
                    btf::cdecl::type_name(btf, p.ty)
                ))
            }
        }
    }
    Ok(())
}

/// Argument registers a prototype takes (aggregates of 9-16 bytes take two).
fn arg_regs(btf: &Btf, proto: TypeId, unions: bool) -> u32 {
    let Some(TypeData::FuncProto { params, .. }) = btf.type_by_id(proto).map(|t| &t.data) else {
        return 0;
    };
    params
        .iter()
        .map(|p| match type_size(btf, p.ty, unions) {
            Some((9..=16, true)) => 2,
            _ => 1,
        })
        .sum()
}

/// What a kernel does with a fentry program on a FUNC, as the boot
/// tests' guest reports it (`FENTRY <id> <name> ok|load <errno>|attach <errno>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Loads and attaches.
    Ok,
    /// BPF_PROG_LOAD fails with this errno.
    Load(i32),
    /// Loads; attaching fails (any errno).
    Attach,
}

const ENOENT: i32 = 2;
const EINVAL: i32 = 22;

/// The outcome the audit predicts for a FUNC on a kernel of `arch` and
/// `version` (major, minor): the verifier's checks in its order, then the
/// trampoline's (how many argument registers' worth it passes in that
/// version: [`arch::Trampolines`]), then ftrace's call site. An `unsafe` FUNC
/// attaches: that is what makes it unsafe. `denied`: the names in the
/// verifier's deny list (the image's `btf_id_deny` set,
/// [`denied_functions`](crate::kernel_rules::denied_functions)); the list
/// holds vmlinux's BTF ids, so it is empty for a module's FUNCs (7.2's
/// prime_numbers.ko has its own `__rcu_read_unlock`).
pub fn predict(
    arch: &Arch,
    row: &FuncReach,
    version: (u32, u32),
    denied: &BTreeSet<String>,
) -> Outcome {
    match row.reach {
        Reach::UnsupportedPrototype => Outcome::Load(EINVAL),
        Reach::NotASymbol => Outcome::Load(ENOENT),
        _ if denied.contains(&row.name) => Outcome::Load(EINVAL),
        Reach::NoFentrySite | Reach::NotAFunction => Outcome::Attach,
        _ if row.arg_regs > arch.trampolines.max_arg_regs(version) => Outcome::Attach,
        Reach::Attachable | Reach::Unsafe | Reach::Unverified => Outcome::Ok,
    }
}

/// Counts per verdict.
pub fn counts(rows: &[FuncReach]) -> std::collections::BTreeMap<Reach, usize> {
    let mut m = std::collections::BTreeMap::new();
    for r in rows {
        *m.entry(r.reach).or_default() += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use arch::X86_64;

    fn row(name: &str, reach: Reach, arg_regs: u32) -> FuncReach {
        FuncReach {
            btf_id: 1,
            name: name.into(),
            reach,
            address: Some(0x1000),
            fentry_site: Some(true),
            tags: Vec::new(),
            arg_regs,
            reason: String::new(),
        }
    }

    #[test]
    fn predictions_follow_the_kernels_order() {
        let v61 = (6, 1);
        let v612 = (6, 12);
        let none = BTreeSet::new();
        let denied: BTreeSet<String> = ["migrate_disable".to_owned()].into();
        assert_eq!(
            predict(&X86_64, &row("f", Reach::Attachable, 3), v61, &denied),
            Outcome::Ok
        );
        assert_eq!(
            predict(&X86_64, &row("f", Reach::Unsafe, 3), v61, &denied),
            Outcome::Ok
        );
        assert_eq!(
            predict(&X86_64, &row("f", Reach::Attachable, 7), v61, &denied),
            Outcome::Attach
        );
        assert_eq!(
            predict(&X86_64, &row("f", Reach::Attachable, 7), v612, &denied),
            Outcome::Ok
        );
        assert_eq!(
            predict(&X86_64, &row("f..10", Reach::NotASymbol, 1), v612, &denied),
            Outcome::Load(2)
        );
        assert_eq!(
            predict(
                &X86_64,
                &row("f", Reach::UnsupportedPrototype, 1),
                v61,
                &denied
            ),
            Outcome::Load(22)
        );
        assert_eq!(
            predict(
                &X86_64,
                &row("migrate_disable", Reach::Attachable, 0),
                v61,
                &denied
            ),
            Outcome::Load(EINVAL)
        );
        // Not in this kernel's deny list (a module's FUNCs: none is).
        assert_eq!(
            predict(
                &X86_64,
                &row("migrate_disable", Reach::Attachable, 0),
                v61,
                &none
            ),
            Outcome::Ok
        );
        assert_eq!(
            predict(&X86_64, &row("f", Reach::NoFentrySite, 1), v61, &denied),
            Outcome::Attach
        );
    }

    /// A BTF with FUNCs (name, addr tags) over one empty prototype.
    fn funcs(list: &[(&str, &[u64])]) -> Btf {
        use btf::Type;
        let mut btf = Btf::new();
        let proto = btf.add_type(Type::new(
            0,
            TypeData::FuncProto {
                ret: 0,
                params: Default::default(),
            },
        ));
        for (name, tags) in list {
            let n = btf.add_str(name);
            let f = btf.add_type(Type::new(n, TypeData::Func { proto, linkage: 0 }));
            for a in *tags {
                let t = btf.add_str(&format!("addr={a:#x}"));
                btf.add_type(Type::new(
                    t,
                    TypeData::DeclTag {
                        ty: f,
                        component_idx: -1,
                    },
                ));
            }
        }
        btf
    }

    #[test]
    fn wrong_addresses_are_tags_and_names_off_their_symbols() {
        let long = "l".repeat(200);
        let text = |name, address| KernelSymbol {
            name,
            address,
            size: 0,
            function: true,
        };
        let symbols = [
            text("helper", 0x1000),
            text("helper", 0x3000),
            text("setup", 0x2000),
            text(&long, 0x4000),
            KernelSymbol {
                function: false,
                ..text("counter", 0x5000)
            },
        ];
        let lookup = KernelLookup::new(symbols.iter().map(|s| (s.name, s.address)), false);
        let truncated = lookup.unreachable_name(&long, 0x4000);
        assert!(truncated.len() < long.len());
        let good = funcs(&[
            ("helper", &[0x1000]),
            ("helper..3000", &[0x3000]),
            ("setup", &[]),
            (&truncated, &[0x4000]),
        ]);
        assert_eq!(wrong_addresses(&good, &symbols), []);
        // Init code 0x200000 low, as encoded from a pre-link image; a tag
        // at another function; a name whose address is data.
        let bad = funcs(&[
            ("helper", &[0x1000]),
            ("helper..fffffffffe003000", &[0xfffffffffe003000]),
            ("setup", &[0x1000]),
            ("counter..5000", &[]),
            ("helper..3000", &[0x3000, 0x1000]),
        ]);
        let wrong: Vec<(String, u64)> = wrong_addresses(&bad, &symbols)
            .into_iter()
            .map(|w| (w.name, w.address))
            .collect();
        assert_eq!(
            wrong,
            [
                ("helper..fffffffffe003000".into(), 0xfffffffffe003000),
                ("setup".into(), 0x1000),
                ("counter..5000".into(), 0x5000),
                ("helper..3000".into(), 0x1000),
            ]
        );
    }

    #[test]
    fn call_site_inside_the_function() {
        let sites = [0x1000, 0x2004, 0x3000];
        assert!(has_site(&sites, 0x1000, 0x10));
        assert!(has_site(&sites, 0x2000, 0x10), "after endbr64");
        assert!(!has_site(&sites, 0x2010, 0x10));
        assert!(!has_site(&sites, 0x4000, 0x10));
        assert!(!has_site(&sites, 0x2000, 0));
    }
}
