//! A fast forward reader of one unit's DIEs, for the type converter (which
//! also records the unit's subprograms in the same pass, subprograms.rs),
//! the `--funcs pahole` walk (which skips subtrees through DW_AT_sibling)
//! and the type namer of funcs/ctype.rs (which reads single DIEs).
//!
//! The converter reads every DIE of the input once (14 M in Debian's
//! vmlinux) but needs only a dozen attributes of any of them. gimli's
//! generic cursor decodes each attribute into an `AttributeValue` and then
//! converts it by attribute class; here every abbreviation is compiled once
//! per unit into a [`Plan`]: runs of attributes of fixed size that the
//! converter does not want become one skip of their summed size, and the
//! wanted ones ([`Field`]) are decoded straight from their form into
//! [`Attrs`]. Forms outside the fast path (DW_FORM_indirect, supplementary
//! files, unknown forms) go through gimli's own parser at the same offset,
//! so errors and exotic producers behave exactly as with gimli.
//!
//! Invariant: after [`DieReader::next`] returns a DIE, the reader stands at
//! the next DIE (or null entry), whatever the DIE's attributes were.

use gimli::{constants as dw, AttributeSpecification, AttributeValue, Reader as _, UnitOffset};

use crate::load::{Dwarf, Reader};
use crate::partial_units::Keys;

/// The attributes the converter uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Field {
    Name,
    Type,
    ByteSize,
    BitSize,
    Encoding,
    Declaration,
    External,
    MemberLocation,
    DataBitOffset,
    BitOffset,
    ConstValue,
    Count,
    UpperBound,
    Location,
    Specification,
    Language,
    Sibling,
    AbstractOrigin,
    GnuAnnotation,
    Prototyped,
    /// Read on DW_TAG_subprogram only (see [`Fields::for_tag`]).
    DeclFile,
    DeclLine,
    CallingConvention,
    /// DW_AT_low_pc and DW_AT_ranges: whether they are there (their values
    /// are read with gimli for the few DIEs that need them).
    LowPc,
    Ranges,
    /// DW_AT_call_tail_call (DW_AT_GNU_tail_call) of a call site: the call
    /// is a jump that the caller's return leaves to the callee.
    TailCall,
    /// DW_AT_call_origin of a call site: the callee's DIE, an offset in
    /// the unit (not followed into other units).
    CallOrigin,
    /// DW_AT_call_return_pc of a call site (DW_AT_low_pc of a
    /// DW_TAG_GNU_call_site): an address, or an index in .debug_addr where
    /// [`RETURN_PC_INDEX`] is set.
    CallReturnPc,
    /// DW_AT_import of a DW_TAG_imported_unit: read for its side effect,
    /// the partial unit it names joins the conversion (partial_units.rs).
    Import,
    /// DW_AT_location of a DW_TAG_formal_parameter, as found (an expression
    /// or a location list), in [`Attrs::param_location`].
    ParamLocation,
}

/// Number of [`Field`]s.
const FIELDS: usize = Field::ParamLocation as usize + 1;

/// DW_AT_GNU_annotation (GCC 16): a reference to the first
/// DW_TAG_GNU_annotation DIE of a chain of btf_type_tag/btf_decl_tag values.
pub const DW_AT_GNU_ANNOTATION: dw::DwAt = dw::DwAt(0x2139);
/// A bit of `Attrs::present` past the fields': DW_AT_type is foreign.
const FOREIGN_TYPE: u32 = 1 << FIELDS;
/// A bit of `Attrs::present` past the fields': the call return address is
/// an index in .debug_addr (DW_FORM_addrx*).
const RETURN_PC_INDEX: u32 = 1 << (FIELDS + 1);
/// The key of an abstract origin or specification that leaves the unit
/// where no unit read with it holds the DIE: no DIE has it (keys are below
/// 2 GiB), so that what depends on it is known to be incomplete.
pub const UNFOLLOWED: u32 = u32::MAX;

/// A set of [`Field`]s: what a reader decodes (the rest is skipped).
#[derive(Clone, Copy)]
pub struct Fields(u32);

impl Fields {
    /// What the type converter reads.
    pub const TYPES: Fields = Fields(
        Field::Name.bit()
            | Field::Type.bit()
            | Field::ByteSize.bit()
            | Field::BitSize.bit()
            | Field::Encoding.bit()
            | Field::Declaration.bit()
            | Field::External.bit()
            | Field::MemberLocation.bit()
            | Field::DataBitOffset.bit()
            | Field::BitOffset.bit()
            | Field::ConstValue.bit()
            | Field::Count.bit()
            | Field::UpperBound.bit()
            | Field::Location.bit()
            | Field::Specification.bit()
            | Field::Language.bit()
            | Field::GnuAnnotation.bit()
            | Field::Import.bit()
            | Field::Sibling.bit(),
    );
    /// What a walk over functions and their parameters reads.
    pub const FUNCS: Fields = Fields(
        Field::Name.bit()
            | Field::Type.bit()
            | Field::CallingConvention.bit()
            | Field::Declaration.bit()
            | Field::Specification.bit()
            | Field::AbstractOrigin.bit()
            | Field::Sibling.bit(),
    );
    /// What the record of subprograms and their parameters reads
    /// (subprograms.rs).
    pub const SUBPROGRAMS: Fields = Fields(
        Field::Name.bit()
            | Field::Type.bit()
            | Field::Declaration.bit()
            | Field::External.bit()
            | Field::ConstValue.bit()
            | Field::Specification.bit()
            | Field::AbstractOrigin.bit()
            | Field::DeclFile.bit()
            | Field::DeclLine.bit()
            | Field::CallingConvention.bit()
            | Field::LowPc.bit()
            | Field::Ranges.bit()
            | Field::ParamLocation.bit()
            | Field::TailCall.bit()
            | Field::CallOrigin.bit()
            | Field::CallReturnPc.bit(),
    );
    /// What the type namer reads of type DIEs and their children.
    pub const NAMER: Fields = Fields(
        Field::Name.bit()
            | Field::Type.bit()
            | Field::ByteSize.bit()
            | Field::Encoding.bit()
            | Field::MemberLocation.bit()
            | Field::DataBitOffset.bit()
            | Field::Count.bit()
            | Field::UpperBound.bit()
            | Field::Prototyped.bit()
            | Field::Sibling.bit(),
    );

    /// Both sets.
    pub const fn with(self, other: Fields) -> Fields {
        Fields(self.0 | other.0)
    }

    fn has(self, f: Field) -> bool {
        self.0 & f.bit() != 0
    }

