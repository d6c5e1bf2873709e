//! A small DWARF type namer: C text, size, x86-64 argument class and a
//! structural fingerprint for the type DIEs that function prototypes use.
//!
//! Invariant: every answer is cached per unit offset, and every walk is
//! bounded (`MAX_DEPTH`), so cyclic or corrupt type graphs terminate and
//! bad references read as `?` rather than failing the whole function.

use std::hash::{Hash, Hasher};

use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHasher};

use crate::dies::{Die, DieReader, Fields, Str};
use crate::load::{Dwarf, Reader};
use crate::partial_units::Known;

/// Deeper than any sane C declarator; cuts cycles through typedefs.
const MAX_DEPTH: u32 = 32;

/// How the x86-64 SysV ABI passes a value of this type as an argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArgClass {
    /// One general-purpose register (integers, pointers, enums, aggregates of 1-8 bytes).
    Int1,
    /// Two general-purpose registers (aggregates and integers of 9-16 bytes).
    Int2,
    /// An SSE register (float, double).
    Sse,
    /// Memory: aggregates over 16 bytes, long double, unknown sizes.
    Memory,
}

/// One member of an aggregate, for naming the halves of a split argument.
#[derive(Clone, Debug)]
pub struct MemberInfo {
    /// The member's name ("" for an anonymous member).
    pub name: String,
    /// `.debug_info` offset of the member's type DIE.
    pub ty: u64,
    /// C spelling of the member's type.
    pub c: String,
    /// Where the member starts in the aggregate, in bytes.
    pub byte_offset: u64,
    /// The size of its type in bytes, through typedefs and qualifiers (0:
    /// unknown).
    pub byte_size: u64,
}

/// What a prototype needs to know about one type DIE.
#[derive(Clone, Debug)]
pub struct TypeInfo {
    /// `.debug_info` offset of the DIE, `None` for `void`.
    pub die: Option<u64>,
    /// C spelling, e.g. `struct kobject *`.
    pub c: String,
    /// Size in bytes, through typedefs and qualifiers (None: unknown, as
    /// for an incomplete struct).
    pub size: Option<u64>,
    /// How the ABI passes it as an argument.
    pub class: ArgClass,
    /// Hash of the type's structure two levels deep (through pointers into
    /// aggregates' members), so that one struct name built against different
    /// headers (the kernel's `struct elf_note_info`: fs/binfmt_elf.c is built
    /// again as fs/compat_binfmt_elf.c, with `compat_siginfo_t` for
    /// `siginfo_t`) gives different fingerprints.
    /// 0 until [`TypeNamer::shape_of`] fills it in.
    pub shape: u64,
    /// Whether the type, stripped of typedefs and qualifiers, is a struct or union.
    pub aggregate: bool,
    /// Whether the type, stripped of typedefs and qualifiers, is a pointer.
    pub pointer: bool,
}

/// What the namer uses of one DIE (read once per unit).
#[derive(Clone, Copy)]
struct TypeDie<'u> {
    tag: gimli::DwTag,
    name: Str<'u>,
    /// DW_AT_type, an offset in the unit.
    ty: Option<u32>,
    byte_size: Option<u64>,
    encoding: Option<u64>,
    prototyped: bool,
}

/// Answers [`TypeInfo`] questions about the type DIEs of one unit (and of
/// the units read with it), reading each DIE once and caching every answer.
pub struct TypeNamer<'a, 'u> {
    dwarf: &'a Dwarf<'u>,
    unit: &'a gimli::Unit<Reader<'u>>,
    base: u64,
    /// Reads the DIEs prototypes refer to, each once (`dies`).
    reader: DieReader<'a, 'u>,
    /// dwz's partial units read with the unit (partial_units.rs): where
    /// DIE keys past the unit's offsets are, with a reader of each,
    /// made on first use.
    partial: &'a Known,
    partial_units: &'a [gimli::Unit<Reader<'u>>],
    partial_readers: Vec<Option<DieReader<'a, 'u>>>,
    dies: FxHashMap<u32, Option<TypeDie<'u>>>,
    names: FxHashMap<u32, Rc<str>>,
    /// `text_hash` of the types whose walk was not cut short.
    text_hashes: FxHashMap<u32, u64>,
    shapes: FxHashMap<(u32, u32), u64>,
    members: FxHashMap<u32, Rc<[MemberInfo]>>,
    /// What `shape` needs of an aggregate's members (no C text, no sizes).
    shape_members: FxHashMap<u32, Rc<[ShapeMember<'u>]>>,
}

