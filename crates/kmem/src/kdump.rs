//! kdump-compressed dumps (makedumpfile, QEMU `format=kdump-*`), plain or
//! flattened.
//!
//! Layout, in blocks of `block_size` bytes (makedumpfile's diskdump_mod.h):
//! block 0 `disk_dump_header` ("KDUMP   "), then `sub_hdr_size` blocks of
//! `kdump_sub_header` (phys_base; VMCOREINFO and ELF notes by file offset),
//! then `bitmap_blocks` blocks of two equal-sized bitmaps (1st: the pfn
//! exists, 2nd: the pfn was written), then one 24-byte `page_desc`
//! `{offset, size, flags, page_flags}` per pfn set in the 2nd bitmap, in
//! pfn order. A page's descriptor index is the number of set bits before its
//! pfn, found with per-word running counts (`Bitmap::rank`).

use std::collections::HashMap;
use std::io::Read;
use std::sync::Mutex;

use miniz_oxide::inflate::core::inflate_flags::{
    TINFL_FLAG_PARSE_ZLIB_HEADER, TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
};
use miniz_oxide::inflate::core::{decompress as inflate, DecompressorOxide};
use miniz_oxide::inflate::TINFLStatus;

use crate::elf::parse_notes;
use crate::error::{Error, Result};
use crate::file::{u32_at, u64_at, Bytes};
use crate::flattened::{is_flattened, Flattened};
use crate::{Dump, Note};

/// The first 8 bytes of a plain kdump-compressed file.
pub const SIGNATURE: &[u8] = b"KDUMP   ";
/// A page descriptor's `flags` bit: the page is zlib-compressed
/// (`DUMP_DH_COMPRESSED_ZLIB`).
pub const FLAG_ZLIB: u32 = 0x1;
/// The page is LZO1X-compressed (`DUMP_DH_COMPRESSED_LZO`).
pub const FLAG_LZO: u32 = 0x2;
/// The page is snappy-compressed, raw format (`DUMP_DH_COMPRESSED_SNAPPY`).
pub const FLAG_SNAPPY: u32 = 0x4;
/// The page is a zstd frame (`DUMP_DH_COMPRESSED_ZSTD`).
pub const FLAG_ZSTD: u32 = 0x20;
const PAGE_DESC_LEN: u64 = 24;
/// Decompressed pages kept: enough for a list walk to revisit its pages.
const CACHE_PAGES: usize = 256;

/// The file as the kdump layout sees it: direct, or through a flattened index.
struct Raw {
    bytes: Bytes,
    flat: Option<Flattened>,
}

impl Raw {
    fn read_at(&self, what: &'static str, offset: u64, buf: &mut [u8]) -> Result<()> {
        match &self.flat {
            Some(f) => f.read_at(&self.bytes, what, offset, buf),
            None => self.bytes.read_at(what, offset, buf),
        }
    }

    fn len(&self) -> u64 {
        match &self.flat {
            Some(f) => f.len(),
            None => self.bytes.len(),
        }
    }

    /// `len` bytes at `offset`; checked against the file's size before
    /// anything is allocated.
    fn vec(&self, what: &'static str, offset: u64, len: u64) -> Result<Vec<u8>> {
        if offset.checked_add(len).is_none_or(|end| end > self.len()) {
            return Err(Error::Truncated {
                what,
                offset,
                need: len,
                have: self.len().saturating_sub(offset),
            });
        }
        let n = usize::try_from(len)
            .map_err(|_| Error::corrupt(what, offset, format!("size {len:#x} too large")))?;
        let mut v = vec![0; n];
        self.read_at(what, offset, &mut v)?;
        Ok(v)
    }
}

/// A bitmap of pfns with running counts of set bits per 64-bit word.
struct Bitmap {
    words: Vec<u64>,
    before: Vec<u64>,
}

impl Bitmap {
    fn new(bytes: &[u8]) -> Bitmap {
        let words: Vec<u64> = bytes
            .chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect();
        let mut before = Vec::with_capacity(words.len());
        let mut n = 0u64;
        for w in &words {
            before.push(n);
            n += u64::from(w.count_ones());
        }
        Bitmap { words, before }
    }