    /// The fields worth decoding on a DIE of `tag`: what only subprograms
    /// or parameters use is skipped on the many other DIEs that carry it
    /// (every member and typedef has a DW_AT_decl_file).
    fn for_tag(self, tag: dw::DwTag) -> Fields {
        let subprogram_only = Field::DeclFile.bit()
            | Field::DeclLine.bit()
            | Field::CallingConvention.bit()
            | Field::LowPc.bit()
            | Field::Ranges.bit();
        let mut f = self.0;
        if tag != dw::DW_TAG_subprogram {
            f &= !subprogram_only;
        }
        if tag != dw::DW_TAG_formal_parameter {
            f &= !Field::ParamLocation.bit();
        }
        if !is_call_site(tag) {
            f &= !(Field::TailCall.bit() | Field::CallOrigin.bit() | Field::CallReturnPc.bit());
        }
        Fields(f)
    }
}

impl Field {
    const fn bit(self) -> u32 {
        1 << self as u32
    }

    fn of(name: dw::DwAt) -> Option<Field> {
        Some(match name {
            dw::DW_AT_name => Field::Name,
            dw::DW_AT_type => Field::Type,
            dw::DW_AT_byte_size => Field::ByteSize,
            dw::DW_AT_bit_size => Field::BitSize,
            dw::DW_AT_encoding => Field::Encoding,
            dw::DW_AT_declaration => Field::Declaration,
            dw::DW_AT_external => Field::External,
            dw::DW_AT_data_member_location => Field::MemberLocation,
            dw::DW_AT_data_bit_offset => Field::DataBitOffset,
            dw::DW_AT_bit_offset => Field::BitOffset,
            dw::DW_AT_const_value => Field::ConstValue,
            dw::DW_AT_count => Field::Count,
            dw::DW_AT_upper_bound => Field::UpperBound,
            dw::DW_AT_location => Field::Location,
            dw::DW_AT_specification => Field::Specification,
            dw::DW_AT_language => Field::Language,
            dw::DW_AT_sibling => Field::Sibling,
            dw::DW_AT_abstract_origin => Field::AbstractOrigin,
            DW_AT_GNU_ANNOTATION => Field::GnuAnnotation,
            dw::DW_AT_prototyped => Field::Prototyped,
            dw::DW_AT_decl_file => Field::DeclFile,
            dw::DW_AT_decl_line => Field::DeclLine,
            dw::DW_AT_calling_convention => Field::CallingConvention,
            dw::DW_AT_low_pc => Field::LowPc,
            dw::DW_AT_ranges => Field::Ranges,
            dw::DW_AT_import => Field::Import,
            dw::DW_AT_call_tail_call | dw::DW_AT_GNU_tail_call => Field::TailCall,
            dw::DW_AT_call_origin => Field::CallOrigin,
            dw::DW_AT_call_return_pc => Field::CallReturnPc,
            _ => return None,
        })
    }
}

/// A string attribute as found: decoded to bytes only when asked for,
/// since most names are .debug_str offsets that the converter caches.
#[derive(Clone, Copy, Default, Debug)]
pub enum Str<'d> {
    #[default]
    None,
    /// DW_FORM_strp: an offset in .debug_str (the linker merges equal
    /// strings, so equal offsets are equal names).
    Strp(usize),
    /// DW_FORM_string: the bytes in .debug_info.
    Inline(&'d [u8]),
    /// DW_FORM_line_strp: an offset in .debug_line_str.
    LineStrp(usize),
    /// DW_FORM_strx*: an index in the unit's .debug_str_offsets.
    Index(usize),
    /// DW_FORM_strx* of a unit read into another unit's conversion
    /// (partial_units.rs): an index from that unit's DW_AT_str_offsets_base.
    ForeignIndex { base: usize, index: usize },
    /// DW_FORM_strp_sup, DW_FORM_GNU_strp_alt: a supplementary file's string.
    Sup(usize),
}

impl<'d> Str<'d> {
    /// The string's bytes, read from the section it lives in.
    pub fn bytes(&self, dwarf: &Dwarf<'d>, unit: &gimli::Unit<Reader<'d>>) -> Option<&'d [u8]> {
        let v = match *self {
            Str::None => return None,
            Str::Inline(s) => return Some(s),
            Str::Strp(o) => {
                // gimli's `get_str` finds the NUL a byte at a time.
                let rest = gimli::Section::reader(&dwarf.debug_str).slice().get(o..)?;
                return rest.get(..memchr::memchr(0, rest)?);
            }
            Str::LineStrp(o) => AttributeValue::DebugLineStrRef(gimli::DebugLineStrOffset(o)),
            Str::Index(i) => AttributeValue::DebugStrOffsetsIndex(gimli::DebugStrOffsetsIndex(i)),
            Str::ForeignIndex { base, index } => {
                let o = dwarf
                    .debug_str_offsets
                    .get_str_offset(
                        unit.encoding().format,
                        gimli::DebugStrOffsetsBase(base),
                        gimli::DebugStrOffsetsIndex(index),
                    )
                    .ok()?;
                AttributeValue::DebugStrRef(o)
            }
            Str::Sup(o) => AttributeValue::DebugStrRefSup(gimli::DebugStrOffset(o)),
        };
        dwarf.attr_string(unit, v).ok().map(|r| r.slice())
    }

    pub fn is_some(&self) -> bool {
        !matches!(self, Str::None)
    }
}

/// A parameter's DW_AT_location as found.
#[derive(Clone, Copy, Debug)]
pub enum Loc<'d> {
    /// An expression (exprloc or block).
    Expr(Reader<'d>),
    /// A location list at this offset (.debug_loc or .debug_loclists).
    List(usize),
    /// DW_FORM_loclistx: an index in the unit's location list offsets.
    ListIndex(usize),
}

impl<'d> Loc<'d> {
    /// As gimli spells it, for `Dwarf::attr_locations`.
    pub fn value(self) -> AttributeValue<Reader<'d>> {
        match self {
            Loc::Expr(e) => AttributeValue::Exprloc(gimli::Expression(e)),
            Loc::List(o) => AttributeValue::LocationListsRef(gimli::LocationListsOffset(o)),
            Loc::ListIndex(i) => AttributeValue::DebugLocListsIndex(gimli::DebugLocListsIndex(i)),
        }
    }
}

/// An address attribute as found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Address {
    /// DW_FORM_addr.
    At(u64),
    /// DW_FORM_addrx*: an index in the unit's .debug_addr entries.
    Index(u64),
}

