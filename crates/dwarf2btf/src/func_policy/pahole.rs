//! `--funcs pahole`: the functions pahole 1.24 encodes, made safe for fentry.
//!
//! pahole 1.24 keeps a DWARF subprogram when it is not a declaration, every
//! parameter has a name, and its name is exactly the name of an ELF STT_FUNC
//! symbol; of several such subprograms with one name the first wins. Each
//! kept one becomes FUNC_PROTO + FUNC with static linkage.
//!
//! "The first wins" is unsafe: the kernel attaches a FUNC to the
//! lowest-address symbol of its name (ksyms::kernel_lookup), and the first
//! definition in DWARF order is often another function of that name with
//! another prototype (`state_show`, `wakeup_show`). Here the FUNC of a name
//! is the first definition (in unit order, then DIE order: independent of
//! threads) whose code starts at the address the kernel picks for that name;
//! a name with no such definition (the code there has no DWARF, has an
//! unnamed parameter, or the name's lowest symbol is data) gets no FUNC.
//!
//! Nor does a definition clang marks DW_CC_nocall: clang keeps a function's
//! name when DeadArgumentElimination removes parameters or the return
//! value, and the source prototype pahole 1.24 writes would then let a
//! program read arguments from the wrong registers (on 7.2 built with clang
//! 21, 360 FUNCs that `check --attach` finds unsafe, `syscall_get_nr` among
//! them: two parameters in the source, one in the code).

use rustc_hash::{FxHashMap, FxHashSet};

use btf::encoder_hooks::add_own_str;
use btf::{Btf, Param, Type, TypeData, TypeId};
use gimli::{constants as dw, UnitOffset};
use ksyms::kernel_lookup::KernelLookup;

use super::{func_type, FuncPolicy, UnitContext, UnitRemap};
use crate::convert::UnitBuilder;
use crate::dies::{Attrs, DieReader, Fields};
use crate::error::{Error, Result};
use crate::load::ElfFile;

/// The `--funcs pahole` policy.
pub struct PaholeFuncs<'a> {
    /// Where the kernel attaches each name.
    lookup: KernelLookup<'a>,
}

/// The functions of one unit that may be encoded. Names and parameters of
/// all of them share two buffers: a few allocations per unit, not several
/// per function (they are freed on another thread than the one that made
/// them, where glibc makes each free expensive).
#[derive(Default)]
pub struct Candidates {
    /// Function and parameter names, back to back.
    text: String,
    funcs: Vec<Candidate>,
    /// Parameters of all functions: name (range of `text`), local type id.
    params: Vec<(Span, TypeId)>,
}

/// A range of `Candidates::text` or `Candidates::params`.
#[derive(Clone, Copy)]
struct Span {
    start: u32,
    end: u32,
}

/// A function of one unit that may be encoded.
struct Candidate {
    name: Span,
    /// Where its code starts (None: an abstract or inline-only definition).
    entry: Option<u64>,
    /// Local ids of the unit.
    ret: TypeId,
    params: Span,
    varargs: bool,
}

impl Candidates {
    fn push_str(&mut self, s: &str) -> Span {
        let start = self.text.len() as u32;
        self.text.push_str(s);
        Span {
            start,
            end: self.text.len() as u32,
        }
    }

    fn str(&self, s: Span) -> &str {
        self.text
            .get(s.start as usize..s.end as usize)
            .unwrap_or("")
    }

    fn params(&self, c: &Candidate) -> &[(Span, TypeId)] {
        self.params
            .get(c.params.start as usize..c.params.end as usize)
            .unwrap_or(&[])
    }
}

/// What a DIE says, looking through DW_AT_abstract_origin and
/// DW_AT_specification (concrete instances and out-of-line definitions
/// carry neither name nor type themselves).
struct Described<'d> {
    name: Option<&'d [u8]>,
    ty: Option<u32>,
    /// DW_CC_nocall on a DIE of the chain: clang changed the function's
    /// type (removed parameters or its return value).
    nocall: bool,
}