    fn get(&self, pfn: u64) -> bool {
        self.words
            .get((pfn / 64) as usize)
            .is_some_and(|w| w >> (pfn % 64) & 1 == 1)
    }

    /// Set bits below `pfn`.
    fn rank(&self, pfn: u64) -> u64 {
        let i = (pfn / 64) as usize;
        let (Some(&w), Some(&b)) = (self.words.get(i), self.before.get(i)) else {
            return 0;
        };
        b + u64::from((w & ((1u64 << (pfn % 64)) - 1)).count_ones())
    }
}

/// A kdump-compressed dump, plain or flattened, parsed down to its bitmaps:
/// pages are found, read and decompressed when asked for (the last 256 are
/// kept). Physical addresses are `pfn * block_size`.
pub struct KdumpFile {
    raw: Raw,
    block_size: u64,
    max_mapnr: u64,
    valid: Bitmap,
    dumped: Bitmap,
    descs_at: u64,
    phys_base: u64,
    vmcoreinfo: Option<Vec<u8>>,
    notes: Vec<Note>,
    cache: Mutex<HashMap<u64, std::sync::Arc<Vec<u8>>>>,
    decoder: Mutex<PageDecoder>,
}

/// What a page descriptor says about one page.
#[derive(Clone, Copy, Debug)]
pub struct PageDesc {
    /// Where the stored page is, in bytes from the start of the (unflattened)
    /// file.
    pub offset: u64,
    /// The stored page's length in bytes.
    pub size: u32,
    /// How it is stored: 0 raw, else one of the `FLAG_*` codecs.
    pub flags: u32,
}

impl KdumpFile {
    /// Reads the headers, the sub-header's notes and VMCOREINFO, and both
    /// bitmaps. Fails with [`Error::Truncated`] or [`Error::Corrupt`] (at the
    /// file offset of the bad field) when they do not fit the file.
    pub fn parse(bytes: Bytes) -> Result<KdumpFile> {
        let mut head = [0u8; 16];
        bytes.read_at("dump header", 0, &mut head)?;
        let flat = if is_flattened(&head) {
            Some(Flattened::index(&bytes)?)
        } else {
            None
        };
        let raw = Raw { bytes, flat };
        let hdr = raw.vec("disk_dump_header", 0, 464)?;
        if !hdr.starts_with(SIGNATURE) {
            return Err(Error::UnknownFormat("no \"KDUMP   \" signature".into()));
        }
        // new_utsname follows the signature and header_version: six
        // 65-byte strings, `machine` the fifth. A dump of an architecture
        // without a description is refused by name.
        let machine = &hdr[12 + 4 * 65..12 + 5 * 65];
        let machine = machine.split(|&b| b == 0).next().unwrap_or_default();
        arch::Arch::of_uname(&String::from_utf8_lossy(machine)).map_err(Error::Architecture)?;
        let field = |o: usize| u32_at(&hdr, o).unwrap_or(0);
        let version = field(8);
        let block_size = u64::from(field(428));
        let sub_hdr_size = u64::from(field(432));
        let bitmap_blocks = u64::from(field(436));
        let max_mapnr32 = u64::from(field(440));
        if !(512..=1 << 20).contains(&block_size) || !block_size.is_power_of_two() {
            return Err(Error::corrupt(
                "disk_dump_header",
                428,
                format!("block_size {block_size} is not a page size"),
            ));
        }
        let sub = raw.vec(
            "kdump_sub_header",
            block_size,
            104.min(sub_hdr_size * block_size),
        )?;
        let s64 = |o: usize| u64_at(&sub, o);
        let phys_base = s64(0).unwrap_or(0);
        let max_mapnr = match (version >= 6).then(|| s64(96)).flatten() {
            Some(n) if n != 0 => n,
            _ => max_mapnr32,
        };
        let mut vmcoreinfo = None;
        let mut notes = Vec::new();
        if version >= 3 {
            if let (Some(off), Some(size)) = (s64(32), s64(40)) {
                if size != 0 {
                    vmcoreinfo = Some(raw.vec("VMCOREINFO", off, size)?);
                }
            }
        }
        if version >= 4 {
            if let (Some(off), Some(size)) = (s64(48), s64(56)) {
                if size != 0 {
                    let data = raw.vec("ELF notes", off, size)?;
                    parse_notes(&data, off, &mut notes)?;
                }
            }
        }
        let bitmap_at = block_size * (1 + sub_hdr_size);
        let bitmap_len = bitmap_blocks
            .checked_mul(block_size)
            .ok_or_else(|| Error::corrupt("disk_dump_header", 436, "bitmap size overflows"))?;
        let bitmaps = raw.vec("bitmaps", bitmap_at, bitmap_len)?;
        let half = bitmaps.len() / 2;
        let valid = Bitmap::new(&bitmaps[..half]);
        let dumped = Bitmap::new(&bitmaps[half..]);
        if max_mapnr > half as u64 * 8 {
            return Err(Error::corrupt(
                "disk_dump_header",
                440,
                format!(
                    "max_mapnr {max_mapnr} exceeds the bitmap's {} bits",
                    half * 8
                ),
            ));
        }
        Ok(KdumpFile {
            raw,
            block_size,
            max_mapnr,
            valid,
            dumped,
            descs_at: bitmap_at + bitmap_len,
            phys_base,
            vmcoreinfo,
            notes,
            cache: Mutex::new(HashMap::new()),
            decoder: Mutex::new(PageDecoder::new()),
        })
    }