/// Whether DIEs of `tag` describe calls (DWARF 5 and GNU DWARF 4).
fn is_call_site(tag: dw::DwTag) -> bool {
    matches!(tag, dw::DW_TAG_call_site | dw::DW_TAG_GNU_call_site)
}

/// A reference to another DIE as read (DW_AT_type, DW_AT_specification).
#[derive(Clone, Copy, Debug)]
enum DieRef {
    /// An offset in this unit.
    Unit(u64),
    /// An offset in .debug_info (DW_FORM_ref_addr).
    Info(u64),
    /// An offset in the alternate file's .debug_info (DW_FORM_GNU_ref_alt,
    /// DW_FORM_ref_sup4/8).
    Sup(u64),
}

/// DW_AT_const_value: enumerator values and btf tag strings.
#[derive(Clone, Copy, Debug)]
pub enum Const<'d> {
    /// A data form or udata: unsigned (DWARF leaves their sign to the
    /// type; gimli reads them unsigned too).
    Unsigned(u64),
    /// sdata or implicit_const.
    Signed(i64),
    Str(Str<'d>),
    /// A block: no use to the converter.
    Block,
}

/// The attributes of one DIE that the converter uses, with the meaning
/// gimli's attribute classes give them.
///
/// Numbers, references and flags live in `vals`, one slot per [`Field`],
/// valid when the field's bit is set in `present`: starting a DIE clears one
/// word instead of the whole struct, and a fused plan step stores a value
/// without asking which field it is for.
#[derive(Clone, Copy)]
pub struct Attrs<'d> {
    present: u32,
    vals: [u64; FIELDS],
    name: Str<'d>,
    const_value: Const<'d>,
    loc: Loc<'d>,
    /// The form of a DW_AT_type that does not point into this unit.
    foreign_type: dw::DwForm,
}

impl Default for Attrs<'_> {
    fn default() -> Self {
        Attrs {
            present: 0,
            vals: [0; FIELDS],
            name: Str::None,
            const_value: Const::Block,
            loc: Loc::List(0),
            foreign_type: dw::DwForm(0),
        }
    }
}

impl<'d> Attrs<'d> {
    fn get(&self, f: Field) -> Option<u64> {
        (self.present & f.bit() != 0).then(|| self.vals.get(f as usize).copied().unwrap_or(0))
    }

    fn set(&mut self, f: Field, v: u64) {
        if let Some(slot) = self.vals.get_mut(f as usize) {
            *slot = v;
            self.present |= f.bit();
        }
    }

    fn get_u32(&self, f: Field) -> Option<u32> {
        self.get(f).and_then(|v| u32::try_from(v).ok())
    }

    pub fn name(&self) -> Str<'d> {
        if self.present & Field::Name.bit() != 0 {
            self.name
        } else {
            Str::None
        }
    }

    /// DW_AT_type: the referenced DIE's offset in this unit.
    pub fn ty(&self) -> Option<u32> {
        self.get_u32(Field::Type)
    }

    /// The form of a DW_AT_type that does not point into this unit (type
    /// units, supplementary files, other units): the type is void.
    pub fn foreign_type(&self) -> Option<dw::DwForm> {
        (self.present & FOREIGN_TYPE != 0).then_some(self.foreign_type)
    }

    pub fn byte_size(&self) -> Option<u64> {
        self.get(Field::ByteSize)
    }

    pub fn bit_size(&self) -> Option<u64> {
        self.get(Field::BitSize)
    }

    pub fn encoding(&self) -> Option<u64> {
        self.get(Field::Encoding)
    }

    pub fn declaration(&self) -> bool {
        self.get(Field::Declaration).is_some_and(|v| v != 0)
    }

    pub fn external(&self) -> bool {
        self.get(Field::External).is_some_and(|v| v != 0)
    }

    /// A constant, or (DWARF 2) the expression DW_OP_plus_uconst N.
    pub fn member_location(&self) -> Option<u64> {
        self.get(Field::MemberLocation)
    }

    pub fn data_bit_offset(&self) -> Option<u64> {
        self.get(Field::DataBitOffset)
    }

    pub fn bit_offset(&self) -> Option<i64> {
        self.get(Field::BitOffset).map(|v| v as i64)
    }

    pub fn const_value(&self) -> Option<Const<'d>> {
        (self.present & Field::ConstValue.bit() != 0).then_some(self.const_value)
    }

    pub fn count(&self) -> Option<u64> {
        self.get(Field::Count)
    }

    pub fn upper_bound(&self) -> Option<u64> {
        self.get(Field::UpperBound)
    }

    /// The address of a location that is exactly `DW_OP_addr X`.
    pub fn location(&self) -> Option<u64> {
        self.get(Field::Location)
    }

    pub fn specification(&self) -> Option<u32> {
        self.get_u32(Field::Specification)
    }

    pub fn language(&self) -> Option<u64> {
        self.get(Field::Language)
    }

    /// DW_AT_sibling: where the DIE's next sibling starts.
    pub fn sibling(&self) -> Option<u32> {
        self.get_u32(Field::Sibling)
    }

    pub fn abstract_origin(&self) -> Option<u32> {
        self.get_u32(Field::AbstractOrigin)
    }

    /// DW_AT_GNU_annotation: the first annotation DIE of the chain.
    pub fn gnu_annotation(&self) -> Option<u32> {
        self.get_u32(Field::GnuAnnotation)
    }

    pub fn prototyped(&self) -> bool {
        self.get(Field::Prototyped).is_some_and(|v| v != 0)
    }

    /// DW_AT_decl_file: an index in the unit's line program's files.
    pub fn decl_file(&self) -> Option<u64> {
        self.get(Field::DeclFile)
    }

    pub fn decl_line(&self) -> Option<u64> {
        self.get(Field::DeclLine)
    }

    pub fn calling_convention(&self) -> Option<u64> {
        self.get(Field::CallingConvention)
    }

    /// Whether the DIE has DW_AT_low_pc or DW_AT_ranges (code).
    pub fn has_code(&self) -> bool {
        self.present & (Field::LowPc.bit() | Field::Ranges.bit()) != 0
    }

    /// Whether a call site is a tail call.
    pub fn tail_call(&self) -> bool {
        self.get(Field::TailCall).is_some_and(|v| v != 0)
    }

    /// DW_AT_call_origin of a call site in the unit's own DIEs.
    pub fn call_origin(&self) -> Option<u32> {
        self.get_u32(Field::CallOrigin)
    }

    /// The return address of a call site.
    pub fn call_return_pc(&self) -> Option<Address> {
        let v = self.get(Field::CallReturnPc)?;
        Some(if self.present & RETURN_PC_INDEX != 0 {
            Address::Index(v)
        } else {
            Address::At(v)
        })
    }

    /// A parameter's DW_AT_location.
    pub fn param_location(&self) -> Option<Loc<'d>> {
        (self.present & Field::ParamLocation.bit() != 0).then_some(self.loc)
    }
}

