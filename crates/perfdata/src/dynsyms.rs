//! Dynamic kernel symbols over time: BPF programs, trampolines, dispatchers,
//! ftrace and kprobe code that the kernel registers and unregisters while it
//! runs (PERF_RECORD_KSYMBOL). Each registration becomes a lifetime; an
//! address resolves to the symbol that was there at a given time.
//!
//! The input is not trusted to be consistent: records get lost, files start
//! after a symbol was registered, per-CPU buffers interleave out of order.
//! None of that is fatal; each oddity becomes a [`Warning`].

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::records::{ksym_type, tag_hex};

/// A BPF program a symbol belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpfProg {
    /// The program id.
    pub id: u32,
    /// The program tag.
    pub tag: [u8; 8],
}

/// How a lifetime ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The kernel unregistered it.
    Unregistered,
    /// Another symbol was registered over it while it was live (freed code
    /// reused by BPF or a trampoline, a case raised in the review of
    /// PERF_RECORD_KSYMBOL, kernel commit 76193a94522f; or a lost unregister).
    Superseded {
        /// The index of the lifetime that replaced it.
        by: usize,
    },
}

/// One lifetime of one dynamic symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynSym {
    /// The name, as kallsyms lists it.
    pub name: String,
    /// The kernel virtual address the text starts at.
    pub addr: u64,
    /// Its length in bytes.
    pub len: u32,
    /// PERF_RECORD_KSYMBOL's ksym_type (see [`ksym_type`]).
    pub ksym_type: u16,
    /// When it was registered, in nanoseconds of the perf clock. `None`:
    /// registered before the first record we have (or its record was lost);
    /// it is taken as live from the beginning.
    pub registered: Option<u64>,
    /// When it was unregistered or superseded; `None`: still live at the end.
    pub unregistered: Option<u64>,
    /// How the lifetime ended; `None` while live.
    pub end: Option<End>,
    /// The BPF program, for `bpf_prog_*` symbols whose program is known.
    pub bpf: Option<BpfProg>,
    /// Where the register record is in the file.
    pub register_offset: Option<u64>,
    /// Where the unregister record is in the file.
    pub unregister_offset: Option<u64>,
}

impl DynSym {
    /// One past the last byte, counting a zero-length symbol as one byte so
    /// that its own address still finds it.
    pub fn end_addr(&self) -> u64 {
        self.addr.saturating_add(u64::from(self.len.max(1)))
    }

    /// Whether `addr` falls in the symbol (see [`DynSym::end_addr`]).
    pub fn contains(&self, addr: u64) -> bool {
        self.addr <= addr && addr < self.end_addr()
    }

    /// Live at `time`: registered at or before it, unregistered after it.
    pub fn alive_at(&self, time: u64) -> bool {
        self.registered.is_none_or(|r| r <= time) && self.unregistered.is_none_or(|u| time < u)
    }

    /// The ksym_type's name: `bpf`, `ool`...
    pub fn type_name(&self) -> &'static str {
        ksym_type::name(self.ksym_type)
    }
}

/// A register or unregister as it comes: what, where in the file, when.
#[derive(Clone, Copy, Debug)]
pub struct Change<'a> {
    /// The symbol name.
    pub name: &'a str,
    /// The kernel virtual address of its text.
    pub addr: u64,
    /// Its length in bytes.
    pub len: u32,
    /// A [`ksym_type`] value.
    pub ksym_type: u16,
    /// When, in nanoseconds of the perf clock, if known.
    pub time: Option<u64>,
    /// The record's offset in the file, if it came from one.
    pub offset: Option<u64>,
}

