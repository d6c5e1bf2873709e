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
    #[error("page at physical address {paddr:#x} (file offset {offset:#x}): {reason}")]
    BadPage {
        paddr: u64,
        offset: u64,
        reason: String,
    },
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
