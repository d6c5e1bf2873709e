//! pahole's layout view from DWARF (`pahole -F dwarf`): each compilation
//! unit read into this crate's [`model`](crate::model) the way pahole's DWARF loader
//! reads it, then printed by the same printer as BTF.
//!
//! DWARF carries what BTF loses, and pahole prints it: `DW_AT_alignment`
//! of members and types becomes `__attribute__((__aligned__(N)))` (with
//! BTF pahole can only guess alignments from gaps between offsets),
//! multi-dimensional arrays stay one type (`x[2][16]`), enums know their
//! signedness, and because alignments are known pahole spells trailing
//! padding as "Force padding" bitfields. Types are not deduplicated: each
//! unit is a fresh set of types with fresh inference state, as in pahole.
//!
//! `-C` follows pahole's loop exactly: units are read in order; in each,
//! the names still wanted are looked up in list order and printed until
//! the first one the unit lacks, which waits for a later unit. A name no
//! unit has stops the run there.

use rustc_hash::{FxHashMap, FxHashSet};
use std::path::Path;

use crate::model::{Class, Member, Model, Node};
use crate::{Filter, Layout, Seen};
use btf::TypeId;
use gimli::{AttributeValue, DwTag, UnitOffset};

use dwarf2btf::load::{Dwarf, DwarfSections, ElfFile, Reader};
use dwarf2btf::{Error, Result};

/// Prints the layout view of `path`'s DWARF: the `classes` in pahole's
/// `-C` order, or every struct and union. Returns the text and the first
/// name no unit has.
pub fn print(
    path: &Path,
    classes: &[String],
    filter: Filter,
    cacheline: u32,
) -> Result<(String, Option<String>)> {
    print_elf(&ElfFile::open(path)?, classes, filter, cacheline)
}

/// [`print()`] of an ELF file already open (or in memory).
pub fn print_elf(
    elf: &ElfFile,
    classes: &[String],
    filter: Filter,
    cacheline: u32,
) -> Result<(String, Option<String>)> {
    let path = elf.path();
    let obj = elf.object()?;
    let sections = DwarfSections::load(elf, &obj)?;
    let dwarf = sections.dwarf();
    let mut out = String::new();
    let mut seen = Seen::default();
    let mut next = 0;
    let mut units = dwarf.units();
    let err = |e: gimli::Error, offset: u64| Error::Dwarf {
        path: path.to_owned(),
        offset,
        error: e,
    };
    loop {
        let header = match units.next() {
            Ok(Some(h)) => h,
            Ok(None) => break,
            Err(e) => return Err(err(e, 0)),
        };
        let offset = header
            .offset()
            .as_debug_info_offset()
            .map_or(0, |o| o.0 as u64);
        let unit = dwarf.unit(header).map_err(|e| err(e, offset))?;
        let nodes = read_unit(&dwarf, &unit).map_err(|e| err(e, offset))?;
        let mut layout = Layout::new(Model::from_nodes(nodes, 8), cacheline, true);
        if classes.is_empty() {
            layout.print_all(filter, &mut seen, &mut out);
            continue;
        }
        while let Some(name) = classes.get(next) {
            let Some(id) = layout.find(name) else { break };
            layout.print_named(id, filter, &mut seen, &mut out);
            next += 1;
        }
        if next == classes.len() {
            break;
        }
    }
    Ok((out, classes.get(next).cloned()))
}

/// A type reference as read: a DIE offset in this unit.
type Ref = Option<UnitOffset>;

/// One DIE that pahole's loader turns into an entry of its type table.
enum Raw<'d> {
    Base {
        name: Option<&'d str>,
        bits: u32,
        signed: bool,
    },
    Pointer(Ref),
    Const(Ref),
    Volatile(Ref),
    Restrict(Ref),
    Typedef {
        name: Option<&'d str>,
        ty: Ref,
    },
    Array {
        elem: Ref,
        dims: Vec<u32>,
    },
    Class {
        name: Option<&'d str>,
        is_union: bool,
        declaration: bool,
        top_level: bool,
        size: u32,
        alignment: u32,
        members: Vec<RawMember<'d>>,
    },
    Enum {
        name: Option<&'d str>,
        bits: u32,
        underlying: Ref,
        values: Vec<(Option<&'d str>, u64)>,
    },
    Proto {
        ret: Ref,
        params: Vec<(Option<&'d str>, Ref)>,
        unspec: bool,
    },
    Func {
        name: Option<&'d str>,
    },
    Variable {
        name: Option<&'d str>,
    },
}

/// A DW_TAG_member as pahole's `class_member__new` reads it.
struct RawMember<'d> {
    name: Option<&'d str>,
    ty: Ref,
    alignment: u32,
    /// DWARF 5's DW_AT_data_bit_offset, when present.
    data_bit_offset: Option<u64>,
    byte_offset: u64,
    /// DWARF 4's DW_AT_bit_offset (from the storage unit's high bit).
    dw_bit_offset: u64,
    byte_size: u64,
    bit_size: u64,
}

