//! Errors of the BTF library: a plain enum, each variant saying where.

use crate::types::TypeId;
use crate::Kind;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why BTF could not be read, loaded, deduplicated or distilled.
///
/// Offsets are in bytes from the start of the BTF blob (its header's first
/// byte; for an ELF file, the start of the `.BTF` section). String offsets
/// are offsets into the string section as type records hold them (for split
/// BTF, counting the base's strings first). A cause is part of the message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The blob has no bytes at all (an empty file or section).
    #[error("BTF is empty")]
    Empty,
    /// A structure runs past the end of the blob or of its section.
    #[error("truncated: {what} at offset {offset:#x} needs {need} bytes, {have} left")]
    Truncated {
        /// The structure (`"header"`, `"btf_type"`, `"btf_array"`...).
        what: &'static str,
        /// Where it starts.
        offset: usize,
        /// Its length in bytes.
        need: usize,
        /// The bytes there are from `offset` on.
        have: usize,
    },
    /// The first two bytes are not 0xeb9f in either byte order: not BTF.
    #[error("bad magic {found:#06x} at offset 0 (expected 0xeb9f)")]
    BadMagic {
        /// The first two bytes, read little-endian.
        found: u16,
    },
    /// The header's version is not 1, the only one there is.
    #[error("unsupported BTF version {0} at offset 2")]
    BadVersion(u8),
    /// The header's sizes or offsets are inconsistent (misaligned sections,
    /// a header shorter than 24 bytes, a string section that does not start
    /// with "" or end with a NUL).
    #[error("bad header at offset {offset:#x}: {reason}")]
    BadHeader {
        /// The offset of the bad field, or of the bad byte it describes.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// A section the header describes does not lie inside the blob.
    #[error("{section} section [{start:#x}, {end:#x}) lies outside the {len}-byte BTF")]
    SectionOutOfBounds {
        /// `"type"`, `"string"` or `"layout"`.
        section: &'static str,
        /// Where the header says it starts.
        start: u64,
        /// Where the header says it ends (exclusive).
        end: u64,
        /// The blob's length in bytes.
        len: usize,
    },
    /// A type's kind is one this crate does not know, and the blob has no
    /// layout section that says how long its records are, so the types after
    /// it cannot be found.
    #[error("type [{id}] at offset {offset:#x}: unknown kind {kind}, and no layout section describes it")]
    UnknownKind {
        /// The type's id.
        id: TypeId,
        /// Where the type starts.
        offset: usize,
        /// Its kind.
        kind: Kind,
    },
    /// A type's vlen promises more records than the type section holds.
    #[error("type [{id}] at offset {offset:#x}: vlen {vlen} records run past the type section")]
    RecordsPastEnd {
        /// The type's id.
        id: TypeId,
        /// Where the type starts.
        offset: usize,
        /// The number of records its info word gives.
        vlen: u32,
    },
    /// The layout section describes a kind in a way no type can be read with
    /// (sizes that are not multiples of 4).
    #[error("layout section: kind {kind}: {reason}")]
    BadLayout {
        /// The kind.
        kind: Kind,
        /// What is wrong.
        reason: String,
    },
    /// A string offset points past the string section.
    #[error("string offset {0:#x} is out of range")]
    StringOffset(u32),
    /// No NUL ends the string at this offset before the section does.
    #[error("string at offset {0:#x} is not terminated")]
    StringUnterminated(u32),
    /// The string at this offset is not UTF-8 (as a name, it must be).
    #[error("string at offset {0:#x} is not valid UTF-8")]
    StringUtf8(u32),
    /// No type has this id (ids of split BTF continue after its base's).
    #[error("type id {0} is out of range")]
    TypeId(TypeId),
    /// More types than a BTF type id can number. No function of this
    /// version returns it.
    #[error("too many types (more than {0})")]
    TooManyTypes(u32),
    /// The file is not an ELF file the object crate reads, or a section of
    /// it cannot be read (compressed with an unknown codec, say).
    #[error("ELF: {0}")]
    Elf(object::read::Error),
    /// The `.BTF` section lies past the end of the file.
    #[error(".BTF at {offset:#x} ({size} bytes) is past the end of the file")]
    BtfPastEnd {
        /// The section's file offset.
        offset: u64,
        /// Its size in bytes.
        size: u64,
    },
    /// An ELF section whose bytes cannot be had (past the end of the
    /// file, or compressed and corrupt).
    #[error(transparent)]
    Section(#[from] fileio::elf_section::SectionError),
    /// A file that could not be opened, read or decompressed.
    #[error(transparent)]
    Input(#[from] fileio::Error),
    /// A file was read, but what it holds is not BTF that parses.
    #[error("{path}: {error}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong in it.
        error: Box<Error>,
    },
    /// `bpf(BPF_BTF_LOAD)` failed with EPERM or EACCES: the process lacks
    /// CAP_BPF (or CAP_SYS_ADMIN), or unprivileged BPF is disabled.
    #[error("loading BTF into the kernel needs root or CAP_BPF: {0}")]
    KernelPermission(std::io::Error),
    /// The blob is larger than [`MAX_BTF_SIZE`](crate::kernel::MAX_BTF_SIZE);
    /// it was not offered to the kernel.
    #[error("the BTF is {size} bytes; BPF_BTF_LOAD takes at most {max}", max = crate::kernel::MAX_BTF_SIZE)]
    KernelTooBig {
        /// The blob's size in bytes.
        size: usize,
    },
    /// `bpf()` failed with EPERM or EACCES while walking or reading the
    /// kernel's BTF objects, which needs CAP_SYS_ADMIN.
    #[error("reading the kernel's BTF objects needs root or CAP_SYS_ADMIN: {0}")]
    LoadedPermission(std::io::Error),
    /// No BTF object has this id (it was never loaded, or was freed since).
    #[error("no BTF object with id {0} is loaded")]
    NoSuchBtfId(u32),
    /// Another `bpf()` command failed.
    #[error("{what}: {error}")]
    Bpf {
        /// The command (`"BPF_BTF_GET_NEXT_ID"`...).
        what: &'static str,
        /// Its error.
        error: std::io::Error,
    },
    /// The kernel's verifier refused the blob.
    #[error("the kernel rejected the BTF: {error}")]
    KernelRejected {
        /// The error of the first, log-less load (EINVAL, mostly).
        error: std::io::Error,
        /// The verifier's verbose log, which says which type it refused and why.
        log: String,
    },
    /// The ELF file has no `.BTF` section (a kernel built without
    /// CONFIG_DEBUG_INFO_BTF, or an object pahole has not run over).
    #[error("ELF has no .BTF section")]
    NoBtfSection,
    /// The BTF is split (its string section does not start with "": it
    /// continues a base's) and no base was given.
    #[error("split BTF needs a base (--base)")]
    NeedsBase,
    /// Deduplication met a type it cannot handle (a kind whose references
    /// are unknown, a type left without a canonical type).
    #[error("cannot deduplicate: type [{id}] {reason}")]
    Dedup {
        /// The type's id.
        id: TypeId,
        /// What is wrong with it.
        reason: String,
    },
    /// Deduplication met a loop of reference types (pointers, modifiers,
    /// function prototypes) with no struct, union or typedef in it, which
    /// it cannot resolve.
    #[error("cannot deduplicate: type [{id}] is part of a cycle of reference types that passes through no struct, union or typedef")]
    DedupCycle {
        /// A type of the cycle.
        id: TypeId,
    },
    /// `distill_base` cannot make a minimal base: the BTF is not split, or
    /// refers to a base type it cannot keep.
    #[error("cannot distill the base: type [{id}]: {reason}")]
    Distill {
        /// The type's id (0 when the whole BTF is at fault).
        id: TypeId,
        /// What is wrong.
        reason: String,
    },
}
