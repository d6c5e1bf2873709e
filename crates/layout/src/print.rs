//! The text of pahole's layout view (its `dwarves_fprintf.c`): struct and
//! union bodies with offset/size comments, holes, bit holes, paddings,
//! cache line boundaries and the statistics after each struct.
//!
//! Column widths follow pahole's `printf` arithmetic, including its odd
//! corners (negative widths left-justify, names cut at pahole's buffer
//! sizes), because the output is compared with pahole's byte for byte.

use std::cell::Cell;
use std::fmt::Write;
use std::rc::Rc;

use super::model::{Class, Member, Model, Node};
use btf::TypeId;

/// `struct member_types_holes`: what a struct's member types have of
/// holes, paddings and flexible arrays, for its statistics.
#[derive(Default)]
struct MemberTypesHoles {
    nr_paddings: u16,
    nr_with_bit_paddings: u16,
    nr_with_holes: u16,
    nr_with_bit_holes: u16,
    total_nr_holes: u16,
    total_nr_bit_holes: u16,
    nr_flexible_array_members: u16,
    nr_embedded_flexible_array_members: u16,
    sum_paddings: u32,
    sum_bit_paddings: u32,
}

/// What `class` adds up over a struct's members for its statistics.
#[derive(Default)]
struct ClassSums {
    sum_bytes: u32,
    sum_bits: u32,
    sum_holes: u32,
    sum_bit_holes: u32,
    member_types: MemberTypesHoles,
    nr_forced_alignments: u16,
    nr_forced_alignment_holes: u16,
    sum_forced_alignment_holes: u32,
}

/// pahole's `tabs[]`: at most 16 tabs of indentation.
const MAX_INDENT: i32 = 16;

/// pahole's view flags (`conf_fprintf`'s fields the command line sets).
#[derive(Clone, Copy, Debug, Default)]
pub struct View {
    /// `--hex`: offsets, sizes and enumerator values in hexadecimal.
    pub hex: bool,
    /// `-E`: typedefs followed (named in a comment) and member types of
    /// struct, union and enum kind printed in full.
    pub expand_types: bool,
}

/// `struct conf_fprintf`, the parts the layout view uses.
#[derive(Clone)]
pub struct Conf {
    /// `typedef` before an anonymous struct or union printed under its
    /// typedef's name (pahole's `conf.prefix`, top level only).
    pub typedef_prefix: bool,
    /// What follows a struct, union or enum body (` name;`): the member's or
    /// typedef's name, `* name` for a pointer to an anonymous one. At the top level
    /// only a typedef's name under `-a`.
    pub suffix: Option<String>,
    /// Tabs before each line of the body (pahole prints at most 16).
    pub indent: i32,
    /// Width in characters of a member line's type column: 26 at the top level,
    /// narrowed by what a `const ` or pointer prefix already took.
    pub type_spacing: i32,
    /// Width in characters of a member line's name column: with `type_spacing`,
    /// where the `/* offset size */` comment starts (23 for a struct, 21 for a
    /// union, 55 with `-E`).
    pub name_spacing: i32,
    /// Print the statistics after the body
    /// (`/* size: N, cachelines: N, members: N */`, holes, paddings): for the
    /// top-level type, not for inline ones.
    pub emit_stats: bool,
    /// Offsets from this type's own start rather than the top-level type's: set
    /// for an anonymous struct reached through a pointer, which is not laid out
    /// inside the outer one.
    pub rel_offset: bool,
    /// Byte offset of this inline struct or union within the top-level type,
    /// added to its member offsets unless `rel_offset`.
    pub base_offset: u32,
    /// The members being printed are a union's: a zero-length array among
    /// them prints `[0]`, never `[]`.
    pub union_member: bool,
    /// The member being printed is the first of its struct.
    pub first_member: bool,
    /// The member being printed is the last of its struct: a zero-length array
    /// there prints `[]` (a flexible array), unless it is also the first.
    pub last_member: bool,
    /// Index of the shared "current cache line" counter (`cachelinep`).
    pub cacheline: Option<usize>,
}

impl Conf {
    /// pahole's `conf` for a top-level `tag__fprintf` of type `id`.
    pub fn top(is_union: bool, view: View) -> Conf {
        Conf {
            typedef_prefix: false,
            suffix: None,
            indent: 0,
            type_spacing: 26,
            name_spacing: if view.expand_types {
                55
            } else if is_union {
                21
            } else {
                23
            },
            emit_stats: true,
            rel_offset: false,
            base_offset: 0,
            union_member: false,
            first_member: false,
            last_member: false,
            cacheline: None,
        }
    }
}

/// Prints pahole's layout view of a [`Model`]'s types into `out`, one top-level
/// type per [`Printer::top_level`] call.
pub struct Printer<'m, 'a> {
    /// The types; printing runs pahole's guesses (holes, `__packed__`) on them,
    /// so they change as types are printed, as in pahole.
    pub model: &'m mut Model<'a>,
    /// The text printed so far.
    pub out: String,
    /// Cache line size in bytes (at least 1), for the
    /// `/* --- cacheline N boundary (M bytes) --- */` lines and the
    /// `cachelines:` count.
    pub cacheline_size: u32,
    /// DWARF has alignment attributes: pahole then prints forced paddings.
    pub has_alignment_info: bool,
    /// pahole's view flags (`--hex`, `-E`).
    pub view: View,
    /// Where the top-level type being printed starts in `out`.
    type_start: usize,
    cachelines: Vec<u32>,
    /// Nesting of declarations being printed: only a reference cycle in
    /// bad input nests deeper than [`MAX_NESTING`].
    nesting: Rc<Cell<u32>>,
}

/// One level of nesting, given back when dropped.
struct Nest(Rc<Cell<u32>>);

impl Drop for Nest {
    fn drop(&mut self) {
        let v = self.0.get();
        let depth = (v & !CYCLE).saturating_sub(1);
        // Back at the top, the next declaration starts afresh.
        let cycle = if depth == 0 { 0 } else { v & CYCLE };
        self.0.set(depth | cycle);
    }
}

/// Set in the nesting count once a cycle is seen, until it unwinds: a
/// prototype refers to others through its return and every parameter, so
/// without it a cycle would be walked once per path, exponentially.
const CYCLE: u32 = 1 << 31;

/// Deeper nesting than real types have; beyond it a cycle is assumed.
const MAX_NESTING: u32 = 64;

/// The most text one type's `-E` view may take (Linux's largest struct
/// expands to under a megabyte).
const MAX_EXPANDED: usize = 64 << 20;

