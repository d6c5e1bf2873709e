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

    fn name(self) -> &'static str {
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
    pub id: TypeId,
    /// The type's kind ("STRUCT"), empty for the blob as a whole.
    pub kind: &'static str,
    /// The type's name, empty when anonymous.
    pub name: String,
    pub rule: Rule,
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
/// Linux 6.18 verifier's rules. Problems of the base itself are not reported.
pub fn validate(btf: &Btf) -> Vec<Problem> {
    validate_for(btf, Target::Linux6_18)
}

/// [`validate`] by the rules of `target`.
pub fn validate_for(btf: &Btf, target: Target) -> Vec<Problem> {
    let mut v = Validator::new(btf, target);
    v.check_blob();
    for id in 1..v.n {
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
    let h = btf.header();
    let rd = |off: usize| -> Option<u32> {
        let b = blob.get(off..)?.first_chunk::<4>()?;
        Some(h.endian.u32(*b))
    };
    let blob_problem = |problems: &mut Vec<Problem>, detail: String| {
        problems.push(Problem {
            id: 0,
            kind: "",
            name: String::new(),
            rule: Rule::Header,
            detail,
        })
    };
    let (Some(type_len), Some(str_len)) = (rd(12), rd(20)) else {
        blob_problem(&mut problems, "header is truncated".into());
        return problems;
    };
    let hdr_len = h.hdr_len as u64;
    let expected_total = (blob.len() as u64).saturating_sub(hdr_len);
    if btf.base().is_none() && expected_total == 0 {
        blob_problem(&mut problems, "no data after the header".into());
    }
    // Linux 6.18 knows only the type and string sections, bpf-next also
    // the layout section: sorted by offset they must tile everything after
    // the header, with nothing left over.
    let layout_len = h.layout.len() as u64;
    let mut secs = vec![
        ("type", h.type_off as u64, type_len as u64),
        ("string", h.str_off as u64, str_len as u64),
    ];
    if target == Target::BpfNext && layout_len > 0 {
        secs.push(("layout", h.layout_off as u64, layout_len));
        if h.layout_off % 4 != 0 {
            blob_problem(
                &mut problems,
                format!(
                    "layout section offset {:#x} is not 4-byte aligned",
                    h.layout_off
                ),
            );
        }
        if (h.layout_off as u64) < h.type_off as u64 + type_len as u64
            || h.layout_off as u64 + layout_len > h.str_off as u64
        {
            blob_problem(
                &mut problems,
                "layout section is not between the type and string sections".into(),
            );
        }
    }
    secs.sort_by_key(|&(_, off, len)| (off, len));
    let mut total = 0u64;
    for (name, off, len) in secs {
        if off > total {
            blob_problem(
                &mut problems,
                format!("gap of {} bytes before the {name} section", off - total),
            );
        } else if off < total {
            blob_problem(
                &mut problems,
                format!("{name} section at {off:#x} overlaps the one before it"),
            );
        }
        total = off + len;
    }
    if total < expected_total {
        blob_problem(
            &mut problems,
            format!(
                "{} bytes after the last section that the kernel does not know",
                expected_total - total
            ),
        );
    }
    if h.str_off as u64 + str_len as u64 != expected_total {
        blob_problem(&mut problems, "string section is not at the end".into());
    }

    let unused_mask = match target {
        Target::Linux6_18 => BTF_INFO_UNUSED_MASK_6_18,
        Target::BpfNext => 0,
    };
    let layouts = btf.kind_layouts();
    let start = hdr_len + h.type_off as u64;
    let end = start + type_len as u64;
    let mut pos = start;
    let mut id = btf.start_id();
    while pos + BTF_TYPE_LEN as u64 <= end {
        let p = pos as usize;
        let (Some(info), Some(size_or_type)) = (rd(p + 4), rd(p + 8)) else {
            break;
        };
        let kind = info_kind(info);
        let vlen = info_vlen(info) as u64;
        let mut raw_problem = |rule: Rule, detail: String| {
            let (kind, name) = btf
                .type_by_id(id)
                .map(|t| (t.kind_name(), lossy(btf, t.name_off)))
                .unwrap_or(("UNKNOWN", String::new()));
            problems.push(Problem {
                id,
                kind,
                name,
                rule,
                detail,
            })
        };
        if info & unused_mask != 0 {
            raw_problem(
                Rule::Header,
                format!("info {info:#010x} sets bits the kernel reserves"),
            );
        }
        let has_vlen = matches!(
            kind,
            BTF_KIND_STRUCT
                | BTF_KIND_UNION
                | BTF_KIND_ENUM
                | BTF_KIND_ENUM64
                | BTF_KIND_FUNC_PROTO
                | BTF_KIND_DATASEC
                | BTF_KIND_FUNC
                | BTF_KIND_LOC_PARAM
                | BTF_KIND_LOC_PROTO
                | BTF_KIND_LOCSEC
        ) || kind > BTF_KIND_MAX;
        if !has_vlen && vlen != 0 {
            raw_problem(Rule::Vlen, format!("vlen {vlen} must be 0 for this kind"));
        }
        if matches!(
            kind,
            BTF_KIND_FWD | BTF_KIND_ARRAY | BTF_KIND_LOC_PROTO | BTF_KIND_LOCSEC
        ) && size_or_type != 0
        {
            raw_problem(
                Rule::Size,
                format!("size/type word {size_or_type} must be 0 for this kind"),
            );
        }
        let extra = match kind {
            BTF_KIND_INT => {
                if let Some(data) = rd(p + BTF_TYPE_LEN) {
                    if data & 0xf000_0000 != 0 {
                        raw_problem(
                            Rule::Int,
                            format!("int data {data:#010x} sets bits the kernel reserves"),
                        );
                    }
                }
                4
            }
            BTF_KIND_ARRAY => BTF_ARRAY_LEN as u64,
            BTF_KIND_STRUCT | BTF_KIND_UNION => vlen * BTF_MEMBER_LEN as u64,
            BTF_KIND_ENUM => vlen * BTF_ENUM_LEN as u64,
            BTF_KIND_ENUM64 => vlen * BTF_ENUM64_LEN as u64,
            BTF_KIND_FUNC_PROTO => vlen * BTF_PARAM_LEN as u64,
            BTF_KIND_VAR => BTF_VAR_LEN as u64,
            BTF_KIND_DATASEC => vlen * BTF_VAR_SECINFO_LEN as u64,
            BTF_KIND_DECL_TAG => BTF_DECL_TAG_LEN as u64,
            BTF_KIND_PTR | BTF_KIND_FWD | BTF_KIND_TYPEDEF | BTF_KIND_VOLATILE | BTF_KIND_CONST
            | BTF_KIND_RESTRICT | BTF_KIND_FUNC | BTF_KIND_FLOAT | BTF_KIND_TYPE_TAG => 0,
            BTF_KIND_LOC_PARAM => (BTF_LOC_PARAM_LEN + vlen as usize * BTF_LOC_VALUE_LEN) as u64,
            BTF_KIND_LOC_PROTO => vlen * BTF_LOC_PROTO_PARAM_LEN as u64,
            BTF_KIND_LOCSEC => vlen * BTF_LOC_LEN as u64,
            // Kinds the parser read through the layout section.
            _ => match layouts.get(usize::from(kind)) {
                Some(l) => l.info_sz as u64 + vlen * l.elem_sz as u64,
                None => break,
            },
        };
        pos += BTF_TYPE_LEN as u64 + extra;
        id += 1;
    }
    problems
}

/// A string for messages: lossy UTF-8, or a note when the offset is bad.
fn lossy(btf: &Btf, off: u32) -> String {
    match btf.str_bytes(off) {
        Ok(b) => String::from_utf8_lossy(b).into_owned(),
        Err(_) => format!("<bad name offset {off:#x}>"),
    }
}

/// `isalpha` of the kernel's lib/ctype.c, which classifies Latin-1: bytes
/// 0xc0-0xff are letters too, except × and ÷.
fn kernel_isalpha(c: u8) -> bool {
    c.is_ascii_alphabetic() || (c >= 0xc0 && c != 0xd7 && c != 0xf7)
}

/// `isprint` of lib/ctype.c: ASCII 0x20-0x7e and Latin-1 0xa0-0xff.
fn kernel_isprint(c: u8) -> bool {
    (0x20..0x7f).contains(&c) || c >= 0xa0
}

/// `__btf_name_char_ok` and `btf_name_valid_identifier`: a C identifier,
/// where the kernel also accepts dots (LLVM writes names like `foo.bar`),
/// at most KSYM_NAME_LEN bytes.
fn valid_identifier(s: &[u8]) -> bool {
    match s.split_first() {
        Some((&first, rest)) => {
            s.len() <= KSYM_NAME_LEN
                && (kernel_isalpha(first) || first == b'_' || first == b'.')
                && rest
                    .iter()
                    .all(|&c| kernel_isalpha(c) || c.is_ascii_digit() || c == b'_' || c == b'.')
        }
        None => false,
    }
}

/// `btf_name_valid_section`: printable, at most KSYM_NAME_LEN bytes.
fn valid_section_name(s: &[u8]) -> bool {
    !s.is_empty() && s.len() <= KSYM_NAME_LEN && s.iter().all(|&c| kernel_isprint(c))
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

/// `btf_type_is_modifier`: refers through `type` and has no size of its own.
fn is_modifier(k: Kind) -> bool {
    k.is_modifier_or_typedef()
}

fn is_struct(k: Kind) -> bool {
    k.is_struct_or_union()
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
    is_modifier(k)
        || is_struct(k)
        || matches!(
            k,
            BTF_KIND_PTR
                | BTF_KIND_ARRAY
                | BTF_KIND_VAR
                | BTF_KIND_FUNC
                | BTF_KIND_DECL_TAG
                | BTF_KIND_DATASEC
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
    /// The first id whose problems are reported (a split BTF's own types).
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

    /// Header and string section rules (`btf_parse_hdr`, `btf_parse_str_sec`).
    fn check_blob(&mut self) {
        let btf = self.btf;
        let h = btf.header();
        if h.flags != 0 {
            self.report_blob(Rule::Header, format!("flags {:#x} must be 0", h.flags));
        }
        let known_hdr = match self.target {
            Target::Linux6_18 => BTF_HEADER_LEN,
            Target::BpfNext => BTF_HEADER_LAYOUT_LEN,
        };
        let past_known = (known_hdr - BTF_HEADER_LEN) as usize;
        if h.extra.iter().skip(past_known).any(|&b| b != 0) {
            self.report_blob(
                Rule::Header,
                format!(
                    "hdr_len {} carries non-zero fields past the {known_hdr} bytes {} knows",
                    h.hdr_len,
                    self.target.name()
                ),
            );
        }
        if self.target == Target::BpfNext {
            self.check_layout_section();
        }
        if h.type_off % 4 != 0 {
            self.report_blob(
                Rule::Header,
                format!(
                    "type section offset {:#x} is not 4-byte aligned",
                    h.type_off
                ),
            );
        }
        let strings = btf.string_section();
        if btf.base().is_none() && strings.is_empty() {
            self.report_blob(Rule::Strings, "string section is empty".into());
        }
        if strings.len() > BTF_MAX_NAME_OFFSET as usize + 1 {
            self.report_blob(
                Rule::Strings,
                format!(
                    "string section of {} bytes is past the largest name offset {BTF_MAX_NAME_OFFSET:#x}",
                    strings.len()
                ),
            );
        }
        if strings.last().is_some_and(|&b| b != 0) {
            self.report_blob(Rule::Strings, "string section is not NUL-terminated".into());
        }
        if btf.base().is_none() && btf.own_types().is_empty() {
            self.report_blob(Rule::TypeCount, "no types".into());
        }
        if btf.type_count() > BTF_MAX_TYPE {
            self.report_blob(
                Rule::TypeCount,
                format!(
                    "{} type ids exceed the kernel's limit of {BTF_MAX_TYPE}",
                    btf.type_count()
                ),
            );
        }
    }

    /// `btf_name_offset_valid`: inside the string section and below 2^24.
    fn name(&self, off: u32) -> Option<&'a [u8]> {
        if off > BTF_MAX_NAME_OFFSET {
            return None;
        }
        self.btf.str_bytes(off).ok()
    }

    /// Requires a valid identifier at `off`; `optional` also accepts offset 0.
    fn check_ident(&mut self, id: TypeId, off: u32, optional: bool, what: &str) {
        if off == 0 && optional {
            return;
        }
        match self.name(off) {
            None => self.report(
                id,
                Rule::NameOffset,
                format!("{what} name offset {off:#x} is outside the string section"),
            ),
            Some([]) => self.report(id, Rule::Name, format!("{what} needs a name")),
            Some(s) if !valid_identifier(s) => self.report(
                id,
                Rule::Name,
                format!(
                    "{what} name '{}' is not a valid identifier",
                    String::from_utf8_lossy(s)
                ),
            ),
            Some(_) => {}
        }
    }

    /// `btf_name_valid_section`, for DATASEC and LOCSEC names.
    fn check_section_name(&mut self, id: TypeId, off: u32) {
        match self.name(off) {
            Some(s) if valid_section_name(s) => {}
            Some(s) => self.report(
                id,
                Rule::Name,
                format!(
                    "section name '{}' is empty, too long or not printable",
                    String::from_utf8_lossy(s)
                ),
            ),
            None => {}
        }
    }

    fn check_anon(&mut self, id: TypeId, t: &Type) {
        if t.name_off != 0 {
            self.report(
                id,
                Rule::Name,
                format!("must be anonymous, has name offset {:#x}", t.name_off),
            );
        }
    }

    fn check_no_kflag(&mut self, id: TypeId, t: &Type) {
        if t.kind_flag {
            self.report(
                id,
                Rule::KindFlag,
                "kind_flag must be 0 for this kind".into(),
            );
        }
    }

    fn check_vlen(&mut self, id: TypeId, len: usize, what: &str) {
        let max = self.target.max_vlen();
        if len > max as usize {
            self.report(
                id,
                Rule::Vlen,
                format!(
                    "{len} {what} exceed {}'s vlen limit of {max}",
                    self.target.name()
                ),
            );
        }
    }

    /// The layout section (bpf-next): one record per kind, whose sizes for
    /// the kinds with a fixed layout must be those sizes (a reader that
    /// trusts the section would otherwise skip the wrong number of bytes),
    /// and whose flags are unused.
    fn check_layout_section(&mut self) {
        for (kind, l) in self.btf.kind_layouts().into_iter().enumerate() {
            let kind = Kind::new(kind as u8);
            if let Some(known) = known_layout(kind) {
                if (l.info_sz, l.elem_sz) != (known.info_sz, known.elem_sz) {
                    self.report_blob(
                        Rule::Layout,
                        format!(
                            "layout of kind {kind} ({}) says info_sz {} elem_sz {}, not {} and {}",
                            kind_name(kind),
                            l.info_sz,
                            l.elem_sz,
                            known.info_sz,
                            known.elem_sz
                        ),
                    );
                }
            }
            if l.info_sz % 4 != 0 || l.elem_sz % 4 != 0 {
                self.report_blob(
                    Rule::Layout,
                    format!(
                        "layout of kind {kind}: info_sz {} and elem_sz {} must be multiples of 4",
                        l.info_sz, l.elem_sz
                    ),
                );
            }
            if l.flags != 0 {
                self.report_blob(
                    Rule::Layout,
                    format!(
                        "layout of kind {kind}: flags {:#x} are unused and must be 0",
                        l.flags
                    ),
                );
            }
        }
    }

    /// A reference that must not be void and must fit in 20 bits.
    fn check_ref(&mut self, id: TypeId, to: TypeId, what: &str) {
        if to == 0 {
            self.report(id, Rule::TypeId, format!("{what} is void"));
        } else if to > BTF_MAX_TYPE {
            self.report(
                id,
                Rule::TypeId,
                format!("{what} type id {to} is above the kernel's limit {BTF_MAX_TYPE}"),
            );
        }
    }

    /// `btf_check_meta` and each kind's `check_meta`: what a type must be on
    /// its own, before looking at the types it refers to.
    fn check_meta(&mut self, id: TypeId) {
        let Some(t) = self.ty(id) else { return };
        let name_ok = self.name(t.name_off).is_some();
        if !name_ok {
            self.report(
                id,
                Rule::NameOffset,
                format!(
                    "name offset {:#x} is outside the string section",
                    t.name_off
                ),
            );
        }
        if t.kind() > self.target.max_kind() || matches!(t.data, TypeData::Unknown { .. }) {
            let how = if matches!(t.data, TypeData::Unknown { .. }) {
                " (read through the layout section)"
            } else {
                ""
            };
            self.report(
                id,
                Rule::Kind,
                format!(
                    "kind {}{how} is unknown to {}",
                    t.kind(),
                    self.target.name()
                ),
            );
            return;
        }
        match &t.data {
            TypeData::Int {
                size,
                encoding,
                offset,
                bits,
            } => {
                self.check_no_kflag(id, t);
                let nr_bits = *bits as u32 + *offset as u32;
                if nr_bits > BITS_PER_U128 {
                    self.report(
                        id,
                        Rule::Int,
                        format!("bits {bits} + bit offset {offset} exceed {BITS_PER_U128}"),
                    );
                } else if nr_bits.div_ceil(8) > *size {
                    self.report(
                        id,
                        Rule::Int,
                        format!("bits {bits} + bit offset {offset} don't fit in size {size}"),
                    );
                }
                if !matches!(*encoding, 0 | BTF_INT_SIGNED | BTF_INT_CHAR | BTF_INT_BOOL) {
                    self.report(
                        id,
                        Rule::Int,
                        format!("encoding {encoding:#x} is not one of none, SIGNED, CHAR, BOOL"),
                    );
                }
            }
            TypeData::Ptr { ty }
            | TypeData::Volatile { ty }
            | TypeData::Const { ty }
            | TypeData::Restrict { ty }
            | TypeData::Typedef { ty }
            | TypeData::TypeTag { ty } => {
                // TYPE_TAG's kind_flag marks an attribute (`__attribute__((...))`).
                if t.kind() != BTF_KIND_TYPE_TAG {
                    self.check_no_kflag(id, t);
                }
                if *ty > BTF_MAX_TYPE {
                    self.report(
                        id,
                        Rule::TypeId,
                        format!("type id {ty} is above the kernel's limit {BTF_MAX_TYPE}"),
                    );
                }
                match t.kind() {
                    BTF_KIND_TYPEDEF if name_ok => {
                        self.check_ident(id, t.name_off, false, "typedef")
                    }
                    BTF_KIND_TYPE_TAG if name_ok => {
                        if self.name(t.name_off).is_some_and(<[u8]>::is_empty) {
                            self.report(id, Rule::Name, "type tag needs a value".into());
                        }
                    }
                    BTF_KIND_TYPEDEF | BTF_KIND_TYPE_TAG => {}
                    _ => self.check_anon(id, t),
                }
            }
            TypeData::Array(a) => {
                self.check_anon(id, t);
                self.check_no_kflag(id, t);
                self.check_ref(id, a.elem, "element type");
                self.check_ref(id, a.index, "index type");
            }
            TypeData::Struct { size, members } | TypeData::Union { size, members } => {
                if name_ok {
                    self.check_ident(id, t.name_off, true, "type");
                }
                self.check_vlen(id, members.len(), "members");
                self.check_members_meta(id, t, *size, members);
            }
            TypeData::Enum { size, values } => {
                self.check_enum_meta(
                    id,
                    t,
                    *size,
                    values.len(),
                    values.iter().map(|v| v.name_off),
                );
            }
            TypeData::Enum64 { size, values } => {
                self.check_enum_meta(
                    id,
                    t,
                    *size,
                    values.len(),
                    values.iter().map(|v| v.name_off),
                );
            }
            TypeData::Fwd => {
                if name_ok {
                    self.check_ident(id, t.name_off, false, "forward declaration");
                }
            }
            TypeData::Func { linkage, .. } => {
                if name_ok {
                    self.check_ident(id, t.name_off, false, "function");
                }
                if *linkage > BTF_FUNC_GLOBAL {
                    let what = if *linkage == BTF_FUNC_EXTERN {
                        " (extern)"
                    } else {
                        ""
                    };
                    self.report(
                        id,
                        Rule::Linkage,
                        format!("linkage {linkage}{what} is not static (0) or global (1)"),
                    );
                }
                self.check_no_kflag(id, t);
            }
            TypeData::FuncProto { params, .. } => {
                self.check_anon(id, t);
                self.check_no_kflag(id, t);
                self.check_vlen(id, params.len(), "parameters");
            }
            TypeData::Var { ty, linkage } => {
                self.check_no_kflag(id, t);
                if name_ok {
                    self.check_ident(id, t.name_off, false, "variable");
                }
                self.check_ref(id, *ty, "type");
                if *linkage != BTF_VAR_STATIC && *linkage != BTF_VAR_GLOBAL_ALLOCATED {
                    self.report(
                        id,
                        Rule::Linkage,
                        format!("linkage {linkage} is not static (0) or global allocated (1)"),
                    );
                }
            }
            TypeData::Datasec { size, vars } => {
                if *size == 0 {
                    self.report(id, Rule::Size, "size is 0".into());
                }
                self.check_no_kflag(id, t);
                if name_ok {
                    self.check_section_name(id, t.name_off);
                }
                self.check_vlen(id, vars.len(), "entries");
                self.check_datasec_meta(id, *size, vars);
            }
            TypeData::Float { size } => {
                self.check_no_kflag(id, t);
                if !matches!(size, 2 | 4 | 8 | 12 | 16) {
                    self.report(
                        id,
                        Rule::Size,
                        format!("size {size} is not 2, 4, 8, 12 or 16"),
                    );
                }
            }
            TypeData::DeclTag { component_idx, .. } => {
                // DECL_TAG's kind_flag marks an attribute, like TYPE_TAG's.
                if name_ok && self.name(t.name_off).is_some_and(<[u8]>::is_empty) {
                    self.report(id, Rule::Name, "decl tag needs a value".into());
                }
                if *component_idx < -1 {
                    self.report(
                        id,
                        Rule::DeclTag,
                        format!("component_idx {component_idx} is below -1"),
                    );
                }
            }
            TypeData::LocParam {
                size,
                flags,
                values,
            } => {
                self.check_anon(id, t);
                self.check_no_kflag(id, t);
                self.check_loc_param(id, *size, *flags, values.len());
            }
            TypeData::LocProto { params } => {
                self.check_anon(id, t);
                self.check_no_kflag(id, t);
                self.check_vlen(id, params.len(), "parameters");
            }
            TypeData::Locsec { locs } => {
                self.check_no_kflag(id, t);
                if name_ok {
                    self.check_section_name(id, t.name_off);
                }
                self.check_vlen(id, locs.len(), "inline sites");
            }
            // Reported above: no kernel knows a kind this crate does not.
            TypeData::Unknown { .. } => {}
        }
    }

    /// A LOC_PARAM's size, flags and number of values, as the bpf-next uapi
    /// header defines them (see [`Target::BpfNext`]).
    fn check_loc_param(&mut self, id: TypeId, size: u32, flags: u32, vlen: usize) {
        if !matches!(size, 1 | 2 | 4 | 8) {
            self.report(id, Rule::Size, format!("size {size} is not 1, 2, 4 or 8"));
        }
        if flags & !BTF_LOC_PARAM_FLAGS_MASK != 0 {
            self.report(
                id,
                Rule::Location,
                format!("flags {flags:#x} set undefined bits"),
            );
            return;
        }
        let is_reg = flags & BTF_LOC_PARAM_REG != 0;
        let is_const = flags & BTF_LOC_PARAM_CONST != 0;
        let problem = if is_reg == is_const {
            Some("flags must have exactly one of CONST and REG".to_owned())
        } else if is_const && flags & (BTF_LOC_PARAM_DEREF | BTF_LOC_PARAM_OFFSET) != 0 {
            Some("a constant cannot have DEREF or OFFSET".to_owned())
        } else if is_reg && flags & BTF_LOC_PARAM_ADDR != 0 {
            Some("ADDR applies only to a constant".to_owned())
        } else if is_const && vlen != (size as usize).div_ceil(4).max(1) {
            Some(format!(
                "a {size}-byte constant needs {} values, has {vlen}",
                (size as usize).div_ceil(4).max(1)
            ))
        } else if is_reg && flags & BTF_LOC_PARAM_OFFSET != 0 && vlen != 2 {
            Some(format!(
                "a register with an offset needs 2 values, has {vlen}"
            ))
        } else if is_reg && !(1..=2).contains(&vlen) {
            Some(format!(
                "a register location needs 1 or 2 values, has {vlen}"
            ))
        } else if is_reg
            && vlen == 2
            && flags & BTF_LOC_PARAM_OFFSET == 0
            && flags & BTF_LOC_PARAM_DEREF != 0
        {
            Some("a two-register value cannot be dereferenced".to_owned())
        } else {
            None
        };
        if let Some(p) = problem {
            self.report(id, Rule::Location, format!("flags {flags:#x}: {p}"));
        }
    }

    /// What LOC_PROTO and LOCSEC entries refer to: a LOC_PROTO lists
    /// LOC_PARAMs (or 0, no location), a LOCSEC lists FUNCs with LOC_PROTOs.
    fn check_locations(&mut self) {
        for id in self.report_from..self.n {
            let Some(t) = self.ty(id) else { continue };
            if self.is_bad(id) {
                continue;
            }
            let mut wrong = Vec::new();
            match &t.data {
                TypeData::LocProto { params } => {
                    for (i, &p) in params.iter().enumerate() {
                        if p != 0 && self.kind(p) != Some(BTF_KIND_LOC_PARAM) {
                            wrong.push(format!(
                                "parameter {i} refers to {}, not a LOC_PARAM",
                                self.describe(p)
                            ));
                        }
                    }
                }
                TypeData::Locsec { locs } => {
                    for (i, l) in locs.iter().enumerate() {
                        if self.kind(l.func) != Some(BTF_KIND_FUNC) || l.func == 0 {
                            wrong.push(format!(
                                "site {i} refers to {}, not a FUNC",
                                self.describe(l.func)
                            ));
                        }
                        if self.kind(l.loc_proto) != Some(BTF_KIND_LOC_PROTO) || l.loc_proto == 0 {
                            wrong.push(format!(
                                "site {i} refers to {}, not a LOC_PROTO",
                                self.describe(l.loc_proto)
                            ));
                        }
                    }
                }
                _ => continue,
            }
            for w in wrong {
                self.report(id, Rule::Location, w);
            }
        }
    }

    fn check_enum_meta(
        &mut self,
        id: TypeId,
        t: &Type,
        size: u32,
        len: usize,
        names: impl Iterator<Item = u32>,
    ) {
        if size > 8 || !size.is_power_of_two() {
            self.report(id, Rule::Size, format!("size {size} is not 1, 2, 4 or 8"));
        }
        if self.name(t.name_off).is_some() {
            self.check_ident(id, t.name_off, true, "type");
        }
        self.check_vlen(id, len, "values");
        for (i, off) in names.enumerate() {
            self.check_ident(id, off, false, &format!("value #{i}"));
        }
    }

    fn member_label(&self, i: usize, m: &Member) -> String {
        match self.name(m.name_off) {
            Some(s) if !s.is_empty() => format!("member '{}'", String::from_utf8_lossy(s)),
            _ => format!("member #{i}"),
        }
    }

    fn check_members_meta(&mut self, id: TypeId, t: &Type, size: u32, members: &[Member]) {
        let is_union = t.kind() == BTF_KIND_UNION;
        let mut last_offset = 0;
        for (i, m) in members.iter().enumerate() {
            let label = self.member_label(i, m);
            self.check_ident(id, m.name_off, true, &label);
            self.check_ref(id, m.ty, &format!("type of {label}"));
            let off = m.bit_offset(t.kind_flag);
            if is_union && off != 0 {
                self.report(
                    id,
                    Rule::Member,
                    format!("{label} of a union has bit offset {off}, not 0"),
                );
            }
            // ">" rather than ">=": a flexible array member shares the offset
            // of what follows it, and zero-sized members exist.
            if last_offset > off {
                self.report(
                    id,
                    Rule::Member,
                    format!(
                        "{label} bit offset {off} is before the previous member's {last_offset}"
                    ),
                );
            }
            if off.div_ceil(8) > size {
                self.report(
                    id,
                    Rule::Member,
                    format!("{label} bit offset {off} is past the struct size {size}"),
                );
            }
            last_offset = off;
        }
    }

    fn check_datasec_meta(&mut self, id: TypeId, size: u32, vars: &[VarSecinfo]) {
        let mut last_end = 0u64;
        let mut sum = 0u64;
        for (i, v) in vars.iter().enumerate() {
            self.check_ref(id, v.ty, &format!("entry #{i}"));
            if (v.offset as u64) < last_end {
                self.report(
                    id,
                    Rule::Datasec,
                    format!(
                        "entry #{i} at offset {} overlaps or precedes the previous entry ending at {last_end}",
                        v.offset
                    ),
                );
            } else if v.offset >= size {
                self.report(
                    id,
                    Rule::Datasec,
                    format!(
                        "entry #{i} offset {} is past the section size {size}",
                        v.offset
                    ),
                );
            }
            if v.size == 0 || v.size > size {
                self.report(
                    id,
                    Rule::Datasec,
                    format!(
                        "entry #{i} size {} is 0 or larger than the section ({size})",
                        v.size
                    ),
                );
            }
            last_end = v.offset as u64 + v.size as u64;
            if last_end > size as u64 {
                self.report(
                    id,
                    Rule::Datasec,
                    format!(
                        "entry #{i} offset {} + size {} ends past the section size {size}",
                        v.offset, v.size
                    ),
                );
            }
            sum += v.size as u64;
        }
        if sum > size as u64 {
            self.report(
                id,
                Rule::Datasec,
                format!("entries add up to {sum} bytes, more than the section size {size}"),
            );
        }
    }

    /// `btf_check_all_types`: resolve every type that refers to another, in
    /// id order, and check every FUNC_PROTO.
    fn check_all_types(&mut self) {
        // A type that broke a per-type rule is not resolved: the kernel would
        // have stopped before, and its dependents are skipped.
        for id in 0..self.n as usize {
            if self.bad[id] {
                self.visit[id] = Visit::Resolved;
            }
        }
        for id in 1..self.n {
            let k = self.kinds[id as usize];
            if needs_resolve(k) && !self.is_resolved(id) {
                self.resolve(id);
            }
            if k == BTF_KIND_FUNC_PROTO && !self.is_bad(id) {
                if let Err(f) = self.func_proto_check(id) {
                    match f {
                        Fail::Problem(rule, detail) => self.report(id, rule, detail),
                        _ => self.bad[id as usize] = true,
                    }
                }
            }
        }
    }

    /// `btf_resolve`: the depth-first walk from `id`. False if it failed (and
    /// was reported, or depends on something that was).
    fn resolve(&mut self, id: TypeId) -> bool {
        self.mode = Mode::Tbd;
        self.stack.clear();
        let mut result = self.push(id);
        while result.is_ok() {
            let Some(&v) = self.stack.last() else { break };
            result = self.resolve_step(v);
        }
        if let Err(f) = result {
            self.fail(id, f);
            return false;
        }
        if !self.resolve_valid(id) {
            self.report(id, Rule::TypeId, "resolves to an invalid state".into());
            return false;
        }
        true
    }

    /// Reports a failed walk and marks everything on the stack bad, so that
    /// it is not walked again and its dependents are skipped.
    fn fail(&mut self, top: TypeId, f: Fail) {
        let cur = self.stack.last().map_or(top, |v| v.id);
        match f {
            Fail::Problem(rule, detail) => self.report(cur, rule, detail),
            Fail::Depth => {
                let chain = self.chain(0);
                self.report(
                    top,
                    Rule::Depth,
                    format!(
                        "resolving it needs more than {MAX_RESOLVE_DEPTH} nested types: {chain}"
                    ),
                );
            }
            Fail::Loop(again) => {
                let from = self.stack.iter().position(|v| v.id == again).unwrap_or(0);
                let chain = self.chain(from);
                self.report(
                    top,
                    Rule::Loop,
                    format!("reference loop without a pointer: {chain} -> [{again}]"),
                );
            }
            Fail::Silent => {}
        }
        for i in 0..self.stack.len() {
            let id = self.stack[i].id as usize;
            self.bad[id] = true;
            self.visit[id] = Visit::Resolved;
        }
        self.stack.clear();
    }

    fn chain(&self, from: usize) -> String {
        let ids: Vec<String> = self.stack[from..]
            .iter()
            .map(|v| format!("[{}]", v.id))
            .collect();
        ids.join(" -> ")
    }

    fn push(&mut self, id: TypeId) -> Step {
        if self.stack.len() == MAX_RESOLVE_DEPTH {
            return Err(Fail::Depth);
        }
        match self.visit.get(id as usize) {
            Some(Visit::NotVisited) => {}
            Some(_) => return Err(Fail::Loop(id)),
            None => return Err(Fail::Problem(Rule::TypeId, self.describe(id))),
        }
        self.visit[id as usize] = Visit::Visited;
        self.stack.push(Vertex { id, next_member: 0 });
        if self.mode == Mode::Tbd {
            let k = self.kinds[id as usize];
            if k == BTF_KIND_PTR {
                self.mode = Mode::Ptr;
            } else if is_struct(k) || k == BTF_KIND_ARRAY {
                self.mode = Mode::StructOrArray;
            }
        }
        Ok(())
    }

    fn pop_resolved(&mut self, resolved_id: TypeId, resolved_size: u32) {
        if let Some(v) = self.stack.pop() {
            let i = v.id as usize;
            self.resolved_id[i] = resolved_id;
            self.resolved_size[i] = resolved_size;
            self.visit[i] = Visit::Resolved;
        }
    }

    fn set_next_member(&mut self, next: usize) {
        if let Some(v) = self.stack.last_mut() {
            v.next_member = next;
        }
    }

    /// `env_type_is_resolve_sink`: whether the walk stops at a type of kind `k`.
    fn is_sink(&self, k: Kind) -> bool {
        match self.mode {
            Mode::Tbd => !needs_resolve(k),
            Mode::Ptr => !is_modifier(k) && k != BTF_KIND_PTR,
            Mode::StructOrArray => !is_modifier(k) && k != BTF_KIND_ARRAY && !is_struct(k),
        }
    }

    /// Whether the walk must go down to `id` before going on.
    fn must_descend(&self, id: TypeId, k: Kind) -> bool {
        !self.is_sink(k) && !self.is_resolved(id)
    }

    /// `btf_type_id_size`: the type that gives `id` its size, and the size;
    /// `None` for types without one (void, FWD, FUNC, FUNC_PROTO).
    fn type_id_size(&self, id: TypeId) -> Option<(TypeId, u32)> {
        let sized = |id: TypeId| -> Option<(TypeId, u32)> {
            let k = self.kind(id)?;
            if is_nosize(k) {
                None
            } else if has_size(k) {
                Some((id, self.ty(id).map_or(0, Type::size_or_type)))
            } else if k == BTF_KIND_ARRAY {
                Some((id, self.resolved_size[id as usize]))
            } else if k == BTF_KIND_PTR {
                Some((id, PTR_SIZE))
            } else {
                None
            }
        };
        let k = self.kind(id)?;
        if is_modifier(k) || k == BTF_KIND_VAR {
            sized(self.resolved_id[id as usize])
        } else {
            sized(id)
        }
    }

    fn resolve_step(&mut self, v: Vertex) -> Step {
        let Some(t) = self.ty(v.id) else {
            return Err(Fail::Problem(Rule::TypeId, self.describe(v.id)));
        };
        match &t.data {
            TypeData::Ptr { ty } => self.resolve_ref(*ty, RefKind::Ptr),
            TypeData::Var { ty, .. } => self.resolve_ref(*ty, RefKind::Var),
            TypeData::Typedef { ty }
            | TypeData::Volatile { ty }
            | TypeData::Const { ty }
            | TypeData::Restrict { ty }
            | TypeData::TypeTag { ty } => self.resolve_ref(*ty, RefKind::Modifier),
            TypeData::Array(a) => self.resolve_array(a),
            TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
                self.resolve_struct(v, t, members)
            }
            TypeData::Datasec { vars, .. } => self.resolve_datasec(v, vars),
            TypeData::Func { proto, .. } => self.resolve_func(*proto),
            TypeData::DeclTag { ty, component_idx } => self.resolve_decl_tag(*ty, *component_idx),
            _ => Err(Fail::Problem(
                Rule::TypeId,
                "this kind cannot be resolved".into(),
            )),
        }
    }

    /// Modifiers, PTR and VAR: `btf_modifier_resolve`, `btf_ptr_resolve`,
    /// `btf_var_resolve`.
    fn resolve_ref(&mut self, next: TypeId, how: RefKind) -> Step {
        let Some(nk) = self.kind(next) else {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!("refers to {}", self.describe(next)),
            ));
        };
        if is_source_only(nk) {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!("refers to {}, which is not a type", self.describe(next)),
            ));
        }
        if self.is_bad(next) {
            return Err(Fail::Silent);
        }
        if self.must_descend(next, nk) {
            return self.push(next);
        }
        // A modifier resolved while walking a struct may have stopped at a
        // pointer; walk on from that pointer so that it cannot lead back here.
        if how != RefKind::Modifier && is_modifier(nk) {
            let rid = self.resolved_id[next as usize];
            if self.kind(rid) == Some(BTF_KIND_PTR)
                && !self.is_bad(rid)
                && self.must_descend(rid, BTF_KIND_PTR)
            {
                return self.push(rid);
            }
        }
        let resolved = match self.type_id_size(next) {
            Some((rid, _)) => rid,
            None if how == RefKind::Var => {
                return Err(Fail::Problem(
                    Rule::TypeId,
                    format!("type {} has no size", self.describe(next)),
                ))
            }
            None => {
                let (rid, rk) = if self.is_resolved(next) {
                    let rid = self.resolved_id[next as usize];
                    (rid, self.kind(rid))
                } else {
                    (next, Some(nk))
                };
                // "typedef void new_void", "const void", pointers to
                // functions and to incomplete structs.
                if !matches!(rk, Some(BTF_KIND_UNKN | BTF_KIND_FWD | BTF_KIND_FUNC_PROTO)) {
                    return Err(Fail::Problem(
                        Rule::TypeId,
                        format!("refers to {}, which is not a type", self.describe(next)),
                    ));
                }
                rid
            }
        };
        self.pop_resolved(resolved, 0);
        Ok(())
    }

    /// `btf_array_resolve`.
    fn resolve_array(&mut self, a: &Array) -> Step {
        let ik = self.kind(a.index);
        if ik.is_none_or(|k| is_nosize(k) || is_source_only(k)) {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!("index type {} is not an integer", self.describe(a.index)),
            ));
        }
        if self.is_bad(a.index) {
            return Err(Fail::Silent);
        }
        if let Some(k) = ik {
            if self.must_descend(a.index, k) {
                return self.push(a.index);
            }
        }
        let regular_int = |id: TypeId| {
            self.ty(id)
                .is_some_and(|t| t.kind() == BTF_KIND_INT && int_is_regular(t))
        };
        if !self
            .type_id_size(a.index)
            .is_some_and(|(rid, _)| regular_int(rid))
        {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!(
                    "index type {} is not a regular integer",
                    self.describe(a.index)
                ),
            ));
        }
        let ek = self.kind(a.elem);
        if ek.is_none_or(|k| is_nosize(k) || is_source_only(k)) {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!("element type {} has no size", self.describe(a.elem)),
            ));
        }
        if self.is_bad(a.elem) {
            return Err(Fail::Silent);
        }
        if let Some(k) = ek {
            if self.must_descend(a.elem, k) {
                return self.push(a.elem);
            }
        }
        let Some((eid, esize)) = self.type_id_size(a.elem) else {
            return Err(Fail::Problem(
                Rule::TypeId,
                format!("element type {} has no size", self.describe(a.elem)),
            ));
        };
        if self.kind(eid) == Some(BTF_KIND_INT) && !regular_int(eid) {
            return Err(Fail::Problem(
                Rule::Int,
                format!("element type {} is a bitfield-like INT", self.describe(eid)),
            ));
        }
        if a.nelems != 0 && esize > u32::MAX / a.nelems {
            return Err(Fail::Problem(
                Rule::Size,
                format!("{} elements of {esize} bytes overflow 32 bits", a.nelems),
            ));
        }
        self.pop_resolved(eid, esize * a.nelems);
        Ok(())
    }

    /// `btf_struct_resolve`: members one by one, walking down to each
    /// member's type first when it is not resolved yet.
    fn resolve_struct(&mut self, v: Vertex, t: &'a Type, members: &'a [Member]) -> Step {
        if v.next_member > 0 {
            if let Some(m) = members.get(v.next_member - 1) {
                if self.is_bad(m.ty) {
                    return Err(Fail::Silent);
                }
                self.check_member(t, v.next_member - 1, m, m.ty)?;
            }
        }
        for (i, m) in members.iter().enumerate().skip(v.next_member) {
            let mk = self.kind(m.ty);
            if mk.is_none_or(|k| is_nosize(k) || is_source_only(k)) {
                return Err(Fail::Problem(
                    Rule::Member,
                    format!(
                        "{} has type {}, which has no size",
                        self.member_label(i, m),
                        self.describe(m.ty)
                    ),
                ));
            }
            if self.is_bad(m.ty) {
                return Err(Fail::Silent);
            }
            if let Some(k) = mk {
                if self.must_descend(m.ty, k) {
                    self.set_next_member(i + 1);
                    return self.push(m.ty);
                }
            }
            self.check_member(t, i, m, m.ty)?;
        }
        self.pop_resolved(0, 0);
        Ok(())
    }

    /// Each kind's `check_member` / `check_kflag_member`: does the member,
    /// typed `mty`, lie inside the aggregate `st`?
    fn check_member(&self, st: &Type, i: usize, m: &Member, mty: TypeId) -> Step {
        let Some(k) = self.kind(mty) else {
            return Err(Fail::Problem(Rule::Member, self.describe(mty)));
        };
        let size = st.size_or_type();
        let label = || self.member_label(i, m);
        let problem = |detail: String| Err(Fail::Problem(Rule::Member, detail));
        if is_modifier(k) {
            return match self.type_id_size(mty) {
                Some((rid, _)) => self.check_member(st, i, m, rid),
                None => problem(format!("{} has no size", label())),
            };
        }
        // With kind_flag, the offset word packs a bitfield size; only INT and
        // ENUM members may be bitfields.
        let bitfield = m.bitfield_size(st.kind_flag);
        let bit_off = m.bit_offset(st.kind_flag);
        if st.kind_flag
            && bitfield != 0
            && !matches!(k, BTF_KIND_INT | BTF_KIND_ENUM | BTF_KIND_ENUM64)
        {
            return problem(format!(
                "{} is a {bitfield}-bit bitfield of {}, which is not an integer",
                label(),
                self.describe(mty)
            ));
        }
        let exceeds = |bits: u64| {
            problem(format!(
                "{} bit offset {bit_off} + size {bits} past struct size {size}",
                label()
            ))
        };
        match k {
            BTF_KIND_INT => {
                let Some(TypeData::Int {
                    offset: int_off,
                    bits,
                    ..
                }) = self.ty(mty).map(|t| &t.data)
                else {
                    return problem(label());
                };
                let (int_off, bits) = (*int_off as u32, *bits as u32);
                let (off, nr_bits) = if st.kind_flag {
                    if !self.ty(mty).is_some_and(int_is_regular) {
                        return problem(format!(
                            "{} of {} needs a regular INT (whole bytes, no bit offset)",
                            label(),
                            self.describe(mty)
                        ));
                    }
                    if bitfield == 0 {
                        if bit_off % 8 != 0 {
                            return problem(format!(
                                "{} bit offset {bit_off} is not byte aligned",
                                label()
                            ));
                        }
                        (bit_off, bits)
                    } else if bitfield > bits {
                        return problem(format!(
                            "{} bitfield of {bitfield} bits is wider than its {bits}-bit type",
                            label()
                        ));
                    } else {
                        (bit_off, bitfield)
                    }
                } else {
                    let Some(off) = bit_off.checked_add(int_off) else {
                        return problem(format!("{} bit offset overflows 32 bits", label()));
                    };
                    (off, bits)
                };
                let bytes_off = off / 8;
                let nr_copy_bits = nr_bits + off % 8;
                if nr_copy_bits > BITS_PER_U128 {
                    return problem(format!(
                        "{} spans {nr_copy_bits} bits, more than {BITS_PER_U128}",
                        label()
                    ));
                }
                if size < bytes_off || size - bytes_off < nr_copy_bits.div_ceil(8) {
                    return exceeds(nr_bits as u64);
                }
                Ok(())
            }
            BTF_KIND_ENUM | BTF_KIND_ENUM64 if st.kind_flag => {
                // The kernel sizes every enum member as an int here.
                let nr_bits = if bitfield == 0 {
                    if bit_off % 8 != 0 {
                        return problem(format!(
                            "{} bit offset {bit_off} is not byte aligned",
                            label()
                        ));
                    }
                    32
                } else if bitfield > 32 {
                    return problem(format!(
                        "{} bitfield of {bitfield} bits is wider than an int",
                        label()
                    ));
                } else {
                    bitfield
                };
                if (size as u64) < (bit_off as u64 + nr_bits as u64).div_ceil(8) {
                    return exceeds(nr_bits as u64);
                }
                Ok(())
            }
            BTF_KIND_PTR | BTF_KIND_ARRAY | BTF_KIND_STRUCT | BTF_KIND_UNION | BTF_KIND_ENUM
            | BTF_KIND_ENUM64 => {
                if bit_off % 8 != 0 {
                    return problem(format!(
                        "{} bit offset {bit_off} is not byte aligned",
                        label()
                    ));
                }
                let msize = match k {
                    BTF_KIND_PTR => PTR_SIZE,
                    BTF_KIND_ARRAY => self.type_id_size(mty).map_or(0, |(_, s)| s),
                    _ => self.ty(mty).map_or(0, Type::size_or_type),
                };
                // The kernel subtracts in u32: an offset past the end was
                // already refused by the per-type check.
                if size.wrapping_sub(bit_off / 8) < msize {
                    return exceeds(msize as u64 * 8);
                }
                Ok(())
            }
            BTF_KIND_FLOAT => {
                let msize = self.ty(mty).map_or(0, Type::size_or_type);
                let align_bits = msize.min(PTR_SIZE) as u64 * 8;
                if align_bits != 0 && bit_off as u64 % align_bits != 0 {
                    return problem(format!(
                        "{} bit offset {bit_off} is not aligned for a {msize}-byte FLOAT",
                        label()
                    ));
                }
                if bit_off as u64 / 8 + msize as u64 > size as u64 {
                    return exceeds(msize as u64 * 8);
                }
                Ok(())
            }
            _ => problem(format!(
                "{} has type {}, which cannot be a member",
                label(),
                self.describe(mty)
            )),
        }
    }

    /// `btf_datasec_resolve`: every entry is a VAR whose type fits its size.
    fn resolve_datasec(&mut self, v: Vertex, vars: &'a [VarSecinfo]) -> Step {
        self.mode = Mode::Tbd;
        for (i, vsi) in vars.iter().enumerate().skip(v.next_member) {
            if self.kind(vsi.ty) != Some(BTF_KIND_VAR) {
                return Err(Fail::Problem(
                    Rule::Datasec,
                    format!("entry #{i} is {}, not a VAR", self.describe(vsi.ty)),
                ));
            }
            if self.is_bad(vsi.ty) {
                return Err(Fail::Silent);
            }
            if self.must_descend(vsi.ty, BTF_KIND_VAR) {
                self.set_next_member(i + 1);
                return self.push(vsi.ty);
            }
            let var_ty = self.ty(vsi.ty).map_or(0, Type::size_or_type);
            let Some((_, tsize)) = self.type_id_size(var_ty) else {
                return Err(Fail::Problem(
                    Rule::Datasec,
                    format!(
                        "entry #{i} {} has a type without size",
                        self.describe(vsi.ty)
                    ),
                ));
            };
            if vsi.size < tsize {
                return Err(Fail::Problem(
                    Rule::Datasec,
                    format!(
                        "entry #{i} {} has size {}, smaller than its type's {tsize}",
                        self.describe(vsi.ty),
                        vsi.size
                    ),
                ));
            }
        }
        self.pop_resolved(0, 0);
        Ok(())
    }

    /// `btf_func_check`: a FUNC's type is a FUNC_PROTO whose parameters all
    /// have names.
    fn resolve_func(&mut self, proto: TypeId) -> Step {
        let Some(TypeData::FuncProto { params, .. }) = self.ty(proto).map(|t| &t.data) else {
            return Err(Fail::Problem(
                Rule::Func,
                format!("type {} is not a FUNC_PROTO", self.describe(proto)),
            ));
        };
        if self.is_bad(proto) {
            return Err(Fail::Silent);
        }
        if let Some(i) = params.iter().position(|p| p.name_off == 0 && p.ty != 0) {
            return Err(Fail::Problem(
                Rule::Func,
                format!(
                    "parameter #{} of {} has no name",
                    i + 1,
                    self.describe(proto)
                ),
            ));
        }
        self.pop_resolved(proto, 0);
        Ok(())
    }

    /// `btf_decl_tag_resolve`.
    fn resolve_decl_tag(&mut self, target: TypeId, component_idx: i32) -> Step {
        let tk = self.kind(target);
        if !tk.is_some_and(|k| {
            matches!(k, BTF_KIND_FUNC | BTF_KIND_VAR | BTF_KIND_TYPEDEF) || is_struct(k)
        }) {
            return Err(Fail::Problem(
                Rule::DeclTag,
                format!(
                    "tags {}: only FUNC, STRUCT, UNION, VAR and TYPEDEF can be tagged",
                    self.describe(target)
                ),
            ));
        }
        if self.is_bad(target) {
            return Err(Fail::Silent);
        }
        if let Some(k) = tk {
            if self.must_descend(target, k) {
                return self.push(target);
            }
        }
        if component_idx != -1 {
            let vlen = match self.ty(target).map(|t| &t.data) {
                Some(TypeData::Struct { members, .. } | TypeData::Union { members, .. }) => {
                    Some(members.len())
                }
                Some(TypeData::Func { proto, .. }) => match self.ty(*proto).map(|t| &t.data) {
                    Some(TypeData::FuncProto { params, .. }) => Some(params.len()),
                    _ => Some(0),
                },
                _ => None,
            };
            match vlen {
                None => {
                    return Err(Fail::Problem(
                        Rule::DeclTag,
                        format!(
                            "component_idx {component_idx} on {}, which has no components",
                            self.describe(target)
                        ),
                    ))
                }
                Some(n) if component_idx as u32 as usize >= n => {
                    return Err(Fail::Problem(
                        Rule::DeclTag,
                        format!(
                            "component_idx {component_idx} is out of range: {} has {n}",
                            self.describe(target)
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        self.pop_resolved(target, 0);
        Ok(())
    }

    /// `btf_resolve_valid`: the final sanity check after a walk.
    fn resolve_valid(&self, id: TypeId) -> bool {
        if !self.is_resolved(id) {
            return false;
        }
        let i = id as usize;
        let (rid, rsize) = (self.resolved_id[i], self.resolved_size[i]);
        let k = self.kinds[i];
        if is_struct(k) || k == BTF_KIND_DATASEC {
            return rid == 0 && rsize == 0;
        }
        if matches!(k, BTF_KIND_DECL_TAG | BTF_KIND_FUNC) {
            return rid != 0 && rsize == 0;
        }
        if is_modifier(k) || matches!(k, BTF_KIND_PTR | BTF_KIND_VAR) {
            return self.kind(rid).is_some_and(|rk| {
                !is_modifier(rk) && rk != BTF_KIND_VAR && rk != BTF_KIND_DATASEC
            });
        }
        if let Some(TypeData::Array(a)) = self.ty(id).map(|t| &t.data) {
            return self.type_id_size(a.elem).is_some_and(|(eid, esize)| {
                self.kind(eid).is_some_and(|ek| !is_modifier(ek))
                    && a.nelems.wrapping_mul(esize) == rsize
            });
        }
        false
    }

    /// `btf_func_proto_check`: the return type and every parameter resolve
    /// to a type with a size; only the last parameter may be void (varargs).
    fn func_proto_check(&mut self, id: TypeId) -> Step {
        let Some(TypeData::FuncProto { ret, params }) = self.ty(id).map(|t| &t.data) else {
            return Ok(());
        };
        if *ret != 0 {
            self.check_func_type(*ret, "return type")?;
        }
        let mut params = &params[..];
        if let Some((last, rest)) = params.split_last() {
            if last.ty == 0 {
                if last.name_off != 0 {
                    return Err(Fail::Problem(
                        Rule::Func,
                        format!("the varargs parameter #{} has a name", params.len()),
                    ));
                }
                params = rest;
            }
        }
        for (i, p) in params.iter().enumerate() {
            let what = format!("parameter #{}", i + 1);
            if self.kind(p.ty).is_none() {
                return Err(Fail::Problem(
                    Rule::Func,
                    format!("{what} has {}", self.describe(p.ty)),
                ));
            }
            if p.name_off != 0 && !self.name(p.name_off).is_some_and(valid_identifier) {
                return Err(Fail::Problem(
                    Rule::Name,
                    format!(
                        "{what} name '{}' is not a valid identifier",
                        lossy(self.btf, p.name_off)
                    ),
                ));
            }
            self.check_func_type(p.ty, &what)?;
        }
        Ok(())
    }

    fn check_func_type(&mut self, ty: TypeId, what: &str) -> Step {
        let Some(k) = self.kind(ty) else {
            return Err(Fail::Problem(
                Rule::Func,
                format!("{what} is {}", self.describe(ty)),
            ));
        };
        if is_source_only(k) {
            return Err(Fail::Problem(
                Rule::Func,
                format!("{what} is {}, which is not a type", self.describe(ty)),
            ));
        }
        if self.is_bad(ty) {
            return Err(Fail::Silent);
        }
        if needs_resolve(k) && !self.is_resolved(ty) && !self.resolve(ty) {
            return Err(Fail::Silent);
        }
        if self.type_id_size(ty).is_none() {
            return Err(Fail::Problem(
                Rule::Func,
                format!("{what} {} has no size", self.describe(ty)),
            ));
        }
        Ok(())
    }

    /// `btf_check_type_tags`: in a chain of modifiers, TYPE_TAGs come first,
    /// and no chain is longer than 32.
    fn check_type_tags(&mut self) {
        let mut good_id = 0;
        for i in 1..self.n {
            if !is_modifier(self.kinds[i as usize]) || self.is_bad(i) {
                continue;
            }
            let mut chain_limit = 32;
            let mut in_tags = self.kinds[i as usize] == BTF_KIND_TYPE_TAG;
            let mut cur = i;
            while let Some(k) = self.kind(cur).filter(|&k| is_modifier(k)) {
                if chain_limit == 0 {
                    self.report(
                        i,
                        Rule::TypeTag,
                        "chain of more than 32 modifiers, or a cycle".into(),
                    );
                    break;
                }
                chain_limit -= 1;
                if k == BTF_KIND_TYPE_TAG {
                    if !in_tags {
                        self.report(
                            i,
                            Rule::TypeTag,
                            format!("type tag {} follows a modifier", self.describe(cur)),
                        );
                        break;
                    }
                } else {
                    in_tags = false;
                }
                if cur <= good_id {
                    break;
                }
                cur = self.ty(cur).map_or(0, Type::size_or_type);
            }
            good_id = i;
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum RefKind {
    Modifier,
    Ptr,
    Var,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_follow_the_kernel() {
        assert!(valid_identifier(b"foo_bar1"));
        assert!(valid_identifier(b"_x"));
        assert!(valid_identifier(b"foo.isra.0"));
        assert!(!valid_identifier(b""));
        assert!(!valid_identifier(b"1abc"));
        assert!(!valid_identifier(b"a-b"));
        assert!(valid_identifier(&[b'a'; KSYM_NAME_LEN]));
        assert!(!valid_identifier(&[b'a'; KSYM_NAME_LEN + 1]));
        assert!(valid_section_name(b".data..percpu"));
        assert!(valid_section_name(b"a b"));
        assert!(!valid_section_name(b"a\nb"));
        // lib/ctype.c is Latin-1: é is a letter, × is not, 0x85 is a control.
        assert!(valid_identifier(b"caf\xe9"));
        assert!(!valid_identifier(b"a\xd7b"));
        assert!(!valid_section_name(b"a\x85"));
    }
}
