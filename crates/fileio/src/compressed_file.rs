//! Files compressed whole, as distributions ship kernel modules: Debian's
//! `.ko.xz`, and the `.ko.zst` and `.ko.gz` that `CONFIG_MODULE_COMPRESS_*`
//! makes. They are recognised by their magic bytes, not by their names.
//!
//! Every stream and frame is read, as `xz -dc`, `zstd -dc` and `gzip -dc`
//! do: concatenated xz streams (with their padding), zstd frames (skippable
//! ones skipped) and gzip members. Decoding streams into a
//! [`Sink`](crate::bounded) that refuses the output as soon as it breaks a
//! rule: its first bytes are not the magic of a format the reader takes,
//! it passes [`MAX_SIZE`], or it runs more than
//! [`MAX_TRAILER`](crate::format::MAX_TRAILER) bytes past the end that the
//! format's headers give. A size the file states (the xz index, the zstd
//! frame headers' content sizes) is checked against the cap before a byte
//! is decoded, and reserved when it is right.
//!
//! The decoders are the reference libraries, liblzma (xz-utils) and libzstd
//! through their Rust bindings, so that a file reads here as it does with
//! the tools; the xz decoder's dictionary is bounded by [`XZ_MEMLIMIT`].

use std::io::{BufRead, Read};

use crate::bounded::{Sink, Source, StreamError, MAX_SIZE};
use crate::format::Format;
use crate::DecompressError;

/// The most memory the xz decoder may use: its dictionary, which the
/// stream's header sets. `xz -9` needs 65 MiB; the kernel's module
/// compression uses a 1 MiB dictionary.
pub const XZ_MEMLIMIT: u64 = 256 << 20;

/// Decoded bytes are handed on in pieces of this size.
const CHUNK: usize = 256 << 10;

/// A whole-file compression format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// xz (`.ko.xz`), magic `FD 37 7A 58 5A 00`.
    Xz,
    /// zstd (`.ko.zst`), magic `28 B5 2F FD`.
    Zstd,
    /// gzip (`.ko.gz`), magic `1F 8B`.
    Gzip,
}

impl Codec {
    /// The codec whose magic bytes `data` starts with.
    pub fn of(data: &[u8]) -> Option<Codec> {
        if data.starts_with(XZ_MAGIC) {
            Some(Codec::Xz)
        } else if data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Codec::Zstd)
        } else if data.starts_with(&[0x1f, 0x8b]) {
            Some(Codec::Gzip)
        } else {
            None
        }
    }

    /// "xz", "zstd" or "gzip".
    pub fn name(self) -> &'static str {
        match self {
            Codec::Xz => "xz",
            Codec::Zstd => "zstd",
            Codec::Gzip => "gzip",
        }
    }
}

const XZ_MAGIC: &[u8] = b"\xfd7zXZ\0";

/// `data` decompressed, if it is a compressed file (`None` otherwise),
/// under [`MAX_SIZE`], its first bytes the magic of one of `accept` (any,
/// if empty). The error says which codec failed and why.
pub fn decompress(data: &[u8], accept: &[Format]) -> Option<Result<Vec<u8>, DecompressError>> {
    decompress_capped(data, accept, MAX_SIZE)
}

/// [`decompress`] under a cap of `cap` bytes instead of [`MAX_SIZE`].
pub fn decompress_capped(
    data: &[u8],
    accept: &[Format],
    cap: u64,
) -> Option<Result<Vec<u8>, DecompressError>> {
    let codec = Codec::of(data)?;
    let mut sink = Sink::new(Source::Decompressed(codec.name()), accept, cap);
    let stated = match codec {
        Codec::Xz => xz_size(data).map(|n| (n, "index")),
        Codec::Zstd => zstd_size(data).map(|n| (n, "frame headers")),
        Codec::Gzip => None,
    };
    let result = match stated {
        Some((n, by)) => sink.expect(n, by).map_err(Fail::Content),
        None => Ok(()),
    }
    .and_then(|()| decode(codec, &mut &data[..], &mut sink))
    .and_then(|()| sink.finish().map_err(Fail::Content));
    Some(result.map_err(|fail| fail.into_error(codec)))
}

/// Why decoding stopped.
pub(crate) enum Fail {
    /// Reading the compressed bytes failed (a pipe's read).
    Read(std::io::Error),
    /// The compressed bytes do not decode.
    Corrupt {
        /// Where in the compressed bytes the decoder stopped.
        offset: u64,
        /// The decoder's error.
        error: Box<dyn std::error::Error + Send + Sync>,
    },
    /// What they decode to is refused.
    Content(StreamError),
}

