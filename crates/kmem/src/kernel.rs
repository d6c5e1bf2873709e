//! A kernel's memory: a [`Dump`] plus what VMCOREINFO says about its layout.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::vmcoreinfo::{parse_sysfs, VmcoreInfo};
use crate::x86_64::X86_64;
use crate::{open_dump, Dump, Memory};

/// The live kernel's memory image.
pub const PROC_KCORE: &str = "/proc/kcore";
/// Where the running kernel says its VMCOREINFO note is.
pub const SYS_VMCOREINFO: &str = "/sys/kernel/vmcoreinfo";

/// A kernel's memory, read by kernel virtual address: a [`Dump`], its
/// VMCOREINFO and the page tables they locate. Translations are cached.
pub struct Kernel {
    dump: Box<dyn Dump>,
    info: VmcoreInfo,
    mmu: X86_64,
    path: PathBuf,
    /// Virtual page -> physical page, filled by page-table walks.
    tlb: Mutex<HashMap<u64, u64>>,
}

impl Kernel {
    /// Opens a dump file and reads its VMCOREINFO.
    pub fn open(path: &Path) -> Result<Kernel> {
        let dump = open_dump(path)?;
        Kernel::new(dump, path, None).map_err(|e| e.in_file(path))
    }

    /// The running kernel through /proc/kcore. Its VMCOREINFO note, or
    /// /sys/kernel/vmcoreinfo when the note is missing.
    pub fn live() -> Result<Kernel> {
        let path = Path::new(PROC_KCORE);
        let dump = open_dump(path)?;
        let mut sysfs = None;
        if dump.vmcoreinfo().is_none() {
            let text = std::fs::read_to_string(SYS_VMCOREINFO).map_err(|error| Error::Io {
                path: SYS_VMCOREINFO.into(),
                error,
            })?;
            let (addr, size) = parse_sysfs(&text).ok_or_else(|| {
                Error::Vmcoreinfo(format!("{SYS_VMCOREINFO}: cannot read {text:?}"))
            })?;
            sysfs = Some(note_at(&*dump, addr, size)?);
        }
        Kernel::new(dump, path, sysfs.as_deref()).map_err(|e| e.in_file(path))
    }

    /// A dump whose file has no VMCOREINFO (QEMU's `dump-guest-memory`
    /// without the guest's qemu_fw_cfg module), with the physical address
    /// and size of the kernel's VMCOREINFO note as the guest's
    /// /sys/kernel/vmcoreinfo gave them.
    pub fn open_with_note(path: &Path, addr: u64, size: u64) -> Result<Kernel> {
        let dump = open_dump(path)?;
        let note = note_at(&*dump, addr, size).map_err(|e| e.in_file(path))?;
        Kernel::new(dump, path, Some(&note)).map_err(|e| e.in_file(path))
    }

    /// A kernel over `dump`; `vmcoreinfo` overrides the dump's own.
    pub fn new(dump: Box<dyn Dump>, path: &Path, vmcoreinfo: Option<&[u8]>) -> Result<Kernel> {
        let raw = vmcoreinfo.or_else(|| dump.vmcoreinfo()).ok_or_else(|| {
            Error::Vmcoreinfo(format!(
                "the {} dump has no VMCOREINFO (QEMU needs -device vmcoreinfo and the guest's qemu_fw_cfg module)",
                dump.format()
            ))
        })?;
        let info = VmcoreInfo::parse(raw);
        let phys_base = match info.number("phys_base") {
            Some(n) => n as u64,
            None => dump.phys_base().unwrap_or(0),
        };
        let top = info
            .symbol("init_top_pgt")
            .or_else(|| info.symbol("swapper_pg_dir"))
            .ok_or_else(|| {
                Error::Vmcoreinfo("no SYMBOL(init_top_pgt) or SYMBOL(swapper_pg_dir)".into())
            })?;
        let mut mmu = X86_64 {
            pgd: 0,
            phys_base,
            five_level: info.number("pgtable_l5_enabled") == Some(1),
        };
        mmu.pgd = mmu.kernel_image(top).ok_or_else(|| {
            Error::Vmcoreinfo(format!("init_top_pgt {top:#x} is outside the kernel image"))
        })?;
        Ok(Kernel {
            dump,
            info,
            mmu,
            path: path.to_owned(),
            tlb: Mutex::new(HashMap::new()),
        })
    }

    /// The VMCOREINFO in use (the dump's, or the one given to [`Kernel::new`]).
    pub fn vmcoreinfo(&self) -> &VmcoreInfo {
        &self.info
    }

    /// The dump file underneath.
    pub fn dump(&self) -> &dyn Dump {
        &*self.dump
    }

    /// The dump's path ([`PROC_KCORE`] for the live kernel).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The physical address of a kernel virtual address.
    pub fn translate(&self, vaddr: u64) -> Result<u64> {
        if let Some(p) = self.mmu.kernel_image(vaddr) {
            return Ok(p);
        }
        let page = vaddr & !0xfff;
        if let Some(&p) = self
            .tlb
            .lock()
            .ok()
            .and_then(|t| t.get(&page).copied())
            .as_ref()
        {
            return Ok(p | (vaddr & 0xfff));
        }
        let read = |pa: u64| {
            let mut b = [0u8; 8];
            self.dump.read_phys(pa, &mut b)?;
            Ok(u64::from_le_bytes(b))
        };
        let p = self.mmu.walk(vaddr, &read)?;
        if let Ok(mut t) = self.tlb.lock() {
            t.insert(page, p & !0xfff);
        }
        Ok(p)
    }
}

/// The VMCOREINFO text of the ELF note at physical `addr`.
fn note_at(dump: &dyn Dump, addr: u64, size: u64) -> Result<Vec<u8>> {
    // VMCOREINFO_NOTE_SIZE is a note header plus one page of text.
    if size > 0x10000 {
        return Err(Error::Vmcoreinfo(format!(
            "a VMCOREINFO note of {size} bytes at {addr:#x}"
        )));
    }
    let mut note = vec![0; size as usize];
    dump.read_phys(addr, &mut note)?;
    let mut notes = Vec::new();
    crate::elf::parse_notes(&note, addr, &mut notes)?;
    notes
        .into_iter()
        .find(|n| n.name == "VMCOREINFO")
        .map(|n| n.desc)
        .ok_or_else(|| Error::Vmcoreinfo(format!("no VMCOREINFO note at {addr:#x}")))
}

impl Memory for Kernel {
    fn notes(&self) -> &[crate::Note] {
        self.dump.notes()
    }

    fn read_phys(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        self.dump.read_phys(addr, buf)
    }

    fn read_virt(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        if let Some(r) = self.dump.read_virt_segment(addr, buf) {
            return r;
        }
        let mut done = 0usize;
        while done < buf.len() {
            let a = addr.wrapping_add(done as u64);
            let n = ((0x1000 - (a & 0xfff)) as usize).min(buf.len() - done);
            let pa = self.translate(a)?;
            self.dump
                .read_phys(pa, &mut buf[done..done + n])
                .map_err(|e| Error::At {
                    what: "virtual address",
                    addr: a,
                    error: Box::new(e),
                })?;
            done += n;
        }
        Ok(())
    }
}
