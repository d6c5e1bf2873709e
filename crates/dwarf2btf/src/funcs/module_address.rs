//! Code addresses of a kernel module (a relocatable object: `.ko`, `.o`).
//!
//! Every section of a relocatable object starts at address 0, so an offset
//! alone does not say which code it is: `init_module` at `.init.text`+0,
//! `cleanup_module` at `.exit.text`+0 and the first function of `.text`
//! share offset 0. Module code is therefore keyed by section: an offset in
//! `.text` stands for itself (the addr tags of a module's `.text` functions
//! are their offsets), an offset in any other section is
//! `(section index << 32) + offset`. The function model, the encoder's
//! FUNCs and addr tags, and the attach audit all key module addresses with
//! [`ModuleSections::key`]: ELF symbols by their section, DWARF code
//! addresses by the section of the symbol their relocation names (the
//! relocator of load.rs writes the keys into the DWARF it relocates).
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
}
