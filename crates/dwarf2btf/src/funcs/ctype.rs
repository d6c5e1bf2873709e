//! A small DWARF type namer: C text, size, x86-64 argument class and a
//! structural fingerprint for the type DIEs that function prototypes use.
//!
//! Invariant: every answer is cached per unit offset, and every walk is
//! bounded (`MAX_DEPTH`), so cyclic or corrupt type graphs terminate and
//! bad references read as `?` rather than failing the whole function.

use std::hash::{Hash, Hasher};

use gimli::{AttributeValue, UnitOffset};
use rustc_hash::{FxHashMap, FxHasher};

use crate::load::{Dwarf, Reader};

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
    pub name: String,
    pub ty: u64,
    /// C spelling of the member's type.
    pub c: String,
    pub byte_offset: u64,
    pub byte_size: u64,
}

/// What a prototype needs to know about one type DIE.
#[derive(Clone, Debug)]
pub struct TypeInfo {
    /// `.debug_info` offset of the DIE, `None` for `void`.
    pub die: Option<u64>,
    /// C spelling, e.g. `struct kobject *`.
    pub c: String,
    pub size: Option<u64>,
    pub class: ArgClass,
    /// Hash of the type's structure two levels deep (through pointers into
    /// aggregates' members), so that one struct name built against different
    /// headers (seed 000's `elf_note_info`) gives different fingerprints.
    pub shape: u64,
    /// Whether the type, stripped of typedefs and qualifiers, is a struct or union.
    pub aggregate: bool,
    /// Whether the type, stripped of typedefs and qualifiers, is a pointer.
    pub pointer: bool,
}

pub struct TypeNamer<'a, 'u> {
    dwarf: &'a Dwarf<'u>,
    unit: &'a gimli::Unit<Reader<'u>>,
    base: u64,
    names: FxHashMap<UnitOffset, String>,
    shapes: FxHashMap<(UnitOffset, u32), u64>,
}

impl<'a, 'u> TypeNamer<'a, 'u> {
    pub fn new(dwarf: &'a Dwarf<'u>, unit: &'a gimli::Unit<Reader<'u>>) -> Self {
        let base = unit
            .header
            .offset()
            .as_debug_info_offset()
            .map_or(0, |o| o.0 as u64);
        TypeNamer {
            dwarf,
            unit,
            base,
            names: FxHashMap::default(),
            shapes: FxHashMap::default(),
        }
    }

