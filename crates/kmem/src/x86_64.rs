//! x86-64 virtual to physical translation.
//!
//! The kernel image is mapped at `__START_KERNEL_map` (0xffffffff80000000)
//! plus the KASLR offset, physically at `phys_base` below that: its
//! addresses translate by arithmetic. Everything else (the direct map,
//! vmalloc, modules, per-CPU areas) is found by walking the page tables
//! from the kernel's top-level table (`init_top_pgt` = `swapper_pg_dir`, or
//! the dump's CR3): 4 levels, or 5 with `pgtable_l5_enabled`; 1 GiB and
//! 2 MiB pages end the walk early (PSE bit).

use crate::error::{Error, Result};

/// `__START_KERNEL_map`: where the kernel image is mapped without KASLR.
pub const START_KERNEL_MAP: u64 = 0xffff_ffff_8000_0000;
/// The kernel image mapping is at most 1 GiB (KERNEL_IMAGE_SIZE).
const KERNEL_MAP_END: u64 = 0xffff_ffff_c000_0000;
const PRESENT: u64 = 1;
const PSE: u64 = 1 << 7;
/// Bits 12..51 of an entry: the next table's or the page's frame.
const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;

/// The translation state of an x86-64 kernel.
#[derive(Clone, Copy, Debug)]
pub struct X86_64 {
    /// Physical address of the top-level page table.
    pub pgd: u64,
    /// The physical address of `__START_KERNEL_map`: an image address
    /// translates as `vaddr - START_KERNEL_MAP + phys_base`.
    pub phys_base: u64,
    /// Five-level paging (`pgtable_l5_enabled`, LA57): the walk has a P4D level.
    pub five_level: bool,
}

impl X86_64 {
    /// The kernel image's physical address for `vaddr`, if it is in the image mapping.
    pub fn kernel_image(&self, vaddr: u64) -> Option<u64> {
        (START_KERNEL_MAP..KERNEL_MAP_END)
            .contains(&vaddr)
            .then(|| (vaddr - START_KERNEL_MAP).wrapping_add(self.phys_base))
    }

    /// Walks the page tables for `vaddr`; `read` reads 8 bytes of physical memory.
    pub fn walk(&self, vaddr: u64, read: &dyn Fn(u64) -> Result<u64>) -> Result<u64> {
        let levels: &[(u32, &str)] = if self.five_level {
            &[
                (48, "PGD"),
                (39, "P4D"),
                (30, "PUD"),
                (21, "PMD"),
                (12, "PTE"),
            ]
        } else {
            &[(39, "PGD"), (30, "PUD"), (21, "PMD"), (12, "PTE")]
        };
        let mut table = self.pgd;
        for &(shift, name) in levels {
            let index = (vaddr >> shift) & 0x1ff;
            let entry_at = table + index * 8;
            let entry = read(entry_at).map_err(|e| Error::Unmapped {
                addr: vaddr,
                reason: format!("{name} entry at physical {entry_at:#x} unreadable: {e}"),
            })?;
            if entry & PRESENT == 0 {
                return Err(Error::Unmapped {
                    addr: vaddr,
                    reason: format!("{name} entry {entry:#x} not present"),
                });
            }
            let frame = entry & ADDR_MASK;
            if shift == 12 || (matches!(shift, 21 | 30) && entry & PSE != 0) {
                let page_mask = (1u64 << shift) - 1;
                return Ok((frame & !page_mask) | (vaddr & page_mask));
            }
            table = frame;
        }
        Err(Error::Unmapped {
            addr: vaddr,
            reason: "page walk ended without a page".into(),
        })
    }
}