/// The value of a numeric attribute as pahole's `attr_numeric` reads it:
/// data forms zero-extended, sdata as its two's complement, flags as 0/1.
fn numeric(v: &AttributeValue<Reader<'_>>) -> u64 {
    match *v {
        AttributeValue::Data1(x) => x as u64,
        AttributeValue::Data2(x) => x as u64,
        AttributeValue::Data4(x) => x as u64,
        AttributeValue::Data8(x) => x,
        AttributeValue::Sdata(x) => x as u64,
        AttributeValue::Udata(x) => x,
        AttributeValue::Flag(f) => f as u64,
        _ => 0,
    }
}

/// DW_AT_data_member_location: a constant, or the `DW_OP_plus_uconst N`
/// expression of older producers.
fn member_location(v: &AttributeValue<Reader<'_>>) -> u64 {
    match v {
        AttributeValue::Exprloc(e) => {
            let b = e.0.slice();
            match b.first() {
                Some(&op) if op == gimli::DW_OP_plus_uconst.0 || op == gimli::DW_OP_constu.0 => {
                    let mut r = gimli::EndianSlice::new(&b[1..], gimli::LittleEndian);
                    gimli::leb128::read::unsigned(&mut r).unwrap_or(u64::MAX)
                }
                _ => u64::MAX,
            }
        }
        other => numeric(other),
    }
}

/// Attributes of one DIE that the layout needs.
#[derive(Default)]
struct Attrs<'d> {
    name: Option<&'d str>,
    ty: Ref,
    byte_size: u64,
    bit_size: u64,
    alignment: u32,
    declaration: bool,
    encoding: u64,
    location: Option<u64>,
    data_bit_offset: Option<u64>,
    dw_bit_offset: u64,
    upper_bound: Option<u64>,
    count: Option<u64>,
    const_value: u64,
}

fn attrs<'d>(
    dwarf: &Dwarf<'d>,
    unit: &gimli::Unit<Reader<'d>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'d>>,
) -> gimli::Result<Attrs<'d>> {
    let mut a = Attrs::default();
    let mut it = entry.attrs();
    while let Some(attr) = it.next()? {
        let v = attr.value();
        match attr.name() {
            gimli::DW_AT_name => {
                a.name = dwarf
                    .attr_string(unit, v)
                    .ok()
                    .and_then(|s| std::str::from_utf8(s.slice()).ok());
            }
            gimli::DW_AT_type => {
                if let AttributeValue::UnitRef(o) = v {
                    a.ty = Some(o);
                }
            }
            gimli::DW_AT_byte_size => a.byte_size = numeric(&v),
            gimli::DW_AT_bit_size => a.bit_size = numeric(&v),
            gimli::DW_AT_alignment => a.alignment = numeric(&v) as u32,
            gimli::DW_AT_declaration => a.declaration = numeric(&v) != 0,
            gimli::DW_AT_encoding => {
                a.encoding = match v {
                    AttributeValue::Encoding(e) => e.0 as u64,
                    other => numeric(&other),
                }
            }
            gimli::DW_AT_data_member_location => a.location = Some(member_location(&v)),
            gimli::DW_AT_data_bit_offset => a.data_bit_offset = Some(numeric(&v)),
            gimli::DW_AT_bit_offset => a.dw_bit_offset = numeric(&v),
            gimli::DW_AT_upper_bound => a.upper_bound = v.udata_value(),
            gimli::DW_AT_count => a.count = v.udata_value(),
            gimli::DW_AT_const_value => a.const_value = numeric(&v),
            _ => {}
        }
    }
    Ok(a)
}

/// A DIE whose children are still being read.
struct Open<'d> {
    depth: isize,
    offset: UnitOffset,
    raw: Raw<'d>,
}

