//! A semantic diff of two BTFs: by name and layout, type ids ignored.
//!
//! Every named STRUCT, UNION, ENUM/ENUM64, TYPEDEF, FUNC and VAR of each
//! side's own types becomes an entry keyed by its C namespace and name
//! (`struct foo`, `enum bar`, `func baz`), whose value is its layout: sizes,
//! member names, bit offsets, bitfield sizes and member types rendered as C
//! type strings, enumerator values, prototypes. Type references are compared
//! through these strings, never through ids, so two BTFs with the same types
//! in a different order (or a different dedup) compare equal.
//!
//! A name may be defined several times (two different `struct elf_note_info`
//! in one kernel): the layouts under one key are compared as multisets, and
//! only the layouts that find no equal partner on the other side are shown.
//!
//! Inline sites (bpf-next's LOCSEC entries) are entries too, keyed `inline`
//! and the inlined function's name, one layout per site: its section and
//! where each parameter is found. Site offsets are addresses and are left
//! out, as type ids are, so that only a change in what is inlined where, or
//! in how its parameters are found, shows.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::query::c_number;
use crate::{Btf, Type, TypeData, TypeId};

/// The C namespace a compared entry lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// `struct foo`.
    Struct,
    /// `union foo`.
    Union,
    /// `enum foo`, ENUM and ENUM64 alike.
    Enum,
    /// `typedef foo`.
    Typedef,
    /// A FUNC.
    Func,
    /// A VAR.
    Var,
    /// An inline site of a function (LOCSEC entries).
    Inline,
}

impl Category {
    /// Every category, in the order a diff lists them.
    pub const ALL: [Category; 7] = [
        Category::Struct,
        Category::Union,
        Category::Enum,
        Category::Typedef,
        Category::Func,
        Category::Var,
        Category::Inline,
    ];

    /// The category's name: `struct`, `union`, ... (see [`Category::from_name`]).
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Struct => "struct",
            Category::Union => "union",
            Category::Enum => "enum",
            Category::Typedef => "typedef",
            Category::Func => "func",
            Category::Var => "var",
            Category::Inline => "inline",
        }
    }

    /// Parses `struct`, `union`, `enum`, `typedef`, `func`, `var` or `inline`.
    pub fn from_name(s: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// One member of a STRUCT or UNION.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct MemberLayout {
    /// "" for an anonymous member.
    pub name: String,
    /// The offset from the start of the aggregate, in bits.
    pub bit_offset: u32,
    /// The bitfield's width in bits; 0 unless a bitfield.
    pub bitfield_size: u32,
    /// The member's type as a C type string.
    #[serde(rename = "type")]
    pub ty: String,
    /// The member as C declares it (`char comm[16]`); follows from `ty`
    /// and `name`, kept for display.
    pub decl: String,
}

/// What is compared for one entry.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "layout", rename_all = "lowercase")]
pub enum Layout {
    /// A STRUCT or UNION.
    Aggregate {
        /// Its size in bytes.
        size: u32,
        /// Its members in order.
        members: Vec<MemberLayout>,
    },
    /// An ENUM or ENUM64.
    Enum {
        /// `ENUM` or `ENUM64`.
        kind: &'static str,
        /// Its size in bytes.
        size: u32,
        /// Whether its values are signed (the kind flag).
        signed: bool,
        /// Enumerators in order, values as C reads them.
        values: Vec<(String, i128)>,
    },
    /// A TYPEDEF.
    Typedef {
        /// The type it names, as a C type string.
        #[serde(rename = "type")]
        ty: String,
    },
    /// A FUNC.
    Func {
        /// `static`, `global` or `extern`, as bpftool prints it.
        linkage: &'static str,
        /// The prototype as a C declaration, parameter names included.
        proto: String,
    },
    /// A VAR.
    Var {
        /// `static`, `global` or `extern`, as bpftool prints it.
        linkage: &'static str,
        /// Its type, as a C type string.
        #[serde(rename = "type")]
        ty: String,
    },
    /// One inline site: the LOCSEC's section name and each parameter's
    /// location as bpftool describes it (`-` for none).
    Inline {
        /// The LOCSEC's section name.
        section: String,
        /// One location per parameter, in order.
        locations: Vec<String>,
    },
}

