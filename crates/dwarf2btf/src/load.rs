//! Opening the input: an ELF file mapped into memory, its symbol table and
//! its DWARF sections.
//!
//! Sections are borrowed straight from the mapping (zero-copy) unless they
//! are SHF_COMPRESSED, in which case they are inflated once and owned here.
//! In a linked image (vmlinux, ET_EXEC) relocation sections (`.rela.debug_*`,
//! present with --emit-relocs) are ignored: its DWARF already holds final
//! values, as pahole assumes too. In a relocatable object (a kernel module,
//! ET_REL) the debug sections hold zeros where string offsets, unit offsets
//! and addresses go: their RELA relocations are applied to owned copies,
//! with code addresses keyed by section (ksyms::module_sections).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use fileio::InputFile;
use gimli::{EndianSlice, RunTimeEndian, SectionId};
use ksyms::module_sections::{ModuleSections, UNTIED};
use object::{Object, ObjectSection, ObjectSymbol};

use crate::error::{Error, Result};

/// The reader every DWARF consumer in this crate uses.
pub type Reader<'a> = EndianSlice<'a, RunTimeEndian>;
/// The DWARF of one file as this crate reads it: gimli's sections over
/// [`Reader`], borrowed from [`DwarfSections`].
pub type Dwarf<'a> = gimli::Dwarf<Reader<'a>>;

/// An ELF file mapped into memory.
pub struct ElfFile {
    path: PathBuf,
    map: memmap2::Mmap,
    /// The file mapped (none for an image given as bytes).
    file: Option<std::fs::File>,
}

impl ElfFile {
    /// Opens `path`: mapped where it can be, read where it cannot (a pipe),
    /// decompressed when compressed whole (`.ko.xz`, `.ko.zst`, `.ko.gz`).
    /// Raw BTF is refused ([`Error::Unsupported`]); the ELF headers are
    /// only parsed by [`ElfFile::object`].
    pub fn open(path: &Path) -> Result<ElfFile> {
        // Mapped, read where it cannot be mapped, decompressed when it is
        // compressed whole (a .ko.xz): fileio's InputFile.
        let data = InputFile::open(path).map_err(|e| match e {
            fileio::Error::Io { path, error } => Error::Io { path, error },
            fileio::Error::Decompress { path, error } => Error::Decompress { path, error },
        })?;
        // Raw BTF (/sys/kernel/btf/*, a `-o` output): there is no DWARF to
        // encode from.
        let btf_magic = btf::format::BTF_MAGIC;
        if data.starts_with(&btf_magic.to_le_bytes()) || data.starts_with(&btf_magic.to_be_bytes())
        {
            return Err(Error::Unsupported {
                path: path.to_owned(),
                what: "this is BTF, not an ELF file with DWARF: nothing to encode it from \
                       (btfkit dump and check read it)"
                    .into(),
            });
        }
        match data {
            InputFile::Mapped(map, file) => Ok(ElfFile {
                path: path.to_owned(),
                map,
                file: Some(file),
            }),
            InputFile::Read(bytes) => ElfFile::from_bytes(path, &bytes),
        }
    }

    /// An ELF image already in memory (fuzzing, tests), named `path` in
    /// messages. It is copied into an anonymous mapping.
    pub fn from_bytes(path: &Path, data: &[u8]) -> Result<ElfFile> {
        let io = |source| Error::Io {
            path: path.to_owned(),
            error: source,
        };
        let mut map = memmap2::MmapMut::map_anon(data.len()).map_err(io)?;
        map.copy_from_slice(data);
        Ok(ElfFile {
            path: path.to_owned(),
            map: map.make_read_only().map_err(io)?,
            file: None,
        })
    }

    /// The path the file was opened as (or named, for bytes), for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole file's bytes, decompressed if it was compressed whole.
    pub fn data(&self) -> &[u8] {
        &self.map
    }

    /// The file whose bytes [`ElfFile::data`] maps (none for an image
    /// given as bytes).
    pub fn file(&self) -> Option<&std::fs::File> {
        self.file.as_ref()
    }