/// Something odd in the input, which the table worked around.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Warning {
    /// A symbol was registered over one still live.
    Overlap {
        /// The index of the lifetime that was live there.
        old: usize,
        /// The index of the lifetime registered over it.
        new: usize,
        /// The live symbol's name.
        old_name: String,
        /// The new symbol's name.
        new_name: String,
        /// The address of the change.
        addr: u64,
        /// When, in nanoseconds of the perf clock, if the record says.
        time: Option<u64>,
        /// Where the record is in the file, if it came from one.
        offset: Option<u64>,
    },
    /// The same symbol registered twice at the same place while live.
    DuplicateRegister {
        /// The index of the lifetime concerned.
        index: usize,
        /// The symbol's name.
        name: String,
        /// The address of the change.
        addr: u64,
        /// When, in nanoseconds of the perf clock, if the record says.
        time: Option<u64>,
        /// Where the record is in the file, if it came from one.
        offset: Option<u64>,
    },
    /// An unregister for nothing live there: registered before the
    /// recording, or its register was lost.
    UnknownUnregister {
        /// The index of the lifetime concerned.
        index: usize,
        /// The symbol's name.
        name: String,
        /// The address of the change.
        addr: u64,
        /// When, in nanoseconds of the perf clock, if the record says.
        time: Option<u64>,
        /// Where the record is in the file, if it came from one.
        offset: Option<u64>,
    },
    /// An unregister at a live symbol's address under another name.
    NameMismatch {
        /// The index of the lifetime concerned.
        index: usize,
        /// The name of the symbol live there.
        live_name: String,
        /// The name the unregister gives.
        unregistered_name: String,
        /// The address of the change.
        addr: u64,
        /// When, in nanoseconds of the perf clock, if the record says.
        time: Option<u64>,
        /// Where the record is in the file, if it came from one.
        offset: Option<u64>,
    },
    /// A change older than one already applied.
    OutOfOrder {
        /// The symbol's name.
        name: String,
        /// When, in nanoseconds of the perf clock, if the record says.
        time: u64,
        /// The time of the latest change applied before it.
        previous: u64,
        /// Where the record is in the file, if it came from one.
        offset: Option<u64>,
    },
}

fn at(time: Option<u64>, offset: Option<u64>) -> String {
    let mut s = String::new();
    if let Some(t) = time {
        s.push_str(&format!(" at {}", crate::format_time(t)));
    }
    if let Some(o) = offset {
        s.push_str(&format!(" (record at offset {o:#x})"));
    }
    s
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Overlap {
                old_name,
                new_name,
                addr,
                time,
                offset,
                ..
            } => write!(
                f,
                "{new_name} registered at {addr:#x} over live {old_name}{}",
                at(*time, *offset)
            ),
            Warning::DuplicateRegister {
                name,
                addr,
                time,
                offset,
                ..
            } => write!(f, "{name} at {addr:#x} registered again while live{}", at(*time, *offset)),
            Warning::UnknownUnregister {
                name,
                addr,
                time,
                offset,
                ..
            } => write!(
                f,
                "{name} at {addr:#x} unregistered but never registered (before the recording, or lost){}",
                at(*time, *offset)
            ),
            Warning::NameMismatch {
                live_name,
                unregistered_name,
                addr,
                time,
                offset,
                ..
            } => write!(
                f,
                "unregister of {unregistered_name} at {addr:#x} where {live_name} is live{}",
                at(*time, *offset)
            ),
            Warning::OutOfOrder {
                name,
                time,
                previous,
                offset,
            } => write!(
                f,
                "{name} at {} comes after a change at {}{}",
                crate::format_time(*time),
                crate::format_time(*previous),
                at(None, *offset)
            ),
        }
    }
}

/// The lifetimes of dynamic symbols, with lookup by address and time.
#[derive(Clone, Debug, Default)]
pub struct DynSymTable {
    syms: Vec<DynSym>,
    /// Live lifetimes by start address. They never overlap: a register over
    /// a live symbol ends it.
    live: BTreeMap<u64, usize>,
    /// Every lifetime by start address, for lookups at any time.
    by_addr: BTreeSet<(u64, usize)>,
    /// The longest extent, which bounds how far below an address a symbol
    /// containing it can start.
    max_extent: u64,
    last_time: Option<u64>,
    warnings: Vec<Warning>,
}

impl DynSymTable {
    /// An empty table.
    pub fn new() -> DynSymTable {
        DynSymTable::default()
    }

    /// Every lifetime, indexed as the rest of the API indexes them (the
    /// order of registration).
    pub fn symbols(&self) -> &[DynSym] {
        &self.syms
    }

    /// The lifetime with this index.
    pub fn get(&self, index: usize) -> Option<&DynSym> {
        self.syms.get(index)
    }

