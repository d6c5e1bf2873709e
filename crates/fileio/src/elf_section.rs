//! An ELF section's bytes, decompressed when the section is compressed
//! (SHF_COMPRESSED, or GNU's `.zdebug_` sections).
//!
//! A compressed section states its uncompressed size in a header, and
//! object's decompression reserves that much before it reads a byte: a
//! corrupt header that claims terabytes fails the reservation or aborts the
//! allocator. A size that no stream of the section's length can decode to
//! is refused first: deflate writes at most 1032 bytes per input byte (258
//! bytes per match of ~2 bits), zstd at most 32768 (an RLE block: 4 bytes
//! for up to 128 KiB, RFC 8878).

use std::borrow::Cow;

use object::{CompressionFormat, ObjectSection};

/// An ELF section whose bytes cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum SectionError {
    /// The object crate cannot read the section (compressed with an
    /// unknown codec, say).
    #[error("ELF: {0}")]
    Elf(object::read::Error),
    /// The section's bytes lie past the end of the file (a truncated file).
    #[error("data at file offset {offset:#x} ({size} bytes) lies past the end of the file")]
    PastEnd {
        /// The section's file offset.
        offset: u64,
        /// Its size in the file, in bytes.
        size: u64,
    },
    /// A compressed section's header claims more bytes than its data can
    /// decompress to (a corrupt header; refused before allocating).
    #[error("compressed section claims {claimed} bytes, more than its {compressed} compressed bytes can hold")]
    CompressedClaim {
        /// The uncompressed size the header gives.
        claimed: u64,
        /// The compressed bytes there are.
        compressed: u64,
    },
}

/// Most bytes one compressed byte of `format` decodes to; `None` for a
/// format object does not decompress (it says so itself).
fn max_ratio(format: CompressionFormat) -> Option<u64> {
    match format {
        CompressionFormat::Zlib => Some(1032),
        CompressionFormat::Zstandard => Some(32768),
        _ => None,
    }
}

/// The bytes of `section`, decompressed if need be.
pub fn data<'d>(section: &impl ObjectSection<'d>) -> Result<Cow<'d, [u8]>, SectionError> {
    let compressed = section.compressed_data().map_err(|e| {
        // object says "Invalid compressed data size or offset" of any
        // section whose bytes are not in the file: say where they were.
        match section.file_range().filter(|_| section.data().is_err()) {
            Some((offset, size)) => SectionError::PastEnd { offset, size },
            None => SectionError::Elf(e),
        }
    })?;
    if compressed.format == CompressionFormat::None {
        return Ok(Cow::Borrowed(compressed.data));
    }
    let len = compressed.data.len() as u64;
    if max_ratio(compressed.format)
        .is_some_and(|r| compressed.uncompressed_size > len.saturating_mul(r))
    {
        return Err(SectionError::CompressedClaim {
            claimed: compressed.uncompressed_size,
            compressed: len,
        });
    }
    compressed.decompress().map_err(SectionError::Elf)
}

#[cfg(test)]
mod tests {
    use object::write::Object;
    use object::Object as _;
    use object::{elf, Architecture, BinaryFormat, Endianness, SectionFlags, SectionKind};

    use super::{data, SectionError};

    /// The decompressed bytes of `elf`'s `.BTF` section.
    fn btf_section(elf: &[u8]) -> Result<Vec<u8>, SectionError> {
        let file = object::File::parse(elf).unwrap();
        data(&file.section_by_name(".BTF").unwrap()).map(|d| d.into_owned())
    }

    /// A relocatable ELF whose `.BTF` section is `zlib` bytes behind an
    /// Elf64_Chdr that claims `size` uncompressed bytes.
    fn elf_with_compressed_btf(size: u64, zlib: &[u8]) -> Vec<u8> {
        let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
        let id = obj.add_section(Vec::new(), b".BTF".to_vec(), SectionKind::Other);
        let mut data = Vec::new();
        data.extend_from_slice(&elf::ELFCOMPRESS_ZLIB.to_le_bytes());
        data.extend_from_slice(&0u32.to_le_bytes());
        data.extend_from_slice(&size.to_le_bytes());
        data.extend_from_slice(&1u64.to_le_bytes());
        data.extend_from_slice(zlib);
        let section = obj.section_mut(id);
        section.set_data(data, 1);
        section.flags = SectionFlags::Elf {
            sh_flags: u64::from(elf::SHF_COMPRESSED),
        };
        obj.write().unwrap()
    }

    /// `payload` as a zlib stream of one stored (uncompressed) deflate
    /// block, as RFC 1950 and 1951 define them.
    fn zlib_stored(payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u16;
        let mut z = vec![0x78, 0x01, 0x01];
        z.extend_from_slice(&len.to_le_bytes());
        z.extend_from_slice(&(!len).to_le_bytes());
        z.extend_from_slice(payload);
        let (mut a, mut b) = (1u32, 0u32);
        for &byte in payload {
            a = (a + u32::from(byte)) % 65521;
            b = (b + a) % 65521;
        }
        z.extend_from_slice(&((b << 16) | a).to_be_bytes());
        z
    }

    #[test]
    fn zlib_section_decompresses_rfc1950_stored_block() {
        let payload = b"not BTF, but bytes";
        let elf = elf_with_compressed_btf(payload.len() as u64, &zlib_stored(payload));
        assert_eq!(btf_section(&elf).unwrap(), payload);
    }

    #[test]
    fn size_beyond_deflate_ratio_is_refused_before_allocating() {
        // The size a fuzzed file claimed: 150 TB from a few bytes.
        let elf = elf_with_compressed_btf(0x8900_031f_0101, &zlib_stored(b"x"));
        let err = btf_section(&elf).unwrap_err().to_string();
        assert!(err.contains("claims 150633145368833 bytes"), "{err}");
    }
}
