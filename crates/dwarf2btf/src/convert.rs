//! DWARF type DIEs of one compilation unit -> BTF types, the way pahole's
//! dwarf_loader + btf_encoder produce them.
//!
//! Algorithm (one pass over the unit's DIEs in offset order, then one fixup):
//! every type DIE gets the next local type id when it is met, so the map
//! "DIE offset -> local id" is built sorted and is searched by bisection.
//! References (DW_AT_type) are stored as the referenced DIE's unit offset
//! while walking, because a DIE may refer forward; the fixup pass then turns
//! every stored offset into a local id. Invariant after [`convert_unit`]:
//! every id in the returned [`UnitBuilder`] is 0 (void) or a local id of a
//! type of that builder. Local ids start at 1 and become global ids when the
//! encoder appends the unit to the output (see `encode.rs`).
//!
//! Nothing of the DWARF tree is kept: a DIE is read once, its attributes are
//! copied into a small fixed struct and the BTF record is written at once.

use btf::encoder_hooks::ZeroedWords;
use btf::format::{BTF_INT_BOOL, BTF_INT_SIGNED};
use btf::{
    Arena, Array, Enum64Value, EnumValue, Kind, Member, Param, Records, Type, TypeData, TypeId,
};
use std::cell::RefCell;

use gimli::{constants as dw, AttributeValue, UnitOffset};

use crate::dies::{Attrs, Const, Die, DieReader, Fields, Str, DW_AT_GNU_ANNOTATION};
use crate::error::{Error, Result};
use crate::load::{Dwarf, Reader};
use crate::partial_units::{Imports, Known};
use crate::strings::Strings;
use crate::subprograms::Subprograms;

mod type_dies;

/// DW_TAG_LLVM_annotation (clang's btf_decl_tag/btf_type_tag children).
const DW_TAG_LLVM_ANNOTATION: dw::DwTag = dw::DwTag(0x6000);
/// DW_TAG_GNU_annotation, GCC's spelling of the same thing.
const DW_TAG_GNU_ANNOTATION: dw::DwTag = dw::DwTag(0x6001);

/// What a DW_TAG_GNU_annotation DIE names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Annotation {
    TypeTag,
    DeclTag,
    Other,
}

/// Chains longer than this are cut (real ones hold a few tags).
const MAX_ANNOTATION_CHAIN: usize = 64;

/// While walking, a reference field holds either a DIE's unit offset (to be
/// resolved) or, with this bit set, a local id the converter made itself.
const LOCAL: u32 = 1 << 31;
/// Placeholder for an array's index type, resolved to the unit's `int`.
const INDEX_PENDING: u32 = u32::MAX;

/// BTF types built for one compilation unit, with local ids (1-based), and
/// their strings, which go straight into the segment's string section.
/// Function policies add their own records here; the encoder shifts the
/// ids when it appends the unit to its segment.
pub struct UnitBuilder<'s> {
    types: Vec<Type>,
    strings: &'s mut Strings,
}

impl<'s> UnitBuilder<'s> {
    /// An empty unit whose strings go into `strings` (the segment's string
    /// section, shared by the units the segment holds).
    pub fn new(strings: &'s mut Strings) -> UnitBuilder<'s> {
        UnitBuilder {
            types: Vec::new(),
            strings,
        }
    }

    /// Interns a string and returns its offset.
    pub fn add_str(&mut self, s: &[u8]) -> u32 {
        self.strings.add(s)
    }

    /// The string at an offset ("" when out of range).
    pub fn str_at(&self, off: u32) -> &[u8] {
        self.strings.get(off)
    }

    /// Appends a type; its references must be local ids (or 0).
    pub fn add_type(&mut self, t: Type) -> TypeId {
        self.types.push(t);
        self.types.len() as TypeId
    }

    /// The type with a local id.
    pub fn get(&self, id: TypeId) -> Option<&Type> {
        self.types.get((id as usize).checked_sub(1)?)
    }

    /// Number of types (the largest local id).
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Whether no type has been added yet.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// The types added so far, in local id order (local id 1 first); their
    /// references are still local ids.
    pub fn types(&self) -> &[Type] {
        &self.types
    }

    /// Byte size of a type, following typedefs and modifiers (for bitfield
    /// offsets and zero-sized variables). 0 when unknown.
    pub fn type_size(&self, mut id: TypeId) -> u64 {
        for _ in 0..32 {
            let Some(t) = self.get(id) else { return 0 };
            match &t.data {
                TypeData::Int { size, .. }
                | TypeData::Float { size }
                | TypeData::Struct { size, .. }
                | TypeData::Union { size, .. }
                | TypeData::Enum { size, .. }
                | TypeData::Enum64 { size, .. }
                | TypeData::Datasec { size, .. } => return u64::from(*size),
                TypeData::Ptr { .. } => return 8,
                TypeData::Array(a) => {
                    return u64::from(a.nelems).saturating_mul(self.type_size(a.elem))
                }
                _ => match t.ref_type_in(|k| k.is_modifier_or_typedef() || k == Kind::VAR) {
                    Some(ty) => id = ty,
                    None => return 0,
                },
            }
        }
        0
    }

    pub(crate) fn into_types(self) -> Vec<Type> {
        self.types
    }
}

/// The local BTF id of every type DIE of one unit: what the function and
/// variable encoders use to refer to DWARF types.
pub struct UnitTypes {
    /// Offset of the unit header in .debug_info.
    unit_offset: u64,
    types: DieTypes,
    /// The units read with the unit (dwz's partial units, compilation
    /// units it refers to): where DIE keys past the unit's own offsets are.
    pub partial_units: Known,
}

impl UnitTypes {
    /// The local id (in this unit's [`UnitBuilder`]) of the type DIE at
    /// `die`, `Some(0)` for void, `None` if `die` is not a type DIE.
    pub fn type_id(&self, die: UnitOffset) -> Option<TypeId> {
        self.types.lookup(u32::try_from(die.0).ok()?)
    }

