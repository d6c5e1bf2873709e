//! Kernel memory: read a live kernel (/proc/kcore) or a crash dump (ELF
//! vmcore, kdump-compressed, flattened) through one [`Memory`] interface,
//! with x86-64 address translation, VMCOREINFO, the kernel's own kallsyms
//! tables and its BTF read from memory. No DWARF anywhere.
//!
//! Layers: a [`Dump`] is a file that holds physical memory (and maybe
//! virtual segments and notes); a [`Kernel`] puts a dump together with what
//! VMCOREINFO says (KASLR offset, phys_base, page tables) and is the
//! [`Memory`] the rest of btfkit reads.
//!
//! Addresses are explicit about their space: [`Memory::read_phys`] takes a
//! physical address, everything else a kernel virtual address; offsets into
//! dump files are file offsets in bytes, and every error says which of these
//! it names. Only x86-64 dumps are read.
//!
//! # Example
//!
//! Open a crash dump (or the running kernel with [`Kernel::live`], as root),
//! find a symbol with the kernel's own kallsyms tables and read memory there:
//!
//! ```no_run
//! use std::path::Path;
//!
//! use kmem::{kallsyms, Kernel, Memory};
//!
//! let kernel = Kernel::open(Path::new("vmcore"))?;
//! println!("{}", kernel.vmcoreinfo().osrelease().unwrap_or("?"));
//!
//! let tables = kallsyms::Tables::from_vmcoreinfo(kernel.vmcoreinfo())?;
//! let symbols = kallsyms::read(&kernel, &tables)?;
//! let addr_of = |name: &str| symbols.iter().find(|s| s.name == name).map(|s| s.addr);
//! if let Some(jiffies) = addr_of("jiffies_64") {
//!     println!("jiffies_64 = {}", kernel.read_u64(jiffies)?);
//! }
//!
//! // The kernel's BTF, from its memory: no vmlinux needed.
//! if let (Some(start), Some(stop)) = (addr_of("__start_BTF"), addr_of("__stop_BTF")) {
//!     let btf = kmem::btf::read(&kernel, start, stop)?;
//!     println!("{} types", btf.type_count());
//! }
//! # Ok::<(), kmem::Error>(())
//! ```
//!
//! VMCOREINFO parses on its own:
//!
//! ```
//! let info = kmem::VmcoreInfo::parse(b"OSRELEASE=6.1.0-28-amd64\nSYMBOL(init_top_pgt)=ffffffff8de0a000\n");
//! assert_eq!(info.osrelease(), Some("6.1.0-28-amd64"));
//! assert_eq!(info.symbol("init_top_pgt"), Some(0xffffffff8de0a000));
//! ```

#![warn(missing_docs)]

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
    /// The owner name without its NUL (`CORE`, `VMCOREINFO`, `QEMU`).
    pub name: String,
    /// The note type (`n_type`), e.g. [`prstatus::NT_PRSTATUS`].
    pub ntype: u32,
    /// The descriptor bytes, as the file holds them.
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
    /// The dump's ELF notes, in file order (kdump files keep theirs in the
    /// sub-header).
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
/// Virtual addresses are the kernel's (x86-64, little-endian).
pub trait Memory {
    /// Fills `buf` from physical address `addr`; [`Error::PhysMissing`] or
    /// [`Error::PhysExcluded`] when the dump lacks a byte of it.
    fn read_phys(&self, addr: u64, buf: &mut [u8]) -> Result<()>;
    /// Errors name `addr` (unmapped, or its page missing from the dump).
    fn read_virt(&self, addr: u64, buf: &mut [u8]) -> Result<()>;
    /// The dump's ELF notes (none for memory without a dump behind it).
    fn notes(&self) -> &[Note] {
        &[]
    }

    /// The little-endian `u64` at virtual address `addr`.
    fn read_u64(&self, addr: u64) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read_virt(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    /// The little-endian `u32` at virtual address `addr`.
    fn read_u32(&self, addr: u64) -> Result<u32> {
        let mut b = [0u8; 4];
        self.read_virt(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    /// `len` bytes from virtual address `addr`.
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
