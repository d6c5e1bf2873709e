//! How an unmodified kernel finds the code of a BTF FUNC by its name, and
//! the FUNC naming rule built on it.
//!
//! fentry/fexit/fmod_ret programs name a FUNC by BTF id; the verifier
//! (`bpf_check_attach_target`) checks the program against that FUNC's
//! prototype and attaches at `kallsyms_lookup_name(FUNC name)`: the symbol
//! of exactly that name with the LOWEST address (scripts/kallsyms.c sorts
//! equal names by address, kernel/kallsyms.c returns the first). Up to 6.10,
//! kernels built with CONFIG_LTO_CLANG compare symbol names with their
//! `.llvm.<hash>` suffix cut off; from 6.11 names match exactly. kallsyms
//! holds data symbols too (CONFIG_KALLSYMS_ALL), so the lowest `foo` may be
//! a variable. A module's own lookup (`find_kallsyms_symbol_value`) takes
//! the first symbol of that name in the module's symbol table.
//!
//! The naming rule (docs/funcs-and-fentry.md, "How btfkit names FUNCs"),
//! which makes every FUNC either the kernel's pick or unreachable by name:
//! - a FUNC that describes the instance the kernel picks for a symbol name
//!   is named exactly that symbol-table name, compiler suffix included
//!   (`cpumask_weight`, a consistent `foo.isra.0`, `find_next_bit.constprop.0`):
//!   fentry attaches to it, and libbpf's `foo.*` patterns match it;
//! - every other instance's FUNC is named `<symbol>..<address in hex>`
//!   (`wakeup_show..ffffffff8170ac00`, the drivers/base/power/sysfs.c one
//!   when the kernel/irq/irqdesc.c one has the lower address): `..` is in
//!   no C compiler's symbol names (GCC and LLVM suffixes are `.<word>` and
//!   `.<number>`), the encoder also checks that no symbol of the input has
//!   such a name, and the kernel's BTF verifier accepts it (FUNC names are
//!   `[A-Za-z_.][A-Za-z0-9_.]*`, kernel/bpf/btf.c `__btf_name_char_ok`).
//!   The lookup of such a name fails ("The address of function ... cannot
//!   be found"), so no program runs on the wrong instance; the name says
//!   which instance it is, and its `addr=` tag says it to tools.
//!   Instances that share a prototype with the kernel's pick (the two
//!   `bpf_iter_detach_map`) share its FUNC and its name.

use rustc_hash::FxHashMap;

/// What separates a symbol name from the address in an unreachable FUNC name.
pub const UNREACHABLE_SEPARATOR: &str = "..";

/// Longest name older kernels accept (KSYM_NAME_LEN was 128 before 6.1).
const MAX_NAME: usize = 127;

/// The kernel's `kallsyms_lookup_name` over one symbol table.
/// Names are borrowed from the symbol table (a vmlinux has ~150,000): an
/// owned copy of each cost tens of ms on the encode's critical path.
#[derive(Clone, Debug, Default)]
pub struct KernelLookup<'a> {
    /// Name -> the address the exact-match lookup returns.
    exact: FxHashMap<&'a str, u64>,
    /// Name with `.llvm.<hash>` cut -> lowest address: what kernels up to
    /// 6.10 built with LTO_CLANG return. Empty without `.llvm.` symbols.
    stripped: FxHashMap<&'a str, u64>,
}

/// Where a lookup by name lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Picks {
    /// Exact match (every kernel without LTO_CLANG; 6.11 and later).
    pub exact: Option<u64>,
    /// `.llvm.<hash>` stripped (LTO_CLANG kernels up to 6.10), when it
    /// differs from `exact`.
    pub stripped: Option<u64>,
}

impl Picks {
    /// Every address some kernel attaches a FUNC of this name to.
    pub fn addresses(&self) -> impl Iterator<Item = u64> {
        self.exact.into_iter().chain(self.stripped)
    }

    /// Whether no kernel attaches a FUNC of this name anywhere.
    pub fn is_none(&self) -> bool {
        self.exact.is_none() && self.stripped.is_none()
    }
}

/// `name` with an LLVM LTO promotion suffix (`.llvm.<hash>`) cut off.
/// Runs for every symbol of vmlinux: `str::find` with a string pattern
/// sets up a two-way searcher per call, here a scan for the dots, which
/// most kernel symbols have none of.
pub fn strip_llvm(name: &str) -> Option<&str> {
    memchr::memchr_iter(b'.', name.as_bytes())
        .find(|&i| name.as_bytes()[i..].starts_with(b".llvm."))
        .map(|i| &name[..i])
}

impl<'a> KernelLookup<'a> {
    /// From every symbol kallsyms would list (functions and data), in
    /// symbol-table order. `first_in_table`: a module (ET_REL), whose lookup
    /// takes the first symbol of a name in table order, not the lowest.
    pub fn new(
        symbols: impl IntoIterator<Item = (&'a str, u64)>,
        first_in_table: bool,
    ) -> KernelLookup<'a> {
        let symbols = symbols.into_iter();
        let mut l = KernelLookup {
            exact: FxHashMap::with_capacity_and_hasher(symbols.size_hint().0, Default::default()),
            stripped: FxHashMap::default(),
        };
        let keep = |slot: &mut u64, addr: u64| {
            if !first_in_table && addr < *slot {
                *slot = addr;
            }
        };
        for (name, addr) in symbols {
            if name.is_empty() {
                continue;
            }
            l.exact
                .entry(name)
                .and_modify(|slot| keep(slot, addr))
                .or_insert(addr);
            if let Some(base) = strip_llvm(name) {
                l.stripped
                    .entry(base)
                    .and_modify(|slot| keep(slot, addr))
                    .or_insert(addr);
            }
        }
        // A stripped lookup also matches the unsuffixed symbols themselves.
        if !l.stripped.is_empty() {
            let names: Vec<&str> = l.stripped.keys().copied().collect();
            for n in names {
                if let (Some(&e), Some(s)) = (l.exact.get(n), l.stripped.get_mut(n)) {
                    keep(s, e);
                }
            }
        }
        l
    }

