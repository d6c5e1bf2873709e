//! dwz's alternate debug file (SUSE and Fedora ship their debuginfo so):
//! types and strings shared by several objects live in one supplementary
//! ELF, named by the object's `.gnu_debugaltlink` (a path and the file's
//! build-id) or, in DWARF 5 spelling, its `.debug_sup` (a path and a
//! checksum, which dwz fills with the build-id too).
//!
//! The file is looked for where elfutils (and so pahole) looks: the path
//! as written, relative to the object's directory, then under
//! `/usr/lib/debug/.build-id/` by build-id and `/usr/lib/debug/.dwz/` by
//! name; `--dwz-alt FILE` names it outright. Its build-id must be the one
//! the object expects: the DIE offsets refer to that exact file.

use std::path::{Path, PathBuf};

use object::Object;

use crate::error::{Error, Result};
use crate::load::ElfFile;

/// What the object says of its alternate file.
struct AltLink {
    name: PathBuf,
    /// The build-id (`.gnu_debugaltlink`) or checksum (`.debug_sup`).
    build_id: Vec<u8>,
    /// Read from `.debug_sup`: the alternate file says its checksum in its
    /// own `.debug_sup` (dwz --dwarf-5 gives it no build-id note).
    sup: bool,
}

const DEBUG_DIR: &str = "/usr/lib/debug";

/// Opens the alternate file of `elf`, if its DWARF refers to one: `given`
/// (`--dwz-alt`) or the one found as elfutils finds it. A link to a file
/// that is missing or has another build-id is an error naming both files.
pub fn open(
    elf: &ElfFile,
    obj: &object::File<'_>,
    given: Option<&Path>,
) -> Result<Option<ElfFile>> {
    let link = read_link(elf.path(), obj)?.filter(|l| !l.is_supplementary());
    let Some(link) = link else {
        return match given {
            Some(alt) => Err(Error::AltFile {
                path: elf.path().to_owned(),
                alt: alt.to_owned(),
                msg: "given with --dwz-alt, but the object has neither .gnu_debugaltlink \
                      nor .debug_sup"
                    .into(),
            }),
            None => Ok(None),
        };
    };
    let candidates: Vec<PathBuf> = match given {
        Some(alt) => vec![alt.to_owned()],
        None => candidates(elf.path(), &link),
    };
    let Some(found) = candidates.iter().find(|p| p.is_file()) else {
        let tried: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
        return Err(Error::AltFile {
            path: elf.path().to_owned(),
            alt: link.name.clone(),
            msg: format!(
                "missing (build-id {}; looked for {}); give it with --dwz-alt FILE",
                hex(&link.build_id),
                tried.join(", ")
            ),
        });
    };
    let alt = ElfFile::open(found)?;
    let alt_obj = alt.object()?;
    let id = if link.sup {
        read_link(found, &alt_obj)?
            .filter(AltLink::is_supplementary)
            .map(|l| l.build_id)
            .unwrap_or_default()
    } else {
        alt_obj.build_id().ok().flatten().unwrap_or(&[]).to_vec()
    };
    let id = id.as_slice();
    if id != link.build_id.as_slice() {
        return Err(Error::AltFile {
            path: elf.path().to_owned(),
            alt: found.clone(),
            msg: format!(
                "{} {} is not the {} that the object's {} asks for",
                if link.sup { "checksum" } else { "build-id" },
                if id.is_empty() {
                    "(none)".into()
                } else {
                    hex(id)
                },
                hex(&link.build_id),
                link_section(obj)
            ),
        });
    }
    Ok(Some(alt))
}

fn link_section(obj: &object::File<'_>) -> &'static str {
    if obj.section_by_name(".gnu_debugaltlink").is_some() {
        ".gnu_debugaltlink"
    } else {
        ".debug_sup"
    }
}

/// Where elfutils looks for the alternate file, in its order.
fn candidates(path: &Path, link: &AltLink) -> Vec<PathBuf> {
    let mut c = Vec::new();
    if link.name.is_absolute() {
        c.push(link.name.clone());
    } else {
        let dir = path.parent().unwrap_or(Path::new("."));
        c.push(dir.join(&link.name));
    }
    if let Some((first, rest)) = link.build_id.split_first() {
        c.push(PathBuf::from(format!(
            "{DEBUG_DIR}/.build-id/{first:02x}/{}.debug",
            hex(rest)
        )));
    }
    if let Some(file) = link.name.file_name() {
        c.push(Path::new(DEBUG_DIR).join(".dwz").join(file));
    }
    c
}

/// Reads `.gnu_debugaltlink` (path NUL build-id) or `.debug_sup` (version,
/// is_supplementary, path NUL, ULEB128 length, checksum).
fn read_link(path: &Path, obj: &object::File<'_>) -> Result<Option<AltLink>> {
    let bad = |section: &'static str, msg: &str| Error::Section {
        path: path.to_owned(),
        section,
        msg: msg.to_owned(),
    };
    let data = |s: object::Section<'_, '_>, section: &'static str| {
        fileio::elf_section::data(&s)
            .map(|d| d.into_owned())
            .map_err(|error| Error::SectionData {
                path: path.to_owned(),
                section,
                error,
            })
    };
    if let Some(s) = obj.section_by_name(".gnu_debugaltlink") {
        const SECTION: &str = ".gnu_debugaltlink";
        let d = data(s, SECTION)?;
        let nul =
            memchr::memchr(0, &d).ok_or_else(|| bad(SECTION, "no NUL after the file name"))?;
        let (name, id) = (&d[..nul], &d[nul + 1..]);
        if name.is_empty() || id.is_empty() {
            return Err(bad(SECTION, "an empty file name or build-id"));
        }
        return Ok(Some(AltLink {
            name: os_path(name),
            build_id: id.to_vec(),
            sup: false,
        }));
    }
    if let Some(s) = obj.section_by_name(".debug_sup") {
        const SECTION: &str = ".debug_sup";
        let d = data(s, SECTION)?;
        let truncated = || bad(SECTION, "truncated");
        // version (2 bytes), is_supplementary (1 byte).
        let is_sup = *d.get(2).ok_or_else(truncated)?;
        let rest = d.get(3..).ok_or_else(truncated)?;
        let nul = memchr::memchr(0, rest).ok_or_else(truncated)?;
        let name = &rest[..nul];
        let mut r = gimli::EndianSlice::new(&rest[nul + 1..], gimli::LittleEndian);
        let len = gimli::Reader::read_uleb128(&mut r).map_err(|_| truncated())?;
        let len = usize::try_from(len).map_err(|_| truncated())?;
        let id = r.slice().get(..len).ok_or_else(truncated)?;
        return Ok(Some(AltLink {
            // A supplementary file's own section: its checksum, no link.
            name: if is_sup != 0 {
                PathBuf::new()
            } else {
                os_path(name)
            },
            build_id: id.to_vec(),
            sup: true,
        }));
    }
    Ok(None)
}

impl AltLink {
    /// The section is a supplementary file's own `.debug_sup`.
    fn is_supplementary(&self) -> bool {
        self.sup && self.name.as_os_str().is_empty()
    }
}

fn os_path(b: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(b))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
