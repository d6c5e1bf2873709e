//! Errors of the encoder: each names the file and, where there is one, the
//! section or DIE offset that caused it. A cause is part of the message
//! and not also a chained source (fields are not named `source`), so that
//! anyhow's `{:#}` says it once (as `btf::Error`).

use std::path::PathBuf;

/// A result whose error is the encoder's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an encode (or an embed) failed. Every variant but `Embed` names
/// the file it is about.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened, mapped or read.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// A compressed file (`.ko.xz`...) that does not decompress.
    #[error("{path}: not a valid ELF file: {error}")]
    Decompress {
        /// The compressed file.
        path: PathBuf,
        /// What the decompressor said.
        error: fileio::DecompressError,
    },
    /// ELF headers that the object crate does not read.
    #[error("{path}: not a valid ELF file: {error}")]
    Object {
        /// The file.
        path: PathBuf,
        /// What the ELF reader found wrong.
        error: object::read::Error,
    },
    /// An input the encoder does not take: an ELF of an architecture
    /// without a description (`arch`), or raw BTF where an ELF file with
    /// DWARF was expected.
    #[error("{path}: unsupported: {what}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What it is that is not supported, and what to use instead.
        what: String,
    },
    /// dwz's alternate debug file: missing, another build-id, unreadable.
    #[error("{path}: dwz alternate file {alt}: {msg}")]
    AltFile {
        /// The file whose `.gnu_debugaltlink` names the alternate file.
        path: PathBuf,
        /// The alternate file, as found (or as named, when not found).
        alt: PathBuf,
        /// What is wrong with it.
        msg: String,
    },
    /// The ELF file has no `.debug_info`, or an empty one: nothing to encode.
    #[error("{path}: has no DWARF (.debug_info is missing or empty): build with -g")]
    NoDwarf {
        /// The file.
        path: PathBuf,
    },
    /// A section whose bytes cannot be read (past the end of the file, a
    /// corrupt compression header).
    #[error("{path}: section {section}: {error}")]
    SectionData {
        /// The file.
        path: PathBuf,
        /// The section's name.
        section: &'static str,
        /// What is wrong with its bytes.
        error: fileio::elf_section::SectionError,
    },
    /// A section whose bytes can be read but say something impossible: a
    /// symbol table whose names lie past the end of the file, an empty
    /// `.debug_str` the DWARF refers to, a `.gnu_debugaltlink` that does
    /// not parse.
    #[error("{path}: section {section}: {msg}")]
    Section {
        /// The file.
        path: PathBuf,
        /// The section's name.
        section: &'static str,
        /// What is wrong with it, with file offsets where they help.
        msg: String,
    },
    /// DWARF that gimli does not read (a bad unit header, abbreviation,
    /// attribute form or expression).
    #[error("{path}: DWARF error at .debug_info offset {offset:#x}: {error}")]
    Dwarf {
        /// The file.
        path: PathBuf,
        /// Where in `.debug_info`, in bytes: the offset of the DIE when
        /// known, else of its compilation unit (0 when not even that is).
        offset: u64,
        /// What gimli said.
        error: gimli::Error,
    },
    /// The DWARF reads but cannot be encoded: a unit larger than 2 GiB, a
    /// DIE reference into no unit, BTF the kernel would refuse; or the
    /// encoder itself failed (its worker threads would not start).
    #[error("{path}: {msg}")]
    Encode {
        /// The file.
        path: PathBuf,
        /// What went wrong, with `.debug_info` offsets where there are some.
        msg: String,
    },
    /// The BTF made from the DWARF does not deduplicate.
    #[error("{path}: dedup: {error}")]
    Dedup {
        /// The file the BTF was encoded from.
        path: PathBuf,
        /// What the dedup said.
        error: btf::Error,
    },
    /// The ELF file cannot take the sections to embed: why.
    #[error("{reason}")]
    Embed {
        /// Why: the ELF is truncated, not 64-bit little-endian, or has no
        /// usable section header table. It names no file: the ELF is bytes.
        reason: String,
    },
    /// Writing the ELF file with the sections embedded failed.
    #[error("cannot write {path}: {error}")]
    Write {
        /// The file being written.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
}
