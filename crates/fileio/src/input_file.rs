//! A file given as input, as its bytes.
//!
//! - A regular file is mapped: a debug vmlinux is ~600 MB and a reader
//!   touches a few of its sections. One that cannot be mapped (a sysfs
//!   attribute) is read, up to [`MAX_SIZE`].
//! - Anything else (a pipe, a FIFO, a character or block device, a
//!   socket) is read as a stream ([`read_stream`]): up to [`MAX_SIZE`],
//!   and its first bytes must be the magic of a format the reader takes
//!   (or of a codec), so that /dev/zero or a pipe of garbage is refused at
//!   once, named for what it is ("a character device, not BTF"). Nothing
//!   at all (/dev/null) is left to the reader, which says what it lacks.
//! - A file is opened with O_NONBLOCK, so that a FIFO with no writer does
//!   not block open() forever; the flag is cleared before reading, so that
//!   a writer that has the FIFO open but writes slowly is waited for. A
//!   FIFO that no process has open for writing reads nothing and is
//!   refused as one "with no writer".
//! - A file compressed whole (`.ko.xz`, `.ko.zst`, `.ko.gz`: see
//!   [`compressed_file`](crate::compressed_file)) is decompressed, its
//!   output under the same rules as a stream's.
//!
//! A mapped file that another process truncates while it is read would
//! kill the process with SIGBUS when a page past the new end is touched.
//! Reading every input into memory instead would cost a vmlinux's 600 MB
//! of resident memory for the few sections a reader touches, and the
//! encoder's release of pages it is done with (`MADV_DONTNEED`); so inputs
//! stay mapped, and a SIGBUS in a mapping of one of them becomes an error
//! naming it, "changed while it was read", exit 1, with the temporary
//! files of outputs being written removed (fileio's sigbus module): no
//! output is written.

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::bounded::{Sink, Source, StreamError, MAX_SIZE};
use crate::compressed_file::{decode, Codec, Fail};
use crate::format::{Format, ELF_OR_BTF};
use crate::Error;

/// The bytes of an input file.
pub enum InputFile {
    /// Mapped read-only, with the file (to map parts of it again).
    Mapped(memmap2::Mmap, std::fs::File),
    /// Read (or decompressed) into memory.
    Read(Vec<u8>),
}

impl InputFile {
    /// [`InputFile::open_as`] for a reader of ELF files or raw BTF.
    pub fn open(path: &Path) -> Result<InputFile, Error> {
        InputFile::open_as(path, ELF_OR_BTF)
    }

    /// Opens `path`, whose bytes (when they are read as a stream or
    /// decompressed) must be one of `accept` (anything, if empty):
    /// [`Error::Io`] when it cannot be opened or read, or its bytes are
    /// refused; [`Error::Decompress`] when it is compressed and does not
    /// decompress, or decompresses to bytes that are refused.
    pub fn open_as(path: &Path, accept: &[Format]) -> Result<InputFile, Error> {
        InputFile::open_capped(path, accept, MAX_SIZE)
    }

    /// [`InputFile::open_as`] with at most `cap` bytes read from what
    /// cannot be mapped (a pipe, a device, sysfs): for a reader whose
    /// format has no magic to refuse a stream by (text listings such as
    /// kallsyms) and whose inputs are far smaller than [`MAX_SIZE`].
    pub fn open_capped(path: &Path, accept: &[Format], cap: u64) -> Result<InputFile, Error> {
        let io = |error| Error::Io {
            path: path.to_owned(),
            error,
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(io)?;
        blocking(&file).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let kind = meta.file_type();
        let data = if kind.is_file() {
            // SAFETY: a read-only private mapping. Another process that
            // truncates the file makes a read past the new end fault:
            // crate::sigbus turns that into an error naming the file.
            match unsafe { memmap2::Mmap::map(&file) } {
                Ok(map) => {
                    crate::sigbus::watch(path, &meta);
                    InputFile::Mapped(map, file)
                }
                // sysfs attributes, and file systems that cannot map.
                Err(_) => InputFile::Read(read_capped(path, "a file", file, &[], cap)?),
            }
        } else if kind.is_dir() {
            return Err(io(std::io::Error::from_raw_os_error(libc::EISDIR)));
        } else {
            let what = stream_kind(&file, &meta);
            let data = read_stream(path, what, file, accept, cap)?;
            if data.is_empty() && what == "a FIFO" {
                return Err(stream_error(path, StreamError::NoWriter));
            }
            return Ok(InputFile::Read(data));
        };
        match crate::compressed_file::decompress(&data, accept) {
            None => Ok(data),
            Some(Ok(bytes)) => Ok(InputFile::Read(bytes)),
            Some(Err(error)) => Err(Error::Decompress {
                path: path.to_owned(),
                error,
            }),
        }
    }
}

impl std::ops::Deref for InputFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            InputFile::Mapped(m, _) => m,
            InputFile::Read(v) => v,
        }
    }
}

