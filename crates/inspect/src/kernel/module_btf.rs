//! Modules' types: each module's BTF as the kernel holds it (the
//! `btf_modules` list, split BTF over the kernel's own vmlinux BTF) is
//! copied into the program's one BTF, so that a module's structs print and
//! cast like the kernel's.
//!
//! How a name resolves across vmlinux and the modules (drgn's habit):
//! vmlinux first, then the modules in the order of the `modules` list; a
//! module type whose name vmlinux (or an earlier module) has already is
//! reachable only as `MODULE:NAME` (`struct dummy:struct foo` in the
//! `struct` command), which every module type also has. Module functions
//! and variables resolve the same way; a module variable needs a DATASEC
//! in the module's BTF (the kernel's module BTF of 6.1 has variables only
//! for per-CPU data, which is not placed here) and gets its address from
//! the module's symbols: the section starts where most of its variables'
//! symbols say.
//!
//! The copy maps the split BTF's ids into the program's BTF: ids of the
//! module's own types get new ids; ids of its base are the same ids when
//! the program's BTF is the kernel's own, else the program's type of the
//! same kind and name (a vmlinux BTF made with `btfkit encode --vars all`
//! numbers its types differently), else a copy.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use btf::{Btf, Type, TypeData, TypeId};
use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::kernel::module::{for_each_module, Module};
use crate::program::{Program, Var};

/// Larger module BTF is corrupt (the kernel's own limit is far lower).
const MAX_MODULE_BTF: u32 = 16 << 20;

/// Where a type of one BTF went in the program's BTF.
struct Importer<'a> {
    from: &'a Btf,
    /// The program's BTF numbers the base's types as the base does.
    base_same: bool,
    map: FxHashMap<TypeId, TypeId>,
}

impl Importer<'_> {
    /// The program's id for `id` of `self.from`, copying types as needed.
    ///
    /// Invariant: every id in `map` names a type already in `to`; a copied
    /// type is added first with its references unmapped and queued, then
    /// mapped, so that cycles (a struct pointing at itself) end.
    fn import(&mut self, prog: &mut Program, id: TypeId) -> TypeId {
        let mut queue = VecDeque::new();
        let out = self.lookup_or_copy(prog, id, &mut queue);
        while let Some((new, mut t)) = queue.pop_front() {
            let mut refs = Vec::new();
            t.for_each_ref(|r| refs.push(r));
            let mapped: Vec<TypeId> = refs
                .into_iter()
                .map(|r| self.lookup_or_copy(prog, r, &mut queue))
                .collect();
            let mut it = mapped.into_iter();
            t.for_each_ref_mut(|r| *r = it.next().unwrap_or(0));
            if let Some(slot) = prog.btf.type_by_id_mut(new) {
                slot.data = t.data;
            }
        }
        out
    }

    fn lookup_or_copy(
        &mut self,
        prog: &mut Program,
        id: TypeId,
        queue: &mut VecDeque<(TypeId, Type)>,
    ) -> TypeId {
        if id == 0 {
            return 0;
        }
        if let Some(&m) = self.map.get(&id) {
            return m;
        }
        let own = id >= self.from.start_id();
        if !own && self.base_same {
            return id;
        }
        let Some(t) = self.from.type_by_id(id) else {
            return 0;
        };
        if !own {
            if let Some(found) = type_key(self.from, t).and_then(|k| prog.types.get(&k)) {
                self.map.insert(id, *found);
                return *found;
            }
        }
        let mut copy = t.clone();
        let from = self.from;
        copy.for_each_str_mut(|off| {
            let s = from.str_at(*off).unwrap_or("");
            *off = prog.btf.add_str(s);
        });
        let new = prog.btf.add_type(copy.clone());
        self.map.insert(id, new);
        queue.push_back((new, copy));
        new
    }
}

/// The name `types::index_types` gives a type (`struct x`, a typedef's name).
fn type_key(btf: &Btf, t: &Type) -> Option<String> {
    let name = btf.name_of(t).ok().filter(|n| !n.is_empty())?;
    Some(match &t.data {
        TypeData::Struct { .. } => format!("struct {name}"),
        TypeData::Union { .. } => format!("union {name}"),
        TypeData::Enum { .. } | TypeData::Enum64 { .. } => format!("enum {name}"),
        TypeData::Typedef { .. } | TypeData::Int { .. } | TypeData::Float { .. } => name.to_owned(),
        _ => return None,
    })
}

/// True when `a` and `b` have the same types under the same ids (names
/// and kinds compared): the program's BTF is the kernel's own.
fn same_types(a: &Btf, b: &Btf) -> bool {
    b.iter().all(|(id, t)| {
        a.type_by_id(id)
            .is_some_and(|u| u.kind() == t.kind() && a.name_of(u).ok() == b.name_of(t).ok())
    })
}

/// The kernel's own vmlinux BTF, from memory (what module BTF is split over).
fn kernel_btf(prog: &Program) -> Option<Arc<Btf>> {
    let (start, stop) = (prog.symbol("__start_BTF")?, prog.symbol("__stop_BTF")?);
    kmem::btf::read(prog.memory(), start, stop)
        .ok()
        .map(Arc::new)
}