    /// Tells the kernel that the file bytes `start..end` are not needed for
    /// a while: their pages leave our resident set (and come back from the
    /// page cache if read again). Only whole pages inside the range are
    /// released, so neighbouring data that others are reading stays.
    pub fn release(&self, start: usize, end: usize) {
        const PAGE: usize = 4096;
        // An image given as bytes lives in anonymous memory, where
        // MADV_DONTNEED would zero the pages instead of dropping copies.
        if self.file.is_none() {
            return;
        }
        let start = start.div_ceil(PAGE) * PAGE;
        let end = end.min(self.map.len()) / PAGE * PAGE;
        if end <= start {
            return;
        }
        // SAFETY: the mapping is private and never written, so MADV_DONTNEED
        // only drops clean pages; a later read faults the same file bytes
        // back in. Borrowed slices stay valid: the mapping itself remains.
        // Failure only means the pages stay resident, which is harmless.
        let _ = unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
        };
    }

    /// [`ElfFile::release`] of the whole file.
    pub fn release_all(&self) {
        self.release(0, self.map.len());
    }

    /// Parses the ELF headers. An ELF of an architecture without a
    /// description (`arch`) is refused by name: function signatures depend
    /// on the architecture's calling convention, and its relocations on
    /// its ELF psABI.
    pub fn object(&self) -> Result<object::File<'_>> {
        let obj = object::File::parse(self.data()).map_err(|error| Error::Object {
            path: self.path.clone(),
            error,
        })?;
        arch::Arch::of_object(&obj).map_err(|error| Error::Unsupported {
            path: self.path.clone(),
            what: error.to_string(),
        })?;
        self.check_symbol_strings(&obj)?;
        Ok(obj)
    }

    /// Refuses a symbol table whose string table is not in the file: object
    /// reads symbol names lazily, and every name would fail alone, leaving
    /// an encode without a single function (as pahole, which refuses it).
    fn check_symbol_strings(&self, obj: &object::File<'_>) -> Result<()> {
        use object::read::elf::SectionHeader;
        let object::File::Elf64(file) = obj else {
            return Ok(());
        };
        let endian = file.endian();
        let sections = file.elf_section_table();
        for header in sections.iter() {
            let kind = header.sh_type(endian);
            if kind != object::elf::SHT_SYMTAB && kind != object::elf::SHT_DYNSYM {
                continue;
            }
            let link = object::SectionIndex(header.sh_link(endian) as usize);
            let Ok(strings) = sections.section(link) else {
                return Err(Error::Section {
                    path: self.path.clone(),
                    section: ".strtab",
                    msg: format!(
                        "the symbol table links to section {}, which does not exist",
                        link.0
                    ),
                });
            };
            let (offset, size) = (strings.sh_offset(endian), strings.sh_size(endian));
            if offset
                .checked_add(size)
                .is_none_or(|end| end > self.data().len() as u64)
            {
                return Err(Error::Section {
                    path: self.path.clone(),
                    section: ".strtab",
                    msg: format!(
                        "the symbol names at file offset {offset:#x} ({size} bytes) lie past the end of the {}-byte file",
                        self.data().len()
                    ),
                });
            }
        }
        Ok(())
    }
}

/// The DWARF sections of one ELF, borrowed or (when compressed) owned.
pub struct DwarfSections<'a> {
    sections: gimli::DwarfSections<Cow<'a, [u8]>>,
}

