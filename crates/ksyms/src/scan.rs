//! The byte scanner shared by the kallsyms and System.map readers: one pass
//! over the whole file, no allocation per line (names stay in the file's
//! buffer, see [`Symbols::names`]).

use std::path::Path;

use crate::{Error, RawSymbol, Result, Symbols};

/// What the scanner accepts after the name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// `%px %c %s` then optionally TAB `[module]` (kernel/kallsyms.c).
    Kallsyms,
    /// `nm -n`: `%016lx %c %s`, no modules.
    SystemMap,
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The most bytes a kallsyms or System.map listing read as a stream may
/// hold: a kernel with every symbol of an allyesconfig build lists ~30 MB.
const MAX_LISTING: u64 = 256 << 20;

/// Reads a whole text file into memory (/proc/kallsyms reports size 0 and
/// is read to its end), through fileio: a FIFO without a writer is refused
/// naming the file, and a pipe or a device that never ends is refused at
/// [`MAX_LISTING`] bytes.
pub(crate) fn read_whole(path: &Path) -> Result<Vec<u8>> {
    Ok(
        match fileio::InputFile::open_capped(path, &[], MAX_LISTING)? {
            fileio::InputFile::Read(bytes) => bytes,
            mapped => mapped.to_vec(),
        },
    )
}

/// `symbols` read from a file, or [`Error::NoSymbols`] when it lists none.
pub(crate) fn listing_some(symbols: Symbols) -> Result<Symbols> {
    if symbols.raw.is_empty() {
        return Err(Error::NoSymbols {
            path: symbols.source,
        });
    }
    Ok(symbols)
}

pub(crate) fn scan(buf: Vec<u8>, path: &Path, format: Format) -> Result<Symbols> {
    if u32::try_from(buf.len()).is_err() {
        return Err(Error::parse(path, &[], 0, "file larger than 4 GiB"));
    }
    let names = match String::from_utf8(buf) {
        Ok(s) => s,
        Err(e) => {
            let off = e.utf8_error().valid_up_to();
            return Err(Error::parse(path, e.as_bytes(), off, "not UTF-8 text"));
        }
    };
    let mut out = Symbols {
        names: String::new(),
        // Kallsyms lines average about 40 bytes.
        raw: Vec::with_capacity(names.len() / 36 + 1),
        modules: Vec::new(),
        source: path.to_owned(),
        addresses_hidden: false,
        sections: None,
    };
    let b = names.as_bytes();
    let len = b.len();
    let err = |at: usize, reason: &str| Error::parse(path, b, at, reason);
    let mut i = 0;
    // The last module seen, to skip the module lookup on runs of one module.
    let mut last_module: Option<(&str, u16)> = None;
    while i < len {
        // Blank lines, and nm's undefined symbols (no address), carry nothing.
        match b.get(i) {
            Some(b'\n') => {
                i += 1;
                continue;
            }
            Some(b' ') if format == Format::SystemMap => {
                i = next_line(b, i);
                continue;
            }
            _ => {}
        }
        let (addr, type_char) = address_and_type(b, &mut i).map_err(|(at, r)| err(at, r))?;
        let name_start = i;
        while let Some(&c) = b.get(i) {
            if c == b'\n' || c == b'\t' {
                break;
            }
            i += 1;
        }
        if i == name_start {
            return Err(err(i, "expected a symbol name"));
        }
        let name_len = i - name_start;
        let mut module = 0;
        if b.get(i) == Some(&b'\t') {
            if format != Format::Kallsyms || b.get(i + 1) != Some(&b'[') {
                return Err(err(i, "unexpected text after the symbol name"));
            }
            let m_start = i + 2;
            let m_end = module_end(b, m_start)
                .ok_or_else(|| err(i + 1, "expected a module name in brackets"))?;
            let name = names.get(m_start..m_end).unwrap_or_default();
            module = match last_module {
                Some((last, id)) if last == name => id,
                _ => {
                    let id = out.intern_module(name);
                    last_module = Some((name, id));
                    id
                }
            };
            i = m_end + 1;
        }
        match b.get(i) {
            None | Some(b'\n') => i += 1,
            Some(_) => return Err(err(i, "expected the end of the line")),
        }
        out.raw.push(RawSymbol {
            addr,
            size: 0,
            name_start: name_start as u32,
            name_len: name_len as u32,
            module,
            type_char,
        });
    }
    out.names = names;
    Ok(out)
}

/// A line's `%px %c ` from `*i`, which moves to the name after it: the
/// address and the type letter, or where the line is wrong and how.
fn address_and_type(
    b: &[u8],
    i: &mut usize,
) -> std::result::Result<(u64, u8), (usize, &'static str)> {
    let line_start = *i;
    let mut addr: u64 = 0;
    while let Some(d) = b.get(*i).copied().and_then(hex_digit) {
        addr = (addr << 4) | u64::from(d);
        *i += 1;
    }
    let digits = *i - line_start;
    if digits == 0 || digits > 16 {
        return Err((
            line_start,
            "expected a hexadecimal address of 1 to 16 digits",
        ));
    }
    let i0 = *i;
    if b.get(i0) != Some(&b' ') {
        return Err((i0, "expected a space after the address"));
    }
    let type_char = match b.get(i0 + 1) {
        Some(&c) if c.is_ascii_graphic() => c,
        _ => return Err((i0 + 1, "expected a symbol type letter")),
    };
    if b.get(i0 + 2) != Some(&b' ') {
        return Err((i0 + 2, "expected a space after the type letter"));
    }
    *i += 3;
    Ok((addr, type_char))
}

/// Where the module name starting at `m_start` ends (its `]`), if it is
/// a name of at least one byte in brackets on this line.
fn module_end(b: &[u8], m_start: usize) -> Option<usize> {
    b.get(m_start..)
        .and_then(|r| r.iter().position(|&c| c == b']' || c == b'\n'))
        .map(|p| m_start + p)
        .filter(|&e| b.get(e) == Some(&b']') && e > m_start)
}

fn next_line(b: &[u8], from: usize) -> usize {
    b.get(from..)
        .and_then(|r| r.iter().position(|&c| c == b'\n'))
        .map_or(b.len(), |p| from + p + 1)
}
