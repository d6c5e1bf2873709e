//! A whole perf.data, file or pipe format, held in memory (mapped for
//! files), and the iteration over its records.

use std::path::{Path, PathBuf};

use crate::attr::Attrs;
use crate::bytes::{pos, u16_at, u32_at};
use crate::compressed::Unpack;
use crate::error::{Error, Result};
use crate::features::Features;
use crate::header::{FileHeader, Format};
use crate::records::{self, kind, Event, Record};

enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// A perf.data file or stream, read whole (mapped when it is a regular
/// file): its header, attrs and features decoded, its records decoded on
/// demand by [`PerfData::records`].
pub struct PerfData {
    bytes: Bytes,
    path: PathBuf,
    /// The file header.
    pub header: FileHeader,
    /// The attrs of the events, from the attrs section or the stream's
    /// HEADER_ATTR records.
    pub attrs: Attrs,
    /// The feature sections, or the stream's HEADER_FEATURE records.
    pub features: Features,
    /// Problems that did not stop the reading (a data section cut short).
    pub warnings: Vec<Error>,
}

impl PerfData {
    /// Opens a perf.data file; `-` reads a pipe-format stream from stdin.
    /// A regular file is mapped (a SIGBUS when another process truncates
    /// it becomes an error naming it); a pipe, FIFO or device is read up
    /// to fileio's cap and must start with `PERFILE2`; a FIFO with no
    /// writer is refused rather than waited for (fileio's InputFile).
    pub fn open(path: &Path) -> Result<PerfData> {
        let accept = &[fileio::Format::PerfData];
        let bytes = if path == Path::new("-") {
            let stdin = std::io::stdin().lock();
            fileio::input_file::read_stream(path, "standard input", stdin, accept, fileio::MAX_SIZE)
                .map(Bytes::Owned)
        } else {
            fileio::InputFile::open_as(path, accept).map(|data| match data {
                fileio::InputFile::Mapped(map, _) => Bytes::Mapped(map),
                fileio::InputFile::Read(v) => Bytes::Owned(v),
            })
        }
        .map_err(|e| match e {
            fileio::Error::Io { path, error } => Error::Io { path, error },
            fileio::Error::Decompress { path, error } => Error::Decompress { path, error },
        })?;
        PerfData::from_parts(bytes, path.to_path_buf())
    }

    /// Reads perf.data from memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<PerfData> {
        PerfData::from_parts(Bytes::Owned(bytes), PathBuf::from("<memory>"))
    }

    fn from_parts(bytes: Bytes, path: PathBuf) -> Result<PerfData> {
        let file = bytes.as_slice();
        let mut header = FileHeader::parse(file)?;
        let mut warnings = Vec::new();
        if let Err(e) = header.data.check(file, 40, "data") {
            // A recording cut short (perf killed, disk full, a partial copy):
            // read the records that are there; the framing reports the cut.
            header.data.size = pos(file.len()).saturating_sub(header.data.offset);
            warnings.push(e);
        }
        let (attrs, features) = match header.format {
            // The feature sections follow the data: a cut file has none.
            Format::File if !warnings.is_empty() => (header.read_attrs(file)?, Features::default()),
            Format::File => (header.read_attrs(file)?, Features::read_file(&header, file)),
            Format::Pipe => pipe_metadata(&header, file),
        };
        Ok(PerfData {
            bytes,
            path,
            header,
            attrs,
            features,
            warnings,
        })
    }

    /// The path it was opened from (`<memory>` for [`PerfData::from_bytes`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// File or pipe.
    pub fn format(&self) -> Format {
        self.header.format
    }

    /// The whole file; offsets in errors and events index into it.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The records of the data section, decoded, in file order. A record
    /// whose body is bad yields an error and iteration goes on; an error
    /// that breaks the framing ([`Error::breaks_framing`]) ends it.
    pub fn records(&self) -> Records<'_> {
        Records {
            frames: Frames::new(self.bytes(), &self.header),
            attrs: &self.attrs,
            unpack: Unpack::default(),
            pending: None,
        }
    }
}

