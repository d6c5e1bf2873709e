//! Bytes that arrive as a stream, a decoder's output or what a pipe or a
//! device gives, collected under three rules checked as they arrive:
//!
//! - the first bytes are the magic of a format the reader takes (else
//!   refused at once: a bomb of zeros, /dev/zero);
//! - no more than [`MAX_SIZE`] bytes in all;
//! - no more than [`MAX_TRAILER`] bytes past the end that the format's
//!   headers give, once they have arrived (a bomb behind a valid ELF
//!   header).

use std::fmt;

use crate::format::{names, End, Format, MAX_TRAILER};

/// The most bytes an input read as a stream (decompressed, or from a pipe
/// or a device) may hold: more than any vmlinux with DWARF (~600 MB), less
/// than a corrupt or hostile stream could claim. Mapped files are not
/// held in memory and have no cap.
pub const MAX_SIZE: u64 = 4 << 30;

/// What a stream's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A decoder's output: "xz", "zstd" or "gzip".
    Decompressed(&'static str),
    /// A file that is not a regular one, read to its end: "a pipe", "a
    /// character device", "a socket", "a block device", "standard input"...
    Stream(&'static str),
}

/// Why a stream's bytes are refused. Offsets are in the stream (the
/// decompressed bytes, or the bytes read).
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// More than the cap ([`MAX_SIZE`]).
    #[error("{} more than {cap} bytes (refused at offset {cap:#x}), the most an input may hold", lead(.what))]
    TooLarge {
        /// What the bytes are.
        what: Source,
        /// The cap.
        cap: u64,
    },
    /// A size the compressed file states (an xz index, zstd frame headers)
    /// is more than the cap: refused before decoding a byte.
    #[error("{} {claimed} bytes as its {by} says, more than {cap}, the most an input may hold", lead(.what))]
    ClaimsTooMuch {
        /// What the bytes are.
        what: Source,
        /// The size stated.
        claimed: u64,
        /// Where it is stated: "index", "frame headers".
        by: &'static str,
        /// The cap.
        cap: u64,
    },
    /// The first bytes are the magic of none of the formats the reader
    /// takes.
    #[error("{} (it starts with {}, at offset 0x0)", not_format(.what, expected), Hex(found))]
    NotFormat {
        /// What the bytes are.
        what: Source,
        /// The formats taken: "ELF or BTF".
        expected: String,
        /// The first bytes (up to 8).
        found: Vec<u8>,
    },
    /// More than [`MAX_TRAILER`] bytes follow the end that the format's
    /// headers give.
    #[error("{} more than {MAX_TRAILER} bytes past the end of the {} it holds (its headers end it at offset {end:#x}; refused at offset {offset:#x})", lead(.what), .format.name())]
    PastEnd {
        /// What the bytes are.
        what: Source,
        /// The format its magic says.
        format: Format,
        /// Where its headers end it.
        end: u64,
        /// Where the bytes were refused.
        offset: u64,
    },
    /// A FIFO that no process had open for writing: nothing to read.
    #[error("a FIFO with no writer (nothing to read)")]
    NoWriter,
}

fn lead(source: &Source) -> String {
    match source {
        Source::Decompressed(_) => "decompresses to".to_owned(),
        Source::Stream(what) => format!("{what} that holds"),
    }
}

fn not_format(source: &Source, expected: &str) -> String {
    match source {
        Source::Decompressed(_) => format!("decompresses to data that is not {expected}"),
        Source::Stream(what) => format!("{what}, not {expected}"),
    }
}

/// Bytes as space-separated hex.
struct Hex<'a>(&'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// A stream's bytes, collected under the module's rules.
pub(crate) struct Sink<'a> {
    data: Vec<u8>,
    source: Source,
    accept: &'a [Format],
    cap: u64,
    /// The bytes the source says it holds (reserved once the magic is
    /// right).
    hint: Option<u64>,
    /// The magic has been checked.
    checked: bool,
    /// The format whose magic the bytes start with.
    format: Option<Format>,
    /// Bytes to have before asking the format where it ends again.
    need: u64,
    /// Where the format's headers end it.
    end: Option<u64>,
}

