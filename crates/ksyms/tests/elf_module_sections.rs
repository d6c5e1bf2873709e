//! The symbol table of a relocatable object (a module's `.ko`), where every
//! section starts at 0: addresses keyed by section, shown as
//! `.init.text+0x0`, sizes and lookups that stay in their section. The
//! object is written here, so the right answers are known.

use std::path::Path;

use ksyms::kallsyms::{self, Hidden};
use ksyms::{SizeSource, Table};
use object::write::{Object, Symbol, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, SectionKind, SymbolFlags, SymbolKind, SymbolScope,
};

/// One symbol of the fixture: name, section, offset, size, kind.
type Placed = (&'static str, &'static str, u64, u64, SymbolKind);

/// A module's layout: `.text` with a label inside it and one past its last
/// function, `init_module` aliasing the init function at `.init.text`+0,
/// an exit function followed by a label at the end of `.exit.text`, and a
/// variable in `.data`.
const SYMBOLS: &[Placed] = &[
    ("text_first", ".text", 0, 0x40, SymbolKind::Text),
    ("text_mid_label", ".text", 0x20, 0, SymbolKind::Label),
    ("text_second", ".text", 0x40, 0x20, SymbolKind::Text),
    ("text_end_label", ".text", 0x60, 0, SymbolKind::Label),
    ("mod_init", ".init.text", 0, 0x30, SymbolKind::Text),
    ("init_module", ".init.text", 0, 0x30, SymbolKind::Text),
    ("mod_exit", ".exit.text", 0, 0x10, SymbolKind::Text),
    ("exit_end_label", ".exit.text", 0x10, 0, SymbolKind::Label),
    ("counter", ".data", 0x8, 0x8, SymbolKind::Data),
];

fn relocatable_object() -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let mut sections = Vec::new();
    for (name, kind, len) in [
        (".text", SectionKind::Text, 0x80),
        (".init.text", SectionKind::Text, 0x30),
        (".exit.text", SectionKind::Text, 0x20),
        (".data", SectionKind::Data, 0x10),
    ] {
        let id = obj.add_section(Vec::new(), name.as_bytes().to_vec(), kind);
        obj.append_section_data(id, &vec![0xcc; len], 16);
        sections.push((name, id));
    }
    for &(name, section, value, size, kind) in SYMBOLS {
        let id = sections
            .iter()
            .find(|(n, _)| *n == section)
            .map(|&(_, id)| id)
            .expect("section");
        obj.add_symbol(Symbol {
            name: name.as_bytes().to_vec(),
            value,
            size,
            kind,
            scope: if name == "init_module" {
                SymbolScope::Linkage
            } else {
                SymbolScope::Compilation
            },
            weak: false,
            section: SymbolSection::Section(id),
            flags: SymbolFlags::None,
        });
    }
    obj.write().expect("write ELF")
}

fn table() -> Table {
    let data = relocatable_object();
    Table::new(ksyms::elf::parse(&data, Path::new("m.o")).expect("parse"))
}

fn addr(table: &Table, name: &str) -> u64 {
    table.by_name(name).next().expect(name).addr
}

#[test]
fn relocatable_symbols_are_keyed_by_section_and_shown_as_section_offsets() {
    let table = table();
    for &(name, section, offset, _, _) in SYMBOLS {
        let a = addr(&table, name);
        assert_eq!(table.section_address(section, offset), Some(a), "{name}");
        let want = if section == ".text" {
            format!("{offset:#x}")
        } else {
            format!("{section}+{offset:#x}")
        };
        assert_eq!(table.address_text(a), want, "{name}");
    }
    // Offset 0 of three sections: three addresses.
    let zero = [".text", ".init.text", ".exit.text"].map(|s| table.section_address(s, 0));
    assert!(zero[0] != zero[1] && zero[1] != zero[2] && zero[0] != zero[2]);
    assert_eq!(table.section_address(".bss", 0), None);
}

#[test]
fn relocatable_lookups_find_the_code_of_their_own_section() {
    let table = table();
    let hit = table.lookup(0).expect(".text+0");
    assert_eq!((hit.symbol.name, hit.offset), ("text_first", 0));
    let init = table.section_address(".init.text", 4).expect("key");
    let hit = table.lookup(init).expect(".init.text+4");
    assert!(
        ["mod_init", "init_module"].contains(&hit.symbol.name),
        "{hit:?}"
    );
    assert_eq!(hit.offset, 4);
    // Nothing of .data is at offset 0: the label ending .exit.text, whose
    // size nothing bounds, does not reach into it.
    let data0 = table.section_address(".data", 0).expect("key");
    assert_eq!(table.lookup(data0), None);
    let hit = table.lookup(data0 + 8).expect(".data+8");
    assert_eq!((hit.symbol.name, hit.offset), ("counter", 0));
}

#[test]
fn relocatable_label_sizes_end_at_the_next_symbol_of_their_section() {
    let table = table();
    let size = |name: &str| {
        let s = table.by_name(name).next().expect(name);
        (s.size, s.size_source)
    };
    assert_eq!(size("text_mid_label"), (Some(0x20), SizeSource::NextSymbol));
    // The last symbols of .text and .exit.text: the next address is in
    // another section, which bounds nothing.
    assert_eq!(size("text_end_label"), (None, SizeSource::Unknown));
    assert_eq!(size("exit_end_label"), (None, SizeSource::Unknown));
    assert_eq!(size("mod_exit"), (Some(0x10), SizeSource::Exact));
}

#[test]
fn linked_addresses_are_shown_as_they_are() {
    let text = "ffffffff81000000 T _stext\nffffffff81000100 T init_module\n";
    let table = Table::new(
        kallsyms::parse(text.into(), Path::new("kallsyms"), Hidden::Error).expect("parse"),
    );
    let a = addr(&table, "init_module");
    assert_eq!(table.address_text(a), "0xffffffff81000100");
    assert_eq!(table.section_address(".text", 0), None);
}
