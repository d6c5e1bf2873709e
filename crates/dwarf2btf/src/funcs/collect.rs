//! The DWARF half of the function model: every concrete subprogram of one
//! compilation unit, resolved through DW_AT_abstract_origin and
//! DW_AT_specification to its source prototype, with each source parameter's
//! location at the instance's entry address.
//!
//! Invariant: one `Concrete` per DW_TAG_subprogram that has code (low_pc or
//! ranges) among the unit's top-level DIEs; its `params` follow the source
//! prototype's order, and a source parameter the instance does not mention
//! is `EntryLoc::Absent`. Besides, one `Concrete` marked `bodiless` per
//! top-level definition without code (no DW_AT_declaration) whose name one
//! function symbol alone carries, placed at that symbol's address: GCC
//! leaves the code of some functions undescribed (a body reduced to a tail
//! jump, identical code folded), and such a DIE is all DWARF says about that
//! code. Declarations name no parameters and are left out.
//!
//! In a relocatable object addresses are keyed by section
//! (ksyms::module_sections). A subprogram whose code address no relocation
//! ties to a section is collected whatever the caller needs, with an
//! `error` saying so, and no definition without code of its name is placed:
//! no symbol gets a prototype from code whose section is unknown.

use std::cell::RefCell;

use gimli::UnitOffset;
use ksyms::module_sections::is_untied;
use rustc_hash::FxHashMap;

use super::call_return;
use super::ctype::{ArgClass, MemberInfo, TypeInfo, TypeNamer};
use super::entry_code::EntryCode;
use super::location::{entry_location, EntryLoc};
use crate::dies::{Address, DieReader, Fields, Str, UNFOLLOWED};
use crate::load::{Dwarf, Reader};
use crate::partial_units::{Imports, Known, UnitTables};
use crate::subprograms::{RawParam, RawSub, Subprograms};

/// Chains of abstract origins longer than this are treated as corrupt.
const MAX_CHAIN: usize = 8;

/// Why a subprogram of a relocatable object whose code address no
/// relocation ties to a section is left out (ksyms::module_sections).
pub const UNTIED_REASON: &str = "its code address is tied to no section (the linker voided its relocation, or it names an undefined symbol): the code it describes is not known, so no symbol gets its prototype";

/// What a caller needs of a concrete subprogram, decided by its entry
/// address before anything else of it is read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Nothing: it gets no `Concrete`.
    Skip,
    /// The prototype and locations, with `TypeInfo::shape` left 0.
    Signature,
    /// Everything, structural fingerprints included (they walk the
    /// members of every aggregate a parameter points to, two levels deep:
    /// the larger part of the work when every instance asks for them).
    Shapes,
}

/// One source parameter as one instance sees it.
#[derive(Clone, Debug)]
pub struct SrcParam {
    /// Its name in the source prototype ("" when unnamed).
    pub name: String,
    /// Its type.
    pub ty: TypeInfo,
    /// Where the instance has its value at the entry address.
    pub loc: EntryLoc,
    /// Members of a 9-16 byte aggregate, for naming its register halves.
    pub members: Vec<MemberInfo>,
}

