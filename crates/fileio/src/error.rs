//! Errors of opening an input file.

use std::path::PathBuf;

/// An input file that could not be had as bytes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or read.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// The file is compressed whole and does not decompress.
    #[error("{path}: {error}")]
    Decompress {
        /// The file.
        path: PathBuf,
        /// Which codec failed and why.
        error: DecompressError,
    },
}

/// A compressed file (`.ko.xz`, `.ko.zst`, `.ko.gz`) that does not
/// decompress.
#[derive(Debug, thiserror::Error)]
#[error("{codec}-compressed file: {error}")]
pub struct DecompressError {
    /// "xz", "zstd" or "gzip".
    pub codec: &'static str,
    /// The decoder's error.
    pub error: Box<dyn std::error::Error + Send + Sync>,
}