    /// Like [`UnitTypes::type_id`] for a global .debug_info offset.
    pub fn type_id_global(&self, die: gimli::DebugInfoOffset) -> Option<TypeId> {
        let rel = die.0.checked_sub(self.unit_offset as usize)?;
        self.type_id(UnitOffset(rel))
    }

    /// The unit's offset in .debug_info.
    pub fn unit_offset(&self) -> gimli::DebugInfoOffset {
        gimli::DebugInfoOffset(self.unit_offset as usize)
    }
}

/// Unit offset of a DIE -> local type id, for one unit's type DIEs: how
/// the converter resolves the type references of a unit once it is read,
/// and the function policy its parameters' types.
struct DieTypes {
    /// (DIE unit offset, local id), sorted by offset (DIEs are read in
    /// offset order). Id 0: the DIE stands for `void`
    /// (DW_TAG_unspecified_type and kinds BTF cannot express).
    map: Vec<(u32, TypeId)>,
    /// DIEs that are transparent (DW_TAG_atomic_type): offset -> referee,
    /// sorted by offset.
    aliases: Vec<(u32, u32)>,
}

/// Longest chain of transparent DIEs followed (a corrupt file may loop).
const MAX_ALIASES: usize = 16;

/// Units up to this many bytes resolve their references through a dense
/// index (one word per byte of the unit); larger ones search `map`.
const MAX_DENSE_UNIT: usize = 8 << 20;

thread_local! {
    /// The dense index of [`DieTypes::resolve_all`], kept per thread
    /// between units: all zero outside a call. A mapping of its own, so
    /// that freeing it gives its pages back.
    static DENSE: std::cell::RefCell<ZeroedWords> = std::cell::RefCell::new(ZeroedWords::default());
}

impl DieTypes {
    /// The local id of the type DIE at `off` (through transparent DIEs),
    /// `None` if it is not a type DIE.
    fn lookup(&self, off: u32) -> Option<TypeId> {
        let mut off = off;
        for _ in 0..MAX_ALIASES {
            if let Ok(i) = self.map.binary_search_by_key(&off, |e| e.0) {
                return self.map.get(i).map(|e| e.1);
            }
            let i = self.aliases.binary_search_by_key(&off, |e| e.0).ok()?;
            off = self.aliases.get(i)?.1;
            if off == 0 {
                return Some(0);
            }
        }
        Some(0)
    }

    /// Calls `f` with a lookup for the unit's references. Resolving every
    /// reference of a unit by binary search over `map` is a few percent
    /// of an encode; a dense index of DIE offset -> id + 1, filled from
    /// `map` and cleared the same way, answers each in one load. Offsets
    /// it does not hold (transparent DIEs, non-types) take the search, as
    /// every offset of a unit too large for the index does.
    fn resolve_all<R>(&self, unit_len: usize, f: impl FnOnce(&DenseIndex<'_>) -> R) -> R {
        if unit_len > MAX_DENSE_UNIT {
            return f(&DenseIndex::fill(&mut [], self));
        }
        DENSE.with_borrow_mut(|dense| {
            if dense.len() < unit_len {
                *dense = ZeroedWords::new(unit_len.next_power_of_two());
            }
            f(&DenseIndex::fill(dense, self))
        })
    }
}

/// Frees this thread's [`DENSE`] (a few MiB on a kernel), once its units
/// are converted.
pub(crate) fn release_scratch() {
    DENSE.take();
}

/// [`DENSE`] filled from a unit's `map` (DIE offset -> id + 1), zeroed
/// again when dropped, so that the next unit finds it empty whatever
/// happened in between.
struct DenseIndex<'a> {
    slots: &'a mut [u32],
    types: &'a DieTypes,
}

impl<'a> DenseIndex<'a> {
    fn fill(slots: &'a mut [u32], types: &'a DieTypes) -> DenseIndex<'a> {
        for &(off, id) in &types.map {
            if let Some(slot) = slots.get_mut(off as usize) {
                // Ids are below `LOCAL`: no overflow.
                *slot = id + 1;
            }
        }
        DenseIndex { slots, types }
    }

    /// [`DieTypes::lookup`], from the index where it holds `off`.
    fn lookup(&self, off: u32) -> Option<TypeId> {
        match self.slots.get(off as usize) {
            Some(&hit) if hit != 0 => Some(hit - 1),
            _ => self.types.lookup(off),
        }
    }
}

impl Drop for DenseIndex<'_> {
    fn drop(&mut self) {
        for &(off, _) in &self.types.map {
            if let Some(slot) = self.slots.get_mut(off as usize) {
                *slot = 0;
            }
        }
    }
}

/// A top-level variable with a fixed address (DW_OP_addr), for `vars.rs`.
#[derive(Clone, Debug)]
pub struct UnitVar {
    /// Local string offset of the DWARF name (0 if none).
    pub name: u32,
    /// The address its DW_OP_addr location gives: link-time, as in the ELF
    /// file's symbol table.
    pub addr: u64,
    /// Local type id (0: void).
    pub ty: TypeId,
    /// DW_AT_external, here or on its declaration: a global rather than a
    /// `static` (BTF linkage `global-alloc` rather than `static`).
    pub external: bool,
    /// Local string offsets of btf_decl_tag values attached to it.
    pub decl_tags: Vec<u32>,
}

