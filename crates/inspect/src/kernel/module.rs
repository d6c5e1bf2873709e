//! Loaded modules, read from memory like the kernel's own `modules` list
//! (kernel/module/main.c): each `struct module` with its name, state,
//! where its core memory is, whether the kernel holds BTF for it, and its
//! symbols from `mod->kallsyms` (what /proc/kallsyms shows for modules).
//!
//! Layouts differ by version and come from the BTF, never hard-coded:
//! up to 6.3 a module's memory is `core_layout` (base, size); from 6.4 it
//! is `mem[MOD_MEM_NUM_TYPES]` (`struct module_memory`), of which the core
//! kinds (text, data, rodata, ro_after_init) add up to the size shown and
//! `mem[MOD_TEXT].base` is the base, as crash shows it.

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::kernel::list;
use crate::kernel::structs::{self, Struct};
use crate::program::Program;

/// More modules than any kernel loads: a longer list is corrupt.
const MAX_MODULES: usize = 1 << 16;
/// More symbols than one module has.
const MAX_SYMBOLS: u64 = 1 << 20;
/// MODULE_NAME_LEN on 64-bit kernels; the BTF's array length wins.
const NAME_LEN: usize = 56;
const ELF64_SYM_SIZE: u64 = 24;
/// The core kinds of `enum mod_mem_type` (6.4+), by enumerator name.
const CORE_MEM: &[&str] = &["MOD_TEXT", "MOD_DATA", "MOD_RODATA", "MOD_RO_AFTER_INIT"];

/// One loaded module, as read from its `struct module`.
#[derive(Clone, Debug)]
pub struct Module {
    /// The `struct module`.
    pub addr: u64,
    /// Its name (`mod->name`).
    pub name: String,
    /// `enum module_state`'s name (MODULE_STATE_LIVE...), or its number.
    pub state: String,
    /// Where its core memory starts: `core_layout.base`, or from 6.4
    /// `mem[MOD_TEXT].base` (a kernel virtual address).
    pub base: u64,
    /// Its core memory's size in bytes: `core_layout.size`, or from 6.4 the
    /// sum of the core kinds' sizes.
    pub size: u64,
    /// `mod->kallsyms` (a `struct mod_kallsyms *`).
    pub kallsyms: u64,
    /// The module's BTF as the kernel holds it (from `btf_modules`).
    pub btf: Option<ModuleBtf>,
    /// What could not be read of this module (the rest is shown).
    pub problem: Option<String>,
}

/// A module's BTF in kernel memory: `struct btf`'s raw data (header,
/// types, strings: split BTF over vmlinux).
#[derive(Clone, Copy, Debug)]
pub struct ModuleBtf {
    /// The `struct btf`.
    pub addr: u64,
    /// `btf->data`: where the raw BTF is.
    pub data: u64,
    /// `btf->data_size`: its size in bytes.
    pub size: u32,
}

/// Every module, and why the walk stopped early if it did.
pub struct Modules {
    /// The modules, in list order (newest first).
    pub modules: Vec<Module>,
    /// Why the list walk stopped before its end (None: it did not).
    pub stopped: Option<String>,
}

/// The address of a kernel-image variable: kallsyms, else the BTF's VAR.
fn variable(prog: &Program, name: &str) -> Result<u64> {
    prog.symbol(name)
        .or_else(|| prog.var(name).map(|v| v.addr))
        .ok_or_else(|| Error::NoSymbol(name.to_owned()))
}