/// Copies every module's BTF into the program, except the modules in
/// `skip` (given as files). Returns what could not be read, one line per module.
pub fn load(prog: &mut Program, skip: &[String]) -> Vec<String> {
    let mods = match for_each_module(prog) {
        Ok(m) => m.modules,
        Err(e) => return vec![format!("modules: {e}")],
    };
    if mods.iter().all(|m| m.btf.is_none()) {
        return Vec::new();
    }
    let Some(base) = kernel_btf(prog) else {
        return vec!["module BTF: the kernel's own BTF (__start_BTF) does not read".into()];
    };
    let base_same = same_types(&prog.btf, &base);
    let mut problems = Vec::new();
    for m in mods.iter().filter(|m| !skip.contains(&m.name)) {
        let Some(b) = m.btf else { continue };
        let split = if b.size > MAX_MODULE_BTF {
            Err(format!("{} bytes of BTF", b.size))
        } else {
            prog.memory()
                .read_vec(b.data, b.size as usize)
                .map_err(|e| e.to_string())
                .and_then(|data| Btf::parse_split(&data, base.clone()).map_err(|e| e.to_string()))
        };
        match split {
            Ok(split) => add_module(prog, m, &split, base_same),
            Err(e) => problems.push(format!("module {}: BTF at {:#x}: {e}", m.name, b.data)),
        }
    }
    problems
}

/// A module's BTF from a file, for what the kernel's module BTF lacks
/// (variables): made by `btfkit encode --vars all --base BTF MODULE.ko`
/// where BTF is the program's BTF file (`--btf`), so that its base ids are
/// the program's. Load it before any other BTF is added to the program.
pub fn load_file(prog: &mut Program, module: &str, path: &Path) -> Result<()> {
    let mods = for_each_module(prog)?;
    let m = mods
        .modules
        .into_iter()
        .find(|m| m.name == module)
        .ok_or_else(|| Error::NoModule {
            path: path.to_owned(),
            module: module.to_owned(),
        })?;
    let data = btf::read_blob(path)?;
    let base = Arc::new(prog.btf.clone());
    let split = Btf::parse_split(&data, base).map_err(|error| Error::ModuleBtf {
        path: path.to_owned(),
        error,
    })?;
    add_module(prog, &m, &split, true);
    Ok(())
}

/// Copies one module's split BTF and names its types, functions and variables.
pub fn add_module(prog: &mut Program, m: &Module, split: &Btf, base_same: bool) {
    let mut imp = Importer {
        from: split,
        base_same,
        map: FxHashMap::default(),
    };
    let own: Vec<TypeId> = split.iter().map(|(id, _)| id).collect();
    for &id in &own {
        let new = imp.import(prog, id);
        let Some(t) = split.type_by_id(id) else {
            continue;
        };
        if let Some(key) = type_key(split, t) {
            // vmlinux first; a complete type replaces a forward declaration.
            let better = match prog.types.get(&key) {
                None => true,
                Some(&old) => {
                    matches!(
                        prog.btf.type_by_id(old).map(|t| &t.data),
                        Some(TypeData::Fwd)
                    ) && !matches!(t.data, TypeData::Fwd)
                }
            };
            if better {
                prog.types.insert(key.clone(), new);
            }
            prog.types.insert(format!("{}:{key}", m.name), new);
        }
        if let (TypeData::Func { .. }, Ok(name)) = (&t.data, split.name_of(t)) {
            prog.funcs.entry(name.to_owned()).or_insert(new);
        }
    }
    add_variables(prog, m, split, &mut imp);
}

/// A module's DATASEC variables, placed by the module's symbols.
fn add_variables(prog: &mut Program, m: &Module, split: &Btf, imp: &mut Importer<'_>) {
    for (_, t) in split.iter() {
        let TypeData::Datasec { vars, .. } = &t.data else {
            continue;
        };
        if split.name_of(t).is_ok_and(|n| n == ".data..percpu") {
            continue;
        }
        let named: Vec<(String, TypeId, u64)> = vars
            .iter()
            .filter_map(|v| {
                let vt = split.type_by_id(v.ty)?;
                let TypeData::Var { ty, .. } = vt.data else {
                    return None;
                };
                Some((split.name_of(vt).ok()?.to_owned(), ty, u64::from(v.offset)))
            })
            .collect();
        let mut votes: FxHashMap<u64, usize> = FxHashMap::default();
        for (name, _, off) in &named {
            for s in prog.syms.by_name(name) {
                if s.module == Some(m.name.as_str()) {
                    *votes.entry(s.addr.wrapping_sub(*off)).or_default() += 1;
                }
            }
        }
        let Some(start) = votes
            .into_iter()
            .max_by_key(|&(b, n)| (n, std::cmp::Reverse(b)))
            .map(|(b, _)| b)
        else {
            continue;
        };
        for (name, ty, off) in named {
            let ty = imp.import(prog, ty);
            let var = Var {
                ty,
                addr: start.wrapping_add(off),
                percpu: false,
            };
            prog.vars.entry(format!("{}:{name}", m.name)).or_insert(var);
            if !prog.ambiguous.contains_key(&name) {
                prog.vars.entry(name).or_insert(var);
            }
        }
    }
}