impl Fail {
    /// The error of a compressed file, for a failure that is not a read's.
    pub(crate) fn into_error(self, codec: Codec) -> DecompressError {
        match self {
            Fail::Read(error) => DecompressError::Corrupt {
                codec,
                offset: 0,
                error: Box::new(error),
            },
            Fail::Corrupt { offset, error } => DecompressError::Corrupt {
                codec,
                offset,
                error,
            },
            Fail::Content(error) => DecompressError::Content {
                codec,
                error: Box::new(error),
            },
        }
    }
}

/// The compressed data ends inside a stream or frame.
#[derive(Debug, thiserror::Error)]
#[error("the compressed data ends before its stream does (cut short?)")]
struct CutShort;

/// A `BufRead` that counts the bytes consumed from it.
struct Counted<'r> {
    inner: &'r mut dyn BufRead,
    consumed: u64,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed += n as u64;
        Ok(n)
    }
}

impl BufRead for Counted<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.consumed += n as u64;
        self.inner.consume(n);
    }
}

/// Decodes all of `input`, compressed with `codec`, into `sink`.
pub(crate) fn decode(codec: Codec, input: &mut dyn BufRead, sink: &mut Sink) -> Result<(), Fail> {
    let mut input = Counted {
        inner: input,
        consumed: 0,
    };
    let mut out = vec![0u8; CHUNK];
    match codec {
        Codec::Xz => xz(&mut input, &mut out, sink),
        Codec::Zstd => zstd(&mut input, &mut out, sink),
        Codec::Gzip => gzip(&mut input, &mut out, sink),
    }
}

fn xz(input: &mut Counted, out: &mut [u8], sink: &mut Sink) -> Result<(), Fail> {
    use liblzma::stream::{Action, Status, Stream, CONCATENATED};
    let corrupt = |offset, error: liblzma::stream::Error| Fail::Corrupt {
        offset,
        error: Box::new(error),
    };
    let mut stream =
        Stream::new_stream_decoder(XZ_MEMLIMIT, CONCATENATED).map_err(|e| corrupt(0, e))?;
    loop {
        let data = input.fill_buf().map_err(Fail::Read)?;
        let eof = data.is_empty();
        let (in0, out0) = (stream.total_in(), stream.total_out());
        let status = stream.process(data, out, if eof { Action::Finish } else { Action::Run });
        let consumed = usize::try_from(stream.total_in() - in0).unwrap_or(usize::MAX);
        let produced = usize::try_from(stream.total_out() - out0).unwrap_or(usize::MAX);
        input.consume(consumed);
        sink.push(out.get(..produced).unwrap_or_default())
            .map_err(Fail::Content)?;
        match status {
            Ok(Status::StreamEnd) => return Ok(()),
            Ok(_) if eof && produced == 0 => {
                return Err(Fail::Corrupt {
                    offset: input.consumed,
                    error: Box::new(CutShort),
                })
            }
            Ok(_) => {}
            Err(e) => return Err(corrupt(input.consumed, e)),
        }
    }
}

fn zstd(input: &mut Counted, out: &mut [u8], sink: &mut Sink) -> Result<(), Fail> {
    use zstd::stream::raw::{Decoder, InBuffer, Operation, OutBuffer};
    let corrupt = |offset, error: std::io::Error| Fail::Corrupt {
        offset,
        error: Box::new(error),
    };
    let mut decoder = Decoder::new().map_err(|e| corrupt(0, e))?;
    // What the decoder still needs to end the frame it is in (0: between
    // frames). A call that moves nothing (at the end of the input) says
    // what a new frame would need: not counted.
    let mut left = 0;
    loop {
        let data = input.fill_buf().map_err(Fail::Read)?;
        let eof = data.is_empty();
        let mut inb = InBuffer::around(data);
        let mut outb = OutBuffer::around(&mut *out);
        let result = decoder.run(&mut inb, &mut outb);
        let (consumed, produced) = (inb.pos(), outb.pos());
        input.consume(consumed);
        sink.push(out.get(..produced).unwrap_or_default())
            .map_err(Fail::Content)?;
        let hint = result.map_err(|e| corrupt(input.consumed, e))?;
        if consumed > 0 || produced > 0 {
            left = hint;
        }
        // At the end of the input, once the decoder has no more output.
        if eof && produced < out.len() {
            break;
        }
    }
    if left != 0 {
        return Err(Fail::Corrupt {
            offset: input.consumed,
            error: Box::new(CutShort),
        });
    }
    Ok(())
}

fn gzip(input: &mut Counted, out: &mut [u8], sink: &mut Sink) -> Result<(), Fail> {
    // Multi-member, as gzip(1) writes and reads concatenated files.
    let mut decoder = flate2::bufread::MultiGzDecoder::new(input);
    loop {
        match decoder.read(out) {
            Ok(0) => return Ok(()),
            Ok(n) => sink
                .push(out.get(..n).unwrap_or_default())
                .map_err(Fail::Content)?,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Fail::Corrupt {
                    offset: decoder.get_ref().consumed,
                    error: Box::new(e),
                })
            }
        }
    }
}

