//! Serialization: the exact inverse of `read`.
//!
//! The header keeps the reader's hdr_len and any trailing header bytes it
//! did not understand; sections are laid out type, layout, string, in the
//! order libbpf writes them (and requires: the layout section sits between
//! the other two), so a blob read then written is unchanged.

use crate::format::*;
use crate::types::*;
use crate::{Btf, Endian};

struct Out {
    buf: Vec<u8>,
    endian: Endian,
}

impl Out {
    fn u32(&mut self, v: u32) {
        match self.endian {
            Endian::Little => self.buf.extend_from_slice(&v.to_le_bytes()),
            Endian::Big => self.buf.extend_from_slice(&v.to_be_bytes()),
        }
    }
}

impl Btf {
    /// Size of the type section when written, in bytes.
    pub fn types_len(&self) -> usize {
        self.types.iter().map(Type::encoded_len).sum()
    }

    /// This BTF's own types and strings (not its base's) as a blob, in the
    /// byte order it was read in (or built with): header, type section,
    /// layout section if any, string section. A blob that [`Btf::parse`]
    /// read comes back byte for byte.
    pub fn to_bytes(&self) -> Vec<u8> {
        let h = &self.header;
        let type_len = self.types_len();
        let min_hdr = if h.layout.is_empty() {
            BTF_HEADER_LEN
        } else {
            BTF_HEADER_LAYOUT_LEN
        };
        let hdr_len = h.hdr_len.max(min_hdr) as usize;
        let mut out = Out {
            buf: Vec::with_capacity(hdr_len + type_len + self.strings.len() + h.layout.len()),
            endian: h.endian,
        };
        let magic = match h.endian {
            Endian::Little => BTF_MAGIC.to_le_bytes(),
            Endian::Big => BTF_MAGIC.to_be_bytes(),
        };
        out.buf.extend_from_slice(&magic);
        out.buf.push(BTF_VERSION);
        out.buf.push(h.flags);
        out.u32(hdr_len as u32);
        let type_off = 0u32;
        let str_off = (type_len + h.layout.len()) as u32;
        out.u32(type_off);
        out.u32(type_len as u32);
        out.u32(str_off);
        out.u32(self.strings.len() as u32);
        // Trailing header words we carry but only partly understand. The
        // layout section, when present, follows the types.
        let mut extra = h.extra.clone();
        extra.resize(hdr_len - BTF_HEADER_LEN as usize, 0);
        if extra.len() >= 8 {
            let layout_off = if h.layout.is_empty() {
                0
            } else {
                type_len as u32
            };
            let (off, len) = match h.endian {
                Endian::Little => (
                    layout_off.to_le_bytes(),
                    (h.layout.len() as u32).to_le_bytes(),
                ),
                Endian::Big => (
                    layout_off.to_be_bytes(),
                    (h.layout.len() as u32).to_be_bytes(),
                ),
            };
            extra[0..4].copy_from_slice(&off);
            extra[4..8].copy_from_slice(&len);
        }
        out.buf.extend_from_slice(&extra);
        for t in &self.types {
            write_type(&mut out, t);
        }
        out.buf.extend_from_slice(&h.layout);
        out.buf.extend_from_slice(&self.strings);
        out.buf
    }
}

fn write_type(out: &mut Out, t: &Type) {
    out.u32(t.name_off);
    out.u32(t.info());
    out.u32(t.size_or_type());
    match &t.data {
        TypeData::Int {
            encoding,
            offset,
            bits,
            ..
        } => out.u32(make_int(*encoding, *offset, *bits)),
        TypeData::Array(a) => {
            out.u32(a.elem);
            out.u32(a.index);
            out.u32(a.nelems);
        }
        TypeData::Struct { members, .. } | TypeData::Union { members, .. } => {
            for m in members {
                out.u32(m.name_off);
                out.u32(m.ty);
                out.u32(m.offset);
            }
        }
        TypeData::Enum { values, .. } => {
            for v in values {
                out.u32(v.name_off);
                out.u32(v.val);
            }
        }
        TypeData::Enum64 { values, .. } => {
            for v in values {
                out.u32(v.name_off);
                out.u32(v.val as u32);
                out.u32((v.val >> 32) as u32);
            }
        }
        TypeData::FuncProto { params, .. } => {
            for p in params {
                out.u32(p.name_off);
                out.u32(p.ty);
            }
        }
        TypeData::Var { linkage, .. } => out.u32(*linkage),
        TypeData::Datasec { vars, .. } => {
            for v in vars {
                out.u32(v.ty);
                out.u32(v.offset);
                out.u32(v.size);
            }
        }
        TypeData::DeclTag { component_idx, .. } => out.u32(*component_idx as u32),
        TypeData::LocParam { flags, values, .. } => {
            out.u32(*flags);
            values.iter().for_each(|&v| out.u32(v));
        }
        TypeData::LocProto { params } => params.iter().for_each(|&p| out.u32(p)),
        TypeData::Locsec { locs } => {
            for l in locs {
                out.u32(l.func);
                out.u32(l.loc_proto);
                out.u32(l.offset);
            }
        }
        TypeData::Unknown { words, .. } => words.iter().for_each(|&w| out.u32(w)),
        TypeData::Ptr { .. }
        | TypeData::Fwd
        | TypeData::Typedef { .. }
        | TypeData::Volatile { .. }
        | TypeData::Const { .. }
        | TypeData::Restrict { .. }
        | TypeData::Func { .. }
        | TypeData::Float { .. }
        | TypeData::TypeTag { .. } => {}
    }
}
