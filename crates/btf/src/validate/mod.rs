//! The kernel BTF verifier's rules (kernel/bpf/btf.c), reporting every problem.
//!
//! The kernel checks a blob in the same passes as here: per-type metadata
//! (`btf_check_all_metas`: names, kind flags, sizes, member offsets), then a
//! resolve pass over every type that refers to another (`btf_check_all_types`:
//! ids in range, sizes that can be computed, members inside their aggregate,
//! no loop without a pointer in between), then the order of type tags. The
//! resolve pass follows the kernel's depth-first walk closely, resolve modes
//! and the 32-deep stack included, so that a blob is accepted here exactly when
//! the kernel accepts it.
//!
//! One file per pass: `header.rs` and `blob.rs` (header, sections, raw
//! records), `meta.rs` with `names.rs` (per-type metadata, one check per
//! kind), `resolve.rs` with `members.rs` and `func_proto.rs` (the resolve
//! pass), `type_tags.rs`, and `locations.rs` (bpf-next's location kinds).
//!
//! The kernel stops at the first error; this module goes on and reports them
//! all. A type with a problem is marked bad and whatever refers to it is
//! skipped silently, so that one broken type gives one problem, not a cascade.
//!
//! [`validate`] judges a parsed [`Btf`]. The parser keeps only what the model
//! can hold, so [`validate_blob`] checks the raw bytes for what it drops:
//! unused `info` bits, a `vlen` on kinds that have none, section layout.
//!
//! Both judge by the rules of a [`Target`] kernel: Linux 6.18 (what the
//! running kernel enforces, and the oracle of the tests), or bpf-next of 2026,
//! which adds the layout section, 24-bit vlen, 7-bit kinds and the location
//! kinds. The bpf-next rules come from its uapi `btf.h` and libbpf's
//! `btf_parse_hdr`/`btf_parse_layout_sec`; see [`Target::BpfNext`].

mod blob;
mod func_proto;
mod header;
mod locations;
mod members;
mod meta;
mod names;
mod resolve;
mod type_tags;

use std::fmt;

use crate::format::*;
use crate::types::*;
use crate::Btf;

/// The kernel whose verifier rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Target {
    /// Linux 6.18: the classic 24-byte header (longer ones only with zeros),
    /// 16-bit vlen, kinds up to ENUM64.
    #[default]
    Linux6_18,
    /// bpf-next (2026): a 32-byte header may point at a layout section
    /// between the type and string sections, vlen has 24 bits, and kinds
    /// 20-22 (LOC_PARAM, LOC_PROTO, LOCSEC) exist. Their checks follow the
    /// merged uapi header's definitions: a LOC_PARAM is anonymous, 1, 2, 4
    /// or 8 bytes, uses only the defined flags, and has the values its flags
    /// call for (a constant: one word per 4 bytes of size; a register: its
    /// number, plus an offset with OFFSET or a second register without);
    /// a LOC_PROTO is anonymous and lists LOC_PARAMs or 0; a LOCSEC has a
    /// section name and lists FUNCs with LOC_PROTOs.
    BpfNext,
}

impl Target {
    fn max_vlen(self) -> u32 {
        match self {
            Target::Linux6_18 => BTF_MAX_VLEN_6_18,
            Target::BpfNext => BTF_MAX_VLEN,
        }
    }

    fn max_kind(self) -> Kind {
        match self {
            Target::Linux6_18 => BTF_KIND_MAX_6_18,
            Target::BpfNext => BTF_KIND_MAX,
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Target::Linux6_18 => "Linux 6.18",
            Target::BpfNext => "bpf-next",
        }
    }
}

