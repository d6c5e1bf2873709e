//! A file given as input, as its bytes. A debug vmlinux is ~600 MB and a
//! reader touches a few of its sections, so the file is mapped. What cannot
//! be mapped (sysfs attributes, pipes, devices, directories) is read, so
//! that the error is the read's ("Is a directory") or about the content.
//! A file compressed whole (`.ko.xz`, `.ko.zst`, `.ko.gz`: see
//! [`compressed_file`](crate::compressed_file)) is decompressed.

use std::path::Path;

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

    /// Opens `path`, whose bytes, when decompressed, must be one of
    /// `accept` (anything, if empty): [`Error::Io`] when it cannot be
    /// opened or read, [`Error::Decompress`] when it is compressed and does
    /// not decompress, or decompresses to bytes that are refused.
    pub fn open_as(path: &Path, accept: &[Format]) -> Result<InputFile, Error> {
        use std::io::Read;
        let io = |error| Error::Io {
            path: path.to_owned(),
            error,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: a read-only private mapping; a concurrent writer truncating
        // the file could fault us, the accepted contract of mapped inputs.
        let data = match unsafe { memmap2::Mmap::map(&file) } {
            Ok(map) => InputFile::Mapped(map, file),
            Err(_) => {
                let mut data = Vec::new();
                file.read_to_end(&mut data).map_err(io)?;
                InputFile::Read(data)
            }
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
