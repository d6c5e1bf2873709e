//! `sym ADDR|NAME`: what is at an address, or where a symbol is, as
//! crash's sym: address, type letter, symbol+offset, module; and for a
//! function the prototype of that very instance, from the BTF FUNC whose
//! `addr=` tag is its address (btfkit's encoding), else the FUNC of its
//! name (marked when several instances share it).

use ksyms::{BtfIndex, FuncMatch, Hit};
use serde_json::{json, Value as Json};

use crate::command::Reply;
use crate::error::{Error, Result};
use crate::format::json_addr;
use crate::program::Program;

/// An address described: symbol, offset, module, prototype.
pub struct Described {
    /// The address described (a kernel virtual address).
    pub addr: u64,
    /// The symbol that holds it (None: no symbol does).
    pub symbol: Option<String>,
    /// How far into the symbol the address is, in bytes.
    pub offset: u64,
    /// The symbol's nm type letter (`T`, `t`, `D`...).
    pub type_char: Option<char>,
    /// The module the symbol is in (None: the kernel image).
    pub module: Option<String>,
    /// A function's C prototype from its BTF FUNC, if the BTF has one.
    pub prototype: Option<String>,
    /// The prototype came from the name only and several functions share it.
    pub ambiguous: bool,
}

impl Described {
    /// `name+0x1f` (crash's form), or the bare address.
    pub fn name_offset(&self) -> String {
        match (&self.symbol, self.offset) {
            (Some(s), 0) => s.clone(),
            (Some(s), o) => format!("{s}+{o:#x}"),
            (None, _) => format!("{:#x}", self.addr),
        }
    }

    /// The JSON form: `address` (a `"0x..."` string), `symbol`, `offset`,
    /// `type`, `module`, `prototype`, `prototype_by_name_only`.
    pub fn to_json(&self) -> Json {
        json!({
            "address": json_addr(self.addr),
            "symbol": self.symbol,
            "offset": self.offset,
            "type": self.type_char.map(String::from),
            "module": self.module,
            "prototype": self.prototype,
            "prototype_by_name_only": self.ambiguous,
        })
    }
}

/// Functions' BTF, linked to the symbols by address tags (calibrated for KASLR).
pub fn btf_index(prog: &Program) -> BtfIndex<'_> {
    let mut index = BtfIndex::new(prog.btf());
    index.calibrate(prog.symbols());
    index
}

/// Describes `addr` (the symbol containing it).
pub fn describe(prog: &Program, index: &BtfIndex<'_>, addr: u64) -> Described {
    let hit = prog.symbols().lookup(addr);
    from_hit(prog, index, addr, hit)
}

fn from_hit(prog: &Program, index: &BtfIndex<'_>, addr: u64, hit: Option<Hit<'_>>) -> Described {
    let Some(h) = hit else {
        return Described {
            addr,
            symbol: None,
            offset: 0,
            type_char: None,
            module: None,
            prototype: None,
            ambiguous: false,
        };
    };
    let m = index.match_function(prog.symbols(), &h.symbol);
    let prototype = match m {
        FuncMatch::None => None,
        _ => m
            .btf_id()
            .map(|id| btf::cdecl::func_prototype(prog.btf(), id)),
    };
    Described {
        addr,
        symbol: Some(h.symbol.name.to_owned()),
        offset: h.offset,
        type_char: Some(h.symbol.type_char),
        module: h.symbol.module.map(str::to_owned),
        prototype,
        ambiguous: m.is_ambiguous(),
    }
}

/// `sym ADDR|NAME`: the symbol that holds the address, or every symbol of
/// the name, each with its prototype.
pub fn run(prog: &mut Program, arg: &str) -> Result<Reply> {
    if arg.is_empty() {
        return Err(Error::syntax(1, "usage: sym ADDRESS|NAME"));
    }
    let index = btf_index(prog);
    let found: Vec<Described> = match parse_address(arg) {
        Some(addr) => vec![describe(prog, &index, addr)],
        None => prog
            .symbols()
            .by_name(arg)
            .map(|s| {
                let hit = Hit {
                    symbol: s,
                    offset: 0,
                };
                from_hit(prog, &index, s.addr, Some(hit))
            })
            .collect(),
    };
    if found.is_empty() || found.iter().all(|d| d.symbol.is_none()) {
        return Err(Error::eval(1, format!("{arg}: no symbol")));
    }
    let text = found
        .iter()
        .map(|d| {
            let mut line = format!(
                "{:016x} ({}) {}",
                d.addr,
                d.type_char.unwrap_or('?'),
                d.name_offset()
            );
            if let Some(m) = &d.module {
                line.push_str(&format!(" [{m}]"));
            }
            if let Some(p) = &d.prototype {
                let note = if d.ambiguous { "  /* by name */" } else { "" };
                line.push_str(&format!("\n    {p};{note}"));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Reply {
        text,
        json: Json::Array(found.iter().map(Described::to_json).collect()),
    })
}

/// `ffffffff81000000`, `0xffffffff81000000`: an address. A bare word of
/// hex digits is an address only when it has more than 8 of them, so that
/// names like `add` or `bad` stay names.
pub fn parse_address(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok();
    }
    if s.len() > 8 && s.chars().all(|c| c.is_ascii_hexdigit()) {
        return u64::from_str_radix(s, 16).ok();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::parse_address;

    #[test]
    fn addresses_and_names() {
        assert_eq!(parse_address("0x10"), Some(0x10));
        assert_eq!(
            parse_address("ffffffff81000000"),
            Some(0xffff_ffff_8100_0000)
        );
        assert_eq!(parse_address("add"), None);
        assert_eq!(parse_address("schedule"), None);
    }
}
