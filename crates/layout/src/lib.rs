//! pahole's classic layout view: struct and union layouts with offsets,
//! sizes, holes, bit holes, paddings and cache line boundaries, printed
//! byte for byte as pahole 1.32 prints them (`pahole -C NAME FILE`,
//! `pahole FILE`, `--sizes`, `--holes N`, `-E`, `--hex`, `--contains`,
//! `-y`, `-a`).
//!
//! [`model`] is what pahole's loaders make of the types, [`print`](mod@print) the
//! text. The source is a [`Btf`] ([`Layout::from_btf`]) or DWARF
//! ([`dwarf`]: with its alignment attributes, instead of pahole's guesses
//! from BTF offsets).

#![warn(missing_docs)]

pub mod dwarf;
pub mod model;
pub mod print;

use rustc_hash::{FxHashMap, FxHashSet};

use btf::{Btf, TypeId};
use model::{Model, Node};
use print::Printer;
pub use print::View;

/// pahole's fallback cache line size, in bytes, when the CPU does not say
/// (and the usual x86 value).
pub const DEFAULT_CACHELINE: u32 = 64;

/// The L1 data cache line size in bytes, as pahole takes it from sysconf
/// ([`DEFAULT_CACHELINE`] when sysconf does not know).
pub fn host_cacheline_size() -> u32 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_LEVEL1_DCACHE_LINESIZE) };
    if n > 0 && n <= u16::MAX as libc::c_long {
        n as u32
    } else {
        DEFAULT_CACHELINE
    }
}

/// What to print, and how (pahole's filters and view flags).
#[derive(Clone, Copy, Debug, Default)]
pub struct Filter<'f> {
    /// `--holes N`: only structs with at least N holes (unions never).
    pub min_holes: usize,
    /// `--sizes`: `name<TAB>size<TAB>holes` lines instead of layouts.
    pub sizes: bool,
    /// `-y PREFIX`: only structs and unions whose name starts with it (an
    /// anonymous one's name is its first typedef's; one without any passes).
    pub prefix: Option<&'f str>,
    /// `-a`: anonymous structs and unions too, those a typedef names,
    /// printed as `typedef struct {...} name;`.
    pub anon_include: bool,
    /// `--contains`: for the type `-C` names, the names of the structs and
    /// unions with a member of exactly that type, instead of its layout.
    pub contains: bool,
    /// How each layout is printed (pahole's view flags).
    pub view: View,
}

/// Structs already printed in a run, by pahole's identity of a struct
/// (name, size, and each member's name, bit offset and bit size): pahole
/// prints each identity once, across units too.
#[derive(Default)]
pub struct Seen<'a>(FxHashSet<Identity<'a>>);

impl<'a> Seen<'a> {
    /// Whether `identity` is new (and now seen).
    fn insert(&mut self, identity: Identity<'a>) -> bool {
        self.0.insert(identity)
    }
}

type Identity<'a> = (&'a str, u32, Vec<(Option<&'a str>, u32, u8)>);

/// One unit of types as pahole sees it (all of a BTF, or one DWARF
/// compilation unit). The state pahole's inferences accumulate lives
/// here, so print in the order pahole does.
pub struct Layout<'a> {
    model: Model<'a>,
    cacheline_size: u32,
    has_alignment_info: bool,
    /// First type of each name that `-C` can find.
    by_name: FxHashMap<&'a str, TypeId>,
    /// The name of the first typedef of each type a typedef names
    /// (`cu__find_first_typedef_of_type`).
    first_typedef: FxHashMap<TypeId, Option<&'a str>>,
}