/// An entry present on one side only.
#[derive(Clone, Debug, Serialize)]
pub struct Only {
    /// The entry's namespace.
    pub category: Category,
    /// Its name.
    pub name: String,
    /// Every definition under that name.
    pub layouts: Vec<Layout>,
}

/// An entry present on both sides whose layouts differ.
#[derive(Clone, Debug, Serialize)]
pub struct Changed {
    /// The entry's namespace.
    pub category: Category,
    /// Its name.
    pub name: String,
    /// How many definitions side A has under this name.
    pub count_a: usize,
    /// How many definitions side B has under this name.
    pub count_b: usize,
    /// The layouts of A that no layout of B equals.
    pub unmatched_a: Vec<Layout>,
    /// The layouts of B that no layout of A equals.
    pub unmatched_b: Vec<Layout>,
    /// Field by field, when one layout is left on each side; otherwise empty.
    pub details: Vec<String>,
}

/// The result of [`diff`].
#[derive(Clone, Debug, Default, Serialize)]
pub struct Diff {
    /// Entries only A has, sorted by category and name.
    pub only_a: Vec<Only>,
    /// Entries only B has, sorted by category and name.
    pub only_b: Vec<Only>,
    /// Entries both have with different layouts, sorted by category and name.
    pub changed: Vec<Changed>,
    /// Entries equal on both sides.
    pub equal: usize,
}

impl Diff {
    /// True when the two sides define the same entries with the same layouts.
    pub fn is_empty(&self) -> bool {
        self.only_a.is_empty() && self.only_b.is_empty() && self.changed.is_empty()
    }
}

/// Which entries to compare.
#[derive(Clone, Debug)]
pub struct DiffOptions {
    /// The categories to compare (default: all).
    pub categories: Vec<Category>,
    /// Render an array of arrays as one array of all their elements
    /// (`char [16][16]` as `char [256]`), as pahole before 1.25 encoded
    /// multi-dimensional arrays: compares BTF of either era by layout.
    pub flat_arrays: bool,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            categories: Category::ALL.to_vec(),
            flat_arrays: false,
        }
    }
}

type Entries = BTreeMap<(Category, String), Vec<Layout>>;

/// Compares the own types of `a` and `b` (a split BTF's base is used to
/// render type names, but its types are not entries).
pub fn diff(a: &Btf, b: &Btf, opts: &DiffOptions) -> Diff {
    let ea = entries(a, opts);
    let mut eb = entries(b, opts);
    let mut out = Diff::default();
    for (key, mut la) in ea {
        let Some(mut lb) = eb.remove(&key) else {
            out.only_a.push(Only {
                category: key.0,
                name: key.1,
                layouts: la,
            });
            continue;
        };
        la.sort();
        lb.sort();
        let (count_a, count_b) = (la.len(), lb.len());
        let (ua, ub) = multiset_difference(la, lb);
        if ua.is_empty() && ub.is_empty() {
            out.equal += 1;
            continue;
        }
        let details = match (&ua[..], &ub[..]) {
            ([x], [y]) => layout_details(x, y),
            _ => Vec::new(),
        };
        out.changed.push(Changed {
            category: key.0,
            name: key.1,
            count_a,
            count_b,
            unmatched_a: ua,
            unmatched_b: ub,
            details,
        });
    }
    out.only_b = eb
        .into_iter()
        .map(|((category, name), layouts)| Only {
            category,
            name,
            layouts,
        })
        .collect();
    out
}

/// Elements of sorted `a` without a partner in sorted `b`, and vice versa.
fn multiset_difference(a: Vec<Layout>, b: Vec<Layout>) -> (Vec<Layout>, Vec<Layout>) {
    let (mut ua, mut ub) = (Vec::new(), Vec::new());
    let mut ia = a.into_iter().peekable();
    let mut ib = b.into_iter().peekable();
    loop {
        match (ia.peek(), ib.peek()) {
            (Some(x), Some(y)) => match x.cmp(y) {
                std::cmp::Ordering::Equal => {
                    ia.next();
                    ib.next();
                }
                std::cmp::Ordering::Less => ua.extend(ia.next()),
                std::cmp::Ordering::Greater => ub.extend(ib.next()),
            },
            (Some(_), None) => ua.extend(ia.next()),
            (None, Some(_)) => ub.extend(ib.next()),
            (None, None) => return (ua, ub),
        }
    }
}

