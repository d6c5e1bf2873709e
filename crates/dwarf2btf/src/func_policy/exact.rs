//! `--funcs exact`: one BTF FUNC per distinct prototype of every function
//! instance the model can vouch for, tied to the instances' addresses with
//! DECL_TAG `addr=0x<hex>` (component_idx -1).
//!
//! Invariants:
//! - Only instances whose signature is `Source` or `True` get a FUNC: a
//!   FUNC never claims parameters the compiled code does not take.
//! - Safe and attachable (ksyms::kernel_lookup has the naming rule): a FUNC carries
//!   the exact symbol-table name of its instances only when it describes
//!   the instance the kernel attaches to for that name (the lowest address,
//!   under every lookup a kernel may use); every other instance gets a FUNC
//!   of its own named `<symbol>..<address>`, which no lookup resolves.
//!   So fentry by name reaches only the instance whose prototype the FUNC
//!   carries, and every instance keeps a FUNC with its true prototype.
//! - Instances whose prototypes are the same (same FUNC name, parameter
//!   names and types: C text, and where several symbols carry the name the
//!   model's structural fingerprint too) share one FUNC, decided in
//!   `finish` in unit order, so the output does not depend on threads. A
//!   name one symbol carries has one address, so the fingerprint, which
//!   tells apart same-name functions built against different headers, has
//!   nothing to tell apart there and is not computed. Prototypes that differ only past the fingerprint's
//!   depth would wrongly share; those that dedup would make equal but the
//!   fingerprint tells apart (a struct declared in one unit, defined in the
//!   other) get two FUNCs with their own tags: safe, a few bytes larger.
//! - Tags: `All` tags every FUNC with each of its addresses; `Ambiguous`
//!   every FUNC whose name does not pick out one symbol by itself (several
//!   addresses for the name, and every FUNC that is not the kernel's pick);
//!   `None` no FUNC.
//! - In a pre-link kernel image (ksyms::final_link) no tag and no FUNC name
//!   holds an address the final link moves: the kernel's pick there keeps
//!   its FUNC without that tag, every other instance there gets no FUNC
//!   (it is init or exit code: no fentry site, freed after boot).

use std::hash::{Hash, Hasher};

use btf::encoder_hooks::add_own_str;
use btf::{Btf, Param, Type, TypeData, TypeId};
use ksyms::final_link::FinalLink;
use ksyms::image_symbols::{elf_symbols, KernelSymbol};
use ksyms::kernel_lookup::KernelLookup;
use object::Object;
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};

use super::{func_type, FuncPolicy, UnitContext, UnitRemap};
use crate::convert::UnitBuilder;
use crate::error::{Error, Result};
use crate::funcs::abi::{analyse, may_drop_return, SigType, Signature, Verdict};
use crate::funcs::collect::{collect_from_unit, Concrete, Need};
use crate::funcs::entry_code::EntryCode;
use crate::funcs::names_match;
use crate::load::ElfFile;
use crate::options::AddrTags;

/// The `--funcs exact` policy. Symbol names are borrowed from the ELF.
pub struct ExactFuncs<'a> {
    tags: AddrTags,
    symbols: FuncSymbols<'a>,
    /// Where the kernel attaches each name.
    lookup: KernelLookup<'a>,
    /// Set for a pre-link kernel image: which addresses are not final.
    final_link: Option<FinalLink>,
    /// The machine code at entry addresses.
    code: EntryCode<'a>,
}

/// The STT_FUNC symbols, by address and by name.
struct FuncSymbols<'a> {
    /// Names sorted by address, in symbol-table order at one address.
    names: Vec<&'a str>,
    /// Entry address -> where its names are in `names` (start, end).
    by_addr: FxHashMap<u64, (u32, u32)>,
    /// Symbol name -> how many STT_FUNC symbols carry it.
    name_count: FxHashMap<&'a str, u32>,
    /// Entry addresses with a symbol whose name several symbols carry.
    shared: FxHashSet<u64>,
    /// Names one symbol alone carries, with its address.
    unique: FxHashMap<&'a [u8], u64>,
}