/// Everything converted from one unit.
pub struct ConvertedUnit<'s, 'd> {
    /// The unit's BTF types, with local ids, and its strings.
    pub builder: UnitBuilder<'s>,
    /// The local id of each of the unit's type DIEs.
    pub types: UnitTypes,
    /// The unit's top-level variables that have a fixed address, in DIE
    /// order (empty unless [`ConvertOptions::collect_vars`]).
    pub vars: Vec<UnitVar>,
    /// The unit's subprograms, when [`ConvertOptions::subprograms`] asks.
    pub subprograms: Subprograms<'d>,
    /// Warnings worth telling the user (unknown tags, unresolved references).
    pub warnings: Vec<String>,
}

/// Options of the type conversion.
#[derive(Clone, Debug, Default)]
pub struct ConvertOptions {
    /// Keep top-level variables' addresses for the variable encoder.
    pub collect_vars: bool,
    /// Encode Rust units too (pahole's --lang_exclude=rust is the default).
    pub keep_rust: bool,
    /// Record the subprograms in the same pass (for the function policy).
    pub subprograms: bool,
    /// The units of the input and of its alternate file, for references
    /// that leave a unit (partial_units.rs).
    pub units: crate::partial_units::UnitTables,
}

/// An aggregate whose children are still being read.
enum Open {
    /// `start`: where its members begin in `Conv::members` (and likewise
    /// for values and parameters below).
    Struct {
        idx: usize,
        is_union: bool,
        start: usize,
        /// GCC's DW_AT_GNU_annotation chain of the struct itself.
        gnu: Option<u32>,
    },
    Enum {
        idx: usize,
        signed: bool,
        is64: bool,
        start: usize,
    },
    Proto {
        idx: usize,
        start: usize,
    },
    /// `start`: where its dimensions begin in `Conv::dims`.
    Array {
        idx: usize,
        start: usize,
    },
    /// `tags`: clang's btf_type_tag children, in DIE order; `gnu`: GCC's
    /// DW_AT_GNU_annotation chain, used when there are no children (pahole).
    Ptr {
        idx: usize,
        tags: Vec<u32>,
        gnu: Option<u32>,
    },
    Typedef {
        idx: usize,
    },
    /// A container whose children may hold types but nothing to attach
    /// (functions, lexical blocks, variables).
    Other {
        var: Option<usize>,
    },
}

/// A DWARF 4 bitfield whose bit offset needs its storage unit's size.
struct BitFix {
    idx: usize,
    member: usize,
    byte_offset: u64,
    dw_bit_offset: i64,
    bits: u64,
    storage_bytes: Option<u64>,
    ty: u32,
}

struct DeclTagFix {
    target: TypeTarget,
    component: i32,
    value: u32,
}

#[derive(Clone, Copy)]
enum TypeTarget {
    Type(usize),
    Var(usize),
}

struct Conv<'a, 'd> {
    dwarf: &'a Dwarf<'d>,
    unit: &'a gimli::Unit<Reader<'d>>,
    opts: &'a ConvertOptions,
    b: UnitBuilder<'a>,
    map: Vec<(u32, TypeId)>,
    aliases: Vec<(u32, u32)>,
    /// (depth, what is open at that depth)
    stack: Vec<(isize, Open)>,
    /// Members, enumerators and parameters of the open aggregates: each
    /// gets its exact-size list in `arena` when it closes (no growing Vec
    /// per type, nor an allocation).
    members: Vec<Member>,
    values: Vec<EnumValue>,
    values64: Vec<Enum64Value>,
    params: Vec<Param>,
    /// Element counts of the open array's subranges, outermost first.
    dims: Vec<u32>,
    arena: Arena,
    bitfields: Vec<(usize, usize, u32)>,
    bitfix: Vec<BitFix>,
    decl_tags: Vec<DeclTagFix>,
    int_id: Option<TypeId>,
    needs_index: bool,
    vars: Vec<UnitVar>,
    /// Variable declarations (offset, var index) that a later definition
    /// may complete through DW_AT_specification.
    var_decls: Vec<(u32, UnitVar)>,
    /// Definitions whose declaration was not read yet (dwz moved it to a
    /// partial unit, read after the unit): (var index, DW_AT_specification,
    /// whether the definition has no type of its own).
    var_specs: Vec<(usize, u32, bool)>,
    warnings: Vec<String>,
    unknown_tags: u32,
    /// The struct member whose btf_decl_tag children are being read:
    /// (struct index, member index, member DIE depth).
    member_tags_for: Option<(usize, i32, isize)>,
    /// A compilation unit that the unit refers to is being read: its
    /// variables are declarations here (partial_units.rs).
    imported: bool,
}

impl<'a, 'd> Conv<'a, 'd> {
    /// A converter of `unit` with nothing read yet.
    fn new(
        dwarf: &'a Dwarf<'d>,
        unit: &'a gimli::Unit<Reader<'d>>,
        opts: &'a ConvertOptions,
        strings: &'a mut Strings,
    ) -> Self {
        // A kernel unit has about one type per 50 bytes of DWARF: sized up
        // front, the unit's lists grow without a dozen copies each.
        let expect = unit.header.length_including_self() / 50;
        Conv {
            dwarf,
            unit,
            opts,
            b: UnitBuilder {
                types: Vec::with_capacity(expect),
                strings,
            },
            map: Vec::with_capacity(expect),
            aliases: Vec::new(),
            stack: Vec::new(),
            members: Vec::new(),
            values: Vec::new(),
            values64: Vec::new(),
            params: Vec::new(),
            dims: Vec::new(),
            arena: Arena::new(),
            bitfields: Vec::new(),
            bitfix: Vec::new(),
            decl_tags: Vec::new(),
            int_id: None,
            needs_index: false,
            vars: Vec::new(),
            var_decls: Vec::new(),
            var_specs: Vec::new(),
            warnings: Vec::new(),
            unknown_tags: 0,
            member_tags_for: None,
            imported: false,
        }
    }
}

