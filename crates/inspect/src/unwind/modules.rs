//! The loaded modules' text and ORC tables: what the unwinder needs of
//! each module that [`crate::kernel::module`]'s bounded walk finds.

use crate::kernel::module::for_each_module;
use crate::program::Program;

/// One module's text and ORC tables, as `struct module` gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleText {
    /// The module's name.
    pub name: String,
    /// Where its text starts: `core_layout.base`, or from 6.4
    /// `mem[MOD_TEXT].base`.
    pub base: u64,
    /// Its text's size in bytes (`core_layout.text_size`, or
    /// `mem[MOD_TEXT].size`).
    pub size: u64,
    /// `mod->arch.orc_unwind_ip`: its array of relative ip entries.
    pub orc_ip: u64,
    /// `mod->arch.orc_unwind`: its array of `struct orc_entry`.
    pub orc_entries: u64,
    /// `mod->arch.num_orcs`: how many entries each array has.
    pub num_orcs: u64,
}

impl ModuleText {
    /// Whether `addr` is in the module's text.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr - self.base < self.size
    }
}

/// Every module on the `modules` list (the walk of
/// [`crate::kernel::module::for_each_module`]) with its text and ORC
/// tables, and why the walk stopped early, if it did.
pub fn read(prog: &Program) -> (Vec<ModuleText>, Option<String>) {
    let mut out = Vec::new();
    let off = |path: &str| prog.member_offset("struct module", path).map(|(o, _)| o);
    // 6.4 replaced core_layout with mem[MOD_TEXT].
    let text = off("core_layout.base")
        .zip(off("core_layout.text_size"))
        .or_else(|| off("mem[0].base").zip(off("mem[0].size")));
    let (Some((base, size)), Some(ip), Some(entries), Some(num)) = (
        text,
        off("arch.orc_unwind_ip"),
        off("arch.orc_unwind"),
        off("arch.num_orcs"),
    ) else {
        return (
            out,
            Some("the BTF's struct module lacks a member the unwinder needs".into()),
        );
    };
    let list = match for_each_module(prog) {
        Ok(l) => l,
        Err(e) => return (out, Some(format!("module list: {e}"))),
    };
    let mem = prog.memory();
    for module in list.modules {
        let m = module.addr;
        let read = |o: u64| mem.read_u64(m.wrapping_add(o));
        let fields = (|| -> kmem::Result<ModuleText> {
            Ok(ModuleText {
                name: module.name.clone(),
                base: read(base)?,
                size: u64::from(mem.read_u32(m.wrapping_add(size))?),
                orc_ip: read(ip)?,
                orc_entries: read(entries)?,
                num_orcs: u64::from(mem.read_u32(m.wrapping_add(num))?),
            })
        })();
        match fields {
            Ok(t) => out.push(t),
            Err(e) => return (out, Some(format!("module at {m:#x}: {e}"))),
        }
    }
    (out, list.stopped)
}
