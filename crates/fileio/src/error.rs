//! Errors of opening an input file.

use std::path::PathBuf;

use crate::bounded::StreamError;
use crate::compressed_file::Codec;

/// An input file that could not be had as bytes.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or read. What fileio refuses of a
    /// file read as a stream (a pipe or a device that holds what the
    /// reader does not take, or too much; a FIFO with no writer) is here
    /// too, as an [`std::io::Error`] of kind `InvalidData` or
    /// `UnexpectedEof` whose inner error is a [`StreamError`]
    /// ([`Error::stream_error`]).
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said, or what fileio refused.
        error: std::io::Error,
    },
    /// The file is compressed whole and does not decompress, or
    /// decompresses to what the reader does not take.
    #[error("{path}: {error}")]
    Decompress {
        /// The file.
        path: PathBuf,
        /// Which codec failed and why.
        error: DecompressError,
    },
}

impl Error {
    /// What fileio refused of the file's bytes, if that is the error.
    pub fn stream_error(&self) -> Option<&StreamError> {
        match self {
            Error::Io { error, .. } => error.get_ref()?.downcast_ref(),
            Error::Decompress {
                error: DecompressError::Content { error, .. },
                ..
            } => Some(error),
            Error::Decompress { .. } => None,
        }
    }
}

/// A compressed file (`.ko.xz`, `.ko.zst`, `.ko.gz`) that does not
/// decompress, or whose decompressed bytes are refused.
#[derive(Debug, thiserror::Error)]
pub enum DecompressError {
    /// The compressed bytes do not decode: corrupt, cut short, or needing
    /// more memory than allowed.
    #[error("{}-compressed file: {error} (at compressed offset {offset:#x})", .codec.name())]
    Corrupt {
        /// The codec.
        codec: Codec,
        /// Where in the compressed bytes the decoder stopped.
        offset: u64,
        /// The decoder's error.
        error: Box<dyn std::error::Error + Send + Sync>,
    },
    /// They decode to what the reader does not take, or to too much.
    #[error("{}-compressed file: {error}", .codec.name())]
    Content {
        /// The codec.
        codec: Codec,
        /// The rule the decompressed bytes break (boxed: errors that hold
        /// this one stay small).
        error: Box<StreamError>,
    },
}
