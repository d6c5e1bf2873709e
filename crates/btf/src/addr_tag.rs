//! The `addr=` tag: a DECL_TAG named `addr=0x<hex>` (component_idx -1) on
//! a FUNC, giving the link-time address of one instance of the function.
//!
//! This is btfkit's convention for tying BTF to code: a kernel function
//! can exist several times (static functions of the same name in several
//! files, or one function with clones whose parameters differ), and the
//! FUNC's name alone cannot say which instance a prototype describes. The
//! encoder writes one tag per address ([`format()`]), the dedup keeps FUNCs
//! with different tags apart ([`has_prefix`]), and readers link symbols to
//! FUNCs by them ([`func_tags`], [`parse`]).
//!
//! ```
//! use btf::addr_tag;
//! let mut buf = [0; addr_tag::MAX_LEN];
//! let name = addr_tag::format(0xffffffff81000000, &mut buf);
//! assert_eq!(name, "addr=0xffffffff81000000");
//! assert_eq!(addr_tag::parse(name), Some(0xffffffff81000000));
//! assert_eq!(addr_tag::parse("addr=ffff"), None);
//! ```

use crate::types::{TypeData, TypeId};
use crate::Btf;

/// What the name of every `addr=` tag starts with; the dedup tells the
/// tags by it.
pub const PREFIX: &str = "addr=";

/// The longest name [`format()`] writes: `addr=0x` and 16 hex digits.
pub const MAX_LEN: usize = PREFIX.len() + 2 + 16;

/// The address an `addr=0x<hex>` tag name gives; `None` for any other name
/// (no `0x`, no digits, a character that is not a hex digit, more than 64
/// bits).
pub fn parse(name: &str) -> Option<u64> {
    let hex = name.strip_prefix(PREFIX)?.strip_prefix("0x")?;
    if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// Whether a name starts like an `addr=` tag's. `name` may run on past the
/// name's NUL (a string section from the name's offset on): the prefix
/// holds no NUL, so a shorter string cannot match it.
pub fn has_prefix(name: &[u8]) -> bool {
    name.starts_with(PREFIX.as_bytes())
}

/// The tag name of `addr`, `addr=0x<lowercase hex>` as
/// `format!("addr={addr:#x}")` writes it, in `buf`: without the formatting
/// machinery, which took a third of the encoder's functions pass with a
/// tag on each of vmlinux's ~70,000 FUNCs.
pub fn format(addr: u64, buf: &mut [u8; MAX_LEN]) -> &str {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let prefix = PREFIX.as_bytes();
    buf[..prefix.len()].copy_from_slice(prefix);
    buf[prefix.len()..prefix.len() + 2].copy_from_slice(b"0x");
    let start = prefix.len() + 2;
    let digits = (16 - addr.leading_zeros() as usize / 4).max(1);
    for (i, b) in buf[start..start + digits].iter_mut().enumerate() {
        *b = HEX[(addr >> (4 * (digits - 1 - i)) & 0xf) as usize];
    }
    // Only ASCII was written.
    std::str::from_utf8(&buf[..start + digits]).unwrap_or_default()
}

/// One `addr=` tag on a FUNC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FuncAddrTag {
    /// The DECL_TAG's id.
    pub tag: TypeId,
    /// The FUNC it tags.
    pub func: TypeId,
    /// The address its name gives.
    pub address: u64,
}

/// Every `addr=` tag on a FUNC among `btf`'s own types, in type id order.
/// Tags whose name does not parse, or that tag something other than a
/// FUNC, are not `addr=` tags and are left out.
pub fn func_tags(btf: &Btf) -> impl Iterator<Item = FuncAddrTag> + '_ {
    btf.iter().filter_map(move |(tag, t)| {
        let TypeData::DeclTag {
            ty: func,
            component_idx: -1,
        } = t.data
        else {
            return None;
        };
        let address = parse(btf.name_of(t).ok()?)?;
        matches!(btf.type_by_id(func)?.data, TypeData::Func { .. }).then_some(FuncAddrTag {
            tag,
            func,
            address,
        })
    })
}

/// The addresses of the `addr=` tags on the FUNC `func`, in type id order
/// of the tags (one pass over the own types).
pub fn func_addresses(btf: &Btf, func: TypeId) -> Vec<u64> {
    func_tags(btf)
        .filter(|t| t.func == func)
        .map(|t| t.address)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Type;

    #[test]
    fn format_writes_what_format_macro_writes_and_parse_reads_it_back() {
        for a in [
            0,
            1,
            0xf,
            0x10,
            0xffffffff81000000,
            u64::MAX,
            0x1234_5678_9abc,
        ] {
            let mut buf = [0; MAX_LEN];
            let name = format(a, &mut buf);
            assert_eq!(name, std::format!("addr={a:#x}"));
            assert_eq!(parse(name), Some(a));
            assert!(has_prefix(name.as_bytes()));
        }
    }

    #[test]
    fn parse_takes_only_addr_0x_hex() {
        for bad in [
            "addr=",
            "addr=0x",
            "addr=10",
            "addr=0x+10",
            "addr=0xg",
            "addr=0x10000000000000000",
            "address=0x10",
            "",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        assert!(!has_prefix(b"add"));
    }

    #[test]
    fn func_tags_find_the_tags_on_funcs_only() {
        let mut btf = Btf::new();
        let proto = btf.add_type(Type::new(
            0,
            TypeData::FuncProto {
                ret: 0,
                params: Default::default(),
            },
        ));
        let name = btf.add_str("f");
        let f = btf.add_type(Type::new(name, TypeData::Func { proto, linkage: 0 }));
        let tag = |btf: &mut Btf, s: &str, ty| {
            let off = btf.add_str(s);
            btf.add_type(Type::new(
                off,
                TypeData::DeclTag {
                    ty,
                    component_idx: -1,
                },
            ))
        };
        let t1 = tag(&mut btf, "addr=0x20", f);
        tag(&mut btf, "addr=0x30", proto);
        tag(&mut btf, "noinline", f);
        let t2 = tag(&mut btf, "addr=0x10", f);
        let found: Vec<FuncAddrTag> = func_tags(&btf).collect();
        assert_eq!(
            found,
            [
                FuncAddrTag {
                    tag: t1,
                    func: f,
                    address: 0x20
                },
                FuncAddrTag {
                    tag: t2,
                    func: f,
                    address: 0x10
                }
            ]
        );
        assert_eq!(func_addresses(&btf, f), [0x20, 0x10]);
        assert!(func_addresses(&btf, proto).is_empty());
    }
}