/// The modules on the kernel's `modules` list, in its order (newest first),
/// as drgn's `for_each_module` gives them.
pub fn for_each_module(prog: &Program) -> Result<Modules> {
    let head = variable(prog, "modules")?;
    let m = Struct::find(prog, "struct module")?;
    let list_off = m.offset("list")?;
    let name_off = m.offset("name")?;
    let state_off = m.offset("state")?;
    let kallsyms_off = m.offset("kallsyms")?;
    // (base, size) offsets of each core memory kind.
    let kinds: Vec<(u64, u64)> = if m.has("core_layout") {
        vec![(m.offset("core_layout.base")?, m.offset("core_layout.size")?)]
    } else {
        CORE_MEM
            .iter()
            .filter_map(|k| prog.enumerators.get(*k).map(|&(v, _)| v))
            .map(|i| {
                Ok((
                    m.offset(&format!("mem[{i}].base"))?,
                    m.offset(&format!("mem[{i}].size"))?,
                ))
            })
            .collect::<Result<_>>()?
    };
    let base_off = kinds
        .first()
        .ok_or_else(|| Error::NoMember {
            ty: "struct module".into(),
            member: "core_layout or mem[MOD_TEXT]".into(),
        })?
        .0;
    let states = enum_names(prog, "enum module_state");
    let btfs = module_btfs(prog).unwrap_or_default();
    let walk = list::walk(prog.memory(), head, MAX_MODULES);
    let size = usize::try_from(m.size()).unwrap_or(0);
    let mut modules = Vec::with_capacity(walk.nodes.len());
    for node in walk.nodes {
        let addr = node.wrapping_sub(list_off);
        let mut module = Module {
            addr,
            name: String::new(),
            state: String::new(),
            base: 0,
            size: 0,
            kallsyms: 0,
            btf: btfs.get(&addr).copied(),
            problem: None,
        };
        match structs::read(prog.memory(), "struct module", addr, size) {
            Ok(b) => {
                module.name = structs::cstr(&b, name_off, NAME_LEN);
                let st = structs::field(&b, state_off, 4);
                module.state = states.get(&st).cloned().unwrap_or_else(|| st.to_string());
                module.base = structs::field(&b, base_off, 8);
                module.size = kinds
                    .iter()
                    .map(|&(_, o)| structs::field(&b, o, 4))
                    .fold(0u64, u64::wrapping_add);
                module.kallsyms = structs::field(&b, kallsyms_off, 8);
            }
            Err(e) => module.problem = Some(e.to_string()),
        }
        modules.push(module);
    }
    Ok(Modules {
        modules,
        stopped: walk.stopped,
    })
}

/// An enum's enumerators by value.
fn enum_names(prog: &Program, name: &str) -> FxHashMap<u64, String> {
    let mut out = FxHashMap::default();
    let Some(&id) = prog.types.get(name) else {
        return out;
    };
    if let Some(btf::TypeData::Enum { values, .. }) = prog.btf.resolved_data(id) {
        for v in values {
            if let Ok(n) = prog.btf.str_at(v.name_off) {
                out.insert(u64::from(v.val), n.to_owned());
            }
        }
    }
    out
}

/// The kernel's `btf_modules` list (kernel/bpf/btf.c): per module with
/// BTF, its `struct btf`, by the address of its `struct module`. Empty
/// when the kernel has no module BTF (no CONFIG_DEBUG_INFO_BTF_MODULES).
pub fn module_btfs(prog: &Program) -> Result<FxHashMap<u64, ModuleBtf>> {
    let head = variable(prog, "btf_modules")?;
    let bm = Struct::find(prog, "struct btf_module")?;
    let b = Struct::find(prog, "struct btf")?;
    let (list_off, module_off, btf_off) =
        (bm.offset("list")?, bm.offset("module")?, bm.offset("btf")?);
    let (data_off, size_off) = (b.offset("data")?, b.offset("data_size")?);
    let mem = prog.memory();
    let mut out = FxHashMap::default();
    for node in list::walk(mem, head, MAX_MODULES).nodes {
        let entry = node.wrapping_sub(list_off);
        let (Ok(module), Ok(btf)) = (
            mem.read_u64(entry.wrapping_add(module_off)),
            mem.read_u64(entry.wrapping_add(btf_off)),
        ) else {
            continue;
        };
        let (Ok(data), Ok(size)) = (
            mem.read_u64(btf.wrapping_add(data_off)),
            mem.read_u32(btf.wrapping_add(size_off)),
        ) else {
            continue;
        };
        out.insert(
            module,
            ModuleBtf {
                addr: btf,
                data,
                size,
            },
        );
    }
    Ok(out)
}

