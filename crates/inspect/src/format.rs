//! Printing values: text like drgn's (`(type)value`, structs with member
//! names, one per line, tab-indented), and JSON for machines.
//!
//! JSON: integers are numbers; pointers and function addresses are
//! `"0x..."` strings (JSON readers such as jq 1.6 round integers above
//! 2^53, and kernel addresses are); an enum is its enumerator's name, as
//! drgn prints it, or its number when no enumerator has that value;
//! `_Bool` is a boolean, floats are numbers, arrays of a char type are
//! strings up to the first NUL (each byte one code point, as Latin-1),
//! other arrays are lists, structs and unions are objects keyed by member
//! name (an anonymous member by `@` and its index). A place that cannot be
//! read is `{"error": "..."}` where it is, so the rest still prints.

use std::fmt::Write;

use btf::TypeData;
use serde_json::{json, Map, Value as Json};

use crate::error::{Error, Result};
use crate::eval::{Evaluated, Loc, Value};
use crate::program::Program;
use crate::types;

/// How `p` prints integers: drgn's way (decimal, enums by name), or in a
/// radix as `p/x` and `p/d` (gdb's and crash's): integers, enums and
/// pointers as numbers in that radix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Radix {
    /// drgn's: integers in decimal, enums by name, pointers in hex.
    Natural,
    /// `p/x`: integers, enums and pointers in hex.
    Hex,
    /// `p/d`: integers, enums and pointers in decimal.
    Decimal,
}

/// An address as JSON: a `"0x..."` string.
pub fn json_addr(x: u64) -> Json {
    Json::String(format!("{x:#x}"))
}

/// Arrays print at most this many elements (drgn has no limit; ours keeps
/// a mistaken cast of a huge array from printing forever).
const MAX_ELEMS: u64 = 1 << 16;
/// Strings a `char *` points at print up to this many bytes.
const MAX_STRING: usize = 4096;

fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| b as char).collect()
}