    /// The page size of the dumped machine, in bytes (4096 on x86-64).
    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// One past the highest page frame number the bitmaps cover.
    pub fn max_mapnr(&self) -> u64 {
        self.max_mapnr
    }

    /// The descriptor of a dumped page, `None` when `pfn` is not in the dump.
    pub fn page_desc(&self, pfn: u64) -> Result<Option<PageDesc>> {
        if pfn >= self.max_mapnr || !self.dumped.get(pfn) {
            return Ok(None);
        }
        let at = self.descs_at + self.dumped.rank(pfn) * PAGE_DESC_LEN;
        let mut d = [0u8; 24];
        self.raw.read_at("page descriptor", at, &mut d)?;
        Ok(Some(PageDesc {
            offset: u64_at(&d, 0).unwrap_or(0),
            size: u32_at(&d, 8).unwrap_or(0),
            flags: u32_at(&d, 12).unwrap_or(0),
        }))
    }

    /// The raw (possibly compressed) bytes a descriptor points at.
    pub fn page_data(&self, desc: &PageDesc) -> Result<Vec<u8>> {
        self.raw.vec("page data", desc.offset, u64::from(desc.size))
    }

    fn page(&self, pfn: u64) -> Result<std::sync::Arc<Vec<u8>>> {
        if let Some(p) = self.cache.lock().ok().and_then(|c| c.get(&pfn).cloned()) {
            return Ok(p);
        }
        let paddr = pfn * self.block_size;
        let Some(desc) = self.page_desc(pfn)? else {
            return Err(if pfn < self.max_mapnr && self.valid.get(pfn) {
                Error::PhysExcluded(paddr)
            } else {
                Error::PhysMissing(paddr)
            });
        };
        let data = self.page_data(&desc)?;
        let block = self.block_size as usize;
        let decoded = match self.decoder.lock() {
            Ok(mut d) => d.decompress(&data, desc.flags, block),
            Err(_) => decompress(&data, desc.flags, block),
        };
        let page = decoded.map_err(|e| Error::BadPage {
            paddr,
            offset: desc.offset,
            error: Box::new(e),
        })?;
        let page = std::sync::Arc::new(page);
        if let Ok(mut c) = self.cache.lock() {
            if c.len() >= CACHE_PAGES {
                c.clear();
            }
            c.insert(pfn, page.clone());
        }
        Ok(page)
    }
}

/// One page's bytes from its stored form: raw (`flags` 0, `block` bytes) or
/// compressed by the codec `flags` names. Exactly `block` bytes or an error.
pub fn decompress(data: &[u8], flags: u32, block: usize) -> Result<Vec<u8>> {
    PageDecoder::new().decompress(data, flags, block)
}