/// One step of an abbreviation's plan.
#[derive(Clone, Copy)]
enum Step {
    /// Skip this many bytes (attributes of fixed size, merged).
    Skip(u32),
    /// Skip one attribute of variable size.
    SkipVar(dw::DwForm),
    /// Fused fast paths: an unsigned constant of 1, 2, 4 or 8 bytes or a
    /// ULEB128 into a field that takes it as is; a flag; a flag_present.
    U8(Field),
    U16(Field),
    U32(Field),
    U64(Field),
    Uleb(Field),
    Set(Field),
    /// A DW_FORM_ref4 into a reference field.
    Ref4(Field),
    /// A DW_FORM_strp (32-bit DWARF) name.
    NameStrp4,
    /// A DW_FORM_sec_offset parameter location (a location list).
    LocOffset,
    /// Decode a wanted attribute, then give it its meaning.
    Read(Field, AttributeSpecification),
    /// Hand the attribute to gimli (rare forms).
    Gimli(Option<Field>, AttributeSpecification),
}

/// An abbreviation compiled for this reader: its steps are
/// `Plans::steps[start..end]`.
#[derive(Clone, Copy)]
struct Plan {
    tag: dw::DwTag,
    has_children: bool,
    start: u32,
    end: u32,
}

/// The plans of one reader, compiled on first use; the steps of all of them
/// in one vector (one allocation per reader, not per abbreviation).
#[derive(Default)]
struct Plans {
    /// By abbreviation code, for codes below [`DENSE_CODES`].
    dense: Vec<Option<Plan>>,
    sparse: Vec<(u64, Plan)>,
    steps: Vec<Step>,
}

impl Plans {
    /// The plan of abbreviation `code` (called for every DIE: the common
    /// case, a dense code compiled already, is kept small enough to inline).
    #[inline]
    fn get(&mut self, cur: &Cursor<'_, '_>, fields: Fields, code: u64) -> gimli::Result<Plan> {
        match usize::try_from(code).ok().and_then(|i| self.dense.get(i)) {
            Some(Some(plan)) => Ok(*plan),
            _ => self.get_slow(cur, fields, code),
        }
    }

    #[cold]
    fn get_slow(&mut self, cur: &Cursor<'_, '_>, fields: Fields, code: u64) -> gimli::Result<Plan> {
        if code >= DENSE_CODES {
            if let Some(p) = self.sparse.iter().find(|p| p.0 == code) {
                return Ok(p.1);
            }
        }
        let abbrev = cur
            .unit
            .abbreviations
            .get(code)
            .ok_or(gimli::Error::UnknownAbbreviation(code))?;
        let start = self.steps.len() as u32;
        cur.compile(abbrev, fields, &mut self.steps);
        let plan = Plan {
            tag: abbrev.tag(),
            has_children: abbrev.has_children(),
            start,
            end: self.steps.len() as u32,
        };
        if code < DENSE_CODES {
            let i = code as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, None);
            }
            if let Some(slot) = self.dense.get_mut(i) {
                *slot = Some(plan);
            }
        } else {
            self.sparse.push((code, plan));
        }
        Ok(plan)
    }

    fn steps(&self, plan: Plan) -> &[Step] {
        self.steps
            .get(plan.start as usize..plan.end as usize)
            .unwrap_or(&[])
    }
}

/// A DIE as the converter sees it.
#[derive(Clone, Copy)]
pub struct Die<'d> {
    /// Offset in the unit.
    pub offset: u64,
    pub tag: dw::DwTag,
    pub has_children: bool,
    /// Depth of the DIE: 0 for the unit DIE.
    pub depth: isize,
    pub attrs: Attrs<'d>,
}

/// Reads the DIEs of one unit in order.
pub struct DieReader<'a, 'd> {
    cur: Cursor<'a, 'd>,
    plans: Plans,
    fields: Fields,
    depth: isize,
    /// The DIE `next` returned last, decoded in place (no copies of
    /// `Attrs` per DIE).
    die: Die<'d>,
}

/// Where the reader is in the unit's bytes, and how to read them.
struct Cursor<'a, 'd> {
    unit: &'a gimli::Unit<Reader<'d>>,
    input: Reader<'d>,
    /// Offset of the unit in .debug_info.
    unit_offset: u64,
    /// Offset in the unit of the entries' first byte.
    entries_start: u64,
    entries_len: u64,
    encoding: gimli::Encoding,
    /// Added to the unit's offsets to make DIE keys (partial_units.rs): 0
    /// but for a partial unit read into another unit's conversion.
    base: u64,
    /// The unit is the alternate file's: its DW_FORM_strp are offsets in
    /// that file's .debug_str.
    alt: bool,
    /// Where references that leave the unit get their keys; without it
    /// they are foreign (void).
    imports: Option<&'a dyn Keys>,
}

/// Abbreviation codes below this are planned in a vector.
const DENSE_CODES: u64 = 1 << 16;

impl<'a, 'd> DieReader<'a, 'd> {
    /// A reader of `unit` that decodes `fields`.
    pub fn new(
        unit: &'a gimli::Unit<Reader<'d>>,
        fields: Fields,
    ) -> gimli::Result<DieReader<'a, 'd>> {
        let start = unit.header.header_size();
        let input = unit.header.range_from(UnitOffset(start)..)?;
        Ok(DieReader {
            cur: Cursor {
                unit,
                unit_offset: unit
                    .header
                    .offset()
                    .as_debug_info_offset()
                    .map_or(0, |o| o.0 as u64),
                entries_start: start as u64,
                entries_len: input.len() as u64,
                input,
                encoding: unit.encoding(),
                base: 0,
                alt: false,
                imports: None,
            },
            plans: Plans::default(),
            fields,
            depth: 0,
            die: Die {
                offset: 0,
                tag: dw::DW_TAG_null,
                has_children: false,
                depth: 0,
                attrs: Attrs::default(),
            },
        })
    }

    /// References that leave the unit get keys from `imports`, and this
    /// unit's DIEs are keyed from `base`; `alt`: the unit is the alternate
    /// file's (partial_units.rs).
    pub fn with_imports(mut self, imports: &'a dyn Keys, base: u64, alt: bool) -> Self {
        self.cur.imports = Some(imports);
        self.cur.base = base;
        self.cur.alt = alt;
        self
    }

