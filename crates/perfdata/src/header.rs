//! The file header (`struct perf_file_header`, tools/perf/util/header.h) and
//! the attrs section it points to; and the 16-byte header of the pipe format.
//! See tools/perf/Documentation/perf.data-file-format.txt.

use crate::attr::{Attrs, EventAttr, ATTR_SIZE_VER0};
use crate::bytes::{pos, slice, u64_at};
use crate::error::{Error, Result};

/// "PERFILE2" read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"PERFILE2");
/// The file header's size: magic, size, attr_size, three sections, and the
/// 256-bit feature bitmap.
pub const FILE_HEADER_SIZE: usize = 104;
/// The pipe header: magic and size only.
pub const PIPE_HEADER_SIZE: usize = 16;

/// Where a part of the file is: `struct perf_file_section`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Section {
    /// Where it starts, in bytes from the start of the file.
    pub offset: u64,
    /// Its length in bytes.
    pub size: u64,
}

impl Section {
    /// Reads a section descriptor at `at` and checks it lies inside `file`.
    pub(crate) fn read(file: &[u8], at: usize, what: impl Into<String>) -> Result<Section> {
        let offset = u64_at(file, at).ok_or_else(|| {
            Error::truncated("section descriptor", pos(at), 16, remaining(file, at))
        })?;
        let size = u64_at(file, at + 8).ok_or_else(|| {
            Error::truncated("section descriptor", pos(at), 16, remaining(file, at))
        })?;
        let s = Section { offset, size };
        s.check(file, at, what)?;
        Ok(s)
    }

    pub(crate) fn check(
        &self,
        file: &[u8],
        described_at: usize,
        what: impl Into<String>,
    ) -> Result<()> {
        let len = pos(file.len());
        if self
            .offset
            .checked_add(self.size)
            .is_none_or(|end| end > len)
        {
            return Err(Error::SectionOutOfBounds {
                what: what.into(),
                offset: pos(described_at),
                start: self.offset,
                size: self.size,
                len,
            });
        }
        Ok(())
    }

    /// The bytes of a checked section.
    pub(crate) fn bytes<'a>(&self, file: &'a [u8]) -> &'a [u8] {
        let start = usize::try_from(self.offset).unwrap_or(usize::MAX);
        let len = usize::try_from(self.size).unwrap_or(usize::MAX);
        slice(file, start, len).unwrap_or_default()
    }
}

fn remaining(b: &[u8], at: usize) -> u64 {
    pos(b.len().saturating_sub(at))
}

/// The two layouts perf writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A seekable file: header, attrs, data, then feature sections.
    File,
    /// A stream (`perf record -o -`): a 16-byte header, then records only;
    /// attrs and features come as records.
    Pipe,
}

/// The header of a perf.data file or stream. A pipe header has only magic
/// and size: its other fields are zero, and `data` is the rest of the stream.
#[derive(Clone, Debug)]
pub struct FileHeader {
    /// File or pipe, told apart by `size`.
    pub format: Format,
    /// The header's own size as written.
    pub size: u64,
    /// The size of one entry of the attrs section: a `perf_event_attr` and
    /// the section descriptor of its ids.
    pub attr_size: u64,
    /// The attrs section.
    pub attrs: Section,
    /// The data section: the records.
    pub data: Section,
    /// The 256-bit HEADER_* feature bitmap: which feature sections follow
    /// the data.
    pub features: [u64; 4],
}

impl FileHeader {
    /// Reads either header, telling the formats apart by the size field.
    pub fn parse(file: &[u8]) -> Result<FileHeader> {
        let magic = u64_at(file, 0)
            .ok_or_else(|| Error::truncated("file header", 0, 16, pos(file.len())))?;
        if magic == MAGIC.swap_bytes() {
            return Err(Error::BigEndian);
        }
        if magic != MAGIC {
            return Err(Error::BadMagic { found: magic });
        }
        let size = u64_at(file, 8)
            .ok_or_else(|| Error::truncated("file header", 0, 16, pos(file.len())))?;
        if size == PIPE_HEADER_SIZE as u64 {
            return Ok(FileHeader {
                format: Format::Pipe,
                size,
                attr_size: 0,
                attrs: Section::default(),
                data: Section {
                    offset: PIPE_HEADER_SIZE as u64,
                    size: pos(file.len().saturating_sub(PIPE_HEADER_SIZE)),
                },
                features: [0; 4],
            });
        }
        if size < FILE_HEADER_SIZE as u64 {
            return Err(Error::BadHeader {
                offset: 8,
                reason: format!(
                    "header size {size} is neither 16 (pipe) nor at least {FILE_HEADER_SIZE}"
                ),
            });
        }
        if file.len() < FILE_HEADER_SIZE {
            return Err(Error::truncated(
                "file header",
                0,
                FILE_HEADER_SIZE as u64,
                pos(file.len()),
            ));
        }
        let attr_size = u64_at(file, 16).unwrap_or(0);
        let attrs = Section::read(file, 24, "attrs")?;
        // Checked by the caller, which can still read a file cut short.
        let data = Section {
            offset: u64_at(file, 40).unwrap_or(0),
            size: u64_at(file, 48).unwrap_or(0),
        };
        if data.offset > pos(file.len()) {
            data.check(file, 40, "data")?;
        }
        let mut features = [0u64; 4];
        for (i, word) in features.iter_mut().enumerate() {
            *word = u64_at(file, 72 + 8 * i).unwrap_or(0);
        }
        Ok(FileHeader {
            format: Format::File,
            size,
            attr_size,
            attrs,
            data,
            features,
        })
    }

    /// Whether the feature bitmap has `bit` ([`feature`](crate::features::feature) values).
    pub fn has_feature(&self, bit: u32) -> bool {
        let word = (bit / 64) as usize;
        self.features
            .get(word)
            .is_some_and(|w| w & (1 << (bit % 64)) != 0)
    }

    /// The attrs section: `attr_size`-byte entries, each an attr followed by
    /// the section of its ids.
    pub fn read_attrs(&self, file: &[u8]) -> Result<Attrs> {
        let mut attrs = Attrs::new();
        if self.format == Format::Pipe || self.attrs.size == 0 {
            return Ok(attrs);
        }
        let entry = self.attr_size;
        if entry < (ATTR_SIZE_VER0 + 16) as u64 || entry > 4096 {
            return Err(Error::BadHeader {
                offset: 16,
                reason: format!("attr_size {entry} is not a plausible attr plus ids section"),
            });
        }
        let bytes = self.attrs.bytes(file);
        let entry = entry as usize;
        for (i, chunk) in bytes.chunks(entry).enumerate() {
            let at = self.attrs.offset + pos(i * entry);
            if chunk.len() < entry {
                return Err(Error::truncated(
                    "attr entry",
                    at,
                    pos(entry),
                    pos(chunk.len()),
                ));
            }
            let attr_len = entry - 16;
            let attr = EventAttr::parse(chunk.get(..attr_len).unwrap_or_default(), at)?;
            let ids_at = usize::try_from(at)
                .unwrap_or(usize::MAX)
                .saturating_add(attr_len);
            let ids_section = Section::read(file, ids_at, format!("ids of attr {i}"))?;
            let ids = ids_section
                .bytes(file)
                .chunks_exact(8)
                .filter_map(|c| u64_at(c, 0))
                .collect();
            attrs.push(attr, ids);
        }
        Ok(attrs)
    }
}