/// Decodes pages one after another with one inflate state: a new state
/// (flate2's `ZlibDecoder`, or its `Decompress::reset`) allocates or clears
/// a 32 KB window, more work than inflating a 4 KB page, which needs no
/// window: each page is one zlib stream, inflated straight into the page.
pub struct PageDecoder {
    zlib: Box<DecompressorOxide>,
}

impl Default for PageDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl PageDecoder {
    /// A decoder for any codec (zlib's state made once, here).
    pub fn new() -> PageDecoder {
        PageDecoder {
            zlib: Box::default(),
        }
    }

    /// As [`decompress`].
    pub fn decompress(&mut self, data: &[u8], flags: u32, block: usize) -> Result<Vec<u8>> {
        let stream = |codec| move |error| Error::Stream { codec, error };
        let out = match flags & (FLAG_ZLIB | FLAG_LZO | FLAG_SNAPPY | FLAG_ZSTD) {
            0 => data.to_vec(),
            FLAG_ZLIB => {
                // One more byte than a page: a longer stream shows as one.
                let mut out = vec![0; block + 1];
                self.zlib.init();
                let flags = TINFL_FLAG_PARSE_ZLIB_HEADER | TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
                let (status, _, n) = inflate(&mut self.zlib, data, &mut out, 0, flags);
                match status {
                    TINFLStatus::Done | TINFLStatus::HasMoreOutput => out.truncate(n),
                    TINFLStatus::NeedsMoreInput => {
                        return Err(Error::Stream {
                            codec: "zlib",
                            error: std::io::ErrorKind::UnexpectedEof.into(),
                        })
                    }
                    bad => {
                        return Err(Error::Stream {
                            codec: "zlib",
                            error: std::io::Error::new(
                                std::io::ErrorKind::InvalidData,
                                format!("{bad:?}"),
                            ),
                        })
                    }
                }
                out
            }
            FLAG_LZO => crate::lzo::decompress(data, block).map_err(Error::Lzo)?,
            FLAG_SNAPPY => {
                let n = snap::raw::decompress_len(data).map_err(Error::Snappy)?;
                if n != block {
                    return Err(Error::SnappyLength {
                        got: n,
                        expected: block,
                    });
                }
                snap::raw::Decoder::new()
                    .decompress_vec(data)
                    .map_err(Error::Snappy)?
            }
            FLAG_ZSTD => {
                let mut out = Vec::with_capacity(block);
                let mut dec = ruzstd::decoding::StreamingDecoder::new(data).map_err(Error::Zstd)?;
                (&mut dec)
                    .take(block as u64 + 1)
                    .read_to_end(&mut out)
                    .map_err(stream("zstd"))?;
                out
            }
            other => return Err(Error::Codecs(other)),
        };
        if out.len() != block {
            return Err(Error::PageLength {
                got: out.len(),
                expected: block,
            });
        }
        Ok(out)
    }
}

impl Dump for KdumpFile {
    fn format(&self) -> &'static str {
        if self.raw.flat.is_some() {
            "kdump-compressed (flattened)"
        } else {
            "kdump-compressed"
        }
    }

    fn read_phys(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        let mut done = 0usize;
        while done < buf.len() {
            let a = addr.wrapping_add(done as u64);
            let page = self.page(a / self.block_size)?;
            let off = (a % self.block_size) as usize;
            let n = (self.block_size as usize - off).min(buf.len() - done);
            let src = page.get(off..off + n).ok_or(Error::PhysMissing(a))?;
            buf[done..done + n].copy_from_slice(src);
            done += n;
        }
        Ok(())
    }

    fn notes(&self) -> &[Note] {
        &self.notes
    }

    fn vmcoreinfo(&self) -> Option<&[u8]> {
        self.vmcoreinfo.as_deref().or_else(|| {
            self.notes
                .iter()
                .find(|n| n.name == "VMCOREINFO")
                .map(|n| &n.desc[..])
        })
    }

    fn phys_base(&self) -> Option<u64> {
        Some(self.phys_base)
    }
}

