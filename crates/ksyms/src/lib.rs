//! Kernel address tables: `/proc/kallsyms`, `System.map` and an ELF `.symtab`,
//! read into one [`Table`] that answers "which symbol is at this address" in
//! O(log n) and "where are the instances of this name".
//!
//! Each source format has its own reader module that produces [`Symbols`]:
//! every symbol as read, names in one shared buffer, in file order. A
//! [`Table`] sorts them by address, fills in sizes and classifies each one
//! (function, `__pfx_` padding, `.cold` fragment, BPF program, trampoline...).
//! Duplicated names are kept: telling them apart is the point of the crate.
//!
//! [`link`] then ties the symbols to BTF: which FUNC describes a function
//! symbol, exactly when the BTF carries `addr=0x` tags; [`location`] parses
//! the `name+0x10/0x360 [module]` text that oopses and stack traces print.
//!
//! Addresses are virtual addresses, as the source states them: run-time
//! addresses for `/proc/kallsyms`, link-time ones for System.map and an ELF
//! file (move them with [`Symbols::relocate`] and [`kaslr_offset`]). In a
//! relocatable object (a module's `.ko`), where every section starts at 0,
//! they are keys of section and offset ([`module_sections`]), which
//! [`Table::address_text`] shows as `.init.text+0x0`. Sizes and offsets are
//! in bytes.
//!
//! # Example
//!
//! ```
//! use std::path::Path;
//!
//! use ksyms::kallsyms::{self, Hidden};
//! use ksyms::{SymbolKind, Table};
//!
//! let text = b"ffffffff81000000 T _stext\n\
//!              ffffffff81111e80 t __pfx_vfs_read\n\
//!              ffffffff81111e90 T vfs_read\n\
//!              ffffffff81111ff0 T vfs_write\n\
//!              ffffffffc0a01000 t ext4_fill_super\t[ext4]\n";
//! let table = Table::new(kallsyms::parse(text.to_vec(), Path::new("kallsyms"), Hidden::Error)?);
//!
//! let hit = table.lookup(0xffffffff81111ea0).expect("inside vfs_read");
//! assert_eq!((hit.symbol.name, hit.offset), ("vfs_read", 0x10));
//! assert_eq!(hit.symbol.size, Some(0x160)); // up to vfs_write
//!
//! let pfx = table.by_name("__pfx_vfs_read").next().expect("listed");
//! assert_eq!(pfx.kind, SymbolKind::Padding);
//! assert_eq!(pfx.parent(), Some("vfs_read"));
//! assert_eq!(table.lookup(0xffffffffc0a01004).map(|h| h.symbol.module), Some(Some("ext4")));
//! # Ok::<(), ksyms::Error>(())
//! ```
//!
//! On a live system, read [`kallsyms::PROC_KALLSYMS`] (root, or
//! `kernel.kptr_restrict=0`, sees the addresses):
//!
//! ```no_run
//! # use std::path::Path;
//! # use ksyms::kallsyms::{self, Hidden};
//! let table = ksyms::Table::new(kallsyms::read(Path::new(kallsyms::PROC_KALLSYMS), Hidden::Error)?);
//! println!("{} symbols", table.len());
//! # Ok::<(), ksyms::Error>(())
//! ```

#![warn(missing_docs)]

pub mod elf;
mod error;
pub mod final_link;
pub mod image_symbols;
pub mod kallsyms;
pub mod kernel_lookup;
pub mod link;
pub mod location;
pub mod mcount;
pub mod module_sections;
mod scan;
pub mod system_map;
pub mod table;

use std::path::{Path, PathBuf};

use module_sections::NamedSections;

pub use error::Error;
pub use link::{BtfIndex, FuncMatch};
pub use table::{kaslr_offset, Hit, SizeSource, Symbol, SymbolKind, Table, TrampolineTarget};

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One symbol as read. Its name is `names[name_start..name_start + name_len]`
/// of the [`Symbols`] it belongs to; `module` indexes `Symbols::modules` plus
/// one, 0 meaning the kernel image itself.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawSymbol {
    pub addr: u64,
    /// The size the source states (ELF `st_size`), 0 when it states none.
    pub size: u64,
    pub name_start: u32,
    pub name_len: u32,
    pub module: u16,
    /// The `nm` type letter (`T`, `t`, `D`, ...).
    pub type_char: u8,
}

/// The symbols of one source, in the order the source lists them.
#[derive(Clone, Debug)]
pub struct Symbols {
    /// Every name, as byte ranges of this one string. For kallsyms and
    /// System.map it is the file itself, so reading allocates nothing per line.
    pub(crate) names: String,
    pub(crate) raw: Vec<RawSymbol>,
    pub(crate) modules: Vec<String>,
    pub(crate) source: PathBuf,
    pub(crate) addresses_hidden: bool,
    /// A relocatable object's sections, whose keys the addresses are.
    pub(crate) sections: Option<NamedSections>,
}