/// Converts the types of one unit. `Ok(None)` for units that are left out
/// (Rust compilation units, as pahole's --lang_exclude=rust). Strings go
/// into `strings`.
pub fn convert_unit<'a, 'd>(
    dwarf: &'a Dwarf<'d>,
    unit: &'a gimli::Unit<Reader<'d>>,
    opts: &'a ConvertOptions,
    path: &std::path::Path,
    strings: &'a mut Strings,
) -> Result<Option<ConvertedUnit<'a, 'd>>> {
    let unit_offset = unit
        .header
        .offset()
        .as_debug_info_offset()
        .map_or(0, |o| o.0 as u64);
    let err = |e: gimli::Error, off: u64| Error::Dwarf {
        path: path.to_owned(),
        offset: unit_offset + off,
        error: e,
    };
    if unit.header.length_including_self() as u64 >= u64::from(LOCAL) {
        return Err(Error::Encode {
            path: path.to_owned(),
            msg: format!("compilation unit at {unit_offset:#x} is larger than 2 GiB"),
        });
    }
    let mut conv = Conv::new(dwarf, unit, opts, strings);
    let fields = if opts.subprograms {
        Fields::TYPES.with(Fields::SUBPROGRAMS)
    } else {
        Fields::TYPES
    };
    let mut subprograms = Subprograms::default();
    let unit_len = unit.header.length_including_self() as u64;
    let imports = RefCell::new(Imports::new(dwarf, &opts.units, unit_offset, unit_len));
    let mut dies = DieReader::new(unit, fields)
        .map_err(|e| err(e, 0))?
        .with_imports(&imports, 0, false);
    loop {
        let at = dies.offset();
        let Some(die) = dies.next().map_err(|e| err(e, at))? else {
            break;
        };
        if opts.subprograms {
            subprograms.die(die);
        }
        if die.depth == 0 {
            if !opts.keep_rust
                && die.tag == dw::DW_TAG_compile_unit
                && die.attrs.language() == Some(u64::from(dw::DW_LANG_Rust.0))
            {
                return Ok(None);
            }
            // dwz's partial units are read in the units that import them.
            if die.tag == dw::DW_TAG_partial_unit {
                return Ok(None);
            }
            continue;
        }
        if conv.enter(die) {
            dies.skip_children().map_err(|e| err(e, at))?;
        }
    }
    while !conv.stack.is_empty() {
        conv.close();
    }
    drop(dies);
    read_partial_units(&mut conv, &imports, &mut subprograms, fields, path)?;
    conv.complete_pending_vars();
    let imports = imports.borrow();
    if let Some((alt, g)) = imports.bad {
        let file = if alt { "the dwz alternate file's " } else { "" };
        return Err(Error::Encode {
            path: path.to_owned(),
            msg: format!(
                "compilation unit at {unit_offset:#x}: a DIE reference to {file}\
                 .debug_info offset {g:#x} points into no unit"
            ),
        });
    }
    let (key_end, known) = (imports.key_end(), imports.known());
    drop(imports);
    if key_end >= u64::from(LOCAL) {
        return Err(Error::Encode {
            path: path.to_owned(),
            msg: format!(
                "compilation unit at {unit_offset:#x} with the units it refers to is larger \
                 than 2 GiB"
            ),
        });
    }
    conv.finish(unit_offset, subprograms, key_end, known)
        .map(Some)
}

/// Reads into `conv` the partial units that the unit imports
/// (DW_TAG_imported_unit) or refers to, the compilation units it refers
/// to, and those that they import or refer to in turn, each under its
/// keys: after the unit, so that keys are met in increasing order. (dwz
/// orders the DIEs of partial units its own way: the order of the unit
/// before dwz is not to be had back.)
fn read_partial_units<'a, 'd>(
    conv: &mut Conv<'a, 'd>,
    imports: &RefCell<Imports<'_, 'd>>,
    subprograms: &mut Subprograms<'d>,
    fields: Fields,
    path: &std::path::Path,
) -> Result<()> {
    let mut read = 0;
    loop {
        let Some(span) = imports.borrow().spans.get(read).copied() else {
            return Ok(());
        };
        read += 1;
        let err = |e: gimli::Error| Error::Dwarf {
            path: path.to_owned(),
            offset: span.start,
            error: e,
        };
        let pu = span.open(conv.dwarf).map_err(err)?;
        conv.imported = span.compile;
        let mut dies = DieReader::new(&pu, fields)
            .map_err(err)?
            .with_imports(imports, span.base, span.alt);
        loop {
            let Some(die) = dies.next().map_err(err)? else {
                break;
            };
            // Declarations that concrete functions of the unit refer to
            // (DW_AT_abstract_origin, DW_AT_specification) are recorded
            // under their keys.
            if die.depth == 0 {
                continue;
            }
            if conv.opts.subprograms {
                if span.compile {
                    subprograms.imported_die(die);
                } else {
                    subprograms.die(die);
                }
            }
            if conv.enter(die) {
                dies.skip_children().map_err(err)?;
            }
        }
        while !conv.stack.is_empty() {
            conv.close();
        }
        conv.imported = false;
    }
}

