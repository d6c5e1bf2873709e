//! Opening the input: an ELF file mapped into memory, its symbol table and
//! its DWARF sections.
//!
//! Sections are borrowed straight from the mapping (zero-copy) unless they
//! are SHF_COMPRESSED, in which case they are inflated once and owned here.
//! Relocation sections (`.rela.debug_*`, present in vmlinux built with
//! --emit-relocs) are ignored: a linked image's DWARF already holds final
//! values, as pahole assumes too.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use gimli::{EndianSlice, RunTimeEndian, SectionId};
use object::{Object, ObjectSection};

use crate::error::{Error, Result};

/// The reader every DWARF consumer in this crate uses.
pub type Reader<'a> = EndianSlice<'a, RunTimeEndian>;
pub type Dwarf<'a> = gimli::Dwarf<Reader<'a>>;

/// An ELF file mapped into memory.
pub struct ElfFile {
    path: PathBuf,
    map: memmap2::Mmap,
}

impl ElfFile {
    pub fn open(path: &Path) -> Result<ElfFile> {
        let io = |source| Error::Io {
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: the mapping is read-only and private; a concurrent writer
        // truncating the file could fault us, which is the usual and accepted
        // contract of mapped inputs (pahole, gimli and object users share it).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
        Ok(ElfFile {
            path: path.to_owned(),
            map,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn data(&self) -> &[u8] {
        &self.map
    }

    /// Parses the ELF headers. Only 64-bit little-endian x86-64 ELF is
    /// supported: BTF function signatures depend on the x86-64 calling
    /// convention, so anything else is refused with a clear message.
    pub fn object(&self) -> Result<object::File<'_>> {
        let obj = object::File::parse(self.data()).map_err(|e| Error::Elf {
            path: self.path.clone(),
            msg: e.to_string(),
        })?;
        if !obj.is_64() || !obj.is_little_endian() {
            return Err(Error::Unsupported {
                path: self.path.clone(),
                what: "only 64-bit little-endian ELF (x86-64) is supported".into(),
            });
        }
        if obj.architecture() != object::Architecture::X86_64 {
            return Err(Error::Unsupported {
                path: self.path.clone(),
                what: format!("architecture {:?} (only x86-64)", obj.architecture()),
            });
        }
        Ok(obj)
    }
}

/// The DWARF sections of one ELF, borrowed or (when compressed) owned.
pub struct DwarfSections<'a> {
    sections: gimli::DwarfSections<Cow<'a, [u8]>>,
}

impl<'a> DwarfSections<'a> {
    pub fn load(elf: &'a ElfFile, obj: &object::File<'a>) -> Result<DwarfSections<'a>> {
        if obj.section_by_name(".debug_info").is_none_or(|s| s.size() == 0) {
            return Err(Error::NoDwarf {
                path: elf.path.clone(),
            });
        }
        let sections = gimli::DwarfSections::load(|id: SectionId| -> Result<Cow<'a, [u8]>> {
            let Some(section) = obj.section_by_name(id.name()) else {
                return Ok(Cow::Borrowed(&[][..]));
            };
            section.uncompressed_data().map_err(|e| Error::Section {
                path: elf.path.clone(),
                section: id.name(),
                msg: e.to_string(),
            })
        })?;
        Ok(DwarfSections { sections })
    }

    /// A gimli view over the sections.
    pub fn dwarf(&self) -> Dwarf<'_> {
        self.sections
            .borrow(|s| EndianSlice::new(s, RunTimeEndian::Little))
    }
}
