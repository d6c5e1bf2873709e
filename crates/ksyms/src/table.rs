//! The lookup table: symbols sorted by address with sizes and kinds, an
//! address lookup by binary search and a name index.

use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::OnceLock;

use rustc_hash::FxHasher;

use crate::module_sections::NamedSections;
use crate::{Error, Result, Symbols};

/// What a symbol is, from its name, type letter and module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    /// Function text (type `t`, `T`, `w`, `W`). Clones (`.isra`,
    /// `.constprop`, `.part`, `.llvm.`) are functions too: see
    /// [`Symbol::is_clone`].
    Function,
    /// `__pfx_X`: the padding the compiler puts before X (call-depth
    /// tracking, FineIBT), not a function of its own. See [`Symbol::parent`].
    Padding,
    /// `X.cold`: the unlikely paths of X, moved out of line by the compiler.
    /// Part of X, see [`Symbol::parent`].
    ColdFragment,
    /// Data, read-only data or bss.
    Data,
    /// A BPF program, `bpf_prog_<tag>_<name>` in `[bpf]`.
    BpfProgram {
        /// The program tag (`bpftool prog` shows it), from the name.
        tag: u64,
    },
    /// A BPF trampoline, `bpf_trampoline_<key>` in `[bpf]`.
    BpfTrampoline(TrampolineTarget),
    /// A BPF dispatcher image, `bpf_dispatcher_<name>` in `[bpf]`.
    BpfDispatcher,
    /// Code in `[__builtin__ftrace]` (ftrace trampolines).
    Ftrace,
    /// Code in `[__builtin__kprobes]` (kprobe instruction slots).
    Kprobe,
    /// Anything else: absolute symbols, unknown letters.
    Other,
}

/// What a BPF trampoline is attached to, decoded from its key
/// (kernel/bpf/trampoline.c, bpf_trampoline_compute_key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrampolineTarget {
    /// A kernel or module function: BTF object id and type id of its FUNC.
    /// Key `(btf_obj_id << 32) | 0x80000000 | btf_id`.
    Kernel {
        /// The id of the BTF object (vmlinux or a module's BTF), as
        /// `bpftool btf list` shows it.
        btf_obj_id: u32,
        /// The FUNC's type id in that BTF.
        btf_id: u32,
    },
    /// A function of another BPF program (freplace, fentry on BPF).
    /// Key `(prog_id << 32) | btf_id`.
    Program {
        /// The id of the target program, as `bpftool prog` shows it.
        prog_id: u32,
        /// The FUNC's type id in that program's BTF.
        btf_id: u32,
    },
}

impl TrampolineTarget {
    /// Decodes the key of a `bpf_trampoline_<key>` symbol (the decimal
    /// number after the prefix).
    pub fn from_key(key: u64) -> TrampolineTarget {
        let high = (key >> 32) as u32;
        let low = key as u32;
        if low & 0x8000_0000 != 0 {
            TrampolineTarget::Kernel {
                btf_obj_id: high,
                btf_id: low & 0x7fff_ffff,
            }
        } else {
            TrampolineTarget::Program {
                prog_id: high,
                btf_id: low,
            }
        }
    }
}

/// Where a symbol's size comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeSource {
    /// The ELF symbol table states it.
    Exact,
    /// The distance to the next higher address in the same module (and
    /// section, in a relocatable object): an upper bound that includes
    /// alignment padding.
    NextSymbol,
    /// The last symbol of its module (or section): nothing bounds it.
    Unknown,
}

/// What is kept of a symbol, kept to 32 bytes because a lookup's binary
/// search runs over these: the details of BPF kinds are decoded from the
/// name when asked for. The address is in here rather than in a separate
/// array: the search's last probe then brings the whole entry into cache.
#[derive(Clone, Copy, Debug)]
struct Entry {
    addr: u64,
    size: u64,
    name_start: u32,
    name_len: u32,
    module: u16,
    type_char: u8,
    size_source: SizeSource,
    kind: KindTag,
}

/// [`SymbolKind`] without its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KindTag {
    Function,
    Padding,
    ColdFragment,
    Data,
    BpfProgram,
    BpfTrampoline,
    BpfDispatcher,
    Ftrace,
    Kprobe,
    Other,
}