    /// Whether the symbols come from an LTO_CLANG build (`.llvm.` suffixes).
    pub fn lto(&self) -> bool {
        !self.stripped.is_empty()
    }

    /// Where the kernel attaches a FUNC named `name`.
    pub fn picks(&self, name: &str) -> Picks {
        let exact = self.exact.get(name).copied();
        let stripped = self
            .stripped
            .get(name)
            .copied()
            .filter(|&s| Some(s) != exact);
        // A name with `.llvm.` is never found by a stripping kernel.
        Picks { exact, stripped }
    }

    /// Every name with the address the exact-match lookup returns.
    pub fn exact_picks(&self) -> impl Iterator<Item = (&'a str, u64)> + '_ {
        self.exact.iter().map(|(&n, &a)| (n, a))
    }

    /// Whether some symbol has exactly this name.
    pub fn is_symbol(&self, name: &str) -> bool {
        self.exact.contains_key(name)
    }

    /// The FUNC name of an instance the kernel does not pick: see the
    /// module documentation. Never a symbol of this table.
    pub fn unreachable_name(&self, symbol: &str, address: u64) -> String {
        let head = unreachable_head(symbol, address);
        let mut name = format!("{head}{UNREACHABLE_SEPARATOR}{address:x}");
        while self.is_symbol(&name) || self.stripped.contains_key(name.as_str()) {
            name.push('_');
        }
        name
    }
}

/// The part of `symbol` that its unreachable FUNC name at `address`
/// keeps: all of it, unless the name would be longer than older kernels
/// take.
pub fn unreachable_head(symbol: &str, address: u64) -> &str {
    let tail = UNREACHABLE_SEPARATOR.len() + format!("{address:x}").len();
    // Names are ASCII in practice; cut at a char boundary regardless.
    let mut end = MAX_NAME.saturating_sub(tail).min(symbol.len());
    while !symbol.is_char_boundary(end) {
        end -= 1;
    }
    symbol.get(..end).unwrap_or(symbol)
}

/// The symbol-table name and address an unreachable FUNC name stands for
/// (its symbol part is [`unreachable_head`] of that name).
pub fn parse_unreachable_name(name: &str) -> Option<(&str, u64)> {
    let (symbol, hex) = name.rsplit_once(UNREACHABLE_SEPARATOR)?;
    let hex = hex.trim_end_matches('_');
    Some((symbol, u64::from_str_radix(hex, 16).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lowest_address_wins_and_data_counts() {
        let l = KernelLookup::new(
            [
                ("state_show", 0x2000),
                ("state_show", 0x1000),
                ("counter", 0x500),
                ("counter", 0x3000),
            ],
            false,
        );
        assert_eq!(l.picks("state_show").exact, Some(0x1000));
        assert_eq!(l.picks("counter").exact, Some(0x500));
        assert!(l.picks("nothing").is_none());
        assert!(!l.lto());
        let m = KernelLookup::new([("f", 0x2000), ("f", 0x1000)], true);
        assert_eq!(m.picks("f").exact, Some(0x2000));
    }

    #[test]
    fn strip_llvm_cuts_at_the_first_llvm_suffix() {
        assert_eq!(strip_llvm("foo.isra.0.llvm.123"), Some("foo.isra.0"));
        assert_eq!(strip_llvm("a.llvm.1.llvm.2"), Some("a"));
        assert_eq!(strip_llvm(".llvm.7"), Some(""));
        assert_eq!(strip_llvm("foo.llvm"), None);
        assert_eq!(strip_llvm("foo.cold"), None);
        assert_eq!(strip_llvm("foo"), None);
    }

    #[test]
    fn llvm_suffix_stripped_by_old_lto_kernels() {
        let l = KernelLookup::new([("foo.llvm.123", 0x1000), ("foo", 0x2000)], false);
        assert!(l.lto());
        assert_eq!(
            l.picks("foo"),
            Picks {
                exact: Some(0x2000),
                stripped: Some(0x1000)
            }
        );
        assert_eq!(l.picks("foo.llvm.123").exact, Some(0x1000));
    }

    #[test]
    fn unreachable_names_round_trip_and_avoid_symbols() {
        let l = KernelLookup::new([("wakeup_show..ffff", 1)], false);
        let n = l.unreachable_name("wakeup_show", 0xffff);
        assert_eq!(n, "wakeup_show..ffff_");
        assert_eq!(parse_unreachable_name(&n), Some(("wakeup_show", 0xffff)));
        let long = "x".repeat(200);
        let n = l.unreachable_name(&long, 0xffffffff81000000);
        assert!(n.len() <= MAX_NAME);
        assert!(n.ends_with("..ffffffff81000000"));
    }
}