    /// The number of lifetimes.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// True when nothing was registered.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The oddities met so far, in input order.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The symbols live now (after the last change).
    pub fn live(&self) -> impl Iterator<Item = (usize, &DynSym)> + '_ {
        self.live
            .values()
            .filter_map(|&i| self.syms.get(i).map(|s| (i, s)))
    }

    /// Records which BPF program the lifetime `index` belongs to.
    pub fn set_bpf(&mut self, index: usize, prog: BpfProg) {
        if let Some(s) = self.syms.get_mut(index) {
            s.bpf = Some(prog);
        }
    }

    fn note_time(&mut self, c: &Change<'_>) {
        let Some(t) = c.time else { return };
        match self.last_time {
            Some(prev) if t < prev => self.warnings.push(Warning::OutOfOrder {
                name: c.name.to_owned(),
                time: t,
                previous: prev,
                offset: c.offset,
            }),
            _ => self.last_time = Some(t),
        }
    }

    fn push(&mut self, s: DynSym) -> usize {
        let index = self.syms.len();
        self.max_extent = self.max_extent.max(s.end_addr() - s.addr);
        self.by_addr.insert((s.addr, index));
        self.syms.push(s);
        index
    }

    /// Registers a symbol; returns its lifetime's index.
    pub fn register(&mut self, c: Change<'_>) -> usize {
        self.note_time(&c);
        // Came out of order after its own unregister: complete that lifetime.
        if let Some(index) = self.orphan_for(&c) {
            if let Some(s) = self.syms.get_mut(index) {
                s.registered = c.time;
                s.register_offset = c.offset;
            }
            self.warnings.retain(
                |w| !matches!(w, Warning::UnknownUnregister { index: i, .. } if *i == index),
            );
            return index;
        }
        let end = c.addr.saturating_add(u64::from(c.len.max(1)));
        let overlapping: Vec<usize> = self
            .live
            .range(..end)
            .rev()
            .map(|(_, &i)| i)
            .take_while(|&i| self.syms.get(i).is_some_and(|s| s.end_addr() > c.addr))
            .collect();
        for &old in &overlapping {
            let Some(s) = self.syms.get(old) else {
                continue;
            };
            if s.addr == c.addr && s.len == c.len && s.name == c.name {
                self.warnings.push(Warning::DuplicateRegister {
                    index: old,
                    name: c.name.to_owned(),
                    addr: c.addr,
                    time: c.time,
                    offset: c.offset,
                });
                return old;
            }
        }
        let new = self.push(DynSym {
            name: c.name.to_owned(),
            addr: c.addr,
            len: c.len,
            ksym_type: c.ksym_type,
            registered: c.time,
            unregistered: None,
            end: None,
            bpf: None,
            register_offset: c.offset,
            unregister_offset: None,
        });
        for old in overlapping {
            let Some(s) = self.syms.get_mut(old) else {
                continue;
            };
            self.live.remove(&s.addr);
            s.unregistered = c.time;
            s.end = Some(End::Superseded { by: new });
            self.warnings.push(Warning::Overlap {
                old,
                new,
                old_name: s.name.clone(),
                new_name: c.name.to_owned(),
                addr: c.addr,
                time: c.time,
                offset: c.offset,
            });
        }
        self.live.insert(c.addr, new);
        new
    }

    /// A lifetime made by an unregister that came before its register.
    fn orphan_for(&self, c: &Change<'_>) -> Option<usize> {
        let t = c.time?;
        self.by_addr
            .range((c.addr, 0)..=(c.addr, usize::MAX))
            .map(|&(_, i)| i)
            .find(|&i| {
                self.syms.get(i).is_some_and(|s| {
                    s.registered.is_none()
                        && s.register_offset.is_none()
                        && s.name == c.name
                        && s.unregistered.is_some_and(|u| t <= u)
                })
            })
    }

    /// Unregisters the symbol live at `c.addr`; returns its lifetime's index.
    pub fn unregister(&mut self, c: Change<'_>) -> usize {
        self.note_time(&c);
        if let Some(index) = self.live.remove(&c.addr) {
            if let Some(s) = self.syms.get_mut(index) {
                if s.name != c.name {
                    self.warnings.push(Warning::NameMismatch {
                        index,
                        live_name: s.name.clone(),
                        unregistered_name: c.name.to_owned(),
                        addr: c.addr,
                        time: c.time,
                        offset: c.offset,
                    });
                }
                s.unregistered = c.time;
                s.unregister_offset = c.offset;
                s.end = Some(End::Unregistered);
            }
            return index;
        }
        let index = self.push(DynSym {
            name: c.name.to_owned(),
            addr: c.addr,
            len: c.len,
            ksym_type: c.ksym_type,
            registered: None,
            unregistered: c.time,
            end: Some(End::Unregistered),
            bpf: None,
            register_offset: None,
            unregister_offset: c.offset,
        });
        self.warnings.push(Warning::UnknownUnregister {
            index,
            name: c.name.to_owned(),
            addr: c.addr,
            time: c.time,
            offset: c.offset,
        });
        index
    }

    /// The symbol at `addr` at `time`, and the offset of `addr` in it.
    pub fn lookup(&self, addr: u64, time: u64) -> Option<(usize, &DynSym, u64)> {
        let low = addr.saturating_sub(self.max_extent.saturating_sub(1));
        self.by_addr
            .range((low, 0)..=(addr, usize::MAX))
            .rev()
            .filter_map(|&(_, i)| self.syms.get(i).map(|s| (i, s)))
            .find(|(_, s)| s.contains(addr) && s.alive_at(time))
            .map(|(i, s)| (i, s, addr - s.addr))
    }
}

