//! BTF tied to a symbol table: which BTF FUNC describes a function symbol,
//! which VAR a data symbol.
//!
//! The exact link is an `addr=0x<hex>` DECL_TAG (component_idx -1) on a FUNC:
//! the link-time address of one instance, as proposed in
//! <https://lore.kernel.org/bpf/20230517161648.17582-1-alan.maguire@oracle.com/>.
//! Without such tags, only
//! the name links them, which is ambiguous when a name has several FUNCs or
//! several instances; [`FuncMatch`] says which case it is.

use btf::{Btf, TypeData, TypeId};
use rustc_hash::FxHashMap;

use crate::{Symbol, SymbolKind, Table};

/// How a function symbol was matched to a BTF FUNC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuncMatch {
    /// An address tag names this very instance.
    Exact(TypeId),
    /// Matched by name: `func` is the first of `funcs` FUNCs with the name,
    /// and the symbol table has `instances` functions with that name. Only
    /// certain when both are 1.
    ByName {
        /// The first FUNC with the symbol's name, in id order.
        func: TypeId,
        /// How many FUNCs have that name.
        funcs: usize,
        /// How many function symbols have that name (clones and fragments
        /// counted by their base name).
        instances: usize,
    },
    /// No FUNC has this name.
    None,
}

impl FuncMatch {
    /// The matched FUNC's type id, `None` when nothing matched.
    pub fn btf_id(&self) -> Option<TypeId> {
        match *self {
            FuncMatch::Exact(id) | FuncMatch::ByName { func: id, .. } => Some(id),
            FuncMatch::None => None,
        }
    }

    /// A name match that could belong to another instance.
    pub fn is_ambiguous(&self) -> bool {
        matches!(*self, FuncMatch::ByName { funcs, instances, .. } if funcs > 1 || instances > 1)
    }
}

/// Name and address indexes over one BTF's FUNCs and VARs.
pub struct BtfIndex<'a> {
    btf: &'a Btf,
    funcs: FxHashMap<&'a str, Vec<TypeId>>,
    /// (link-time address, FUNC id) from address tags, sorted.
    addr_tags: Vec<(u64, TypeId)>,
    vars: FxHashMap<&'a str, Vec<TypeId>>,
    /// The DATASEC that lists each VAR (`.data..percpu`, `.data`...).
    var_sections: FxHashMap<TypeId, &'a str>,
    /// Run-time address minus tag address: the KASLR offset as the tags and
    /// the table see it, set by [`BtfIndex::calibrate`].
    tag_offset: i64,
}

impl<'a> BtfIndex<'a> {
    /// Indexes the FUNCs, VARs, DATASECs and `addr=0x` tags of `btf`. The
    /// tag offset starts at 0 (link-time addresses); see [`BtfIndex::calibrate`].
    pub fn new(btf: &'a Btf) -> BtfIndex<'a> {
        let mut funcs: FxHashMap<&str, Vec<TypeId>> = FxHashMap::default();
        let mut vars: FxHashMap<&str, Vec<TypeId>> = FxHashMap::default();
        let mut var_sections = FxHashMap::default();
        let mut addr_tags: Vec<(u64, TypeId)> = btf::addr_tag::func_tags(btf)
            .map(|t| (t.address, t.func))
            .collect();
        for (id, t) in btf.iter() {
            match &t.data {
                TypeData::Func { .. } => {
                    if let Ok(name) = btf.name_of(t) {
                        funcs.entry(name).or_default().push(id);
                    }
                }
                TypeData::Var { .. } => {
                    if let Ok(name) = btf.name_of(t) {
                        vars.entry(name).or_default().push(id);
                    }
                }
                TypeData::Datasec { vars: secinfo, .. } => {
                    let name = btf.name_of(t).unwrap_or("");
                    for v in secinfo {
                        var_sections.insert(v.ty, name);
                    }
                }
                _ => {}
            }
        }
        addr_tags.sort_unstable();
        BtfIndex {
            btf,
            funcs,
            addr_tags,
            vars,
            var_sections,
            tag_offset: 0,
        }
    }

    /// The BTF this index was built over.
    pub fn btf(&self) -> &'a Btf {
        self.btf
    }

    /// FUNCs named `name`, in id order.
    pub fn funcs(&self, name: &str) -> &[TypeId] {
        self.funcs.get(name).map_or(&[], Vec::as_slice)
    }

