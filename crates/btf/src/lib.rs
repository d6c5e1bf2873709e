//! BTF, the BPF Type Format: read, write, build, validate, dedup and dump.
//!
//! [`Btf`] holds one BTF object: its own types and strings and, for split BTF
//! (kernel modules), an [`Arc`] to the base it extends. Type ids and string
//! offsets are global: a split BTF's first id is the base's type count, its
//! first string offset the base's string length, exactly as in libbpf.
//!
//! By what a user does:
//! - the format: [`format`](mod@format) (the uapi constants), [`Kind`], [`types`]
//!   ([`Type`], [`TypeData`] and the records);
//! - reading: [`load_file`] (raw, ELF `.BTF`, compressed modules,
//!   `/sys/kernel/btf/*` with its base), [`parse_any`], [`Btf::parse`] and
//!   [`Btf::parse_split`];
//! - asking: [`query`] (sizes, modifiers skipped, lookup by name and kind,
//!   members with bit offsets, enumerators) and [`addr_tag`] (btfkit's
//!   `addr=` tags);
//! - building: [`builder`];
//! - checking and transforming: [`validate`], [`dedup`],
//!   [`base_duplicates`] (base types a split BTF re-emits), [`dump`], and
//!   writing with [`Btf::to_bytes`].
//!
//! [`encoder_hooks`] is for btfkit's DWARF encoder only.

// Other projects use this crate: every public item says what it is.
#![warn(missing_docs)]

pub mod addr_tag;
pub mod base_duplicates;
pub mod builder;
mod bytes;
pub mod cdecl;
pub mod dedup;
pub mod diff;
pub mod distill;
pub mod dump;
pub mod encoder_hooks;
pub mod error;
pub mod format;
mod hugepages;
pub mod kernel;
mod kind;
mod load;
pub mod loaded;
pub mod query;
mod read;
mod records;
mod strings;
pub mod types;
pub mod validate;
mod write;

use std::sync::{Arc, OnceLock};

pub use error::{Error, Result};
pub use kind::Kind;
pub use load::{default_base, elf_btf_section, load_file, parse_any, read_blob, SYSFS_VMLINUX};
use strings::StringIndex;
pub use types::{
    Arena, Array, Enum64Value, EnumValue, Loc, Member, Param, Records, Type, TypeData, TypeId,
    VarSecinfo,
};

/// The byte order of a BTF blob (its magic says which).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    /// Little-endian: magic bytes `9f eb`.
    Little,
    /// Big-endian: magic bytes `eb 9f`.
    Big,
}

impl Endian {
    /// Whether this is the byte order of the machine this runs on.
    pub(crate) fn is_host(self) -> bool {
        self == if cfg!(target_endian = "little") {
            Endian::Little
        } else {
            Endian::Big
        }
    }

    /// A 32-bit word of a blob in this byte order.
    pub(crate) fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }
}

/// What the header says beyond the section offsets, kept for a byte-exact rewrite.
#[derive(Clone, Debug)]
pub struct Header {
    /// The blob's byte order.
    pub endian: Endian,
    /// The header's flags byte (0 in every BTF written so far).
    pub flags: u8,
    /// The header's length: 24, or 32 with the layout section.
    pub hdr_len: u32,
    /// Header bytes past the classic 24 (layout_off/len and anything newer).
    pub extra: Vec<u8>,
    /// Offset of the type section after the header.
    pub type_off: u32,
    /// Offset of the string section after the header.
    pub str_off: u32,
    /// Offset of the layout section after the header (0: none).
    pub layout_off: u32,
    /// The raw layout section (hdr_len >= 32), carried through unchanged;
    /// [`Btf::kind_layouts`] reads it.
    pub layout: Vec<u8>,
}

impl Default for Header {
    fn default() -> Self {
        Header {
            endian: Endian::Little,
            flags: 0,
            hdr_len: format::BTF_HEADER_LEN,
            extra: Vec::new(),
            type_off: 0,
            str_off: 0,
            layout_off: 0,
            layout: Vec::new(),
        }
    }
}

