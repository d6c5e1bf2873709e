//! The kernel a drgn program reads, opened by btfkit: its kallsyms (from
//! memory, or /proc/kallsyms live), its BTF (a file, /sys/kernel/btf
//! live, or the BTF in memory) with every loaded module's BTF copied in.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::PathBuf;

use btf::{TypeData, TypeId};
use inspect::open::{open, Options};
use inspect::Program;
use ksyms::table::Symbol;
use ksyms::{BtfIndex, SymbolKind};
use pyo3::prelude::*;

use crate::describe::describe;
use crate::BtfkitError;

#[pyclass(unsendable, module = "btfkit_drgn._native")]
pub struct Kernel {
    prog: Program,
    /// Function name -> (FUNC_PROTO of that instance, address, whether
    /// the FUNC was matched by a name that several FUNCs or several
    /// instances share): the instance `kallsyms_lookup_name` picks (the
    /// lowest address; vmlinux before modules), typed by its `addr=` tag
    /// when the BTF has one. Made when a function is first asked for
    /// (0.2 s for Debian's 50,000 function symbols): drgn's crash `ps`,
    /// `bt -a` and `log` never ask.
    funcs: OnceCell<HashMap<String, (TypeId, u64, bool)>>,
    /// For lookups by address, made at the first one.
    spans: OnceCell<Spans>,
}

/// drgn's `SymbolIndex` search by address over the symbol table: symbols
/// may overlap (a module's last text symbol reaches its data, past other
/// modules), so the highest end of any symbol up to each one bounds where
/// a search starts.
struct Spans {
    /// `table.get(i).addr`, in table (address) order.
    addrs: Vec<u64>,
    /// The highest `addr + size` among symbols `0..=i`.
    max_end: Vec<u64>,
}

/// The size drgn is given for a symbol. kallsyms has no sizes: a symbol
/// reaches the next one. Per-CPU symbols are offsets (low addresses) that
/// no address is in: size 0, so that drgn finds them by name only (a NULL
/// pointer is not `fixed_percpu_data`, a user address not `__per_cpu_end`).
fn drgn_size(s: &Symbol<'_>) -> u64 {
    const KERNEL_HALF: u64 = 1 << 63;
    if s.addr < KERNEL_HALF {
        0
    } else {
        s.size.unwrap_or(0)
    }
}

/// A symbol as `find_symbols` returns it.
type SymbolTuple = (String, u64, u64, char);

fn symbol_tuple(s: &Symbol<'_>) -> SymbolTuple {
    (s.name.to_owned(), s.addr, drgn_size(s), s.type_char)
}

fn spans(table: &ksyms::Table) -> Spans {
    let mut addrs = Vec::with_capacity(table.len());
    let mut max_end = Vec::with_capacity(table.len());
    let mut highest = 0u64;
    for s in table.iter() {
        addrs.push(s.addr);
        highest = highest.max(s.addr.wrapping_add(drgn_size(&s)));
        max_end.push(highest);
    }
    Spans { addrs, max_end }
}

/// The prototype of every function instance that has a FUNC, by name.
fn index_functions(prog: &Program) -> HashMap<String, (TypeId, u64, bool)> {
    let mut index = BtfIndex::new(prog.btf());
    index.calibrate(prog.symbols());
    let table = prog.symbols();
    let mut out: HashMap<String, (TypeId, u64, bool, bool)> = HashMap::new();
    for sym in table.iter().filter(|s| s.kind == SymbolKind::Function) {
        let in_module = sym.module.is_some();
        if let Some(&(_, addr, _, m)) = out.get(sym.name) {
            if (m, addr) <= (in_module, sym.addr) {
                continue;
            }
        }
        let found = index.match_function(table, &sym);
        let Some(func) = found.btf_id() else {
            continue;
        };
        if let Some(TypeData::Func { proto, .. }) = prog.btf().type_by_id(func).map(|t| &t.data) {
            let entry = (*proto, sym.addr, found.is_ambiguous(), in_module);
            out.insert(sym.name.to_owned(), entry);
        }
    }
    out.into_iter()
        .map(|(n, (proto, addr, ambiguous, _))| (n, (proto, addr, ambiguous)))
        .collect()
}

#[pymethods]
impl Kernel {
    /// Opens the kernel of `vmcore` (`None`: the running kernel through
    /// /proc/kcore), with the BTF of file `btf` instead of the kernel's own.
    #[staticmethod]
    #[pyo3(signature = (vmcore, btf = None))]
    fn open(vmcore: Option<PathBuf>, btf: Option<PathBuf>) -> PyResult<Kernel> {
        let opts = Options {
            vmcore,
            btf,
            ..Options::default()
        };
        let prog = open(&opts).map_err(|e| BtfkitError::new_err(e.to_string()))?;
        Ok(Kernel {
            prog,
            funcs: OnceCell::new(),
            spans: OnceCell::new(),
        })
    }

