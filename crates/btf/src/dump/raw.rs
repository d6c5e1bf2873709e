//! bpftool's raw text format (`bpftool btf dump file FILE`), byte for byte.
//!
//! One line per type, `[id] KIND 'name'` and the kind's fields, then one
//! tab-indented line per member, enumerator, parameter or section entry.
//! Only the object's own types are printed, so a split BTF shows its ids
//! continuing after the base's. Names are looked up through the base; an
//! anonymous name (offset 0) reads `(anon)` and an offset outside the string
//! sections reads `(invalid)`, as bpftool prints them.
//!
//! The vmlinux dump is ~12 MB of short fields, so the output is staged in a
//! `Sink` and integers are formatted with `itoa` rather than `write!`.

use std::io::{self, Write};

use super::loc;
use crate::format::{BTF_INT_BOOL, BTF_INT_CHAR, BTF_INT_SIGNED};
use crate::{Btf, Type, TypeData, TypeId};

/// Bytes staged before they are handed to the writer in one `write_all`.
const FLUSH_AT: usize = 1 << 18;

/// An output buffer that the dumpers fill with plain byte appends and that
/// goes to the underlying writer in large chunks.
pub(crate) struct Sink<'w, W: Write> {
    buf: Vec<u8>,
    out: &'w mut W,
    num: itoa::Buffer,
}

impl<'w, W: Write> Sink<'w, W> {
    pub(crate) fn new(out: &'w mut W) -> Self {
        Sink {
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            out,
            num: itoa::Buffer::new(),
        }
    }

    #[inline]
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    #[inline]
    pub(crate) fn byte(&mut self, b: u8) {
        self.buf.push(b);
    }

    #[inline]
    pub(crate) fn int<I: itoa::Integer>(&mut self, v: I) {
        self.buf.extend_from_slice(self.num.format(v).as_bytes());
    }

    /// Hands the staged bytes over once enough have gathered; called between
    /// types so that a chunk boundary never needs care.
    #[inline]
    pub(crate) fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.out.flush()
    }
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
pub(crate) fn int_encoding_name(encoding: u8) -> &'static str {
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
pub(crate) fn enum_encoding_name(kind_flag: bool) -> &'static str {
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
pub(crate) fn func_name(btf: &Btf, id: TypeId) -> &[u8] {
    btf.type_by_id(id)
        .map_or(b"(invalid)".as_slice(), |t| name_bytes(btf, t.name_off))
}

/// Writes `btf` in bpftool's raw format.
pub fn dump<W: Write>(btf: &Btf, out: &mut W) -> io::Result<()> {
    let mut s = Sink::new(out);
    for (id, t) in btf.iter() {
        write_type(&mut s, btf, id, t);
        s.maybe_flush()?;
    }
    s.finish()
}