fn described<'d>(
    cx: &UnitContext<'_, 'd>,
    dies: &mut DieReader<'_, 'd>,
    attrs: &Attrs<'d>,
) -> gimli::Result<Described<'d>> {
    let is_nocall = |a: &Attrs<'d>| a.calling_convention() == Some(u64::from(dw::DW_CC_nocall.0));
    let mut d = Described {
        name: attrs.name().bytes(cx.dwarf, cx.unit),
        ty: attrs.ty(),
        nocall: is_nocall(attrs),
    };
    let mut next = attrs.abstract_origin().or(attrs.specification());
    for _ in 0..4 {
        let Some(at) = next.filter(|_| d.name.is_none() || d.ty.is_none()) else {
            break;
        };
        let Some(die) = dies.die_at(at)? else { break };
        d.name = d.name.or_else(|| die.attrs.name().bytes(cx.dwarf, cx.unit));
        d.ty = d.ty.or(die.attrs.ty());
        d.nocall |= is_nocall(&die.attrs);
        next = die.attrs.abstract_origin().or(die.attrs.specification());
    }
    Ok(d)
}

/// Where the code of the subprogram DIE at `offset` starts: DW_AT_entry_pc,
/// DW_AT_low_pc, or its first range.
fn entry_address(cx: &UnitContext<'_, '_>, offset: u64) -> gimli::Result<Option<u64>> {
    let Ok(offset) = usize::try_from(offset) else {
        return Ok(None);
    };
    let e = cx.unit.entry(UnitOffset(offset))?;
    for at in [gimli::DW_AT_entry_pc, gimli::DW_AT_low_pc] {
        if let Some(v) = e.attr_value(at)? {
            return cx.dwarf.attr_address(cx.unit, v);
        }
    }
    let mut ranges = cx.dwarf.die_ranges(cx.unit, &e)?;
    Ok(ranges.next()?.map(|r| r.begin))
}

