//! DWARF written with gimli::write, put into an ELF object (shared by the
//! tests that build their DWARF by hand: gcc16_annotations.rs, lto.rs).

use gimli::write::{EndianVec, Sections};
use gimli::LittleEndian;
use object::write::{Object, StandardSection};
use object::{Architecture, BinaryFormat, Endianness, SectionKind};

/// `sections` (the non-empty ones) in a relocatable x86-64 ELF object
/// with a `.text`.
pub fn elf_with(sections: &Sections<EndianVec<LittleEndian>>) -> Vec<u8> {
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    obj.section_id(StandardSection::Text);
    sections
        .for_each(|id, data| {
            if !data.slice().is_empty() {
                let sec = obj.add_section(Vec::new(), id.name().into(), SectionKind::Debug);
                obj.append_section_data(sec, data.slice(), 1);
            }
            Ok::<(), gimli::write::Error>(())
        })
        .expect("sections");
    obj.write().expect("ELF")
}