/// Reads the types of one unit, numbered as pahole numbers them: a DIE
/// gets its id when its subtree is done (types nested in a struct or a
/// function come before it), which decides which of two types of one
/// name `-C` finds first.
fn read_unit<'d>(
    dwarf: &Dwarf<'d>,
    unit: &gimli::Unit<Reader<'d>>,
) -> gimli::Result<Vec<Option<Node<'d>>>> {
    let done = raw_types(dwarf, unit)?;
    let ids: FxHashMap<UnitOffset, TypeId> = done
        .iter()
        .enumerate()
        .map(|(i, (off, _))| (*off, i as TypeId + 1))
        .collect();
    let signed_bases: FxHashMap<UnitOffset, bool> = done
        .iter()
        .filter_map(|(off, r)| match r {
            Raw::Base { signed, .. } => Some((*off, *signed)),
            _ => None,
        })
        .collect();
    // A reference to a DIE pahole made no type of is "not found": an id
    // past the table.
    let missing = done.len() as TypeId + 1;
    let id = |r: Ref| -> TypeId {
        match r {
            None => 0,
            Some(o) => ids.get(&o).copied().unwrap_or(missing),
        }
    };
    // DWARF 4 bitfields (DW_AT_bit_offset, no DW_AT_data_bit_offset):
    // their offsets are fixed up differently once sizes are known.
    let mut dwarf4: FxHashSet<(TypeId, usize)> = FxHashSet::default();
    let mut nodes: Vec<Option<Node<'d>>> = Vec::with_capacity(done.len() + 1);
    nodes.push(None);
    for (i, (_, raw)) in done.into_iter().enumerate() {
        if let Raw::Class { members, .. } = &raw {
            for (j, m) in members.iter().enumerate() {
                if m.bit_size != 0 && m.data_bit_offset.is_none() {
                    dwarf4.insert((i as TypeId + 1, j));
                }
            }
        }
        nodes.push(Some(node(raw, &id, &signed_bases)));
    }
    let mut model = Model::from_nodes(nodes, 8);
    cache_member_sizes(&mut model, &dwarf4);
    Ok(model.nodes)
}

/// The type DIEs of one unit in pahole's order: a DIE when its subtree
/// is done, with the parts (members, enumerators, parameters, array
/// dimensions) its children add.
fn raw_types<'d>(
    dwarf: &Dwarf<'d>,
    unit: &gimli::Unit<Reader<'d>>,
) -> gimli::Result<Vec<(UnitOffset, Raw<'d>)>> {
    let mut done: Vec<(UnitOffset, Raw<'d>)> = Vec::new();
    let mut stack: Vec<Open<'d>> = Vec::new();
    let mut depth: isize = 0;
    let mut cursor = unit.entries();
    while let Some((delta, entry)) = cursor.next_dfs()? {
        depth += delta;
        while stack.last().is_some_and(|o| o.depth >= depth) {
            if let Some(o) = stack.pop() {
                done.push((o.offset, o.raw));
            }
        }
        let tag = entry.tag();
        let a = attrs(dwarf, unit, entry)?;
        // Children of an open aggregate that are its parts.
        if let Some(open) = stack.last_mut() {
            if open.depth + 1 == depth && add_part(&mut open.raw, tag, &a) {
                continue;
            }
        }
        let Some(raw) = new_raw(tag, a, depth == 1) else {
            continue;
        };
        stack.push(Open {
            depth,
            offset: entry.offset(),
            raw,
        });
    }
    while let Some(o) = stack.pop() {
        done.push((o.offset, o.raw));
    }
    Ok(done)
}

/// The node of a type DIE, its references (`id`) numbered as the unit's
/// types are; an enum is signed when its underlying base type is.
fn node<'d>(
    raw: Raw<'d>,
    id: &impl Fn(Ref) -> TypeId,
    signed_bases: &FxHashMap<UnitOffset, bool>,
) -> Node<'d> {
    match raw {
        Raw::Base { name, bits, .. } => Node::Base {
            name,
            bits,
            is_bool: false,
            is_float: false,
        },
        Raw::Pointer(r) => Node::Pointer(id(r)),
        Raw::Const(r) => Node::Const(id(r)),
        Raw::Volatile(r) => Node::Volatile(id(r)),
        Raw::Restrict(r) => Node::Restrict(id(r)),
        Raw::Typedef { name, ty } => Node::Typedef { name, ty: id(ty) },
        Raw::Array { elem, dims } => Node::Array {
            elem: id(elem),
            dims,
        },
        Raw::Enum {
            name,
            bits,
            underlying,
            values,
        } => Node::Enum {
            name,
            bits,
            signed: underlying
                .and_then(|u| signed_bases.get(&u).copied())
                .unwrap_or(false),
            values,
        },
        Raw::Proto {
            ret,
            params,
            unspec,
        } => Node::FuncProto {
            ret: id(ret),
            params: params.into_iter().map(|(n, t)| (n, id(t))).collect(),
            unspec,
        },
        Raw::Func { name } => Node::Func { name },
        Raw::Variable { name } => Node::Variable { name },
        Raw::Class {
            name,
            is_union,
            declaration,
            top_level,
            size,
            alignment,
            members,
        } => {
            let members = members
                .iter()
                .map(|m| Member {
                    name: m.name,
                    ty: id(m.ty),
                    bit_offset: m.data_bit_offset.unwrap_or(m.byte_offset.wrapping_mul(8)) as u32,
                    bit_size: 0,
                    byte_offset: m.byte_offset as u32,
                    byte_size: m.byte_size,
                    bitfield_offset: m.dw_bit_offset as i8,
                    bitfield_size: m.bit_size as u8,
                    alignment: m.alignment,
                    hole: 0,
                    bit_hole: 0,
                })
                .collect();
            Node::Class(Class::new(
                name,
                is_union,
                declaration,
                top_level,
                size,
                alignment,
                members,
            ))
        }
    }
}

