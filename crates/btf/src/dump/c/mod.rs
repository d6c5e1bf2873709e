//! A C header from BTF, byte for byte what `bpftool btf dump file F format c`
//! prints. The oracle is Debian's bpftool 7.1, linked with the libbpf of
//! Linux 6.1 (stable): libbpf 1.1's `btf_dump` without the `mode(byte)` /
//! `mode(word)` attributes on 1- and 8-byte enums, and with the later fix
//! that writes an empty parameter list as `(void)`.
//!
//! # The problem
//!
//! BTF is a graph; C wants declarations in an order where everything a
//! definition *embeds* is complete before it, while things reached only
//! through a pointer may merely be forward-declared. Types may refer to
//! themselves through pointers, anonymous structs, unions and enums have to
//! be written inline where they are used, and several distinct types may
//! share a name (BTF from different compilation units is not guaranteed to be
//! unique after dedup), which C forbids.
//!
//! # The algorithm (libbpf's, reimplemented here)
//!
//! bpftool prints a preamble, then calls libbpf's "dump this type with
//! everything it needs" for every id from 1 to the last, then an epilogue.
//! Each call runs two phases over state that persists across calls, so a
//! type is defined at most once in the whole header:
//!
//! 1. **Ordering** (`order`): a depth-first walk from the id that queues, in
//!    post-order, the *named definitions* it depends on (structs, unions,
//!    enums, forward declarations, typedefs). Each walk step answers whether
//!    the link that led there is *strong* (the target must be fully defined
//!    first) or *weak* (a forward declaration will do). A link is weak when
//!    the path from the referring definition crossed a pointer and then
//!    reached a named struct/union (or a typedef that is itself weak);
//!    everything else, including an anonymous struct behind a pointer (it is
//!    written inline, so whatever it embeds must be complete), is strong.
//!    Definition kinds carry an order state NOT_ORDERED -> ORDERING ->
//!    ORDERED: meeting an ORDERING struct again is a cycle, harmless when it
//!    is reached through a pointer and the struct has a name (a forward
//!    declaration breaks it), an error ("unsatisfiable type cycle")
//!    otherwise. Pointers, arrays, modifiers and function prototypes are
//!    only ways through: they get no state (PTR is marked ORDERED, as its
//!    answer never changes), because whether they are strong depends on the
//!    path that reached them.
//!
//! 2. **Emitting** (`emit`): each queued id is written as a top-level
//!    definition. Before writing a struct, the types of its members are
//!    visited so that what they need exists; a second emit state
//!    NOT_EMITTED -> EMITTING -> EMITTED detects that a member leads back
//!    into a definition being written. Reaching an EMITTING named struct
//!    (other than the one being defined, which may point to itself) prints
//!    its forward declaration `struct X;`; reaching an EMITTING typedef prints
//!    the typedef early (it is only used through a pointer, so it acts as
//!    its own forward declaration). A named struct met as a member's pointee
//!    that is not yet defined gets a forward declaration once. Anonymous
//!    enums nobody refers to (kernel constants) are top-level definitions;
//!    referenced ones are written inline.
//!
//! Declarations are written by the "declaration chain" method: starting from
//! the declared type, follow pointers, modifiers, arrays and function
//! prototypes down to a terminal type (int, float, struct, union, enum,
//! fwd, typedef, void), pushing each id on a stack; then pop from the
//! terminal outwards. C puts `const` to the left of a base type and to the
//! right of a `*`; arrays and function prototypes wrap what is left of the
//! chain in parentheses, so `int (*f[4])(void *)` comes out of
//! array -> ptr -> func_proto -> int. The stack is shared: nested
//! declarations (a function prototype's parameters, an inline anonymous
//! struct's members) push their own frame above the current one.
//!
//! Names: the first struct/union/enum to be *printed* with a given name keeps
//! it, later ones get `___2`, `___3`, ... (typedefs and enumerators share a
//! second namespace, as in C). Numbering follows print order, not id order,
//! which is why names are resolved lazily at the moment they are printed.
//! Forward declarations and empty enums never take a number.
//!
//! Alignment (`alignment`): a struct is written `__attribute__((packed))` when a
//! non-bitfield member sits off its natural alignment or the size is not a
//! multiple of the largest member alignment. Gaps are filled with anonymous
//! bitfields (`long: 64;`, `int: 32;`, ... and `long: 0;` to force
//! alignment), chosen so that a C compiler lays the struct out at exactly
//! BTF's offsets. libbpf writes no `aligned(N)` attributes: a struct's
//! alignment is whatever its members and padding imply, and the padding is
//! chosen so that this gives BTF's layout.
//!
//! # Invariants and safety
//!
//! - Every type id that any type refers to is checked against the type count
//!   before anything is printed, so lookups by id cannot fail afterwards.
//! - Each type's states only move forward (ORDERING -> ORDERED,
//!   EMITTING -> EMITTED) except a struct that was visited but not defined
//!   (EMITTING -> NOT_EMITTED), so a definition is printed at most once.
//! - libbpf recurses without limit and loops forever on a cycle that does not
//!   pass through a struct (`const` pointing at itself, a pointer chain
//!   that loops), and takes exponential time on function prototypes that
//!   share parameter types level after level. Here every recursion carries a
//!   depth bounded by `MAX_DEPTH`, a declaration chain longer than the
//!   number of types is a loop, and the total work is bounded by
//!   `STEPS_PER_TYPE`: malformed BTF gives an `io::Error` naming the type
//!   id, never a stack overflow or a hang. (Where bpftool itself divides by
//!   zero, on a function type used as a struct member, we print on.)
//! - Output is built in memory and handed to the writer in large chunks,
//!   so a caller may pass an unbuffered writer.