fn write_type<W: Write>(s: &mut Sink<W>, btf: &Btf, id: TypeId, t: &Type) {
    s.byte(b'[');
    s.int(id);
    s.bytes(b"] ");
    s.bytes(t.kind_name().as_bytes());
    s.bytes(b" '");
    s.bytes(name_bytes(btf, t.name_off));
    s.byte(b'\'');
    match &t.data {
        TypeData::Int {
            size,
            encoding,
            offset,
            bits,
        } => {
            s.bytes(b" size=");
            s.int(*size);
            s.bytes(b" bits_offset=");
            s.int(*offset);
            s.bytes(b" nr_bits=");
            s.int(*bits);
            s.bytes(b" encoding=");
            s.bytes(int_encoding_name(*encoding).as_bytes());
        }
        TypeData::Ptr { ty }
        | TypeData::Const { ty }
        | TypeData::Volatile { ty }
        | TypeData::Restrict { ty }
        | TypeData::Typedef { ty }
        | TypeData::TypeTag { ty } => {
            s.bytes(b" type_id=");
            s.int(*ty);
        }
        TypeData::Array(a) => {
            s.bytes(b" type_id=");
            s.int(a.elem);
            s.bytes(b" index_type_id=");
            s.int(a.index);
            s.bytes(b" nr_elems=");
            s.int(a.nelems);
        }
        TypeData::Struct { size, members } | TypeData::Union { size, members } => {
            size_vlen(s, *size, members.len());
            for m in members {
                s.bytes(b"\n\t'");
                s.bytes(name_bytes(btf, m.name_off));
                s.bytes(b"' type_id=");
                s.int(m.ty);
                s.bytes(b" bits_offset=");
                s.int(m.bit_offset(t.kind_flag));
                let bits = m.bitfield_size(t.kind_flag);
                if bits != 0 {
                    s.bytes(b" bitfield_size=");
                    s.int(bits);
                }
            }
        }
        TypeData::Enum { size, values } => {
            s.bytes(b" encoding=");
            s.bytes(enum_encoding_name(t.kind_flag).as_bytes());
            size_vlen(s, *size, values.len());
            for v in values {
                s.bytes(b"\n\t'");
                s.bytes(name_bytes(btf, v.name_off));
                s.bytes(b"' val=");
                let val = v.value(t.kind_flag);
                if t.kind_flag {
                    s.int(val as i64);
                } else {
                    s.int(val);
                }
            }
        }
        TypeData::Enum64 { size, values } => {
            s.bytes(b" encoding=");
            s.bytes(enum_encoding_name(t.kind_flag).as_bytes());
            size_vlen(s, *size, values.len());
            for v in values {
                s.bytes(b"\n\t'");
                s.bytes(name_bytes(btf, v.name_off));
                s.bytes(b"' val=");
                if t.kind_flag {
                    s.int(v.val as i64);
                    s.bytes(b"LL");
                } else {
                    s.int(v.val);
                    s.bytes(b"ULL");
                }
            }
        }
        TypeData::Fwd => {
            s.bytes(if t.kind_flag {
                b" fwd_kind=union"
            } else {
                b" fwd_kind=struct"
            });
        }
        TypeData::Func { proto, linkage } => {
            s.bytes(b" type_id=");
            s.int(*proto);
            s.bytes(b" linkage=");
            s.bytes(func_linkage_name(*linkage).as_bytes());
        }
        TypeData::FuncProto { ret, params } => {
            s.bytes(b" ret_type_id=");
            s.int(*ret);
            s.bytes(b" vlen=");
            s.int(params.len());
            for p in params {
                s.bytes(b"\n\t'");
                s.bytes(name_bytes(btf, p.name_off));
                s.bytes(b"' type_id=");
                s.int(p.ty);
            }
        }
        TypeData::Var { ty, linkage } => {
            // The comma is bpftool's.
            s.bytes(b" type_id=");
            s.int(*ty);
            s.bytes(b", linkage=");
            s.bytes(var_linkage_name(*linkage).as_bytes());
        }
        TypeData::Datasec { size, vars } => {
            size_vlen(s, *size, vars.len());
            for v in vars {
                s.bytes(b"\n\ttype_id=");
                s.int(v.ty);
                s.bytes(b" offset=");
                s.int(v.offset);
                s.bytes(b" size=");
                s.int(v.size);
                if let Some((kind, name)) = datasec_target(btf, v.ty) {
                    s.bytes(b" (");
                    s.bytes(kind.as_bytes());
                    s.bytes(b" '");
                    s.bytes(name);
                    s.bytes(b"')");
                }
            }
        }
        TypeData::Float { size } => {
            s.bytes(b" size=");
            s.int(*size);
        }
        TypeData::DeclTag { ty, component_idx } => {
            s.bytes(b" type_id=");
            s.int(*ty);
            s.bytes(b" component_idx=");
            s.int(*component_idx);
        }
        TypeData::LocParam {
            size,
            flags,
            values,
        } => {
            s.bytes(b" size=");
            s.int(*size);
            s.bytes(b" flags=0x");
            s.bytes(format!("{flags:x}").as_bytes());
            s.bytes(b" vlen=");
            s.int(values.len());
            s.bytes(b" values='");
            s.bytes(loc::describe(&t.data).unwrap_or_default().as_bytes());
            s.byte(b'\'');
        }
        TypeData::LocProto { params } => {
            s.bytes(b" vlen=");
            s.int(params.len());
            for &p in params {
                s.bytes(b"\n\ttype_id=");
                s.int(p);
                if let Some(v) = loc_param_value(btf, p) {
                    s.bytes(b" value='");
                    s.bytes(v.as_bytes());
                    s.byte(b'\'');
                }
            }
        }
        TypeData::Locsec { locs } => {
            s.bytes(b" vlen=");
            s.int(locs.len());
            for l in locs {
                s.bytes(b"\n\tname='");
                s.bytes(func_name(btf, l.func));
                s.bytes(b"' func_type_id=");
                s.int(l.func);
                s.bytes(b" loc_proto_type_id=");
                s.int(l.loc_proto);
                s.bytes(b" offset=");
                s.int(l.offset);
            }
        }
        // bpftool prints only the line's head for a kind it does not know.
        TypeData::Unknown { .. } => {}
    }
    s.byte(b'\n');
}

fn size_vlen<W: Write>(s: &mut Sink<W>, size: u32, vlen: usize) {
    s.bytes(b" size=");
    s.int(size);
    s.bytes(b" vlen=");
    s.int(vlen);
}
