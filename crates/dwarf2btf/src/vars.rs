//! Variables: VAR types and the DATASECs that place them.
//!
//! A top-level DWARF variable with a fixed address (DW_OP_addr) becomes a
//! VAR when an ELF data symbol sits at that address, named as the symbol.
//! `--vars percpu` (pahole's behaviour) keeps those in `.data..percpu`;
//! `--vars all` keeps every section's. Invariant of the output: one DATASEC
//! per ELF section, entries sorted by offset and not overlapping (the first
//! variable at an offset wins), size = end of the last entry, as pahole.

use btf::encoder_hooks::add_own_str;
use btf::{Btf, Type, TypeData, TypeId, VarSecinfo};

use crate::convert::{UnitBuilder, UnitVar};
use crate::load::{ElfInfo, SymbolKind};
use crate::options::VarsMode;

/// BTF_VAR_STATIC and BTF_VAR_GLOBAL_ALLOCATED.
const VAR_STATIC: u32 = 0;
const VAR_GLOBAL_ALLOCATED: u32 = 1;

/// A data symbol a variable can match.
#[derive(Clone, Debug)]
struct DataSym {
    /// Address (ET_EXEC) or section offset (ET_REL).
    value: u64,
    size: u64,
    section: usize,
    name: String,
}

/// The ELF side of variable encoding, built once and shared by all units.
pub struct VarsContext {
    mode: VarsMode,
    /// Sorted by value.
    syms: Vec<DataSym>,
    /// Section index -> load address, for section-relative offsets.
    section_addr: Vec<(usize, u64)>,
    relocatable: bool,
    percpu: Option<usize>,
}

/// A variable placed in a section: a DATASEC entry to be.
#[derive(Clone, Debug)]
pub struct SecEntry {
    /// The index of the ELF section the variable's symbol is in: the
    /// DATASEC it joins is named as that section.
    pub section: usize,
    /// The VAR's id (local to its unit until the encoder remaps it).
    pub var: TypeId,
    /// Where in the section the variable starts, in bytes.
    pub offset: u32,
    /// The variable's size in bytes, the ELF symbol's (capped at `u32::MAX`).
    pub size: u32,
}

impl VarsContext {
    /// The data symbols of `info` that `mode` keeps (those of
    /// `.data..percpu`, or of every allocated section; none for
    /// [`VarsMode::None`]), with a size, sorted by address.
    pub fn new(info: &ElfInfo<'_>, mode: VarsMode) -> VarsContext {
        let percpu = info.section_by_name(".data..percpu").map(|s| s.index);
        let wanted = |section: usize| match mode {
            VarsMode::None => false,
            VarsMode::Percpu => Some(section) == percpu,
            VarsMode::All => info.section(section).is_some_and(|s| s.alloc),
        };
        let mut syms: Vec<DataSym> = info
            .symbols
            .iter()
            .filter(|s| s.kind == SymbolKind::Object && s.size > 0)
            .filter_map(|s| {
                let section = s.section?;
                wanted(section).then(|| DataSym {
                    value: s.addr,
                    size: s.size,
                    section,
                    name: s.name.to_owned(),
                })
            })
            .collect();
        syms.sort_by_key(|s| (s.value, s.section));
        VarsContext {
            mode,
            syms,
            section_addr: info.sections.iter().map(|s| (s.index, s.addr)).collect(),
            relocatable: info.relocatable,
            percpu,
        }
    }

    /// The symbol a variable at `addr` named `name` is, if any. In a linked
    /// image addresses are unique except at 0 (the first per-CPU variable,
    /// `fixed_percpu_data` on x86-64, and variables of discarded sections),
    /// where the name must agree, whether the DIE's own or its
    /// declaration's (pahole >= 1.25 checks the symbol table likewise;
    /// 1.24 dropped a definition named only through DW_AT_specification).
    /// In a relocatable object `addr` is a section offset that any section
    /// may hold, so the names must always agree.
    fn symbol_for(&self, addr: u64, name: &[u8]) -> Option<&DataSym> {
        let start = self.syms.partition_point(|s| s.value < addr);
        let at = self
            .syms
            .get(start..)?
            .iter()
            .take_while(|s| s.value == addr);
        let mut first = None;
        for s in at {
            if s.name.as_bytes() == name {
                return Some(s);
            }
            first.get_or_insert(s);
        }
        if self.relocatable || addr == 0 {
            return None;
        }
        first
    }

    /// Adds the VARs of one unit to its builder and returns their entries.
    pub fn unit_vars(&self, b: &mut UnitBuilder, vars: &[UnitVar]) -> Vec<SecEntry> {
        if self.mode == VarsMode::None || self.syms.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for v in vars {
            let dwarf_name = b.str_at(v.name).to_vec();
            let Some(sym) = self.symbol_for(v.addr, &dwarf_name) else {
                continue;
            };
            if self.mode == VarsMode::Percpu && Some(sym.section) != self.percpu {
                continue;
            }
            // Zero-sized and void variables have no place in a DATASEC.
            if v.ty == 0 || b.type_size(v.ty) == 0 {
                continue;
            }
            let base = if self.relocatable {
                0
            } else {
                self.section_addr
                    .iter()
                    .find(|(i, _)| *i == sym.section)
                    .map_or(0, |s| s.1)
            };
            let Ok(offset) = u32::try_from(sym.value.wrapping_sub(base)) else {
                continue;
            };
            let name = b.add_str(sym.name.as_bytes());
            let linkage = if v.external {
                VAR_GLOBAL_ALLOCATED
            } else {
                VAR_STATIC
            };
            let id = b.add_type(Type::new(name, TypeData::Var { ty: v.ty, linkage }));
            for &tag in &v.decl_tags {
                b.add_type(Type::new(
                    tag,
                    TypeData::DeclTag {
                        ty: id,
                        component_idx: -1,
                    },
                ));
            }
            out.push(SecEntry {
                section: sym.section,
                var: id,
                offset,
                size: sym.size.min(u64::from(u32::MAX)) as u32,
            });
        }
        out
    }
}

/// Appends one DATASEC per section that has variables, in section order.
pub fn add_datasecs(btf: &mut Btf, info: &ElfInfo<'_>, mut entries: Vec<SecEntry>) {
    // Stable: among entries at the same offset the first unit's wins.
    entries.sort_by_key(|e| (e.section, e.offset));
    let mut i = 0;
    while i < entries.len() {
        let section = entries[i].section;
        let mut vars: Vec<VarSecinfo> = Vec::new();
        let mut end = 0u64;
        while let Some(e) = entries.get(i).filter(|e| e.section == section) {
            if vars.is_empty() || u64::from(e.offset) >= end {
                vars.push(VarSecinfo {
                    ty: e.var,
                    offset: e.offset,
                    size: e.size,
                });
                end = u64::from(e.offset) + u64::from(e.size);
            }
            i += 1;
        }
        let name = info
            .section(section)
            .map_or("", |s| s.name.as_str())
            .to_owned();
        let name_off = add_own_str(btf, &name);
        btf.add_type(Type::new(
            name_off,
            TypeData::Datasec {
                size: end.min(u64::from(u32::MAX)) as u32,
                vars: vars.into(),
            },
        ));
    }
}
