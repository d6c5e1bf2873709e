//! A dump file's bytes: mapped when the file can be mapped (regular files),
//! read with `pread` otherwise (`/proc/kcore` cannot be mapped).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The bytes of a dump file. Offsets everywhere are file offsets in bytes.
pub enum Bytes {
    /// A regular file, memory-mapped read-only.
    Mapped(memmap2::Mmap),
    /// Bytes already in memory (tests, fuzzing, a file read whole).
    Owned(Vec<u8>),
    /// A file that cannot be mapped, read with `pread`.
    File {
        /// The open file.
        file: File,
        /// Its size in bytes; `u64::MAX` when it states none (`/proc/kcore`).
        len: u64,
        /// Its path, for errors.
        path: PathBuf,
    },
}

impl Bytes {
    /// Opens `path`: mapped when it can be, else read on demand. Fails with
    /// [`Error::Io`] when the file cannot be opened.
    pub fn open(path: &Path) -> Result<Bytes> {
        let io = |error| Error::Io {
            path: path.to_owned(),
            error,
        };
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        if len > 0 {
            // SAFETY: a read-only private mapping of a dump nobody writes
            // while we read it; a concurrent truncation could fault us, the
            // accepted contract of mapped inputs.
            if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
                return Ok(Bytes::Mapped(map));
            }
        }
        // /proc/kcore says its size is the whole address space; pread works.
        Ok(Bytes::File {
            file,
            len: if len == 0 { u64::MAX } else { len },
            path: path.to_owned(),
        })
    }

    /// The whole file, when it is in memory.
    pub fn as_slice(&self) -> Option<&[u8]> {
        match self {
            Bytes::Mapped(m) => Some(m),
            Bytes::Owned(v) => Some(v),
            Bytes::File { .. } => None,
        }
    }

    /// True for a zero-length file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The size in bytes (`u64::MAX` for a file that states none).
    pub fn len(&self) -> u64 {
        match self {
            Bytes::Mapped(m) => m.len() as u64,
            Bytes::Owned(v) => v.len() as u64,
            Bytes::File { len, .. } => *len,
        }
    }

    /// Fills `buf` from `offset`; a short file is [`Error::Truncated`].
    pub fn read_at(&self, what: &'static str, offset: u64, buf: &mut [u8]) -> Result<()> {
        let need = buf.len() as u64;
        let truncated = |have: u64| Error::Truncated {
            what,
            offset,
            need,
            have,
        };
        match self.as_slice() {
            Some(data) => {
                let start = usize::try_from(offset).map_err(|_| truncated(0))?;
                let src = start
                    .checked_add(buf.len())
                    .and_then(|end| data.get(start..end))
                    .ok_or_else(|| truncated(data.len().saturating_sub(start) as u64))?;
                buf.copy_from_slice(src);
                Ok(())
            }
            None => {
                let Bytes::File { file, path, .. } = self else {
                    return Err(truncated(0));
                };
                let mut done = 0;
                while done < buf.len() {
                    match file.read_at(&mut buf[done..], offset + done as u64) {
                        Ok(0) => return Err(truncated(done as u64)),
                        Ok(n) => done += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(error) => {
                            return Err(Error::Io {
                                path: path.clone(),
                                error,
                            })
                        }
                    }
                }
                Ok(())
            }
        }
    }

    /// `len` bytes at `offset`, borrowed when mapped.
    pub fn slice(
        &self,
        what: &'static str,
        offset: u64,
        len: u64,
    ) -> Result<std::borrow::Cow<'_, [u8]>> {
        if let Some(data) = self.as_slice() {
            let end = offset.checked_add(len);
            return match end.and_then(|e| data.get(offset as usize..e as usize)) {
                Some(s) => Ok(std::borrow::Cow::Borrowed(s)),
                None => Err(Error::Truncated {
                    what,
                    offset,
                    need: len,
                    have: (data.len() as u64).saturating_sub(offset),
                }),
            };
        }
        let n =
            usize::try_from(len).map_err(|_| Error::corrupt(what, offset, "length too large"))?;
        let mut v = vec![0; n];
        self.read_at(what, offset, &mut v)?;
        Ok(std::borrow::Cow::Owned(v))
    }
}

pub(crate) fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off + 2)?.try_into().ok()?))
}
pub(crate) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}
pub(crate) fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}