fn entries(btf: &Btf, opts: &DiffOptions) -> Entries {
    let r = Renderer {
        btf,
        budget: Cell::new(0),
        flat_arrays: opts.flat_arrays,
    };
    let mut map = Entries::new();
    for (_, t) in btf.iter() {
        if let TypeData::Locsec { locs } = &t.data {
            if opts.categories.contains(&Category::Inline) {
                for l in locs {
                    let func = btf.type_by_id(l.func).map_or(0, |f| f.name_off);
                    map.entry((Category::Inline, r.name(func)))
                        .or_default()
                        .push(r.inline_site(t, l));
                }
            }
            continue;
        }
        if t.name_off == 0 {
            continue;
        }
        let category = match t.data {
            TypeData::Struct { .. } => Category::Struct,
            TypeData::Union { .. } => Category::Union,
            TypeData::Enum { .. } | TypeData::Enum64 { .. } => Category::Enum,
            TypeData::Typedef { .. } => Category::Typedef,
            TypeData::Func { .. } => Category::Func,
            TypeData::Var { .. } => Category::Var,
            _ => continue,
        };
        if !opts.categories.contains(&category) {
            continue;
        }
        let name = r.name(t.name_off);
        let layout = r.layout(t, &name);
        map.entry((category, name)).or_default().push(layout);
    }
    map
}

/// Nesting beyond this is cut short with `...`: real types stay far below
/// it, and a reference loop in bad input must not recurse forever.
const MAX_DEPTH: u32 = 32;

/// Type references one entry may render. Anonymous aggregates are spelled
/// out wherever they are used, so crafted input nesting them many times
/// could grow without bound; real kernels stay under a few thousand.
const RENDER_BUDGET: u32 = 100_000;

/// Renders types as C type strings, looking through the base.
struct Renderer<'a> {
    btf: &'a Btf,
    /// What is left of [`RENDER_BUDGET`] for the entry being rendered.
    budget: Cell<u32>,
    flat_arrays: bool,
}