impl<'a> FuncSymbols<'a> {
    fn new(mut symbols: Vec<(u64, &'a str)>) -> FuncSymbols<'a> {
        // Stable: names at one address keep their table order.
        symbols.sort_by_key(|&(addr, _)| addr);
        let mut name_count: FxHashMap<&str, u32> =
            FxHashMap::with_capacity_and_hasher(symbols.len(), Default::default());
        for &(_, name) in &symbols {
            *name_count.entry(name).or_default() += 1;
        }
        let mut by_addr = FxHashMap::with_capacity_and_hasher(symbols.len(), Default::default());
        let mut shared = FxHashSet::default();
        let mut start = 0;
        for run in symbols.chunk_by(|a, b| a.0 == b.0) {
            let end = start + run.len() as u32;
            let addr = run.first().map_or(0, |&(a, _)| a);
            by_addr.insert(addr, (start, end));
            if run.iter().any(|&(_, n)| name_count.get(n) > Some(&1)) {
                shared.insert(addr);
            }
            start = end;
        }
        let unique = crate::funcs::unique_names(symbols.iter().map(|&(a, n)| (n, a)));
        FuncSymbols {
            names: symbols.into_iter().map(|(_, n)| n).collect(),
            by_addr,
            name_count,
            shared,
            unique,
        }
    }

    /// The names of the symbols at `addr`.
    fn at(&self, addr: u64) -> Option<&[&'a str]> {
        let &(start, end) = self.by_addr.get(&addr)?;
        self.names.get(start as usize..end as usize)
    }
}

/// One encodable instance of a unit, with its prototype in the unit's builder.
pub struct Candidate<'a> {
    name: &'a str,
    address: u64,
    proto: TypeId,
    key: u64,
    /// Another name of the code of a function that has a symbol of its
    /// own name there (GCC's identical-code folding, syscall aliases):
    /// dropped in `finish` when a DWARF function of that name starts there.
    alias: bool,
    /// Its prototype is that of a subprogram without code (collect.rs):
    /// kept in `finish` only where no subprogram has code and this is the
    /// one subprogram without code of its name.
    bodiless: bool,
}

/// What `finish` needs of one unit.
pub struct ExactUnit<'a> {
    cands: Vec<Candidate<'a>>,
    /// Entry addresses of the unit's subprograms with code (with a symbol).
    coded: Vec<u64>,
    /// Addresses of the unit's definitions without code, one per DIE.
    bodiless: Vec<u64>,
}