/// Pipe format: the attrs and features are records of the stream, read in
/// one pass over the framing before the records are decoded.
fn pipe_metadata(header: &FileHeader, file: &[u8]) -> (Attrs, Features) {
    let mut attrs = Attrs::new();
    let mut features = Features::default();
    for frame in Frames::new(file, header) {
        let Ok((offset, rec)) = frame else { break };
        let k = u32_at(rec, 0).unwrap_or(0);
        if k != kind::HEADER_ATTR && k != kind::HEADER_FEATURE {
            continue;
        }
        match records::parse(rec, offset, &attrs) {
            Ok(Event {
                record: Record::HeaderAttr { attr, ids },
                ..
            }) => attrs.push(attr, ids),
            Ok(Event {
                record: Record::HeaderFeature { feature, data },
                ..
            }) => features.add(feature, &data, offset + 16),
            Ok(_) => {}
            Err(e) => features.warnings.push(e),
        }
    }
    (attrs, features)
}

/// The records of the data section as byte slices, with their offsets:
/// only the framing (header.size) is checked here.
pub struct Frames<'a> {
    file: &'a [u8],
    at: usize,
    end: usize,
    done: bool,
}

impl<'a> Frames<'a> {
    /// The records of `header`'s data section in `file`. Each item is the
    /// record's file offset and its `header.size` bytes.
    pub fn new(file: &'a [u8], header: &FileHeader) -> Frames<'a> {
        let start = usize::try_from(header.data.offset).unwrap_or(usize::MAX);
        let end = usize::try_from(header.data.offset.saturating_add(header.data.size))
            .unwrap_or(usize::MAX)
            .min(file.len());
        Frames {
            file,
            at: start,
            end,
            done: false,
        }
    }

    fn fail(&mut self, e: Error) -> Option<Result<(u64, &'a [u8])>> {
        self.done = true;
        Some(Err(e))
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<(u64, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.at >= self.end {
            return None;
        }
        let offset = pos(self.at);
        let left = self.end - self.at;
        if left < 8 {
            return self.fail(Error::truncated("record header", offset, 8, pos(left)));
        }
        let size = u16_at(self.file, self.at + 6).unwrap_or(0);
        if size < 8 {
            return self.fail(Error::RecordTooSmall { offset, size });
        }
        let size = usize::from(size);
        if size > left {
            return self.fail(Error::RecordPastEnd {
                offset,
                size: pos(size),
                left: pos(left),
            });
        }
        let Some(rec) = self.file.get(self.at..self.at + size) else {
            return self.fail(Error::truncated("record", offset, pos(size), pos(left)));
        };
        let k = u32_at(rec, 0).unwrap_or(0);
        let extra = records::extra_payload(rec, k);
        let next = u64::try_from(self.at + size)
            .ok()
            .and_then(|n| n.checked_add(extra))
            .filter(|&n| n <= pos(self.end));
        match next {
            Some(n) => self.at = usize::try_from(n).unwrap_or(self.end),
            None => {
                return self.fail(Error::RecordPastEnd {
                    offset,
                    size: pos(size).saturating_add(extra),
                    left: pos(left),
                })
            }
        }
        Some(Ok((offset, rec)))
    }
}

/// Decoded records: see [`PerfData::records`]. The records inside
/// PERF_RECORD_COMPRESSED records (`perf record -z`) follow each of them,
/// at its offset, as perf reads them.
pub struct Records<'a> {
    frames: Frames<'a>,
    attrs: &'a Attrs,
    unpack: Unpack<'a>,
    /// An error to give after the record just given.
    pending: Option<Error>,
}

impl Iterator for Records<'_> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.pending.take() {
            return Some(Err(e));
        }
        if let Some(item) = self.unpack.next(self.attrs) {
            return Some(item);
        }
        let Some(frame) = self.frames.next() else {
            return self.unpack.finish().map(Err);
        };
        Some(frame.and_then(|(offset, rec)| {
            let k = u32_at(rec, 0).unwrap_or(0);
            if k == kind::COMPRESSED || k == kind::COMPRESSED2 {
                self.pending = self.unpack.start(rec, k, offset).err();
            }
            records::parse(rec, offset, self.attrs)
        }))
    }
}