    /// Distinct FUNC names.
    pub fn func_names(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.funcs.keys().copied()
    }

    /// VARs named `name`, in id order.
    pub fn vars(&self, name: &str) -> &[TypeId] {
        self.vars.get(name).map_or(&[], Vec::as_slice)
    }

    /// The number of VARs that have a name.
    pub fn var_count(&self) -> usize {
        self.vars.values().map(Vec::len).sum()
    }

    /// The DATASEC that lists a VAR.
    pub fn var_section(&self, var: TypeId) -> Option<&'a str> {
        self.var_sections.get(&var).copied()
    }

    /// True when the BTF has at least one `addr=0x` tag on a FUNC, as
    /// btfkit's encoder writes them; pahole's BTF has none.
    pub fn has_addr_tags(&self) -> bool {
        !self.addr_tags.is_empty()
    }

    /// FUNCs whose address tag is `addr` (a run-time address: the offset
    /// from [`BtfIndex::calibrate`] is taken off).
    pub fn funcs_at(&self, addr: u64) -> impl Iterator<Item = TypeId> + '_ {
        let link = addr.wrapping_add_signed(self.tag_offset.wrapping_neg());
        let start = self.addr_tags.partition_point(|&(a, _)| a < link);
        self.addr_tags[start..]
            .iter()
            .take_while(move |&&(a, _)| a == link)
            .map(|&(_, id)| id)
    }

    /// Finds the offset between the tags' link-time addresses and `table`'s
    /// (0 for a System.map or vmlinux, the KASLR offset for a live
    /// kallsyms), so that no System.map is needed: every tag votes for the
    /// difference to each symbol of its function's name, and the true
    /// offset, which every tag votes for, wins. Works when only ambiguous
    /// names carry tags. Returns it.
    pub fn calibrate(&mut self, table: &Table) -> i64 {
        let mut votes: FxHashMap<i64, u32> = FxHashMap::default();
        // Enough tags to outvote any chance agreement, few enough to be quick.
        for &(addr, id) in self.addr_tags.iter().take(512) {
            let Some(name) = self
                .btf
                .type_by_id(id)
                .and_then(|t| self.btf.name_of(t).ok())
            else {
                continue;
            };
            for s in table.by_name(name).filter(|s| s.module.is_none()) {
                *votes.entry(s.addr.wrapping_sub(addr) as i64).or_default() += 1;
            }
        }
        self.tag_offset = votes
            .into_iter()
            .max_by_key(|&(d, n)| (n, std::cmp::Reverse(d)))
            .map_or(0, |(d, _)| d);
        self.tag_offset
    }

    /// The FUNC that describes a function symbol (or the function that a
    /// `__pfx_` padding or a `.cold` fragment belongs to).
    pub fn match_function(&self, table: &Table, sym: &Symbol<'_>) -> FuncMatch {
        let name = sym.parent().unwrap_or(sym.name);
        // Where the function itself starts: padding ends where it begins.
        let entry = match sym.kind {
            SymbolKind::Function => Some(sym.addr),
            SymbolKind::Padding => sym.size.map(|s| sym.addr + s),
            _ => None,
        };
        if let Some(entry) = entry.filter(|_| self.has_addr_tags()) {
            // Aliases (`init_module` of a module's init function) share the
            // code and the tag: the FUNC of the symbol's own name first.
            let named = |&id: &TypeId| {
                self.btf
                    .type_by_id(id)
                    .and_then(|t| self.btf.name_of(t).ok())
                    == Some(name)
            };
            if let Some(id) = self
                .funcs_at(entry)
                .find(named)
                .or_else(|| self.funcs_at(entry).next())
            {
                return FuncMatch::Exact(id);
            }
        }
        // Clones and fragments carry the name of the function they came
        // from: BTF knows them by that name.
        let (lookup, funcs) = match self.funcs(name) {
            [] => (
                crate::table::base_name(name),
                self.funcs(crate::table::base_name(name)),
            ),
            f => (name, f),
        };
        let Some(&func) = funcs.first() else {
            return FuncMatch::None;
        };
        let same = |s: &Symbol<'_>| s.kind == SymbolKind::Function && s.module == sym.module;
        let instances = if lookup == crate::table::base_name(lookup) {
            table.instances(lookup).filter(same).count()
        } else {
            table.by_name(lookup).filter(same).count()
        };
        FuncMatch::ByName {
            func,
            funcs: funcs.len(),
            instances,
        }
    }
}