/// A subprogram with code, resolved to its source.
#[derive(Clone, Debug)]
pub struct Concrete {
    /// `.debug_info` offset of the concrete DIE.
    pub die: u64,
    /// `.debug_info` offset of the DIE the prototype comes from.
    pub source_die: u64,
    /// `.debug_info` offset of the compilation unit's header.
    pub unit: u64,
    /// The compilation unit's DW_AT_name (its source file).
    pub cu_name: String,
    /// The entry address (DW_AT_entry_pc, else DW_AT_low_pc, else the start
    /// of the first range): link-time, or keyed by section in a
    /// relocatable object.
    pub entry: u64,
    /// Every address range, in DWARF order (the entry range first for GCC).
    pub ranges: Vec<(u64, u64)>,
    /// The source name, from the first DIE of the origin and specification
    /// chain that has one.
    pub name: Option<String>,
    /// The source file it is declared in, relative to the unit's build
    /// directory when inside it ("kernel/irq/irqdesc.c").
    pub decl_file: Option<String>,
    /// The line it is declared at (0: unknown).
    pub decl_line: u64,
    /// DW_AT_external anywhere in the chain: not `static`.
    pub external: bool,
    /// DW_CC_nocall on the instance or its origin (clang's changed-ABI mark).
    pub nocall: bool,
    /// The source return type (void: [`TypeInfo::die`] is None).
    pub ret: TypeInfo,
    /// The source parameters, in prototype order.
    pub params: Vec<SrcParam>,
    /// The source prototype ends in `...`.
    pub varargs: bool,
    /// A DIE in the chain could not be read: the message names its offset.
    pub error: Option<String>,
    /// No code of its own in DWARF: `entry` is the address of the one
    /// symbol of its name (see the module's invariant).
    pub bodiless: bool,
    /// Its code address is tied to no section of the relocatable object
    /// (ksyms::module_sections): `error` says so.
    pub untied: bool,
    /// Entries of the unit's functions that tail-call it and whose source
    /// returns a value, not DW_CC_nocall (abi.rs's `removed_return`).
    pub tail_callers: Vec<u64>,
    /// A call of the unit's reads its return value (call_return.rs).
    pub value_read: bool,
}

/// For a top-level subprogram without code named `name`: the address of
/// the one function symbol of that name, if exactly one has it.
pub type Orphan<'f> = &'f (dyn Fn(&[u8]) -> Option<u64> + Sync);

struct UnitCtx<'a, 'u> {
    dwarf: &'a Dwarf<'u>,
    unit: &'a gimli::Unit<Reader<'u>>,
    subs: &'a Subprograms<'u>,
    code: &'a EntryCode<'a>,
    base: u64,
    /// The units read with the unit (`partial` names them, in order).
    partial: &'a Known,
    partial_units: &'a [gimli::Unit<Reader<'u>>],
    /// File names by (index in `partial_units`, or `usize::MAX` for the
    /// unit; index in its line program).
    files: FxHashMap<(usize, u64), Option<String>>,
}

/// Collects every concrete subprogram of one unit, in one pass over its
/// DIEs and those of the units it refers to (for callers that do not
/// convert its types). `tables`: shared by the units of one input.
pub fn collect_unit(
    dwarf: &Dwarf<'_>,
    header: gimli::UnitHeader<Reader<'_>>,
    tables: &UnitTables,
    orphan: Orphan<'_>,
    code: &EntryCode<'_>,
) -> gimli::Result<Vec<Concrete>> {
    let unit = dwarf.unit(header)?;
    let mut subs = Subprograms::default();
    let unit_offset = unit
        .header
        .offset()
        .as_debug_info_offset()
        .map_or(0, |o| o.0 as u64);
    let imports = RefCell::new(Imports::new(
        dwarf,
        tables,
        unit_offset,
        unit.header.length_including_self() as u64,
    ));
    let mut dies = DieReader::new(&unit, Fields::SUBPROGRAMS)?.with_imports(&imports, 0, false);
    while let Some(die) = dies.next()? {
        subs.die(die);
    }
    drop(dies);
    // The units it refers to, and those they refer to in turn.
    let mut read = 0;
    loop {
        // Not borrowed while the unit is read: its references add spans.
        let Some(span) = imports.borrow().spans.get(read).copied() else {
            break;
        };
        read += 1;
        let other = span.open(dwarf)?;
        let mut dies = DieReader::new(&other, Fields::SUBPROGRAMS)?
            .with_imports(&imports, span.base, span.alt);
        while let Some(die) = dies.next()? {
            if die.depth == 0 {
                continue;
            }
            if span.compile {
                subs.imported_die(die);
            } else {
                subs.die(die);
            }
        }
    }
    let known = imports.borrow().known();
    collect_from_unit(dwarf, &unit, &subs, &known, &|_| Need::Shapes, orphan, code)
}

