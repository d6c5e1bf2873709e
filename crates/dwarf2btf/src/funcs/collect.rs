//! The DWARF half of the function model: every concrete subprogram of one
//! compilation unit, resolved through DW_AT_abstract_origin and
//! DW_AT_specification to its source prototype, with each source parameter's
//! location at the instance's entry address.
//!
//! Invariant: one `Concrete` per DW_TAG_subprogram that has code (low_pc or
//! ranges) among the unit's top-level DIEs; its `params` follow the source
//! prototype's order, and a source parameter the instance does not mention
//! is `EntryLoc::Absent`.

use gimli::{AttributeValue, UnitOffset};
use rustc_hash::FxHashMap;

use super::ctype::{attr_str, type_ref, ArgClass, MemberInfo, TypeInfo, TypeNamer};
use super::location::{entry_location, EntryLoc};
use crate::load::{Dwarf, Reader};

/// Chains of abstract origins longer than this are treated as corrupt.
const MAX_CHAIN: usize = 8;

/// One source parameter as one instance sees it.
#[derive(Clone, Debug)]
pub struct SrcParam {
    pub name: String,
    pub ty: TypeInfo,
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
    pub unit: u64,
    pub cu_name: String,
    pub entry: u64,
    /// Every address range, in DWARF order (the entry range first for GCC).
    pub ranges: Vec<(u64, u64)>,
    pub name: Option<String>,
    pub decl_file: Option<String>,
    pub decl_line: u64,
    pub external: bool,
    /// DW_CC_nocall on the instance or its origin (clang's changed-ABI mark).
    pub nocall: bool,
    pub ret: TypeInfo,
    pub params: Vec<SrcParam>,
    pub varargs: bool,
    /// A DIE in the chain could not be read: the message names its offset.
    pub error: Option<String>,
}

/// What one subprogram DIE says about itself.
#[derive(Clone, Debug, Default)]
struct RawSub {
    name: Option<String>,
    decl_file: Option<u64>,
    decl_line: Option<u64>,
    ret: Option<UnitOffset>,
    origin: Option<UnitOffset>,
    specification: Option<UnitOffset>,
    external: bool,
    nocall: bool,
    params: Vec<RawParam>,
    varargs: bool,
}

#[derive(Clone, Debug)]
struct RawParam {
    off: UnitOffset,
    origin: Option<UnitOffset>,
    name: Option<String>,
    ty: Option<UnitOffset>,
    loc: EntryLoc,
}

struct UnitCtx<'a, 'u> {
    dwarf: &'a Dwarf<'u>,
    unit: &'a gimli::Unit<Reader<'u>>,
    base: u64,
    comp_dir: Option<String>,
    files: FxHashMap<u64, Option<String>>,
    raw: FxHashMap<UnitOffset, Option<RawSub>>,
}

/// Collects every concrete subprogram of one unit.
pub fn collect_unit(
    dwarf: &Dwarf<'_>,
    header: gimli::UnitHeader<Reader<'_>>,
) -> gimli::Result<Vec<Concrete>> {
    let unit = dwarf.unit(header)?;
    collect_from_unit(dwarf, &unit)
}

/// Like [`collect_unit`], for a unit already parsed (the encoder's).
pub fn collect_from_unit(
    dwarf: &Dwarf<'_>,
    unit: &gimli::Unit<Reader<'_>>,
) -> gimli::Result<Vec<Concrete>> {
    let base = unit
        .header
        .offset()
        .as_debug_info_offset()
        .map_or(0, |o| o.0 as u64);
    let mut tree = unit.entries_tree(None)?;
    let root = tree.root()?;
    let cu_name = attr_str(dwarf, unit, root.entry(), gimli::DW_AT_name).unwrap_or_default();
    let comp_dir = unit
        .comp_dir
        .map(|d| String::from_utf8_lossy(d.slice()).into_owned());
    let mut found = Vec::new();
    let mut children = root.children();
    while let Some(child) = children.next()? {
        let e = child.entry();
        if e.tag() != gimli::DW_TAG_subprogram {
            continue;
        }
        let has_code = e.attr_value(gimli::DW_AT_low_pc)?.is_some()
            || e.attr_value(gimli::DW_AT_ranges)?.is_some();
        if !has_code || e.attr_value(gimli::DW_AT_declaration)?.is_some() {
            continue;
        }
        let mut ranges = Vec::new();
        let mut rl = dwarf.die_ranges(unit, e)?;
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
        found.push((e.offset(), entry, ranges));
    }

    let mut ctx = UnitCtx {
        dwarf,
        unit,
        base,
        comp_dir,
        files: FxHashMap::default(),
        raw: FxHashMap::default(),
    };
    let mut namer = TypeNamer::new(dwarf, unit);
    let mut out = Vec::with_capacity(found.len());
    for (off, entry, ranges) in found {
        out.push(ctx.resolve(&mut namer, off, entry, ranges, &cu_name));
    }
    Ok(out)
}