mod alignment;
mod emit;
mod order;

use std::borrow::Cow;
use std::io::{self, Write};

use rustc_hash::FxHashMap;

use crate::{Btf, Type, TypeData, TypeId};

/// Nesting bound for every recursion. Real kernels stay below a few dozen;
/// a loop of modifiers or pointers (which the kernel's verifier rejects but
/// a file may contain) reaches it quickly.
const MAX_DEPTH: u32 = 1024;

/// Work allowed per type, counted in recursive steps of the three walks.
/// Shared function prototypes can make the walks (and the declarations
/// they print) grow exponentially with nesting; no real BTF comes near
/// this (Linux 6.18's vmlinux takes about 2 per type).
const STEPS_PER_TYPE: u64 = 1000;

/// Hand the buffered output to the writer once it grows past this.
const FLUSH_AT: usize = 1 << 20;

const PREAMBLE: &[u8] = b"#ifndef __VMLINUX_H__\n\
#define __VMLINUX_H__\n\
\n\
#ifndef BPF_NO_PRESERVE_ACCESS_INDEX\n\
#pragma clang attribute push (__attribute__((preserve_access_index)), apply_to = record)\n\
#endif\n\
\n";

const EPILOGUE: &[u8] = b"#ifndef BPF_NO_PRESERVE_ACCESS_INDEX\n\
#pragma clang attribute pop\n\
#endif\n\
\n\
#endif /* __VMLINUX_H__ */\n";

/// Writes `btf` as a C header, exactly as `bpftool btf dump file F format c`.
///
/// For split BTF the base's types are included, as bpftool does. Malformed
/// BTF (an id out of range, a reference loop C cannot express) gives an
/// `InvalidData` error after writing what came before it, as bpftool stops
/// at the type it cannot order.
pub fn dump<W: Write>(btf: &Btf, out: &mut W) -> io::Result<()> {
    let mut d = Dumper::new(btf)?;
    d.out.extend_from_slice(PREAMBLE);
    for id in 1..btf.type_count() {
        let step = d.dump_type(id);
        if step.is_err() || d.out.len() >= FLUSH_AT {
            out.write_all(&d.out)?;
            d.out.clear();
        }
        step?;
    }
    d.out.extend_from_slice(EPILOGUE);
    out.write_all(&d.out)
}

#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum OrderState {
    #[default]
    NotOrdered,
    Ordering,
    Ordered,
}

#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum EmitState {
    #[default]
    NotEmitted,
    Emitting,
    Emitted,
}

#[derive(Clone, Copy, Default)]
struct TypeState {
    order: OrderState,
    emit: EmitState,
    /// A forward declaration (or, for a typedef, its early definition) is out.
    fwd_emitted: bool,
    /// The printed name is fixed (possibly with a `___N` suffix in `renamed`).
    name_resolved: bool,
    /// Some other type refers to this one: an anonymous enum that nobody
    /// refers to is a top-level definition.
    referenced: bool,
}