/// Like [`collect_unit`], from the subprograms the converter's pass
/// recorded (the encoder's), and only what `need` asks for each entry
/// address. `code`: the input's machine code, where parameters' locations
/// start after an entry prefix (entry_code.rs).
pub fn collect_from_unit<'u>(
    dwarf: &Dwarf<'u>,
    unit: &gimli::Unit<Reader<'u>>,
    subs: &Subprograms<'u>,
    partial: &Known,
    need: &dyn Fn(u64) -> Need,
    orphan: Orphan<'_>,
    code: &EntryCode<'_>,
) -> gimli::Result<Vec<Concrete>> {
    let base = unit
        .header
        .offset()
        .as_debug_info_offset()
        .map_or(0, |o| o.0 as u64);
    let cu_name = str_of(dwarf, unit, subs.cu_name()).unwrap_or_default();
    // Addresses come from gimli, which knows every address and range form:
    // one DIE's attributes each, for the few DIEs with code.
    let mut found = Vec::new();
    for sub in subs.concrete() {
        let e = unit.entry(UnitOffset(sub.offset as usize))?;
        let mut ranges = Vec::new();
        let mut rl = dwarf.die_ranges(unit, &e)?;
        while let Some(r) = rl.next()? {
            if r.begin < r.end {
                ranges.push((r.begin, r.end));
            }
        }
        let entry = match e.attr_value(gimli::DW_AT_entry_pc)? {
            Some(v) => dwarf.attr_address(unit, v)?,
            None => match e.attr_value(gimli::DW_AT_low_pc)? {
                Some(v) => dwarf.attr_address(unit, v)?,
                None => None,
            },
        }
        .or(ranges.first().map(|r| r.0));
        let Some(entry) = entry else { continue };
        // Read whatever the caller needs: it is left out with its reason.
        let untied = code.relocatable && is_untied(entry);
        let need = if untied { Need::Signature } else { need(entry) };
        if need != Need::Skip {
            found.push((sub, entry, ranges, need == Need::Shapes, false, untied));
        }
    }
    for sub in subs.bodiless() {
        let Some(entry) = sub.name.bytes(dwarf, unit).and_then(orphan) else {
            continue;
        };
        let need = need(entry);
        if need != Need::Skip {
            found.push((sub, entry, Vec::new(), need == Need::Shapes, true, false));
        }
    }

    let partial_units = partial
        .0
        .iter()
        .map(|s| s.open(dwarf))
        .collect::<gimli::Result<Vec<_>>>()?;
    let mut ctx = UnitCtx {
        dwarf,
        unit,
        subs,
        code,
        base,
        partial,
        partial_units: &partial_units,
        files: FxHashMap::default(),
    };
    let mut namer = TypeNamer::new(dwarf, unit, partial, &partial_units)?;
    let mut out = Vec::with_capacity(found.len());
    for (sub, entry, ranges, shapes, bodiless, untied) in found {
        let mut c = ctx.resolve(&mut namer, sub, entry, ranges, &cu_name);
        c.bodiless = bodiless;
        c.untied = untied;
        if untied && c.error.is_none() {
            c.error = Some(format!("DIE {:#x}: {UNTIED_REASON}", c.die));
        }
        if shapes {
            c.ret.shape = namer.shape_of(c.ret.die);
            for p in &mut c.params {
                p.ty.shape = namer.shape_of(p.ty.die);
            }
        }
        out.push(c);
    }
    calls_to_values(&ctx, &mut out);
    // The code of a definition without code of the name of an untied
    // subprogram is that subprogram's, whose section is unknown: it gives
    // no symbol its prototype.
    let untied: Vec<String> = out
        .iter()
        .filter(|c| c.untied)
        .filter_map(|c| c.name.clone())
        .collect();
    if !untied.is_empty() {
        out.retain(|c| !(c.bodiless && c.name.as_ref().is_some_and(|n| untied.contains(n))));
    }
    Ok(out)
}