    /// Offset in the unit of the next byte to read.
    pub fn offset(&self) -> u64 {
        self.cur.offset()
    }

    /// The next DIE, skipping null entries; `None` at the end of the unit.
    pub fn next(&mut self) -> gimli::Result<Option<&Die<'d>>> {
        loop {
            if self.cur.input.is_empty() {
                return Ok(None);
            }
            let offset = self.cur.offset();
            let code = self.cur.input.read_uleb128()?;
            if code == 0 {
                self.depth -= 1;
                continue;
            }
            let plan = self.plans.get(&self.cur, self.fields, code)?;
            self.die.attrs.present = 0;
            self.cur.run(self.plans.steps(plan), &mut self.die.attrs)?;
            self.die.offset = offset + self.cur.base;
            self.die.tag = plan.tag;
            self.die.has_children = plan.has_children;
            self.die.depth = self.depth;
            if plan.has_children {
                self.depth += 1;
            }
            return Ok(Some(&self.die));
        }
    }

    /// Moves past the children of the DIE `next` returned last: in one step
    /// when it has a DW_AT_sibling, else by reading them.
    pub fn skip_children(&mut self) -> gimli::Result<()> {
        let die = &self.die;
        if !die.has_children {
            return Ok(());
        }
        let depth = die.depth;
        if let Some(sib) = die
            .attrs
            .sibling()
            .filter(|&s| u64::from(s) > self.cur.offset())
        {
            self.cur.input = self
                .cur
                .unit
                .header
                .range_from(UnitOffset(sib as usize)..)?;
            self.depth = depth;
            return Ok(());
        }
        // No sibling pointer: read through to the null entry that ends
        // the children (not past it: `next` would read the DIE after).
        let mut scratch = Attrs::default();
        while self.depth > depth && !self.cur.input.is_empty() {
            let code = self.cur.input.read_uleb128()?;
            if code == 0 {
                self.depth -= 1;
                continue;
            }
            let plan = self.plans.get(&self.cur, self.fields, code)?;
            self.cur.run(self.plans.steps(plan), &mut scratch)?;
            if plan.has_children {
                self.depth += 1;
            }
        }
        Ok(())
    }

    /// Moves the reader to the DIE at `offset` in the unit, which `next`
    /// returns at depth 0 (its children at 1, its next sibling at 0).
    pub fn seek(&mut self, offset: u32) -> gimli::Result<()> {
        self.cur.input = self
            .cur
            .unit
            .header
            .range_from(UnitOffset(offset as usize)..)?;
        self.depth = 0;
        Ok(())
    }

    /// The DIE at `offset` in the unit (its depth unknown: 0), read
    /// without moving the reader.
    pub fn die_at(&mut self, offset: u32) -> gimli::Result<Option<Die<'d>>> {
        let saved = self.cur.input;
        self.cur.input = self
            .cur
            .unit
            .header
            .range_from(UnitOffset(offset as usize)..)?;
        let die = self.read_one(offset);
        self.cur.input = saved;
        die
    }

    fn read_one(&mut self, offset: u32) -> gimli::Result<Option<Die<'d>>> {
        let code = self.cur.input.read_uleb128()?;
        if code == 0 {
            return Ok(None);
        }
        let plan = self.plans.get(&self.cur, self.fields, code)?;
        let mut die = Die {
            offset: u64::from(offset),
            tag: plan.tag,
            has_children: plan.has_children,
            depth: 0,
            attrs: Attrs::default(),
        };
        self.cur.run(self.plans.steps(plan), &mut die.attrs)?;
        Ok(Some(die))
    }
}

