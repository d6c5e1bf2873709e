//! Errors of the perf.data reader and of the live listener. Every error about
//! bytes names the offset (in the file, or in the stream for pipe data) where
//! the bad bytes are. A cause is part of the message, not also a chained
//! source, so that anyhow's `{:#}` says it once.

use std::path::PathBuf;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a perf.data file, a perf pipe stream or a live perf event could not be
/// read. Offsets are in bytes from the start of the file (or of the stream).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened or read. The path is for library users;
    /// the message is the I/O error's, as callers name the file they asked
    /// for.
    #[error("{error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// The file is compressed whole and does not decompress, or
    /// decompresses to what is not perf.data.
    #[error("{error}")]
    Decompress {
        /// The file.
        path: PathBuf,
        /// Which codec failed and why.
        error: fileio::DecompressError,
    },
    /// The first 8 bytes are not `PERFILE2`: not a perf.data file.
    #[error("not a perf.data file: magic {found:#018x} at offset 0 (expected \"PERFILE2\")")]
    BadMagic {
        /// The first 8 bytes, as a little-endian number.
        found: u64,
    },
    /// The file was written on a big-endian machine; only little-endian
    /// files are read.
    #[error("big-endian perf.data (byte-swapped magic at offset 0) is not supported")]
    BigEndian,
    /// A structure runs past the end of the file or of its section.
    #[error("truncated: {what} at offset {offset:#x} needs {need} bytes, {have} left")]
    Truncated {
        /// The structure (`"file header"`, `"record header"`...).
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// Its length in bytes.
        need: u64,
        /// The bytes there are from `offset` on.
        have: u64,
    },
    /// The file header's sizes are impossible (a header size that is neither
    /// pipe nor file, an implausible `attr_size`).
    #[error("bad file header at offset {offset:#x}: {reason}")]
    BadHeader {
        /// The offset of the bad field.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A section (attrs, data, a feature) that the header describes does not
    /// lie inside the file.
    #[error("{what} section [{start:#x}, +{size:#x}) (described at offset {offset:#x}) lies outside the {len}-byte file")]
    SectionOutOfBounds {
        /// The section (`"data"`, `"feature BPF_BTF"`...).
        what: String,
        /// Where its `{offset, size}` descriptor is.
        offset: u64,
        /// The file offset it says the section starts at.
        start: u64,
        /// The size in bytes it gives the section.
        size: u64,
        /// The file's size in bytes.
        len: u64,
    },
    /// A record header's `size` is below 8, so the next record cannot be
    /// found.
    #[error("record at offset {offset:#x}: size {size} is smaller than its 8-byte header")]
    RecordTooSmall {
        /// Where the record starts.
        offset: u64,
        /// Its `header.size`.
        size: u16,
    },
    /// A record's `size` runs past the end of the data section.
    #[error("record at offset {offset:#x}: size {size} runs past the end of the data ({left} bytes left)")]
    RecordPastEnd {
        /// Where the record starts.
        offset: u64,
        /// Its `header.size` in bytes.
        size: u64,
        /// The bytes left in the data section from `offset` on.
        left: u64,
    },
    /// A record's body does not fit its type: a field past its size, a
    /// string without NUL. The records after it can still be read.
    #[error("{kind} record at offset {offset:#x}: {reason}")]
    BadRecord {
        /// Where the record starts.
        offset: u64,
        /// Its type (`"KSYMBOL"`, `"SAMPLE"`...).
        kind: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A feature section (after the data) does not decode.
    #[error("feature {feature} at offset {offset:#x}: {reason}")]
    BadFeature {
        /// Where the bad bytes are.
        offset: u64,
        /// The feature, without its `HEADER_` prefix (`"BPF_PROG_INFO"`...).
        feature: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A `perf_event_attr` is shorter than its first published layout.
    #[error("perf_event_attr at offset {offset:#x}: {reason}")]
    BadAttr {
        /// Where the attr starts.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The kernel refused to open a perf event on a CPU (permissions,
    /// `perf_event_paranoid`, an unsupported event type).
    #[error("perf_event_open on CPU {cpu}: {error}{hint}")]
    PerfEventOpen {
        /// The CPU.
        cpu: u32,
        /// The system call's error.
        error: std::io::Error,
        /// Why it was refused and what to do, when that is known.
        hint: String,
    },
    /// The perf ring buffer of a CPU could not be mapped (the
    /// `perf_event_mlock_kb` limit, memory).
    #[error("mmap of the ring buffer of CPU {cpu}: {error}")]
    Mmap {
        /// The CPU.
        cpu: u32,
        /// The system call's error.
        error: std::io::Error,
    },
    /// Waiting for events on the perf file descriptors failed.
    #[error("poll: {0}")]
    Poll(std::io::Error),
    /// The list of online CPUs (`/sys/devices/system/cpu/online`) could not
    /// be read or parsed.
    #[error("cannot read the online CPUs from {path}: {reason}")]
    OnlineCpus {
        /// The file.
        path: PathBuf,
        /// The I/O error, or the text that is not a CPU list.
        reason: String,
    },
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