impl Symbols {
    /// No symbols yet, named `source` in errors and in the [`Table`]: for
    /// symbols a reader has as values (the kernel's own tables in memory)
    /// rather than as text, added with [`Symbols::push`].
    pub fn new(source: &Path) -> Symbols {
        Symbols {
            names: String::new(),
            raw: Vec::new(),
            modules: Vec::new(),
            source: source.to_owned(),
            addresses_hidden: false,
            sections: None,
        }
    }

    /// Room for `symbols` more symbols whose names take `name_bytes` bytes.
    pub fn reserve(&mut self, symbols: usize, name_bytes: usize) {
        self.raw.reserve(symbols);
        self.names.reserve(name_bytes);
    }

    /// Appends one symbol of the kernel image with no stated size, as a
    /// kallsyms line `addr type_char name` gives it.
    pub fn push(&mut self, addr: u64, type_char: u8, name: &str) {
        let (name_start, name_len) = self.push_name(name);
        self.raw.push(RawSymbol {
            addr,
            size: 0,
            name_start,
            name_len,
            module: 0,
            type_char,
        });
    }

    /// The file these symbols were read from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// The number of symbols, duplicates included.
    pub fn len(&self) -> usize {
        self.raw.len()
    }

    /// True when the source listed no symbol.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// True when every address read as zero: the kernel hid them from us
    /// (see [`Error::AddressesHidden`]). Names and modules are still right.
    pub fn addresses_hidden(&self) -> bool {
        self.addresses_hidden
    }

    /// Adds `offset` to every address (wrapping, as the kernel's do): moves
    /// link-time addresses (System.map, vmlinux) to where a KASLR kernel
    /// loaded them.
    pub fn relocate(&mut self, offset: i64) {
        self.relocate_from(0, offset);
    }

    /// Like [`Symbols::relocate`], for the addresses at or above `start`
    /// only: x86-64's per-CPU symbols in a System.map (offsets from 0 up to
    /// `__per_cpu_end`) are no addresses, and KASLR does not move them.
    pub fn relocate_from(&mut self, start: u64, offset: i64) {
        for s in self.raw.iter_mut().filter(|s| s.addr >= start) {
            s.addr = s.addr.wrapping_add_signed(offset);
        }
    }

    /// Appends the symbols of `other` that belong to a module or pseudo-module
    /// (`[bpf]`, `[__builtin__ftrace]`...): what a live kallsyms knows and a
    /// System.map or vmlinux cannot.
    pub fn add_modules_from(&mut self, other: &Symbols) {
        for s in other.raw.iter().filter(|s| s.module != 0) {
            let Some(name) = other.name_of(s) else {
                continue;
            };
            let Some(module) = other.module_name(s.module) else {
                continue;
            };
            let module = self.intern_module(module);
            let (name_start, name_len) = self.push_name(name);
            self.raw.push(RawSymbol {
                name_start,
                name_len,
                module,
                ..*s
            });
        }
    }

    /// Appends one symbol of `module` with its size (0: unknown), as a
    /// reader of a module's own symbol table (ELF symtab in memory) has it.
    pub fn push_module_symbol(
        &mut self,
        module: &str,
        addr: u64,
        size: u64,
        type_char: u8,
        name: &str,
    ) {
        let module = self.intern_module(module);
        let (name_start, name_len) = self.push_name(name);
        self.raw.push(RawSymbol {
            addr,
            size,
            name_start,
            name_len,
            module,
            type_char,
        });
    }

    /// The address of the first symbol of the kernel image named `name`.
    pub fn kernel_addr(&self, name: &str) -> Option<u64> {
        self.raw
            .iter()
            .find(|s| s.module == 0 && self.name_of(s) == Some(name))
            .map(|s| s.addr)
    }

    pub(crate) fn name_of(&self, s: &RawSymbol) -> Option<&str> {
        let start = s.name_start as usize;
        self.names.get(start..start + s.name_len as usize)
    }

    pub(crate) fn module_name(&self, module: u16) -> Option<&str> {
        let i = usize::from(module).checked_sub(1)?;
        self.modules.get(i).map(String::as_str)
    }

    /// The module number for `name`, adding it when new. Modules come in
    /// runs in kallsyms, so the last one is checked first.
    pub(crate) fn intern_module(&mut self, name: &str) -> u16 {
        if let Some(i) = self.modules.iter().rposition(|m| m == name) {
            return (i + 1) as u16;
        }
        self.modules.push(name.to_owned());
        self.modules.len() as u16
    }

    pub(crate) fn push_name(&mut self, name: &str) -> (u32, u32) {
        let start = self.names.len() as u32;
        self.names.push_str(name);
        (start, name.len() as u32)
    }
}