impl<'a> PaholeFuncs<'a> {
    /// The policy for `elf`, with the kernel's lookup over every symbol of
    /// the file. Errors: the ELF headers do not parse, or are of an
    /// architecture without a description.
    pub fn from_elf(elf: &'a ElfFile) -> Result<PaholeFuncs<'a>> {
        let obj = elf.object()?;
        Ok(PaholeFuncs::new(super::exact::kernel_lookup(&obj)))
    }

    /// `lookup`: over every symbol of the ELF file.
    pub fn new(lookup: KernelLookup<'a>) -> PaholeFuncs<'a> {
        PaholeFuncs { lookup }
    }

    /// The unit's top-level function definitions whose name an ELF
    /// function symbol has, with their parameters. Only the unit's top
    /// level and the functions' direct children are read: every other
    /// subtree is skipped (through DW_AT_sibling when the producer gives it).
    fn candidates(&self, cx: &UnitContext<'_, '_>) -> gimli::Result<Candidates> {
        let mut out = Candidates::default();
        let mut dies = DieReader::new(cx.unit, Fields::FUNCS)?;
        let type_of =
            |t: Option<u32>| t.map_or(0, |t| cx.types.type_id(UnitOffset(t as usize)).unwrap_or(0));
        // The function being read (its parameters are the last ones of
        // `out.params`), and whether all its parameters are named.
        let mut current: Option<(Candidate, bool)> = None;
        let flush = |out: &mut Candidates, current: &mut Option<(Candidate, bool)>| {
            if let Some((mut c, named)) = current.take() {
                if named {
                    c.params.end = out.params.len() as u32;
                    out.funcs.push(c);
                } else {
                    out.params.truncate(c.params.start as usize);
                }
            }
        };
        while let Some(die) = dies.next()? {
            let (depth, tag, die_offset) = (die.depth, die.tag, die.offset);
            if depth <= 1 {
                flush(&mut out, &mut current);
            }
            match depth {
                0 => continue,
                1 if tag == dw::DW_TAG_subprogram && !die.attrs.declaration() => {
                    let attrs = die.attrs;
                    let Described {
                        name,
                        ty: ret,
                        nocall,
                    } = described(cx, &mut dies, &attrs)?;
                    let name = name.and_then(|n| std::str::from_utf8(n).ok());
                    match name.filter(|n| !nocall && cx.elf.func_names.contains(n)) {
                        Some(name) => {
                            let start = out.params.len() as u32;
                            let entry = entry_address(cx, die_offset)?;
                            let c = Candidate {
                                name: out.push_str(name),
                                entry,
                                ret: type_of(ret),
                                params: Span { start, end: start },
                                varargs: false,
                            };
                            current = Some((c, true));
                            continue;
                        }
                        None => dies.skip_children()?,
                    }
                }
                2 => {
                    if let Some((c, named)) = &mut current {
                        match tag {
                            dw::DW_TAG_formal_parameter => {
                                let attrs = die.attrs;
                                let param = described(cx, &mut dies, &attrs)?;
                                match param.name.and_then(|n| std::str::from_utf8(n).ok()) {
                                    Some(n) => {
                                        let n = out.push_str(n);
                                        out.params.push((n, type_of(param.ty)));
                                    }
                                    None => *named = false,
                                }
                            }
                            dw::DW_TAG_unspecified_parameters => c.varargs = true,
                            _ => {}
                        }
                    }
                    dies.skip_children()?;
                }
                _ => dies.skip_children()?,
            }
        }
        flush(&mut out, &mut current);
        Ok(out)
    }
}

impl FuncPolicy for PaholeFuncs<'_> {
    type Unit = Candidates;

    fn unit(&self, cx: &UnitContext<'_, '_>, _out: &mut UnitBuilder) -> Result<Candidates> {
        let offset = cx.types.unit_offset().0 as u64;
        self.candidates(cx).map_err(|e| Error::Dwarf {
            path: cx.path.to_owned(),
            offset,
            error: e,
        })
    }

    fn referenced(&self, unit: &Candidates, ids: &mut Vec<TypeId>) {
        ids.extend(unit.funcs.iter().map(|c| c.ret));
        ids.extend(unit.params.iter().map(|p| p.1));
    }

    fn finish(&self, units: Vec<(UnitRemap, Candidates)>, btf: &mut Btf) -> Result<()> {
        // Where each name's FUNC comes from: the first definition at the
        // address every kernel lookup of the name returns.
        let mut chosen: FxHashMap<&str, (usize, usize)> = FxHashMap::default();
        for (u, (_, cands)) in units.iter().enumerate() {
            for (f, c) in cands.funcs.iter().enumerate() {
                let name = cands.str(c.name);
                let picks = self.lookup.picks(name);
                let at_pick = c
                    .entry
                    .is_some_and(|e| !picks.is_none() && picks.addresses().all(|p| p == e));
                if at_pick {
                    chosen.entry(name).or_insert((u, f));
                }
            }
        }
        let mut done: FxHashSet<&str> = FxHashSet::default();
        for (u, (remap, cands)) in units.iter().enumerate() {
            for (f, c) in cands.funcs.iter().enumerate() {
                let name = cands.str(c.name);
                if chosen.get(name) != Some(&(u, f)) || !done.insert(name) {
                    continue;
                }
                let mut params: Vec<Param> = cands
                    .params(c)
                    .iter()
                    .map(|&(n, t)| Param {
                        name_off: add_own_str(btf, cands.str(n)),
                        ty: remap.type_id(t),
                    })
                    .collect();
                if c.varargs {
                    params.push(Param { name_off: 0, ty: 0 });
                }
                let proto = btf.add_type(Type::new(
                    0,
                    TypeData::FuncProto {
                        ret: remap.type_id(c.ret),
                        params: params.into(),
                    },
                ));
                let name_off = add_own_str(btf, name);
                btf.add_type(func_type(name_off, proto));
            }
        }
        Ok(())
    }
}