impl Renderer<'_> {
    /// A name, or a placeholder naming the offset when it is out of range.
    fn name(&self, off: u32) -> String {
        match self.btf.str_bytes(off) {
            Ok(b) => String::from_utf8_lossy(b).into_owned(),
            Err(_) => format!("<bad string offset {off:#x}>"),
        }
    }

    /// The layout of a named entry; starts a fresh render budget.
    fn layout(&self, t: &Type, name: &str) -> Layout {
        self.budget.set(RENDER_BUDGET);
        self.layout_of(t, name)
    }

    fn layout_of(&self, t: &Type, name: &str) -> Layout {
        match &t.data {
            TypeData::Struct { size, members } | TypeData::Union { size, members } => {
                Layout::Aggregate {
                    size: *size,
                    members: self.members(t, members, 0),
                }
            }
            TypeData::Enum { size, .. } | TypeData::Enum64 { size, .. } => Layout::Enum {
                kind: t.kind_name(),
                size: *size,
                signed: t.kind_flag,
                values: t
                    .enum_values()
                    .map(|(name_off, raw)| (self.name(name_off), c_number(raw, t.kind_flag)))
                    .collect(),
            },
            TypeData::Typedef { ty } => Layout::Typedef {
                ty: self.decl(*ty, "", 0),
            },
            TypeData::Func { proto, linkage } => Layout::Func {
                linkage: crate::dump::fields::func_linkage_name(*linkage),
                proto: self.decl(*proto, name, 0),
            },
            TypeData::Var { ty, linkage } => Layout::Var {
                linkage: crate::dump::fields::var_linkage_name(*linkage),
                ty: self.decl(*ty, "", 0),
            },
            _ => Layout::Typedef { ty: String::new() },
        }
    }

    /// One LOCSEC entry as an [`Layout::Inline`].
    fn inline_site(&self, locsec: &Type, l: &crate::Loc) -> Layout {
        let params = match self.btf.type_by_id(l.loc_proto).map(|t| &t.data) {
            Some(TypeData::LocProto { params }) => params.as_slice(),
            _ => &[],
        };
        Layout::Inline {
            section: self.name(locsec.name_off),
            locations: params
                .iter()
                .map(|&p| {
                    crate::dump::fields::loc_param_value(self.btf, p).unwrap_or_else(|| "-".into())
                })
                .collect(),
        }
    }

    fn members(&self, t: &Type, members: &[crate::Member], depth: u32) -> Vec<MemberLayout> {
        members
            .iter()
            .map(|m| {
                let name = self.name(m.name_off);
                MemberLayout {
                    bit_offset: m.bit_offset(t.kind_flag),
                    bitfield_size: m.bitfield_size(t.kind_flag),
                    ty: self.decl(m.ty, "", depth + 1),
                    decl: self.decl(m.ty, &name, depth + 1),
                    name,
                }
            })
            .collect()
    }

    /// The C declaration of `inner` (a name, or "" for an abstract
    /// declarator) with type `id`: `char [16]`, `int (*)(void *)`,
    /// `const char *name`. Works outward from the declarator the way C
    /// reads it: pointers prefix it, arrays and parameter lists suffix it,
    /// and a pointer to an array or function needs parentheses.
    fn decl(&self, id: TypeId, inner: &str, depth: u32) -> String {
        let budget = self.budget.get();
        if depth > MAX_DEPTH || budget == 0 {
            return join("...", inner);
        }
        self.budget.set(budget - 1);
        if id == 0 {
            return join("void", inner);
        }
        let Some(t) = self.btf.type_by_id(id) else {
            return join(&format!("<bad type id {id}>"), inner);
        };
        match &t.data {
            TypeData::Ptr { ty } => {
                let needs_parens = matches!(
                    self.btf.type_by_id(*ty).map(|p| &p.data),
                    Some(TypeData::Array(_) | TypeData::FuncProto { .. })
                );
                let d = if needs_parens {
                    format!("(*{inner})")
                } else {
                    format!("*{inner}")
                };
                self.decl(*ty, &d, depth + 1)
            }
            TypeData::Array(a) if self.flat_arrays => {
                let (mut elem, mut nelems) = (a.elem, u64::from(a.nelems));
                // Bounded: a loop of arrays in bad input must end.
                for _ in 0..MAX_DEPTH {
                    let Some(TypeData::Array(e)) = self.btf.type_by_id(elem).map(|t| &t.data)
                    else {
                        break;
                    };
                    nelems = nelems.saturating_mul(u64::from(e.nelems));
                    elem = e.elem;
                }
                self.decl(elem, &format!("{inner}[{nelems}]"), depth + 1)
            }
            TypeData::Array(a) => self.decl(a.elem, &format!("{inner}[{}]", a.nelems), depth + 1),
            TypeData::FuncProto { ret, params } => {
                let list = self.param_list(params, depth);
                self.decl(*ret, &format!("{inner}{list}"), depth + 1)
            }
            TypeData::TypeTag { ty } => {
                // kind_flag: a type attribute (`address_space(1)`), not a tag.
                let q = if t.kind_flag {
                    format!("__attribute__(({}))", self.name(t.name_off))
                } else {
                    format!(
                        "__attribute__((btf_type_tag(\"{}\")))",
                        self.name(t.name_off)
                    )
                };
                self.qualified(&q, *ty, inner, depth)
            }
            TypeData::Struct { .. } | TypeData::Union { .. } if t.name_off == 0 => {
                join(&self.anon_aggregate(t, depth), inner)
            }
            TypeData::Enum { .. } | TypeData::Enum64 { .. } if t.name_off == 0 => {
                join(&self.anon_enum(t), inner)
            }
            TypeData::Struct { .. } => join(&format!("struct {}", self.name(t.name_off)), inner),
            TypeData::Union { .. } => join(&format!("union {}", self.name(t.name_off)), inner),
            TypeData::Enum { .. } | TypeData::Enum64 { .. } => {
                join(&format!("enum {}", self.name(t.name_off)), inner)
            }
            TypeData::Fwd => {
                let tag = if t.kind_flag { "union" } else { "struct" };
                join(&format!("{tag} {}", self.name(t.name_off)), inner)
            }
            TypeData::Int { .. } | TypeData::Float { .. } | TypeData::Typedef { .. } => {
                join(&self.name(t.name_off), inner)
            }
            _ => match (t.kind().qualifier_keyword(), t.ref_type()) {
                (Some(q), Some(ty)) => self.qualified(q, ty, inner, depth),
                // Not types a declaration can have (Kind::is_c_type); shown
                // by kind so that a difference is still visible.
                _ => {
                    debug_assert!(!t.kind().is_c_type());
                    join(
                        &format!("<{} {}>", t.kind_name(), self.name(t.name_off)),
                        inner,
                    )
                }
            },
        }
    }

    /// A prototype's parameters as C writes them: `(int a, char *b)`,
    /// `(const char *fmt, ...)`, `(void)`.
    fn param_list(&self, params: &[crate::Param], depth: u32) -> String {
        let mut list = String::from("(");
        for (i, p) in params.iter().enumerate() {
            if i > 0 {
                list.push_str(", ");
            }
            if p.ty == 0 && p.name_off == 0 {
                list.push_str("...");
            } else {
                list.push_str(&self.decl(p.ty, &self.name(p.name_off), depth + 1));
            }
        }
        if params.is_empty() {
            list.push_str("void");
        }
        list.push(')');
        list
    }

    /// `const int x` but `char *const x`: a qualifier of a pointer goes
    /// after its star.
    fn qualified(&self, q: &str, ty: TypeId, inner: &str, depth: u32) -> String {
        let is_ptr = matches!(
            self.btf.type_by_id(ty).map(|p| &p.data),
            Some(TypeData::Ptr { .. })
        );
        if is_ptr {
            return self.decl(ty, &join(q, inner), depth + 1);
        }
        let rest = self.decl(ty, inner, depth + 1);
        // A qualifier the type already has is said once: BTF from DWARF
        // has `const` on an array and on its elements (`const int a[2]`
        // is CONST -> ARRAY -> CONST -> INT), and C allows repeating it.
        let already = rest
            .split(' ')
            .take_while(|w| matches!(*w, "const" | "volatile" | "restrict"))
            .any(|w| w == q);
        if already {
            rest
        } else {
            format!("{q} {rest}")
        }
    }

    /// An anonymous struct or union is part of its parent's layout, so it is
    /// spelled out: `struct {8 bytes: int a at bit 0, int b:3 at bit 32}`.
    fn anon_aggregate(&self, t: &Type, depth: u32) -> String {
        let (tag, size) = match &t.data {
            TypeData::Union { size, .. } => ("union", *size),
            TypeData::Struct { size, .. } => ("struct", *size),
            _ => ("?", 0),
        };
        let mut s = format!("{tag} {{{size} bytes:");
        for (i, m) in self.members(t, t.members(), depth + 1).iter().enumerate() {
            s.push_str(if i > 0 { ", " } else { " " });
            s.push_str(&member_text(m));
        }
        s.push('}');
        s
    }

    fn anon_enum(&self, t: &Type) -> String {
        let mut s = String::from("enum {");
        if let Layout::Enum { values, size, .. } = self.layout_of(t, "") {
            let _ = write!(s, "{size} bytes:");
            for (i, (name, val)) in values.iter().enumerate() {
                s.push_str(if i > 0 { ", " } else { " " });
                let _ = write!(s, "{name}={val}");
            }
        }
        s.push('}');
        s
    }
}

