//! Addresses in a kernel module (a relocatable object: `.ko`, `.o`).
//!
//! Every section of a relocatable object starts at address 0, so an offset
//! alone does not say which code it is: `init_module` at `.init.text`+0,
//! `cleanup_module` at `.exit.text`+0 and the first function of `.text`
//! share offset 0. Module code is therefore keyed by section: an offset in
//! `.text` stands for itself (the addr tags of a module's `.text` functions
//! are their offsets), an offset in any other section is
//! `(section index << 32) + offset`. The symbol table of [`crate::elf`]
//! (every symbol, data too), and in dwarf2btf the function model, the
//! encoder's FUNCs and addr tags and the attach audit all key module
//! addresses with [`ModuleSections::key`]: ELF symbols by their section,
//! DWARF code addresses by the section of the symbol their relocation
//! names (dwarf2btf's relocator, load.rs, writes the keys into the DWARF
//! it relocates). The rule lives here, with the symbol tables, so that a
//! symbol's address means the same to every crate that reads one.
//!
//! A DWARF code address that no relocation ties to a section (lld's `-r`
//! voids the relocations of discarded code to R_X86_64_NONE; a relocation
//! against an undefined symbol) is [`UNTIED`] plus what the relocation
//! would have added: no symbol has such an address, so no function gets
//! the prototype of such a subprogram, and the function model says why.

use object::{Object, ObjectSection, ObjectSymbol};

/// The bit that marks a DWARF address tied to no section. Section keys
/// never have it (a section index below 2^31).
pub const UNTIED: u64 = 1 << 63;

/// Whether a DWARF address of a relocatable object is tied to no section.
pub fn is_untied(address: u64) -> bool {
    address & UNTIED != 0
}

/// The sections of a relocatable object, for keying its addresses.
#[derive(Clone, Debug, Default)]
pub struct ModuleSections {
    /// Index of the section named `.text`.
    text: Option<usize>,
    /// Per section index: whether it holds code (SHF_EXECINSTR).
    code: Vec<bool>,
}

impl ModuleSections {
    /// The sections of `obj` when it is a relocatable object; None for a
    /// linked image, whose addresses are final.
    pub fn of(obj: &object::File<'_>) -> Option<ModuleSections> {
        if obj.kind() != object::ObjectKind::Relocatable {
            return None;
        }
        let mut m = ModuleSections::default();
        for s in obj.sections() {
            let i = s.index().0;
            if s.name_bytes() == Ok(b".text") && m.text.is_none() {
                m.text = Some(i);
            }
            if s.kind() == object::SectionKind::Text {
                if m.code.len() <= i {
                    m.code.resize(i + 1, false);
                }
                m.code[i] = true;
            }
        }
        Some(m)
    }

    /// The key of `offset` in section `section` (see the module
    /// documentation).
    pub fn key(&self, section: usize, offset: u64) -> u64 {
        if Some(section) == self.text {
            offset
        } else {
            ((section as u64) << 32).wrapping_add(offset)
        }
    }

    /// Whether section `section` holds code.
    pub fn is_code(&self, section: usize) -> bool {
        self.code.get(section).copied().unwrap_or(false)
    }

    /// The section and offset that `key` stands for: the inverse of
    /// [`ModuleSections::key`]. None for a key below 2^32 when the object
    /// has no `.text`.
    pub fn place(&self, key: u64) -> Option<(usize, u64)> {
        match key >> 32 {
            0 => Some((self.text?, key)),
            section => Some((section as usize, key & 0xffff_ffff)),
        }
    }
}

/// A relocatable object's sections with their names, as a symbol table
/// keeps them: to show a key as the section and offset the user knows
/// (`.init.text+0x0`), and to read one back.
#[derive(Clone, Debug)]
pub struct NamedSections {
    sections: ModuleSections,
    /// Per section index, its name ("" when it has none).
    names: Vec<String>,
}

