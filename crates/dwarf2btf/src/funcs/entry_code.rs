//! The instructions a kernel build puts at a function's entry before its
//! own code: `endbr64` (IBT) and the 5-byte ftrace site, `call __fentry__`
//! or the NOP that objtool (`--mnop`) or ftrace writes in its place.
//! `__fentry__` saves and restores every argument register, the others
//! change no register at all, so where a parameter is at the end of this
//! prefix is where it arrived. clang starts parameters' location lists
//! there, not at the entry address (GCC starts them at the entry address).
//!
//! Invariant: `own_code` skips only these instructions, read byte by byte
//! in every executable section that has code at the address (in a
//! relocatable file addresses are keyed by section, ksyms::module_sections, so
//! that is the one section of the key; were there several, all of them
//! must agree); a `call` counts only when
//! its target is `__fentry__` (the symbol's address in a linked file, a
//! relocation against the symbol in a relocatable one).

use super::ARCH;
use ksyms::module_sections::{symbol_address, ModuleSections};
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget, SectionKind};
use rustc_hash::{FxHashMap, FxHashSet};

const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];
/// `nopl 0x0(%rax,%rax,1)`: the NOP x86 writes over a 5-byte call.
const NOP5: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x00];
const CALL_REL32: u8 = 0xe8;

struct Text<'a> {
    address: u64,
    bytes: &'a [u8],
    /// In a relocatable file: offsets of relocations against `__fentry__`.
    fentry_relocs: FxHashSet<u64>,
}

/// The executable sections of one ELF file, for reading entry prefixes.
pub struct EntryCode<'a> {
    text: Vec<Text<'a>>,
    /// `__fentry__`'s address in a linked file.
    fentry: Option<u64>,
    /// A relocatable object (a module): its code addresses are keyed by
    /// section (ksyms::module_sections).
    pub relocatable: bool,
    /// In a relocatable object: the key of each relocated place in code ->
    /// for a 32-bit PC-relative relocation against a symbol with a
    /// section, the key it reaches from the field's end (a `call rel32`'s
    /// target); None for any other.
    pc32_targets: FxHashMap<u64, Option<u64>>,
}

impl<'a> EntryCode<'a> {
    /// The executable sections of `obj` and where `__fentry__` is (its
    /// address in a linked file, the relocations against it in a
    /// relocatable one).
    pub fn of(obj: &object::File<'a>) -> EntryCode<'a> {
        let relocatable = obj.kind() == object::ObjectKind::Relocatable;
        let keys = ModuleSections::of(obj);
        let fentry_sym = obj
            .symbols()
            .find(|s| s.name() == Ok("__fentry__"))
            .map(|s| (s.index(), s.address(), s.is_definition()));
        let text = obj
            .sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .filter_map(|s| {
                let fentry_relocs = match fentry_sym {
                    Some((index, _, _)) if relocatable => s
                        .relocations()
                        .filter(|(_, r)| r.target() == RelocationTarget::Symbol(index))
                        .map(|(offset, _)| offset)
                        .collect(),
                    _ => FxHashSet::default(),
                };
                Some(Text {
                    address: match &keys {
                        Some(m) => m.key(s.index().0, 0),
                        None => s.address(),
                    },
                    bytes: s.data().ok()?,
                    fentry_relocs,
                })
            })
            .collect();
        EntryCode {
            text,
            fentry: fentry_sym
                .filter(|&(_, _, defined)| defined && !relocatable)
                .map(|(_, address, _)| address),
            relocatable,
            pc32_targets: keys.map_or_else(FxHashMap::default, |k| pc32_targets(obj, &k)),
        }
    }

    /// The target of the `call rel32` at `at`: None where no section with
    /// code there has one, or two sections disagree on its target.
    pub fn call_target(&self, at: u64) -> Option<u64> {
        let mut agreed = None;
        for bytes in self.code_at(at) {
            let [CALL_REL32, a, b, c, d, ..] = *bytes else {
                continue;
            };
            // A relocation gives a relocatable object's target; without
            // one the assembler resolved the call within the section.
            let rel = i64::from(i32::from_le_bytes([a, b, c, d]));
            let target = match self.pc32_targets.get(&at.wrapping_add(1)) {
                Some(&t) => t?,
                None => at.wrapping_add(5).wrapping_add_signed(rel),
            };
            match agreed {
                None => agreed = Some(target),
                Some(x) if x == target => {}
                Some(_) => return None,
            }
        }
        agreed
    }

    /// Where the function entered at `entry` starts its own code: `entry`
    /// itself unless every section with code there begins it with the same
    /// prefix.
    pub fn own_code(&self, entry: u64) -> u64 {
        let mut agreed = None;
        for t in &self.text {
            let Some(bytes) = entry
                .checked_sub(t.address)
                .and_then(|off| t.bytes.get(usize::try_from(off).ok()?..))
            else {
                continue;
            };
            let end = entry.saturating_add(self.prefix_len(t, entry, bytes));
            match agreed {
                None => agreed = Some(end),
                Some(e) if e == end => {}
                Some(_) => return entry,
            }
        }
        agreed.unwrap_or(entry)
    }

    /// The bytes from `at` to the end of its section, in every executable
    /// section that has code there.
    pub fn code_at(&self, at: u64) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.text.iter().filter_map(move |t| {
            let off = usize::try_from(at.checked_sub(t.address)?).ok()?;
            t.bytes.get(off..)
        })
    }