/// Which rule a problem breaks, named after the kernel verifier's checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// Header fields and section layout.
    Header,
    /// The string section itself.
    Strings,
    /// Too many types, or none.
    TypeCount,
    /// A name offset outside the string section.
    NameOffset,
    /// A name missing where required, present where forbidden, or not a valid identifier.
    Name,
    /// `kind_flag` set on a kind that gives it no meaning.
    KindFlag,
    /// A record count (`vlen`) where none is allowed, or above 65535.
    Vlen,
    /// A type id out of range, void where a type is needed, or the wrong kind.
    TypeId,
    /// INT encoding, bits and bit offset.
    Int,
    /// A size the kernel does not accept or cannot compute.
    Size,
    /// Member names, offsets and bitfields of a STRUCT or UNION.
    Member,
    /// FUNC -> FUNC_PROTO and the prototype's return and parameters.
    Func,
    /// FUNC or VAR linkage.
    Linkage,
    /// DATASEC entries: VARs, sorted, non-overlapping and inside the section.
    Datasec,
    /// DECL_TAG target and component index.
    DeclTag,
    /// A loop of references with no pointer in between.
    Loop,
    /// A kind the target kernel does not know.
    Kind,
    /// The layout section (bpf-next).
    Layout,
    /// LOC_PARAM flags and values, LOC_PROTO and LOCSEC entries (bpf-next).
    Location,
    /// More than 32 types to resolve at once (the kernel's MAX_RESOLVE_DEPTH).
    Depth,
    /// TYPE_TAG after a modifier, or a modifier chain longer than 32.
    TypeTag,
}

impl Rule {
    /// The rule's short name (`kind-flag`, `type-id`), as
    /// [`Display`](fmt::Display) prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Header => "header",
            Rule::Strings => "strings",
            Rule::TypeCount => "type-count",
            Rule::NameOffset => "name-offset",
            Rule::Name => "name",
            Rule::KindFlag => "kind-flag",
            Rule::Vlen => "vlen",
            Rule::TypeId => "type-id",
            Rule::Int => "int",
            Rule::Size => "size",
            Rule::Member => "member",
            Rule::Func => "func",
            Rule::Linkage => "linkage",
            Rule::Datasec => "datasec",
            Rule::DeclTag => "decl-tag",
            Rule::Loop => "loop",
            Rule::Kind => "kind",
            Rule::Layout => "layout",
            Rule::Location => "location",
            Rule::Depth => "depth",
            Rule::TypeTag => "type-tag",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One broken rule: which type (0 for the blob as a whole), which rule, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The type at fault; 0 for the blob as a whole (header, sections,
    /// strings).
    pub id: TypeId,
    /// The type's kind ("STRUCT"), empty for the blob as a whole.
    pub kind: &'static str,
    /// The type's name, empty when anonymous.
    pub name: String,
    /// The rule broken.
    pub rule: Rule,
    /// What is wrong, in words.
    pub detail: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kind.is_empty() {
            return write!(f, "BTF: {}", self.detail);
        }
        write!(f, "[{}] {} ", self.id, self.kind)?;
        if self.name.is_empty() {
            f.write_str("(anon)")?;
        } else {
            write!(f, "'{}'", self.name)?;
        }
        write!(f, ": {}", self.detail)
    }
}

/// Checks `btf` (and, for split BTF, how it refers to its base) against the
/// Linux 6.18 verifier's rules. The base itself is not checked: it is taken
/// as valid, as the kernel takes vmlinux's BTF when it loads a module's.
pub fn validate(btf: &Btf) -> Vec<Problem> {
    validate_for(btf, Target::Linux6_18)
}

/// [`validate`] by the rules of `target`.
pub fn validate_for(btf: &Btf, target: Target) -> Vec<Problem> {
    let mut v = Validator::new(btf, target);
    v.check_blob();
    // Of a split BTF only its own types are checked, as the kernel checks a
    // module's: the base was checked when it was loaded, and the resolve
    // pass walks into the base types that the split's types refer to.
    // (Checking all of vmlinux's types again was 2/3 of a small module's
    // encode.)
    for id in v.report_from..v.n {
        v.check_meta(id);
    }
    v.check_all_types();
    v.check_type_tags();
    v.check_locations();
    v.problems
}

