//! A kernel to inspect: its memory, its BTF and its symbols, and the
//! variables they give together.
//!
//! A variable's address comes from its BTF VAR: the DATASEC offset plus
//! where the section starts. The start is found from kallsyms: per DATASEC,
//! every variable whose name is one kernel symbol says `start = symbol -
//! offset`, and the most common answer is taken (so a section without a
//! start symbol works, and one stray alias cannot move a section); the
//! section's own start symbol (`_sdata`, `__bss_start`, `__start_<sec>`) is
//! the fallback. `.data..percpu` starts at `__per_cpu_start`: its variables
//! are offsets, made real by `per_cpu(var, cpu)` with `__per_cpu_offset[cpu]`.

use btf::{Btf, TypeData, TypeId};
use kmem::Memory;
use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::types;

/// A kernel variable, from its BTF VAR and DATASEC.
#[derive(Clone, Copy, Debug)]
pub struct Var {
    /// Its type (the VAR's), an id in the program's BTF.
    pub ty: TypeId,
    /// Its kernel virtual address; for a per-CPU variable its place in
    /// `.data..percpu` (`__per_cpu_start` plus its offset), which
    /// `per_cpu(var, cpu)` moves by `__per_cpu_offset[cpu]`.
    pub addr: u64,
    /// It is in `.data..percpu`.
    pub percpu: bool,
}

/// A kernel to inspect: its memory, its BTF (with types the evaluator
/// adds), its symbols, and the variables, types, enumerators and functions
/// they name, indexed by name. Expressions and commands run on it.
pub struct Program {
    pub(crate) mem: Box<dyn Memory>,
    pub(crate) btf: Btf,
    pub(crate) syms: ksyms::Table,
    pub(crate) vars: FxHashMap<String, Var>,
    /// Names that several variables share (statics of different files):
    /// their addresses, so that an error can list them.
    pub(crate) ambiguous: FxHashMap<String, Vec<u64>>,
    pub(crate) types: FxHashMap<String, TypeId>,
    pub(crate) enumerators: FxHashMap<String, (u64, TypeId)>,
    pub(crate) funcs: FxHashMap<String, TypeId>,
    ptr_types: FxHashMap<TypeId, TypeId>,
    /// Variables whose DATASEC address differs from kallsyms' (name, btf, kallsyms).
    pub mismatches: Vec<(String, u64, u64)>,
    /// How many variables (of `var_names`) have one kernel-image symbol.
    pub var_symbols: usize,
}

/// Memory that reads nothing: a placeholder while a program's memory is replaced.
struct NoMemory;

impl Memory for NoMemory {
    fn read_phys(&self, addr: u64, _: &mut [u8]) -> kmem::Result<()> {
        Err(kmem::Error::PhysMissing(addr))
    }
    fn read_virt(&self, addr: u64, _: &mut [u8]) -> kmem::Result<()> {
        Err(kmem::Error::PhysMissing(addr))
    }
}

const PERCPU_SECTION: &str = ".data..percpu";

fn section_start_symbol(sec: &str) -> String {
    match sec {
        ".data" => "_sdata".into(),
        ".bss" => "__bss_start".into(),
        PERCPU_SECTION => "__per_cpu_start".into(),
        s => format!("__start_{}", s.trim_start_matches('.')),
    }
}

impl Program {
    /// A program over `mem`, with types from `btf` and symbols from `syms`;
    /// every VAR of a DATASEC is placed as the module's doc says.
    pub fn new(mem: Box<dyn Memory>, btf: Btf, syms: ksyms::Table) -> Program {
        let types = types::index_types(&btf);
        let mut enumerators = FxHashMap::default();
        let mut funcs = FxHashMap::default();
        for (id, t) in btf.iter() {
            match &t.data {
                TypeData::Enum { .. } | TypeData::Enum64 { .. } => {
                    for (name_off, val) in t.enum_values() {
                        if let Ok(n) = btf.str_at(name_off) {
                            enumerators.entry(n.to_owned()).or_insert((val, id));
                        }
                    }
                }
                TypeData::Func { .. } => {
                    if let Ok(n) = btf.name_of(t) {
                        funcs.entry(n.to_owned()).or_insert(id);
                    }
                }
                _ => {}
            }
        }
        let mut p = Program {
            mem,
            btf,
            syms,
            vars: FxHashMap::default(),
            ambiguous: FxHashMap::default(),
            types,
            enumerators,
            funcs,
            ptr_types: FxHashMap::default(),
            mismatches: Vec::new(),
            var_symbols: 0,
        };
        p.index_vars();
        p
    }