    /// Everything about the type DIE at `off` (`None`: void).
    pub fn info(&mut self, off: Option<UnitOffset>) -> TypeInfo {
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
            die: Some(self.base + off.0 as u64),
            c,
            size,
            class,
            shape: self.shape(off, 2),
            aggregate,
            pointer: tag == Some(gimli::DW_TAG_pointer_type),
        }
    }

    /// C text of the type at `off`.
    pub fn name(&mut self, off: UnitOffset) -> String {
        if let Some(n) = self.names.get(&off) {
            return n.clone();
        }
        let n = self.declare(Some(off), String::new(), 0);
        self.names.insert(off, n.clone());
        n
    }

    /// `decl` declared with the type at `off`, e.g. ("char *", "buf") -> "char *buf".
    pub fn declare_named(&mut self, off: Option<UnitOffset>, decl: &str) -> String {
        self.declare(off, decl.to_owned(), 0)
    }

    /// Members of the aggregate behind `off` (typedefs and qualifiers stripped).
    pub fn members(&mut self, off: UnitOffset) -> Vec<MemberInfo> {
        let mut cur = off;
        for _ in 0..MAX_DEPTH {
            let Ok(e) = self.unit.entry(cur) else {
                return Vec::new();
            };
            match e.tag() {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_atomic_type => match type_ref(&e) {
                    Some(t) => cur = t,
                    None => return Vec::new(),
                },
                gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type => {
                    return self.collect_members(cur)
                }
                _ => return Vec::new(),
            }
        }
        Vec::new()
    }

    fn collect_members(&mut self, off: UnitOffset) -> Vec<MemberInfo> {
        let mut out = Vec::new();
        let Ok(mut tree) = self.unit.entries_tree(Some(off)) else {
            return out;
        };
        let Ok(root) = tree.root() else { return out };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let e = child.entry();
            if e.tag() != gimli::DW_TAG_member {
                continue;
            }
            let name = attr_str(self.dwarf, self.unit, e, gimli::DW_AT_name).unwrap_or_default();
            let byte_offset = match e.attr_value(gimli::DW_AT_data_member_location) {
                Ok(Some(v)) => v.udata_value().unwrap_or(0),
                _ => match e.attr_value(gimli::DW_AT_data_bit_offset) {
                    Ok(Some(v)) => v.udata_value().unwrap_or(0) / 8,
                    _ => 0,
                },
            };
            let Some(t) = type_ref(e) else { continue };
            let byte_size = self.strip(t).0.unwrap_or(0);
            let c = self.name(t);
            out.push(MemberInfo {
                name,
                ty: self.base + t.0 as u64,
                c,
                byte_offset,
                byte_size,
            });
        }
        out
    }

    /// Size and tag of the type behind typedefs and qualifiers.
    fn strip(&mut self, off: UnitOffset) -> (Option<u64>, Option<gimli::DwTag>) {
        let mut cur = off;
        for _ in 0..MAX_DEPTH {
            let Ok(e) = self.unit.entry(cur) else {
                return (None, None);
            };
            let size = match e.attr_value(gimli::DW_AT_byte_size) {
                Ok(Some(v)) => v.udata_value(),
                _ => None,
            };
            match e.tag() {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type => match type_ref(&e) {
                    Some(t) => cur = t,
                    None => return (Some(0), None),
                },
                gimli::DW_TAG_pointer_type | gimli::DW_TAG_reference_type => {
                    return (Some(size.unwrap_or(8)), Some(e.tag()))
                }
                tag => return (size, Some(tag)),
            }
        }
        (None, None)
    }

    fn float_like(&mut self, off: UnitOffset) -> bool {
        let mut cur = off;
        for _ in 0..MAX_DEPTH {
            let Ok(e) = self.unit.entry(cur) else {
                return false;
            };
            match e.tag() {
                gimli::DW_TAG_base_type => {
                    return matches!(
                        e.attr_value(gimli::DW_AT_encoding),
                        Ok(Some(AttributeValue::Encoding(gimli::DW_ATE_float)))
                    )
                }
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_atomic_type => match type_ref(&e) {
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
    fn declare(&mut self, off: Option<UnitOffset>, decl: String, depth: u32) -> String {
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
        let Ok(e) = self.unit.entry(off) else {
            return join("?", &decl);
        };
        let name = attr_str(self.dwarf, self.unit, &e, gimli::DW_AT_name);
        let target = type_ref(&e);
        match e.tag() {
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
                let q = match e.tag() {
                    gimli::DW_TAG_const_type => "const",
                    gimli::DW_TAG_volatile_type => "volatile",
                    gimli::DW_TAG_restrict_type => "restrict",
                    _ => "_Atomic",
                };
                let on_pointer = target
                    .and_then(|t| self.unit.entry(t).ok())
                    .is_some_and(|t| t.tag() == gimli::DW_TAG_pointer_type);
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
                let args = self.subroutine_args(off, depth);
                self.declare(target, format!("{d}({args})"), depth + 1)
            }
            _ => join("?", &decl),
        }
    }

    fn array_dims(&mut self, off: UnitOffset) -> String {
        let mut out = String::new();
        let Ok(mut tree) = self.unit.entries_tree(Some(off)) else {
            return "[]".into();
        };
        let Ok(root) = tree.root() else {
            return "[]".into();
        };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let e = child.entry();
            if e.tag() != gimli::DW_TAG_subrange_type {
                continue;
            }
            let count = match (
                e.attr_value(gimli::DW_AT_count),
                e.attr_value(gimli::DW_AT_upper_bound),
            ) {
                (Ok(Some(c)), _) => c.udata_value(),
                (_, Ok(Some(u))) => u.udata_value().map(|u| u + 1),
                _ => None,
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

    fn subroutine_args(&mut self, off: UnitOffset, depth: u32) -> String {
        let mut args = Vec::new();
        let mut prototyped = false;
        if let Ok(e) = self.unit.entry(off) {
            prototyped = matches!(
                e.attr_value(gimli::DW_AT_prototyped),
                Ok(Some(AttributeValue::Flag(true)))
            );
        }
        if let Ok(mut tree) = self.unit.entries_tree(Some(off)) {
            if let Ok(root) = tree.root() {
                let mut children = root.children();
                let mut params = Vec::new();
                let mut varargs = false;
                while let Ok(Some(child)) = children.next() {
                    match child.entry().tag() {
                        gimli::DW_TAG_formal_parameter => params.push(type_ref(child.entry())),
                        gimli::DW_TAG_unspecified_parameters => varargs = true,
                        _ => {}
                    }
                }
                for p in params {
                    args.push(self.declare(p, String::new(), depth + 1));
                }
                if varargs {
                    args.push("...".into());
                }
            }
        }
        if args.is_empty() && prototyped {
            "void".into()
        } else {
            args.join(", ")
        }
    }

    /// Structural hash `levels` deep: names and kinds, plus for aggregates
    /// their members' types one level further.
    fn shape(&mut self, off: UnitOffset, levels: u32) -> u64 {
        if let Some(&h) = self.shapes.get(&(off, levels)) {
            return h;
        }
        let mut h = FxHasher::default();
        self.name(off).hash(&mut h);
        if levels > 0 {
            let target = self.pointee_aggregate(off);
            if let Some(agg) = target {
                for m in self.members(agg) {
                    m.name.hash(&mut h);
                    m.byte_offset.hash(&mut h);
                    let moff = UnitOffset((m.ty - self.base) as usize);
                    self.shape(moff, levels - 1).hash(&mut h);
                }
            }
        }
        let v = h.finish();
        self.shapes.insert((off, levels), v);
        v
    }

    /// The aggregate a type is or points to, through typedefs and qualifiers.
    fn pointee_aggregate(&mut self, off: UnitOffset) -> Option<UnitOffset> {
        let mut cur = off;
        for _ in 0..MAX_DEPTH {
            let e = self.unit.entry(cur).ok()?;
            match e.tag() {
                gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type => return Some(cur),
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_restrict_type
                | gimli::DW_TAG_atomic_type
                | gimli::DW_TAG_pointer_type => cur = type_ref(&e)?,
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

/// The DW_AT_type of a DIE as a unit offset (only unit-local references).
pub fn type_ref(e: &gimli::DebuggingInformationEntry<Reader<'_>>) -> Option<UnitOffset> {
    match e.attr_value(gimli::DW_AT_type) {
        Ok(Some(AttributeValue::UnitRef(o))) => Some(o),
        _ => None,
    }
}

/// A string attribute, resolved through .debug_str / .debug_line_str.
pub fn attr_str(
    dwarf: &Dwarf<'_>,
    unit: &gimli::Unit<Reader<'_>>,
    e: &gimli::DebuggingInformationEntry<Reader<'_>>,
    at: gimli::DwAt,
) -> Option<String> {
    let v = e.attr_value(at).ok()??;
    let s = dwarf.attr_string(unit, v).ok()?;
    Some(String::from_utf8_lossy(s.slice()).into_owned())
}