/// Which namespace a name is unique in.
#[derive(Clone, Copy)]
enum Namespace {
    /// struct, union and enum tags.
    Tags,
    /// typedef names and enumerators.
    Idents,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn too_deep(id: TypeId) -> io::Error {
    invalid(format!(
        "type [{id}]: types nest deeper than {MAX_DEPTH} levels (a reference loop?)"
    ))
}

/// `void` has no record; this stands in for it in the id-indexed table and
/// is never looked at, since every use checks for id 0 first.
static VOID: Type = Type {
    name_off: 0,
    kind_flag: false,
    data: TypeData::Fwd,
};

struct Dumper<'a> {
    btf: &'a Btf,
    /// Every type by id (base included); index 0 is the `VOID` stand-in.
    types: Vec<&'a Type>,
    state: Vec<TypeState>,
    /// Pointer size in bytes, guessed from `long` as libbpf does.
    ptr_sz: u32,
    /// Memoized alignments (`u32::MAX`: not computed yet).
    align_cache: Vec<u32>,
    /// Names that needed a `___N` suffix, by type id.
    renamed: FxHashMap<TypeId, Box<[u8]>>,
    tag_names: FxHashMap<&'a [u8], usize>,
    ident_names: FxHashMap<&'a [u8], usize>,
    /// Recursion steps taken so far, against `step_budget`.
    steps: u64,
    step_budget: u64,
    /// Definitions to emit for the current top-level type, in order.
    queue: Vec<TypeId>,
    /// The shared declaration-chain stack (see the module comment).
    decl_stack: Vec<TypeId>,
    out: Vec<u8>,
}

impl<'a> Dumper<'a> {
    fn new(btf: &'a Btf) -> io::Result<Dumper<'a>> {
        let n = btf.type_count();
        let mut types = Vec::with_capacity(n as usize);
        types.push(&VOID);
        let mut state = vec![TypeState::default(); n as usize];
        for id in 1..n {
            let t = btf
                .type_by_id(id)
                .ok_or_else(|| invalid(format!("type [{id}] is missing")))?;
            // Check every reference and note which types are referenced. A
            // FUNC_PROTO's return type does not count as a reference
            // (libbpf looks at parameters only), which decides whether an
            // anonymous enum used only as a return type is printed on its own.
            let mut bad = None;
            let mut mark = |r: TypeId, counts: bool| {
                if r >= n {
                    bad = Some(r);
                } else if counts {
                    state[r as usize].referenced = true;
                }
            };
            match &t.data {
                TypeData::FuncProto { ret, params } => {
                    mark(*ret, false);
                    params.iter().for_each(|p| mark(p.ty, true));
                }
                _ => t.for_each_ref(|r| mark(r, true)),
            }
            if let Some(r) = bad {
                return Err(invalid(format!(
                    "type [{id}] refers to type [{r}], past the last type [{}]",
                    n - 1
                )));
            }
            // Padding is written up to each member's offset, so an offset
            // past the aggregate's end (which the kernel rejects too) would
            // make output that grows with a corrupt number, not with the BTF.
            if let TypeData::Struct { size, members } | TypeData::Union { size, members } = &t.data
            {
                let end = u64::from(*size) * 8;
                if let Some(m) = members
                    .iter()
                    .find(|m| u64::from(m.bit_offset(t.kind_flag)) > end)
                {
                    return Err(invalid(format!(
                        "type [{id}]: member at bit {} starts past the end of its {size}-byte {}",
                        m.bit_offset(t.kind_flag),
                        t.kind_name()
                    )));
                }
            }
            types.push(t);
        }
        state[0].order = OrderState::Ordered;
        state[0].emit = EmitState::Emitted;
        let ptr_sz = guess_ptr_size(btf, &types);
        // Size the name tables up front: rehashing them showed in profiles.
        let (mut tags, mut idents) = (0, 0);
        for t in &types[1..] {
            match &t.data {
                TypeData::Struct { .. } | TypeData::Union { .. } => tags += 1,
                TypeData::Enum { values, .. } => {
                    tags += 1;
                    idents += values.len();
                }
                TypeData::Enum64 { values, .. } => {
                    tags += 1;
                    idents += values.len();
                }
                TypeData::Typedef { .. } => idents += 1,
                _ => {}
            }
        }
        Ok(Dumper {
            btf,
            types,
            state,
            ptr_sz,
            align_cache: vec![u32::MAX; n as usize],
            renamed: FxHashMap::default(),
            tag_names: FxHashMap::with_capacity_and_hasher(tags, Default::default()),
            ident_names: FxHashMap::with_capacity_and_hasher(idents, Default::default()),
            steps: 0,
            step_budget: STEPS_PER_TYPE * (u64::from(n) + 16),
            queue: Vec::new(),
            decl_stack: Vec::new(),
            out: Vec::with_capacity(FLUSH_AT + (FLUSH_AT >> 2)),
        })
    }

    /// One of bpftool's per-id calls: order, then emit what was queued.
    fn dump_type(&mut self, id: TypeId) -> io::Result<()> {
        self.queue.clear();
        self.order(id, false, 0)?;
        let queue = std::mem::take(&mut self.queue);
        let res = queue.iter().try_for_each(|&q| self.emit_type(q, 0, 0));
        self.queue = queue;
        res
    }

    /// The type with this id, `None` for void. Ids were checked in `new`.
    fn get(&self, id: TypeId) -> Option<&'a Type> {
        if id == 0 {
            None
        } else {
            Some(self.types[id as usize])
        }
    }