    /// The one kernel-image symbol called `name`.
    pub fn symbol(&self, name: &str) -> Option<u64> {
        let mut it = self.syms.by_name(name).filter(|s| s.module.is_none());
        let first = it.next()?;
        it.all(|s| s.addr == first.addr).then_some(first.addr)
    }

    fn index_vars(&mut self) {
        let btf = &self.btf;
        let mut vars = FxHashMap::default();
        let mut mismatches = Vec::new();
        let mut ambiguous: FxHashMap<String, Vec<u64>> = FxHashMap::default();
        for (_, t) in btf.iter() {
            let TypeData::Datasec { vars: secvars, .. } = &t.data else {
                continue;
            };
            let sec = btf.name_of(t).unwrap_or("");
            let percpu = sec == PERCPU_SECTION;
            let named: Vec<(&str, TypeId, u64)> = secvars
                .iter()
                .filter_map(|v| {
                    let vt = btf.type_by_id(v.ty)?;
                    let TypeData::Var { ty, .. } = vt.data else {
                        return None;
                    };
                    Some((btf.name_of(vt).ok()?, ty, u64::from(v.offset)))
                })
                .collect();
            let mut votes: FxHashMap<u64, usize> = FxHashMap::default();
            if !percpu {
                for &(name, _, off) in &named {
                    if let Some(a) = self.symbol(name) {
                        *votes.entry(a.wrapping_sub(off)).or_default() += 1;
                    }
                }
            }
            let start = votes
                .into_iter()
                .max_by_key(|&(base, n)| (n, std::cmp::Reverse(base)))
                .map(|(b, _)| b)
                .or_else(|| self.symbol(&section_start_symbol(sec)));
            let Some(start) = start else { continue };
            for (name, ty, off) in named {
                let addr = start.wrapping_add(off);
                if let Some(k) = self.symbol(name) {
                    if k != addr {
                        mismatches.push((name.to_owned(), addr, k));
                    }
                }
                let var = Var { ty, addr, percpu };
                match vars.entry(name.to_owned()) {
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert(var);
                    }
                    std::collections::hash_map::Entry::Occupied(e) => {
                        let first = e.get().addr;
                        ambiguous
                            .entry(name.to_owned())
                            .or_insert_with(|| vec![first])
                            .push(addr);
                    }
                }
            }
        }
        // kallsyms knows statics BTF may have only one of.
        let mut var_symbols = 0;
        for (name, v) in &vars {
            let addrs: Vec<u64> = self
                .syms
                .by_name(name)
                .filter(|s| s.module.is_none())
                .map(|s| s.addr)
                .collect();
            // One symbol: the variable stays (unless BTF has several).
            if addrs.len() == 1 && !ambiguous.contains_key(name) {
                var_symbols += 1;
            }
            if addrs.len() > 1 && !ambiguous.contains_key(name) {
                let mut all = addrs;
                if !all.contains(&v.addr) {
                    all.push(v.addr);
                }
                ambiguous.insert(name.clone(), all);
            }
        }
        for name in ambiguous.keys() {
            vars.remove(name);
        }
        self.ambiguous = ambiguous;
        self.vars = vars;
        self.mismatches = mismatches;
        self.var_symbols = var_symbols;
    }

    /// Where member `path` (`a.b`) of the type called `ty` (`struct x`)
    /// is: its byte offset and its type.
    pub fn member_offset(&self, ty: &str, path: &str) -> Option<(u64, TypeId)> {
        let id = *self.types.get(ty)?;
        let f = types::member_path(&self.btf, id, path)?;
        Some((f.bit_offset / 8, f.ty))
    }

    /// The size of the type called `ty`.
    pub fn type_size(&self, ty: &str) -> Option<u64> {
        self.btf.resolve_size(*self.types.get(ty)?)
    }

    /// The BTF: vmlinux's, then what modules and the evaluator added.
    pub fn btf(&self) -> &Btf {
        &self.btf
    }

    /// The symbol table: the kernel image's and the modules'.
    pub fn symbols(&self) -> &ksyms::Table {
        &self.syms
    }

    /// The kernel's memory (a dump, or the live kernel).
    pub fn memory(&self) -> &dyn Memory {
        &*self.mem
    }

    /// The same program over other memory made from this one's (a view
    /// that changes bytes, for tests of corrupt kernels).
    pub fn map_memory(&mut self, f: impl FnOnce(Box<dyn Memory>) -> Box<dyn Memory>) {
        let mem = std::mem::replace(&mut self.mem, Box::new(NoMemory));
        self.mem = f(mem);
    }

    /// The addresses of the variables that share `name`, when several do.
    pub fn ambiguous(&self, name: &str) -> Option<&[u64]> {
        self.ambiguous.get(name).map(Vec::as_slice)
    }

    /// The variable called `name`, unless several variables share it (see
    /// [`Program::ambiguous`]).
    pub fn var(&self, name: &str) -> Option<Var> {
        self.vars.get(name).copied()
    }

    /// An enumerator's value and its enum type.
    pub fn enumerator(&self, name: &str) -> Option<(u64, TypeId)> {
        self.enumerators.get(name).copied()
    }

    /// Whether a word names something an expression can use: a variable,
    /// function, enumerator, type, symbol, helper or C keyword.
    pub fn knows_name(&self, word: &str) -> bool {
        self.vars.contains_key(word)
            || self.ambiguous.contains_key(word)
            || self.enumerators.contains_key(word)
            || self.funcs.contains_key(word)
            || self.types.contains_key(word)
            || self.syms.by_name(word).next().is_some()
            || crate::parse::helper_signature(word).is_some()
            || crate::parse::is_keyword(word)
    }

    /// The one variable (not per-CPU) that starts at `addr`.
    pub fn var_at(&self, addr: u64) -> Option<Var> {
        let mut at = self.vars.values().filter(|v| !v.percpu && v.addr == addr);
        let first = *at.next()?;
        at.all(|v| v.ty == first.ty).then_some(first)
    }

    /// Every variable name, for listing and completion.
    pub fn var_names(&self) -> impl Iterator<Item = &str> {
        self.vars.keys().map(String::as_str)
    }

    /// Every type name an expression can use (`struct task_struct`, `u64`),
    /// for listing and completion.
    pub fn type_names(&self) -> impl Iterator<Item = &str> {
        self.types.keys().map(String::as_str)
    }

    /// A type by its C name (`struct x`, `unsigned long`, `u64`), with `*`s.
    pub fn find_type(&mut self, base: &str, pointers: usize) -> Option<TypeId> {
        let canon = types::canonical_base(base);
        let mut id = if canon == "void" {
            Some(0)
        } else {
            self.types.get(&canon).copied().or_else(|| {
                types::btf_base_aliases(&canon)
                    .iter()
                    .find_map(|a| self.types.get(*a).copied())
            })
        }?;
        for _ in 0..pointers {
            id = self.pointer_to(id);
        }
        Some(id)
    }

    /// A pointer type to `id`: BTF's own when it has one, else a new one.
    pub fn pointer_to(&mut self, id: TypeId) -> TypeId {
        if let Some(&p) = self.ptr_types.get(&id) {
            return p;
        }
        let found = self
            .btf
            .iter()
            .find(|(_, t)| matches!(t.data, TypeData::Ptr { ty } if ty == id))
            .map(|(p, _)| p);
        let p = found.unwrap_or_else(|| {
            self.btf
                .add_type(btf::Type::new(0, TypeData::Ptr { ty: id }))
        });
        self.ptr_types.insert(id, p);
        p
    }

    /// An integer type of C's name, made when the BTF has none.
    pub fn int_type(&mut self, name: &str, size: u32, signed: bool) -> TypeId {
        if let Some(id) = self.find_type(name, 0) {
            return id;
        }
        let off = self.btf.add_str(name);
        let id = self.btf.add_type(btf::Type::new(
            off,
            TypeData::Int {
                size,
                encoding: if signed { types::INT_SIGNED } else { 0 },
                offset: 0,
                bits: (size * 8) as u8,
            },
        ));
        self.types.insert(name.to_owned(), id);
        id
    }

    /// `__per_cpu_offset[cpu]`.
    pub fn per_cpu_offset(&self, cpu: u64, col: usize) -> Result<u64> {
        let base = self
            .symbol("__per_cpu_offset")
            .ok_or_else(|| Error::eval(col, "no __per_cpu_offset symbol"))?;
        let nr = self
            .symbol("nr_cpu_ids")
            .and_then(|a| self.mem.read_u32(a).ok())
            .unwrap_or(u32::MAX);
        if cpu >= u64::from(nr) {
            return Err(Error::eval(
                col,
                format!("CPU {cpu}: the kernel has {nr} CPU ids"),
            ));
        }
        self.mem
            .read_u64(base + cpu * 8)
            .map_err(|error| Error::Memory { col, error })
    }
}