impl<'a, 'd> Conv<'a, 'd> {
    fn warn_once(&mut self, msg: String) {
        if self.warnings.len() < 8 {
            self.warnings.push(msg);
        }
    }

    fn name_bytes(&self, a: &Attrs<'d>) -> Option<&'d [u8]> {
        a.name().bytes(self.dwarf, self.unit)
    }

    fn name(&mut self, a: &Attrs<'d>) -> u32 {
        match a.name() {
            Str::Strp(strp) => {
                let (dwarf, unit) = (self.dwarf, self.unit);
                self.b
                    .strings
                    .add_strp(strp, || a.name().bytes(dwarf, unit))
            }
            _ => self.name_bytes(a).map_or(0, |n| self.b.add_str(n)),
        }
    }

    /// Records that the DIE at `off` is local type `id`, and returns `id`.
    fn bind(&mut self, off: u32, id: TypeId) -> TypeId {
        self.map.push((off, id));
        id
    }

    fn push_type(&mut self, off: u32, t: Type) -> (usize, TypeId) {
        let id = self.b.add_type(t);
        self.bind(off, id);
        (id as usize - 1, id)
    }

    /// Reads one DIE: a child of the open aggregate, or a DIE of its own
    /// (one method per tag, in `convert/type_dies.rs`), opened for its
    /// children if it may have some.
    /// Converts `die` after closing the aggregates it is not inside of;
    /// whether its children are to be skipped: an inlined instance or a
    /// call site describes code, not types (about a tenth of a kernel's
    /// DIEs are in such subtrees).
    fn enter(&mut self, die: &Die<'d>) -> bool {
        while self.stack.last().is_some_and(|(d, _)| *d >= die.depth) {
            self.close();
        }
        let skip = die.has_children
            && matches!(
                die.tag,
                dw::DW_TAG_inlined_subroutine | dw::DW_TAG_call_site | dw::DW_TAG_GNU_call_site
            );
        self.die(die);
        skip
    }

    fn die(&mut self, die: &Die<'d>) {
        let depth = die.depth;
        let Ok(off) = u32::try_from(die.offset) else {
            return;
        };
        let tag = die.tag;
        if let Some(form) = die.attrs.foreign_type() {
            self.warn_once(format!(
                "DIE {off:#x}: unsupported type reference (form {form})"
            ));
        }
        let parent_is_open = self.stack.last().is_some_and(|(d, _)| *d == depth - 1);
        // Children that belong to the open aggregate.
        if parent_is_open {
            match tag {
                dw::DW_TAG_member => return self.member(die),
                dw::DW_TAG_enumerator => return self.enumerator(die),
                dw::DW_TAG_formal_parameter | dw::DW_TAG_unspecified_parameters
                    if matches!(self.stack.last(), Some((_, Open::Proto { .. }))) =>
                {
                    return self.param(die)
                }
                dw::DW_TAG_subrange_type
                    if matches!(self.stack.last(), Some((_, Open::Array { .. }))) =>
                {
                    return self.subrange(die)
                }
                DW_TAG_LLVM_ANNOTATION | DW_TAG_GNU_ANNOTATION => return self.annotation(die),
                _ => {}
            }
        }
        let has_children = die.has_children;
        let a = &die.attrs;
        let open = match tag {
            dw::DW_TAG_base_type => {
                self.base_type_die(off, a);
                None
            }
            dw::DW_TAG_pointer_type
            | dw::DW_TAG_const_type
            | dw::DW_TAG_volatile_type
            | dw::DW_TAG_restrict_type => self.pointer_die(off, tag, a),
            dw::DW_TAG_typedef => Some(self.typedef_die(off, a)),
            dw::DW_TAG_structure_type | dw::DW_TAG_class_type | dw::DW_TAG_union_type => {
                Some(self.struct_die(off, tag, a))
            }
            dw::DW_TAG_enumeration_type => Some(self.enum_die(off, a)),
            dw::DW_TAG_array_type => Some(self.array_die(off, a)),
            dw::DW_TAG_subroutine_type => Some(self.subroutine_die(off, a)),
            dw::DW_TAG_unspecified_type
            | dw::DW_TAG_ptr_to_member_type
            | dw::DW_TAG_reference_type
            | dw::DW_TAG_rvalue_reference_type
            | dw::DW_TAG_string_type => {
                // No BTF equivalent: references to it become void.
                self.bind(off, 0);
                Some(Open::Other { var: None })
            }
            dw::DW_TAG_atomic_type | dw::DW_TAG_immutable_type | dw::DW_TAG_shared_type => {
                self.aliases.push((off, a.ty().unwrap_or(0)));
                Some(Open::Other { var: None })
            }
            dw::DW_TAG_variable if depth == 1 && self.opts.collect_vars => {
                let var = self.variable(off, a);
                Some(Open::Other { var })
            }
            dw::DW_TAG_member
            | dw::DW_TAG_enumerator
            | dw::DW_TAG_formal_parameter
            | dw::DW_TAG_unspecified_parameters
            | dw::DW_TAG_subrange_type
            | dw::DW_TAG_subprogram
            | dw::DW_TAG_lexical_block
            | dw::DW_TAG_inlined_subroutine
            | dw::DW_TAG_variable
            | dw::DW_TAG_label
            | dw::DW_TAG_call_site
            | dw::DW_TAG_call_site_parameter
            | dw::DW_TAG_GNU_call_site
            | dw::DW_TAG_GNU_call_site_parameter
            | dw::DW_TAG_inheritance
            | dw::DW_TAG_namespace
            | dw::DW_TAG_imported_declaration
            | dw::DW_TAG_imported_module
            | dw::DW_TAG_imported_unit
            | dw::DW_TAG_template_type_parameter
            | dw::DW_TAG_template_value_parameter
            | dw::DW_TAG_dwarf_procedure
            | dw::DW_TAG_constant
            | dw::DW_TAG_GNU_template_parameter_pack
            | dw::DW_TAG_GNU_formal_parameter_pack
            | DW_TAG_LLVM_ANNOTATION
            | DW_TAG_GNU_ANNOTATION => Some(Open::Other { var: None }),
            _ => {
                self.unknown_tags += 1;
                if self.unknown_tags == 1 {
                    self.warn_once(format!("DIE {off:#x}: unknown tag {:#x} skipped", tag.0));
                }
                Some(Open::Other { var: None })
            }
        };
        if let Some(open) = open {
            if has_children {
                self.stack.push((depth, open));
            } else {
                self.stack.push((depth, open));
                self.close();
            }
        }
    }

    fn annotation(&mut self, die: &Die<'d>) {
        let a = &die.attrs;
        let value = match &a.const_value() {
            Some(Const::Str(s)) => match s.bytes(self.dwarf, self.unit) {
                Some(s) => s,
                None => return,
            },
            _ => return,
        };
        let kind = self.name_bytes(a).unwrap_or(b"");
        let value = self.b.add_str(value);
        let depth = self.stack.last().map_or(0, |(d, _)| *d);
        let member_target = self.member_tags_for.filter(|&(_, _, d)| d == depth);
        match self.stack.last_mut() {
            Some((_, Open::Ptr { tags, .. })) if kind == b"btf_type_tag" => tags.push(value),
            Some((_, Open::Struct { idx, .. })) | Some((_, Open::Typedef { idx }))
                if kind == b"btf_decl_tag" =>
            {
                self.decl_tags.push(DeclTagFix {
                    target: TypeTarget::Type(*idx),
                    component: -1,
                    value,
                })
            }
            Some((_, Open::Other { var: Some(v) })) if kind == b"btf_decl_tag" => {
                self.decl_tags.push(DeclTagFix {
                    target: TypeTarget::Var(*v),
                    component: -1,
                    value,
                })
            }
            Some((_, Open::Other { var: None })) if kind == b"btf_decl_tag" => {
                if let Some((idx, component, _)) = member_target {
                    self.decl_tags.push(DeclTagFix {
                        target: TypeTarget::Type(idx),
                        component,
                        value,
                    })
                }
            }
            _ => {}
        }
    }

    /// The DW_TAG_GNU_annotation chain starting at unit offset `first`, as
    /// GCC 16 writes it for btf_type_tag and btf_decl_tag: each DIE names
    /// its kind (DW_AT_name) and value (DW_AT_const_value) and points at the
    /// next with its own DW_AT_GNU_annotation. Values are interned; the walk
    /// stops at anything else, and after [`MAX_ANNOTATION_CHAIN`] DIEs (a
    /// chain that loops in corrupt input).
    fn gnu_chain(&mut self, first: u32) -> Vec<(Annotation, u32)> {
        let mut out = Vec::new();
        let mut next = Some(first);
        while let Some(off) = next.take() {
            if out.len() >= MAX_ANNOTATION_CHAIN {
                self.warn_once(format!(
                    "DIE {off:#x}: DW_AT_GNU_annotation chain longer than {MAX_ANNOTATION_CHAIN}"
                ));
                break;
            }
            let Ok(mut entries) = self.unit.entries_at_offset(UnitOffset(off as usize)) else {
                break;
            };
            let Ok(Some((_, e))) = entries.next_dfs() else {
                break;
            };
            if e.tag() != DW_TAG_GNU_ANNOTATION {
                break;
            }
            let string = |at: dw::DwAt| -> Option<&'d [u8]> {
                let v = e.attr_value(at).ok()??;
                self.dwarf.attr_string(self.unit, v).ok().map(|r| r.slice())
            };
            let kind = match string(dw::DW_AT_name) {
                Some(b"btf_type_tag") => Annotation::TypeTag,
                Some(b"btf_decl_tag") => Annotation::DeclTag,
                _ => Annotation::Other,
            };
            let Some(value) = string(dw::DW_AT_const_value) else {
                break;
            };
            next = match e.attr_value(DW_AT_GNU_ANNOTATION) {
                Ok(Some(AttributeValue::UnitRef(r))) => u32::try_from(r.0).ok(),
                _ => None,
            };
            let value = self.b.add_str(value);
            out.push((kind, value));
        }
        out
    }