    /// A string from the BTF; a bad offset reads as "" (the header stays
    /// printable, and the validator is the place to report it).
    fn str_at(&self, off: u32) -> &'a [u8] {
        self.btf.str_bytes(off).unwrap_or(b"")
    }

    /// Counts one more use of `name` in a namespace and returns the count.
    fn name_dups(&mut self, ns: Namespace, name: &'a [u8]) -> usize {
        let map = match ns {
            Namespace::Tags => &mut self.tag_names,
            Namespace::Idents => &mut self.ident_names,
        };
        let n = map.entry(name).or_insert(0);
        *n += 1;
        *n
    }

    /// The name to print for a type, fixed the first time it is asked for:
    /// the original, or `name___N` when N-1 types printed it before.
    fn resolve_name(&mut self, id: TypeId, ns: Namespace) -> Cow<'a, [u8]> {
        let Some(t) = self.get(id) else {
            return Cow::Borrowed(b"");
        };
        if t.name_off == 0 {
            return Cow::Borrowed(b"");
        }
        let orig = self.str_at(t.name_off);
        let st = &mut self.state[id as usize];
        if st.name_resolved {
            return match self.renamed.get(&id) {
                Some(n) => Cow::Owned(n.to_vec()),
                None => Cow::Borrowed(orig),
            };
        }
        let never_renamed = match &t.data {
            TypeData::Fwd => true,
            TypeData::Enum { values, .. } => values.is_empty(),
            _ => false,
        };
        st.name_resolved = true;
        if never_renamed {
            return Cow::Borrowed(orig);
        }
        let dups = self.name_dups(ns, orig);
        if dups <= 1 {
            return Cow::Borrowed(orig);
        }
        let mut name = orig.to_vec();
        name.extend_from_slice(b"___");
        name.extend_from_slice(dups.to_string().as_bytes());
        // libbpf formats into a 256-byte buffer.
        name.truncate(255);
        self.renamed.insert(id, name.clone().into_boxed_slice());
        Cow::Owned(name)
    }

    fn tag_name(&mut self, id: TypeId) -> Cow<'a, [u8]> {
        self.resolve_name(id, Namespace::Tags)
    }

    fn ident_name(&mut self, id: TypeId) -> Cow<'a, [u8]> {
        self.resolve_name(id, Namespace::Idents)
    }

    /// Counts one step of work on `id`; an error once the budget is spent.
    fn step(&mut self, id: TypeId) -> io::Result<()> {
        self.steps += 1;
        if self.steps > self.step_budget {
            return Err(invalid(format!(
                "type [{id}]: declarations grow without bound (more than {STEPS_PER_TYPE} steps per type)"
            )));
        }
        Ok(())
    }

    fn put(&mut self, s: &[u8]) {
        self.out.extend_from_slice(s);
    }

    fn put_u64(&mut self, mut v: u64) {
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.out.extend_from_slice(&buf[i..]);
    }

    fn put_i64(&mut self, v: i64) {
        if v < 0 {
            self.out.push(b'-');
        }
        self.put_u64(v.unsigned_abs());
    }

    /// Indentation: one tab per level, at most 13 as libbpf.
    fn put_indent(&mut self, lvl: u32) {
        const TABS: &[u8] = b"\t\t\t\t\t\t\t\t\t\t\t\t\t";
        let n = (lvl as usize).min(TABS.len());
        self.out.extend_from_slice(&TABS[..n]);
    }
}

/// libbpf's guess of the target's pointer size: the size of the first
/// 4- or 8-byte integer spelled like `long`; 8 (this host's) if none.
fn guess_ptr_size(btf: &Btf, types: &[&Type]) -> u32 {
    const LONG_NAMES: [&[u8]; 11] = [
        b"long",
        b"long int",
        b"int long",
        b"unsigned long",
        b"long unsigned",
        b"unsigned long int",
        b"unsigned int long",
        b"long unsigned int",
        b"long int unsigned",
        b"int unsigned long",
        b"int long unsigned",
    ];
    types[1..]
        .iter()
        .find_map(|t| match t.data {
            TypeData::Int { size, .. } if size == 4 || size == 8 => {
                let name = btf.str_bytes(t.name_off).ok()?;
                LONG_NAMES.contains(&name).then_some(size)
            }
            _ => None,
        })
        .unwrap_or(8)
}
