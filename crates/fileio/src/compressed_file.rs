//! Files compressed whole, as distributions ship kernel modules: Debian's
//! `.ko.xz`, and the `.ko.zst` and `.ko.gz` that `CONFIG_MODULE_COMPRESS_*`
//! makes. They are recognised by their magic bytes, not by their names.

use std::io::{Read, Write};

use crate::DecompressError;

/// The most bytes a compressed file may decompress to: more than any
/// vmlinux with DWARF (~600 MB), less than a corrupt stream could claim.
const MAX_SIZE: u64 = 4 << 30;

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
        if data.starts_with(b"\xfd7zXZ\0") {
            Some(Codec::Xz)
        } else if data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Codec::Zstd)
        } else if data.starts_with(&[0x1f, 0x8b]) {
            Some(Codec::Gzip)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Codec::Xz => "xz",
            Codec::Zstd => "zstd",
            Codec::Gzip => "gzip",
        }
    }
}

/// `data` decompressed, if it is a compressed file (`None` otherwise). The
/// error says which codec failed and why.
pub fn decompress(data: &[u8]) -> Option<Result<Vec<u8>, DecompressError>> {
    type Cause = Box<dyn std::error::Error + Send + Sync>;
    let codec = Codec::of(data)?;
    let mut out = Capped(Vec::new());
    let result: Result<(), Cause> = match codec {
        Codec::Xz => lzma_rs::xz_decompress(&mut &data[..], &mut out).map_err(Cause::from),
        Codec::Zstd => ruzstd::decoding::StreamingDecoder::new(data)
            .map_err(Cause::from)
            .and_then(|mut d| copy(&mut d, &mut out)),
        // Multi-member, as gzip(1) writes and reads concatenated files.
        Codec::Gzip => copy(&mut flate2::read::MultiGzDecoder::new(data), &mut out),
    };
    Some(result.map(|()| out.0).map_err(|error| DecompressError {
        codec: codec.name(),
        error,
    }))
}

fn copy(
    from: &mut impl Read,
    to: &mut Capped,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    std::io::copy(from, to).map(drop).map_err(Into::into)
}

/// A `Vec` that refuses to grow past [`MAX_SIZE`].
struct Capped(Vec<u8>);

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() as u64 + buf.len() as u64 > MAX_SIZE {
            return Err(std::io::Error::other(format!(
                "decompresses to more than {MAX_SIZE} bytes"
            )));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_and_zstd_files_decompress_to_what_was_compressed() {
        let text = b"\x7fELF and more".repeat(100);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(decompress(&gz).unwrap().unwrap(), text);
        let zst = ruzstd::encoding::compress_to_vec(
            &text[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(decompress(&zst).unwrap().unwrap(), text);
        assert!(decompress(&text).is_none());
    }

    #[test]
    fn a_truncated_stream_is_an_error_naming_its_codec() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&[7u8; 4096]).unwrap();
        let gz = gz.finish().unwrap();
        let err = decompress(&gz[..gz.len() / 2])
            .unwrap()
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("gzip-compressed file"), "{err}");
    }
}