/// One BTF object. See the crate documentation for ids and offsets.
#[derive(Clone, Debug)]
pub struct Btf {
    header: Header,
    base: Option<Arc<Btf>>,
    /// Own types; the type with id `start_id + i` is `types[i]`.
    types: Vec<Type>,
    /// Own string section, starting at global offset `start_str_off`
    /// (mapped from the file it was loaded from, when it could be).
    strings: bytes::Bytes,
    start_id: TypeId,
    start_str_off: u32,
    /// An index of the own strings, built on the first lookup
    /// ([`Btf::find_str`], or `add_str` on a split object over this one), so
    /// that readers pay nothing for it. [`Btf::find_strs`] does without:
    /// the base of a split encode is never indexed.
    str_index: OnceLock<StringIndex>,
    /// What the parser learnt of the own types, while they are as parsed.
    facts: Option<Facts>,
}

/// Facts about a BTF's own types gathered while parsing or building them
/// (no extra pass), so that a dedup does not walk the types again for them
/// (a split BTF's base: ~100,000 types; an encode's: millions). Kept up to
/// date by [`Btf::add_type`], dropped by any other change to the types.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Facts {
    /// Every type id the own types refer to is below the type count, and
    /// no type has a kind whose references are unknown.
    pub refs_valid: bool,
    /// Some DECL_TAG has component_idx -1 (the form of an `addr=` tag).
    pub decl_tags: bool,
}

impl Facts {
    /// The facts of `types` whose largest reference is `max_ref`, ids from
    /// `start_id`. Reads each type's kind, not its members.
    fn of(types: &[Type], start_id: TypeId, max_ref: TypeId) -> Facts {
        let mut facts = Facts {
            refs_valid: max_ref < start_id + types.len() as TypeId,
            decl_tags: false,
        };
        for t in types {
            facts.note_kind(t);
        }
        facts
    }

    /// Folds in the kind of `t`: unknown, or an `addr=`-form DECL_TAG.
    pub(crate) fn note_kind(&mut self, t: &Type) {
        match t.data {
            TypeData::Unknown { .. } => self.refs_valid = false,
            TypeData::DeclTag {
                component_idx: -1, ..
            } => self.decl_tags = true,
            _ => {}
        }
    }
}

impl Default for Btf {
    fn default() -> Self {
        Btf::new()
    }
}

impl Btf {
    /// An empty base BTF with only the empty string.
    pub fn new() -> Btf {
        let mut btf = Btf::with_header(Header::default(), None);
        btf.strings.to_mut().push(0);
        btf
    }

    /// An empty split BTF over `base`.
    pub fn new_split(base: Arc<Btf>) -> Btf {
        let mut btf = Btf::with_header(Header::default(), Some(base));
        // libbpf and pahole start a split string section with "" too, so that
        // offset `start_str_off` is a valid empty name.
        btf.strings.to_mut().push(0);
        btf
    }

    fn with_header(header: Header, base: Option<Arc<Btf>>) -> Btf {
        let (start_id, start_str_off) = match &base {
            Some(b) => (b.type_count(), b.strings_end()),
            None => (1, 0),
        };
        Btf {
            header,
            base,
            types: Vec::new(),
            strings: bytes::Bytes::default(),
            start_id,
            start_str_off,
            str_index: OnceLock::new(),
            facts: None,
        }
    }

    /// The header as read (or as it will be written).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The layout section as records, indexed by kind: this object's own,
    /// or for split BTF without one its base's (libbpf shares it so too).
    /// Empty when neither has one.
    pub fn kind_layouts(&self) -> Vec<format::KindLayout> {
        if self.header.layout.is_empty() {
            return self
                .base
                .as_ref()
                .map(|b| b.kind_layouts())
                .unwrap_or_default();
        }
        self.header
            .layout
            .chunks_exact(format::BTF_LAYOUT_LEN)
            .map(|r| {
                let flags = [r[2], r[3]];
                format::KindLayout {
                    info_sz: r[0],
                    elem_sz: r[1],
                    flags: match self.header.endian {
                        Endian::Little => u16::from_le_bytes(flags),
                        Endian::Big => u16::from_be_bytes(flags),
                    },
                }
            })
            .collect()
    }

    /// Gives this object a layout section describing every kind this crate
    /// knows (libbpf's `add_layout`), and the 32-byte header that points at
    /// it; `false` removes it (the header keeps its length).
    pub fn set_layout(&mut self, on: bool) {
        self.header.layout.clear();
        if on {
            self.header.hdr_len = self.header.hdr_len.max(format::BTF_HEADER_LAYOUT_LEN);
            let endian = self.header.endian;
            for kind in 0..=Kind::MAX_KNOWN.as_u8() {
                let l = format::known_layout(Kind::new(kind)).unwrap_or(format::KindLayout {
                    info_sz: 0,
                    elem_sz: 0,
                    flags: 0,
                });
                self.header.layout.push(l.info_sz);
                self.header.layout.push(l.elem_sz);
                self.header.layout.extend_from_slice(&match endian {
                    Endian::Little => l.flags.to_le_bytes(),
                    Endian::Big => l.flags.to_be_bytes(),
                });
            }
        }
    }

