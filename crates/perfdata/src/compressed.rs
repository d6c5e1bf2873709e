//! PERF_RECORD_COMPRESSED and PERF_RECORD_COMPRESSED2 (`perf record -z`):
//! records whose data is a piece of one zstd stream that runs through all
//! of them, in file order, and decodes to more records (perf's
//! `perf_session__process_compressed_event`: one decompression context
//! per file, and a record may start in one COMPRESSED record's output and
//! end in the next one's).
//!
//! The records inside are decoded as they are asked for, in pieces of
//! [`CHUNK`] bytes: memory stays at one piece and one record however much
//! a record decompresses to. Like perf, they are given the offset of the
//! COMPRESSED record that completes them. The stream's bytes stop being
//! decoded at its first error (what follows continues a broken stream):
//! the error says how many COMPRESSED records were left undecoded.

use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};

use crate::attr::Attrs;
use crate::bytes::{u16_at, u32_at, u64_at};
use crate::error::{Error, Result};
use crate::records::{self, kind, Event};

/// Decompressed bytes are produced in pieces of this size.
const CHUNK: usize = 64 << 10;

/// The most bytes the records of a file's COMPRESSED records may decompress
/// to, as for any input read as a stream (fileio's cap).
const MAX_DECOMPRESSED: u64 = fileio::MAX_SIZE;

/// The data of a COMPRESSED or COMPRESSED2 record, or why it has none.
pub(crate) fn payload(rec: &[u8], k: u32) -> std::result::Result<&[u8], String> {
    if k == kind::COMPRESSED {
        return Ok(rec.get(8..).unwrap_or_default());
    }
    // COMPRESSED2: a u64 data_size, then the data, padded to 8 bytes.
    let size = u64_at(rec, 8).ok_or("no data_size (the record has fewer than 16 bytes)")?;
    usize::try_from(size)
        .ok()
        .and_then(|n| rec.get(16..16usize.checked_add(n)?))
        .ok_or_else(|| {
            format!(
                "data_size {size} runs past the record's {} bytes",
                rec.len()
            )
        })
}

/// The records inside a file's COMPRESSED records, decoded as the records
/// are read.
#[derive(Default)]
pub(crate) struct Unpack<'a> {
    decoder: Option<Decoder<'static>>,
    /// The current COMPRESSED record's data not yet decoded.
    input: &'a [u8],
    /// The decoder may hold output it could not hand over yet.
    more_out: bool,
    /// The offset of the COMPRESSED record being decoded.
    outer: u64,
    /// Decompressed bytes not yet handed out; `at` is the next record.
    buf: Vec<u8>,
    at: usize,
    /// Decompressed bytes so far.
    total: u64,
    /// Where the stream broke, and the COMPRESSED records since.
    failed: Option<u64>,
    skipped: u64,
    /// The end was reported.
    finished: bool,
}

impl<'a> Unpack<'a> {
    /// Starts on the COMPRESSED (or COMPRESSED2) record `rec`, of kind
    /// `k`, at `offset`: its data continues the stream.
    pub(crate) fn start(&mut self, rec: &'a [u8], k: u32, offset: u64) -> Result<()> {
        if self.failed.is_some() {
            self.skipped += 1;
            return Ok(());
        }
        let name = records::kind_name(k);
        match payload(rec, k) {
            Ok(data) => {
                self.input = data;
                self.outer = offset;
                Ok(())
            }
            Err(reason) => {
                self.failed = Some(offset);
                Err(Error::record(offset, name, reason))
            }
        }
    }