impl<'a, 'u> UnitCtx<'a, 'u> {
    fn global(&self, off: UnitOffset) -> u64 {
        self.base + off.0 as u64
    }

    /// Reads one subprogram DIE and its parameter children, evaluating
    /// locations at `entry` when given (concrete DIEs only).
    fn read_raw(&self, off: UnitOffset, entry: Option<u64>) -> gimli::Result<RawSub> {
        let mut tree = self.unit.entries_tree(Some(off))?;
        let root = tree.root()?;
        let e = root.entry();
        let unit_ref = |at| -> gimli::Result<Option<UnitOffset>> {
            Ok(match e.attr_value(at)? {
                Some(AttributeValue::UnitRef(o)) => Some(o),
                _ => None,
            })
        };
        let mut raw = RawSub {
            name: attr_str(self.dwarf, self.unit, e, gimli::DW_AT_name),
            decl_file: match e.attr_value(gimli::DW_AT_decl_file)? {
                Some(AttributeValue::FileIndex(f)) => Some(f),
                Some(v) => v.udata_value(),
                None => None,
            },
            decl_line: e
                .attr_value(gimli::DW_AT_decl_line)?
                .and_then(|v| v.udata_value()),
            ret: type_ref(e),
            origin: unit_ref(gimli::DW_AT_abstract_origin)?,
            specification: unit_ref(gimli::DW_AT_specification)?,
            external: matches!(
                e.attr_value(gimli::DW_AT_external)?,
                Some(AttributeValue::Flag(true))
            ),
            nocall: matches!(
                e.attr_value(gimli::DW_AT_calling_convention)?,
                Some(AttributeValue::CallingConvention(gimli::DW_CC_nocall))
            ),
            params: Vec::new(),
            varargs: false,
        };
        let mut children = root.children();
        while let Some(child) = children.next()? {
            let p = child.entry();
            match p.tag() {
                gimli::DW_TAG_formal_parameter => {
                    let origin = match p.attr_value(gimli::DW_AT_abstract_origin)? {
                        Some(AttributeValue::UnitRef(o)) => Some(o),
                        _ => None,
                    };
                    let loc = match entry {
                        Some(pc) => entry_location(self.dwarf, self.unit, p, pc)?,
                        None => EntryLoc::Absent,
                    };
                    raw.params.push(RawParam {
                        off: p.offset(),
                        origin,
                        name: attr_str(self.dwarf, self.unit, p, gimli::DW_AT_name),
                        ty: type_ref(p),
                        loc,
                    });
                }
                gimli::DW_TAG_unspecified_parameters => raw.varargs = true,
                _ => {}
            }
        }
        Ok(raw)
    }

    fn raw(&mut self, off: UnitOffset) -> Option<RawSub> {
        if let Some(r) = self.raw.get(&off) {
            return r.clone();
        }
        let r = self.read_raw(off, None).ok();
        self.raw.insert(off, r.clone());
        r
    }

    fn file_name(&mut self, index: u64) -> Option<String> {
        if let Some(f) = self.files.get(&index) {
            return f.clone();
        }
        let name = self.lookup_file(index);
        self.files.insert(index, name.clone());
        name
    }