/// A type specifier and its declarator: `char *p`, `char [16]`, `int`.
fn join(base: &str, inner: &str) -> String {
    if inner.is_empty() {
        base.to_owned()
    } else {
        format!("{base} {inner}")
    }
}

/// `unsigned int a:3 at bit 64`: declaration, bitfield size as C writes
/// it, offset in bits (sizes are in bytes, offsets in bits, as BTF has them).
pub fn member_text(m: &MemberLayout) -> String {
    let mut s = m.decl.clone();
    if m.bitfield_size != 0 {
        let _ = write!(s, ":{}", m.bitfield_size);
    }
    let _ = write!(s, " at bit {}", m.bit_offset);
    s
}

/// One line for a whole layout, for entries shown without a field diff.
pub fn layout_text(l: &Layout) -> String {
    match l {
        Layout::Aggregate { size, members } => {
            let mut s = format!("{size} bytes {{");
            for (i, m) in members.iter().enumerate() {
                s.push_str(if i > 0 { "; " } else { " " });
                s.push_str(&member_text(m));
            }
            s.push_str(" }");
            s
        }
        Layout::Enum {
            kind,
            size,
            signed,
            values,
        } => {
            let sign = if *signed { "signed" } else { "unsigned" };
            let mut s = format!("{kind} {size} bytes {sign} {{");
            for (i, (n, v)) in values.iter().enumerate() {
                s.push_str(if i > 0 { ", " } else { " " });
                let _ = write!(s, "{n}={v}");
            }
            s.push_str(" }");
            s
        }
        Layout::Typedef { ty } => ty.clone(),
        Layout::Func { linkage, proto } => format!("{linkage} {proto}"),
        Layout::Var { linkage, ty } => format!("{linkage} {ty}"),
        Layout::Inline { section, locations } => {
            format!("in {section} ({})", locations.join(", "))
        }
    }
}

