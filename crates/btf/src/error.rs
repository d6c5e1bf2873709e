//! Errors of the BTF library: a plain enum, each variant saying where.

use crate::types::TypeId;
use crate::Kind;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("BTF is empty")]
    Empty,
    #[error("truncated: {what} at offset {offset:#x} needs {need} bytes, {have} left")]
    Truncated {
        what: &'static str,
        offset: usize,
        need: usize,
        have: usize,
    },
    #[error("bad magic {found:#06x} at offset 0 (expected 0xeb9f)")]
    BadMagic { found: u16 },
    #[error("unsupported BTF version {0} at offset 2")]
    BadVersion(u8),
    #[error("bad header at offset {offset:#x}: {reason}")]
    BadHeader { offset: usize, reason: String },
    #[error("{section} section [{start:#x}, {end:#x}) lies outside the {len}-byte BTF")]
    SectionOutOfBounds {
        section: &'static str,
        start: u64,
        end: u64,
        len: usize,
    },
    #[error("type [{id}] at offset {offset:#x}: unknown kind {kind}, and no layout section describes it")]
    UnknownKind {
        id: TypeId,
        offset: usize,
        kind: Kind,
    },
    #[error("type [{id}] at offset {offset:#x}: vlen {vlen} records run past the type section")]
    RecordsPastEnd {
        id: TypeId,
        offset: usize,
        vlen: u32,
    },
    #[error("layout section: kind {kind}: {reason}")]
    BadLayout { kind: Kind, reason: String },
    #[error("string offset {0:#x} is out of range")]
    StringOffset(u32),
    #[error("string at offset {0:#x} is not terminated")]
    StringUnterminated(u32),
    #[error("string at offset {0:#x} is not valid UTF-8")]
    StringUtf8(u32),
    #[error("type id {0} is out of range")]
    TypeId(TypeId),
    #[error("too many types (more than {0})")]
    TooManyTypes(u32),
    #[error("ELF: {0}")]
    Elf(String),
    #[error("ELF has no .BTF section")]
    NoBtfSection,
    #[error("split BTF needs a base (--base)")]
    NeedsBase,
    #[error("cannot deduplicate: type [{id}] {reason}")]
    Dedup { id: TypeId, reason: String },
    #[error("cannot deduplicate: type [{id}] is part of a cycle of reference types that passes through no struct, union or typedef")]
    DedupCycle { id: TypeId },
    #[error("cannot distill the base: type [{id}]: {reason}")]
    Distill { id: TypeId, reason: String },
}