impl<'a> DwarfSections<'a> {
    /// Reads the DWARF sections of `obj` (the parsed `elf`): borrowed from
    /// the mapping, decompressed when SHF_COMPRESSED, and in a relocatable
    /// object (ET_REL) relocated. A section that is missing reads as empty,
    /// but a missing or empty `.debug_info` is [`Error::NoDwarf`], and an
    /// empty `.debug_str` that the first unit refers to is an error too.
    pub fn load(elf: &'a ElfFile, obj: &object::File<'a>) -> Result<DwarfSections<'a>> {
        if obj
            .section_by_name(".debug_info")
            .is_none_or(|s| s.size() == 0)
        {
            return Err(Error::NoDwarf {
                path: elf.path.clone(),
            });
        }
        let relocator = match obj.kind() {
            object::ObjectKind::Relocatable => Some(Relocator::new(elf, obj)?),
            _ => None,
        };
        let sections = gimli::DwarfSections::load(|id: SectionId| -> Result<Cow<'a, [u8]>> {
            let Some(section) = obj.section_by_name(id.name()) else {
                return Ok(Cow::Borrowed(&[][..]));
            };
            let data = fileio::elf_section::data(&section).map_err(|error| Error::SectionData {
                path: elf.path.clone(),
                section: id.name(),
                error,
            })?;
            match &relocator {
                Some(r) => r.apply(section.index(), id.name(), data),
                None => Ok(data),
            }
        })?;
        let loaded = DwarfSections { sections };
        loaded.check_strings_present(elf, obj)?;
        Ok(loaded)
    }

    /// Refuses an empty `.debug_str` that the first unit's DIE refers to
    /// (DW_FORM_strp, DW_FORM_strx*: compilers put the producer and the
    /// unit's name there): every name in it would read as missing, and the
    /// types would come out anonymous.
    fn check_strings_present(&self, elf: &ElfFile, obj: &object::File<'_>) -> Result<()> {
        use gimli::AttributeValue;
        let dwarf = self.dwarf();
        if !gimli::Section::reader(&dwarf.debug_str).is_empty() {
            return Ok(());
        }
        let Ok(Some(header)) = dwarf.units().next() else {
            return Ok(());
        };
        let Ok(abbrevs) = dwarf.abbreviations(&header) else {
            return Ok(());
        };
        let mut entries = header.entries(&abbrevs);
        let Ok(Some((_, unit_die))) = entries.next_dfs() else {
            return Ok(());
        };
        let mut attrs = unit_die.attrs();
        let mut refers = None;
        while let Ok(Some(attr)) = attrs.next() {
            if matches!(
                attr.raw_value(),
                AttributeValue::DebugStrRef(_) | AttributeValue::DebugStrOffsetsIndex(_)
            ) {
                refers = Some(attr.name());
                break;
            }
        }
        let Some(name) = refers else {
            return Ok(());
        };
        let at = obj
            .section_by_name(".debug_str")
            .and_then(|s| s.file_range())
            .map_or(String::new(), |(offset, _)| {
                format!(" (at file offset {offset:#x})")
            });
        Err(Error::Section {
            path: elf.path.clone(),
            section: ".debug_str",
            msg: format!(
                "the section is empty{at}, but the DWARF's names are in it (the unit's {name})"
            ),
        })
    }

    /// A gimli view over the sections.
    pub fn dwarf(&self) -> Dwarf<'_> {
        self.sections
            .borrow(|s| EndianSlice::new(s, RunTimeEndian::Little))
    }
}

/// Applies a relocatable object's RELA relocations to its debug sections.
/// Only the kinds that debug sections use are meaningful (the
/// architecture's [`arch::DebugRelocs`]); a relocation of another kind
/// or out of bounds is an error naming the section and offset.
///
/// The RELA records are read as an array and the symbols' values looked up
/// in a table of them, built once for all the sections: a large module's
/// `.debug_info` has a million relocations.
struct Relocator<'o, 'a> {
    elf: &'a ElfFile,
    file: &'o object::read::elf::ElfFile64<'a, object::Endianness>,
    /// Section index -> its first relocation section, and each relocation
    /// section -> the next for the same section.
    chain: object::read::elf::RelocationSections,
    /// Symbol index -> value.
    values: Vec<u64>,
    /// The relocation kinds of the ELF's architecture.
    relocs: &'static arch::DebugRelocs,
}

