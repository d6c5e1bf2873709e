//! DWARF written by hand into an ELF object, shared by the tests that
//! build their DWARF with gimli::write.

pub mod dwarf_elf;