impl<'a> Sink<'a> {
    /// An empty sink for `source`'s bytes, which must be one of `accept`
    /// (anything, if empty) and at most `cap` bytes.
    pub(crate) fn new(source: Source, accept: &'a [Format], cap: u64) -> Sink<'a> {
        Sink {
            data: Vec::new(),
            source,
            accept,
            cap,
            hint: None,
            checked: accept.is_empty(),
            format: None,
            need: 0,
            end: None,
        }
    }

    /// The bytes collected so far.
    pub(crate) fn len(&self) -> u64 {
        self.data.len() as u64
    }

    /// Says how many bytes the source states it holds: refused now if
    /// that is over the cap, reserved once the magic is right.
    pub(crate) fn expect(&mut self, size: u64, by: &'static str) -> Result<(), StreamError> {
        if size > self.cap {
            return Err(StreamError::ClaimsTooMuch {
                what: self.source,
                claimed: size,
                by,
                cap: self.cap,
            });
        }
        self.hint = Some(size);
        Ok(())
    }

    /// Appends `bytes`, or says which rule they break.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Result<(), StreamError> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.len().saturating_add(bytes.len() as u64) > self.cap {
            return Err(StreamError::TooLarge {
                what: self.source,
                cap: self.cap,
            });
        }
        self.data.extend_from_slice(bytes);
        if !self.checked {
            self.check_magic(false)?;
        }
        self.check_end()
    }

    /// The bytes, once the stream has ended.
    pub(crate) fn finish(mut self) -> Result<Vec<u8>, StreamError> {
        if !self.checked {
            self.check_magic(true)?;
        }
        Ok(self.data)
    }

    /// Decides whether the first bytes are an accepted magic; with fewer
    /// bytes than a magic that they begin, waits unless `last`.
    fn check_magic(&mut self, last: bool) -> Result<(), StreamError> {
        let mut undecided = false;
        for &format in self.accept {
            for magic in format.magics() {
                if self.data.starts_with(magic) {
                    self.checked = true;
                    self.format = Some(format);
                    if let Some(hint) = self.hint {
                        // Best effort: the bytes are still collected
                        // without it.
                        let more = usize::try_from(hint.saturating_sub(self.len())).unwrap_or(0);
                        let _ = self.data.try_reserve_exact(more);
                    }
                    return Ok(());
                }
                undecided |= magic.starts_with(&self.data);
            }
        }
        if undecided && !last {
            return Ok(());
        }
        self.checked = true;
        // Nothing, or a cut magic: the reader says what it lacks ("BTF is
        // empty", "truncated"), as of a regular file.
        if self.data.is_empty() || undecided {
            return Ok(());
        }
        Err(StreamError::NotFormat {
            what: self.source,
            expected: names(self.accept),
            found: self.data.iter().take(8).copied().collect(),
        })
    }

    /// Refuses bytes past the end the format's headers give.
    fn check_end(&mut self) -> Result<(), StreamError> {
        let Some(format) = self.format else {
            return Ok(());
        };
        if self.end.is_none() && self.len() >= self.need {
            match format.end(&self.data) {
                End::Unknown => self.need = u64::MAX,
                End::Need(n) => self.need = n.max(self.len() + 1),
                End::At(end) => self.end = Some(end),
            }
        }
        match self.end {
            Some(end) if self.len() > end.saturating_add(MAX_TRAILER) => {
                Err(StreamError::PastEnd {
                    what: self.source,
                    format,
                    end,
                    offset: end.saturating_add(MAX_TRAILER),
                })
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ELF_OR_BTF;

    #[test]
    fn zeros_are_refused_at_their_first_bytes() {
        let mut sink = Sink::new(Source::Stream("a pipe"), ELF_OR_BTF, MAX_SIZE);
        let err = sink.push(&[0; 4096]).unwrap_err().to_string();
        assert_eq!(
            err,
            "a pipe, not ELF or BTF (it starts with 00 00 00 00 00 00 00 00, at offset 0x0)"
        );
    }

    #[test]
    fn a_magic_cut_short_or_nothing_is_left_to_the_reader() {
        for bytes in [&b""[..], b"\x7fEL", b"\x9f"] {
            let mut sink = Sink::new(Source::Decompressed("xz"), ELF_OR_BTF, MAX_SIZE);
            sink.push(bytes).unwrap();
            assert_eq!(sink.finish().unwrap(), bytes);
        }
    }

    #[test]
    fn a_magic_that_arrives_byte_by_byte_is_taken() {
        let mut sink = Sink::new(Source::Stream("a pipe"), ELF_OR_BTF, MAX_SIZE);
        for b in b"\x7fELF" {
            sink.push(&[*b]).unwrap();
        }
        assert_eq!(sink.format, Some(Format::Elf));
    }

    #[test]
    fn more_than_the_cap_is_refused() {
        let mut sink = Sink::new(Source::Stream("a pipe"), &[], 10);
        sink.push(&[1; 10]).unwrap();
        let err = sink.push(&[1]).unwrap_err().to_string();
        assert!(
            err.starts_with("a pipe that holds more than 10 bytes"),
            "{err}"
        );
    }
}