impl<'o, 'a> Relocator<'o, 'a> {
    fn new(elf: &'a ElfFile, obj: &'o object::File<'a>) -> Result<Relocator<'o, 'a>> {
        use object::read::elf::Sym;
        let bad = |msg: String| Error::Section {
            path: elf.path.clone(),
            section: ".symtab",
            msg,
        };
        // `ElfFile::object` admits only described architectures, all
        // 64-bit little-endian ELF.
        let object::File::Elf64(file) = obj else {
            return Err(bad("relocations of a file that is not 64-bit ELF".into()));
        };
        let relocs = &arch::Arch::of_object(obj)
            .map_err(|e| bad(e.to_string()))?
            .debug_relocs;
        let endian = file.endian();
        let symbols = file.elf_symbol_table();
        let chain = file
            .elf_section_table()
            .relocation_sections(endian, symbols.section())
            .map_err(|e| bad(e.to_string()))?;
        // Code addresses are keyed by section (ksyms::module_sections);
        // an undefined symbol (symbol 0 included) ties nothing to a section.
        let sections = ModuleSections::of(obj).unwrap_or_default();
        let values = symbols
            .symbols()
            .iter()
            .enumerate()
            .map(|(i, s)| {
                if s.st_shndx(endian) == object::elf::SHN_UNDEF {
                    return UNTIED;
                }
                match symbols.symbol_section(endian, s, object::SymbolIndex(i)) {
                    Ok(Some(sec)) if sections.is_code(sec.0) => {
                        sections.key(sec.0, s.st_value(endian))
                    }
                    _ => s.st_value(endian),
                }
            })
            .collect();
        Ok(Relocator {
            elf,
            file,
            chain,
            values,
            relocs,
        })
    }

    /// `data`, the contents of the section at `index` named `name`, with
    /// its relocations applied (borrowed as it is when it has none).
    fn apply(
        &self,
        index: object::SectionIndex,
        name: &'static str,
        data: Cow<'a, [u8]>,
    ) -> Result<Cow<'a, [u8]>> {
        use object::elf::SHT_RELA;
        use object::read::elf::{Rela, SectionHeader};
        let bad = |msg: String| Error::Section {
            path: self.elf.path.clone(),
            section: name,
            msg,
        };
        let endian = self.file.endian();
        let sections = self.file.elf_section_table();
        // The section's relocation sections, each naming the next (ld -r
        // writes one).
        let mut tables = Vec::new();
        let mut next = self.chain.get(index);
        while let Some(at) = next {
            let header = sections
                .section(at)
                .map_err(|e| bad(format!("relocations: {e}")))?;
            if header.sh_type(endian) != SHT_RELA {
                return Err(bad(format!(
                    "relocations in section {} are not RELA (x86-64 has no other)",
                    at.0
                )));
            }
            let relas = header
                .data_as_array::<object::elf::Rela64<_>, _>(endian, self.elf.data())
                .map_err(|e| bad(format!("relocations: {e}")))?;
            tables.push(relas);
            next = self.chain.get(at);
        }
        if tables.iter().all(|t| t.is_empty()) {
            return Ok(data);
        }
        // Each page of the copy is written: huge pages spare the faults of
        // a section that is tens of MB in a large module.
        let mut out = btf::encoder_hooks::huge_page_vec(data.len());
        out.extend_from_slice(&data);
        for rela in tables.into_iter().flatten() {
            let offset = rela.r_offset(endian);
            let kind = rela.r_type(endian, false);
            let width = match self.relocs.width(kind) {
                // A relocation the linker voided (lld's `-r` does so for
                // references to discarded sections, e.g. in clang-built
                // modules): an address of code or data that is gone, tied
                // to no section. Only addresses refer to other sections
                // than debug ones, so the slot is 8 bytes; RELA leaves it 0.
                None if kind == self.relocs.none => {
                    let slot = usize::try_from(offset)
                        .ok()
                        .and_then(|at| out.get_mut(at..at.checked_add(8)?));
                    if let Some(slot) = slot.filter(|s| s.iter().all(|&b| b == 0)) {
                        slot.copy_from_slice(&UNTIED.to_le_bytes());
                    }
                    continue;
                }
                // A `__thread` variable's location (the DTPOFF kinds): for
                // an object not yet linked, its offset in its TLS section.
                Some(width) => width,
                None => {
                    return Err(bad(format!(
                        "relocation at {offset:#x}: unsupported kind {kind}"
                    )))
                }
            };
            // Symbol 0 is undefined: UNTIED, of which 4 bytes keep the addend.
            let sym = rela.r_sym(endian, false) as usize;
            let s = *self.values.get(sym).ok_or_else(|| {
                bad(format!(
                    "relocation at {offset:#x}: symbol {sym} out of range"
                ))
            })?;
            let value = s.wrapping_add(rela.r_addend(endian) as u64);
            let slot = usize::try_from(offset)
                .ok()
                .and_then(|at| out.get_mut(at..at.checked_add(width)?))
                .ok_or_else(|| bad(format!("relocation at {offset:#x} is out of bounds")))?;
            slot.copy_from_slice(&value.to_le_bytes()[..width]);
        }
        Ok(Cow::Owned(out))
    }
}