impl KindTag {
    fn of(kind: SymbolKind) -> KindTag {
        match kind {
            SymbolKind::Function => KindTag::Function,
            SymbolKind::Padding => KindTag::Padding,
            SymbolKind::ColdFragment => KindTag::ColdFragment,
            SymbolKind::Data => KindTag::Data,
            SymbolKind::BpfProgram { .. } => KindTag::BpfProgram,
            SymbolKind::BpfTrampoline(_) => KindTag::BpfTrampoline,
            SymbolKind::BpfDispatcher => KindTag::BpfDispatcher,
            SymbolKind::Ftrace => KindTag::Ftrace,
            SymbolKind::Kprobe => KindTag::Kprobe,
            SymbolKind::Other => KindTag::Other,
        }
    }
}

/// A symbol of a [`Table`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// Position in the table (address order).
    pub index: usize,
    /// The address: run-time for kallsyms, link-time for System.map and
    /// ELF unless [`Symbols::relocate`] moved it.
    pub addr: u64,
    /// The size in bytes; `None` for the last symbol of a module (see
    /// [`SizeSource`]).
    pub size: Option<u64>,
    /// Whether the size was stated or inferred.
    pub size_source: SizeSource,
    /// The name as the source spells it (`vfs_read`, `foo.isra.0`).
    pub name: &'a str,
    /// The module or pseudo-module (`bpf`, `__builtin__ftrace`), without brackets.
    pub module: Option<&'a str>,
    /// The `nm` type letter (`T`, `t`, `D`, `b`...).
    pub type_char: char,
    /// What the symbol is, from its name, letter and module.
    pub kind: SymbolKind,
}

impl<'a> Symbol<'a> {
    /// The function this symbol is part of: X for `__pfx_X` and for
    /// `X.cold` (`X.isra.0.cold` gives `X.isra.0`).
    pub fn parent(&self) -> Option<&'a str> {
        match self.kind {
            SymbolKind::Padding => self.name.strip_prefix("__pfx_"),
            SymbolKind::ColdFragment => self.name.find(".cold").map(|i| &self.name[..i]),
            _ => None,
        }
    }

    /// The name up to the first '.', the name BTF gives every clone and
    /// fragment (`foo.isra.0`, `foo.cold` are `foo`).
    pub fn base_name(&self) -> &'a str {
        base_name(self.name)
    }

    /// A compiler-made copy of a function: `.isra`, `.constprop`, `.part`,
    /// `.llvm.<hash>`.
    pub fn is_clone(&self) -> bool {
        is_clone_name(self.name)
    }

    /// The program name of a BPF program (`bpf_prog_<tag>_<name>`), "" when
    /// the program has none.
    pub fn bpf_prog_name(&self) -> Option<&'a str> {
        match self.kind {
            SymbolKind::BpfProgram { .. } => {
                let rest = self.name.strip_prefix("bpf_prog_")?.get(16..)?;
                Some(rest.strip_prefix('_').unwrap_or(rest))
            }
            _ => None,
        }
    }

    /// In a real module, not in the kernel image or a pseudo-module.
    pub fn in_module(&self) -> bool {
        self.module.is_some_and(|m| !is_pseudo_module(m))
    }
}

/// A symbol found by address, and how far into it the address is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit<'a> {
    /// The symbol that contains the address.
    pub symbol: Symbol<'a>,
    /// The address minus the symbol's address, in bytes.
    pub offset: u64,
}

/// The name up to the first '.': the name BTF gives every clone and fragment
/// of a function (`foo.isra.0` and `foo.cold` give `foo`).
pub fn base_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// True for the name of a compiler-made copy of a function: it contains
/// `.isra.`, `.constprop.`, `.part.` or `.llvm.`.
pub fn is_clone_name(name: &str) -> bool {
    [".isra.", ".constprop.", ".part.", ".llvm."]
        .iter()
        .any(|s| name.contains(s))
}

/// `[bpf]`, `[__builtin__ftrace]`, `[__builtin__kprobes]`: kernel code that
/// kallsyms lists under a module name though no module holds it.
pub fn is_pseudo_module(module: &str) -> bool {
    module == "bpf" || module.starts_with("__builtin__")
}

fn hash_name(name: &str) -> u64 {
    let mut h = FxHasher::default();
    name.hash(&mut h);
    h.finish()
}