impl<'a> Layout<'a> {
    /// The view of BTF types, with pahole's BTF alignment guesses.
    pub fn from_btf(btf: &'a Btf, cacheline_size: u32) -> Layout<'a> {
        Layout::new(Model::new(btf, cacheline_size), cacheline_size, false)
    }

    /// The view of types a loader built. `has_alignment_info`: the source
    /// records alignments (DWARF), so pahole spells forced paddings out.
    pub fn new(model: Model<'a>, cacheline_size: u32, has_alignment_info: bool) -> Layout<'a> {
        let mut by_name = FxHashMap::default();
        let mut first_typedef = FxHashMap::default();
        for id in 1..model.nodes.len() as TypeId {
            if let Some(Node::Typedef { name, ty }) = model.get(id) {
                first_typedef.entry(*ty).or_insert(*name);
            }
            let name = match model.get(id) {
                Some(Node::Class(c)) if !c.declaration => c.name,
                Some(Node::Typedef { name, .. } | Node::Enum { name, .. }) => *name,
                _ => None,
            };
            if let Some(n) = name {
                by_name.entry(n).or_insert(id);
            }
        }
        Layout {
            model,
            cacheline_size,
            has_alignment_info,
            by_name,
            first_typedef,
        }
    }

    /// pahole's `cu__find_type_by_name`: the first struct, union, typedef
    /// or enum of that name that is not a declaration.
    pub fn find(&self, name: &str) -> Option<TypeId> {
        self.by_name.get(name).copied()
    }

    /// Number of type ids (0 included).
    pub fn type_count(&self) -> u32 {
        self.model.nodes.len() as u32
    }

    /// What `pahole -C NAME` prints for the type `id` that NAME found: its
    /// layout, or with `--contains` the structs and unions holding it.
    pub fn print_named(
        &mut self,
        id: TypeId,
        filter: Filter<'_>,
        seen: &mut Seen<'a>,
        out: &mut String,
    ) {
        if filter.contains {
            self.print_containers(id, filter, seen, out);
            return;
        }
        // pahole 1.32 prints it through its formatter (the layout, or a
        // `--sizes` line), then ends it with one more newline.
        if filter.sizes {
            self.model.find_holes(id);
            self.print_sizes(id, out);
        } else {
            self.print_type(id, filter.view, None, out);
        }
        out.push('\n');
    }

    /// `size_formatter`: `name<TAB>size<TAB>holes`.
    fn print_sizes(&mut self, id: TypeId, out: &mut String) {
        let (name, size, holes) = match self.model.class(id) {
            Some(c) => (
                c.name,
                c.size,
                if c.is_union { 0 } else { c.holes.nr_holes },
            ),
            None => (self.model.type_name(id), self.model.size(id) as u32, 0),
        };
        out.push_str(name.unwrap_or("(null)"));
        out.push('\t');
        out.push_str(&(size as i32).to_string());
        out.push('\t');
        out.push_str(&holes.to_string());
        out.push('\n');
    }

    /// The layout of one type and a newline; `typedef_name`: an anonymous
    /// struct or union printed under that typedef.
    fn print_type(&mut self, id: TypeId, view: View, typedef_name: Option<&str>, out: &mut String) {
        self.model.find_holes(id);
        let mut p = Printer::new(
            &mut self.model,
            self.cacheline_size,
            self.has_alignment_info,
        );
        p.view = view;
        p.out = std::mem::take(out);
        p.top_level(id, typedef_name);
        *out = p.out;
        out.push('\n');
    }

    /// `print_containers`: each named struct or union that passes the
    /// filter and has a member whose type is `contained` itself (no typedef
    /// or qualifier between), once per identity, one name a line.
    fn print_containers(
        &mut self,
        contained: TypeId,
        filter: Filter<'_>,
        seen: &mut Seen<'a>,
        out: &mut String,
    ) {
        for id in 1..self.type_count() {
            let Some(c) = self.model.class(id) else {
                continue;
            };
            let Some(name) = c.name else { continue };
            if !c.members.iter().any(|m| m.ty == contained) || !self.passes(id, filter) {
                continue;
            }
            if !seen.insert(self.identity(id, name)) {
                continue;
            }
            out.push_str(name);
            out.push('\n');
        }
    }

    /// pahole's identity of a struct: name, size and each member's name,
    /// bit offset and bit size.
    fn identity(&self, id: TypeId, name: &'a str) -> Identity<'a> {
        let c = self.model.class(id);
        (
            name,
            c.map_or(0, |c| c.size),
            c.map(|c| {
                c.members
                    .iter()
                    .map(|m| (m.name, m.bit_offset, m.bitfield_size))
                    .collect()
            })
            .unwrap_or_default(),
        )
    }

    /// `class__filter` for the filters btfkit takes: defined at the top
    /// of its unit, not a declaration, named (or `-a`), the `-y` prefix,
    /// and for structs `--holes`.
    fn passes(&mut self, id: TypeId, filter: Filter<'_>) -> bool {
        let Some(c) = self.model.class(id) else {
            return false;
        };
        if c.declaration || !c.top_level || (c.name.is_none() && !filter.anon_include) {
            return false;
        }
        let is_union = c.is_union;
        if let Some(prefix) = filter.prefix {
            let name = c
                .name
                .or_else(|| self.first_typedef.get(&id).copied().flatten());
            if name.is_some_and(|n| !n.starts_with(prefix)) {
                return false;
            }
        }
        if is_union {
            return filter.min_holes == 0;
        }
        self.model.find_holes(id);
        self.model.class(id).map_or(0, |c| c.holes.nr_holes) as usize >= filter.min_holes
    }

    /// Every named struct and union in id order, once per identity, as
    /// pahole without `-C` prints them.
    pub fn print_all(&mut self, filter: Filter<'_>, seen: &mut Seen<'a>, out: &mut String) {
        for id in 1..self.type_count() {
            self.print_one_of_all(id, filter, seen, out);
        }
    }

    /// One step of [`Layout::print_all`]: prints `id` if pahole would
    /// (`print_classes` and `class_formatter`).
    fn print_one_of_all(
        &mut self,
        id: TypeId,
        filter: Filter<'_>,
        seen: &mut Seen<'a>,
        out: &mut String,
    ) {
        if !self.passes(id, filter) {
            return;
        }
        let Some(c) = self.model.class(id) else {
            return;
        };
        let typedef_name = match c.name {
            // Each identity once; anonymous ones are not looked up.
            Some(name) => {
                if !seen.insert(self.identity(id, name)) {
                    return;
                }
                None
            }
            // Anonymous: under its first typedef's name, or not at all (it
            // prints inside the types that hold it); `--sizes` lists it.
            None => match self.first_typedef.get(&id) {
                Some(name) => Some(*name),
                None if filter.sizes => None,
                None => return,
            },
        };
        if filter.sizes {
            self.print_sizes(id, out);
            return;
        }
        self.print_type(
            id,
            filter.view,
            typedef_name.map(|n| n.unwrap_or("(null)")),
            out,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::model::infer_alignment;
    use super::{Filter, Layout, Seen};
    use btf::{Btf, Member, Param, Type, TypeData};

    /// Reference cycles only bad input has (an anonymous struct holding
    /// itself, a prototype taking a pointer to itself) print a placeholder
    /// and end.
    #[test]
    fn cycles_end() {
        let mut b = Btf::new();
        let name = b.add_str("outer");
        let m = b.add_str("m");
        // [1] anonymous struct { [1] m; }, [2] struct outer { [1] m; [4] f; }
        let anon = b.add_type(Type::new(
            0,
            TypeData::Struct {
                size: 8,
                members: Default::default(),
            },
        ));
        let self_member = Member {
            name_off: m,
            ty: anon,
            offset: 0,
        };
        if let Some(t) = b.type_by_id_mut(anon) {
            t.data = TypeData::Struct {
                size: 8,
                members: vec![self_member].into(),
            };
        }
        let proto = b.add_type(Type::new(
            0,
            TypeData::FuncProto {
                ret: 0,
                params: Default::default(),
            },
        ));
        let ptr = b.add_type(Type::new(0, TypeData::Ptr { ty: proto }));
        if let Some(t) = b.type_by_id_mut(proto) {
            t.data = TypeData::FuncProto {
                ret: ptr,
                params: vec![Param {
                    name_off: 0,
                    ty: ptr,
                }]
                .into(),
            };
        }
        let f = Member {
            name_off: m,
            ty: ptr,
            offset: 64,
        };
        b.add_type(Type::new(
            name,
            TypeData::Struct {
                size: 16,
                members: vec![self_member, f].into(),
            },
        ));
        let mut layout = Layout::from_btf(&b, 64);
        let mut out = String::new();
        layout.print_all(Filter::default(), &mut Seen::default(), &mut out);
        assert!(out.starts_with("struct outer {"), "{out}");
        assert!(out.contains("<type cycle>"), "{out}");
    }

    /// A member whose CONST is its own target, and a struct claiming four
    /// gigabytes of tail padding of `char` (both found by the layout fuzz
    /// target as hangs): the first ends in `<type cycle>`, the second gets
    /// no "Force padding" lines.
    #[test]
    fn const_cycles_and_huge_padding_end() {
        let mut b = Btf::new();
        let m = b.add_str("m");
        let c = b.add_type(Type::new(0, TypeData::Const { ty: 1 }));
        let ch_name = b.add_str("char");
        let ch = b.add_type(Type::new(
            ch_name,
            TypeData::Int {
                size: 1,
                encoding: 1,
                offset: 0,
                bits: 8,
            },
        ));
        let name = b.add_str("s");
        b.add_type(Type::new(
            name,
            TypeData::Struct {
                size: u32::MAX,
                members: vec![
                    Member {
                        name_off: m,
                        ty: c,
                        offset: 0,
                    },
                    Member {
                        name_off: m,
                        ty: ch,
                        offset: 64,
                    },
                ]
                .into(),
            },
        ));
        let mut layout = Layout::from_btf(&b, 64);
        let mut out = String::new();
        layout.print_all(Filter::default(), &mut Seen::default(), &mut out);
        assert!(out.contains("<type cycle>"), "{out}");
        assert!(!out.contains("Force padding"), "{out}");
        assert!(out.len() < 1 << 16, "{} bytes", out.len());
    }

    /// Structs that each hold two of the one before, 40 deep (bad input:
    /// the sizes lie): `-E` would print 2^40 lines; it stops at its
    /// budget with a placeholder.
    #[test]
    fn expansion_of_doubling_types_ends() {
        let mut b = Btf::new();
        let int_name = b.add_str("int");
        let mut prev = b.add_type(Type::new(
            int_name,
            TypeData::Int {
                size: 4,
                encoding: 1,
                offset: 0,
                bits: 32,
            },
        ));
        let (x, y) = (b.add_str("x"), b.add_str("y"));
        for level in 0..40 {
            let name = b.add_str(&format!("l{level}"));
            let members = [x, y].map(|name_off| Member {
                name_off,
                ty: prev,
                offset: 0,
            });
            prev = b.add_type(Type::new(
                name,
                TypeData::Struct {
                    size: 8,
                    members: members.to_vec().into(),
                },
            ));
        }
        let mut layout = Layout::from_btf(&b, 64);
        let mut out = String::new();
        let filter = Filter {
            view: super::View {
                hex: false,
                expand_types: true,
            },
            ..Filter::default()
        };
        layout.print_named(prev, filter, &mut Seen::default(), &mut out);
        assert!(out.starts_with("struct l39 {"), "{}", &out[..100]);
        assert!(out.contains("<type too large to expand>"));
        assert!(out.len() < 80 << 20, "{} bytes", out.len());
    }

    /// Cases worked by hand from pahole's `class__infer_alignment`.
    #[test]
    fn alignment_guess() {
        // 4-byte gap before an offset-16 member with natural alignment 8:
        // the power of two above the gap is 8, natural: no attribute.
        assert_eq!(infer_alignment(64, 16, 8, 12), 0);
        // A 40-byte gap to offset 64: 64 > 8, and 64 is the cache line.
        assert_eq!(infer_alignment(64, 64, 8, 24), 64);
        // A 24-byte gap to offset 128: 32, widened to the cache line.
        assert_eq!(infer_alignment(64, 128, 8, 104), 64);
        // Odd offsets never get an alignment; nor do overlaps.
        assert_eq!(infer_alignment(64, 17, 1, 2), 0);
        assert_eq!(infer_alignment(64, 0, 4, 8), 0);
    }
}