    /// The base of split BTF; `None` for base BTF.
    pub fn base(&self) -> Option<&Arc<Btf>> {
        self.base.as_ref()
    }

    /// Number of type ids, counting `void` and the base's types (libbpf's
    /// `btf__type_cnt`): valid ids are `0..type_count()`.
    pub fn type_count(&self) -> u32 {
        self.start_id + self.types.len() as u32
    }

    /// The first id that belongs to this object rather than its base.
    pub fn start_id(&self) -> TypeId {
        self.start_id
    }

    /// The first string offset that belongs to this object.
    pub fn start_str_off(&self) -> u32 {
        self.start_str_off
    }

    /// One past the last global string offset.
    pub fn strings_end(&self) -> u32 {
        self.start_str_off + self.strings.len() as u32
    }

    /// This object's own string section.
    pub fn string_section(&self) -> &[u8] {
        &self.strings
    }

    /// This object's own types, in id order starting at [`Btf::start_id`].
    pub fn own_types(&self) -> &[Type] {
        &self.types
    }

    /// Own types with their ids.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (TypeId, &Type)> + '_ {
        let start = self.start_id;
        self.types
            .iter()
            .enumerate()
            .map(move |(i, t)| (start + i as u32, t))
    }

    /// The type with this id, looking through to the base. `None` for `void`
    /// (id 0) and for ids out of range.
    pub fn type_by_id(&self, id: TypeId) -> Option<&Type> {
        if id >= self.start_id {
            self.types.get((id - self.start_id) as usize)
        } else {
            self.base.as_ref()?.type_by_id(id)
        }
    }

    /// Like [`Btf::type_by_id`], but an error for an id out of range.
    pub fn get(&self, id: TypeId) -> Result<&Type> {
        self.type_by_id(id).ok_or_else(|| Error::TypeId(id))
    }

    /// The own type with this id, to change in place; `None` for void, base ids and ids out of range.
    pub fn type_by_id_mut(&mut self, id: TypeId) -> Option<&mut Type> {
        let i = id.checked_sub(self.start_id)?;
        self.facts = None;
        self.types.get_mut(i as usize)
    }

    /// The raw bytes of the NUL-terminated string at a global offset.
    pub fn str_bytes(&self, off: u32) -> Result<&[u8]> {
        if off < self.start_str_off {
            return match &self.base {
                Some(b) => b.str_bytes(off),
                None => Err(Error::StringOffset(off)),
            };
        }
        let rest = self
            .strings
            .get((off - self.start_str_off) as usize..)
            .filter(|r| !r.is_empty())
            .ok_or_else(|| Error::StringOffset(off))?;
        let end = memchr::memchr(0, rest).ok_or_else(|| Error::StringUnterminated(off))?;
        Ok(&rest[..end])
    }

    /// The string at a global offset.
    pub fn str_at(&self, off: u32) -> Result<&str> {
        std::str::from_utf8(self.str_bytes(off)?).map_err(|_| Error::StringUtf8(off))
    }

    /// The name of a type, "" when anonymous.
    pub fn name_of(&self, t: &Type) -> Result<&str> {
        self.str_at(t.name_off)
    }

    /// Interns a string and returns its global offset. Strings already in the
    /// base or in this object are reused.
    pub fn add_str(&mut self, s: &str) -> u32 {
        if s.is_empty() {
            // Offset 0 is "" in every base BTF, and a split BTF sees its base's.
            return 0;
        }
        if let Some(off) = self
            .base
            .as_ref()
            .and_then(|b| b.find_str_bytes(s.as_bytes()))
        {
            return off;
        }
        self.add_own_str(s)
    }

    /// Interns `s` among this object's own strings without looking in the
    /// base: for a builder whose types go through a dedup, whose string
    /// pass maps every string the base holds to the base's offset, all of
    /// them in one pass over the base's strings ([`Btf::find_strs`])
    /// rather than with an index of the base for lookups one at a time.
    pub(crate) fn add_own_str(&mut self, s: &str) -> u32 {
        if s.is_empty() {
            return 0;
        }
        // Built once; then reached through `get_mut`, without the
        // synchronisation of putting it back into the OnceLock per string.
        self.str_index
            .get_or_init(|| StringIndex::build(&self.strings));
        let off = match self.str_index.get_mut() {
            Some(index) => index.intern(self.strings.to_mut(), s.as_bytes()),
            None => 0,
        };
        off + self.start_str_off
    }

    /// The global offset of `s` if it is already present (base first).
    pub fn find_str(&self, s: &str) -> Option<u32> {
        self.find_str_bytes(s.as_bytes())
    }

    /// [`Btf::find_str`] of bytes: the deepest base first, and within one
    /// string section the first occurrence (libbpf's `btf__find_str`). The
    /// first lookup indexes the own strings: one pass over them, after
    /// which a lookup costs a hash of `s`.
    pub fn find_str_bytes(&self, s: &[u8]) -> Option<u32> {
        if let Some(off) = self.base.as_ref().and_then(|b| b.find_str_bytes(s)) {
            return Some(off);
        }
        let index = self
            .str_index
            .get_or_init(|| StringIndex::build(&self.strings));
        Some(index.get(&self.strings, s)? + self.start_str_off)
    }

    /// [`Btf::find_str_bytes`] of each of `strs`, at once. Without an index
    /// of the own strings already, it makes none: it indexes `strs` and
    /// passes once over the own strings ([`StringIndex::locate_in`]).
    pub fn find_strs(&self, strs: &[&[u8]]) -> Vec<Option<u32>> {
        let mut found = match &self.base {
            Some(b) => b.find_strs(strs),
            None => vec![None; strs.len()],
        };
        let own = |o: u32| Some(o + self.start_str_off);
        if let Some(index) = self.str_index.get() {
            for (f, s) in found.iter_mut().zip(strs).filter(|(f, _)| f.is_none()) {
                *f = index.get(&self.strings, s).and_then(own);
            }
            return found;
        }
        let mut queries = StringIndex::default();
        let mut section = Vec::new();
        let at: Vec<Option<u32>> = strs
            .iter()
            .zip(&found)
            .map(|(s, f)| f.is_none().then(|| queries.intern(&mut section, s)))
            .collect();
        let located = queries.locate_in(&section, &self.strings);
        for (f, q) in found.iter_mut().zip(at) {
            if let Some(&o) = q.and_then(|q| located.get(q as usize)) {
                *f = (o != u32::MAX).then_some(o).and_then(own);
            }
        }
        found
    }

    /// Appends a type and returns its id.
    pub fn add_type(&mut self, t: Type) -> TypeId {
        let id = self.type_count();
        if let Some(f) = &mut self.facts {
            f.note_kind(&t);
            // A reference to a type not added yet is not vouched for.
            t.for_each_ref(|r| f.refs_valid &= r <= id);
        }
        self.types.push(t);
        id
    }

    /// This object's own types and string section, taken out (the inverse
    /// of [`Btf::set_contents`]).
    pub fn into_contents(self) -> (Vec<Type>, Vec<u8>) {
        (self.types, self.strings.into_vec())
    }

    /// Replaces this object's types and strings wholesale (dedup's output).
    pub fn set_contents(&mut self, types: Vec<Type>, strings: Vec<u8>) {
        self.set_types(types);
        self.strings = strings.into();
        self.str_index = OnceLock::new();
    }

    /// Replaces the own types, keeping the strings (and their index).
    pub(crate) fn set_types(&mut self, types: Vec<Type>) {
        self.types = types;
        self.facts = None;
    }

    /// [`Btf::set_contents`] with the index of `strings` that their builder
    /// kept (it must index every string of `strings`), so that the next
    /// [`Btf::add_str`] does not index them again.
    pub(crate) fn set_contents_indexed(
        &mut self,
        types: Vec<Type>,
        strings: Vec<u8>,
        index: StringIndex,
    ) {
        self.set_contents(types, strings);
        self.str_index = OnceLock::from(index);
    }

    /// [`Btf::set_contents_indexed`] of types whose builder saw every id
    /// they refer to as it wrote them, the largest being `max_ref`: a dedup
    /// does not walk them again to check their ids. A `max_ref` below an
    /// id they refer to would make the dedup panic rather than fail.
    pub(crate) fn set_built_contents(
        &mut self,
        types: Vec<Type>,
        strings: Vec<u8>,
        index: StringIndex,
        max_ref: TypeId,
    ) {
        let facts = Facts::of(&types, self.start_id, max_ref);
        self.set_contents_indexed(types, strings, index);
        self.facts = Some(facts);
    }
}