/// `bpf_prog_<tag>_<name>`: the tag in a BPF program's symbol name.
pub fn tag_of_name(name: &str) -> Option<[u8; 8]> {
    let hex = name.strip_prefix("bpf_prog_")?.get(..16)?;
    let v = u64::from_str_radix(hex, 16).ok()?;
    Some(v.to_be_bytes())
}

/// The tag of a program as text, as kallsyms writes it.
pub fn tag_text(tag: &[u8; 8]) -> String {
    tag_hex(tag)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::unwrap_used)]
mod tests {
    use super::*;

    fn change(name: &str, addr: u64, len: u32, time: u64) -> Change<'_> {
        Change {
            name,
            addr,
            len,
            ksym_type: ksym_type::BPF,
            time: Some(time),
            offset: None,
        }
    }

    #[test]
    fn lookup_by_address_and_time() {
        let mut t = DynSymTable::new();
        t.register(change("a", 0x1000, 0x40, 10));
        t.unregister(change("a", 0x1000, 0x40, 20));
        t.register(change("b", 0x1000, 0x80, 30));
        assert_eq!(t.lookup(0x1010, 15).unwrap().1.name, "a");
        assert_eq!(t.lookup(0x1010, 15).unwrap().2, 0x10);
        assert!(t.lookup(0x1010, 25).is_none());
        assert!(t.lookup(0x1010, 5).is_none());
        assert_eq!(t.lookup(0x1070, 35).unwrap().1.name, "b");
        assert!(t.lookup(0x1070, 15).is_none(), "a is only 0x40 long");
        assert!(t.warnings().is_empty());
    }

    #[test]
    fn register_over_live_symbol_is_reported_and_ends_it() {
        let mut t = DynSymTable::new();
        let old = t.register(change("init_code", 0x2000, 0x100, 10));
        let new = t.register(change("bpf_prog_x", 0x2080, 0x10, 20));
        assert_eq!(t.get(old).unwrap().end, Some(End::Superseded { by: new }));
        assert_eq!(t.get(old).unwrap().unregistered, Some(20));
        assert!(
            matches!(t.warnings()[0], Warning::Overlap { old: o, new: n, .. } if o == old && n == new)
        );
        assert_eq!(t.lookup(0x2010, 15).unwrap().1.name, "init_code");
        assert!(t.lookup(0x2010, 25).is_none());
        assert_eq!(t.lookup(0x2085, 25).unwrap().1.name, "bpf_prog_x");
    }

    #[test]
    fn unknown_unregister_is_a_warning_and_a_lifetime_from_the_start() {
        let mut t = DynSymTable::new();
        let i = t.unregister(change("old", 0x3000, 8, 50));
        assert!(matches!(t.warnings()[0], Warning::UnknownUnregister { .. }));
        assert_eq!(t.get(i).unwrap().registered, None);
        assert_eq!(t.lookup(0x3000, 0).unwrap().1.name, "old");
        assert!(t.lookup(0x3000, 50).is_none());
    }

    #[test]
    fn out_of_order_register_completes_the_lifetime() {
        let mut t = DynSymTable::new();
        let i = t.unregister(change("p", 0x4000, 8, 50));
        let j = t.register(change("p", 0x4000, 8, 40));
        assert_eq!(i, j);
        assert_eq!(t.get(i).unwrap().registered, Some(40));
        assert_eq!(t.live().count(), 0);
        assert_eq!(t.warnings().len(), 1);
        assert!(matches!(
            t.warnings()[0],
            Warning::OutOfOrder {
                time: 40,
                previous: 50,
                ..
            }
        ));
        assert!(t.lookup(0x4000, 39).is_none());
        assert!(t.lookup(0x4000, 45).is_some());
    }

    #[test]
    fn duplicate_register_keeps_one_lifetime() {
        let mut t = DynSymTable::new();
        let i = t.register(change("d", 0x5000, 8, 1));
        let j = t.register(change("d", 0x5000, 8, 2));
        assert_eq!(i, j);
        assert_eq!(t.len(), 1);
        assert!(matches!(t.warnings()[0], Warning::DuplicateRegister { .. }));
    }

    #[test]
    fn tag_is_read_from_the_name() {
        assert_eq!(
            tag_of_name("bpf_prog_59f4a931744dcdc6_btfkit_probe"),
            Some([0x59, 0xf4, 0xa9, 0x31, 0x74, 0x4d, 0xcd, 0xc6])
        );
        assert_eq!(tag_of_name("bpf_trampoline_1"), None);
    }
}