/// One symbol of a module, as /proc/kallsyms lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModSymbol {
    /// Its address (`st_value`): a kernel virtual address.
    pub addr: u64,
    /// Its size in bytes (`st_size`).
    pub size: u64,
    /// Its nm type letter from `typetab` (`t`, `T`, `d`...; `t` when the
    /// table does not say).
    pub type_char: u8,
    /// Its name.
    pub name: String,
}

/// A module's symbols from `mod->kallsyms`: `symtab[num_symtab]`
/// (Elf64_Sym), names in `strtab`, nm type letters in `typetab`. Like the
/// kernel's kallsyms, symbols without a name are left out.
pub fn module_symbols(prog: &Program, module: &Module) -> Result<Vec<ModSymbol>> {
    let k = Struct::find(prog, "struct mod_kallsyms")?;
    let mem = prog.memory();
    let raw = structs::read(
        mem,
        "struct mod_kallsyms",
        module.kallsyms,
        usize::try_from(k.size()).unwrap_or(0),
    )?;
    let symtab = structs::field(&raw, k.offset("symtab")?, 8);
    let num = structs::field(&raw, k.offset("num_symtab")?, 4);
    let strtab = structs::field(&raw, k.offset("strtab")?, 8);
    let typetab = if k.has("typetab") {
        Some(structs::field(&raw, k.offset("typetab")?, 8))
    } else {
        None
    };
    if num > MAX_SYMBOLS {
        return Err(Error::Corrupt(format!(
            "module {}: mod_kallsyms at {:#x} says {num} symbols",
            module.name, module.kallsyms
        )));
    }
    let n = num as usize;
    let syms = structs::read(mem, "module symtab", symtab, n * ELF64_SYM_SIZE as usize)?;
    let types = match typetab {
        Some(t) => structs::read(mem, "module typetab", t, n)?,
        None => Vec::new(),
    };
    let mut out = Vec::with_capacity(n);
    for (i, s) in syms.chunks_exact(ELF64_SYM_SIZE as usize).enumerate() {
        let st_name = structs::field(s, 0, 4);
        if st_name == 0 {
            continue;
        }
        let name = mem
            .read_cstr(strtab.wrapping_add(st_name), 512)
            .map_err(|error| Error::Read {
                what: format!("module {} symbol name", module.name),
                addr: strtab.wrapping_add(st_name),
                error,
            })?;
        if name.is_empty() {
            continue;
        }
        out.push(ModSymbol {
            addr: structs::field(s, 8, 8),
            size: structs::field(s, 16, 8),
            type_char: types.get(i).copied().unwrap_or(b't'),
            name: String::from_utf8_lossy(&name).into_owned(),
        });
    }
    Ok(out)
}

/// The module whose core memory holds `addr`.
pub fn module_of(modules: &[Module], addr: u64) -> Option<&Module> {
    modules
        .iter()
        .find(|m| addr >= m.base && addr - m.base < m.size)
}

/// Adds the modules' symbols from memory to the program's symbol table
/// (which then knows the kernel image's `base` plus these), unless `base`
/// has module symbols already (a live /proc/kallsyms). Returns what could
/// not be read.
pub fn load_symbols(prog: &mut Program, mut base: ksyms::Symbols) -> Vec<String> {
    let has_modules = prog
        .syms
        .modules()
        .iter()
        .any(|m| !ksyms::table::is_pseudo_module(m));
    if has_modules {
        return Vec::new();
    }
    let mods = match for_each_module(prog) {
        Ok(m) => m,
        Err(e) => return vec![format!("modules: {e}")],
    };
    let mut problems: Vec<String> = mods
        .stopped
        .iter()
        .map(|s| format!("module list: {s}"))
        .collect();
    let mut added = 0;
    for m in mods.modules.iter().filter(|m| m.problem.is_none()) {
        match module_symbols(prog, m) {
            Ok(syms) => {
                for s in &syms {
                    base.push_module_symbol(&m.name, s.addr, s.size, s.type_char, &s.name);
                }
                added += syms.len();
            }
            Err(e) => problems.push(format!("module {}: {e}", m.name)),
        }
    }
    if added > 0 {
        prog.syms = ksyms::Table::new(base);
    }
    problems
}
