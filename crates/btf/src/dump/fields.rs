//! What bpftool prints of each type, kind by kind, written once: a type's
//! fields and its records' fields in bpftool's order, with their values.
//! The raw text format (`raw.rs`) and the JSON format (`json.rs`) are two
//! renderings of this one walk ([`walk`]); where bpftool's two formats
//! differ in more than their syntax, the [`Value`] says so and each
//! renderer does what bpftool does.

use super::loc;
use crate::format::{BTF_INT_BOOL, BTF_INT_CHAR, BTF_INT_SIGNED};
use crate::{Btf, EnumValue, Kind, Member, Type, TypeData, TypeId};

/// One field's value.
pub(crate) enum Value<'a> {
    /// A number.
    Unsigned(u64),
    /// A number that may be negative.
    Signed(i64),
    /// A word from a fixed set (`SIGNED`, `static`, `union`): bare in the
    /// raw format, a string in JSON.
    Word(&'static str),
    /// A record's name: in the raw format quoted without its key
    /// (`'name' type_id=1`), in JSON the `name` field.
    Name(&'a [u8]),
    /// Text: quoted in the raw format (`key='text'`), a string in JSON.
    Quoted(&'a [u8]),
    /// Flags: hexadecimal in the raw format, a number in JSON.
    Hex(u32),
    /// An ENUM's enumerator and whether the enum is signed.
    Enum(EnumValue, bool),
    /// An ENUM64's value and whether the enum is signed.
    Enum64(u64, bool),
    /// A VAR's linkage: the raw format writes a comma before it
    /// (`type_id=1, linkage=static`).
    VarLinkage(&'static str),
    /// The type a DATASEC entry is: the raw format appends its kind and
    /// name (`(VAR 'jiffies')`) after the entry, JSON leaves it out.
    DatasecTarget(TypeId),
    /// A LOC_PARAM's words and what they describe: the raw format prints
    /// the description as `values`, JSON the words as `values` and the
    /// description as `value`.
    LocValues(&'a [u32], &'a str),
}

/// Where [`walk`] hands what it finds: fields, and lists of records each
/// with fields of its own.
pub(crate) trait Render {
    /// A field of the type, or of the record begun last.
    fn field(&mut self, key: &'static str, value: Value<'_>);
    /// The records that follow, a list named `key` (`members`).
    fn records(&mut self, key: &'static str);
    /// The start of one record of the list.
    fn record(&mut self);
    /// The end of the record begun last.
    fn end_record(&mut self);
    /// The end of the list.
    fn end_records(&mut self);
}

/// Hands `r` the fields bpftool prints of `t` after its id, kind and name,
/// in its order, with each list of records.
pub(crate) fn walk(r: &mut impl Render, btf: &Btf, t: &Type) {
    use Value::{Name, Signed, Unsigned, Word};
    match &t.data {
        TypeData::Int {
            size,
            encoding,
            offset,
            bits,
        } => {
            r.field("size", num(*size));
            r.field("bits_offset", Unsigned(u64::from(*offset)));
            r.field("nr_bits", Unsigned(u64::from(*bits)));
            r.field("encoding", Word(int_encoding_name(*encoding)));
        }
        TypeData::Array(a) => {
            r.field("type_id", num(a.elem));
            r.field("index_type_id", num(a.index));
            r.field("nr_elems", num(a.nelems));
        }
        TypeData::Struct { size, members } | TypeData::Union { size, members } => {
            size_vlen(r, *size, members.len());
            self::members(r, btf, t.kind_flag, members);
        }
        TypeData::Enum { size, values } => {
            let signed = t.kind_flag;
            let values = values.iter().map(|v| (v.name_off, Value::Enum(*v, signed)));
            enumerators(r, btf, signed, *size, values);
        }
        TypeData::Enum64 { size, values } => {
            let signed = t.kind_flag;
            let values = values
                .iter()
                .map(|v| (v.name_off, Value::Enum64(v.val, signed)));
            enumerators(r, btf, signed, *size, values);
        }
        TypeData::Fwd => r.field(
            "fwd_kind",
            Word(if t.kind_flag { "union" } else { "struct" }),
        ),
        TypeData::Func { proto, linkage } => {
            r.field("type_id", num(*proto));
            r.field("linkage", Word(func_linkage_name(*linkage)));
        }
        TypeData::FuncProto { ret, params } => {
            r.field("ret_type_id", num(*ret));
            r.field("vlen", Unsigned(params.len() as u64));
            r.records("params");
            for p in params {
                r.record();
                r.field("name", Name(name_bytes(btf, p.name_off)));
                r.field("type_id", num(p.ty));
                r.end_record();
            }
            r.end_records();
        }
        TypeData::Var { ty, linkage } => {
            r.field("type_id", num(*ty));
            r.field("linkage", Value::VarLinkage(var_linkage_name(*linkage)));
        }
        TypeData::Datasec { size, vars } => {
            size_vlen(r, *size, vars.len());
            r.records("vars");
            for v in vars {
                r.record();
                r.field("type_id", num(v.ty));
                r.field("offset", num(v.offset));
                r.field("size", num(v.size));
                r.field("target", Value::DatasecTarget(v.ty));
                r.end_record();
            }
            r.end_records();
        }
        TypeData::Float { size } => r.field("size", num(*size)),
        TypeData::DeclTag { ty, component_idx } => {
            r.field("type_id", num(*ty));
            r.field("component_idx", Signed(i64::from(*component_idx)));
        }
        TypeData::LocParam { .. } | TypeData::LocProto { .. } | TypeData::Locsec { .. } => {
            locations(r, btf, t)
        }
        // bpftool prints only the line's head for a kind it does not know.
        TypeData::Unknown { .. } => {}
        // PTR, TYPEDEF and the modifiers: the type they refer to.
        _ => {
            if let Some(ty) = t.ref_type_in(Kind::is_reference) {
                r.field("type_id", num(ty));
            }
        }
    }
}

/// A STRUCT's or UNION's members: name, type, bit offset and bitfield
/// size (given its `kind_flag`), the last only for a bitfield.
fn members(r: &mut impl Render, btf: &Btf, kind_flag: bool, members: &[Member]) {
    r.records("members");
    for m in members {
        r.record();
        r.field("name", Value::Name(name_bytes(btf, m.name_off)));
        r.field("type_id", num(m.ty));
        r.field("bits_offset", num(m.bit_offset(kind_flag)));
        let bits = m.bitfield_size(kind_flag);
        if bits != 0 {
            r.field("bitfield_size", num(bits));
        }
        r.end_record();
    }
    r.end_records();
}

/// The fields of the location kinds (bpf-next): a LOC_PARAM's location,
/// a LOC_PROTO's parameters and a LOCSEC's inline sites.
fn locations(r: &mut impl Render, btf: &Btf, t: &Type) {
    use Value::{Quoted, Unsigned};
    match &t.data {
        TypeData::LocParam {
            size,
            flags,
            values,
        } => {
            r.field("size", num(*size));
            r.field("flags", Value::Hex(*flags));
            r.field("vlen", Unsigned(values.len() as u64));
            let text = loc::describe(&t.data).unwrap_or_default();
            r.field("values", Value::LocValues(values, &text));
        }
        TypeData::LocProto { params } => {
            r.field("vlen", Unsigned(params.len() as u64));
            r.records("params");
            for &p in params {
                r.record();
                r.field("type_id", num(p));
                if let Some(v) = loc_param_value(btf, p) {
                    r.field("value", Quoted(v.as_bytes()));
                }
                r.end_record();
            }
            r.end_records();
        }
        TypeData::Locsec { locs } => {
            r.field("vlen", Unsigned(locs.len() as u64));
            r.records("locs");
            for l in locs {
                r.record();
                r.field("name", Quoted(func_name(btf, l.func)));
                r.field("func_type_id", num(l.func));
                r.field("loc_proto_type_id", num(l.loc_proto));
                r.field("offset", num(l.offset));
                r.end_record();
            }
            r.end_records();
        }
        _ => {}
    }
}

fn num<'a>(n: u32) -> Value<'a> {
    Value::Unsigned(u64::from(n))
}

fn size_vlen(r: &mut impl Render, size: u32, vlen: usize) {
    r.field("size", num(size));
    r.field("vlen", Value::Unsigned(vlen as u64));
}

/// An ENUM's or ENUM64's fields: its sign, size and enumerators, each
/// one's name and value.
fn enumerators<'a>(
    r: &mut impl Render,
    btf: &Btf,
    signed: bool,
    size: u32,
    values: impl ExactSizeIterator<Item = (u32, Value<'a>)>,
) {
    r.field("encoding", Value::Word(enum_encoding_name(signed)));
    size_vlen(r, size, values.len());
    r.records("values");
    for (name_off, val) in values {
        r.record();
        r.field("name", Value::Name(name_bytes(btf, name_off)));
        r.field("val", val);
        r.end_record();
    }
    r.end_records();
}

/// A name as bpftool shows it: `(anon)` for offset 0, `(invalid)` for an
/// offset that no string section holds. Bytes are passed through unchanged.
pub(crate) fn name_bytes(btf: &Btf, off: u32) -> &[u8] {
    if off == 0 {
        return b"(anon)";
    }
    btf.str_bytes(off).unwrap_or(b"(invalid)")
}

/// bpftool's word for an INT's encoding; combinations are `UNKN`.
fn int_encoding_name(encoding: u8) -> &'static str {
    match encoding {
        0 => "(none)",
        BTF_INT_SIGNED => "SIGNED",
        BTF_INT_CHAR => "CHAR",
        BTF_INT_BOOL => "BOOL",
        _ => "UNKN",
    }
}

/// FUNC linkage (kept in vlen).
pub(crate) fn func_linkage_name(linkage: u32) -> &'static str {
    match linkage {
        0 => "static",
        1 => "global",
        2 => "extern",
        _ => "(unknown)",
    }
}

/// VAR linkage.
pub(crate) fn var_linkage_name(linkage: u32) -> &'static str {
    match linkage {
        0 => "static",
        1 => "global",
        2 => "extern",
        _ => "(unknown)",
    }
}

/// ENUM and ENUM64 signedness lives in kind_flag.
fn enum_encoding_name(kind_flag: bool) -> &'static str {
    if kind_flag {
        "SIGNED"
    } else {
        "UNSIGNED"
    }
}

/// The kind name and name of the type a DATASEC entry points at, which
/// bpftool appends to the entry when the id exists. Id 0 is `void`, which
/// libbpf reports as kind 0 with no name.
pub(crate) fn datasec_target(btf: &Btf, ty: TypeId) -> Option<(&'static str, &[u8])> {
    if ty == 0 {
        return Some(("UNKNOWN", b"(anon)"));
    }
    let t = btf.type_by_id(ty)?;
    Some((t.kind_name(), name_bytes(btf, t.name_off)))
}

/// What a LOC_PROTO entry's LOC_PARAM describes; `None` for id 0 (no
/// location) or an id that is not a LOC_PARAM.
pub(crate) fn loc_param_value(btf: &Btf, id: TypeId) -> Option<String> {
    loc::describe(&btf.type_by_id(id)?.data)
}

/// The name of the function an inline site belongs to.
fn func_name(btf: &Btf, id: TypeId) -> &[u8] {
    btf.type_by_id(id)
        .map_or(b"(invalid)".as_slice(), |t| name_bytes(btf, t.name_off))
}