impl<'d> Cursor<'_, 'd> {
    fn offset(&self) -> u64 {
        self.entries_start + self.entries_len - self.input.len() as u64
    }

    /// Appends the steps of `abbrev`'s plan to `steps`.
    fn compile(&self, abbrev: &gimli::Abbreviation, fields: Fields, steps: &mut Vec<Step>) {
        let first = steps.len();
        let fields = fields.for_tag(abbrev.tag());
        for spec in abbrev.attributes() {
            let field = match Field::of(spec.name()) {
                Some(Field::Location) if fields.has(Field::ParamLocation) => {
                    Some(Field::ParamLocation)
                }
                Some(Field::LowPc) if fields.has(Field::CallReturnPc) => Some(Field::CallReturnPc),
                f => f,
            }
            .filter(|&f| fields.has(f));
            // Fields wanted for their presence only: marked, then skipped.
            let field = match field {
                Some(f @ (Field::LowPc | Field::Ranges)) => {
                    steps.push(Step::Set(f));
                    None
                }
                f => f,
            };
            // DWARF 2 and 3 spell location list offsets as data4/data8:
            // gimli tells them from constants by the attribute.
            let offset_like = self.encoding.version < 4
                && matches!(spec.form(), dw::DW_FORM_data4 | dw::DW_FORM_data8);
            let fused = field
                .filter(|_| !offset_like)
                .and_then(|f| self.fused(f, spec.form()));
            let step = match (field, fused) {
                (_, Some(step)) => step,
                (Some(f), None) if fast_form(spec.form()) && !offset_like => Step::Read(f, *spec),
                (Some(f), None) => Step::Gimli(Some(f), *spec),
                (None, _) => match self.fixed_size(spec.form()) {
                    Some(n) => Step::Skip(n),
                    None if variable_form(spec.form()) => Step::SkipVar(spec.form()),
                    None => Step::Gimli(None, *spec),
                },
            };
            let last = if steps.len() > first {
                steps.last_mut()
            } else {
                None
            };
            match (last, step) {
                (Some(Step::Skip(n)), Step::Skip(m)) => *n += m,
                (_, Step::Skip(0)) => {}
                _ => steps.push(step),
            }
        }
    }

    /// The fused step for a field in a form, if there is one.
    fn fused(&self, f: Field, form: dw::DwForm) -> Option<Step> {
        let plain = matches!(
            f,
            Field::ByteSize
                | Field::BitSize
                | Field::Encoding
                | Field::MemberLocation
                | Field::DataBitOffset
                | Field::Count
                | Field::UpperBound
                | Field::Language
        );
        let plain = plain
            || matches!(
                f,
                Field::DeclFile | Field::DeclLine | Field::CallingConvention
            );
        let flag = matches!(
            f,
            Field::Declaration | Field::External | Field::Prototyped | Field::TailCall
        );
        let reference = matches!(
            f,
            Field::Type
                | Field::Specification
                | Field::Sibling
                | Field::AbstractOrigin
                | Field::GnuAnnotation
                | Field::Import
                | Field::CallOrigin
        );
        Some(match form {
            dw::DW_FORM_data1 if plain => Step::U8(f),
            dw::DW_FORM_data2 if plain => Step::U16(f),
            dw::DW_FORM_data4 if plain => Step::U32(f),
            dw::DW_FORM_data8 if plain => Step::U64(f),
            dw::DW_FORM_udata if plain => Step::Uleb(f),
            dw::DW_FORM_flag if flag => Step::U8(f),
            dw::DW_FORM_flag_present if flag => Step::Set(f),
            dw::DW_FORM_ref4 if reference => Step::Ref4(f),
            dw::DW_FORM_addr if f == Field::CallReturnPc && self.encoding.address_size == 8 => {
                Step::U64(f)
            }
            dw::DW_FORM_strp
                if f == Field::Name && self.encoding.format == gimli::Format::Dwarf32 =>
            {
                Step::NameStrp4
            }
            dw::DW_FORM_sec_offset if f == Field::ParamLocation => Step::LocOffset,
            _ => return None,
        })
    }

    /// Size of a form whose size does not depend on its value.
    fn fixed_size(&self, form: dw::DwForm) -> Option<u32> {
        let offset = u32::from(self.encoding.format.word_size());
        Some(match form {
            dw::DW_FORM_flag_present | dw::DW_FORM_implicit_const => 0,
            dw::DW_FORM_data1
            | dw::DW_FORM_ref1
            | dw::DW_FORM_flag
            | dw::DW_FORM_strx1
            | dw::DW_FORM_addrx1 => 1,
            dw::DW_FORM_data2 | dw::DW_FORM_ref2 | dw::DW_FORM_strx2 | dw::DW_FORM_addrx2 => 2,
            dw::DW_FORM_strx3 | dw::DW_FORM_addrx3 => 3,
            dw::DW_FORM_data4
            | dw::DW_FORM_ref4
            | dw::DW_FORM_ref_sup4
            | dw::DW_FORM_strx4
            | dw::DW_FORM_addrx4 => 4,
            dw::DW_FORM_data8 | dw::DW_FORM_ref8 | dw::DW_FORM_ref_sig8 | dw::DW_FORM_ref_sup8 => 8,
            dw::DW_FORM_data16 => 16,
            dw::DW_FORM_addr => u32::from(self.encoding.address_size),
            dw::DW_FORM_ref_addr if self.encoding.version == 2 => {
                u32::from(self.encoding.address_size)
            }
            dw::DW_FORM_strp
            | dw::DW_FORM_line_strp
            | dw::DW_FORM_sec_offset
            | dw::DW_FORM_ref_addr
            | dw::DW_FORM_strp_sup
            | dw::DW_FORM_GNU_ref_alt
            | dw::DW_FORM_GNU_strp_alt => offset,
            _ => return None,
        })
    }

    fn run(&mut self, steps: &[Step], a: &mut Attrs<'d>) -> gimli::Result<()> {
        for step in steps {
            match *step {
                Step::Skip(n) => self.input.skip(n as usize)?,
                Step::SkipVar(form) => self.skip_var(form)?,
                Step::U8(f) => a.set(f, u64::from(self.input.read_u8()?)),
                Step::U16(f) => a.set(f, u64::from(self.input.read_u16()?)),
                Step::U32(f) => a.set(f, u64::from(self.input.read_u32()?)),
                Step::U64(f) => a.set(f, self.input.read_u64()?),
                Step::Uleb(f) => a.set(f, self.input.read_uleb128()?),
                Step::Set(f) => a.set(f, 1),
                Step::Ref4(f) => {
                    let r = Value::Ref(DieRef::Unit(u64::from(self.input.read_u32()?)));
                    self.store_ref(a, f, dw::DW_FORM_ref4, &r);
                }
                Step::NameStrp4 => {
                    let o = self.input.read_u32()? as usize;
                    a.name = self.strp(o);
                    a.present |= Field::Name.bit();
                }
                Step::LocOffset => {
                    a.loc = Loc::List(self.input.read_offset(self.encoding.format)?);
                    a.present |= Field::ParamLocation.bit();
                }
                Step::Read(field, spec) => {
                    let v = self.read_fast(spec)?;
                    self.store(a, field, spec.form(), v);
                }
                Step::Gimli(field, spec) => {
                    let v = Value::from_gimli(self.read_gimli(spec)?);
                    if let Some(f) = field {
                        self.store(a, f, spec.form(), v);
                    }
                }
            }
        }
        Ok(())
    }

    fn skip_var(&mut self, form: dw::DwForm) -> gimli::Result<()> {
        match form {
            dw::DW_FORM_string => {
                self.input.read_null_terminated_slice()?;
            }
            dw::DW_FORM_block1 => {
                let n = self.input.read_u8()?;
                self.input.skip(usize::from(n))?;
            }
            dw::DW_FORM_block2 => {
                let n = self.input.read_u16()?;
                self.input.skip(usize::from(n))?;
            }
            dw::DW_FORM_block4 => {
                let n = self.input.read_u32()?;
                self.input.skip(n as usize)?;
            }
            dw::DW_FORM_block | dw::DW_FORM_exprloc => {
                let n = self.input.read_uleb128()?;
                self.input
                    .skip(usize::try_from(n).map_err(|_| gimli::Error::BadLength)?)?;
            }
            _ => self.input.skip_leb128()?,
        }
        Ok(())
    }

    /// Decodes a form of the fast path (see [`fast_form`]).
    fn read_fast(&mut self, spec: AttributeSpecification) -> gimli::Result<Value<'d>> {
        let i = &mut self.input;
        Ok(match spec.form() {
            dw::DW_FORM_ref4 => Value::Ref(DieRef::Unit(u64::from(i.read_u32()?))),
            dw::DW_FORM_strp => {
                let o = i.read_offset(self.encoding.format)?;
                Value::Str(self.strp(o))
            }
            dw::DW_FORM_data1 => Value::U(u64::from(i.read_u8()?)),
            dw::DW_FORM_data2 => Value::U(u64::from(i.read_u16()?)),
            dw::DW_FORM_data4 => Value::U(u64::from(i.read_u32()?)),
            dw::DW_FORM_data8 => Value::U(i.read_u64()?),
            dw::DW_FORM_udata => Value::U(i.read_uleb128()?),
            dw::DW_FORM_sdata => Value::S(i.read_sleb128()?),
            dw::DW_FORM_implicit_const => Value::S(spec.implicit_const_value().unwrap_or(0)),
            dw::DW_FORM_flag => Value::Flag(i.read_u8()? != 0),
            dw::DW_FORM_flag_present => Value::Flag(true),
            dw::DW_FORM_string => Value::Str(Str::Inline(i.read_null_terminated_slice()?.slice())),
            dw::DW_FORM_ref1 => Value::Ref(DieRef::Unit(u64::from(i.read_u8()?))),
            dw::DW_FORM_ref2 => Value::Ref(DieRef::Unit(u64::from(i.read_u16()?))),
            dw::DW_FORM_ref8 => Value::Ref(DieRef::Unit(i.read_u64()?)),
            dw::DW_FORM_ref_udata => Value::Ref(DieRef::Unit(i.read_uleb128()?)),
            dw::DW_FORM_exprloc | dw::DW_FORM_block => {
                let n = i.read_uleb128()?;
                let n = usize::try_from(n).map_err(|_| gimli::Error::BadLength)?;
                Value::Block(i.split(n)?.slice())
            }
            _ => Value::Other,
        })
    }

    /// Reads one attribute with gimli's parser at the current offset.
    fn read_gimli(
        &mut self,
        spec: AttributeSpecification,
    ) -> gimli::Result<AttributeValue<Reader<'d>>> {
        let at = UnitOffset(self.offset() as usize);
        let mut raw = self
            .unit
            .header
            .entries_raw(&self.unit.abbreviations, Some(at))?;
        let attr = raw.read_attribute(spec)?;
        let used = raw.next_offset().0 - at.0;
        self.input.skip(used)?;
        Ok(attr.value())
    }
}

