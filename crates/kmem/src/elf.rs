//! ELF core files: QEMU's `dump-guest-memory` (no `format`), kdump's
//! /proc/vmcore copied or `makedumpfile -E`, and the live `/proc/kcore`.
//!
//! Memory is in PT_LOAD segments. Each has a physical (`p_paddr`) and a
//! virtual (`p_vaddr`) start: QEMU without paging writes `vaddr == paddr`,
//! kdump and kcore write kernel virtual addresses (kcore's non-RAM segments
//! have no physical address, `p_paddr` all ones). Bytes past `p_filesz` up
//! to `p_memsz` read as zeros (kcore and makedumpfile leave them out).

use crate::error::{Error, Result};
use crate::file::{u16_at, u32_at, u64_at, Bytes};
use crate::{Dump, Note};

const PT_LOAD: u32 = 1;
const PT_NOTE: u32 = 4;
const PN_XNUM: u16 = 0xffff;
const PHDR_LEN: u64 = 56;
/// Virtual addresses at or above this are the kernel's half of the space.
const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;

#[derive(Clone, Copy, Debug)]
struct Segment {
    offset: u64,
    vaddr: u64,
    paddr: u64,
    filesz: u64,
    memsz: u64,
}

/// An ELF core file: its PT_LOAD segments, indexed by physical and by
/// virtual address, and its notes.
pub struct ElfDump {
    bytes: Bytes,
    /// Sorted by `paddr`, only segments with a physical address.
    by_paddr: Vec<Segment>,
    /// Sorted by `vaddr`, only segments in the kernel half.
    by_vaddr: Vec<Segment>,
    notes: Vec<Note>,
}

/// Where the program headers are and how many: the ELF header read and
/// checked (a 64-bit little-endian ET_CORE file), and section 0 when the
/// count is more than `e_phnum` holds.
fn program_header_table(bytes: &Bytes) -> Result<(u64, u64)> {
    let mut ehdr = [0u8; 64];
    bytes.read_at("ELF header", 0, &mut ehdr)?;
    if &ehdr[..4] != b"\x7fELF" {
        return Err(Error::UnknownFormat("no ELF magic".into()));
    }
    // Page tables, registers and the kernel's address map are the
    // architecture's: a core of one without a description is refused by
    // name, never walked with x86-64's rules.
    let little = ehdr[5] != 2;
    let machine = [ehdr[18], ehdr[19]];
    let machine = if little {
        u16::from_le_bytes(machine)
    } else {
        u16::from_be_bytes(machine)
    };
    arch::Arch::of_elf(machine, ehdr[4] == 2, little).map_err(Error::Architecture)?;
    let e_type = u16_at(&ehdr, 16).unwrap_or(0);
    if e_type != 4 {
        return Err(Error::corrupt(
            "ELF header",
            16,
            format!("e_type {e_type} is not ET_CORE"),
        ));
    }
    let phoff = u64_at(&ehdr, 0x20).unwrap_or(0);
    let shoff = u64_at(&ehdr, 0x28).unwrap_or(0);
    let phentsize = u16_at(&ehdr, 0x36).unwrap_or(0);
    let mut phnum = u64::from(u16_at(&ehdr, 0x38).unwrap_or(0));
    if phentsize as u64 != PHDR_LEN {
        return Err(Error::corrupt(
            "ELF header",
            0x36,
            format!("e_phentsize {phentsize}, expected {PHDR_LEN}"),
        ));
    }
    if phnum == u64::from(PN_XNUM) {
        // More segments than e_phnum holds: the count is section 0's sh_info.
        let mut shdr = [0u8; 64];
        bytes.read_at("section header 0", shoff, &mut shdr)?;
        phnum = u64::from(u32_at(&shdr, 0x2c).unwrap_or(0));
    }
    Ok((phoff, phnum))
}