    /// The length of the prefix at `at`, whose bytes (to the section's end)
    /// are `bytes`.
    fn prefix_len(&self, t: &Text<'_>, at: u64, bytes: &[u8]) -> u64 {
        let ibt = if bytes.starts_with(&ENDBR64) { 4 } else { 0 };
        let site = &bytes[ibt..];
        let ftrace = if site.starts_with(&NOP5)
            || self.calls_fentry(t, at.saturating_add(ibt as u64), site)
        {
            5
        } else {
            0
        };
        (ibt + ftrace) as u64
    }

    /// Whether the instruction at `at` (bytes `site`) is `call __fentry__`.
    fn calls_fentry(&self, t: &Text<'_>, at: u64, site: &[u8]) -> bool {
        let [CALL_REL32, a, b, c, d, ..] = *site else {
            return false;
        };
        if t.fentry_relocs
            .contains(&(at.wrapping_sub(t.address).wrapping_add(1)))
        {
            return true;
        }
        let rel = i64::from(i32::from_le_bytes([a, b, c, d]));
        self.fentry
            .is_some_and(|f| at.wrapping_add(5).wrapping_add_signed(rel) == f)
    }
}

/// The relocated places of a relocatable object's code, by key: with the
/// target of a 32-bit PC-relative relocation (the architecture's
/// `pc32_relocs`) against a symbol with a section, its key plus the
/// addend, from the field's end (4 bytes on).
fn pc32_targets(obj: &object::File<'_>, keys: &ModuleSections) -> FxHashMap<u64, Option<u64>> {
    let mut targets = FxHashMap::default();
    for s in obj.sections().filter(|s| s.kind() == SectionKind::Text) {
        for (offset, r) in s.relocations() {
            let pc32 = matches!(
                r.flags(),
                RelocationFlags::Elf { r_type } if ARCH.pc32_relocs.contains(&r_type)
            );
            let symbol = match r.target() {
                RelocationTarget::Symbol(i) => obj.symbol_by_index(i).ok(),
                _ => None,
            };
            let target = symbol
                .filter(|sym| pc32 && sym.section_index().is_some())
                .map(|sym| {
                    symbol_address(Some(keys), &sym)
                        .wrapping_add_signed(r.addend())
                        .wrapping_add(4)
                });
            targets.insert(keys.key(s.index().0, offset), target);
        }
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(bytes: &[u8], fentry: Option<u64>) -> EntryCode<'_> {
        EntryCode {
            text: vec![Text {
                address: 0x1000,
                bytes,
                fentry_relocs: FxHashSet::default(),
            }],
            fentry,
            relocatable: false,
            pc32_targets: FxHashMap::default(),
        }
    }

    #[test]
    fn skips_endbr64_and_the_ftrace_site_only() {
        let nop = [ENDBR64.as_slice(), &NOP5, &[0x48, 0x85, 0xf6]].concat();
        assert_eq!(code(&nop, None).own_code(0x1000), 0x1009);
        assert_eq!(code(&nop[4..], None).own_code(0x1000), 0x1005);
        // call rel32 to 0x2000 from 0x1004: 0x2000 - 0x1009 = 0xff7.
        let call = [ENDBR64.as_slice(), &[0xe8, 0xf7, 0x0f, 0, 0], &[0xc3]].concat();
        assert_eq!(code(&call, Some(0x2000)).own_code(0x1000), 0x1009);
        assert_eq!(code(&call, Some(0x3000)).own_code(0x1000), 0x1004);
        // mov %rsi,%rdi first: nothing is skipped.
        assert_eq!(code(&[0x48, 0x89, 0xf7], None).own_code(0x1000), 0x1000);
        // Outside every section, and a truncated NOP.
        assert_eq!(code(&nop, None).own_code(0x5000), 0x5000);
        assert_eq!(code(&NOP5[..4], None).own_code(0x1000), 0x1000);
    }

    #[test]
    fn sections_at_one_address_must_agree() {
        let nop = NOP5.to_vec();
        let other = [0x48, 0x89, 0xf7, 0, 0];
        let text = |bytes| Text {
            address: 0,
            bytes,
            fentry_relocs: FxHashSet::default(),
        };
        let both = EntryCode {
            text: vec![text(&nop), text(&nop)],
            fentry: None,
            relocatable: true,
            pc32_targets: FxHashMap::default(),
        };
        assert_eq!(both.own_code(0), 5);
        let split = EntryCode {
            text: vec![text(&nop), text(&other)],
            fentry: None,
            relocatable: true,
            pc32_targets: FxHashMap::default(),
        };
        assert_eq!(split.own_code(0), 0);
    }
}
