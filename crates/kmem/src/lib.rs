//! Kernel memory: read a live kernel (/proc/kcore) or a crash dump (ELF
//! vmcore, kdump-compressed, flattened) through one [`Memory`] interface,
//! with x86-64 address translation, VMCOREINFO, the kernel's own kallsyms
//! tables and its BTF read from memory. No DWARF anywhere.
//!
//! Layers: a [`Dump`] is a file that holds physical memory (and maybe
//! virtual segments and notes); a [`Kernel`] puts a dump together with what
//! VMCOREINFO says (KASLR offset, phys_base, page tables) and is the
//! [`Memory`] the rest of btfkit reads.

pub mod btf;
pub mod elf;
mod error;
pub mod file;
pub mod flattened;
pub mod kallsyms;
pub mod kdump;
pub mod kernel;
mod lzo;
pub mod prstatus;
pub mod vmcoreinfo;
pub mod x86_64;

use std::path::Path;

pub use error::{Error, Result};
pub use kernel::Kernel;
pub use vmcoreinfo::VmcoreInfo;

/// One ELF note of a dump (NT_PRSTATUS per CPU, VMCOREINFO, QEMU's CPU state).
#[derive(Clone, Debug)]
pub struct Note {
    pub name: String,
    pub ntype: u32,
    pub desc: Vec<u8>,
}

/// A file that holds a machine's memory.
pub trait Dump: Send + Sync {
    /// What kind of file this is, for messages.
    fn format(&self) -> &'static str;
    /// Reads physical memory; [`Error::PhysMissing`] names the first address not in the file.
    fn read_phys(&self, addr: u64, buf: &mut [u8]) -> Result<()>;
    /// Reads kernel virtual memory from segments the file maps by virtual
    /// address (/proc/kcore, kdump's ELF): `None` when none covers `addr`.
    fn read_virt_segment(&self, _addr: u64, _buf: &mut [u8]) -> Option<Result<()>> {
        None
    }
    fn notes(&self) -> &[Note];
    /// The raw VMCOREINFO text.
    fn vmcoreinfo(&self) -> Option<&[u8]> {
        self.notes()
            .iter()
            .find(|n| n.name == "VMCOREINFO")
            .map(|n| &n.desc[..])
    }
    /// `phys_base` when the file states it (kdump's sub-header).
    fn phys_base(&self) -> Option<u64> {
        None
    }
}

/// Opens a dump of any supported format, recognised by its first bytes.
pub fn open_dump(path: &Path) -> Result<Box<dyn Dump>> {
    let bytes = file::Bytes::open(path)?;
    open_bytes(bytes).map_err(|e| e.in_file(path))
}

/// Like [`open_dump`], for bytes already in memory (fuzzing, tests).
pub fn open_bytes(bytes: file::Bytes) -> Result<Box<dyn Dump>> {
    let mut head = [0u8; 16];
    bytes.read_at("dump header", 0, &mut head)?;
    if head.starts_with(b"\x7fELF") {
        Ok(Box::new(elf::ElfDump::parse(bytes)?))
    } else if head.starts_with(kdump::SIGNATURE) || flattened::is_flattened(&head) {
        Ok(Box::new(kdump::KdumpFile::parse(bytes)?))
    } else {
        Err(Error::UnknownFormat(
            "neither ELF, kdump-compressed nor flattened".into(),
        ))
    }
}

/// Reading kernel memory by physical or virtual address.
pub trait Memory {
    fn read_phys(&self, addr: u64, buf: &mut [u8]) -> Result<()>;
    /// Errors name `addr` (unmapped, or its page missing from the dump).
    fn read_virt(&self, addr: u64, buf: &mut [u8]) -> Result<()>;
    /// The dump's ELF notes (none for memory without a dump behind it).
    fn notes(&self) -> &[Note] {
        &[]
    }

    fn read_u64(&self, addr: u64) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read_virt(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn read_u32(&self, addr: u64) -> Result<u32> {
        let mut b = [0u8; 4];
        self.read_virt(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn read_vec(&self, addr: u64, len: usize) -> Result<Vec<u8>> {
        let mut v = vec![0; len];
        self.read_virt(addr, &mut v)?;
        Ok(v)
    }
    /// A NUL-terminated string of at most `max` bytes (without the NUL).
    fn read_cstr(&self, addr: u64, max: usize) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut a = addr;
        while out.len() < max {
            // Up to the page end, so that a string ending before an unmapped page reads.
            let n = ((0x1000 - (a & 0xfff)) as usize).min(max - out.len());
            let chunk = self.read_vec(a, n)?;
            if let Some(end) = chunk.iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..end]);
                return Ok(out);
            }
            out.extend_from_slice(&chunk);
            a = a.wrapping_add(n as u64);
        }
        Ok(out)
    }
}