/// A member as `shape` hashes it.
struct ShapeMember<'u> {
    name: Option<&'u [u8]>,
    byte_offset: u64,
    ty: u32,
}

impl<'a, 'u> TypeNamer<'a, 'u> {
    /// A namer of `unit`'s types; `partial_units` are the units `partial`
    /// names, in its order.
    pub fn new(
        dwarf: &'a Dwarf<'u>,
        unit: &'a gimli::Unit<Reader<'u>>,
        partial: &'a Known,
        partial_units: &'a [gimli::Unit<Reader<'u>>],
    ) -> gimli::Result<Self> {
        let base = unit
            .header
            .offset()
            .as_debug_info_offset()
            .map_or(0, |o| o.0 as u64);
        Ok(TypeNamer {
            dwarf,
            unit,
            base,
            reader: DieReader::new(unit, Fields::NAMER)?.with_imports(partial, 0, false),
            partial,
            partial_units,
            partial_readers: Vec::new(),
            dies: FxHashMap::default(),
            names: FxHashMap::default(),
            text_hashes: FxHashMap::default(),
            shapes: FxHashMap::default(),
            members: FxHashMap::default(),
            shape_members: FxHashMap::default(),
        })
    }

    /// The DIE at `off` (`None`: unreadable).
    fn die(&mut self, off: u32) -> Option<TypeDie<'u>> {
        if let Some(d) = self.dies.get(&off) {
            return *d;
        }
        let d = self
            .reader_of(off)
            .and_then(|(r, local)| r.die_at(local).ok().flatten());
        let d = d.map(|d| TypeDie {
            tag: d.tag,
            name: d.attrs.name(),
            ty: d.attrs.ty(),
            byte_size: d.attrs.byte_size(),
            encoding: d.attrs.encoding(),
            prototyped: d.attrs.prototyped(),
        });
        self.dies.insert(off, d);
        d
    }

    /// The direct children of the DIE at `off`, in order.
    fn children(&mut self, off: u32) -> Vec<Die<'u>> {
        let mut out = Vec::new();
        let Some((reader, local)) = self.reader_of(off) else {
            return out;
        };
        if reader.seek(local).is_err() {
            return out;
        }
        match reader.next() {
            Ok(Some(d)) if d.has_children => {}
            _ => return out,
        }
        while let Ok(Some(d)) = reader.next() {
            if d.depth <= 0 {
                break;
            }
            out.push(*d);
            if reader.skip_children().is_err() {
                break;
            }
        }
        out
    }

    /// The reader of the unit that holds the DIE keyed `off`, and the
    /// DIE's offset in that unit.
    fn reader_of(&mut self, off: u32) -> Option<(&mut DieReader<'a, 'u>, u32)> {
        if (off as usize) < self.unit.header.length_including_self() {
            return Some((&mut self.reader, off));
        }
        let (i, local) = self.partial.find(off)?;
        if self.partial_readers.len() <= i {
            self.partial_readers.resize_with(i + 1, || None);
        }
        let slot = self.partial_readers.get_mut(i)?;
        if slot.is_none() {
            let span = self.partial.0.get(i)?;
            let unit = self.partial_units.get(i)?;
            let reader = DieReader::new(unit, Fields::NAMER).ok()?.with_imports(
                self.partial,
                span.base,
                span.alt,
            );
            *slot = Some(reader);
        }
        Some((slot.as_mut()?, local))
    }

    fn text(&self, s: Str<'u>) -> Option<String> {
        s.bytes(self.dwarf, self.unit)
            .map(|b| String::from_utf8_lossy(b).into_owned())
    }

    /// Everything about the type DIE at `off` (`None`: void).
    pub fn info(&mut self, off: Option<u32>) -> TypeInfo {
        let Some(off) = off else {
            return TypeInfo {
                die: None,
                c: "void".into(),
                size: Some(0),
                class: ArgClass::Int1,
                shape: 0,
                aggregate: false,
                pointer: false,
            };
        };
        let c = self.name(off);
        let (size, tag) = self.strip(off);
        let aggregate = matches!(
            tag,
            Some(gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type)
        );
        let class = classify(tag, size, self.float_like(off));
        TypeInfo {
            die: Some(self.base + u64::from(off)),
            c,
            size,
            class,
            shape: 0,
            aggregate,
            pointer: tag == Some(gimli::DW_TAG_pointer_type),
        }
    }

    /// C text of the type at `off`.
    pub fn name(&mut self, off: u32) -> String {
        self.name_rc(off).to_string()
    }

    fn name_rc(&mut self, off: u32) -> Rc<str> {
        if let Some(n) = self.names.get(&off) {
            return n.clone();
        }
        let n: Rc<str> = self.declare(Some(off), String::new(), 0).into();
        self.names.insert(off, n.clone());
        n
    }

    /// `decl` declared with the type at `off`, e.g. ("char *", "buf") -> "char *buf".
    pub fn declare_named(&mut self, off: Option<u32>, decl: &str) -> String {
        self.declare(off, decl.to_owned(), 0)
    }

    /// Members of the aggregate behind `off` (typedefs and qualifiers stripped).
    pub fn members(&mut self, off: u32) -> Vec<MemberInfo> {
        self.members_rc(off).to_vec()
    }

    fn members_rc(&mut self, off: u32) -> Rc<[MemberInfo]> {
        let mut cur = off;
        for _ in 0..MAX_DEPTH {
            let Some(e) = self.die(cur) else {
                break;
            };
            match e.tag {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_atomic_type => match e.ty {
                    Some(t) => cur = t,
                    None => break,
                },
                gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type => {
                    if let Some(m) = self.members.get(&cur) {
                        return m.clone();
                    }
                    let m: Rc<[MemberInfo]> = self.collect_members(cur).into();
                    self.members.insert(cur, m.clone());
                    return m;
                }
                _ => break,
            }
        }
        Rc::from(Vec::new())
    }

    fn collect_members(&mut self, off: u32) -> Vec<MemberInfo> {
        let mut out = Vec::new();
        for m in self.shape_members(off).iter() {
            let byte_size = self.strip(m.ty).0.unwrap_or(0);
            out.push(MemberInfo {
                name: m
                    .name
                    .map(|n| String::from_utf8_lossy(n).into_owned())
                    .unwrap_or_default(),
                ty: self.base + u64::from(m.ty),
                c: self.name(m.ty),
                byte_offset: m.byte_offset,
                byte_size,
            });
        }
        out
    }

    /// The typed members of the aggregate at `off`, in order.
    fn shape_members(&mut self, off: u32) -> Rc<[ShapeMember<'u>]> {
        if let Some(m) = self.shape_members.get(&off) {
            return m.clone();
        }
        let mut out = Vec::new();
        for e in self.children(off) {
            if e.tag != gimli::DW_TAG_member {
                continue;
            }
            let a = &e.attrs;
            let byte_offset = match (a.member_location(), a.data_bit_offset()) {
                (Some(o), _) => o,
                (None, Some(b)) => b / 8,
                (None, None) => 0,
            };
            let Some(ty) = a.ty() else { continue };
            out.push(ShapeMember {
                name: a.name().bytes(self.dwarf, self.unit),
                byte_offset,
                ty,
            });
        }
        let m: Rc<[ShapeMember<'u>]> = out.into();
        self.shape_members.insert(off, m.clone());
        m
    }

    /// Size and tag of the type behind typedefs and qualifiers.
    fn strip(&mut self, off: u32) -> (Option<u64>, Option<gimli::DwTag>) {
        let mut cur = off;
        for _ in 0..MAX_DEPTH {
            let Some(e) = self.die(cur) else {
                return (None, None);
            };
            match e.tag {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type => match e.ty {
                    Some(t) => cur = t,
                    None => return (Some(0), None),
                },
                gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type => {
                    return (Some(e.byte_size.unwrap_or(8)), Some(e.tag))
                }
                tag => return (e.byte_size, Some(tag)),
            }
        }
        (None, None)
    }

    fn float_like(&mut self, off: u32) -> bool {
        let mut cur = off;
        for _ in 0..MAX_DEPTH {
            let Some(e) = self.die(cur) else {
                return false;
            };
            match e.tag {
                gimli::DW_TAG_base_type => {
                    return e.encoding == Some(u64::from(gimli::DW_ATE_float.0))
                }
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_atomic_type => match e.ty {
                    Some(t) => cur = t,
                    None => return false,
                },
                _ => return false,
            }
        }
        false
    }

    /// C declarator composition: `decl` is what has been declared so far
    /// (a name, `*name`, `(*name)[4]`...), and the type at `off` wraps it.
    fn declare(&mut self, off: Option<u32>, decl: String, depth: u32) -> String {
        let join = |base: &str, decl: &str| {
            if decl.is_empty() {
                base.to_owned()
            } else if decl.starts_with('[') {
                format!("{base}{decl}")
            } else {
                format!("{base} {decl}")
            }
        };
        let Some(off) = off else {
            return join("void", &decl);
        };
        if depth > MAX_DEPTH {
            return join("?", &decl);
        }
        let Some(e) = self.die(off) else {
            return join("?", &decl);
        };
        let name = self.text(e.name);
        let target = e.ty;
        match e.tag {
            gimli::DW_TAG_base_type | gimli::DW_TAG_typedef | gimli::DW_TAG_unspecified_type => {
                join(name.as_deref().unwrap_or("?"), &decl)
            }
            gimli::DW_TAG_structure_type => join(&tagged("struct", name), &decl),
            gimli::DW_TAG_union_type => join(&tagged("union", name), &decl),
            gimli::DW_TAG_enumeration_type => join(&tagged("enum", name), &decl),
            gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type => {
                self.declare(target, format!("*{decl}"), depth + 1)
            }
            gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type
            | gimli::DW_TAG_atomic_type => {
                let q = match e.tag {
                    gimli::DW_TAG_const_type => "const",
                    gimli::DW_TAG_volatile_type => "volatile",
                    gimli::DW_TAG_restrict_type => "restrict",
                    _ => "_Atomic",
                };
                let on_pointer = target
                    .and_then(|t| self.die(t))
                    .is_some_and(|t| t.tag == gimli::DW_TAG_pointer_type);
                if on_pointer {
                    // `char *const p`: the qualifier sits right of the star.
                    let d = if decl.is_empty() {
                        q.to_owned()
                    } else {
                        format!("{q} {decl}")
                    };
                    self.declare(target, d, depth + 1)
                } else {
                    format!("{q} {}", self.declare(target, decl, depth + 1))
                }
            }
            gimli::DW_TAG_array_type => {
                let d = if decl.starts_with('*') {
                    format!("({decl})")
                } else {
                    decl
                };
                let dims = self.array_dims(off);
                self.declare(target, format!("{d}{dims}"), depth + 1)
            }
            gimli::DW_TAG_subroutine_type => {
                let d = if decl.starts_with('*') {
                    format!("({decl})")
                } else {
                    decl
                };
                let args = self.subroutine_args(off, e.prototyped, depth);
                self.declare(target, format!("{d}({args})"), depth + 1)
            }
            _ => join("?", &decl),
        }
    }

    fn array_dims(&mut self, off: u32) -> String {
        let mut out = String::new();
        for e in self.children(off) {
            if e.tag != gimli::DW_TAG_subrange_type {
                continue;
            }
            let count = match (e.attrs.count(), e.attrs.upper_bound()) {
                (Some(c), _) => Some(c),
                (None, Some(u)) => u.checked_add(1),
                (None, None) => None,
            };
            match count {
                Some(n) => out.push_str(&format!("[{n}]")),
                None => out.push_str("[]"),
            }
        }
        if out.is_empty() {
            out.push_str("[]");
        }
        out
    }

    fn subroutine_args(&mut self, off: u32, prototyped: bool, depth: u32) -> String {
        let mut params = Vec::new();
        let mut varargs = false;
        for e in self.children(off) {
            match e.tag {
                gimli::DW_TAG_formal_parameter => params.push(e.attrs.ty()),
                gimli::DW_TAG_unspecified_parameters => varargs = true,
                _ => {}
            }
        }
        let mut args = Vec::new();
        for p in params {
            args.push(self.declare(p, String::new(), depth + 1));
        }
        if varargs {
            args.push("...".into());
        }
        if args.is_empty() && prototyped {
            "void".into()
        } else {
            args.join(", ")
        }
    }

    /// The fingerprint of [`TypeInfo::shape`] for the type DIE at .debug_info
    /// offset `die` (0 for void).
    pub fn shape_of(&mut self, die: Option<u64>) -> u64 {
        match die.and_then(|d| u32::try_from(d.checked_sub(self.base)?).ok()) {
            Some(off) => self.shape(off, 2),
            None => 0,
        }
    }

    /// Structural hash `levels` deep: the C text of the type, plus for
    /// aggregates (or pointers to them) their members' names, offsets and
    /// shapes one level further.
    fn shape(&mut self, off: u32, levels: u32) -> u64 {
        if let Some(&h) = self.shapes.get(&(off, levels)) {
            return h;
        }
        let mut h = FxHasher::default();
        self.text_hash(Some(off), 0).0.hash(&mut h);
        if levels > 0 {
            let target = self.pointee_aggregate(off);
            if let Some(agg) = target {
                for m in self.shape_members(agg).iter() {
                    m.name.unwrap_or_default().hash(&mut h);
                    m.byte_offset.hash(&mut h);
                    self.shape(m.ty, levels - 1).hash(&mut h);
                }
            }
        }
        let v = h.finish();
        self.shapes.insert((off, levels), v);
        v
    }

    /// A hash of the C text `declare` would write for the type at `off`,
    /// without writing it: shapes reach thousands of member types per unit,
    /// whose text is never shown. It hashes what decides the text: each
    /// declarator step (pointer, qualifier, array dimensions, parameter
    /// list) and the name where the text stops (a base type, typedef,
    /// struct, union or enum), so equal texts hash equal. The second value
    /// is false when the walk was cut at `MAX_DEPTH` (then not cached).
    fn text_hash(&mut self, off: Option<u32>, depth: u32) -> (u64, bool) {
        // What `declare` prints as a whole word: `?`, `void`, a name.
        fn word(kw: &str, name: &[u8]) -> u64 {
            let mut h = FxHasher::default();
            (0u8, kw, name).hash(&mut h);
            h.finish()
        }
        let Some(off) = off else {
            return (word("", b"void"), true);
        };
        if let Some(&h) = self.text_hashes.get(&off) {
            return (h, true);
        }
        if depth > MAX_DEPTH {
            return (word("", b"?"), false);
        }
        let Some(e) = self.die(off) else {
            return (word("", b"?"), true);
        };
        let name = e.name.bytes(self.dwarf, self.unit);
        let mut h = FxHasher::default();
        let mut exact = true;
        let mut inner = |namer: &mut Self, t: Option<u32>, h: &mut FxHasher| {
            let (v, x) = namer.text_hash(t, depth + 1);
            exact &= x;
            v.hash(h);
        };
        match e.tag {
            gimli::DW_TAG_base_type | gimli::DW_TAG_typedef | gimli::DW_TAG_unspecified_type => {
                return (word("", name.unwrap_or(b"?")), true);
            }
            gimli::DW_TAG_structure_type
            | gimli::DW_TAG_union_type
            | gimli::DW_TAG_enumeration_type => {
                let kw = match e.tag {
                    gimli::DW_TAG_structure_type => "struct",
                    gimli::DW_TAG_union_type => "union",
                    _ => "enum",
                };
                return (word(kw, name.unwrap_or(b"{...}")), true);
            }
            gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type => {
                1u8.hash(&mut h);
                inner(self, e.ty, &mut h);
            }
            gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type
            | gimli::DW_TAG_atomic_type => {
                (2u8, e.tag.0).hash(&mut h);
                inner(self, e.ty, &mut h);
            }
            gimli::DW_TAG_array_type => {
                3u8.hash(&mut h);
                let mut dims = Vec::new();
                for c in self.children(off) {
                    if c.tag == gimli::DW_TAG_subrange_type {
                        dims.push(match (c.attrs.count(), c.attrs.upper_bound()) {
                            (Some(c), _) => Some(c),
                            (None, Some(u)) => u.checked_add(1),
                            (None, None) => None,
                        });
                    }
                }
                // No subrange prints as one unknown dimension, `[]`.
                if dims.is_empty() {
                    dims.push(None);
                }
                dims.hash(&mut h);
                inner(self, e.ty, &mut h);
            }
            gimli::DW_TAG_subroutine_type => {
                4u8.hash(&mut h);
                let mut params = Vec::new();
                let mut varargs = false;
                for c in self.children(off) {
                    match c.tag {
                        gimli::DW_TAG_formal_parameter => params.push(c.attrs.ty()),
                        gimli::DW_TAG_unspecified_parameters => varargs = true,
                        _ => {}
                    }
                }
                // `(void)` is how an empty prototyped list prints, and how
                // one parameter of no type prints.
                if params.is_empty() && !varargs && e.prototyped {
                    params.push(None);
                }
                params.len().hash(&mut h);
                for p in params {
                    inner(self, p, &mut h);
                }
                varargs.hash(&mut h);
                inner(self, e.ty, &mut h);
            }
            _ => return (word("", b"?"), true),
        }
        let v = h.finish();
        if exact {
            self.text_hashes.insert(off, v);
        }
        (v, exact)
    }

    /// The aggregate a type is or points to, through typedefs and qualifiers.
    fn pointee_aggregate(&mut self, off: u32) -> Option<u32> {
        let mut cur = off;
        for _ in 0..MAX_DEPTH {
            let e = self.die(cur)?;
            match e.tag {
                gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type => return Some(cur),
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type
                | gimli::DW_TAG_pointer_type => cur = e.ty?,
                _ => return None,
            }
        }
        None
    }
}

fn tagged(kw: &str, name: Option<String>) -> String {
    match name {
        Some(n) => format!("{kw} {n}"),
        None => format!("{kw} {{...}}"),
    }
}

/// The x86-64 SysV classification, simplified to what C kernels pass:
/// aggregates are taken as INTEGER class (the kernel has no floating point
/// arguments), and anything over 16 bytes or of unknown size is MEMORY.
fn classify(tag: Option<gimli::DwTag>, size: Option<u64>, float: bool) -> ArgClass {
    if float {
        return match size {
            Some(4 | 8) => ArgClass::Sse,
            _ => ArgClass::Memory,
        };
    }
    match (tag, size) {
        (_, Some(0)) | (_, None) => ArgClass::Memory,
        (_, Some(s)) if s <= 8 => ArgClass::Int1,
        (_, Some(s)) if s <= 16 => ArgClass::Int2,
        _ => ArgClass::Memory,
    }
}