/// Forms [`DieReader::read_fast`] decodes itself.
fn fast_form(form: dw::DwForm) -> bool {
    matches!(
        form,
        dw::DW_FORM_ref4
            | dw::DW_FORM_strp
            | dw::DW_FORM_data1
            | dw::DW_FORM_data2
            | dw::DW_FORM_data4
            | dw::DW_FORM_data8
            | dw::DW_FORM_udata
            | dw::DW_FORM_sdata
            | dw::DW_FORM_implicit_const
            | dw::DW_FORM_flag
            | dw::DW_FORM_flag_present
            | dw::DW_FORM_string
            | dw::DW_FORM_ref1
            | dw::DW_FORM_ref2
            | dw::DW_FORM_ref8
            | dw::DW_FORM_ref_udata
            | dw::DW_FORM_exprloc
            | dw::DW_FORM_block
    )
}

/// Forms of variable size that [`DieReader::skip_var`] skips.
fn variable_form(form: dw::DwForm) -> bool {
    matches!(
        form,
        dw::DW_FORM_string
            | dw::DW_FORM_block1
            | dw::DW_FORM_block2
            | dw::DW_FORM_block4
            | dw::DW_FORM_block
            | dw::DW_FORM_exprloc
            | dw::DW_FORM_udata
            | dw::DW_FORM_sdata
            | dw::DW_FORM_ref_udata
            | dw::DW_FORM_strx
            | dw::DW_FORM_GNU_str_index
            | dw::DW_FORM_addrx
            | dw::DW_FORM_GNU_addr_index
            | dw::DW_FORM_loclistx
            | dw::DW_FORM_rnglistx
    )
}

