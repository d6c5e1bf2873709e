//! Errors of the encoder: each names the file and, where there is one, the
//! section or DIE offset that caused it. A cause is part of the message
//! and not also a chained source (fields are not named `source`), so that
//! anyhow's `{:#}` says it once (as `btf::Error`).

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A compressed file (`.ko.xz`...) that does not decompress.
    #[error("{path}: not a valid ELF file: {error}")]
    Decompress {
        path: PathBuf,
        error: fileio::DecompressError,
    },
    /// ELF headers that the object crate does not read.
    #[error("{path}: not a valid ELF file: {error}")]
    Object {
        path: PathBuf,
        error: object::read::Error,
    },
    #[error("{path}: unsupported: {what}")]
    Unsupported { path: PathBuf, what: String },
    /// dwz's alternate debug file: missing, another build-id, unreadable.
    #[error("{path}: dwz alternate file {alt}: {msg}")]
    AltFile {
        path: PathBuf,
        alt: PathBuf,
        msg: String,
    },
    #[error("{path}: has no DWARF (.debug_info is missing or empty): build with -g")]
    NoDwarf { path: PathBuf },
    /// A section whose bytes cannot be read (past the end of the file, a
    /// corrupt compression header).
    #[error("{path}: section {section}: {error}")]
    SectionData {
        path: PathBuf,
        section: &'static str,
        error: fileio::elf_section::SectionError,
    },
    #[error("{path}: section {section}: {msg}")]
    Section {
        path: PathBuf,
        section: &'static str,
        msg: String,
    },
    #[error("{path}: DWARF error at .debug_info offset {offset:#x}: {error}")]
    Dwarf {
        path: PathBuf,
        offset: u64,
        error: gimli::Error,
    },
    #[error("{path}: {msg}")]
    Encode { path: PathBuf, msg: String },
    /// The BTF made from the DWARF does not deduplicate.
    #[error("{path}: dedup: {error}")]
    Dedup { path: PathBuf, error: btf::Error },
    /// The ELF file cannot take the sections to embed: why.
    #[error("{reason}")]
    Embed { reason: String },
    /// Writing the ELF file with the sections embedded failed.
    #[error("cannot write {path}: {error}")]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}
