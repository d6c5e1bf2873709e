//! The loaded modules' text and ORC tables, from the kernel's `modules`
//! list. Only what the unwinder needs; bounded like every list walk here
//! (a node seen twice ends it).

use rustc_hash::FxHashSet;

use crate::program::Program;

/// At most this many modules: far above any real system.
const MAX_MODULES: usize = 1 << 16;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleText {
    pub name: String,
    pub base: u64,
    pub size: u64,
    pub orc_ip: u64,
    pub orc_entries: u64,
    pub num_orcs: u64,
}

impl ModuleText {
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr - self.base < self.size
    }
}

/// Every module on the `modules` list, and why the walk stopped early, if it did.
pub fn read(prog: &Program) -> (Vec<ModuleText>, Option<String>) {
    let mut out = Vec::new();
    let Some(head) = prog.symbol("modules") else {
        return (out, Some("no modules symbol".into()));
    };
    let off = |path: &str| prog.member_offset("struct module", path).map(|(o, _)| o);
    // 6.4 replaced core_layout with mem[MOD_TEXT].
    let text = off("core_layout.base")
        .zip(off("core_layout.text_size"))
        .or_else(|| off("mem[0].base").zip(off("mem[0].size")));
    let (Some(list), Some(name), Some((base, size)), Some(ip), Some(entries), Some(num)) = (
        off("list"),
        off("name"),
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
    let mem = prog.memory();
    let mut seen = FxHashSet::default();
    let mut node = head;
    loop {
        node = match mem.read_u64(node) {
            Ok(n) => n,
            Err(e) => return (out, Some(format!("module list: {e}"))),
        };
        if node == head {
            return (out, None);
        }
        if !seen.insert(node) || seen.len() > MAX_MODULES {
            return (out, Some(format!("module list loops at {node:#x}")));
        }
        let m = node.wrapping_sub(list);
        let read = |o: u64| mem.read_u64(m.wrapping_add(o));
        let fields = (|| -> kmem::Result<ModuleText> {
            Ok(ModuleText {
                name: String::from_utf8_lossy(&mem.read_cstr(m.wrapping_add(name), 56)?)
                    .into_owned(),
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
}
