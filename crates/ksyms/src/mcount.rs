//! The fentry call sites of a vmlinux: the `__mcount_loc` table, which the
//! build (scripts/recordmcount or objtool --mcount) fills with the address
//! of every `call __fentry__` and ftrace turns into its records. A function
//! without an entry there (notrace, noinstr, no -mfentry) cannot carry a BPF
//! trampoline, whatever its BTF says.
//!
//! In a linked vmlinux the table is the bytes between the symbols
//! `__start_mcount_loc` and `__stop_mcount_loc` (inside `.init.data`), one
//! little-endian 64-bit address per site. A module's `__mcount_loc` section
//! holds relocations instead; it is not read here.

use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol};

use crate::{Error, Result};

/// Reads the sorted call-site addresses of the vmlinux at `path`.
pub fn read(path: &Path) -> Result<Vec<u64>> {
    parse(&crate::elf::open(path)?, path)
}

/// Parses the call sites out of ELF data; `path` names it in errors.
pub fn parse(data: &[u8], path: &Path) -> Result<Vec<u64>> {
    let elf_err = |reason: String| Error::Elf {
        path: path.to_owned(),
        reason,
    };
    let file = object::File::parse(data).map_err(|error| Error::Object {
        path: path.to_owned(),
        section: None,
        error,
    })?;
    if file.kind() == object::ObjectKind::Relocatable {
        return Err(elf_err(
            "a module's __mcount_loc holds relocations; only a linked vmlinux is read".into(),
        ));
    }
    let find = |name: &str| {
        file.symbols()
            .find(|s| s.name() == Ok(name))
            .ok_or_else(|| elf_err(format!("no symbol {name}: not a vmlinux built with ftrace")))
    };
    let start = find("__start_mcount_loc")?;
    let stop = find("__stop_mcount_loc")?;
    let len = stop
        .address()
        .checked_sub(start.address())
        .ok_or_else(|| elf_err("__stop_mcount_loc lies before __start_mcount_loc".into()))?;
    let section = start
        .section_index()
        .and_then(|i| file.section_by_index(i).ok())
        .ok_or_else(|| elf_err("__start_mcount_loc is in no section".into()))?;
    let bytes = section
        .data_range(start.address(), len)
        .map_err(|error| Error::Object {
            path: path.to_owned(),
            section: Some(section.name().unwrap_or("?").to_owned()),
            error,
        })?
        .ok_or_else(|| {
            elf_err(format!(
                "__mcount_loc ({:#x}, {len} bytes) lies outside the data of {}",
                start.address(),
                section.name().unwrap_or("?")
            ))
        })?;
    if bytes.len() % 8 != 0 {
        return Err(elf_err(format!(
            "__mcount_loc is {} bytes, not a whole number of addresses",
            bytes.len()
        )));
    }
    let mut sites: Vec<u64> = bytes
        .chunks_exact(8)
        .filter_map(|c| c.try_into().ok().map(u64::from_le_bytes))
        .collect();
    sites.sort_unstable();
    sites.dedup();
    Ok(sites)
}
