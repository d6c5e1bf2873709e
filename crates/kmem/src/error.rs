//! Errors of the kernel-memory readers: each names the file offset or the
//! address where the problem is.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{path}: {error}")]
    InFile { path: PathBuf, error: Box<Error> },
    #[error("{what} at file offset {offset:#x}: truncated (need {need} bytes, {have} there)")]
    Truncated {
        what: &'static str,
        offset: u64,
        need: u64,
        have: u64,
    },
    #[error("{what} at file offset {offset:#x}: {reason}")]
    Corrupt {
        what: &'static str,
        offset: u64,
        reason: String,
    },
    #[error("not a kernel dump: {0}")]
    UnknownFormat(String),
    #[error("physical address {0:#x} is not in the dump")]
    PhysMissing(u64),
    #[error("physical address {0:#x} was left out of the dump (filtered page)")]
    PhysExcluded(u64),
    #[error("virtual address {addr:#x} is not mapped: {reason}")]
    Unmapped { addr: u64, reason: String },
    /// A stored page that does not decompress (or, recompressing, compress).
    #[error("page at physical address {paddr:#x} (file offset {offset:#x}): {error}")]
    BadPage {
        paddr: u64,
        offset: u64,
        error: Box<Error>,
    },
    /// Compressing a page (to write a dump) failed.
    #[error("compressing: {error}")]
    Compressing { error: Box<Error> },
    /// A zlib or zstd stream that does not read.
    #[error("{codec}: {error}")]
    Stream {
        codec: &'static str,
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
    SnappyLength { got: usize, expected: usize },
    /// A zstd frame whose header does not read.
    #[error("zstd: {0}")]
    Zstd(ruzstd::decoding::errors::FrameDecoderError),
    /// Page flags that name several codecs.
    #[error("page flags {0:#x} name more than one codec")]
    Codecs(u32),
    /// A page that decompresses to other than a page.
    #[error("page decompresses to {got} bytes, expected {expected}")]
    PageLength { got: usize, expected: usize },
    #[error("VMCOREINFO: {0}")]
    Vmcoreinfo(String),
    #[error("kallsyms tables in memory: {0}")]
    Kallsyms(String),
    /// `__start_BTF` and `__stop_BTF` that bound no BTF section.
    #[error(
        "BTF in memory: __start_BTF {start:#x} and __stop_BTF {stop:#x} do not make a BTF section"
    )]
    BtfBounds { start: u64, stop: u64 },
    /// The kernel's BTF, read from memory at `addr`, that does not parse.
    #[error("BTF in memory: at {addr:#x}: {error}")]
    Btf { addr: u64, error: btf::Error },
    #[error("{what} at {addr:#x}: {error}")]
    At {
        what: &'static str,
        addr: u64,
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

pub type Result<T, E = Error> = std::result::Result<T, E>;
