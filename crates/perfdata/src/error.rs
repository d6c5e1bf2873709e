//! Errors of the perf.data reader and of the live listener. Every error about
//! bytes names the offset (in the file, or in the stream for pipe data) where
//! the bad bytes are. A cause is part of the message, not also a chained
//! source, so that anyhow's `{:#}` says it once.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The path is for library users; the message is the I/O error's, as
    /// callers name the file they asked for.
    #[error("{error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("not a perf.data file: magic {found:#018x} at offset 0 (expected \"PERFILE2\")")]
    BadMagic { found: u64 },
    #[error("big-endian perf.data (byte-swapped magic at offset 0) is not supported")]
    BigEndian,
    #[error("truncated: {what} at offset {offset:#x} needs {need} bytes, {have} left")]
    Truncated {
        what: &'static str,
        offset: u64,
        need: u64,
        have: u64,
    },
    #[error("bad file header at offset {offset:#x}: {reason}")]
    BadHeader { offset: u64, reason: String },
    #[error("{what} section [{start:#x}, +{size:#x}) (described at offset {offset:#x}) lies outside the {len}-byte file")]
    SectionOutOfBounds {
        what: String,
        offset: u64,
        start: u64,
        size: u64,
        len: u64,
    },
    #[error("record at offset {offset:#x}: size {size} is smaller than its 8-byte header")]
    RecordTooSmall { offset: u64, size: u16 },
    #[error("record at offset {offset:#x}: size {size} runs past the end of the data ({left} bytes left)")]
    RecordPastEnd { offset: u64, size: u64, left: u64 },
    #[error("{kind} record at offset {offset:#x}: {reason}")]
    BadRecord {
        offset: u64,
        kind: &'static str,
        reason: String,
    },
    #[error("feature {feature} at offset {offset:#x}: {reason}")]
    BadFeature {
        offset: u64,
        feature: &'static str,
        reason: String,
    },
    #[error("perf_event_attr at offset {offset:#x}: {reason}")]
    BadAttr { offset: u64, reason: String },
    #[error("perf_event_open on CPU {cpu}: {error}{hint}")]
    PerfEventOpen {
        cpu: u32,
        error: std::io::Error,
        /// Why it was refused and what to do, when that is known.
        hint: String,
    },
    #[error("mmap of the ring buffer of CPU {cpu}: {error}")]
    Mmap { cpu: u32, error: std::io::Error },
    #[error("poll: {0}")]
    Poll(std::io::Error),
    #[error("cannot read the online CPUs from {path}: {reason}")]
    OnlineCpus { path: PathBuf, reason: String },
}

impl Error {
    pub(crate) fn truncated(what: &'static str, offset: u64, need: u64, have: u64) -> Error {
        Error::Truncated {
            what,
            offset,
            need,
            have,
        }
    }

    pub(crate) fn record(offset: u64, kind: &'static str, reason: impl Into<String>) -> Error {
        Error::BadRecord {
            offset,
            kind,
            reason: reason.into(),
        }
    }

    /// True for errors after which the records that follow cannot be found:
    /// the framing (a record's size) is wrong, not just one record's body.
    pub fn breaks_framing(&self) -> bool {
        matches!(
            self,
            Error::RecordTooSmall { .. } | Error::RecordPastEnd { .. } | Error::Truncated { .. }
        )
    }
}