    fn lookup_file(&self, index: u64) -> Option<String> {
        let header = self.unit.line_program.as_ref()?.header();
        let file = header.file(index)?;
        let name = self.dwarf.attr_string(self.unit, file.path_name()).ok()?;
        let mut path = String::from_utf8_lossy(name.slice()).into_owned();
        if !path.starts_with('/') {
            if let Some(dir) = file.directory(header) {
                if let Ok(d) = self.dwarf.attr_string(self.unit, dir) {
                    let d = String::from_utf8_lossy(d.slice());
                    if !d.is_empty() {
                        path = format!("{d}/{path}");
                    }
                }
            }
        }
        // Show paths relative to the build directory, as the kernel tree names them.
        if let Some(cd) = &self.comp_dir {
            if let Some(rest) = path
                .strip_prefix(cd.as_str())
                .and_then(|r| r.strip_prefix('/'))
            {
                path = rest.to_owned();
            }
        }
        Some(path)
    }

    fn resolve(
        &mut self,
        namer: &mut TypeNamer<'_, '_>,
        off: UnitOffset,
        entry: u64,
        ranges: Vec<(u64, u64)>,
        cu_name: &str,
    ) -> Concrete {
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
        };
        let concrete = match self.read_raw(off, Some(entry)) {
            Ok(r) => r,
            Err(e) => {
                c.error = Some(format!("DIE {:#x}: {e}", c.die));
                return c;
            }
        };
        // Walk abstract origins to the source DIE, picking up the first
        // name, declaration coordinates and calling convention on the way.
        let mut chain = vec![concrete.clone()];
        let mut source_off = off;
        while let Some(o) = chain.last().and_then(|r| r.origin) {
            if chain.len() > MAX_CHAIN {
                c.error = Some(format!("DIE {:#x}: abstract origin chain too long", c.die));
                return c;
            }
            match self.raw(o) {
                Some(r) => {
                    source_off = o;
                    chain.push(r);
                }
                None => {
                    c.error = Some(format!(
                        "DIE {:#x}: abstract origin {:#x} unreadable",
                        c.die,
                        self.global(o)
                    ));
                    return c;
                }
            }
        }
        let Some(source) = chain.last().cloned() else {
            return c;
        };
        let spec = source.specification.and_then(|s| self.raw(s));
        let pick = |f: &dyn Fn(&RawSub) -> Option<u64>| chain.iter().chain(spec.iter()).find_map(f);
        c.source_die = self.global(source_off);
        c.name = chain.iter().chain(spec.iter()).find_map(|r| r.name.clone());
        c.decl_line = pick(&|r| r.decl_line).unwrap_or(0);
        c.decl_file = pick(&|r| r.decl_file).and_then(|f| self.file_name(f));
        c.external = chain.iter().chain(spec.iter()).any(|r| r.external);
        c.nocall = chain.iter().any(|r| r.nocall);
        let ret = chain.iter().chain(spec.iter()).find_map(|r| r.ret);
        c.ret = namer.info(ret);

        // The source parameters: the source DIE's own, or its declaration's
        // when the definition lists none (unnamed prototype parameters).
        let (src_params, varargs) = if source.params.is_empty() {
            match &spec {
                Some(s) if !s.params.is_empty() => (s.params.clone(), s.varargs),
                _ => (source.params.clone(), source.varargs),
            }
        } else {
            (source.params.clone(), source.varargs)
        };
        c.varargs = varargs;
        let index: FxHashMap<UnitOffset, usize> = src_params
            .iter()
            .enumerate()
            .map(|(i, p)| (p.off, i))
            .collect();
        let mut locs = vec![EntryLoc::Absent; src_params.len()];
        let concrete_is_source = source_off == off;
        for (pos, p) in concrete.params.iter().enumerate() {
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
                        .find(|q| q.off == cur)
                        .and_then(|q| q.origin);
                }
                hit
            };
            if let Some(i) = i {
                if let Some(slot) = locs.get_mut(i) {
                    *slot = p.loc.clone();
                }
            }
        }
        for (p, loc) in src_params.iter().zip(locs) {
            let ty = namer.info(p.ty);
            let members = match (ty.class, ty.aggregate, p.ty) {
                (ArgClass::Int2, true, Some(t)) => namer.members(t),
                _ => Vec::new(),
            };
            c.params.push(SrcParam {
                name: p.name.clone().unwrap_or_default(),
                ty,
                loc,
                members,
            });
        }
        c
    }
}