/// The part a child DIE adds to its open parent; false if it is not one.
fn add_part<'d>(parent: &mut Raw<'d>, tag: DwTag, a: &Attrs<'d>) -> bool {
    match (parent, tag) {
        (Raw::Class { members, .. }, gimli::DW_TAG_member) => {
            // A member without a location is at offset 0 in a union (and
            // static in a struct, which C does not have).
            members.push(RawMember {
                name: a.name,
                ty: a.ty,
                alignment: a.alignment,
                data_bit_offset: a.data_bit_offset,
                byte_offset: a.location.unwrap_or(0),
                dw_bit_offset: a.dw_bit_offset,
                byte_size: a.byte_size,
                bit_size: a.bit_size,
            });
            true
        }
        (Raw::Array { dims, .. }, gimli::DW_TAG_subrange_type) => {
            let n = match (a.upper_bound, a.count) {
                (Some(u), _) => u.wrapping_add(1),
                (None, Some(c)) => c,
                (None, None) => 0,
            };
            if dims.len() < 64 {
                dims.push(n as u32);
            }
            true
        }
        (Raw::Enum { values, .. }, gimli::DW_TAG_enumerator) => {
            values.push((a.name, a.const_value));
            true
        }
        (Raw::Proto { params, .. }, gimli::DW_TAG_formal_parameter) => {
            params.push((a.name, a.ty));
            true
        }
        (Raw::Proto { unspec, .. }, gimli::DW_TAG_unspecified_parameters) => {
            *unspec = true;
            true
        }
        _ => false,
    }
}