    /// The release in `init_uts_ns` read with this BTF's layout of
    /// `struct uts_namespace` (so a BTF of another kernel reads wrong).
    fn release(&self) -> Option<String> {
        inspect::unwind::kernel_release(&self.prog)
    }

    /// How many variables have a kernel symbol, and those whose BTF
    /// address (DATASEC offset + section start) is not the symbol's:
    /// `(checked, [(name, btf_address, kallsyms_address)])`.
    fn address_check(&self) -> (usize, Vec<(String, u64, u64)>) {
        (self.prog.var_symbols, self.prog.mismatches.clone())
    }

    /// The BTF type of a C name (`struct task_struct`, `unsigned long`,
    /// `u64`; `MODULE:struct foo` for a module's own).
    fn find_type(&mut self, name: &str) -> Option<TypeId> {
        self.prog.find_type(name, 0)
    }

    /// One BTF type as a tuple (see _native.pyi).
    fn describe<'py>(&self, py: Python<'py>, id: TypeId) -> PyResult<Bound<'py, PyAny>> {
        describe(py, self.prog.btf(), id)
    }

    /// A variable: `(type id, address, per-CPU)`; a per-CPU variable's
    /// address is its offset in the per-CPU area, as in DWARF.
    fn variable(&self, name: &str) -> Option<(TypeId, u64, bool)> {
        self.prog.var(name).map(|v| (v.ty, v.addr, v.percpu))
    }

    /// How many variables outside the per-CPU area the BTF has (none in
    /// a distribution's BTF: `btfkit encode --vars all` adds them).
    fn global_variables(&self) -> usize {
        self.prog
            .var_names()
            .filter(|n| self.prog.var(n).is_some_and(|v| !v.percpu))
            .count()
    }

    /// The addresses of the static variables that share `name`, if several do.
    fn ambiguous(&self, name: &str) -> Option<Vec<u64>> {
        self.prog.ambiguous(name).map(<[u64]>::to_vec)
    }

    /// An enumerator: `(value, enum type id)`.
    fn enumerator(&self, name: &str) -> Option<(u64, TypeId)> {
        self.prog.enumerator(name)
    }

    /// A function: `(FUNC_PROTO id, address, by name only)` of the
    /// instance of that name the kernel itself would pick; by name only:
    /// the BTF has no `addr=` tag for it and several FUNCs or instances
    /// share the name, so the prototype may be another instance's.
    fn function(&self, name: &str) -> Option<(TypeId, u64, bool)> {
        // Only a function symbol's name is in the index: any other name
        // (drgn's helpers try variables BTF lacks, `_cea_offset`, as
        // functions too) does not make it.
        let table = self.prog.symbols();
        if !table.by_name(name).any(|s| s.kind == SymbolKind::Function) {
            return None;
        }
        self.funcs
            .get_or_init(|| index_functions(&self.prog))
            .get(name)
            .copied()
    }

    /// drgn's symbol finder, answered as drgn's `SymbolIndex` of every
    /// symbol of vmlinux and the modules would: by address (and name, if
    /// given), the symbols that contain it in address order; else by name,
    /// in address order; else all; `one`: the first only.
    /// `(name, address, size, nm type letter)` each.
    #[pyo3(signature = (name, address, one))]
    fn find_symbols(
        &self,
        name: Option<&str>,
        address: Option<u64>,
        one: bool,
    ) -> Vec<SymbolTuple> {
        let table = self.prog.symbols();
        let limit = if one { 1 } else { usize::MAX };
        match (address, name) {
            (Some(addr), _) => {
                let spans = self.spans.get_or_init(|| spans(table));
                let end = spans.addrs.partition_point(|&a| a <= addr);
                let start = spans.max_end.partition_point(|&e| e <= addr);
                (start..end)
                    .filter_map(|i| table.get(i))
                    .filter(|s| s.addr <= addr && addr < s.addr.wrapping_add(drgn_size(s)))
                    .filter(|s| name.is_none_or(|n| n == s.name))
                    .take(limit)
                    .map(|s| symbol_tuple(&s))
                    .collect()
            }
            (None, Some(name)) => table
                .by_name(name)
                .take(limit)
                .map(|s| symbol_tuple(&s))
                .collect(),
            (None, None) => table.iter().take(limit).map(|s| symbol_tuple(&s)).collect(),
        }
    }

    /// The address of the one vmlinux symbol called `name`.
    fn symbol_address(&self, name: &str) -> Option<u64> {
        self.prog.symbol(name)
    }

    /// The address of vmlinux's data symbol called `name`.
    fn data_symbol(&self, name: &str) -> Option<u64> {
        self.prog
            .symbols()
            .by_name(name)
            .find(|s| s.module.is_none() && s.kind == SymbolKind::Data)
            .map(|s| s.addr)
    }

    /// The modules that have symbols (`[bpf]`-style pseudo modules aside).
    fn modules(&self) -> Vec<String> {
        self.prog
            .symbols()
            .modules()
            .iter()
            .filter(|m| !ksyms::table::is_pseudo_module(m))
            .cloned()
            .collect()
    }
}