    /// The next record decoded from the COMPRESSED records started so far,
    /// `None` when they hold no whole record more.
    pub(crate) fn next(&mut self, attrs: &Attrs) -> Option<Result<Event>> {
        loop {
            if self.failed.is_some() {
                return None;
            }
            match self.whole_record() {
                Ok(Some((at, end))) => {
                    self.at = end;
                    let rec = self.buf.get(at..end).unwrap_or_default();
                    let rec = rec
                        .get(..usize::from(u16_at(rec, 6).unwrap_or(0)))
                        .unwrap_or(rec);
                    return Some(records::parse(rec, self.outer, attrs));
                }
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
            if self.input.is_empty() && !self.more_out {
                return None;
            }
            if let Err(e) = self.decode() {
                return Some(Err(e));
            }
        }
    }

    /// What is left once the file's records are all read: a stream that
    /// ends inside a frame or a record, or COMPRESSED records not decoded.
    pub(crate) fn finish(&mut self) -> Option<Error> {
        if self.finished {
            return None;
        }
        self.finished = true;
        let bad = |offset, reason: String| Some(Error::record(offset, "COMPRESSED", reason));
        if let Some(at) = self.failed {
            if self.skipped == 0 {
                return None;
            }
            return Some(Error::record(
                at,
                "COMPRESSED",
                format!(
                    "{} COMPRESSED records after this one were not decoded: they continue its broken zstd stream",
                    self.skipped
                ),
            ));
        }
        let partial = self.buf.len().saturating_sub(self.at);
        if partial > 0 {
            return bad(
                self.outer,
                format!("the decompressed records end inside a record ({partial} bytes of it)"),
            );
        }
        // The frame itself may stay open: perf flushes its stream after each
        // record and never ends the frame.
        None
    }

    /// Fails the stream at the current record with `reason`.
    fn fail(&mut self, reason: String) -> Error {
        self.failed = Some(self.outer);
        self.input = &[];
        Error::record(self.outer, "COMPRESSED", reason)
    }

    /// The bounds of the whole record at `at`, if the bytes hold one.
    fn whole_record(&mut self) -> Result<Option<(usize, usize)>> {
        let rest = self.buf.get(self.at..).unwrap_or_default();
        if rest.len() < 8 {
            return Ok(None);
        }
        let size = u16_at(rest, 6).unwrap_or(0);
        if size < 8 {
            let at = self.total - rest.len() as u64;
            return Err(self.fail(format!(
                "decompressed record at stream offset {at:#x}: size {size} is smaller than its 8-byte header"
            )));
        }
        let k = u32_at(rest, 0).unwrap_or(0);
        let whole = u64::from(size).saturating_add(records::extra_payload(rest, k));
        match usize::try_from(whole) {
            Ok(n) if n <= rest.len() => Ok(Some((self.at, self.at + n))),
            _ => Ok(None),
        }
    }

    /// Decodes one piece of the current data into `buf`.
    fn decode(&mut self) -> Result<()> {
        if self.decoder.is_none() {
            match Decoder::new() {
                Ok(d) => self.decoder = Some(d),
                Err(e) => return Err(self.fail(format!("zstd: {e}"))),
            }
        }
        // What was handed out is dropped first.
        self.buf.drain(..self.at.min(self.buf.len()));
        self.at = 0;
        let start = self.buf.len();
        self.buf.resize(start + CHUNK, 0);
        let Some(decoder) = self.decoder.as_mut() else {
            return Ok(());
        };
        let mut inb = InBuffer::around(self.input);
        let mut outb = OutBuffer::around(self.buf.get_mut(start..).unwrap_or_default());
        let result = decoder.run(&mut inb, &mut outb);
        let (consumed, produced) = (inb.pos(), outb.pos());
        self.buf.truncate(start + produced);
        self.input = self.input.get(consumed..).unwrap_or_default();
        self.more_out = produced == CHUNK;
        self.total += produced as u64;
        match result {
            Err(e) => Err(self.fail(format!("zstd: {e}"))),
            Ok(_) if consumed == 0 && produced == 0 && !self.input.is_empty() => {
                Err(self.fail("zstd: the decoder takes no more of the data".to_owned()))
            }
            Ok(_) if self.total > MAX_DECOMPRESSED => Err(self.fail(format!(
                "the records decompress to more than {MAX_DECOMPRESSED} bytes, the most an input may hold"
            ))),
            Ok(_) => Ok(()),
        }
    }
}