/// The uncompressed size of the zstd frames that make `data`, from their
/// headers' content sizes (skippable frames hold none); `None` when a
/// frame does not state it or does not parse.
fn zstd_size(data: &[u8]) -> Option<u64> {
    use zstd::zstd_safe::{find_frame_compressed_size, get_frame_content_size};
    let mut rest = data;
    let mut total = 0u64;
    while !rest.is_empty() {
        let len = find_frame_compressed_size(rest).ok()?;
        total = total.checked_add(get_frame_content_size(rest).ok()??)?;
        rest = rest.get(len..).filter(|_| len > 0)?;
    }
    Some(total)
}

/// The uncompressed size of the xz streams that make `data`, from their
/// indexes (walked from the end, stream by stream, over stream padding);
/// `None` when they do not parse (the decoder then says why).
fn xz_size(data: &[u8]) -> Option<u64> {
    let mut end = data.len();
    let mut total = 0u64;
    while end > 0 {
        // Stream padding: zero bytes, a multiple of 4.
        while end >= 4 && data.get(end - 4..end)? == [0; 4] {
            end -= 4;
        }
        let footer = data.get(end.checked_sub(12)?..end)?;
        if footer.get(10..12)? != b"YZ" {
            return None;
        }
        let backward = u32::from_le_bytes(footer.get(4..8)?.try_into().ok()?);
        let index_len = (usize::try_from(backward).ok()? + 1).checked_mul(4)?;
        let index_end = end - 12;
        let index_start = index_end.checked_sub(index_len)?;
        let (blocks, uncompressed) = xz_index(data.get(index_start..index_end)?)?;
        let stream_start = index_start.checked_sub(blocks)?.checked_sub(12)?;
        if !data.get(stream_start..)?.starts_with(XZ_MAGIC) {
            return None;
        }
        total = total.checked_add(uncompressed)?;
        end = stream_start;
    }
    Some(total)
}

/// An xz index's blocks: their total size in the file (each padded to 4
/// bytes) and their total uncompressed size.
fn xz_index(index: &[u8]) -> Option<(usize, u64)> {
    let mut at = 1;
    if *index.first()? != 0 {
        return None;
    }
    let mut varint = || -> Option<u64> {
        let mut v = 0u64;
        for i in 0..9 {
            let b = *index.get(at)?;
            at += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    };
    let records = varint()?;
    let (mut blocks, mut uncompressed) = (0u64, 0u64);
    for _ in 0..records {
        let unpadded = varint()?;
        blocks = blocks.checked_add(unpadded.checked_add(3)? & !3)?;
        uncompressed = uncompressed.checked_add(varint()?)?;
    }
    Some((usize::try_from(blocks).ok()?, uncompressed))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::format::ELF_OR_BTF;

    fn xz(data: &[u8]) -> Vec<u8> {
        let mut e = liblzma::write::XzEncoder::new(Vec::new(), 1);
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_xz_and_zstd_files_decompress_to_what_was_compressed() {
        let text = b"\x7fELF and more".repeat(100);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        let zst = zstd::encode_all(&text[..], 3).unwrap();
        for file in [gz, zst, xz(&text)] {
            assert_eq!(decompress(&file, ELF_OR_BTF).unwrap().unwrap(), text);
        }
        assert!(decompress(&text, ELF_OR_BTF).is_none());
    }

    #[test]
    fn a_truncated_stream_is_an_error_naming_its_codec() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&[7u8; 4096]).unwrap();
        let gz = gz.finish().unwrap();
        let err = decompress(&gz[..gz.len() / 2], &[])
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("gzip-compressed file"), "{err}");
        for file in [
            xz(&[7; 4096]),
            zstd::encode_all(&[7u8; 4096][..], 3).unwrap(),
        ] {
            let err = decompress(&file[..file.len() - 5], &[])
                .unwrap()
                .unwrap_err()
                .to_string();
            assert!(err.contains("compressed file: "), "{err}");
        }
    }

    #[test]
    fn zstd_frame_headers_give_the_size_of_every_frame() {
        let mut two = zstd::encode_all(&[1u8; 1000][..], 3).unwrap();
        two.extend(zstd::encode_all(&[2u8; 3000][..], 3).unwrap());
        assert_eq!(zstd_size(&two), Some(4000));
        assert_eq!(zstd_size(&two[..two.len() - 1]), None);
    }

    #[test]
    fn the_xz_index_gives_the_size_of_every_stream() {
        let mut two = xz(&[1; 1000]);
        two.extend_from_slice(&[0; 8]);
        two.extend(xz(&[2; 3000]));
        assert_eq!(xz_size(&two), Some(4000));
        assert_eq!(xz_size(&two[..two.len() - 1]), None);
    }
}