impl ElfDump {
    /// Reads the ELF header, the program headers and the notes.
    /// [`Error::UnknownFormat`] without the ELF magic; [`Error::Corrupt`], at
    /// the field's file offset, for anything but a 64-bit little-endian
    /// ET_CORE file or for a bad program header; [`Error::Truncated`] when a
    /// header runs past the end of the file.
    pub fn parse(bytes: Bytes) -> Result<ElfDump> {
        let (phoff, phnum) = program_header_table(&bytes)?;
        let table_len = phnum
            .checked_mul(PHDR_LEN)
            .ok_or_else(|| Error::corrupt("program headers", phoff, "count overflows"))?;
        let table = bytes.slice("program headers", phoff, table_len)?;
        let mut by_paddr = Vec::new();
        let mut by_vaddr = Vec::new();
        let mut notes = Vec::new();
        for i in 0..phnum as usize {
            let p = &table[i * PHDR_LEN as usize..(i + 1) * PHDR_LEN as usize];
            let field = |o| u64_at(p, o).unwrap_or(0);
            let p_type = u32_at(p, 0).unwrap_or(0);
            let seg = Segment {
                offset: field(8),
                vaddr: field(16),
                paddr: field(24),
                filesz: field(32),
                memsz: field(40),
            };
            let at = phoff + i as u64 * PHDR_LEN;
            if p_type == PT_LOAD && seg.filesz > seg.memsz {
                return Err(Error::corrupt(
                    "program header",
                    at,
                    format!("p_filesz {:#x} > p_memsz {:#x}", seg.filesz, seg.memsz),
                ));
            }
            if seg
                .offset
                .checked_add(seg.filesz)
                .is_none_or(|end| end > bytes.len())
            {
                return Err(Error::Truncated {
                    what: match p_type {
                        PT_LOAD => "PT_LOAD segment",
                        PT_NOTE => "PT_NOTE segment",
                        _ => "segment",
                    },
                    offset: seg.offset,
                    need: seg.filesz,
                    have: bytes.len().saturating_sub(seg.offset),
                });
            }
            match p_type {
                PT_LOAD => {
                    if seg.paddr != u64::MAX {
                        by_paddr.push(seg);
                    }
                    if seg.vaddr >= KERNEL_HALF {
                        by_vaddr.push(seg);
                    }
                }
                PT_NOTE => {
                    let data = bytes.slice("PT_NOTE segment", seg.offset, seg.filesz)?;
                    parse_notes(&data, seg.offset, &mut notes)?;
                }
                _ => {}
            }
        }
        by_paddr.sort_by_key(|s| s.paddr);
        by_vaddr.sort_by_key(|s| s.vaddr);
        Ok(ElfDump {
            bytes,
            by_paddr,
            by_vaddr,
            notes,
        })
    }

    /// Reads from the segments of `segs` (sorted by `start`) that cover
    /// `addr..addr+buf.len()`; false when a byte is in none.
    fn read_from(
        &self,
        segs: &[Segment],
        start: fn(&Segment) -> u64,
        addr: u64,
        buf: &mut [u8],
    ) -> Result<bool> {
        let mut done = 0usize;
        while done < buf.len() {
            let a = addr.wrapping_add(done as u64);
            let i = segs.partition_point(|s| start(s) <= a);
            let Some(seg) = i.checked_sub(1).and_then(|i| segs.get(i)) else {
                return Ok(false);
            };
            let rel = a - start(seg);
            if rel >= seg.memsz {
                return Ok(false);
            }
            let n = ((seg.memsz - rel) as usize).min(buf.len() - done);
            let out = &mut buf[done..done + n];
            if rel >= seg.filesz {
                out.fill(0);
            } else {
                let in_file = ((seg.filesz - rel) as usize).min(n);
                self.bytes
                    .read_at("segment data", seg.offset + rel, &mut out[..in_file])?;
                out[in_file..].fill(0);
            }
            done += n;
        }
        Ok(true)
    }
}