fn tabs(out: &mut String, n: i32) {
    for _ in 0..n.clamp(0, MAX_INDENT) {
        out.push('\t');
    }
}

/// C's `%*s` / `%-*s`: a negative width left-justifies.
fn pad(out: &mut String, s: &str, width: i32, left: bool) {
    let (w, left) = if width < 0 {
        (width.unsigned_abs() as usize, true)
    } else {
        (width as usize, left)
    };
    let n = w.saturating_sub(s.len());
    if !left {
        out.extend(std::iter::repeat_n(' ', n));
    }
    out.push_str(s);
    if left {
        out.extend(std::iter::repeat_n(' ', n));
    }
}

/// What `snprintf` into a buffer of `len` bytes keeps.
fn cut(mut s: String, len: usize) -> String {
    if s.len() >= len {
        let mut end = len - 1;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// C's `%#x`: `0x` before a non-zero value, `0` alone.
fn c_hex(v: u64) -> String {
    if v == 0 {
        "0".to_owned()
    } else {
        format!("{v:#x}")
    }
}

fn plural(n: u32) -> &'static str {
    if n != 1 {
        "s"
    } else {
        ""
    }
}

/// `N things`: `1 hole`, `2 holes`.
fn counted(n: u32, what: &str) -> String {
    format!("{n} {what}{}", plural(n))
}

impl<'m, 'a> Printer<'m, 'a> {
    /// A printer with no text yet and default [`View`] flags. `cacheline_size`
    /// is in bytes (0 counts as 1); `has_alignment_info` when the model came
    /// from DWARF.
    pub fn new(model: &'m mut Model<'a>, cacheline_size: u32, has_alignment_info: bool) -> Self {
        Printer {
            model,
            out: String::new(),
            cacheline_size: cacheline_size.max(1),
            has_alignment_info,
            view: View::default(),
            type_start: 0,
            cachelines: Vec::new(),
            nesting: Rc::new(Cell::new(0)),
        }
    }

    fn ty(&self, id: TypeId) -> Option<TypeId> {
        self.model.get(id).map(|_| id)
    }

    /// Enters one more level of nested declarations; `None` past
    /// [`MAX_NESTING`] (a reference cycle).
    fn enter(&self) -> Option<Nest> {
        let n = self.nesting.get();
        if n & CYCLE != 0 {
            return None;
        }
        if n > MAX_NESTING {
            self.nesting.set(n | CYCLE);
            return None;
        }
        self.nesting.set(n + 1);
        Some(Nest(self.nesting.clone()))
    }

    fn not_found(&mut self, func: &str, line: u32, id: TypeId) {
        let _ = writeln!(self.out, "<ERROR({func}:{line}): {id} not found!>");
    }

    /// `tag__fprintf` of a top-level type, as `pahole -C` and pahole's
    /// class formatter call it, with the trailing `;` (the caller ends the
    /// line). `typedef_name`: an anonymous struct or union printed as
    /// `typedef struct {...} name` (pahole's `-a`).
    pub fn top_level(&mut self, id: TypeId, typedef_name: Option<&str>) {
        let Some(node) = self.model.get(id) else {
            return;
        };
        self.type_start = self.out.len();
        let mut conf = Conf::top(self.model.is_union(id), self.view);
        if let Some(n) = typedef_name {
            conf.typedef_prefix = true;
            conf.suffix = Some(n.to_owned());
        }
        match node {
            Node::Class(c) if c.is_union => self.union(id, &conf),
            Node::Class(_) => self.class(id, &conf),
            Node::Enum { .. } => self.enumeration(id, &conf),
            Node::Typedef { .. } => self.typedef(id, &conf),
            _ => {}
        }
        self.out.push(';');
    }

    /// `typedef__fprintf`.
    fn typedef(&mut self, id: TypeId, conf: &Conf) {
        let name = self.model.type_name(id).unwrap_or("(null)");
        let target = self.model.target(id);
        if target == 0 {
            let _ = write!(self.out, "typedef void {name}");
            return;
        }
        let Some(t) = self.ty(target) else {
            self.out.push_str("typedef ");
            self.not_found("typedef__fprintf", 317, target);
            let _ = write!(self.out, " {name}");
            return;
        };
        match self.model.get(t) {
            Some(Node::Array { .. }) => {
                self.out.push_str("typedef ");
                self.array(t, Some(name), conf);
                return;
            }
            Some(Node::Pointer(p)) if *p != 0 => {
                let p = *p;
                match self.model.get(p) {
                    None => {
                        self.out.push_str("typedef ");
                        self.not_found("typedef__fprintf", 331, p);
                        let _ = write!(self.out, " *{name}");
                        return;
                    }
                    Some(Node::FuncProto { .. }) => {
                        self.out.push_str("typedef ");
                        let text = self.ftype_text(p, Some(name), false, true, 0, true);
                        self.out.push_str(&text);
                        return;
                    }
                    _ => {}
                }
            }
            Some(Node::FuncProto { .. }) => {
                self.out.push_str("typedef ");
                let text = self.ftype_text(t, Some(name), false, false, 0, true);
                self.out.push_str(&text);
                return;
            }
            Some(Node::Class(Class {
                is_union,
                name: tag_name,
                ..
            })) => {
                let (is_union, tag_name) = (*is_union, *tag_name);
                self.out.push_str("typedef ");
                if is_union {
                    self.union_decl(t, Some(name), conf);
                    return;
                }
                if let Some(tn) = tag_name.filter(|_| !self.view.expand_types) {
                    let _ = write!(self.out, "struct {tn} {name}");
                    return;
                }
                // The body in full, with the typedef's name after it.
                let mut tconf = conf.clone();
                self.model.find_holes(t);
                tconf.type_spacing -= 8;
                tconf.suffix = Some(name.to_owned());
                self.class(t, &tconf);
                return;
            }
            Some(Node::Enum { name: tag_name, .. }) => {
                if let Some(tn) = tag_name {
                    let _ = write!(self.out, "typedef enum {tn} {name}");
                    return;
                }
                let mut tconf = conf.clone();
                tconf.suffix = Some(name.to_owned());
                self.out.push_str("typedef ");
                self.enumeration(t, &tconf);
                return;
            }
            _ => {}
        }
        let tn = cut(self.tag_name(Some(t)), 512);
        let _ = write!(self.out, "typedef {tn} {name}");
    }

    /// `enumeration__fprintf`.
    fn enumeration(&mut self, id: TypeId, conf: &Conf) {
        let Some(Node::Enum {
            name,
            bits,
            signed,
            values,
        }) = self.model.get(id)
        else {
            return;
        };
        let max_len = values
            .iter()
            .map(|(n, _)| n.map_or(0, |n| n.len()))
            .max()
            .unwrap_or(0);
        let _ = write!(
            self.out,
            "enum{}{}",
            if name.is_some() { " " } else { "" },
            name.unwrap_or("")
        );
        if values.is_empty() {
            return;
        }
        self.out.push_str(" {\n");
        for (n, v) in values {
            tabs(&mut self.out, conf.indent);
            self.out.push('\t');
            pad(&mut self.out, n.unwrap_or("(null)"), max_len as i32, true);
            if self.view.hex {
                let _ = writeln!(self.out, " = {},", c_hex(*v));
            } else if *signed {
                let _ = writeln!(self.out, " = {},", *v as i64);
            } else {
                let _ = writeln!(self.out, " = {v},");
            }
        }
        tabs(&mut self.out, conf.indent);
        self.out.push('}');
        if bits / 8 != 4 {
            self.out.push_str(" __attribute__((__packed__))");
        }
        if let Some(s) = &conf.suffix {
            let _ = write!(self.out, " {s}");
        }
    }

    /// `__tag__name`: a type's name as in a cast, with pahole's spacing
    /// (`const char *` is "const char  *").
    pub fn tag_name(&self, id: Option<TypeId>) -> String {
        self.tag_name_depth(id, 0)
    }

    fn tag_name_depth(&self, id: Option<TypeId>, depth: u32) -> String {
        let Some(id) = id else {
            return "void".to_owned();
        };
        if depth > 64 {
            return "<type loop>".to_owned();
        }
        let Some(node) = self.model.get(id) else {
            return "void".to_owned();
        };
        match node {
            Node::Base {
                name,
                is_bool,
                is_float,
                ..
            } => match name {
                None => "nameless base type!".to_owned(),
                Some(n) if *is_float => format!("single {n}"),
                Some(n) => format!("{}{n}", if *is_bool { "bool " } else { "" }),
            },
            Node::Func { name } => name.unwrap_or("").to_owned(),
            Node::Pointer(t) => self.ptr_name(*t, depth),
            Node::Const(t) | Node::Volatile(t) | Node::Restrict(t) => {
                let t = *t;
                let inner = self.ty(t);
                if inner.is_none() && t != 0 {
                    return format!("<ERROR(__tag__name:572): {t:#x} not found!>");
                }
                let tn = cut(self.tag_name_depth(inner, depth + 1), 128);
                match node {
                    Node::Const(_) => format!("const {tn} "),
                    Node::Volatile(_) => format!("volatile {tn} "),
                    _ => format!("{tn} restrict "),
                }
            }
            Node::Array { elem, .. } => match self.ty(*elem) {
                None => format!("<ERROR(__tag__name:590): {elem:#x} not found!>"),
                Some(e) => self.tag_name_depth(Some(e), depth + 1),
            },
            // pahole prints the prototype into a buffer (fmemopen).
            Node::FuncProto { .. } => cut(self.ftype_text(id, None, false, false, 0, true), 1024),
            Node::Variable { name } => name.unwrap_or("(null)").to_owned(),
            Node::Class(c) => {
                let kw = if c.is_union { "union " } else { "struct " };
                format!("{kw}{}", c.name.unwrap_or(""))
            }
            Node::Enum { name, .. } => format!("enum {}", name.unwrap_or("")),
            Node::Typedef { name, .. } => name.unwrap_or("").to_owned(),
        }
    }

    /// `tag__ptr_name`: `T *`, with `T *const` spelt "T const *".
    fn ptr_name(&self, target: TypeId, depth: u32) -> String {
        if target == 0 {
            return "void *".to_owned();
        }
        let Some(mut t) = self.ty(target) else {
            return format!("<ERROR(tag__ptr_name:496): {target:#x} not found!> *");
        };
        let mut const_pointer = "";
        if let Some(Node::Const(next)) = self.model.get(t) {
            if let Some(Node::Pointer(_)) = self.model.get(*next) {
                const_pointer = "const ";
                t = *next;
            }
        }
        let inner = cut(self.tag_name_depth(Some(t), depth + 1), 1024);
        format!("{inner} {const_pointer}*")
    }

    /// `ftype__fprintf` into a string.
    fn ftype_text(
        &self,
        id: TypeId,
        name: Option<&str>,
        inlined: bool,
        is_pointer: bool,
        type_spacing: i32,
        is_prototype: bool,
    ) -> String {
        let Some(_nest) = self.enter() else {
            return "<type cycle>".to_owned();
        };
        let mut out = String::new();
        let Some(Node::FuncProto {
            ret,
            params,
            unspec,
        }) = self.model.get(id)
        else {
            return out;
        };
        let stype = cut(self.tag_name(self.ty(*ret)), 128);
        if inlined {
            out.push_str("inline ");
        }
        pad(&mut out, &stype, type_spacing, true);
        out.push(' ');
        if is_prototype {
            out.push('(');
        }
        if is_pointer {
            out.push('*');
        }
        out.push_str(name.unwrap_or(""));
        if is_prototype {
            out.push(')');
        }
        out.push('(');
        let mut first = true;
        for (pname, pty) in params {
            if !first {
                out.push_str(", ");
            }
            first = false;
            let Some(t) = self.ty(*pty) else {
                let s = format!("<ERROR: type {pty} not found>");
                out.push_str(&s);
                if let Some(n) = pname {
                    out.push(' ');
                    out.push_str(n);
                }
                continue;
            };
            match self.model.get(t) {
                Some(Node::Pointer(p)) if *p != 0 => {
                    let p = *p;
                    match self.model.get(p) {
                        None => {
                            let _ =
                                writeln!(out, "<ERROR(ftype__fprintf_parms:1142): {p} not found!>");
                            continue;
                        }
                        Some(Node::FuncProto { .. }) => {
                            out.push_str(&self.ftype_text(p, *pname, false, true, 0, true));
                            continue;
                        }
                        _ => {}
                    }
                }
                Some(Node::FuncProto { .. }) => {
                    out.push_str(&self.ftype_text(t, *pname, true, false, 0, false));
                    continue;
                }
                _ => {}
            }
            let stype = cut(self.tag_name(Some(t)), 128);
            out.push_str(&stype);
            if let Some(n) = pname {
                out.push(' ');
                out.push_str(n);
            }
        }
        if first {
            out.push_str("void)");
        } else if *unspec {
            out.push_str(", ...)");
        } else {
            out.push(')');
        }
        out
    }

    /// `array_type__fprintf`.
    fn array(&mut self, id: TypeId, name: Option<&str>, conf: &Conf) {
        let Some(Node::Array { elem, dims }) = self.model.get(id) else {
            return;
        };
        let (elem, dims) = (*elem, dims.clone());
        let Some(mut t) = self.ty(elem) else {
            self.not_found("array_type__fprintf", 238, elem);
            return;
        };
        if dims.first() == Some(&0) {
            if let Some(Node::Const(inner)) = self.model.get(t) {
                if let Some(i) = self.ty(*inner) {
                    t = i;
                }
            }
        }
        self.type_fprintf(Some(t), name, conf);
        let single_member = conf.last_member && conf.first_member;
        for n in dims {
            if n != 0 || !conf.last_member || single_member || conf.union_member {
                let _ = write!(self.out, "[{n}]");
            } else {
                self.out.push_str("[]");
            }
        }
    }

    /// `type__fprintf`: a member's declaration (without `;`), inline
    /// bodies for anonymous structs, unions and enums.
    fn type_fprintf(&mut self, ty: Option<TypeId>, name: Option<&str>, conf: &Conf) {
        let Some(_nest) = self.enter() else {
            self.out.push_str("<type cycle>");
            return;
        };
        // Bad input can nest types so that expanding them doubles at each
        // level; no real type comes near this size.
        if self.view.expand_types && self.out.len() - self.type_start > MAX_EXPANDED {
            self.out.push_str("<type too large to expand>");
            return;
        }
        let Some(mut t) = ty else {
            self.type_not_found(conf, name);
            return;
        };
        if self.view.expand_types {
            let Some(under) = self.expand_typedefs(t, conf, name) else {
                return;
            };
            t = under;
        }
        let mut tconf = conf.clone();
        tconf.typedef_prefix = false;
        let mut name: Option<String> = name.map(str::to_owned);
        if self.model.is_struct(t) || self.model.is_union(t) || self.model.is_enum(t) {
            tconf.suffix = name.clone();
            tconf.emit_stats = false;
        }
        let mut pointer_hops = 0;
        // Each turn follows one qualifier or pointer; a chain longer than
        // any real one (a CONST that is its own target) is a cycle.
        let mut turns = 0;
        loop {
            turns += 1;
            if turns > MAX_NESTING {
                self.out.push_str("<type cycle>");
                return;
            }
            match self.model.get(t) {
                Some(Node::Pointer(p)) if *p != 0 => {
                    let p = *p;
                    let Some(pn) = self.model.get(p) else {
                        self.type_not_found(&tconf, name.as_deref());
                        return;
                    };
                    if let Node::FuncProto { .. } = pn {
                        let s = self.ftype_text(
                            p,
                            name.as_deref(),
                            false,
                            true,
                            tconf.type_spacing,
                            true,
                        );
                        self.out.push_str(&s);
                        return;
                    }
                    let anon_aggregate = (self.model.is_struct(p)
                        || self.model.is_union(p)
                        || self.model.is_enum(p))
                        && self.model.type_name(p).is_none();
                    if anon_aggregate {
                        pointer_hops += 1;
                        if pointer_hops > 1 {
                            self.type_not_found(&tconf, name.as_deref());
                            return;
                        }
                        let n = format!("* {}", name.as_deref().unwrap_or("(null)"));
                        tconf.rel_offset = true;
                        name = Some(n);
                        t = p;
                        tconf.type_spacing -= 8;
                        tconf.suffix = name.clone();
                        tconf.emit_stats = false;
                        continue;
                    }
                    self.default_decl(t, name.as_deref(), &tconf);
                    return;
                }
                Some(Node::FuncProto { .. }) => {
                    let s =
                        self.ftype_text(t, name.as_deref(), false, false, tconf.type_spacing, true);
                    self.out.push_str(&s);
                    return;
                }
                Some(Node::Const(inner)) => {
                    self.out.push_str("const ");
                    tconf.type_spacing -= 6;
                    let inner = *inner;
                    if self.ty(inner).is_some() {
                        t = inner;
                        continue;
                    }
                    self.default_decl(t, name.as_deref(), &tconf);
                    return;
                }
                Some(Node::Array { .. }) => {
                    self.array(t, name.as_deref(), &tconf);
                    return;
                }
                Some(Node::Class(_) | Node::Enum { .. }) => {
                    self.aggregate_decl(t, name.as_deref(), &mut tconf);
                    return;
                }
                _ => {
                    self.default_decl(t, name.as_deref(), &tconf);
                    return;
                }
            }
        }
    }

    /// With -E: `/* typedef a -> b */ ` for the typedefs `t` goes through,
    /// and the type they stand for; `None` when the chain ends in no type
    /// or a cycle (said in the output).
    fn expand_typedefs(
        &mut self,
        mut t: TypeId,
        conf: &Conf,
        name: Option<&str>,
    ) -> Option<TypeId> {
        let mut first = true;
        let mut hops = 0;
        while let Some(Node::Typedef { name: tn, ty }) = self.model.get(t) {
            let (tn, ty) = (*tn, *ty);
            let _ = write!(
                self.out,
                "{}{}",
                if first { "/* typedef " } else { " -> " },
                tn.unwrap_or("(null)")
            );
            first = false;
            hops += 1;
            if hops > MAX_NESTING {
                self.out.push_str("<type cycle>");
                return None;
            }
            match self.ty(ty) {
                Some(next) => t = next,
                None => {
                    self.type_not_found(conf, name);
                    return None;
                }
            }
        }
        if !first {
            self.out.push_str(" */ ");
        }
        Some(t)
    }

    /// A struct, union or enum member: a union or an expanded type in
    /// full, a named one by its tag.
    fn aggregate_decl(&mut self, t: TypeId, name: Option<&str>, tconf: &mut Conf) {
        match self.model.get(t) {
            Some(Node::Class(c)) => {
                let nm = name.unwrap_or("");
                if c.is_union {
                    self.union_decl(t, name, tconf);
                } else if let Some(cn) = c.name.filter(|_| !self.view.expand_types) {
                    self.out.push_str("struct ");
                    pad(&mut self.out, cn, tconf.type_spacing - 7, true);
                    self.out.push(' ');
                    self.out.push_str(nm);
                } else {
                    self.model.find_holes(t);
                    tconf.type_spacing -= 8;
                    self.class(t, tconf);
                }
            }
            Some(Node::Enum { name: en, .. }) => {
                if let Some(en) = en.filter(|_| !self.view.expand_types) {
                    self.out.push_str("enum ");
                    pad(&mut self.out, en, tconf.type_spacing - 5, true);
                    self.out.push(' ');
                    self.out.push_str(name.unwrap_or(""));
                } else {
                    self.enumeration(t, tconf);
                }
            }
            _ => {}
        }
    }

    fn type_not_found(&mut self, conf: &Conf, name: Option<&str>) {
        pad(&mut self.out, "<ERROR", conf.type_spacing, true);
        let _ = write!(self.out, "> {}", name.unwrap_or("(null)"));
    }

    /// `"%-*s %s"`: type name padded to the type column, then the name.
    fn default_decl(&mut self, t: TypeId, name: Option<&str>, conf: &Conf) {
        let tn = cut(self.tag_name(Some(t)), 128);
        pad(&mut self.out, &tn, conf.type_spacing, true);
        self.out.push(' ');
        self.out.push_str(name.unwrap_or("(null)"));
    }

    fn cacheline_boundary(&mut self, conf: &Conf, offset: u32) {
        let Some(slot) = conf.cacheline else { return };
        let size = self.cacheline_size;
        let cacheline = offset / size;
        if cacheline > self.cachelines[slot] {
            let pos = offset % size;
            let bytes = offset - pos;
            if pos == 0 {
                let _ = writeln!(
                    self.out,
                    "/* --- cacheline {cacheline} boundary ({bytes} bytes) --- */"
                );
            } else {
                let _ = writeln!(
                    self.out,
                    "/* --- cacheline {cacheline} boundary ({bytes} bytes) was {pos} byte{} ago --- */",
                    plural(pos)
                );
            }
            tabs(&mut self.out, conf.indent);
            self.cachelines[slot] = cacheline;
        }
    }

    /// `class_member__fprintf`: one member line with its offset comment.
    fn member(&mut self, class: TypeId, idx: usize, union_member: bool, ty: TypeId, conf: &Conf) {
        let Some(m) = self
            .model
            .class(class)
            .and_then(|c| c.members.get(idx))
            .cloned()
        else {
            return;
        };
        let size = m.byte_size as i32;
        let mut sconf = conf.clone();
        let mut offset = m.byte_offset;
        if !sconf.rel_offset {
            offset = offset.wrapping_add(sconf.base_offset);
            if !union_member {
                sconf.base_offset = offset;
            }
        }
        if m.bitfield_offset < 0 {
            offset = offset.wrapping_add(m.byte_size as u32);
        }
        self.cacheline_boundary(conf, offset);
        let start = self.out.len();
        let aggregate =
            self.model.is_struct(ty) || self.model.is_union(ty) || self.model.is_enum(ty);
        if aggregate {
            self.type_fprintf(Some(ty), None, &sconf);
            if let Some(n) = m.name {
                if self.model.type_name(ty).is_none() || self.view.expand_types {
                    self.out.push(' ');
                }
                self.out.push_str(n);
            }
        } else {
            self.type_fprintf(Some(ty), Some(m.name.unwrap_or("(null)")), &sconf);
        }
        if m.bitfield_size != 0 {
            let _ = write!(self.out, ":{}", m.bitfield_size);
        }
        let mut alignment_printed = 0;
        if m.alignment != 0 {
            let before = self.out.len();
            let _ = write!(self.out, " __attribute__((__aligned__({})))", m.alignment);
            alignment_printed = (self.out.len() - before) as i32;
        }
        self.out.push(';');
        let bitfield_offset = if m.bitfield_offset < 0 {
            (m.byte_size as i32 * 8 + m.bitfield_offset as i32) as u32
        } else {
            m.bitfield_offset as u32
        };
        if aggregate && self.model.type_name(ty).is_none() {
            let mut slen = alignment_printed + m.name.map_or(-1, |n| n.len() as i32);
            if self.model.is_struct(ty) && self.model.class(ty).is_some_and(|c| c.is_packed) {
                slen += "__attribute__((__packed__))".len() as i32 + 1;
            }
            pad(
                &mut self.out,
                " ",
                sconf.type_spacing + sconf.name_spacing - slen - 3,
                false,
            );
            self.offset_comment(offset, &m, bitfield_offset, size);
        } else {
            let printed = (self.out.len() - start) as i32;
            let spacing = sconf.type_spacing + sconf.name_spacing - printed;
            pad(&mut self.out, " ", spacing.max(0), false);
            self.offset_comment(offset, &m, bitfield_offset, size);
        }
    }

    fn offset_comment(&mut self, offset: u32, m: &super::model::Member, bfo: u32, size: i32) {
        let hex = self.view.hex;
        let num = |v: u32, width: usize| {
            if hex {
                format!("{:>width$}", c_hex(v as u64))
            } else {
                format!("{v:width$}")
            }
        };
        let _ = write!(self.out, "/* {}", num(offset, 5));
        let mut size_spacing = 5;
        if m.bitfield_size != 0 {
            let _ = write!(self.out, ":{}", num(bfo, 2));
            size_spacing -= 3;
        }
        let _ = write!(self.out, " {} */", num(size as u32, size_spacing));
    }

    /// `union_decl__fprintf`: `union name member`, or the body in full
    /// (anonymous, or `-E`).
    fn union_decl(&mut self, id: TypeId, name: Option<&str>, conf: &Conf) {
        match self.model.type_name(id).filter(|_| !self.view.expand_types) {
            Some(un) => {
                self.out.push_str("union ");
                pad(&mut self.out, un, conf.type_spacing - 6, true);
                self.out.push(' ');
                self.out.push_str(name.unwrap_or(""));
            }
            None => {
                let mut tconf = conf.clone();
                tconf.type_spacing -= 8;
                tconf.suffix = name.map(str::to_owned);
                self.union(id, &tconf);
            }
        }
    }

    /// `union__fprintf`.
    fn union(&mut self, id: TypeId, conf: &Conf) {
        let indent = conf.indent.min(MAX_INDENT);
        let name = self.model.type_name(id);
        let _ = writeln!(
            self.out,
            "{}union{}{} {{",
            if conf.typedef_prefix { "typedef " } else { "" },
            if name.is_some() { " " } else { "" },
            name.unwrap_or("")
        );
        let mut uconf = conf.clone();
        uconf.indent = indent + 1;
        self.model.infer_union_packed(id);
        let slot = match uconf.cacheline {
            Some(s) => s,
            None => {
                self.cachelines.push(0);
                self.cachelines.len() - 1
            }
        };
        uconf.cacheline = Some(slot);
        let initial = self.cachelines[slot];
        let n = self.model.class(id).map_or(0, |c| c.members.len());
        for i in 0..n {
            let Some(ty) = self.model.class(id).map(|c| c.members[i].ty) else {
                break;
            };
            if self.ty(ty).is_none() {
                tabs(&mut self.out, uconf.indent);
                self.not_found("union__fprintf", 1077, ty);
                continue;
            }
            uconf.union_member = true;
            tabs(&mut self.out, uconf.indent);
            self.member(id, i, true, ty, &uconf);
            self.out.push('\n');
            self.cachelines[slot] = initial;
        }
        tabs(&mut self.out, indent);
        self.out.push('}');
        if let Some(s) = &conf.suffix {
            let _ = write!(self.out, " {s}");
        }
    }

    /// `/* XXX N bytes hole, try to pack */`, indented, without a newline.
    fn hole_comment(&mut self, indent: i32, n: u32, unit: &str) {
        tabs(&mut self.out, indent);
        let _ = write!(
            self.out,
            "/* XXX {n} {unit}{} hole, try to pack */",
            plural(n)
        );
    }

    /// `class__fprintf_member_type_holes`: after a member of struct type,
    /// what that type has of holes, paddings and flexible arrays.
    fn member_type_holes(
        &mut self,
        t: TypeId,
        acc: &mut MemberTypesHoles,
        newline: &mut u32,
        indent: i32,
    ) {
        self.model.find_holes(t);
        self.model.infer_packed(t);
        let Some(h) = self.model.class(t).map(|c| c.holes) else {
            return;
        };
        let flexible = self.model.has_flexible_array(t);
        let embedded = self.model.has_embedded_flexible_array(t);
        if h.padding == 0
            && h.bit_padding == 0
            && h.nr_holes == 0
            && h.nr_bit_holes == 0
            && !flexible
            && !embedded
        {
            return;
        }
        self.newline_once(newline);
        self.out.push('\n');
        tabs(&mut self.out, indent);
        let mut parts: Vec<String> = Vec::new();
        if flexible {
            parts.push("a flexible array".to_owned());
            acc.nr_flexible_array_members = acc.nr_flexible_array_members.wrapping_add(1);
        }
        if embedded {
            parts.push("embedded flexible array(s)".to_owned());
            acc.nr_embedded_flexible_array_members =
                acc.nr_embedded_flexible_array_members.wrapping_add(1);
        }
        if h.padding != 0 {
            acc.nr_paddings = acc.nr_paddings.wrapping_add(1);
            acc.sum_paddings = acc.sum_paddings.wrapping_add(h.padding as u32);
            parts.push(format!("{} of padding", counted(h.padding as u32, "byte")));
        }
        if h.bit_padding != 0 {
            acc.nr_with_bit_paddings = acc.nr_with_bit_paddings.wrapping_add(1);
            acc.sum_bit_paddings = acc.sum_bit_paddings.wrapping_add(h.bit_padding as u32);
            parts.push(format!(
                "{} of padding",
                counted(h.bit_padding as u32, "bit")
            ));
        }
        if h.nr_holes != 0 {
            acc.nr_with_holes = acc.nr_with_holes.wrapping_add(1);
            acc.total_nr_holes = acc.total_nr_holes.wrapping_add(h.nr_holes as u16);
            parts.push(counted(h.nr_holes as u32, "hole"));
        }
        if h.nr_bit_holes != 0 {
            acc.nr_with_bit_holes = acc.nr_with_bit_holes.wrapping_add(1);
            acc.total_nr_bit_holes = acc.total_nr_bit_holes.wrapping_add(h.nr_bit_holes as u16);
            parts.push(counted(h.nr_bit_holes as u32, "bit hole"));
        }
        let _ = write!(self.out, "/* XXX last struct has {} */", parts.join(", "));
    }

    fn newline_once(&mut self, newline: &mut u32) {
        if *newline == 0 {
            self.out.push('\n');
        }
        *newline += 1;
    }

    /// `__class__fprintf`: a struct body with holes, paddings and, at the
    /// top level, the statistics.
    fn class(&mut self, id: TypeId, conf: &Conf) {
        let mut cconf = conf.clone();
        let name = self.model.type_name(id);
        let _ = write!(
            self.out,
            "{}struct{}{}",
            if cconf.typedef_prefix { "typedef " } else { "" },
            if name.is_some() { " " } else { "" },
            name.unwrap_or("")
        );
        let indent = cconf.indent.min(MAX_INDENT);
        if cconf.cacheline.is_none() {
            self.cachelines.push(0);
            cconf.cacheline = Some(self.cachelines.len() - 1);
        }
        cconf.indent = indent + 1;
        self.model.infer_packed(id);
        self.out.push_str(" {\n");

        let mut newline = 0u32;
        let mut sums = ClassSums::default();
        let Some((holes, n)) = self.model.class(id).map(|c| (c.holes, c.members.len())) else {
            return;
        };
        // Holes before the first member: pahole ends these lines, and
        // starts the ones after a member.
        if holes.pre_bit_hole > 0 {
            self.newline_once(&mut newline);
            self.hole_comment(cconf.indent, holes.pre_bit_hole as u32, "bit");
            self.out.push('\n');
            sums.sum_bit_holes += holes.pre_bit_hole as u32;
        }
        if holes.pre_hole > 0 {
            self.newline_once(&mut newline);
            self.hole_comment(cconf.indent, holes.pre_hole as u32, "byte");
            self.out.push('\n');
            sums.sum_holes += holes.pre_hole as u32;
        }
        let last = self.class_members(id, n, holes.pre_hole, &mut cconf, &mut newline, &mut sums);

        let Some(c) = self.model.class(id).cloned() else {
            return;
        };
        self.force_padding(&c, last, &cconf);
        if cconf.emit_stats {
            self.class_stats(id, &c, &cconf, &sums);
        }
        tabs(&mut self.out, indent);
        self.out.push('}');
        if c.is_packed {
            self.out.push_str(" __attribute__((__packed__))");
        }
        if let Some(s) = &cconf.suffix {
            let _ = write!(self.out, " {s}");
        }
        if c.alignment != 0 && !c.is_packed {
            let _ = write!(self.out, " __attribute__((__aligned__({})))", c.alignment);
        }
    }

    /// The `n` members of struct `id`, each with the notes before it
    /// (bitfields combined, forced alignment) and the holes after it.
    /// Returns the index of the last member printed.
    fn class_members(
        &mut self,
        id: TypeId,
        n: usize,
        pre_hole: u16,
        cconf: &mut Conf,
        newline: &mut u32,
        sums: &mut ClassSums,
    ) -> Option<usize> {
        let mut last_size: u64 = 0;
        let mut last: Option<usize> = None;
        for i in 0..n {
            let Some(pos) = self.model.class(id).map(|c| c.members[i].clone()) else {
                break;
            };
            let lastm = last.and_then(|l| self.model.class(id).map(|c| c.members[l].clone()));
            if pos.alignment != 0 {
                let forced_hole = match &lastm {
                    Some(l) => l.hole as u32,
                    None => pre_hole as u32,
                };
                if forced_hole != 0 {
                    sums.nr_forced_alignment_holes += 1;
                    sums.sum_forced_alignment_holes += forced_hole;
                }
                sums.nr_forced_alignments += 1;
            }
            if let Some(l) = &lastm {
                if last_size != 0 && !self.bitfield_notes(l, &pos, last_size, cconf, newline) {
                    last = Some(i);
                    continue;
                }
            }
            if *newline != 0 {
                self.out.push('\n');
                *newline = 0;
            }
            let Some(pt) = self.ty(pos.ty) else {
                tabs(&mut self.out, cconf.indent);
                self.not_found("__class__fprintf", 1812, pos.ty);
                last = Some(i);
                continue;
            };
            cconf.last_member = i + 1 == n;
            cconf.first_member = last.is_none();
            let size = pos.byte_size;
            tabs(&mut self.out, cconf.indent);
            self.member(id, i, false, pt, cconf);

            if self.model.is_struct(pt) {
                self.member_type_holes(pt, &mut sums.member_types, newline, cconf.indent);
            }
            self.holes_after(id, i, cconf.indent, newline, sums);
            self.out.push('\n');

            if pos.bitfield_size != 0 {
                sums.sum_bits += pos.bitfield_size as u32;
            } else {
                sums.sum_bytes = sums.sum_bytes.wrapping_add(pos.byte_size as u32);
            }
            // The size of the storage the next member may share: reset on
            // the first member, after a zero-sized one, at a new offset, and
            // where a bitfield starts inside a plain member's bytes.
            let new_storage = match &lastm {
                None => true,
                Some(l) => {
                    last_size == 0
                        || l.byte_offset != pos.byte_offset
                        || (l.bitfield_size == 0 && pos.bitfield_size != 0)
                }
            };
            if new_storage {
                last_size = size;
            }
            last = Some(i);
        }
        last
    }

    /// Before member `pos` when member `l` before it shares its storage
    /// (`last_size` bytes): the bits left unused by `l` spelled as an
    /// anonymous bitfield, and whether the two bitfields are combined.
    /// False when `pos`'s type is missing (reported).
    fn bitfield_notes(
        &mut self,
        l: &Member,
        pos: &Member,
        last_size: u64,
        cconf: &Conf,
        newline: &mut u32,
    ) -> bool {
        if l.bit_hole != 0 && pos.bitfield_size != 0 {
            let mut bitfield_size = l.bit_hole;
            let Some(pt) = self.ty(pos.ty) else {
                tabs(&mut self.out, cconf.indent);
                self.not_found("__class__fprintf", 1756, pos.ty);
                return false;
            };
            if l.byte_offset != pos.byte_offset {
                self.out.push('\n');
                tabs(&mut self.out, cconf.indent);
                self.out
                    .push_str("/* Force alignment to the next boundary: */\n");
                bitfield_size = 0;
            }
            tabs(&mut self.out, cconf.indent);
            self.type_fprintf(Some(pt), Some(""), cconf);
            let _ = writeln!(self.out, ":{bitfield_size};");
        }
        if pos.byte_offset < l.byte_offset
            || (pos.byte_offset == l.byte_offset && l.bitfield_size == 0 && pos.bitfield_size != 0)
        {
            self.newline_once(newline);
            tabs(&mut self.out, cconf.indent);
            self.out
                .push_str("/* Bitfield combined with previous fields */\n");
        } else {
            let cc_last_size = pos.byte_offset as i64 - l.byte_offset as i64;
            if cc_last_size > 0 && (cc_last_size as u64) < last_size {
                self.newline_once(newline);
                tabs(&mut self.out, cconf.indent);
                self.out
                    .push_str("/* Bitfield combined with next fields */\n");
            }
        }
        true
    }

    /// The holes after member `i` of struct `id`, as find_holes left them.
    fn holes_after(
        &mut self,
        id: TypeId,
        i: usize,
        indent: i32,
        newline: &mut u32,
        sums: &mut ClassSums,
    ) {
        let (hole, bit_hole) = self
            .model
            .class(id)
            .map_or((0, 0), |c| (c.members[i].hole, c.members[i].bit_hole));
        if bit_hole != 0 {
            self.newline_once(newline);
            self.out.push('\n');
            self.hole_comment(indent, bit_hole as u32, "bit");
            sums.sum_bit_holes += bit_hole as u32;
        }
        if hole > 0 {
            self.newline_once(newline);
            self.out.push('\n');
            self.hole_comment(indent, hole as u32, "byte");
            sums.sum_holes += hole as u32;
        }
    }

    /// Trailing padding spelled as bitfields of the last member's type.
    fn force_padding(&mut self, c: &Class, last: Option<usize>, cconf: &Conf) {
        let holes = c.holes;
        // Only DWARF says which alignments were forced: with it, pahole
        // spells trailing padding after a power-of-two-sized member as
        // explicit bitfields.
        if holes.padding != 0 && c.alignment == 0 && self.has_alignment_info {
            if let Some(l) = last {
                let lty = c.members[l].ty;
                let size = if self.ty(lty).is_some() {
                    self.model.size(lty)
                } else {
                    u64::MAX
                };
                // A line per `size` bytes of padding, as pahole; corrupt BTF
                // can claim gigabytes of it, so past a page's worth none.
                if size.is_power_of_two()
                    && holes.padding as u32 > self.model.addr_size
                    && (holes.padding as u64) / size <= 4096
                {
                    self.out.push('\n');
                    tabs(&mut self.out, cconf.indent);
                    self.out.push_str("/* Force padding: */\n");
                    let bit_size = size * 8;
                    let mut added = 0u64;
                    while added < holes.padding as u64 {
                        tabs(&mut self.out, cconf.indent);
                        self.type_fprintf(self.ty(lty), Some(""), cconf);
                        let _ = writeln!(self.out, ":{bit_size};");
                        added += size;
                    }
                }
            }
        }
    }

    /// The statistics after a top-level struct: size, sums, holes and
    /// paddings, then what its member types have of them.
    fn class_stats(&mut self, id: TypeId, c: &Class, cconf: &Conf, sums: &ClassSums) {
        let holes = c.holes;
        let ClassSums {
            sum_bytes,
            sum_bits,
            sum_holes,
            sum_bit_holes,
            ..
        } = *sums;
        let cachelines = self.model.size(id).div_ceil(self.cacheline_size as u64);
        self.out.push('\n');
        tabs(&mut self.out, cconf.indent);
        let _ = writeln!(
            self.out,
            "/* size: {}, cachelines: {cachelines}, members: {} */",
            c.size as i32,
            c.members.len() as u16
        );
        if sum_holes > 0 || sum_bit_holes > 0 {
            if sum_bytes > 0 {
                tabs(&mut self.out, cconf.indent);
                let _ = write!(self.out, "/* sum members: {sum_bytes}");
                if sum_holes > 0 {
                    let _ = write!(
                        self.out,
                        ", holes: {}, sum holes: {sum_holes}",
                        holes.nr_holes
                    );
                }
                self.out.push_str(" */\n");
            }
            if sum_bits > 0 {
                tabs(&mut self.out, cconf.indent);
                let _ = write!(self.out, "/* sum bitfield members: {sum_bits} bits");
                if sum_bit_holes > 0 {
                    let _ = write!(
                        self.out,
                        ", bit holes: {}, sum bit holes: {sum_bit_holes} bits",
                        holes.nr_bit_holes
                    );
                } else {
                    let _ = write!(self.out, " ({} bytes)", sum_bits / 8);
                }
                self.out.push_str(" */\n");
            }
        }
        if holes.padding > 0 {
            tabs(&mut self.out, cconf.indent);
            let _ = writeln!(self.out, "/* padding: {} */", holes.padding);
        }
        self.member_types_stats(&sums.member_types, cconf.indent);
        if holes.bit_padding > 0 {
            tabs(&mut self.out, cconf.indent);
            let _ = writeln!(self.out, "/* bit_padding: {} bits */", holes.bit_padding);
        }
        self.forced_alignment_stats(sums, cconf.indent);
        self.flexible_array_stats(&sums.member_types, cconf.indent);
        let last_cacheline = cconf.base_offset.wrapping_add(c.size) % self.cacheline_size;
        if last_cacheline != 0 {
            tabs(&mut self.out, cconf.indent);
            let _ = writeln!(self.out, "/* last cacheline: {last_cacheline} bytes */");
        }
        let size_diff = (c.size as i64) * 8
            - (sum_bytes as i64 * 8
                + sum_bits as i64
                + sum_holes as i64 * 8
                + sum_bit_holes as i64
                + holes.padding as i64 * 8
                + holes.bit_padding as i64);
        let size_diff = size_diff as i32;
        if size_diff != 0 && !c.members.is_empty() {
            self.out.push('\n');
            tabs(&mut self.out, cconf.indent);
            let _ = writeln!(
                self.out,
                "/* BRAIN FART ALERT! {} bytes != {sum_bytes} (member bytes) + {sum_bits} (member bits) + {sum_holes} (byte holes) + {sum_bit_holes} (bit holes), diff = {size_diff} bits */",
                c.size as i32
            );
        }
    }

    /// What the member types have of holes, bit holes and paddings.
    fn member_types_stats(&mut self, mt: &MemberTypesHoles, indent: i32) {
        if mt.nr_with_holes > 0 || mt.nr_with_bit_holes > 0 || mt.nr_with_bit_paddings > 0 {
            tabs(&mut self.out, indent);
            let mut parts = Vec::new();
            if mt.nr_with_holes > 0 {
                parts.push(format!(
                    "holes: {}, total: {}",
                    mt.nr_with_holes, mt.total_nr_holes
                ));
            }
            if mt.nr_with_bit_holes > 0 {
                parts.push(format!(
                    "bit holes: {}, total: {}",
                    mt.nr_with_bit_holes, mt.total_nr_bit_holes
                ));
            }
            if mt.nr_with_bit_paddings > 0 {
                parts.push(format!(
                    "bit paddings: {}, total: {} bit{}",
                    mt.nr_with_bit_paddings,
                    mt.sum_bit_paddings,
                    if mt.sum_bit_paddings > 1 { "s" } else { "" }
                ));
            }
            let _ = writeln!(self.out, "/* member types with {} */", parts.join(", "));
        }
        if mt.nr_paddings > 0 {
            tabs(&mut self.out, indent);
            let _ = writeln!(
                self.out,
                "/* paddings: {}, sum paddings: {} */",
                mt.nr_paddings, mt.sum_paddings
            );
        }
    }

    /// Members whose alignment was forced, and the holes that made.
    fn forced_alignment_stats(&mut self, sums: &ClassSums, indent: i32) {
        let ClassSums {
            nr_forced_alignments,
            nr_forced_alignment_holes,
            sum_forced_alignment_holes,
            ..
        } = *sums;
        if nr_forced_alignments != 0 {
            tabs(&mut self.out, indent);
            let _ = write!(self.out, "/* forced alignments: {nr_forced_alignments}");
            if nr_forced_alignment_holes != 0 {
                let _ = write!(
                    self.out,
                    ", forced holes: {nr_forced_alignment_holes}, sum forced holes: {sum_forced_alignment_holes}"
                );
            }
            self.out.push_str(" */\n");
        }
    }

    /// Member types with a flexible array at their end or inside.
    fn flexible_array_stats(&mut self, mt: &MemberTypesHoles, indent: i32) {
        if mt.nr_flexible_array_members > 0 || mt.nr_embedded_flexible_array_members > 0 {
            tabs(&mut self.out, indent);
            self.out.push_str("/* flexible array members: ");
            if mt.nr_flexible_array_members > 0 {
                let _ = write!(self.out, "end: {}", mt.nr_flexible_array_members);
            }
            if mt.nr_embedded_flexible_array_members > 0 {
                let _ = write!(
                    self.out,
                    "{}middle: {}",
                    if mt.nr_flexible_array_members > 0 {
                        ", "
                    } else {
                        ""
                    },
                    mt.nr_embedded_flexible_array_members
                );
            }
            self.out.push_str(" */\n");
        }
    }
}
