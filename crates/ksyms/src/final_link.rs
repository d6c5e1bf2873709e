//! Which code of a kernel image the kernel build's final link moves.
//!
//! The kernel's BTF step reads an image that is linked again afterwards:
//! 6.1 encodes `.tmp_vmlinux.btf` in place (`pahole -J`), 6.12
//! `.tmp_vmlinux1`, 7.x `.tmp_vmlinux1` with `--btf_encode_detached`
//! (scripts/gen-btf.sh). The final link then fills the `.BTF` output
//! section that the kernel's linker script reserves in the read-only data
//! (`BOUNDED_SECTION_BY(.BTF, _BTF)` in include/asm-generic/vmlinux.lds.h,
//! which defines `__start_BTF` and `__stop_BTF`), and puts the real kallsyms
//! tables in `.rodata`. Everything placed after them moves: the init and
//! exit text and all data, by an amount the BTF step cannot know (it
//! depends on the final `.BTF` and kallsyms sizes, rounded up to the 2 MiB
//! alignment of `.data` on x86-64). Text before `.rodata` does not move:
//! the same objects are linked in the same order there.
//!
//! Measured on the 6.1 GCC, 6.12 GCC and 6.12 clang builds of
//! scripts/kernel/build.sh: every function symbol at or above `.rodata`'s
//! start in the pre-link image (`.init.text`, `.altinstr_aux`,
//! `.exit.text`; 1,220, 1,309 and 1,556 of them) is 0x200000 higher in the
//! final vmlinux, and none below it moved. The moves keep the order of all
//! symbols (sections after the insertion point move up, never past one
//! another), so the kernel's pick for a name (the lowest address) is the
//! same instance before and after.
//!
//! A pre-link image is told apart by its own symbols: `__start_BTF ==
//! __stop_BTF` (the reserved `.BTF` is still empty). The final vmlinux,
//! Debian's included, has them apart; an image without them (a user-space
//! program, a module, a kernel whose `.BTF` is not loaded with the image)
//! has nothing inserted into its layout. This holds whatever the BTF step
//! did to the file: an in-place `-J` adds a non-allocated `.BTF` (GNU ld
//! leaves out the empty output section) or fills lld's empty allocated one
//! without moving anything, and the symbols stay equal.

use object::{Object, ObjectKind, ObjectSection, ObjectSymbol};

/// The code of a pre-link kernel image whose address the final link changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinalLink {
    /// Code at or above this address moves: the start of `.rodata` (or of
    /// the empty `.BTF`, if lower).
    moved_from: u64,
}

/// Why the BTF gives an instance in moved code no addr tag (and no FUNC
/// named after its address); `btfkit funcs` prints it.
pub const MOVED: &str = "its address is not final: the kernel build's final link inserts .BTF and kallsyms before this code (pre-link image), so no addr tag, and no FUNC unless the kernel picks its name";

impl FinalLink {
    /// Some for a pre-link kernel image (see the module documentation).
    pub fn of(obj: &object::File<'_>) -> Option<FinalLink> {
        if !matches!(obj.kind(), ObjectKind::Executable | ObjectKind::Dynamic) {
            return None;
        }
        let (mut start, mut stop) = (None, None);
        for s in obj.symbols() {
            match s.name_bytes() {
                Ok(b"__start_BTF") => start = Some(s.address()),
                Ok(b"__stop_BTF") => stop = Some(s.address()),
                _ => {}
            }
        }
        let btf = start.filter(|&a| stop == Some(a))?;
        let rodata = obj.section_by_name(".rodata").map_or(btf, |s| s.address());
        Some(FinalLink {
            moved_from: rodata.min(btf),
        })
    }

    /// Whether the final link moves code at `address`.
    pub fn moves(&self, address: u64) -> bool {
        address >= self.moved_from
    }

    /// Where moved code starts.
    pub fn moved_from(&self) -> u64 {
        self.moved_from
    }
}
