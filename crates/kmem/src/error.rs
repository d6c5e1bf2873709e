//! Errors of the kernel-memory readers: each names the file offset or the
//! address where the problem is.

use std::path::PathBuf;

/// Why kernel memory could not be read. File errors give the file offset,
/// memory errors the address; [`Error::InFile`] and [`Error::At`] add the
/// file and what was being read around an inner error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened or read.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// `error` happened in the dump file `path`.
    #[error("{path}: {error}")]
    InFile {
        /// The dump file.
        path: PathBuf,
        /// What went wrong in it.
        error: Box<Error>,
    },
    /// A structure of the file runs past its end.
    #[error("{what} at file offset {offset:#x}: truncated (need {need} bytes, {have} there)")]
    Truncated {
        /// The structure (`"ELF header"`, `"page descriptor"`...).
        what: &'static str,
        /// Where it starts, in bytes from the start of the file.
        offset: u64,
        /// Its length in bytes.
        need: u64,
        /// The bytes the file has from `offset` on.
        have: u64,
    },
    /// A structure of the file has a value no writer produces.
    #[error("{what} at file offset {offset:#x}: {reason}")]
    Corrupt {
        /// The structure.
        what: &'static str,
        /// The file offset of the bad field, in bytes.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A dump of an architecture btfkit has no description of (its ELF
    /// header's machine, class and byte order, or a kdump header's
    /// utsname).
    #[error("{0}")]
    Architecture(arch::Unsupported),
    /// The file is neither ELF, kdump-compressed nor flattened; the string
    /// says what its first bytes lack.
    #[error("not a kernel dump: {0}")]
    UnknownFormat(String),
    /// No segment or page of the dump holds this physical address.
    #[error("physical address {0:#x} is not in the dump")]
    PhysMissing(u64),
    /// The page exists on the machine but the dump left it out
    /// (makedumpfile's `-d` filtering of free, cache or user pages).
    #[error("physical address {0:#x} was left out of the dump (filtered page)")]
    PhysExcluded(u64),
    /// The page-table walk found no present entry for this virtual address,
    /// or could not read a page table.
    #[error("virtual address {addr:#x} is not mapped: {reason}")]
    Unmapped {
        /// The virtual address.
        addr: u64,
        /// The level that is not present, or why the table could not be read.
        reason: String,
    },
    /// A stored page that does not decompress (or, recompressing, compress).
    #[error("page at physical address {paddr:#x} (file offset {offset:#x}): {error}")]
    BadPage {
        /// The page's physical address.
        paddr: u64,
        /// Where its stored bytes are in the file.
        offset: u64,
        /// The codec's error.
        error: Box<Error>,
    },
    /// Compressing a page (to write a dump) failed.
    #[error("compressing: {error}")]
    Compressing {
        /// The codec's error.
        error: Box<Error>,
    },
    /// A zlib or zstd stream that does not read.
    #[error("{codec}: {error}")]
    Stream {
        /// "zlib" or "zstd".
        codec: &'static str,
        /// The stream reader's error.
        error: std::io::Error,
    },
    /// An LZO stream that kmem's decoder refuses: why.
    #[error("lzo: {0}")]
    Lzo(String),
    /// LZO compression failed.
    #[error("{0}")]
    LzoCompress(lzokay_native::Error),
    /// A snappy stream that does not decode.
    #[error("snappy: {0}")]
    Snappy(snap::Error),
    /// A snappy stream whose length is not a page's.
    #[error("snappy: page of {got} bytes, expected {expected}")]
    SnappyLength {
        /// The decoded length.
        got: usize,
        /// The page size.
        expected: usize,
    },
    /// A zstd frame whose header does not read.
    #[error("zstd: {0}")]
    Zstd(ruzstd::decoding::errors::FrameDecoderError),
    /// Page flags that name several codecs.
    #[error("page flags {0:#x} name more than one codec")]
    Codecs(u32),
    /// A page that decompresses to other than a page.
    #[error("page decompresses to {got} bytes, expected {expected}")]
    PageLength {
        /// The decompressed length.
        got: usize,
        /// The page size.
        expected: usize,
    },
    /// VMCOREINFO is missing, or lacks an entry that reading needs
    /// (`SYMBOL(init_top_pgt)`...).
    #[error("VMCOREINFO: {0}")]
    Vmcoreinfo(String),
    /// The kernel's kallsyms tables are not named in VMCOREINFO (before 6.0)
    /// or do not decode (a symbol count no kernel has, an empty name entry).
    #[error("kallsyms tables in memory: {0}")]
    Kallsyms(String),
    /// `__start_BTF` and `__stop_BTF` that bound no BTF section.
    #[error(
        "BTF in memory: __start_BTF {start:#x} and __stop_BTF {stop:#x} do not make a BTF section"
    )]
    BtfBounds {
        /// `__start_BTF`'s address.
        start: u64,
        /// `__stop_BTF`'s address.
        stop: u64,
    },
    /// The kernel's BTF, read from memory at `addr`, that does not parse.
    #[error("BTF in memory: at {addr:#x}: {error}")]
    Btf {
        /// Where the BTF starts (`__start_BTF`).
        addr: u64,
        /// Why it does not parse.
        error: btf::Error,
    },
    /// `error` happened while reading `what` at virtual address `addr`.
    #[error("{what} at {addr:#x}: {error}")]
    At {
        /// What was being read (`"kallsyms_names"`, `"BTF"`...).
        what: &'static str,
        /// Its kernel virtual address.
        addr: u64,
        /// Why the read failed.
        error: Box<Error>,
    },
}

impl Error {
    pub(crate) fn corrupt(what: &'static str, offset: u64, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            what,
            offset,
            reason: reason.into(),
        }
    }

    pub(crate) fn in_file(self, path: &std::path::Path) -> Error {
        Error::InFile {
            path: path.to_owned(),
            error: Box::new(self),
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
