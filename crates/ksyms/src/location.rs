//! Code locations as the kernel prints them: `vfs_read+0x10/0x360` (an
//! oops, `%pS`/`%pB`), `vfs_read+0x10`, with an optional ` [module]` after,
//! and bare addresses as kallsyms prints them (`ffffffff81111e90`) or with
//! `0x`.

/// `NAME+OFFSET[/SIZE] [MODULE]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolOffset<'a> {
    /// The symbol name.
    pub name: &'a str,
    /// Bytes from the symbol's start.
    pub offset: u64,
    /// The size the text states (the symbol's, as the kernel knew it).
    pub size: Option<u64>,
    /// The module name, without brackets.
    pub module: Option<&'a str>,
}

/// A number as the kernel prints offsets and sizes: `0x` hex, or decimal.
fn number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses `vfs_read+0x10/0x360`, `vfs_read+0x10`, `ext4_fill_super+0x1c/0x90
/// [ext4]`; None for anything else (a bare name or address).
pub fn parse_symbol_offset(s: &str) -> Option<SymbolOffset<'_>> {
    let s = s.trim();
    let (loc, module) = match s.split_once(char::is_whitespace) {
        Some((loc, rest)) => {
            let m = rest.trim().strip_prefix('[')?.strip_suffix(']')?;
            (loc, Some(m))
        }
        None => (s, None),
    };
    let (name, rest) = loc.rsplit_once('+')?;
    if name.is_empty() {
        return None;
    }
    let (offset, size) = match rest.split_once('/') {
        Some((o, z)) => (number(o)?, Some(number(z)?)),
        None => (number(rest)?, None),
    };
    Some(SymbolOffset {
        name,
        offset,
        size,
        module,
    })
}

/// `0x` followed by hex digits, or 8 to 16 bare hex digits as kallsyms
/// prints them.
pub fn parse_address(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok();
    }
    if (8..=16).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return u64::from_str_radix(s, 16).ok();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oops_format_with_size_and_module() {
        assert_eq!(
            parse_symbol_offset("vfs_read+0x10/0x360"),
            Some(SymbolOffset {
                name: "vfs_read",
                offset: 0x10,
                size: Some(0x360),
                module: None
            })
        );
        assert_eq!(
            parse_symbol_offset("ext4_fill_super+0x1c/0x90 [ext4]"),
            Some(SymbolOffset {
                name: "ext4_fill_super",
                offset: 0x1c,
                size: Some(0x90),
                module: Some("ext4")
            })
        );
        assert_eq!(
            parse_symbol_offset("find_next_bit.constprop.0+0x4").map(|s| (s.name, s.offset)),
            Some(("find_next_bit.constprop.0", 4))
        );
    }

    #[test]
    fn names_addresses_and_junk_are_not_symbol_offsets() {
        for s in [
            "vfs_read",
            "ffffffff81111e90",
            "+0x10",
            "f+zz",
            "f+0x1/",
            "f+1 ext4",
        ] {
            assert_eq!(parse_symbol_offset(s), None, "{s}");
        }
        assert_eq!(parse_address("ffffffff81111e90"), Some(0xffffffff81111e90));
        assert_eq!(parse_address("0x10"), Some(0x10));
        assert_eq!(parse_address("vfs_read"), None);
    }
}