/// The first `n` bytes of `path` (fewer if it is shorter), to tell
/// formats apart before opening it for good: read from a regular file
/// without blocking; nothing at all from anything else, whose bytes a
/// peek would consume (a pipe) or wait for (a FIFO with no writer), so
/// that the reader the caller then picks names the file.
pub fn peek(path: &Path, n: usize) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Ok(Vec::new());
    }
    let mut buf = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match file.read_at(buf.get_mut(got..).unwrap_or_default(), got as u64) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// Clears the O_NONBLOCK that `file` was opened with: reads wait for data.
fn blocking(file: &File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on an open descriptor, with integer arguments.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// What a file that is neither regular nor a directory is, in messages.
fn stream_kind(file: &File, meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_fifo() {
        if is_anonymous_pipe(file) {
            "a pipe"
        } else {
            "a FIFO"
        }
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// Whether `file` is an anonymous pipe (a shell's `<(...)` or `|`, reached
/// as /dev/fd/N or /dev/stdin), not a FIFO with a name: it is on pipefs.
fn is_anonymous_pipe(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // include/uapi/linux/magic.h
    const PIPEFS_MAGIC: i64 = 0x5049_5045;
    // SAFETY: fstatfs fills the struct it is given, for an open descriptor.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let ok = unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs) } == 0;
    #[allow(clippy::unnecessary_cast)]
    let f_type = fs.f_type as i64;
    ok && f_type == PIPEFS_MAGIC
}

/// The error of `path` whose bytes break a rule.
fn stream_error(path: &Path, error: StreamError) -> Error {
    let kind = match error {
        StreamError::NoWriter => std::io::ErrorKind::UnexpectedEof,
        _ => std::io::ErrorKind::InvalidData,
    };
    Error::Io {
        path: path.to_owned(),
        error: std::io::Error::new(kind, error),
    }
}

/// Reads `reader`, the bytes of `path` (`what` it is: "a pipe", "standard
/// input"), to its end as a stream: at most `cap` bytes, which must start
/// with the magic of one of `accept` (anything, if empty), or of a codec,
/// in which case they are decompressed as they are read, under the same
/// rules. A reader that gives nothing gives an empty vector.
pub fn read_stream(
    path: &Path,
    what: &'static str,
    mut reader: impl Read,
    accept: &[Format],
    cap: u64,
) -> Result<Vec<u8>, Error> {
    let io = |error| Error::Io {
        path: path.to_owned(),
        error,
    };
    // The longest codec magic (xz's).
    let mut head = [0u8; 6];
    let mut n = 0;
    while n < head.len() {
        match reader.read(head.get_mut(n..).unwrap_or_default()) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
    let head = head.get(..n).unwrap_or_default();
    let Some(codec) = Codec::of(head) else {
        return read_capped(path, what, head.chain(reader), accept, cap);
    };
    let mut sink = Sink::new(Source::Decompressed(codec.name()), accept, cap);
    let mut input = BufReader::with_capacity(256 << 10, head.chain(reader));
    let result =
        decode(codec, &mut input, &mut sink).and_then(|()| sink.finish().map_err(Fail::Content));
    result.map_err(|fail| match fail {
        Fail::Read(error) => io(error),
        fail => Error::Decompress {
            path: path.to_owned(),
            error: fail.into_error(codec),
        },
    })
}

/// Reads `reader` (not compressed) to its end, under `cap` and `accept`.
fn read_capped(
    path: &Path,
    what: &'static str,
    mut reader: impl Read,
    accept: &[Format],
    cap: u64,
) -> Result<Vec<u8>, Error> {
    let mut sink = Sink::new(Source::Stream(what), accept, cap);
    let mut buf = vec![0u8; 256 << 10];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => sink
                .push(buf.get(..n).unwrap_or_default())
                .map_err(|e| stream_error(path, e))?,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => {
                return Err(Error::Io {
                    path: path.to_owned(),
                    error,
                })
            }
        }
    }
    sink.finish().map_err(|e| stream_error(path, e))
}
