//! bpftool's JSON format (`bpftool -j btf dump file FILE`): the same fields
//! as the raw format, as `{"types": [{"id": .., "kind": .., "name": .., ...}]}`.
//!
//! Equal to bpftool's output as a JSON value (field order and spacing are
//! not promised). Field names and which fields appear follow bpftool: a
//! member carries `bitfield_size` only when it is a bitfield, a signed
//! enumerator's `val` is negative where bpftool's is, and DATASEC entries do
//! not repeat the variable's name as the raw format does.
//!
//! The location kinds (bpf-next) carry the raw format's fields under the
//! same names, their records as `values`, `params` and `locs` arrays; no
//! bpftool JSON for them was available to compare with.

use std::io::{self, Write};

use super::loc;
use super::raw::{
    enum_encoding_name, func_linkage_name, func_name, int_encoding_name, loc_param_value,
    name_bytes, var_linkage_name, Sink,
};
use crate::{Btf, Type, TypeData, TypeId};

/// Writes `btf` in bpftool's json format.
pub fn dump<W: Write>(btf: &Btf, out: &mut W) -> io::Result<()> {
    let mut s = Sink::new(out);
    s.bytes(b"{\"types\":[");
    for (i, (id, t)) in btf.iter().enumerate() {
        if i > 0 {
            s.byte(b',');
        }
        write_type(&mut s, btf, id, t);
        s.maybe_flush()?;
    }
    s.bytes(b"]}\n");
    s.finish()
}

fn write_type<W: Write>(s: &mut Sink<W>, btf: &Btf, id: TypeId, t: &Type) {
    s.bytes(b"{\"id\":");
    s.int(id);
    s.bytes(b",\"kind\":\"");
    s.bytes(t.kind_name().as_bytes());
    s.bytes(b"\",\"name\":");
    string(s, name_bytes(btf, t.name_off));
    match &t.data {
        TypeData::Int {
            size,
            encoding,
            offset,
            bits,
        } => {
            field(s, "size", *size);
            field(s, "bits_offset", *offset);
            field(s, "nr_bits", *bits);
            str_field(s, "encoding", int_encoding_name(*encoding));
        }
        TypeData::Ptr { ty }
        | TypeData::Const { ty }
        | TypeData::Volatile { ty }
        | TypeData::Restrict { ty }
        | TypeData::Typedef { ty }
        | TypeData::TypeTag { ty } => field(s, "type_id", *ty),
        TypeData::Array(a) => {
            field(s, "type_id", a.elem);
            field(s, "index_type_id", a.index);
            field(s, "nr_elems", a.nelems);
        }
        TypeData::Struct { size, members } | TypeData::Union { size, members } => {
            field(s, "size", *size);
            field(s, "vlen", members.len());
            s.bytes(b",\"members\":[");
            for (i, m) in members.iter().enumerate() {
                open_item(s, i);
                s.bytes(b"\"name\":");
                string(s, name_bytes(btf, m.name_off));
                field(s, "type_id", m.ty);
                field(s, "bits_offset", m.bit_offset(t.kind_flag));
                let bits = m.bitfield_size(t.kind_flag);
                if bits != 0 {
                    field(s, "bitfield_size", bits);
                }
                s.byte(b'}');
            }
            s.byte(b']');
        }
        TypeData::Enum { size, values } => {
            str_field(s, "encoding", enum_encoding_name(t.kind_flag));
            field(s, "size", *size);
            field(s, "vlen", values.len());
            s.bytes(b",\"values\":[");
            for (i, v) in values.iter().enumerate() {
                open_item(s, i);
                s.bytes(b"\"name\":");
                string(s, name_bytes(btf, v.name_off));
                // bpftool reads the value as libbpf's signed 32-bit field
                // whatever the enum's sign, and an unsigned enum's widens
                // to 64 bits unsigned: 0xffffffff comes out as
                // 18446744073709551615. Equal JSON values means following it.
                let val = v.value(true);
                if t.kind_flag {
                    field(s, "val", val as i64);
                } else {
                    field(s, "val", val);
                }
                s.byte(b'}');
            }
            s.byte(b']');
        }
        TypeData::Enum64 { size, values } => {
            str_field(s, "encoding", enum_encoding_name(t.kind_flag));
            field(s, "size", *size);
            field(s, "vlen", values.len());
            s.bytes(b",\"values\":[");
            for (i, v) in values.iter().enumerate() {
                open_item(s, i);
                s.bytes(b"\"name\":");
                string(s, name_bytes(btf, v.name_off));
                if t.kind_flag {
                    field(s, "val", v.val as i64);
                } else {
                    field(s, "val", v.val);
                }
                s.byte(b'}');
            }
            s.byte(b']');
        }
        TypeData::Fwd => str_field(s, "fwd_kind", if t.kind_flag { "union" } else { "struct" }),
        TypeData::Func { proto, linkage } => {
            field(s, "type_id", *proto);
            str_field(s, "linkage", func_linkage_name(*linkage));
        }
        TypeData::FuncProto { ret, params } => {
            field(s, "ret_type_id", *ret);
            field(s, "vlen", params.len());
            s.bytes(b",\"params\":[");
            for (i, p) in params.iter().enumerate() {
                open_item(s, i);
                s.bytes(b"\"name\":");
                string(s, name_bytes(btf, p.name_off));
                field(s, "type_id", p.ty);
                s.byte(b'}');
            }
            s.byte(b']');
        }
        TypeData::Var { ty, linkage } => {
            field(s, "type_id", *ty);
            str_field(s, "linkage", var_linkage_name(*linkage));
        }
        TypeData::Datasec { size, vars } => {
            field(s, "size", *size);
            field(s, "vlen", vars.len());
            s.bytes(b",\"vars\":[");
            for (i, v) in vars.iter().enumerate() {
                open_item(s, i);
                s.bytes(b"\"type_id\":");
                s.int(v.ty);
                field(s, "offset", v.offset);
                field(s, "size", v.size);
                s.byte(b'}');
            }
            s.byte(b']');
        }
        TypeData::Float { size } => field(s, "size", *size),
        TypeData::DeclTag { ty, component_idx } => {
            field(s, "type_id", *ty);
            field(s, "component_idx", *component_idx);
        }
        TypeData::LocParam {
            size,
            flags,
            values,
        } => {
            field(s, "size", *size);
            field(s, "flags", *flags);
            field(s, "vlen", values.len());
            s.bytes(b",\"values\":[");
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    s.byte(b',');
                }
                s.int(*v);
            }
            s.byte(b']');
            str_field(s, "value", &loc::describe(&t.data).unwrap_or_default());
        }
        TypeData::LocProto { params } => {
            field(s, "vlen", params.len());
            s.bytes(b",\"params\":[");
            for (i, &p) in params.iter().enumerate() {
                open_item(s, i);
                s.bytes(b"\"type_id\":");
                s.int(p);
                if let Some(v) = loc_param_value(btf, p) {
                    str_field(s, "value", &v);
                }
                s.byte(b'}');
            }
            s.byte(b']');
        }
        TypeData::Locsec { locs } => {
            field(s, "vlen", locs.len());
            s.bytes(b",\"locs\":[");
            for (i, l) in locs.iter().enumerate() {
                open_item(s, i);
                s.bytes(b"\"name\":");
                string(s, func_name(btf, l.func));
                field(s, "func_type_id", l.func);
                field(s, "loc_proto_type_id", l.loc_proto);
                field(s, "offset", l.offset);
                s.byte(b'}');
            }
            s.byte(b']');
        }
        TypeData::Unknown { .. } => {}
    }
    s.byte(b'}');
}