    fn variable(&mut self, off: u32, a: &Attrs<'d>) -> Option<usize> {
        let mut var = UnitVar {
            name: self.name(a),
            addr: 0,
            ty: a.ty().unwrap_or(0),
            external: a.external(),
            decl_tags: Vec::new(),
        };
        let mut pending = None;
        if let Some(spec) = a.specification() {
            if !self.complete_var(&mut var, spec, a.ty().is_none()) {
                pending = Some(spec);
            }
        }
        if a.declaration() || self.imported {
            self.var_decls.push((off, var));
            return None;
        }
        let addr = a.location()?;
        var.addr = addr;
        self.vars.push(var);
        if let Some(spec) = pending {
            self.var_specs
                .push((self.vars.len() - 1, spec, a.ty().is_none()));
        }
        Some(self.vars.len() - 1)
    }

    /// Completes `var` from the declaration at `spec`, if it was read.
    fn complete_var(&self, var: &mut UnitVar, spec: u32, typeless: bool) -> bool {
        let Ok(i) = self.var_decls.binary_search_by_key(&spec, |d| d.0) else {
            return false;
        };
        let Some((_, decl)) = self.var_decls.get(i) else {
            return false;
        };
        if var.name == 0 {
            var.name = decl.name;
        }
        if typeless {
            var.ty = decl.ty;
        }
        var.external |= decl.external;
        true
    }