/// The entry pahole's `__die__process_tag` makes of a DIE, if any.
fn new_raw(tag: DwTag, a: Attrs<'_>, top_level: bool) -> Option<Raw<'_>> {
    Some(match tag {
        gimli::DW_TAG_base_type => Raw::Base {
            name: a.name,
            bits: (a.byte_size as u32).wrapping_mul(8),
            signed: a.encoding == gimli::DW_ATE_signed.0 as u64
                || a.encoding == gimli::DW_ATE_signed_char.0 as u64,
        },
        gimli::DW_TAG_pointer_type => Raw::Pointer(a.ty),
        gimli::DW_TAG_const_type => Raw::Const(a.ty),
        gimli::DW_TAG_volatile_type => Raw::Volatile(a.ty),
        gimli::DW_TAG_restrict_type => Raw::Restrict(a.ty),
        gimli::DW_TAG_typedef => Raw::Typedef {
            name: a.name,
            ty: a.ty,
        },
        gimli::DW_TAG_array_type => Raw::Array {
            elem: a.ty,
            dims: Vec::new(),
        },
        gimli::DW_TAG_structure_type | gimli::DW_TAG_class_type | gimli::DW_TAG_union_type => {
            Raw::Class {
                name: a.name,
                is_union: tag == gimli::DW_TAG_union_type,
                declaration: a.declaration,
                top_level,
                size: a.byte_size as u32,
                alignment: a.alignment,
                members: Vec::new(),
            }
        }
        gimli::DW_TAG_enumeration_type => Raw::Enum {
            name: a.name,
            bits: if a.byte_size == 0 {
                32
            } else {
                (a.byte_size as u32).wrapping_mul(8)
            },
            underlying: a.ty,
            values: Vec::new(),
        },
        gimli::DW_TAG_subroutine_type => Raw::Proto {
            ret: a.ty,
            params: Vec::new(),
            unspec: false,
        },
        gimli::DW_TAG_subprogram => Raw::Func { name: a.name },
        gimli::DW_TAG_variable => Raw::Variable { name: a.name },
        _ => return None,
    })
}

/// pahole's `class_member__cache_byte_size`: member sizes from their
/// types, and bitfield offsets moved into their storage unit.
fn cache_member_sizes(model: &mut Model<'_>, dwarf4: &FxHashSet<(TypeId, usize)>) {
    for id in 1..model.nodes.len() as TypeId {
        let n = match model.class(id) {
            Some(c) => c.members.len(),
            None => continue,
        };
        for i in 0..n {
            let Some(m) = model.class(id).and_then(|c| c.members.get(i)).cloned() else {
                continue;
            };
            let mut m = m;
            if m.bitfield_size == 0 {
                // tag__size of the member: its DW_AT_byte_size, else its type's.
                if m.byte_size == 0 {
                    m.byte_size = if m.ty == 0 { 0 } else { model.size(m.ty) };
                }
                m.bit_size = (m.byte_size as u32).wrapping_mul(8);
                m.bitfield_offset = 0;
            } else {
                if m.byte_size == 0 {
                    let t = model.strip(m.ty);
                    m.byte_size = t.map_or(u64::MAX, |t| model.size(t));
                    if m.byte_size == 0 {
                        let bits = match t.and_then(|t| model.get(t)) {
                            Some(Node::Enum { bits, .. } | Node::Base { bits, .. }) => *bits,
                            _ => 0,
                        };
                        m.byte_size = (bits as u64).div_ceil(8) * 8;
                    }
                }
                m.bit_size = (m.byte_size as u32).wrapping_mul(8);
                if m.byte_size != 0 {
                    fix_bitfield(&mut m, dwarf4.contains(&(id, i)));
                } else {
                    m.bitfield_offset = 0;
                }
            }
            if let Some(slot) = model.class_mut(id).and_then(|c| c.members.get_mut(i)) {
                *slot = m;
            }
        }
    }
}

/// Bitfield offsets as pahole keeps them: from the low bit of a storage
/// unit of the member type's size, aligned to that size.
fn fix_bitfield(m: &mut Member<'_>, dwarf4: bool) {
    let byte_size = m.byte_size as u32;
    if dwarf4 {
        // DW_AT_bit_offset counts from the unit's high bit (little endian).
        let bfo = m.bit_size as i32 - m.bitfield_offset as i32 - m.bitfield_size as i32;
        m.bitfield_offset = bfo as i8;
        m.sync_bit_offset();
    } else {
        m.byte_offset = m.bit_offset / 8;
        m.bitfield_offset = (m.bit_offset - m.byte_offset * 8) as i8;
    }
    m.wrap_negative_bitfield();
    let add = m
        .byte_offset
        .checked_rem(byte_size)
        .unwrap_or(0)
        .wrapping_mul(8) as i32;
    m.bitfield_offset = (m.bitfield_offset as i32 + add) as i8;
    if let Some(units) = m.bit_offset.checked_div(m.bit_size) {
        m.byte_offset = units.wrapping_mul(m.bit_size) / 8;
    }
    if m.bitfield_offset as i32 >= m.bit_size as i32 {
        m.bitfield_offset = (m.bitfield_offset as i32 - m.bit_size as i32) as i8;
        m.byte_offset = m.byte_offset.wrapping_add(byte_size);
    }
}

/// Whether `path` is an ELF file with DWARF (pahole's default source);
/// anything else (raw BTF, /sys/kernel/btf/*) is read as BTF.
pub fn has_dwarf(path: &Path) -> Result<bool> {
    use object::{Object, ObjectSection};
    // sysfs BTF cannot be mapped: look at the magic first, without
    // blocking on a FIFO or eating a pipe's bytes (those are read as BTF).
    let magic = fileio::input_file::peek(path, 4).map_err(|error| Error::Io {
        path: path.to_owned(),
        error,
    })?;
    if magic != *b"\x7fELF" {
        return Ok(false);
    }
    let elf = ElfFile::open(path)?;
    let obj = object::File::parse(elf.data()).map_err(|error| Error::Object {
        path: path.to_owned(),
        error,
    })?;
    Ok(obj
        .section_by_name(".debug_info")
        .is_some_and(|s| s.size() > 0))
}
