//! What a kernel image says about the verifier's rules for tracing
//! programs, beyond its BTF: its version (`linux_banner`), which decides
//! what `btf_distill_func_proto` accepts, and its `btf_id_deny` set, the
//! functions the verifier refuses to trace whatever their BTF. Which
//! functions that set holds depends on the configuration (CONFIG_SMP,
//! CONFIG_PREEMPT_RCU, CONFIG_DEBUG_PREEMPT...: 7.2 built without SMP
//! traces `migrate_disable`), so it is read from the image, where
//! resolve_btfids wrote the BTF ids of its members into `.BTF_ids`.

use std::collections::BTreeSet;

use btf::Btf;
use object::{Object, ObjectSection, ObjectSymbol};

/// `BTF_SET_START(btf_id_deny)`'s symbol, over `struct btf_id_set { u32
/// cnt; u32 ids[]; }`.
const DENY_SET: &str = "__BTF_ID__set__btf_id_deny";

/// The first kernel whose trampolines take union arguments as they take
/// structs (its `__get_type_size` uses `btf_type_is_struct`, STRUCT or
/// UNION): "bpf: Allow union argument in trampoline based programs",
/// merged for 6.19. 6.12 refuses them (measured: `release_pages`), 7.2
/// takes them (measured: `release_pages`, `kill_pid_usb_asyncio`).
pub const UNION_ARGUMENTS: (u32, u32) = (6, 19);

/// `len` bytes at `address` of `obj`'s section `index`.
fn bytes_at<'d>(
    obj: &object::File<'d>,
    index: object::SectionIndex,
    address: u64,
    len: usize,
) -> Option<&'d [u8]> {
    let sec = obj.section_by_index(index).ok()?;
    let off = usize::try_from(address.checked_sub(sec.address())?).ok()?;
    sec.data().ok()?.get(off..off.checked_add(len)?)
}

/// The (major, minor) version of a kernel image, from `linux_banner`
/// ("Linux version 7.2.0 ..."); None when the image has no banner.
pub fn kernel_version(obj: &object::File<'_>) -> Option<(u32, u32)> {
    let sym = obj.symbols().find(|s| s.name() == Ok("linux_banner"))?;
    let len = usize::try_from(sym.size())
        .ok()
        .filter(|&n| n > 0)
        .unwrap_or(64);
    let text = bytes_at(obj, sym.section_index()?, sym.address(), len)?;
    parse_banner(text)
}

fn parse_banner(text: &[u8]) -> Option<(u32, u32)> {
    let rest = text.strip_prefix(b"Linux version ")?;
    let release: String = rest
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'.')
        .map(|&b| char::from(b))
        .collect();
    let mut parts = release.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// The names of the functions in the image's `btf_id_deny` set, by the
/// BTF ids resolve_btfids wrote there (`btf` is the image's own BTF).
/// None when the image has no such set (a pre-link image, a kernel
/// without the verifier).
pub fn denied_functions(obj: &object::File<'_>, btf: &Btf) -> Option<BTreeSet<String>> {
    let sym = obj.symbols().find(|s| s.name() == Ok(DENY_SET))?;
    let index = sym.section_index()?;
    let word = |n: u64| {
        let b = bytes_at(obj, index, sym.address().checked_add(n * 4)?, 4)?;
        Some(u32::from_le_bytes(b.try_into().ok()?))
    };
    let count = word(0)?;
    // The set's symbol spans its count and its ids: a count past that is
    // no set resolve_btfids wrote.
    if sym.size() > 0 && u64::from(count) > (sym.size() / 4).saturating_sub(1) {
        return None;
    }
    let mut names = BTreeSet::new();
    for n in 1..=u64::from(count) {
        // BTF_ID_UNUSED, and a member resolve_btfids found no FUNC for, are 0.
        let id = word(n)?;
        if let Some(name) = btf
            .type_by_id(id)
            .filter(|_| id != 0)
            .and_then(|t| btf.name_of(t).ok())
        {
            names.insert(name.to_owned());
        }
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banners_give_major_and_minor() {
        assert_eq!(
            parse_banner(b"Linux version 7.2.0 (root@h) (gcc 16.2) #1\n\0"),
            Some((7, 2))
        );
        assert_eq!(
            parse_banner(b"Linux version 6.1.0-41-cloud-amd64 (x)"),
            Some((6, 1))
        );
        assert_eq!(parse_banner(b"Linux version x"), None);
        assert_eq!(parse_banner(b"not a banner"), None);
    }
}