/// Checks the raw blob `btf` was parsed from for what the model does not
/// keep: `info` bits the kernel reserves, a `vlen` or `type` on kinds that
/// must have 0 there, INT data bits, and the layout of the sections (no gaps,
/// no overlap, strings last), as `btf_parse_hdr` and `btf_check_meta` do.
pub fn validate_blob(blob: &[u8], btf: &Btf) -> Vec<Problem> {
    validate_blob_for(blob, btf, Target::Linux6_18)
}

/// [`validate_blob`] by the rules of `target`.
pub fn validate_blob_for(blob: &[u8], btf: &Btf, target: Target) -> Vec<Problem> {
    let mut problems = Vec::new();
    let (Some(type_len), Some(str_len)) =
        (blob::read_u32(blob, btf, 12), blob::read_u32(blob, btf, 20))
    else {
        problems.push(blob::header_problem("header is truncated".into()));
        return problems;
    };
    blob::check_sections(blob, btf, target, type_len, str_len, &mut problems);
    blob::check_records(blob, btf, target, type_len, &mut problems);
    problems
}

/// A string for messages: lossy UTF-8, or a note when the offset is bad.
fn lossy(btf: &Btf, off: u32) -> String {
    match btf.str_bytes(off) {
        Ok(b) => String::from_utf8_lossy(b).into_owned(),
        Err(_) => format!("<bad name offset {off:#x}>"),
    }
}

/// `btf_type_int_is_regular`: a whole number of bytes, 1, 2, 4, 8 or 16 of
/// them, no bit offset.
fn int_is_regular(t: &Type) -> bool {
    match t.data {
        TypeData::Int { offset, bits, .. } => {
            let bytes = bits.div_ceil(8);
            bits % 8 == 0 && offset == 0 && bytes <= 16 && bytes.is_power_of_two()
        }
        _ => false,
    }
}

/// Kinds that can only start a resolve, never be reached by one. The
/// location kinds are not C types either: only LOC_PROTO and LOCSEC refer
/// to them.
fn is_source_only(k: Kind) -> bool {
    matches!(
        k,
        BTF_KIND_VAR
            | BTF_KIND_DECL_TAG
            | BTF_KIND_DATASEC
            | BTF_KIND_LOC_PARAM
            | BTF_KIND_LOC_PROTO
            | BTF_KIND_LOCSEC
    )
}

fn needs_resolve(k: Kind) -> bool {
    k.is_reference()
        || k.is_struct_or_union()
        || matches!(
            k,
            BTF_KIND_ARRAY | BTF_KIND_VAR | BTF_KIND_FUNC | BTF_KIND_DECL_TAG | BTF_KIND_DATASEC
        )
}

/// Void (kind 0 here), FWD, FUNC and FUNC_PROTO have no size.
fn is_nosize(k: Kind) -> bool {
    matches!(
        k,
        BTF_KIND_UNKN | BTF_KIND_FWD | BTF_KIND_FUNC | BTF_KIND_FUNC_PROTO
    )
}

/// Kinds whose `size` word is their size.
fn has_size(k: Kind) -> bool {
    matches!(
        k,
        BTF_KIND_INT
            | BTF_KIND_STRUCT
            | BTF_KIND_UNION
            | BTF_KIND_ENUM
            | BTF_KIND_DATASEC
            | BTF_KIND_FLOAT
            | BTF_KIND_ENUM64
    )
}

/// A pointer's size on the machines the kernel verifier runs on.
const PTR_SIZE: u32 = 8;
const MAX_RESOLVE_DEPTH: usize = 32;
const BITS_PER_U128: u32 = 128;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Visit {
    NotVisited,
    Visited,
    Resolved,
}

/// What the walk treats as already resolved, as the kernel's `resolve_mode`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Tbd,
    Ptr,
    StructOrArray,
}

#[derive(Clone, Copy)]
struct Vertex {
    id: TypeId,
    next_member: usize,
}