    /// Completes the definitions whose declarations were in partial units.
    fn complete_pending_vars(&mut self) {
        for (i, spec, typeless) in std::mem::take(&mut self.var_specs) {
            let Some(mut var) = self.vars.get(i).cloned() else {
                continue;
            };
            self.complete_var(&mut var, spec, typeless);
            if let Some(slot) = self.vars.get_mut(i) {
                *slot = var;
            }
        }
    }

    fn close(&mut self) {
        let Some((depth, open)) = self.stack.pop() else {
            return;
        };
        if self.member_tags_for.is_some_and(|(_, _, d)| d == depth) {
            self.member_tags_for = None;
        }
        match open {
            Open::Struct {
                idx, start, gnu, ..
            } => {
                // pahole reads the struct's own GCC chain after its members.
                if let Some(first) = gnu {
                    for (kind, value) in self.gnu_chain(first) {
                        if kind == Annotation::DeclTag {
                            self.decl_tags.push(DeclTagFix {
                                target: TypeTarget::Type(idx),
                                component: -1,
                                value,
                            });
                        }
                    }
                }
                let list = take_from(&mut self.members, start, &mut self.arena);
                if let Some(Type {
                    data: TypeData::Struct { members, .. } | TypeData::Union { members, .. },
                    ..
                }) = self.b.types.get_mut(idx)
                {
                    *members = list;
                }
            }
            Open::Enum {
                idx,
                signed,
                is64,
                start,
            } => {
                let Some(t) = self.b.types.get_mut(idx) else {
                    return;
                };
                match &mut t.data {
                    TypeData::Enum64 { values, .. } if is64 => {
                        *values = self.values64.split_off(start.min(self.values64.len()));
                        t.kind_flag = signed;
                    }
                    TypeData::Enum { values, .. } if !is64 => {
                        *values = take_from(&mut self.values, start, &mut self.arena);
                    }
                    _ => {}
                }
            }
            Open::Proto { idx, start } => {
                let list = take_from(&mut self.params, start, &mut self.arena);
                if let Some(Type {
                    data: TypeData::FuncProto { params, .. },
                    ..
                }) = self.b.types.get_mut(idx)
                {
                    *params = list;
                }
            }
            Open::Array { idx, start } => self.close_array(idx, start),
            Open::Ptr { idx, tags, gnu } => {
                // clang's children are in source order: ptr -> last tag ->
                // ... -> first tag -> pointee, as pahole. GCC's chain starts
                // at the tag nearest the pointer and goes on up to the last
                // btf_type_tag: ptr -> first -> ... -> last -> pointee.
                let tags = if !tags.is_empty() {
                    tags
                } else if let Some(first) = gnu {
                    let mut chain: Vec<u32> = self
                        .gnu_chain(first)
                        .into_iter()
                        .take_while(|&(kind, _)| kind == Annotation::TypeTag)
                        .map(|(_, value)| value)
                        .collect();
                    chain.reverse();
                    chain
                } else {
                    return;
                };
                if tags.is_empty() {
                    return;
                }
                let Some(Type {
                    data: TypeData::Ptr { ty },
                    ..
                }) = self.b.types.get(idx)
                else {
                    return;
                };
                let mut target = *ty;
                for value in tags {
                    let id = self
                        .b
                        .add_type(Type::new(value, TypeData::TypeTag { ty: target }));
                    target = id | LOCAL;
                }
                if let Some(Type {
                    data: TypeData::Ptr { ty },
                    ..
                }) = self.b.types.get_mut(idx)
                {
                    *ty = target;
                }
            }
            _ => {}
        }
    }

    /// One ARRAY per dimension, as clang and pahole >= 1.25 encode them:
    /// `int a[2][3]` is the DIE's ARRAY of 2 elements of a new ARRAY of 3
    /// ints (pahole 1.24 flattened it into one ARRAY of 6). The inner
    /// arrays go after the unit's DIE types, as pointer tags do.
    fn close_array(&mut self, idx: usize, start: usize) {
        let start = start.min(self.dims.len());
        let Some(Type {
            data: TypeData::Array(outer),
            ..
        }) = self.b.types.get(idx)
        else {
            self.dims.truncate(start);
            return;
        };
        let mut elem = outer.elem;
        for i in (start + 1..self.dims.len()).rev() {
            let id = self.b.add_type(Type::new(
                0,
                TypeData::Array(Array {
                    elem,
                    index: INDEX_PENDING,
                    nelems: self.dims[i],
                }),
            ));
            elem = id | LOCAL;
        }
        let nelems = self.dims.get(start).copied().unwrap_or(0);
        self.dims.truncate(start);
        if let Some(Type {
            data: TypeData::Array(outer),
            ..
        }) = self.b.types.get_mut(idx)
        {
            outer.elem = elem;
            outer.nelems = nelems;
        }
    }