/// A page codec of kdump-compressed dumps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// zlib ([`FLAG_ZLIB`]), makedumpfile `-c`.
    Zlib,
    /// LZO1X ([`FLAG_LZO`]), makedumpfile `-l`.
    Lzo,
    /// snappy ([`FLAG_SNAPPY`]), makedumpfile `-p`.
    Snappy,
    /// zstd ([`FLAG_ZSTD`]), makedumpfile `-z`.
    Zstd,
}

impl Codec {
    /// The page descriptor flag that names this codec.
    pub fn flag(self) -> u32 {
        match self {
            Codec::Zlib => FLAG_ZLIB,
            Codec::Lzo => FLAG_LZO,
            Codec::Snappy => FLAG_SNAPPY,
            Codec::Zstd => FLAG_ZSTD,
        }
    }

    /// Compresses one page.
    pub fn compress(self, page: &[u8]) -> Result<Vec<u8>> {
        let io = |error: std::io::Error| Error::Stream {
            codec: "zlib",
            error,
        };
        match self {
            Codec::Zlib => {
                use std::io::Write;
                let mut e =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(page).map_err(io)?;
                e.finish().map_err(io)
            }
            Codec::Lzo => lzokay_native::compress(page).map_err(Error::LzoCompress),
            Codec::Snappy => snap::raw::Encoder::new()
                .compress_vec(page)
                .map_err(Error::Snappy),
            Codec::Zstd => Ok(ruzstd::encoding::compress_to_vec(
                page,
                ruzstd::encoding::CompressionLevel::Fastest,
            )),
        }
    }
}

impl KdumpFile {
    /// Writes this dump as a plain (not flattened) kdump-compressed file
    /// whose pages are stored with `codec` (raw where it does not shrink a
    /// page, as makedumpfile does). Headers, notes and bitmaps are copied as
    /// they are: they all lie before the page descriptors, whose count does
    /// not change. Pages that shared stored data still share it.
    pub fn write_recompressed(&self, codec: Codec, out: &mut dyn std::io::Write) -> Result<()> {
        let io = |error: std::io::Error| Error::Io {
            path: "<output>".into(),
            error,
        };
        let mut head = self.raw.vec("dump headers", 0, self.descs_at)?;
        // disk_dump_header.status: which codec the pages use.
        if let Some(status) = head.get_mut(424..428) {
            status.copy_from_slice(&codec.flag().to_le_bytes());
        }
        let pfns: Vec<u64> = (0..self.max_mapnr)
            .filter(|&p| self.dumped.get(p))
            .collect();
        let mut data_at = self.descs_at + pfns.len() as u64 * PAGE_DESC_LEN;
        let mut descs = Vec::with_capacity(pfns.len() * PAGE_DESC_LEN as usize);
        let mut data = Vec::new();
        let mut done: HashMap<u64, (u64, u32, u32)> = HashMap::new();
        let mut decoder = PageDecoder::new();
        for &pfn in &pfns {
            let Some(d) = self.page_desc(pfn)? else {
                continue;
            };
            let (off, size, flags) = match done.get(&d.offset) {
                Some(&v) => v,
                None => {
                    let stored = self.page_data(&d)?;
                    let bad = |e: Error| Error::BadPage {
                        paddr: pfn * self.block_size,
                        offset: d.offset,
                        error: Box::new(e),
                    };
                    let page = decoder
                        .decompress(&stored, d.flags, self.block_size as usize)
                        .map_err(bad)?;
                    let packed = codec
                        .compress(&page)
                        .map_err(|e| bad(Error::Compressing { error: Box::new(e) }))?;
                    let (bytes, flags) = if packed.len() < page.len() {
                        (packed, codec.flag())
                    } else {
                        (page, 0)
                    };
                    let v = (data_at, bytes.len() as u32, flags);
                    data_at += bytes.len() as u64;
                    data.extend_from_slice(&bytes);
                    done.insert(d.offset, v);
                    v
                }
            };
            descs.extend_from_slice(&off.to_le_bytes());
            descs.extend_from_slice(&size.to_le_bytes());
            descs.extend_from_slice(&flags.to_le_bytes());
            descs.extend_from_slice(&0u64.to_le_bytes());
        }
        out.write_all(&head).map_err(io)?;
        out.write_all(&descs).map_err(io)?;
        out.write_all(&data).map_err(io)?;
        Ok(())
    }
}
