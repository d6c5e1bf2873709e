//! An ELF `.symtab` (vmlinux, or a module's `.ko`): the same symbols as
//! System.map, plus the size of every function and object. A relocatable
//! object's (a `.ko`, a `.o`) symbols are keyed by section
//! ([`crate::module_sections`]): each of its sections starts at 0.

use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol, SectionKind, SymbolKind, SymbolScope};

use fileio::InputFile;

use crate::module_sections::{symbol_address, NamedSections};
use crate::{Error, RawSymbol, Result, Symbols};

/// Reads the symbol table of an ELF file, mapped rather than read: a
/// debug vmlinux is over 500 MB and only its symbol table is needed. A
/// module compressed whole (`.ko.xz`, `.ko.zst`, `.ko.gz`) is read and
/// decompressed.
pub fn read(path: &Path) -> Result<Symbols> {
    parse(&open(path)?, path)
}

/// Whether the file at `path` starts as an ELF file does, or is compressed
/// whole (a `.ko.xz`, read as ELF): how a command taking "an ELF, a
/// kallsyms or a System.map" tells them apart. False when it cannot be
/// read; the reader the caller picks then names the error.
pub fn looks_like_elf(path: &Path) -> bool {
    let magic = fileio::input_file::peek(path, 6).unwrap_or_default();
    magic.starts_with(b"\x7fELF") || fileio::compressed_file::Codec::of(&magic).is_some()
}

/// Opens an ELF file: mapped read-only, read where it cannot be mapped, or
/// decompressed when it is compressed whole ([`InputFile`]).
pub(crate) fn open(path: &Path) -> Result<InputFile> {
    Ok(InputFile::open(path)?)
}

/// The nm type letter of a symbol, from the kind of its section.
fn type_letter(kind: SectionKind, absolute: bool, weak: bool, global: bool) -> u8 {
    let letter = if absolute {
        b'a'
    } else {
        match kind {
            SectionKind::Text => b't',
            SectionKind::Data => b'd',
            SectionKind::ReadOnlyData | SectionKind::ReadOnlyString => b'r',
            SectionKind::UninitializedData => b'b',
            _ => b'n',
        }
    };
    if weak {
        if letter == b't' {
            b'W'
        } else {
            b'V'
        }
    } else if global {
        letter.to_ascii_uppercase()
    } else {
        letter
    }
}

/// Parses the `.symtab` of ELF data; `path` names it in errors.
pub fn parse(data: &[u8], path: &Path) -> Result<Symbols> {
    let elf_err = |reason: String| Error::Elf {
        path: path.to_owned(),
        reason,
    };
    let file = object::File::parse(data).map_err(|error| Error::Object {
        path: path.to_owned(),
        section: None,
        error,
    })?;
    if file.symbol_table().is_none() {
        return Err(elf_err("no .symtab (stripped?)".to_owned()));
    }
    let mut out = Symbols {
        names: String::new(),
        raw: Vec::new(),
        modules: Vec::new(),
        source: path.to_owned(),
        addresses_hidden: false,
        sections: None,
    };
    let sections = NamedSections::of(&file);
    let keys = sections.as_ref().map(NamedSections::sections);
    for sym in file.symbols() {
        if sym.is_undefined() || matches!(sym.kind(), SymbolKind::Section | SymbolKind::File) {
            continue;
        }
        let Ok(name) = sym.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let absolute = matches!(sym.section(), object::SymbolSection::Absolute);
        let section_kind = sym
            .section_index()
            .and_then(|i| file.section_by_index(i).ok())
            .map_or(SectionKind::Unknown, |s| s.kind());
        let type_char = type_letter(
            section_kind,
            absolute,
            sym.is_weak(),
            sym.scope() != SymbolScope::Compilation,
        );
        // Only functions and objects have a meaningful st_size; labels
        // (_stext, __start_*) have 0 and get theirs from the next symbol.
        let size = match sym.kind() {
            SymbolKind::Text | SymbolKind::Data | SymbolKind::Tls => sym.size(),
            _ => 0,
        };
        if out.names.len() + name.len() > u32::MAX as usize {
            return Err(elf_err("symbol names exceed 4 GiB".to_owned()));
        }
        let (name_start, name_len) = out.push_name(name);
        out.raw.push(RawSymbol {
            addr: symbol_address(keys, &sym),
            size,
            name_start,
            name_len,
            module: 0,
            type_char,
        });
    }
    out.sections = sections;
    Ok(out)
}