    /// The local id a reference of the pass stands for, with the unit's
    /// type DIEs all read.
    fn resolve(
        &self,
        lookup: impl Fn(u32) -> Option<TypeId>,
        v: u32,
        unresolved: &mut u32,
    ) -> TypeId {
        if v == 0 {
            return 0;
        }
        if v == INDEX_PENDING {
            return self.int_id.unwrap_or(0);
        }
        if v & LOCAL != 0 {
            return v & !LOCAL;
        }
        match lookup(v) {
            Some(id) => id,
            None => {
                *unresolved += 1;
                0
            }
        }
    }

    fn finish(
        mut self,
        unit_offset: u64,
        subprograms: Subprograms<'d>,
        key_end: u64,
        partial_units: Known,
    ) -> Result<ConvertedUnit<'a, 'd>> {
        if self.needs_index && self.int_id.is_none() {
            // pahole adds a signed 32-bit "int" for array indexes when the
            // unit has none.
            let name = self.b.add_str(b"int");
            let id = self.b.add_type(Type::new(
                name,
                TypeData::Int {
                    size: 4,
                    encoding: BTF_INT_SIGNED,
                    offset: 0,
                    bits: 32,
                },
            ));
            self.int_id = Some(id);
        }
        // DIEs come in offset order, so `map` is sorted already; aliases too.
        // Partial units (partial_units.rs) are read after the unit, in the
        // order of their keys, which come past the unit's.
        debug_assert!(self.map.windows(2).all(|w| w[0].0 < w[1].0));
        let die_types = DieTypes {
            map: std::mem::take(&mut self.map),
            aliases: std::mem::take(&mut self.aliases),
        };
        let mut unresolved = 0u32;
        let mut types = std::mem::take(&mut self.b.types);
        die_types.resolve_all(key_end as usize, |index| {
            for t in &mut types {
                t.for_each_ref_mut(|r| {
                    *r = self.resolve(|off| index.lookup(off), *r, &mut unresolved)
                });
            }
        });
        self.b.types = types;
        let mut vars = std::mem::take(&mut self.vars);
        for v in &mut vars {
            v.ty = if v.ty == 0 {
                0
            } else {
                die_types.lookup(v.ty).unwrap_or(0)
            };
        }
        self.vars = vars;
        self.apply_bitfields(&die_types, &mut unresolved);
        self.add_decl_tags();
        if unresolved > 0 {
            self.warnings.push(format!(
                "unit at {unit_offset:#x}: {unresolved} type references to DIEs that are not types (encoded as void)"
            ));
        }
        if self.unknown_tags > 1 {
            self.warnings.push(format!(
                "unit at {unit_offset:#x}: {} DIEs with unknown tags skipped",
                self.unknown_tags
            ));
        }
        Ok(ConvertedUnit {
            builder: self.b,
            types: UnitTypes {
                unit_offset,
                types: die_types,
                partial_units,
            },
            vars: self.vars,
            subprograms,
            warnings: self.warnings,
        })
    }

    /// Bitfield members: kind_flag and size<<24 on each, and the bit
    /// offsets DWARF 4 gives from the storage unit's other end.
    fn apply_bitfields(&mut self, die_types: &DieTypes, unresolved: &mut u32) {
        // Struct members that are bitfields: kind_flag and size<<24.
        for &(idx, member, bits) in &self.bitfields {
            if let Some(t) = self.b.types.get_mut(idx) {
                t.kind_flag = true;
                if let TypeData::Struct { members, .. } | TypeData::Union { members, .. } =
                    &mut t.data
                {
                    if let Some(m) = members.get_mut(member) {
                        m.offset = (m.offset & 0x00ff_ffff) | (bits << 24);
                    }
                }
            }
        }
        // Kind-flag offsets hold 24 bits; larger ones cannot be expressed.
        for fix in std::mem::take(&mut self.bitfix) {
            let storage = fix.storage_bytes.unwrap_or_else(|| {
                let ty = self.resolve(|off| die_types.lookup(off), fix.ty, unresolved);
                self.b.type_size(ty)
            });
            // Little-endian: DWARF 4 counts from the storage unit's most
            // significant bit; BTF from the struct's first bit.
            let from_lsb = (storage as i64 * 8) - fix.dw_bit_offset - fix.bits as i64;
            let bit = (fix.byte_offset as i64 * 8 + from_lsb).max(0) as u32;
            if let Some(t) = self.b.types.get_mut(fix.idx) {
                if let TypeData::Struct { members, .. } | TypeData::Union { members, .. } =
                    &mut t.data
                {
                    if let Some(m) = members.get_mut(fix.member) {
                        m.offset = (m.offset & 0xff00_0000) | (bit & 0x00ff_ffff);
                    }
                }
            }
        }
    }

    /// The btf_decl_tag DIEs read, as DECL_TAGs of their types or as tags
    /// of their variables.
    fn add_decl_tags(&mut self) {
        for fix in std::mem::take(&mut self.decl_tags) {
            match fix.target {
                TypeTarget::Type(idx) => {
                    self.b.add_type(Type::new(
                        fix.value,
                        TypeData::DeclTag {
                            ty: idx as TypeId + 1,
                            component_idx: fix.component,
                        },
                    ));
                }
                TypeTarget::Var(v) => {
                    if let Some(var) = self.vars.get_mut(v) {
                        var.decl_tags.push(fix.value);
                    }
                }
            }
        }
    }
}

/// The items of a scratch list from `start` on, moved into `arena`
/// (aggregates close in the reverse order they opened, so `start` is within
/// the list; an empty list if it is not).
fn take_from<T: Copy>(scratch: &mut Vec<T>, start: usize, arena: &mut Arena) -> Records<T> {
    let list = scratch
        .get(start..)
        .map_or_else(Records::default, |items| arena.alloc(items));
    scratch.truncate(start);
    list
}
