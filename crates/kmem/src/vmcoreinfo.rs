//! VMCOREINFO: the `KEY=value` lines the kernel keeps for dump readers
//! (kernel/crash_core.c). Found in the dump's ELF note, the kdump header, or
//! live in /sys/kernel/vmcoreinfo (which gives the note's physical address).

use std::collections::HashMap;

use crate::error::{Error, Result};

/// The `KEY=value` entries of a VMCOREINFO note.
#[derive(Clone, Debug, Default)]
pub struct VmcoreInfo {
    entries: HashMap<String, String>,
}

impl VmcoreInfo {
    /// Parses the note's text. Lines without `=` are skipped and a trailing
    /// NUL is dropped; nothing fails here, a missing key fails when asked for.
    pub fn parse(data: &[u8]) -> VmcoreInfo {
        let text = String::from_utf8_lossy(data);
        let entries = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.trim_end_matches('\0').to_owned()))
            .collect();
        VmcoreInfo { entries }
    }

    /// True when no line had a `KEY=value`.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value of `key` (`OSRELEASE`, `SYMBOL(init_uts_ns)`...) as written.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    /// Every `KEY=value` entry, in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// `SYMBOL(name)`: a runtime address, in hex.
    pub fn symbol(&self, name: &str) -> Option<u64> {
        u64::from_str_radix(self.get(&format!("SYMBOL({name})"))?, 16).ok()
    }

    /// `NUMBER(name)`: a signed decimal.
    pub fn number(&self, name: &str) -> Option<i64> {
        self.get(&format!("NUMBER({name})"))?.parse().ok()
    }

    /// `KERNELOFFSET`: the KASLR offset, in hex.
    pub fn kernel_offset(&self) -> Option<u64> {
        u64::from_str_radix(self.get("KERNELOFFSET")?, 16).ok()
    }

    /// `OSRELEASE`: the kernel release (`uname -r`).
    pub fn osrelease(&self) -> Option<&str> {
        self.get("OSRELEASE")
    }

    /// Like [`VmcoreInfo::symbol`], with [`Error::Vmcoreinfo`] naming the
    /// missing symbol.
    pub fn require_symbol(&self, name: &str) -> Result<u64> {
        self.symbol(name)
            .ok_or_else(|| Error::Vmcoreinfo(format!("no SYMBOL({name})")))
    }
}

/// /sys/kernel/vmcoreinfo: `<physical address> <size>`, both hex; the
/// kernel prints the address with `%pa`, so with a `0x` prefix.
pub fn parse_sysfs(text: &str) -> Option<(u64, u64)> {
    let mut it = text.split_whitespace();
    let a = it.next()?;
    let addr = u64::from_str_radix(a.strip_prefix("0x").unwrap_or(a), 16).ok()?;
    let size = u64::from_str_radix(it.next()?, 16).ok()?;
    Some((addr, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_symbols_numbers_and_offset() {
        let v = VmcoreInfo::parse(
            b"OSRELEASE=6.1.0\nSYMBOL(init_top_pgt)=ffffffffae210000\nNUMBER(phys_base)=-650117120\nKERNELOFFSET=2b800000\n",
        );
        assert_eq!(v.osrelease(), Some("6.1.0"));
        assert_eq!(v.symbol("init_top_pgt"), Some(0xffffffffae210000));
        assert_eq!(v.number("phys_base"), Some(-650117120));
        assert_eq!(v.kernel_offset(), Some(0x2b800000));
        assert!(v.require_symbol("nope").is_err());
        assert_eq!(parse_sysfs("1fe0a000 1024\n"), Some((0x1fe0a000, 0x1024)));
        // As the kernel writes it (kernel/ksysfs.c, "%pa %x").
        assert_eq!(
            parse_sysfs("0x0000000100c66000 1024\n"),
            Some((0x100c66000, 0x1024))
        );
    }
}