/// `,` before every array element but the first, then `{`.
fn open_item<W: Write>(s: &mut Sink<W>, i: usize) {
    if i > 0 {
        s.byte(b',');
    }
    s.byte(b'{');
}

/// `,"key":N`. Every field but the first of an object goes through here.
fn field<W: Write, I: itoa::Integer>(s: &mut Sink<W>, key: &str, v: I) {
    s.bytes(b",\"");
    s.bytes(key.as_bytes());
    s.bytes(b"\":");
    s.int(v);
}

fn str_field<W: Write>(s: &mut Sink<W>, key: &str, v: &str) {
    s.bytes(b",\"");
    s.bytes(key.as_bytes());
    s.bytes(b"\":");
    string(s, v.as_bytes());
}

/// A JSON string literal. Names are almost always plain ASCII identifiers,
/// which are copied as they are; anything else is escaped, and bytes that are
/// not UTF-8 become U+FFFD so that the output stays valid JSON.
fn string<W: Write>(s: &mut Sink<W>, b: &[u8]) {
    s.byte(b'"');
    if b.iter()
        .all(|&c| (0x20..0x80).contains(&c) && c != b'"' && c != b'\\')
    {
        s.bytes(b);
    } else {
        escape(s, &String::from_utf8_lossy(b));
    }
    s.byte(b'"');
}

fn escape<W: Write>(s: &mut Sink<W>, text: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for c in text.chars() {
        match c {
            '"' => s.bytes(b"\\\""),
            '\\' => s.bytes(b"\\\\"),
            '\n' => s.bytes(b"\\n"),
            '\r' => s.bytes(b"\\r"),
            '\t' => s.bytes(b"\\t"),
            c if (c as u32) < 0x20 => {
                let v = c as usize;
                s.bytes(b"\\u00");
                s.byte(HEX[v >> 4]);
                s.byte(HEX[v & 0xf]);
            }
            c => {
                let mut utf8 = [0u8; 4];
                s.bytes(c.encode_utf8(&mut utf8).as_bytes());
            }
        }
    }
}