/// ELF notes: `namesz, descsz, type`, then name and descriptor, each padded to 4.
pub(crate) fn parse_notes(data: &[u8], file_offset: u64, out: &mut Vec<Note>) -> Result<()> {
    let mut pos = 0usize;
    while pos + 12 <= data.len() {
        let at = file_offset + pos as u64;
        let namesz = u32_at(data, pos).unwrap_or(0) as usize;
        let descsz = u32_at(data, pos + 4).unwrap_or(0) as usize;
        let ntype = u32_at(data, pos + 8).unwrap_or(0);
        let name_start = pos + 12;
        let desc_start = name_start.checked_add(namesz.div_ceil(4) * 4);
        let end = desc_start.and_then(|d| d.checked_add(descsz.div_ceil(4) * 4));
        let (Some(desc_start), Some(end)) = (desc_start, end) else {
            return Err(Error::corrupt("ELF note", at, "size overflows"));
        };
        let (Some(name), Some(desc)) = (
            data.get(name_start..name_start + namesz),
            data.get(desc_start..desc_start + descsz),
        ) else {
            return Err(Error::Truncated {
                what: "ELF note",
                offset: at,
                need: (end - pos) as u64,
                have: (data.len() - pos) as u64,
            });
        };
        let name = name.split(|&b| b == 0).next().unwrap_or(&[]);
        out.push(Note {
            name: String::from_utf8_lossy(name).into_owned(),
            ntype,
            desc: desc.to_vec(),
        });
        pos = end;
    }
    Ok(())
}

impl Dump for ElfDump {
    fn format(&self) -> &'static str {
        "ELF"
    }

    fn read_phys(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        if self.read_from(&self.by_paddr, |s| s.paddr, addr, buf)? {
            Ok(())
        } else {
            Err(Error::PhysMissing(addr))
        }
    }

    fn read_virt_segment(&self, addr: u64, buf: &mut [u8]) -> Option<Result<()>> {
        if self.by_vaddr.is_empty() {
            return None;
        }
        match self.read_from(&self.by_vaddr, |s| s.vaddr, addr, buf) {
            Ok(true) => Some(Ok(())),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }

    fn notes(&self) -> &[Note] {
        &self.notes
    }

    fn phys_base(&self) -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF core of one program header of type `p_type` whose bytes
    /// (0x100 of them at 0x1000) lie past the end of the 0x78-byte file.
    fn core_with_truncated(p_type: u32) -> Vec<u8> {
        let mut elf = vec![0u8; 64 + PHDR_LEN as usize];
        elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
        elf[16..18].copy_from_slice(&4u16.to_le_bytes()); // ET_CORE
        elf[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        elf[0x20..0x28].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        elf[0x36..0x38].copy_from_slice(&(PHDR_LEN as u16).to_le_bytes());
        elf[0x38..0x3a].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        let p = &mut elf[64..];
        p[..4].copy_from_slice(&p_type.to_le_bytes());
        p[8..16].copy_from_slice(&0x1000u64.to_le_bytes()); // p_offset
        p[32..40].copy_from_slice(&0x100u64.to_le_bytes()); // p_filesz
        p[40..48].copy_from_slice(&0x100u64.to_le_bytes()); // p_memsz
        elf
    }

    /// Oracle: the ELF header's own fields (readelf -h reads the same).
    #[test]
    fn a_core_of_an_architecture_without_a_description_is_refused_by_name() {
        let mut arm64 = core_with_truncated(PT_LOAD);
        arm64[18..20].copy_from_slice(&183u16.to_le_bytes()); // EM_AARCH64
        let e = ElfDump::parse(Bytes::Owned(arm64))
            .err()
            .expect("refused")
            .to_string();
        assert!(
            e.starts_with("architecture AArch64 (e_machine 183, 64-bit little-endian)"),
            "{e}"
        );
        // s390x: big-endian, its e_machine in its own byte order.
        let mut s390 = core_with_truncated(PT_LOAD);
        s390[5] = 2;
        s390[18..20].copy_from_slice(&22u16.to_be_bytes()); // EM_S390
        let e = ElfDump::parse(Bytes::Owned(s390))
            .err()
            .expect("refused")
            .to_string();
        assert!(
            e.starts_with("architecture s390x (e_machine 22, 64-bit big-endian)"),
            "{e}"
        );
    }

    #[test]
    fn a_truncated_segment_is_named_by_its_type() {
        for (p_type, name) in [(PT_NOTE, "PT_NOTE"), (PT_LOAD, "PT_LOAD")] {
            let e = ElfDump::parse(Bytes::Owned(core_with_truncated(p_type)))
                .err()
                .expect("a truncated core opens")
                .to_string();
            assert!(e.contains(name) && e.contains("0x1000"), "{name}: {e}");
        }
    }
}