impl<'a> ExactFuncs<'a> {
    /// The policy for `elf`, from its symbols (where the kernel attaches
    /// each name, which names several symbols share), which code its final
    /// link moves, and its machine code at function entries; `tags` says
    /// which FUNCs get `addr=` tags. Errors: the ELF headers do not parse,
    /// or are of an architecture without a description.
    pub fn from_elf(elf: &'a ElfFile, tags: AddrTags) -> Result<ExactFuncs<'a>> {
        let obj = elf.object()?;
        let listed = elf_symbols(&obj);
        // Two sets of hash maps over 100,000s of names: side by side (the
        // encode waits for them).
        let (lookup, symbols) = rayon::join(
            || lookup_over(&obj, &listed),
            || {
                FuncSymbols::new(
                    listed
                        .iter()
                        .filter(|s| s.function && !s.name.is_empty())
                        .map(|s| (s.address, s.name))
                        .collect(),
                )
            },
        );
        Ok(ExactFuncs {
            tags,
            symbols,
            lookup,
            final_link: FinalLink::of(&obj),
            code: EntryCode::of(&obj),
        })
    }

    /// What `candidates` reads of the subprogram at `entry`: nothing
    /// without a symbol there. Fingerprints only decide which instances of
    /// one symbol name share a FUNC; a name that one symbol carries has one
    /// address, whose descriptions share a FUNC by their C prototype alone.
    fn need(&self, entry: u64) -> Need {
        if self.symbols.at(entry).is_none() {
            Need::Skip
        } else if self.symbols.shared.contains(&entry) {
            Need::Shapes
        } else {
            Need::Signature
        }
    }

    /// The candidates of one concrete subprogram: one per symbol at its entry.
    fn candidates(
        &self,
        c: &Concrete,
        cx: &UnitContext<'_, '_>,
        out: &mut UnitBuilder,
        u64_id: &mut Option<TypeId>,
        protos: &mut FxHashMap<u64, TypeId>,
        found: &mut Vec<Candidate<'a>>,
    ) {
        let Some(symbols) = self.symbols.at(c.entry) else {
            return;
        };
        if c.error.is_some() {
            return;
        }
        let src_name = c.name.as_deref().unwrap_or("");
        // A symbol of another name at this address is another name of this
        // code (syscall stubs, identical-code folding), unless a DWARF
        // function of that name starts here too (decided in `finish`).
        let own = symbols.iter().any(|s| names_match(c.name.as_deref(), s));
        for sym in symbols {
            // A subprogram without code describes the symbol of its name only.
            if c.bodiless && *sym != src_name {
                continue;
            }
            let alias = own && !names_match(c.name.as_deref(), sym);
            let suffix = sym
                .strip_prefix(src_name)
                .filter(|s| !src_name.is_empty() && s.starts_with('.'));
            let verdict = analyse(c, suffix, &|e| {
                self.symbols
                    .at(e)
                    .is_some_and(|names| !names.iter().any(|n| may_drop_return(n)))
            });
            // Named as the symbol table names it, whether or not the
            // compiler changed the ABI: that is the name kallsyms resolves.
            let name = match &verdict.signature {
                Signature::Source | Signature::True { .. } => *sym,
                Signature::Unwritable { .. } | Signature::None => continue,
            };
            let Some(ProtoKey { key, ret, params }) =
                prototype_key(c, cx, out, u64_id, name, &verdict)
            else {
                continue;
            };
            let proto = *protos.entry(key).or_insert_with(|| {
                let params = params
                    .iter()
                    .map(|(n, t)| Param {
                        name_off: out.add_str(n.as_bytes()),
                        ty: *t,
                    })
                    .collect();
                out.add_type(Type::new(0, TypeData::FuncProto { ret, params }))
            });
            found.push(Candidate {
                name,
                address: c.entry,
                proto,
                key,
                alias,
                bodiless: c.bodiless,
            });
        }
    }
}

/// The type id of the DIE at a global `.debug_info` offset (0: void).
fn die_id(cx: &UnitContext<'_, '_>, die: Option<u64>) -> Option<TypeId> {
    match die {
        None => Some(0),
        Some(d) => cx.types.type_id_global(gimli::DebugInfoOffset(d as usize)),
    }
}

/// A candidate's prototype, as [`prototype_key`] reads it.
struct ProtoKey {
    /// The hash that tells it apart.
    key: u64,
    ret: TypeId,
    /// Names and types, `("", 0)` last for `...`.
    params: Vec<(String, TypeId)>,
}

/// Key stage: the hash that tells a candidate's prototype apart, with its
/// return type and parameters (None when a type has no id).
fn prototype_key(
    c: &Concrete,
    cx: &UnitContext<'_, '_>,
    out: &mut UnitBuilder,
    u64_id: &mut Option<TypeId>,
    name: &str,
    verdict: &Verdict,
) -> Option<ProtoKey> {
    let ret_type = verdict.returns.of(c);
    let ret = die_id(cx, ret_type.and_then(|r| r.die))?;
    let mut key = FxHasher::default();
    // The C text always, the fingerprint where `need` asked for it.
    match ret_type {
        Some(r) => (name, &r.c, r.shape).hash(&mut key),
        None => (name, "void", 0u64).hash(&mut key),
    }
    let mut params: Vec<(String, TypeId)> = Vec::new();
    match &verdict.signature {
        Signature::Source => {
            for p in &c.params {
                let t = die_id(cx, p.ty.die)?;
                (p.name.as_str(), &p.ty.c, p.ty.shape).hash(&mut key);
                params.push((p.name.clone(), t));
            }
            if c.varargs {
                "...".hash(&mut key);
                params.push((String::new(), 0));
            }
        }
        Signature::True { params: sig } => {
            for p in sig {
                let t = match p.ty {
                    SigType::Die(d) => die_id(cx, d),
                    SigType::U64 => Some(*u64_id.get_or_insert_with(|| {
                        let n = out.add_str(b"long unsigned int");
                        out.add_type(Type::new(
                            n,
                            TypeData::Int {
                                size: 8,
                                encoding: 0,
                                offset: 0,
                                bits: 64,
                            },
                        ))
                    })),
                }?;
                (p.name.as_str(), &p.c, &p.ty).hash(&mut key);
                params.push((p.name.clone(), t));
            }
        }
        Signature::Unwritable { .. } | Signature::None => return None,
    }
    Some(ProtoKey {
        key: key.finish(),
        ret,
        params,
    })
}

/// One FUNC to write: its name and prototype (global id).
struct Group<'a> {
    name: &'a str,
    proto: TypeId,
}