/// A decoded attribute before it is stored by its meaning.
enum Value<'d> {
    U(u64),
    S(i64),
    Flag(bool),
    Ref(DieRef),
    Str(Str<'d>),
    Block(&'d [u8]),
    /// A location list: an offset, or an index (DW_FORM_loclistx).
    LocList(usize),
    LocListIndex(usize),
    Addr(u64),
    AddrIndex(u64),
    /// Something the converter has no use for.
    Other,
}

impl<'d> Value<'d> {
    /// Maps the result of gimli's class conversion (`Attribute::value`)
    /// onto the fast path's values.
    fn from_gimli(v: AttributeValue<Reader<'d>>) -> Value<'d> {
        match v {
            AttributeValue::Data1(d) => Value::U(u64::from(d)),
            AttributeValue::Data2(d) => Value::U(u64::from(d)),
            AttributeValue::Data4(d) => Value::U(u64::from(d)),
            AttributeValue::Data8(d) | AttributeValue::Udata(d) => Value::U(d),
            AttributeValue::Sdata(d) => Value::S(d),
            AttributeValue::Flag(f) => Value::Flag(f),
            AttributeValue::Encoding(e) => Value::U(u64::from(e.0)),
            AttributeValue::Language(l) => Value::U(u64::from(l.0)),
            AttributeValue::UnitRef(o) => Value::Ref(DieRef::Unit(o.0 as u64)),
            AttributeValue::DebugInfoRef(o) => Value::Ref(DieRef::Info(o.0 as u64)),
            AttributeValue::DebugInfoRefSup(o) => Value::Ref(DieRef::Sup(o.0 as u64)),
            AttributeValue::DebugStrRef(o) => Value::Str(Str::Strp(o.0)),
            AttributeValue::String(s) => Value::Str(Str::Inline(s.slice())),
            AttributeValue::DebugLineStrRef(o) => Value::Str(Str::LineStrp(o.0)),
            AttributeValue::DebugStrOffsetsIndex(i) => Value::Str(Str::Index(i.0)),
            AttributeValue::DebugStrRefSup(o) => Value::Str(Str::Sup(o.0)),
            AttributeValue::Exprloc(e) => Value::Block(e.0.slice()),
            AttributeValue::Block(b) => Value::Block(b.slice()),
            AttributeValue::LocationListsRef(o) => Value::LocList(o.0),
            AttributeValue::DebugLocListsIndex(i) => Value::LocListIndex(i.0),
            AttributeValue::Addr(a) => Value::Addr(a),
            AttributeValue::DebugAddrIndex(i) => Value::AddrIndex(i.0 as u64),
            _ => Value::Other,
        }
    }

    /// A constant as an unsigned number (negative: none).
    fn unsigned(&self) -> Option<u64> {
        match *self {
            Value::U(u) => Some(u),
            Value::S(s) => u64::try_from(s).ok(),
            _ => None,
        }
    }
}

impl<'d> Cursor<'_, 'd> {
    /// Stores a decoded attribute in its field.
    fn store(&self, a: &mut Attrs<'d>, field: Field, form: dw::DwForm, v: Value<'d>) {
        let v = match v {
            Value::Str(Str::Strp(o)) => Value::Str(self.strp(o)),
            // Read with the converted unit, an index would name another
            // unit's string.
            Value::Str(Str::Index(index)) if self.base != 0 => Value::Str(Str::ForeignIndex {
                base: self.unit.str_offsets_base.0,
                index,
            }),
            v => v,
        };
        let value = match field {
            Field::Name => {
                if let Value::Str(s) = v {
                    a.name = s;
                    a.present |= Field::Name.bit();
                }
                return;
            }
            Field::Type
            | Field::Specification
            | Field::Sibling
            | Field::AbstractOrigin
            | Field::GnuAnnotation
            | Field::Import
            | Field::CallOrigin => {
                return self.store_ref(a, field, form, &v);
            }
            Field::ConstValue => {
                let c = match v {
                    Value::U(u) => Const::Unsigned(u),
                    Value::S(s) => Const::Signed(s),
                    Value::Str(s) => Const::Str(s),
                    Value::Block(_) => Const::Block,
                    _ => return,
                };
                a.const_value = c;
                a.present |= Field::ConstValue.bit();
                return;
            }
            Field::CallReturnPc => {
                match v {
                    Value::Addr(addr) => a.set(field, addr),
                    Value::AddrIndex(i) => {
                        a.set(field, i);
                        a.present |= RETURN_PC_INDEX;
                    }
                    _ => {}
                }
                return;
            }
            Field::ParamLocation => {
                let loc = match v {
                    Value::Block(b) => Loc::Expr(self.slice(b)),
                    Value::LocList(o) => Loc::List(o),
                    Value::LocListIndex(i) => Loc::ListIndex(i),
                    _ => return,
                };
                a.loc = loc;
                a.present |= Field::ParamLocation.bit();
                return;
            }
            Field::ByteSize
            | Field::BitSize
            | Field::Encoding
            | Field::DataBitOffset
            | Field::Count
            | Field::Language
            | Field::DeclFile
            | Field::DeclLine
            | Field::CallingConvention => v.unsigned(),
            // Marked present by their own step, never stored.
            Field::LowPc | Field::Ranges => Some(1),
            Field::Declaration | Field::External | Field::Prototyped | Field::TailCall => {
                Some(u64::from(!matches!(v, Value::Flag(false))))
            }
            Field::MemberLocation => match v {
                Value::Block(b) => plus_uconst(self.slice(b)),
                _ => v.unsigned(),
            },
            Field::BitOffset => match v {
                Value::S(s) => Some(s as u64),
                _ => v.unsigned().filter(|&u| i64::try_from(u).is_ok()),
            },
            Field::UpperBound => match v {
                // -1 is how some producers spell "no elements".
                Value::S(-1) => None,
                _ => v.unsigned(),
            },
            Field::Location => match v {
                Value::Block(b) => single_addr(self.slice(b), self.encoding.address_size),
                _ => None,
            },
        };
        if let Some(value) = value {
            a.set(field, value);
        }
    }

    /// Stores a reference: a DW_AT_type outside the unit is remembered as
    /// foreign (void); an abstract origin or specification that the
    /// reader's imports cannot follow is [`UNFOLLOWED`]; other references
    /// are dropped.
    fn store_ref(&self, a: &mut Attrs<'d>, field: Field, form: dw::DwForm, v: &Value<'d>) {
        let keyed = matches!(
            field,
            Field::Type | Field::Specification | Field::AbstractOrigin | Field::Import
        );
        let key = match self.unit_ref(v) {
            // Sibling and annotation chains are followed in this unit's
            // bytes, and call origins matched to its own subprograms: they
            // stay offsets. An annotation chain of a partial unit read into
            // another unit cannot be followed there.
            Some(off) if !keyed => (self.base == 0).then_some(u64::from(off)),
            Some(off) => Some(u64::from(off) + self.base),
            None if keyed => self.foreign_key(v).map(u64::from),
            None => None,
        };
        match key {
            Some(k) => a.set(field, k),
            None if field == Field::Type => {
                a.present |= FOREIGN_TYPE;
                a.foreign_type = form;
            }
            None if self.imports.is_some()
                && matches!(field, Field::Specification | Field::AbstractOrigin) =>
            {
                a.set(field, u64::from(UNFOLLOWED));
            }
            None => {}
        }
    }

    /// The key of a DIE of another unit (a partial unit, or a compilation
    /// unit of link-time optimized code) that `v` refers to (partial_units.rs).
    fn foreign_key(&self, v: &Value<'d>) -> Option<u32> {
        let imports = self.imports?;
        let (alt, g) = match *v {
            Value::Ref(DieRef::Info(g)) => (self.alt, g),
            // The alternate file has no alternate file of its own.
            Value::Ref(DieRef::Sup(g)) if !self.alt => (true, g),
            Value::Ref(DieRef::Sup(g)) => {
                imports.bad(true, g);
                return None;
            }
            _ => return None,
        };
        imports.key(alt, g)
    }

    /// A DW_FORM_strp string: in the alternate file's .debug_str for a
    /// unit of that file.
    fn strp(&self, o: usize) -> Str<'d> {
        if self.alt {
            Str::Sup(o)
        } else {
            Str::Strp(o)
        }
    }

    /// A reference as an offset in this unit, if it points into it.
    fn unit_ref(&self, v: &Value<'d>) -> Option<u32> {
        let len = self.entries_start + self.entries_len;
        let off = match *v {
            Value::Ref(DieRef::Unit(o)) => o,
            Value::Ref(DieRef::Info(g)) => g.checked_sub(self.unit_offset)?,
            _ => return None,
        };
        if off == 0 || off >= len {
            return None;
        }
        u32::try_from(off).ok()
    }

    fn slice(&self, b: &'d [u8]) -> Reader<'d> {
        gimli::EndianSlice::new(b, self.input.endian())
    }
}

/// DW_AT_data_member_location as an expression: DWARF 2's
/// `DW_OP_plus_uconst N`.
fn plus_uconst(mut e: Reader<'_>) -> Option<u64> {
    if e.read_u8().ok()? == dw::DW_OP_plus_uconst.0 {
        return e.read_uleb128().ok();
    }
    None
}

/// The address of a location expression that is exactly `DW_OP_addr X`
/// (a variable with a fixed address), else `None`.
fn single_addr(mut e: Reader<'_>, address_size: u8) -> Option<u64> {
    if e.read_u8().ok()? != dw::DW_OP_addr.0 {
        return None;
    }
    let addr = e.read_address(address_size).ok()?;
    e.is_empty().then_some(addr)
}