/// Field-by-field differences of two layouts of the same entry.
fn layout_details(a: &Layout, b: &Layout) -> Vec<String> {
    let mut d = Vec::new();
    match (a, b) {
        (
            Layout::Aggregate {
                size: sa,
                members: ma,
            },
            Layout::Aggregate {
                size: sb,
                members: mb,
            },
        ) => {
            if sa != sb {
                d.push(format!("size {sa} -> {sb} bytes"));
            }
            member_details(ma, mb, &mut d);
        }
        (
            Layout::Enum {
                kind: ka,
                size: sa,
                signed: ga,
                values: va,
            },
            Layout::Enum {
                kind: kb,
                size: sb,
                signed: gb,
                values: vb,
            },
        ) => {
            if ka != kb {
                d.push(format!("kind {ka} -> {kb}"));
            }
            if sa != sb {
                d.push(format!("size {sa} -> {sb} bytes"));
            }
            if ga != gb {
                d.push(format!("signed {ga} -> {gb}"));
            }
            for (name, x) in va {
                match vb.iter().find(|(n, _)| n == name) {
                    None => d.push(format!("- {name} = {x}")),
                    Some((_, y)) if x != y => d.push(format!("{name}: {x} -> {y}")),
                    Some(_) => {}
                }
            }
            for (name, y) in vb {
                if !va.iter().any(|(n, _)| n == name) {
                    d.push(format!("+ {name} = {y}"));
                }
            }
            if d.is_empty() {
                d.push("enumerators reordered".to_owned());
            }
        }
        _ => d.push(format!("{} -> {}", layout_text(a), layout_text(b))),
    }
    d
}

/// Members are paired by name; anonymous members pair in order of appearance.
fn member_details(ma: &[MemberLayout], mb: &[MemberLayout], d: &mut Vec<String>) {
    let mut used = vec![false; mb.len()];
    let mut anon_b = mb
        .iter()
        .enumerate()
        .filter(|(_, m)| m.name.is_empty())
        .map(|(i, _)| i);
    for x in ma {
        let j = if x.name.is_empty() {
            anon_b.next()
        } else {
            mb.iter().position(|m| m.name == x.name)
        };
        let Some(j) = j else {
            d.push(format!("- member {}", member_text(x)));
            continue;
        };
        used[j] = true;
        let y = &mb[j];
        let label = if x.name.is_empty() { "(anon)" } else { &x.name };
        if x.bit_offset != y.bit_offset {
            d.push(format!(
                "member {label}: offset bit {} -> {}",
                x.bit_offset, y.bit_offset
            ));
        }
        if x.bitfield_size != y.bitfield_size {
            d.push(format!(
                "member {label}: bitfield {} -> {} bits",
                x.bitfield_size, y.bitfield_size
            ));
        }
        if x.ty != y.ty {
            d.push(format!("member {label}: type {} -> {}", x.ty, y.ty));
        }
    }
    for (y, _) in mb.iter().zip(&used).filter(|(_, u)| !**u) {
        d.push(format!("+ member {}", member_text(y)));
    }
    if d.is_empty() {
        d.push("members reordered".to_owned());
    }
}