impl<'a> FuncPolicy for ExactFuncs<'a> {
    type Unit = ExactUnit<'a>;

    const SUBPROGRAMS: bool = true;

    fn unit(&self, cx: &UnitContext<'_, '_>, out: &mut UnitBuilder) -> Result<ExactUnit<'a>> {
        let offset = cx.types.unit_offset().0 as u64;
        let unique = &self.symbols.unique;
        let concretes = collect_from_unit(
            cx.dwarf,
            cx.unit,
            cx.subprograms,
            &cx.types.partial_units,
            &|entry| self.need(entry),
            &|name| unique.get(name).copied(),
            &self.code,
        )
        .map_err(|source| Error::Dwarf {
            path: cx.path.to_owned(),
            offset,
            error: source,
        })?;
        let mut unit = ExactUnit {
            cands: Vec::new(),
            coded: Vec::new(),
            bodiless: Vec::new(),
        };
        let mut u64_id = None;
        let mut protos = FxHashMap::default();
        for c in &concretes {
            if c.bodiless {
                unit.bodiless.push(c.entry);
            } else {
                unit.coded.push(c.entry);
            }
            self.candidates(c, cx, out, &mut u64_id, &mut protos, &mut unit.cands);
        }
        Ok(unit)
    }

    fn finish(&self, units: Vec<(UnitRemap, ExactUnit)>, btf: &mut Btf) -> Result<()> {
        // (name, address) that a DWARF function of that name describes.
        let described: rustc_hash::FxHashSet<(&str, u64)> = units
            .iter()
            .flat_map(|(_, u)| u.cands.iter())
            .filter(|c| !c.alias && !c.bodiless)
            .map(|c| (c.name, c.address))
            .collect();
        // A prototype without code stands only where no subprogram with
        // code starts and every definition without code of the name gives
        // this same prototype (a weak default and the override the
        // compiler folded away: whichever is at the symbol, the prototype
        // is this one).
        let coded: FxHashSet<u64> = units
            .iter()
            .flat_map(|(_, u)| u.coded.iter().copied())
            .collect();
        let mut bodiless: FxHashMap<u64, u32> = FxHashMap::default();
        for a in units.iter().flat_map(|(_, u)| u.bodiless.iter()) {
            *bodiless.entry(*a).or_default() += 1;
        }
        // Address -> (the key of its candidates without code, how many),
        // or None when their keys differ.
        let mut bodiless_keys: FxHashMap<u64, Option<(u64, u32)>> = FxHashMap::default();
        for c in units.iter().flat_map(|(_, u)| u.cands.iter()) {
            if c.bodiless {
                let e = bodiless_keys.entry(c.address).or_insert(Some((c.key, 0)));
                *e = e.filter(|(k, _)| *k == c.key).map(|(k, n)| (k, n + 1));
            }
        }
        let stands = |c: &Candidate| {
            !c.bodiless
                || (!coded.contains(&c.address)
                    && matches!(
                        (bodiless_keys.get(&c.address), bodiless.get(&c.address)),
                        (Some(Some((_, n))), Some(dies)) if n == dies
                    ))
        };
        let mut groups: Vec<Group> = Vec::new();
        // (group, address) of every instance, in one list rather than a
        // vector per group; sorted, each group's addresses are a run.
        let mut addrs: Vec<(u32, u64)> = Vec::new();
        let mut index: FxHashMap<u64, u32> = FxHashMap::default();
        for (remap, u) in &units {
            for c in &u.cands {
                if (c.alias && described.contains(&(c.name, c.address))) || !stands(c) {
                    continue;
                }
                let g = *index.entry(c.key).or_insert_with(|| {
                    groups.push(Group {
                        name: c.name,
                        proto: remap.type_id(c.proto),
                    });
                    groups.len() as u32 - 1
                });
                addrs.push((g, c.address));
            }
        }
        addrs.sort_unstable();
        addrs.dedup();
        // Every group has an address: run i is group i's.
        let runs: Vec<&[(u32, u64)]> = addrs.chunk_by(|a, b| a.0 == b.0).collect();
        let has = |run: &[(u32, u64)], addr: u64| run.iter().any(|&(_, a)| a == addr);
        let moves = |a: u64| self.final_link.is_some_and(|f| f.moves(a));
        // Which group keeps its name: the one holding every address some
        // kernel attaches that name to. The others go by address.
        let mut named: FxHashMap<&str, usize> = FxHashMap::default();
        for (i, (g, run)) in groups.iter().zip(&runs).enumerate() {
            let picks = self.lookup.picks(g.name);
            if !picks.is_none() && picks.addresses().all(|p| has(run, p)) {
                named.entry(g.name).or_insert(i);
            }
        }
        let mut group_addrs = Vec::new();
        for (i, (g, run)) in groups.iter().zip(&runs).enumerate() {
            group_addrs.clear();
            group_addrs.extend(run.iter().map(|&(_, a)| a));
            if named.get(g.name) == Some(&i) {
                let unique = self.symbols.name_count.get(g.name) == Some(&1)
                    && match group_addrs.as_slice() {
                        [a] => self.symbols.at(*a).is_some_and(|s| s.contains(&g.name)),
                        _ => false,
                    };
                let tag = match self.tags {
                    AddrTags::All => true,
                    AddrTags::Ambiguous => !unique,
                    AddrTags::None => false,
                };
                group_addrs.retain(|&a| !moves(a));
                add_func(btf, g.name, g.proto, if tag { &group_addrs } else { &[] });
            } else {
                let tag = !matches!(self.tags, AddrTags::None);
                for &a in group_addrs.iter().filter(|&&a| !moves(a)) {
                    let name = self.lookup.unreachable_name(g.name, a);
                    let tags = [a];
                    add_func(btf, &name, g.proto, if tag { &tags } else { &[] });
                }
            }
        }
        Ok(())
    }
}

/// A FUNC with its addr tags.
fn add_func(btf: &mut Btf, name: &str, proto: TypeId, addrs: &[u64]) {
    let name = add_own_str(btf, name);
    let func = btf.add_type(func_type(name, proto));
    for &a in addrs {
        let t = add_own_str(
            btf,
            btf::addr_tag::format(a, &mut [0; btf::addr_tag::MAX_LEN]),
        );
        btf.add_type(Type::new(
            t,
            TypeData::DeclTag {
                ty: func,
                component_idx: -1,
            },
        ));
    }
}

/// The kernel's name lookup over every symbol of an ELF file that
/// kallsyms would list.
pub fn kernel_lookup<'a>(obj: &object::File<'a>) -> KernelLookup<'a> {
    lookup_over(obj, &elf_symbols(obj))
}

/// [`kernel_lookup`] over the symbols `elf_symbols` read from `obj`.
fn lookup_over<'a>(obj: &object::File<'a>, listed: &[KernelSymbol<'a>]) -> KernelLookup<'a> {
    let relocatable = obj.kind() == object::ObjectKind::Relocatable;
    KernelLookup::new(listed.iter().map(|s| (s.name, s.address)), relocatable)
}