fn parse_hex_u64(s: &str) -> Option<u64> {
    if s.len() != 16 {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

fn classify(name: &str, type_char: u8, module: Option<&str>) -> SymbolKind {
    match module {
        Some("bpf") => {
            if let Some(rest) = name.strip_prefix("bpf_prog_") {
                if let Some(tag) = rest.get(..16).and_then(parse_hex_u64) {
                    return SymbolKind::BpfProgram { tag };
                }
            }
            if let Some(key) = name
                .strip_prefix("bpf_trampoline_")
                .and_then(|k| k.parse::<u64>().ok())
            {
                return SymbolKind::BpfTrampoline(TrampolineTarget::from_key(key));
            }
            if name.starts_with("bpf_dispatcher_") {
                return SymbolKind::BpfDispatcher;
            }
        }
        Some("__builtin__ftrace") => return SymbolKind::Ftrace,
        Some("__builtin__kprobes") => return SymbolKind::Kprobe,
        _ => {}
    }
    match type_char {
        b't' | b'T' | b'w' | b'W' => {
            if name.starts_with("__pfx_") {
                SymbolKind::Padding
            } else if name.contains(".cold") {
                SymbolKind::ColdFragment
            } else {
                SymbolKind::Function
            }
        }
        b'd' | b'D' | b'b' | b'B' | b'r' | b'R' | b'v' | b'V' | b'g' | b'G' | b's' | b'S' => {
            SymbolKind::Data
        }
        _ => SymbolKind::Other,
    }
}

/// Which of several symbols at one address names it best: code over data
/// over padding over markers, then a stated size over a guessed one.
fn preference(e: &Entry) -> (u8, u8) {
    let kind = match e.kind {
        KindTag::Function
        | KindTag::ColdFragment
        | KindTag::BpfProgram
        | KindTag::BpfTrampoline
        | KindTag::BpfDispatcher
        | KindTag::Ftrace
        | KindTag::Kprobe => 0,
        KindTag::Data => 1,
        KindTag::Padding => 2,
        KindTag::Other => 3,
    };
    let size = match e.size_source {
        SizeSource::Exact => 0,
        _ => 1,
    };
    (kind, size)
}

/// Symbols per block of the two-level address index (see `Table::top`).
const BLOCK: usize = 64;

/// Symbols sorted by address, with sizes, kinds and a name index.
#[derive(Clone, Debug)]
pub struct Table {
    names: String,
    entries: Vec<Entry>,
    /// `entries[i].addr` alone, and every `BLOCK`th of them in `top`: a
    /// lookup searches `top` (16 KB for kallsyms, in L1) and then one block
    /// of `addrs` (512 bytes), a few cache lines where a binary search over
    /// all entries misses the cache at nearly every step.
    addrs: Vec<u64>,
    top: Vec<u64>,
    modules: Vec<String>,
    /// (hash of base name, entry index), sorted: names resolve by binary
    /// search without a string allocated per symbol. Built on the first
    /// name lookup: address lookups never pay for it.
    by_base_name: OnceLock<Vec<(u64, u32)>>,
    source: std::path::PathBuf,
    addresses_hidden: bool,
    /// A relocatable object's sections, whose keys the addresses are.
    sections: Option<NamedSections>,
}

/// The section of a relocatable object that a key is in (None in a linked
/// image).
fn section_of(sections: Option<&NamedSections>, addr: u64) -> Option<usize> {
    let (section, _) = sections?.sections().place(addr)?;
    Some(section)
}

impl Table {
    /// Sorts `symbols` by address, gives each a size (the stated one, else
    /// the distance to the next symbol of its module) and a [`SymbolKind`].
    pub fn new(symbols: Symbols) -> Table {
        let Symbols {
            names,
            raw,
            modules,
            source,
            addresses_hidden,
            sections,
        } = symbols;
        let mut entries: Vec<Entry> = raw
            .iter()
            .map(|r| {
                let start = r.name_start as usize;
                let name = names.get(start..start + r.name_len as usize).unwrap_or("");
                let module = usize::from(r.module)
                    .checked_sub(1)
                    .and_then(|i| modules.get(i))
                    .map(String::as_str);
                Entry {
                    addr: r.addr,
                    size: r.size,
                    name_start: r.name_start,
                    name_len: r.name_len,
                    module: r.module,
                    type_char: r.type_char,
                    size_source: if r.size > 0 {
                        SizeSource::Exact
                    } else {
                        SizeSource::Unknown
                    },
                    kind: KindTag::of(classify(name, r.type_char, module)),
                }
            })
            .collect();
        // Stable, so that symbols at one address keep the source's order;
        // kallsyms is sorted already except for modules, which makes this
        // nearly linear.
        entries.sort_by_key(|e| e.addr);

        // Sizes from the next higher address in the same module, walking
        // backwards: per module, the lowest address seen so far above the
        // current one. In a relocatable object the next address in another
        // section bounds nothing: sections are apart when loaded.
        let section_of = |addr| section_of(sections.as_ref(), addr);
        let mut cur = vec![None::<u64>; modules.len() + 1];
        let mut next = vec![None::<u64>; modules.len() + 1];
        for e in entries.iter_mut().rev() {
            let addr = e.addr;
            let m = usize::from(e.module);
            let (Some(cur_m), Some(next_m)) = (cur.get_mut(m), next.get_mut(m)) else {
                continue;
            };
            if cur_m.is_none_or(|c| addr < c) {
                *next_m = *cur_m;
                *cur_m = Some(addr);
            }
            if e.size_source == SizeSource::Unknown {
                if let Some(n) = next_m.filter(|&n| section_of(n) == section_of(addr)) {
                    e.size = n - addr;
                    e.size_source = SizeSource::NextSymbol;
                }
            }
        }
        let addrs: Vec<u64> = entries.iter().map(|e| e.addr).collect();
        let top = addrs.iter().step_by(BLOCK).copied().collect();

        Table {
            names,
            entries,
            addrs,
            top,
            modules,
            by_base_name: OnceLock::new(),
            source,
            addresses_hidden,
            sections,
        }
    }

    /// `addr` as the user knows it: `0x1a0`, or in a relocatable object
    /// (a module) whose every section starts at 0, `.init.text+0x0` for an
    /// address keyed by its section (a `.text` offset stands alone, see
    /// [`crate::module_sections`]).
    pub fn address_text(&self, addr: u64) -> String {
        self.sections
            .as_ref()
            .and_then(|s| s.text(addr))
            .unwrap_or_else(|| format!("{addr:#x}"))
    }

    /// The address of `offset` in the section named `section` of a
    /// relocatable object (`.init.text`, 0 gives `init_module`'s key);
    /// None for a linked image, a section it does not have or an offset of
    /// 4 GiB or more.
    pub fn section_address(&self, section: &str, offset: u64) -> Option<u64> {
        self.sections.as_ref()?.key(section, offset)
    }

    fn name_index(&self) -> &[(u64, u32)] {
        self.by_base_name.get_or_init(|| {
            let mut index: Vec<(u64, u32)> = self
                .entries
                .iter()
                .enumerate()
                .map(|(i, e)| (hash_name(base_name(self.entry_name(e))), i as u32))
                .collect();
            index.sort_unstable();
            index
        })
    }

    fn entry_name(&self, e: &Entry) -> &str {
        let start = e.name_start as usize;
        self.names
            .get(start..start + e.name_len as usize)
            .unwrap_or("")
    }

    /// The number of symbols, aliases and duplicates included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the table holds no symbol.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The file the symbols were read from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// See [`Symbols::addresses_hidden`]: lookups by address then find nothing.
    pub fn addresses_hidden(&self) -> bool {
        self.addresses_hidden
    }

    /// Module and pseudo-module names, in order of first appearance.
    pub fn modules(&self) -> &[String] {
        &self.modules
    }

    /// The symbol at a position (address order).
    pub fn get(&self, index: usize) -> Option<Symbol<'_>> {
        let e = self.entries.get(index)?;
        Some(self.symbol(index, e))
    }

    fn symbol<'a>(&'a self, index: usize, e: &Entry) -> Symbol<'a> {
        let name = self.entry_name(e);
        let module = usize::from(e.module)
            .checked_sub(1)
            .and_then(|i| self.modules.get(i))
            .map(String::as_str);
        let kind = match e.kind {
            KindTag::Function => SymbolKind::Function,
            KindTag::Padding => SymbolKind::Padding,
            KindTag::ColdFragment => SymbolKind::ColdFragment,
            KindTag::Data => SymbolKind::Data,
            KindTag::BpfDispatcher => SymbolKind::BpfDispatcher,
            KindTag::Ftrace => SymbolKind::Ftrace,
            KindTag::Kprobe => SymbolKind::Kprobe,
            KindTag::Other => SymbolKind::Other,
            // Rare: decoding the name again is cheaper than storing it.
            KindTag::BpfProgram | KindTag::BpfTrampoline => classify(name, e.type_char, module),
        };
        Symbol {
            index,
            addr: e.addr,
            size: (e.size_source != SizeSource::Unknown).then_some(e.size),
            size_source: e.size_source,
            name,
            module,
            type_char: char::from(e.type_char),
            kind,
        }
    }

    /// Every symbol in address order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Symbol<'_>> + '_ {
        self.entries
            .iter()
            .enumerate()
            .map(|(i, e)| self.symbol(i, e))
    }

    /// The symbol that contains `addr`: the best-named one (see
    /// `preference`) among those at the highest address not above it,
    /// provided its size reaches `addr`. O(log n).
    pub fn lookup(&self, addr: u64) -> Option<Hit<'_>> {
        if self.addresses_hidden {
            return None;
        }
        // Blocks whose first address is <= addr; the next block starts
        // above addr, so the last symbol <= addr is in block `b - 1`.
        let b = self.top.partition_point(|&a| a <= addr);
        let lo = b.checked_sub(1)? * BLOCK;
        let block = self.addrs.get(lo..(lo + BLOCK).min(self.addrs.len()))?;
        let end = lo + block.partition_point(|&a| a <= addr);
        let last = *self.addrs.get(end.checked_sub(1)?)?;
        // Aliases at one address are few: walk back over them.
        let start = self.addrs[..end]
            .iter()
            .rposition(|&a| a != last)
            .map_or(0, |i| i + 1);
        let (index, e) = self
            .entries
            .get(start..end)?
            .iter()
            .enumerate()
            .min_by_key(|(_, e)| preference(e))
            .map(|(i, e)| (start + i, e))?;
        // The last symbol of a section of a relocatable object does not
        // reach into the next one.
        let sections = self.sections.as_ref();
        if sections.is_some() && section_of(sections, last) != section_of(sections, addr) {
            return None;
        }
        let offset = addr - last;
        match e.size_source {
            SizeSource::Unknown => {}
            _ if offset < e.size.max(1) => {}
            _ => return None,
        }
        Some(Hit {
            symbol: self.symbol(index, e),
            offset,
        })
    }

    /// Every symbol at exactly `addr` (aliases), in source order.
    pub fn at_address(&self, addr: u64) -> impl Iterator<Item = Symbol<'_>> + '_ {
        let start = self.entries.partition_point(|e| e.addr < addr);
        let end = self.entries.partition_point(|e| e.addr <= addr);
        (start..end).filter_map(move |i| self.get(i))
    }

    /// Symbols whose base name (up to the first '.') is `base`, in address order.
    fn with_base_name<'a>(&'a self, base: &'a str) -> impl Iterator<Item = Symbol<'a>> + 'a {
        let h = hash_name(base);
        let index = self.name_index();
        let start = index.partition_point(|&(k, _)| k < h);
        let mut idx: Vec<usize> = index[start..]
            .iter()
            .take_while(|&&(k, _)| k == h)
            .map(|&(_, i)| i as usize)
            .collect();
        idx.sort_unstable();
        idx.into_iter()
            .filter_map(|i| self.get(i))
            .filter(move |s| s.base_name() == base)
    }

    /// Every symbol named exactly `name`, in address order.
    pub fn by_name<'a>(&'a self, name: &'a str) -> impl Iterator<Item = Symbol<'a>> + 'a {
        self.with_base_name(base_name(name))
            .filter(move |s| s.name == name)
    }

    /// The instances of a function as BTF names them: every symbol whose base
    /// name is `name` (`name`, `name.isra.0`, `name.cold`...), without
    /// `__pfx_` padding, in address order.
    pub fn instances<'a>(&'a self, name: &'a str) -> impl Iterator<Item = Symbol<'a>> + 'a {
        self.with_base_name(name)
    }
}

/// The KASLR offset: how far the running kernel (`live`, from kallsyms) was
/// moved from its link-time addresses (`linked`, from System.map or
/// vmlinux), from `_stext`, or `_text` when `_stext` is missing.
pub fn kaslr_offset(linked: &Symbols, live: &Symbols) -> Result<i64> {
    if live.addresses_hidden() {
        return Err(Error::hidden(live.source(), live.len()));
    }
    for anchor in ["_stext", "_text"] {
        if let (Some(a), Some(b)) = (linked.kernel_addr(anchor), live.kernel_addr(anchor)) {
            return Ok(b.wrapping_sub(a) as i64);
        }
    }
    Err(Error::NoKaslrAnchor {
        linked: linked.source().to_owned(),
        live: live.source().to_owned(),
    })
}