/// What an ELF symbol is, as far as the encoder cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    /// Code: STT_FUNC (or STT_GNU_IFUNC).
    Func,
    /// Data: STT_OBJECT (or STT_COMMON).
    Object,
    /// Anything else: STT_NOTYPE, STT_SECTION, STT_FILE, STT_TLS.
    Other,
}

/// One ELF symbol, with its name borrowed from the mapped file.
#[derive(Clone, Copy, Debug)]
pub struct Symbol<'a> {
    /// The symbol's name.
    pub name: &'a str,
    /// Its value (`st_value`): a link-time address in a linked image, an
    /// offset into its section in a relocatable object.
    pub addr: u64,
    /// Its size in bytes (`st_size`; 0 when the producer gave none).
    pub size: u64,
    /// What it is.
    pub kind: SymbolKind,
    /// Index of the section the symbol is defined in (None: undefined,
    /// absolute or common).
    pub section: Option<usize>,
    /// Not STB_LOCAL: global or weak binding.
    pub global: bool,
}

/// An ELF section's placement, for variables and DATASECs.
#[derive(Clone, Debug)]
pub struct SectionInfo {
    /// The section's index in the section header table.
    pub index: usize,
    /// Its name ("" when it cannot be read).
    pub name: String,
    /// Its address (`sh_addr`; 0 in a relocatable object).
    pub addr: u64,
    /// Its size in bytes (`sh_size`).
    pub size: u64,
    /// SHF_ALLOC: part of the loaded image.
    pub alloc: bool,
}

/// The ELF facts the encoder needs besides DWARF: symbols and sections.
pub struct ElfInfo<'a> {
    /// `.symtab` entries in table order (names that are not UTF-8 are left out).
    pub symbols: Vec<Symbol<'a>>,
    /// Every section, in section header table order.
    pub sections: Vec<SectionInfo>,
    /// ET_REL (a kernel module): symbol values are section offsets.
    pub relocatable: bool,
    /// Names of the STT_FUNC symbols.
    pub func_names: rustc_hash::FxHashSet<&'a str>,
}

impl<'a> ElfInfo<'a> {
    /// Reads the symbols and sections of `obj`.
    pub fn new(obj: &object::File<'a>) -> ElfInfo<'a> {
        let symbols: Vec<Symbol<'a>> = obj
            .symbols()
            .filter_map(|s| {
                let name = s.name().ok()?;
                let kind = match s.kind() {
                    object::SymbolKind::Text => SymbolKind::Func,
                    object::SymbolKind::Data => SymbolKind::Object,
                    _ => SymbolKind::Other,
                };
                Some(Symbol {
                    name,
                    addr: s.address(),
                    size: s.size(),
                    kind,
                    section: s.section_index().map(|i| i.0),
                    global: s.is_global(),
                })
            })
            .collect();
        let sections = obj
            .sections()
            .map(|s| SectionInfo {
                index: s.index().0,
                name: s.name().unwrap_or("").to_owned(),
                addr: s.address(),
                size: s.size(),
                alloc: matches!(s.flags(), object::SectionFlags::Elf { sh_flags }
                    if sh_flags & u64::from(object::elf::SHF_ALLOC) != 0),
            })
            .collect();
        let func_names = symbols
            .iter()
            .filter(|s: &&Symbol<'a>| s.kind == SymbolKind::Func)
            .map(|s| s.name)
            .collect();
        ElfInfo {
            func_names,
            symbols,
            sections,
            relocatable: obj.kind() == object::ObjectKind::Relocatable,
        }
    }

    /// The first section named `name`.
    pub fn section_by_name(&self, name: &str) -> Option<&SectionInfo> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The section at index `index` of the section header table (what
    /// [`Symbol::section`] holds).
    pub fn section(&self, index: usize) -> Option<&SectionInfo> {
        self.sections.iter().find(|s| s.index == index)
    }
}