/// Records what the unit's calls say of their callees' return values
/// (abi.rs's `removed_return`): the callers that return a value by jumping
/// to a callee, and whether the code after a call reads its value.
fn calls_to_values(ctx: &UnitCtx<'_, '_>, out: &mut [Concrete]) {
    let calls = ctx.subs.calls();
    if calls.is_empty() {
        return;
    }
    let by_die: FxHashMap<u64, usize> = out
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.bodiless && c.ret.die.is_some())
        .map(|(i, c)| (c.die, i))
        .collect();
    for call in calls {
        let Some(&to) = by_die.get(&ctx.global(call.callee)) else {
            continue;
        };
        if call.tail {
            let caller = by_die
                .get(&ctx.global(call.caller))
                .and_then(|&i| out.get(i))
                .filter(|c| c.error.is_none() && !c.nocall && c.die != out[to].die);
            if let Some(entry) = caller.map(|c| c.entry) {
                out[to].tail_callers.push(entry);
            }
        } else if !out[to].value_read {
            let return_pc = match call.return_pc {
                Some(Address::At(a)) => Some(a),
                Some(Address::Index(i)) => usize::try_from(i)
                    .ok()
                    .and_then(|i| ctx.dwarf.address(ctx.unit, gimli::DebugAddrIndex(i)).ok()),
                None => None,
            };
            out[to].value_read = return_pc
                .is_some_and(|pc| call_return::reads_return_value(ctx.code, pc, out[to].entry));
        }
    }
}

/// A string attribute's text.
fn str_of<'u>(dwarf: &Dwarf<'u>, unit: &gimli::Unit<Reader<'u>>, s: Str<'u>) -> Option<String> {
    s.bytes(dwarf, unit)
        .map(|b| String::from_utf8_lossy(b).into_owned())
}

impl<'a, 'u> UnitCtx<'a, 'u> {
    /// The .debug_info offset of the DIE keyed `off` (for messages: a DIE
    /// of a unit read with this one has its own unit's offset).
    fn global(&self, off: u32) -> u64 {
        self.partial.offset_of(self.base, off).1
    }

    /// The unit that holds the DIE keyed `off` ([`UnitCtx::files`]' index).
    fn unit_of(&self, off: u32) -> (usize, &'a gimli::Unit<Reader<'u>>) {
        match self.partial.find(off) {
            Some((i, _)) => match self.partial_units.get(i) {
                Some(u) => (i, u),
                None => (usize::MAX, self.unit),
            },
            None => (usize::MAX, self.unit),
        }
    }

    /// The name of file `index` of the line program of the unit that holds
    /// the DIE keyed `die`.
    fn file_name(&mut self, die: u32, index: u64) -> Option<String> {
        let (i, unit) = self.unit_of(die);
        if let Some(f) = self.files.get(&(i, index)) {
            return f.clone();
        }
        let name = self.lookup_file(unit, index);
        self.files.insert((i, index), name.clone());
        name
    }

    fn lookup_file(&self, unit: &gimli::Unit<Reader<'u>>, index: u64) -> Option<String> {
        let header = unit.line_program.as_ref()?.header();
        let file = header.file(index)?;
        let name = self.dwarf.attr_string(unit, file.path_name()).ok()?;
        let mut path = String::from_utf8_lossy(name.slice()).into_owned();
        if !path.starts_with('/') {
            if let Some(dir) = file.directory(header) {
                if let Ok(d) = self.dwarf.attr_string(unit, dir) {
                    let d = String::from_utf8_lossy(d.slice());
                    if !d.is_empty() {
                        path = format!("{d}/{path}");
                    }
                }
            }
        }
        // Show paths relative to the build directory, as the kernel tree names them.
        let comp_dir = unit
            .comp_dir
            .map(|d| String::from_utf8_lossy(d.slice()).into_owned());
        if let Some(cd) = &comp_dir {
            if let Some(rest) = path
                .strip_prefix(cd.as_str())
                .and_then(|r| r.strip_prefix('/'))
            {
                path = rest.to_owned();
            }
        }
        Some(path)
    }