impl NamedSections {
    /// The sections of `obj` when it is a relocatable object; None for a
    /// linked image.
    pub fn of(obj: &object::File<'_>) -> Option<NamedSections> {
        let sections = ModuleSections::of(obj)?;
        let mut names = Vec::new();
        for s in obj.sections() {
            let i = s.index().0;
            if names.len() <= i {
                names.resize(i + 1, String::new());
            }
            names[i] = s.name().unwrap_or("").to_owned();
        }
        Some(NamedSections { sections, names })
    }

    /// The keys of these sections.
    pub fn sections(&self) -> &ModuleSections {
        &self.sections
    }

    /// The section name and offset of `key` when it is keyed, that is in
    /// a section other than `.text` (whose offsets stand for themselves).
    pub fn place(&self, key: u64) -> Option<(&str, u64)> {
        let (section, offset) = self.sections.place(key)?;
        if Some(section) == self.sections.text {
            return None;
        }
        let name = self.names.get(section).filter(|n| !n.is_empty())?;
        Some((name, offset))
    }

    /// `key` as the section and offset it stands for (`.init.text+0x0`)
    /// when it is keyed (see [`NamedSections::place`]).
    pub fn text(&self, key: u64) -> Option<String> {
        self.place(key)
            .map(|(section, offset)| format!("{section}+{offset:#x}"))
    }

    /// The key of `offset` in the (first) section named `name`; None when
    /// there is no such section or the offset does not fit a key (2^32 or
    /// more: the next section's keys).
    pub fn key(&self, name: &str, offset: u64) -> Option<u64> {
        let section = self.names.iter().position(|n| n == name)?;
        u32::try_from(offset).ok()?;
        Some(self.sections.key(section, offset))
    }
}

/// The address the function model, the encoder and the audit give an ELF
/// symbol: its value in a linked image (`sections` None), its key in a
/// relocatable object.
pub fn symbol_address<'d>(
    sections: Option<&ModuleSections>,
    symbol: &impl ObjectSymbol<'d>,
) -> u64 {
    match (sections, symbol.section_index()) {
        (Some(m), Some(i)) => m.key(i.0, symbol.address()),
        _ => symbol.address(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_offsets_stand_alone_other_sections_are_keyed() {
        let m = ModuleSections {
            text: Some(2),
            code: vec![false, false, true, false, true],
        };
        assert_eq!(m.key(2, 0x40), 0x40);
        assert_eq!(m.key(4, 0), 4 << 32);
        assert_eq!(m.key(4, 0x10), (4 << 32) + 0x10);
        assert!(m.is_code(4) && !m.is_code(3) && !m.is_code(99));
        assert!(!is_untied(m.key(4, 0x10)));
        assert!(is_untied(UNTIED + 0x10));
    }

    #[test]
    fn place_inverts_key() {
        let m = ModuleSections {
            text: Some(2),
            code: vec![false, false, true, false, true],
        };
        for (section, offset) in [(2, 0), (2, 0x1a0), (4, 0), (4, 0x10), (7, 0xffff_ffff)] {
            assert_eq!(m.place(m.key(section, offset)), Some((section, offset)));
        }
        let no_text = ModuleSections::default();
        assert_eq!(no_text.place(0x10), None);
        assert_eq!(no_text.place((3 << 32) + 8), Some((3, 8)));
    }

    #[test]
    fn named_sections_show_keyed_offsets_by_name_and_read_them_back() {
        let n = NamedSections {
            sections: ModuleSections {
                text: Some(2),
                code: vec![false, false, true, false, true],
            },
            names: ["", ".note", ".text", ".data", ".init.text"]
                .map(str::to_owned)
                .to_vec(),
        };
        // A .text offset is shown as itself.
        assert_eq!(n.place(0x1a0), None);
        assert_eq!(n.key(".text", 0x1a0), Some(0x1a0));
        assert_eq!(n.place(4 << 32), Some((".init.text", 0)));
        assert_eq!(n.key(".init.text", 0x10), Some((4 << 32) + 0x10));
        assert_eq!(n.place((3 << 32) + 0x28), Some((".data", 0x28)));
        // A section that does not exist has no name.
        assert_eq!(n.place(9 << 32), None);
        assert_eq!(n.key(".exit.text", 0), None);
        assert_eq!(n.key(".init.text", 1 << 32), None);
    }
}