/// Why a resolve step stopped.
enum Fail {
    /// The type on top of the stack breaks `rule`.
    Problem(Rule, String),
    /// The stack would grow past MAX_RESOLVE_DEPTH.
    Depth,
    /// This id is already on the stack.
    Loop(TypeId),
    /// It depends on a type already reported.
    Silent,
}

type Step = Result<(), Fail>;

struct Validator<'a> {
    btf: &'a Btf,
    target: Target,
    /// Every type of the chain by id; index 0 (void) is unused.
    types: Vec<Option<&'a Type>>,
    /// Kind of every id; 0 for void.
    kinds: Vec<Kind>,
    n: TypeId,
    /// The first id checked and reported: a split BTF's own types.
    report_from: TypeId,
    problems: Vec<Problem>,
    bad: Vec<bool>,
    visit: Vec<Visit>,
    resolved_id: Vec<TypeId>,
    resolved_size: Vec<u32>,
    stack: Vec<Vertex>,
    mode: Mode,
}

fn collect<'a>(btf: &'a Btf, out: &mut Vec<Option<&'a Type>>) {
    if let Some(base) = btf.base() {
        collect(base, out);
    }
    out.extend(btf.own_types().iter().map(Some));
}

impl<'a> Validator<'a> {
    fn new(btf: &'a Btf, target: Target) -> Validator<'a> {
        let mut types = Vec::with_capacity(btf.type_count() as usize);
        types.push(None);
        collect(btf, &mut types);
        let kinds: Vec<Kind> = types
            .iter()
            .map(|t| t.map_or(BTF_KIND_UNKN, Type::kind))
            .collect();
        let n = types.len();
        Validator {
            btf,
            target,
            types,
            kinds,
            n: n as TypeId,
            report_from: btf.start_id(),
            problems: Vec::new(),
            bad: vec![false; n],
            visit: vec![Visit::NotVisited; n],
            resolved_id: vec![0; n],
            resolved_size: vec![0; n],
            stack: Vec::with_capacity(MAX_RESOLVE_DEPTH),
            mode: Mode::Tbd,
        }
    }

    /// The kind of `id`: 0 for void, `None` past the last type.
    fn kind(&self, id: TypeId) -> Option<Kind> {
        self.kinds.get(id as usize).copied()
    }

    fn ty(&self, id: TypeId) -> Option<&'a Type> {
        self.types.get(id as usize).copied().flatten()
    }

    fn is_bad(&self, id: TypeId) -> bool {
        self.bad.get(id as usize).copied().unwrap_or(false)
    }

    fn is_resolved(&self, id: TypeId) -> bool {
        self.visit.get(id as usize) == Some(&Visit::Resolved)
    }

    /// "[12] STRUCT 'foo'", "void" or "type id 99 (past the last type)", for messages.
    fn describe(&self, id: TypeId) -> String {
        match self.ty(id) {
            Some(t) => {
                let name = lossy(self.btf, t.name_off);
                if name.is_empty() {
                    format!("[{id}] {} (anon)", t.kind_name())
                } else {
                    format!("[{id}] {} '{name}'", t.kind_name())
                }
            }
            None if id == 0 => "void".into(),
            None => format!("type id {id} (past the last type, {})", self.n - 1),
        }
    }

    fn report(&mut self, id: TypeId, rule: Rule, detail: String) {
        if let Some(i) = self.bad.get_mut(id as usize) {
            *i = true;
        }
        if id < self.report_from {
            return;
        }
        let (kind, name) = match self.ty(id) {
            Some(t) => (t.kind_name(), lossy(self.btf, t.name_off)),
            None => ("", String::new()),
        };
        self.problems.push(Problem {
            id,
            kind,
            name,
            rule,
            detail,
        });
    }

    fn report_blob(&mut self, rule: Rule, detail: String) {
        self.problems.push(Problem {
            id: 0,
            kind: "",
            name: String::new(),
            rule,
            detail,
        });
    }
}