    /// Resolves one concrete subprogram: its entry locations, then the
    /// source prototype its origin chain leads to.
    fn resolve(
        &mut self,
        namer: &mut TypeNamer<'_, 'u>,
        concrete: &RawSub<'u>,
        entry: u64,
        ranges: Vec<(u64, u64)>,
        cu_name: &str,
    ) -> Concrete {
        let off = concrete.offset;
        let mut c = Concrete {
            die: self.global(off),
            source_die: self.global(off),
            unit: self.base,
            cu_name: cu_name.to_owned(),
            entry,
            ranges,
            name: None,
            decl_file: None,
            decl_line: 0,
            external: false,
            nocall: false,
            ret: namer.info(None),
            params: Vec::new(),
            varargs: false,
            error: None,
            bodiless: false,
            untied: false,
            tail_callers: Vec::new(),
            value_read: false,
        };
        let concrete_locs = match self.concrete_locations(concrete, entry, c.die) {
            Ok(l) => l,
            Err(e) => {
                c.error = Some(e);
                return c;
            }
        };
        if let Err(e) = self.prototype(namer, concrete, concrete_locs, &mut c) {
            c.error = Some(e);
        }
        c
    }

    /// Locations stage: where each of the instance's parameters is at its
    /// entry, in the instance's order.
    fn concrete_locations(
        &self,
        concrete: &RawSub<'u>,
        entry: u64,
        die: u64,
    ) -> Result<Vec<EntryLoc>, String> {
        let own_code = self.code.own_code(entry);
        let mut concrete_locs = Vec::with_capacity(concrete.params.len());
        for p in &concrete.params {
            let loc = entry_location(
                self.dwarf,
                self.unit,
                p.has_const,
                p.location,
                entry,
                own_code,
            );
            match loc {
                Ok(l) => concrete_locs.push(l),
                Err(e) => return Err(format!("DIE {die:#x}: {e}")),
            }
        }
        Ok(concrete_locs)
    }

    /// Prototype stage: the origin chain's source DIE and its declaration
    /// give `c` its name, coordinates, return type and parameters.
    fn prototype(
        &mut self,
        namer: &mut TypeNamer<'_, 'u>,
        concrete: &RawSub<'u>,
        concrete_locs: Vec<EntryLoc>,
        c: &mut Concrete,
    ) -> Result<(), String> {
        let (chain, source_off) = self.origin_chain(concrete, c.die)?;
        let Some(&source) = chain.last() else {
            return Ok(());
        };
        if source.specification == Some(UNFOLLOWED) {
            return Err(format!(
                "DIE {:#x}: its specification is in a unit that could not be read with it",
                c.die
            ));
        }
        let subs = self.subs;
        let spec = source.specification.and_then(|s| subs.get(s));
        c.source_die = self.global(source_off);
        self.source_attributes(namer, &chain, spec, c);

        // The source parameters: the source DIE's own, or its declaration's
        // when the definition lists none (unnamed prototype parameters).
        let (src_params, varargs) = match spec {
            Some(s) if source.params.is_empty() && !s.params.is_empty() => (&s.params, s.varargs),
            _ => (&source.params, source.varargs),
        };
        c.varargs = varargs;
        let locs = source_locations(
            &concrete.params,
            concrete_locs,
            src_params,
            &chain,
            source_off == concrete.offset,
        );
        self.source_params(namer, src_params, locs, &mut c.params);
        Ok(())
    }

