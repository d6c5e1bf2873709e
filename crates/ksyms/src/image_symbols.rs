//! The symbols of a kernel image (vmlinux or a module) as the kernel's
//! kallsyms lists them, for the rules that pick among them
//! ([`kernel_lookup`](crate::kernel_lookup)): the encoder names FUNCs by
//! them and the fentry audit predicts attachment from them.

use crate::module_sections::{symbol_address, ModuleSections};

/// One symbol of the kernel image (System.map, /proc/kallsyms, ELF).
#[derive(Clone, Copy, Debug)]
pub struct KernelSymbol<'a> {
    /// The symbol's name, with any compiler suffix.
    pub name: &'a str,
    /// Its address (a module's keyed by section: ksyms::module_sections).
    pub address: u64,
    /// Bytes of code or data; 0 when unknown.
    pub size: u64,
    /// A text symbol (`t`, `T`, `W`, STT_FUNC).
    pub function: bool,
}

/// Every symbol of an ELF file that kallsyms would list (functions and
/// data; not sections, files or undefined ones), in table order, at its
/// address (a relocatable object's keyed by section, as its BTF's addr
/// tags and its function model: ksyms::module_sections).
pub fn elf_symbols<'a>(obj: &object::File<'a>) -> Vec<KernelSymbol<'a>> {
    listed_symbols(obj).map(|(k, _)| k).collect()
}

/// [`elf_symbols`], each with its section.
fn listed_symbols<'a, 'o>(
    obj: &'o object::File<'a>,
) -> impl Iterator<Item = (KernelSymbol<'a>, object::SectionIndex)> + 'o {
    use object::{Object, ObjectSymbol};
    let sections = ModuleSections::of(obj);
    obj.symbols().filter_map(move |s| {
        let section = s.section_index()?;
        if matches!(
            s.kind(),
            object::SymbolKind::Section | object::SymbolKind::File
        ) {
            return None;
        }
        let symbol = KernelSymbol {
            name: s.name().ok()?,
            address: symbol_address(sections.as_ref(), &s),
            size: s.size(),
            function: s.kind() == object::SymbolKind::Text,
        };
        Some((symbol, section))
    })
}

/// What a kernel module (a relocatable `.ko`) gives the audit: the symbols
/// its kallsyms keeps once its init has run, and its fentry call sites,
/// both keyed by section (ksyms::module_sections). The loader frees the
/// `.init*` sections after the module's init, and their symbols are gone
/// from the module's kallsyms (a program naming `init_module` fails: "The
/// address of function init_module cannot be found"). The call sites are
/// the targets of `__mcount_loc`'s relocations: the section of a module
/// holds zeros until the loader relocates it. None for a linked image.
pub fn module_input<'a>(obj: &object::File<'a>) -> Option<(Vec<KernelSymbol<'a>>, Vec<u64>)> {
    use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget};
    let sections = ModuleSections::of(obj)?;
    let freed = |index: object::SectionIndex| {
        obj.section_by_index(index)
            .is_ok_and(|s| s.name_bytes().is_ok_and(|n| n.starts_with(b".init")))
    };
    let symbols = listed_symbols(obj)
        .filter(|(_, section)| !freed(*section))
        .map(|(k, _)| k)
        .collect();
    let mut sites: Vec<u64> = obj
        .section_by_name("__mcount_loc")
        .map(|mcount| {
            mcount
                .relocations()
                .filter_map(|(_, r)| {
                    let RelocationTarget::Symbol(i) = r.target() else {
                        return None;
                    };
                    let sym = obj.symbol_by_index(i).ok()?;
                    let section = sym.section_index()?;
                    Some(sections.key(section.0, sym.address().wrapping_add_signed(r.addend())))
                })
                .collect()
        })
        .unwrap_or_default();
    sites.sort_unstable();
    Some((symbols, sites))
}