fn c_escape(bytes: &[u8]) -> String {
    let mut s = String::new();
    for &b in bytes {
        match b {
            b'"' => s.push_str("\\\""),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s
}

impl Program {
    fn char_array(&self, v: &Value, n: u64, col: usize) -> Result<Vec<u8>> {
        let addr = v
            .address()
            .ok_or_else(|| Error::eval(col, "array not in memory"))?;
        let bytes = self
            .mem
            .read_vec(addr, n.min(MAX_ELEMS) as usize)
            .map_err(|error| Error::Memory { col, error })?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Ok(bytes[..end].to_vec())
    }

    /// The JSON form of a value (see the module documentation).
    pub fn to_json(&self, v: &Value) -> Json {
        self.json_at(v, 0)
    }

    fn json_at(&self, v: &Value, depth: usize) -> Json {
        let err = |e: Error| json!({ "error": e.to_string() });
        if depth > 64 {
            return json!({ "error": "nested too deep" });
        }
        let r = self.btf.skip_mods_and_typedefs(v.ty);
        let Some(t) = self.btf.type_by_id(r) else {
            return match v.loc {
                Loc::Imm(x) | Loc::Mem { addr: x, .. } => json_addr(x),
            };
        };
        match &t.data {
            TypeData::Int { encoding, .. } => match self.scalar(v, 0) {
                Ok(x) if encoding & types::INT_BOOL != 0 => json!(x != 0),
                Ok(x) if self.is_signed(v.ty) => json!(x as i64),
                Ok(x) => json!(x),
                Err(e) => err(e),
            },
            TypeData::Enum { .. } | TypeData::Enum64 { .. } => match self.scalar(v, 0) {
                Ok(x) => match self.enumerator_name(&t.data, x) {
                    Some(n) => json!(n),
                    None if self.is_signed(v.ty) => json!(x as i64),
                    None => json!(x),
                },
                Err(e) => err(e),
            },
            TypeData::Ptr { .. } => self.scalar(v, 0).map_or_else(err, json_addr),
            TypeData::Float { size } => {
                let Some(addr) = v.address() else {
                    return Json::Null;
                };
                match self.mem.read_vec(addr, *size as usize) {
                    Ok(b) if b.len() == 8 => {
                        json!(f64::from_le_bytes(b.try_into().unwrap_or_default()))
                    }
                    Ok(b) if b.len() == 4 => {
                        json!(f32::from_le_bytes(b.try_into().unwrap_or_default()))
                    }
                    Ok(_) => Json::Null,
                    Err(error) => err(Error::Memory { col: 0, error }),
                }
            }
            TypeData::Array(a) => {
                let (elem, n) = (a.elem, u64::from(a.nelems));
                if types::is_char(&self.btf, elem) && n > 0 {
                    return self
                        .char_array(v, n, 0)
                        .map_or_else(err, |b| Json::String(latin1(&b)));
                }
                let size = self.btf.resolve_size(elem).unwrap_or(0);
                let Some(addr) = v.address() else {
                    return Json::Null;
                };
                Json::Array(
                    (0..n.min(MAX_ELEMS))
                        .map(|i| self.json_at(&Value::at(elem, addr + i * size), depth + 1))
                        .collect(),
                )
            }
            TypeData::Struct { .. } | TypeData::Union { .. } => {
                let Some(addr) = v.address() else {
                    return Json::Null;
                };
                let mut m = Map::new();
                for (i, mem) in t.members().iter().enumerate() {
                    let name = self.btf.str_at(mem.name_off).unwrap_or("");
                    let key = if name.is_empty() {
                        format!("@{i}")
                    } else {
                        name.to_owned()
                    };
                    let mv = member_value(addr, mem, t.kind_flag);
                    m.insert(key, self.json_at(&mv, depth + 1));
                }
                Json::Object(m)
            }
            _ => match v.loc {
                Loc::Imm(x) | Loc::Mem { addr: x, .. } => json_addr(x),
            },
        }
    }

    /// The name of the enumerator of an enum type whose value is `x`.
    fn enumerator_name(&self, data: &TypeData, x: u64) -> Option<&str> {
        let off = match data {
            TypeData::Enum { values, .. } => {
                values
                    .iter()
                    .find(|e| u64::from(e.val) == (x & 0xffff_ffff))?
                    .name_off
            }
            TypeData::Enum64 { values, .. } => values.iter().find(|e| e.val == x)?.name_off,
            _ => return None,
        };
        self.btf.str_at(off).ok()
    }

    /// The JSON form of what an expression gave: the value's, or an array
    /// of the entries' for a list walk.
    pub fn evaluated_json(&self, e: &Evaluated) -> Json {
        match e {
            Evaluated::One(v) => self.to_json(v),
            Evaluated::Many(vs) => Json::Array(vs.iter().map(|v| self.to_json(v)).collect()),
        }
    }

    /// drgn's text form of a value. As drgn does, a pointer (but not to
    /// void, a function or a char) prints what it points at:
    /// `*(type *)(sym+0x0 = 0x...) = {...}`, `*(int *)0x... = 5`.
    pub fn to_text(&self, v: &Value) -> String {
        self.to_text_in(v, Radix::Natural)
    }

    /// The text form with integers in `radix` (see [`Radix`]).
    pub fn to_text_in(&self, v: &Value, radix: Radix) -> String {
        // In a radix a pointer is a number, as gdb's `p/x ptr` prints it.
        let ptr = self
            .btf
            .resolved_data(v.ty)
            .filter(|_| radix == Radix::Natural);
        if let Some(TypeData::Ptr { ty }) = ptr {
            let pointee = *ty;
            let deref = !types::is_plain_char(&self.btf, pointee)
                && !matches!(
                    self.btf.resolved_data(pointee),
                    None | Some(TypeData::FuncProto { .. } | TypeData::Fwd)
                );
            if let (true, Ok(addr)) = (deref, self.scalar(v, 0)) {
                let target = Value::at(pointee, addr);
                let size = self.btf.resolve_size(pointee).unwrap_or(1).clamp(1, 4096);
                if addr != 0 && self.mem.read_vec(addr, size as usize).is_ok() {
                    let shown = match self.symbolize(addr) {
                        Some(sym) => format!("({sym} = {addr:#x})"),
                        None => format!("{addr:#x}"),
                    };
                    let mut s = format!("*({}){shown} = ", self.type_name(v.ty));
                    self.text_body(&target, 0, radix, &mut s);
                    return s;
                }
            }
        }
        let mut s = format!("({})", self.type_name(v.ty));
        self.text_body(v, 0, radix, &mut s);
        s
    }

    /// The text form of what an expression gave, in `radix`: the value's,
    /// or the entries' one after another (each on its own lines).
    pub fn evaluated_text(&self, e: &Evaluated, radix: Radix) -> String {
        match e {
            Evaluated::One(v) => self.to_text_in(v, radix),
            Evaluated::Many(vs) => vs
                .iter()
                .map(|v| self.to_text_in(v, radix) + "\n")
                .collect::<String>()
                .trim_end()
                .to_owned(),
        }
    }

    fn symbolize(&self, x: u64) -> Option<String> {
        let hit = self.syms.lookup(x)?;
        // Only inside a symbol of known extent, and not the absolute
        // (per-CPU offset) symbols: a heap address past them is no part of them.
        if hit.symbol.size.is_none_or(|s| hit.offset >= s.max(1))
            || hit.symbol.type_char.eq_ignore_ascii_case(&'a')
        {
            return None;
        }
        let name = hit.symbol.name;
        Some(match hit.symbol.module {
            Some(m) => format!("{name}+{:#x} [{m}]", hit.offset),
            None => format!("{name}+{:#x}", hit.offset),
        })
    }

    fn text_body(&self, v: &Value, depth: usize, radix: Radix, s: &mut String) {
        let r = self.btf.skip_mods_and_typedefs(v.ty);
        let Some(t) = self.btf.type_by_id(r) else {
            let _ = write!(s, "{}", self.json_at(v, depth));
            return;
        };
        let numeric = matches!(
            t.data,
            TypeData::Int { .. }
                | TypeData::Enum { .. }
                | TypeData::Enum64 { .. }
                | TypeData::Ptr { .. }
        );
        if radix != Radix::Natural && numeric {
            self.text_radix(v, r, radix, s);
            return;
        }
        match &t.data {
            TypeData::Int { .. }
            | TypeData::Enum { .. }
            | TypeData::Enum64 { .. }
            | TypeData::Ptr { .. } => self.text_scalar(v, t, s),
            TypeData::Array(a) => self.text_array(v, a, depth, radix, s),
            TypeData::Struct { .. } | TypeData::Union { .. } => {
                self.text_members(v, t, depth, radix, s)
            }
            _ => {
                let _ = write!(s, "{}", self.json_at(v, depth));
            }
        }
    }

    /// A number in the radix asked for (`p/x`, `p/d`).
    fn text_radix(&self, v: &Value, r: btf::TypeId, radix: Radix, s: &mut String) {
        match self.scalar(v, 0) {
            Ok(x) if radix == Radix::Hex => {
                // A negative number in hex is its two's complement in its size.
                let bits = self.btf.resolve_size(r).unwrap_or(8).min(8) * 8;
                let x = if bits < 64 { x & ((1 << bits) - 1) } else { x };
                let _ = write!(s, "{x:#x}");
            }
            Ok(x) if self.is_signed(v.ty) => {
                let _ = write!(s, "{}", x as i64);
            }
            Ok(x) => {
                let _ = write!(s, "{x}");
            }
            Err(e) => {
                let _ = write!(s, "<{e}>");
            }
        }
    }

    /// An integer, enumerator or pointer, as drgn prints it.
    fn text_scalar(&self, v: &Value, t: &btf::Type, s: &mut String) {
        match &t.data {
            TypeData::Int { encoding, .. } => match self.scalar(v, 0) {
                // drgn prints _Bool as a number too.
                Ok(x) if encoding & types::INT_BOOL != 0 => {
                    let _ = write!(s, "{}", u64::from(x != 0));
                }
                Ok(x) if self.is_signed(v.ty) => {
                    let _ = write!(s, "{}", x as i64);
                }
                Ok(x) => {
                    let _ = write!(s, "{x}");
                }
                Err(e) => {
                    let _ = write!(s, "<{e}>");
                }
            },
            TypeData::Enum { .. } | TypeData::Enum64 { .. } => match self.scalar(v, 0) {
                Ok(x) => match self.enumerator_name(&t.data, x) {
                    Some(n) => s.push_str(n),
                    None if self.is_signed(v.ty) => {
                        let _ = write!(s, "{}", x as i64);
                    }
                    None => {
                        let _ = write!(s, "{x}");
                    }
                },
                Err(e) => {
                    let _ = write!(s, "<{e}>");
                }
            },
            TypeData::Ptr { ty } => match self.scalar(v, 0) {
                Ok(x) => {
                    match self.symbolize(x) {
                        Some(sym) if x != 0 => {
                            let _ = write!(s, "{sym} = {x:#x}");
                        }
                        _ => {
                            let _ = write!(s, "{x:#x}");
                        }
                    }
                    // As drgn: a char pointer shows its string when readable.
                    if x != 0 && types::is_plain_char(&self.btf, *ty) {
                        if let Ok(b) = self.mem.read_cstr(x, MAX_STRING) {
                            let _ = write!(s, " = \"{}\"", c_escape(&b));
                        }
                    }
                }
                Err(e) => {
                    let _ = write!(s, "<{e}>");
                }
            },
            _ => {}
        }
    }

    /// An array: a string for chars, else its elements, one per line when
    /// they are compound.
    fn text_array(&self, v: &Value, a: &btf::Array, depth: usize, radix: Radix, s: &mut String) {
        let indent = "\t".repeat(depth + 1);
        let (elem, n) = (a.elem, u64::from(a.nelems));
        if types::is_char(&self.btf, elem) {
            match self.char_array(v, n, 0) {
                Ok(b) => {
                    let _ = write!(s, "\"{}\"", c_escape(&b));
                }
                Err(e) => {
                    let _ = write!(s, "<{e}>");
                }
            }
            return;
        }
        let size = self.btf.resolve_size(elem).unwrap_or(0);
        let Some(addr) = v.address() else { return };
        let compound = matches!(
            self.btf.resolved_data(elem),
            Some(TypeData::Struct { .. } | TypeData::Union { .. } | TypeData::Array(_))
        );
        s.push('{');
        for i in 0..n.min(MAX_ELEMS) {
            let ev = Value::at(elem, addr + i * size);
            if compound {
                let _ = write!(s, "\n{indent}");
                self.text_body(&ev, depth + 1, radix, s);
                s.push(',');
            } else {
                s.push_str(if i == 0 { " " } else { ", " });
                self.text_body(&ev, depth + 1, radix, s);
            }
        }
        if compound {
            let _ = write!(s, "\n{}}}", "\t".repeat(depth));
        } else {
            s.push_str(" }");
        }
    }

    /// A struct's or union's members, one per line.
    fn text_members(&self, v: &Value, t: &btf::Type, depth: usize, radix: Radix, s: &mut String) {
        let indent = "\t".repeat(depth + 1);
        let Some(addr) = v.address() else { return };
        s.push_str("{\n");
        for mem in t.members() {
            let name = self.btf.str_at(mem.name_off).unwrap_or("");
            let mv = member_value(addr, mem, t.kind_flag);
            if name.is_empty() {
                let _ = write!(s, "{indent}");
            } else {
                let _ = write!(s, "{indent}.{name} = ");
            }
            let _ = write!(s, "({})", self.type_name(mem.ty));
            self.text_body(&mv, depth + 1, radix, s);
            s.push_str(",\n");
        }
        let _ = write!(s, "{}}}", "\t".repeat(depth));
    }
}

/// A member of the struct or union at `addr`: a place, or a bitfield.
fn member_value(addr: u64, m: &btf::Member, kind_flag: bool) -> Value {
    let off = m.bit_offset(kind_flag);
    match m.bitfield_size(kind_flag) {
        0 => Value::at(m.ty, addr + u64::from(off / 8)),
        bits => Value {
            ty: m.ty,
            loc: Loc::Mem {
                addr,
                bit: off,
                bits,
            },
        },
    }
}