    /// Origin stage: the chain of abstract origins from the instance to its
    /// source DIE, and the source DIE's offset.
    fn origin_chain<'c>(
        &self,
        concrete: &'c RawSub<'u>,
        die: u64,
    ) -> Result<(Vec<&'c RawSub<'u>>, u32), String>
    where
        'a: 'c,
    {
        let subs: &'a Subprograms<'u> = self.subs;
        let mut chain = vec![concrete];
        let mut source_off = concrete.offset;
        while let Some(o) = chain.last().and_then(|r| r.origin) {
            if chain.len() > MAX_CHAIN {
                return Err(format!("DIE {die:#x}: abstract origin chain too long"));
            }
            match subs.get(o) {
                Some(r) => {
                    source_off = o;
                    chain.push(r);
                }
                None if o == UNFOLLOWED => {
                    return Err(format!(
                        "DIE {die:#x}: its abstract origin is in a unit that could not be read with it"
                    ));
                }
                None => {
                    return Err(format!(
                        "DIE {die:#x}: abstract origin {:#x} unreadable",
                        self.global(o)
                    ));
                }
            }
        }
        Ok((chain, source_off))
    }

    /// Attributes stage: the first name, declaration coordinates and return
    /// type along the chain and its specification, and its calling convention.
    fn source_attributes(
        &mut self,
        namer: &mut TypeNamer<'_, 'u>,
        chain: &[&RawSub<'u>],
        spec: Option<&RawSub<'u>>,
        c: &mut Concrete,
    ) {
        let with_spec = || chain.iter().copied().chain(spec);
        c.name = with_spec().find_map(|r| str_of(self.dwarf, self.unit, r.name));
        c.decl_line = with_spec().find_map(|r| r.decl_line).unwrap_or(0);
        c.decl_file = with_spec()
            .find_map(|r| Some((r.offset, r.decl_file?)))
            .and_then(|(die, f)| self.file_name(die, f));
        c.external = with_spec().any(|r| r.external);
        c.nocall = chain.iter().any(|r| r.nocall);
        let ret = with_spec().find_map(|r| r.ret);
        c.ret = namer.info(ret);
    }

    /// Parameters stage: each source parameter's name, type and members,
    /// with the location the instance gives it.
    fn source_params(
        &self,
        namer: &mut TypeNamer<'_, 'u>,
        src_params: &[RawParam<'u>],
        locs: Vec<EntryLoc>,
        out: &mut Vec<SrcParam>,
    ) {
        for (p, loc) in src_params.iter().zip(locs) {
            let ty = namer.info(p.ty);
            let members = match (ty.class, ty.aggregate, p.ty) {
                (ArgClass::Int2, true, Some(t)) => namer.members(t),
                _ => Vec::new(),
            };
            out.push(SrcParam {
                name: str_of(self.dwarf, self.unit, p.name).unwrap_or_default(),
                ty,
                loc,
                members,
            });
        }
    }
}

/// Matching stage: the instance's locations placed on the source
/// parameters they stand for, through intermediate origins when the
/// instance is not the source (concrete -> abstract -> ...).
fn source_locations(
    concrete_params: &[RawParam<'_>],
    concrete_locs: Vec<EntryLoc>,
    src_params: &[RawParam<'_>],
    chain: &[&RawSub<'_>],
    concrete_is_source: bool,
) -> Vec<EntryLoc> {
    let index: FxHashMap<u32, usize> = src_params
        .iter()
        .enumerate()
        .map(|(i, p)| (p.offset, i))
        .collect();
    let mut locs = vec![EntryLoc::Absent; src_params.len()];
    for (pos, (p, loc)) in concrete_params.iter().zip(concrete_locs).enumerate() {
        let i = if concrete_is_source {
            Some(pos)
        } else {
            // Through intermediate origins (concrete -> abstract -> ...).
            let mut o = p.origin;
            let mut hit = None;
            for _ in 0..MAX_CHAIN {
                let Some(cur) = o else { break };
                if let Some(&i) = index.get(&cur) {
                    hit = Some(i);
                    break;
                }
                o = chain
                    .iter()
                    .flat_map(|r| r.params.iter())
                    .find(|q| q.offset == cur)
                    .and_then(|q| q.origin);
            }
            hit
        };
        if let Some(slot) = i.and_then(|i| locs.get_mut(i)) {
            *slot = loc;
        }
    }
    locs
}
