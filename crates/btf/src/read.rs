//! Parsing BTF: a raw blob, the `.BTF` section of an ELF, or split BTF over a base.
//!
//! The parser trusts nothing: every length is checked against the bytes that
//! are really there before it is used, so a truncated or corrupt blob gives an
//! [`Error`] that names the offset, never a panic. It does not judge whether
//! the types make sense (ids in range, sizes); that is `validate`'s job, so that
//! `dump` can still show a blob the kernel would reject.

use std::sync::Arc;

use crate::bytes::Bytes;
use crate::error::{Error, Result};
use crate::format::*;
use crate::records::{Record, Store};
use crate::types::*;
use crate::{Btf, Endian, Facts, Header};

/// A bounds-checked little/big-endian reader over the type section.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    /// Offset of `data` in the whole blob, for error messages.
    base: usize,
    endian: Endian,
    /// `data` itself, when it is a mapping in the host's byte order whose
    /// records the types may point into.
    in_place: Option<&'a Arc<Store>>,
}

impl<'a> Cursor<'a> {
    fn u32(&mut self, what: &'static str) -> Result<u32> {
        match self.data.get(self.pos..).and_then(<[u8]>::first_chunk::<4>) {
            Some(&b) => {
                self.pos += 4;
                Ok(self.endian.u32(b))
            }
            None => Err(self.truncated(what)),
        }
    }

    /// The next `n` records of `len` bytes each, or `RecordsPastEnd`.
    fn records(&mut self, n: u32, len: usize, id: TypeId, offset: usize) -> Result<RawRecords<'a>> {
        let bytes = (n as usize)
            .checked_mul(len)
            .and_then(|b| self.data.get(self.pos..)?.get(..b))
            .ok_or_else(|| Error::RecordsPastEnd {
                id,
                offset,
                vlen: n,
            })?;
        let at = self.pos;
        self.pos += bytes.len();
        Ok(RawRecords {
            chunks: bytes.chunks_exact(len),
            endian: self.endian,
            in_place: self.in_place.map(|section| (section, at, n)),
        })
    }

    #[cold]
    fn truncated(&self, what: &'static str) -> Error {
        Error::Truncated {
            what,
            offset: self.base + self.pos,
            need: 4,
            have: self.data.len().saturating_sub(self.pos),
        }
    }

    fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }
}

/// Records of one type, whose bounds were checked once: each yields its
/// words.
struct RawRecords<'a> {
    chunks: std::slice::ChunksExact<'a, u8>,
    endian: Endian,
    /// The section, the records' offset in it and their count, if they
    /// may be read in place.
    in_place: Option<(&'a Arc<Store>, usize, u32)>,
}

impl<'a> RawRecords<'a> {
    /// The records as `T`s: in place where the section allows it,
    /// otherwise each made from its words by `make`.
    fn list<T: Record, const N: usize>(self, make: impl Fn([u32; N]) -> T) -> Records<T> {
        match self.in_place {
            Some((section, at, n)) if n > 0 => Records::in_place(section, at, n)
                .unwrap_or_else(|| self.words().map(make).collect()),
            _ => self.words().map(make).collect(),
        }
    }

    /// Each record's first `N` words.
    fn words<const N: usize>(self) -> impl Iterator<Item = [u32; N]> + use<'a, N> {
        let endian = self.endian;
        self.chunks.map(move |c| {
            std::array::from_fn(|i| {
                c.get(4 * i..4 * i + 4)
                    .and_then(|w| w.first_chunk::<4>())
                    .map_or(0, |&b| endian.u32(b))
            })
        })
    }
}

fn header_u32(data: &[u8], off: usize, endian: Endian) -> Result<u32> {
    let b = data
        .get(off..)
        .and_then(<[u8]>::first_chunk::<4>)
        .ok_or_else(|| Error::Truncated {
            what: "header",
            offset: off,
            need: 4,
            have: data.len().saturating_sub(off),
        })?;
    Ok(endian.u32(*b))
}

fn section<'a>(data: &'a [u8], name: &'static str, start: u64, len: u64) -> Result<&'a [u8]> {
    let end = start + len;
    if end > data.len() as u64 {
        return Err(Error::SectionOutOfBounds {
            section: name,
            start,
            end,
            len: data.len(),
        });
    }
    Ok(&data[start as usize..end as usize])
}

/// What libbpf's `btf_parse_hdr` and `btf_parse_str_sec` (bpftool's
/// reader) and the kernel refuse in the header before they read a type: a
/// type section that is not 4-byte aligned, a string section that overlaps
/// the types or comes before them, and base BTF without a string section
/// (its first string must be the empty one). Offsets named are the
/// header's fields.
fn check_section_order(
    hdr_len: u32,
    type_off: u32,
    type_len: u32,
    str_off: u32,
    str_len: u32,
    split: bool,
) -> Result<()> {
    if type_off % 4 != 0 {
        return Err(Error::BadHeader {
            offset: 8,
            reason: format!("type section at {type_off:#x} is not aligned to 4 bytes"),
        });
    }
    let type_end = u64::from(type_off) + u64::from(type_len);
    if type_end > u64::from(str_off) {
        return Err(Error::BadHeader {
            offset: 16,
            reason: format!(
                "string section at {:#x} overlaps the type section [{:#x}, {:#x}) or lies before it",
                u64::from(hdr_len) + u64::from(str_off),
                u64::from(hdr_len) + u64::from(type_off),
                u64::from(hdr_len) + type_end
            ),
        });
    }
    if str_len == 0 && !split {
        return Err(Error::BadHeader {
            offset: 20,
            reason: "string section is empty: base BTF holds at least \"\" at offset 0".into(),
        });
    }
    Ok(())
}

impl Btf {
    /// Parses base BTF (ids start at 1, strings at 0) from a raw blob in
    /// either byte order: the bytes of `/sys/kernel/btf/vmlinux`, or of an
    /// ELF file's `.BTF` section (see [`parse_any`](crate::parse_any)
    /// for ELF files). The blob is copied; [`load_file`](crate::load_file)
    /// reads a file in place instead.
    ///
    /// Errors name the offset in `data` of what is wrong: [`Error::BadMagic`]
    /// for bytes that are not BTF, [`Error::BadHeader`] and
    /// [`Error::SectionOutOfBounds`] for a bad header, [`Error::Truncated`],
    /// [`Error::RecordsPastEnd`] and [`Error::UnknownKind`] for a bad type
    /// section. A blob whose string section does not start with "" is split
    /// BTF and fails here: parse it with [`Btf::parse_split`]. Whether the
    /// types make sense (ids in range, sizes) is not checked here.
    ///
    /// ```
    /// # fn main() -> Result<(), btf::Error> {
    /// // Header, then one type: [1] INT 'int' size=4 bits_offset=0 nr_bits=32 encoding=SIGNED.
    /// let mut blob = Vec::new();
    /// for word in [0x0001_eb9f_u32, 24, 0, 16, 16, 5] {
    ///     blob.extend_from_slice(&word.to_le_bytes());
    /// }
    /// for word in [1_u32, 0x0100_0000, 4, 0x0100_0020] {
    ///     blob.extend_from_slice(&word.to_le_bytes());
    /// }
    /// blob.extend_from_slice(b"\0int\0");
    ///
    /// let btf = btf::Btf::parse(&blob)?;
    /// assert_eq!(btf.to_bytes(), blob); // writing gives back the same bytes
    /// # Ok(())
    /// # }
    /// ```
    pub fn parse(data: &[u8]) -> Result<Btf> {
        Self::parse_impl(data, None, None)
    }

    /// Parses split BTF whose ids and string offsets continue after `base`'s:
    /// a module's BTF (`/sys/kernel/btf/<module>`, its `.BTF` section) over
    /// vmlinux's. Its first type id is `base`'s type count and its string
    /// offsets start at the length of `base`'s string section. Errors are
    /// those of [`Btf::parse`]; a blob that is not split over this base fails
    /// later, when a reference or string offset does not resolve.
    pub fn parse_split(data: &[u8], base: Arc<Btf>) -> Result<Btf> {
        Self::parse_impl(data, Some(base), None)
    }

    /// Parses BTF read from a file, over `base` if given. `map(at, len)`
    /// may give a section (at `at` of `data`, `len` bytes) without a copy:
    /// a mapping of just that part of the file. The string section is
    /// kept so, and the type section too when its byte order is the
    /// host's: the types' records are then read in place (records.rs).
    pub(crate) fn parse_from_file(
        data: &[u8],
        base: Option<Arc<Btf>>,
        map: &dyn Fn(usize, usize) -> Option<Bytes>,
    ) -> Result<Btf> {
        Self::parse_impl(data, base, Some(map))
    }

    fn parse_impl(
        data: &[u8],
        base: Option<Arc<Btf>>,
        map: Option<&dyn Fn(usize, usize) -> Option<Bytes>>,
    ) -> Result<Btf> {
        let h = read_header(data)?;
        let (endian, hdr_len, type_off, str_off) = (h.endian, h.hdr_len, h.type_off, h.str_off);
        let extra = data[BTF_HEADER_LEN as usize..hdr_len as usize].to_vec();
        check_section_order(
            hdr_len,
            type_off,
            h.type_len,
            str_off,
            h.str_len,
            base.is_some(),
        )?;
        let body = &data[hdr_len as usize..];
        let types_bytes = section(body, "type", type_off as u64, h.type_len as u64)
            .map_err(|e| shift_section(e, hdr_len))?;
        let strings = section(body, "string", str_off as u64, h.str_len as u64)
            .map_err(|e| shift_section(e, hdr_len))?;
        let layout_len = h.layout_len;
        if layout_len % BTF_LAYOUT_LEN as u32 != 0 {
            return Err(Error::BadHeader {
                offset: 28,
                reason: format!(
                    "layout_len {layout_len} is not a whole number of {BTF_LAYOUT_LEN}-byte records"
                ),
            });
        }
        let layout = if layout_len > 0 {
            section(body, "layout", h.layout_off as u64, layout_len as u64)
                .map_err(|e| shift_section(e, hdr_len))?
                .to_vec()
        } else {
            Vec::new()
        };
        // A section of the file in a mapping of its own, which outlives
        // `data` (bytes.rs), or `None`: copy it.
        let mapped = |at: usize, len: usize| map?(at, len).filter(|b| b.len() == len);
        let strings_at = hdr_len as usize + str_off as usize;
        let strings = mapped(strings_at, strings.len()).unwrap_or_else(|| strings.to_vec().into());
        if base.is_none() && !strings.is_empty() && strings[0] != 0 {
            return Err(Error::BadHeader {
                offset: hdr_len as usize + str_off as usize,
                reason: "string section does not start with an empty string".into(),
            });
        }
        if !strings.is_empty() && strings[strings.len() - 1] != 0 {
            return Err(Error::BadHeader {
                offset: hdr_len as usize + str_off as usize + strings.len() - 1,
                reason: "string section is not NUL-terminated".into(),
            });
        }

        let header = Header {
            endian,
            flags: h.flags,
            hdr_len,
            extra,
            type_off,
            str_off,
            layout_off: h.layout_off,
            layout,
        };
        let mut btf = Btf::with_header(header, base);
        btf.strings = strings;
        // A split BTF without a layout section shares its base's, as in libbpf.
        let layouts = btf.kind_layouts();
        let types_at = hdr_len as usize + type_off as usize;
        // Parsed from its own mapping, which the types' records then share:
        // the same bytes of the same file, checked as any others (as the
        // strings, whose checks above read the mapping they are kept in).
        let in_place = endian
            .is_host()
            .then(|| mapped(types_at, types_bytes.len()))
            .flatten()
            .map(|b| Arc::new(Store::Section(b)));
        let mut cur = Cursor {
            data: in_place.as_deref().map_or(types_bytes, Store::bytes),
            pos: 0,
            base: types_at,
            endian,
            in_place: in_place.as_ref(),
        };
        let start_id = btf.start_id;
        let (types, facts) = parse_types(&mut cur, start_id, &layouts)?;
        btf.types = types;
        btf.facts = Some(facts);
        Ok(btf)
    }
}

/// The words of a BTF header, checked as far as the header alone tells.
struct RawHeader {
    endian: Endian,
    flags: u8,
    hdr_len: u32,
    type_off: u32,
    type_len: u32,
    str_off: u32,
    str_len: u32,
    layout_off: u32,
    layout_len: u32,
}

/// The header of `data`: magic (and so byte order), version, length and
/// section offsets, the layout section's where the header is long
/// enough to hold them.
fn read_header(data: &[u8]) -> Result<RawHeader> {
    if data.is_empty() {
        return Err(Error::Empty);
    }
    if data.len() < 8 {
        return Err(Error::Truncated {
            what: "header",
            offset: 0,
            need: BTF_HEADER_LEN as usize,
            have: data.len(),
        });
    }
    let magic_le = u16::from_le_bytes([data[0], data[1]]);
    let endian = if magic_le == BTF_MAGIC {
        Endian::Little
    } else if magic_le.swap_bytes() == BTF_MAGIC {
        Endian::Big
    } else {
        return Err(Error::BadMagic { found: magic_le });
    };
    let version = data[2];
    if version != BTF_VERSION {
        return Err(Error::BadVersion(version));
    }
    let flags = data[3];
    let hdr_len = header_u32(data, 4, endian)?;
    if hdr_len < BTF_HEADER_LEN {
        return Err(Error::BadHeader {
            offset: 4,
            reason: format!("hdr_len {hdr_len} is shorter than {BTF_HEADER_LEN}"),
        });
    }
    if hdr_len as usize > data.len() {
        return Err(Error::Truncated {
            what: "header",
            offset: 0,
            need: hdr_len as usize,
            have: data.len(),
        });
    }
    let type_off = header_u32(data, 8, endian)?;
    let type_len = header_u32(data, 12, endian)?;
    let str_off = header_u32(data, 16, endian)?;
    let str_len = header_u32(data, 20, endian)?;
    let (layout_off, layout_len) = if hdr_len >= BTF_HEADER_LAYOUT_LEN {
        (header_u32(data, 24, endian)?, header_u32(data, 28, endian)?)
    } else {
        (0, 0)
    };
    Ok(RawHeader {
        endian,
        flags,
        hdr_len,
        type_off,
        type_len,
        str_off,
        str_len,
        layout_off,
        layout_len,
    })
}

/// The types of a type section whose first id is `start_id`, and what was
/// learnt of them on the way.
fn parse_types(
    cur: &mut Cursor,
    start_id: TypeId,
    layouts: &[KindLayout],
) -> Result<(Vec<Type>, Facts)> {
    // Room for the most types the section can hold (12 bytes is the
    // smallest), so that the vector is never moved; pages past the last
    // type are never touched.
    let mut types = crate::hugepages::vec(cur.remaining() / 12);
    let mut max_ref = 0;
    let mut facts = Facts {
        refs_valid: true,
        decl_tags: false,
    };
    while cur.remaining() > 0 {
        let id = start_id + types.len() as u32;
        let t = parse_type(cur, id, layouts)?;
        t.for_each_ref(|r| max_ref = max_ref.max(r));
        facts.note_kind(&t);
        types.push(t);
    }
    facts.refs_valid &= max_ref < start_id + types.len() as u32;
    Ok((types, facts))
}

fn shift_section(e: Error, hdr_len: u32) -> Error {
    match e {
        Error::SectionOutOfBounds {
            section,
            start,
            end,
            len,
        } => Error::SectionOutOfBounds {
            section,
            start: start + hdr_len as u64,
            end: end + hdr_len as u64,
            len: len + hdr_len as usize,
        },
        e => e,
    }
}

fn parse_type(cur: &mut Cursor, id: TypeId, layouts: &[KindLayout]) -> Result<Type> {
    let offset = cur.base + cur.pos;
    let name_off = cur.u32("btf_type")?;
    let info = cur.u32("btf_type")?;
    let size_or_type = cur.u32("btf_type")?;
    let kind = info_kind(info);
    let vlen = info_vlen(info);
    let kind_flag = info_kflag(info);
    let size = size_or_type;
    let data = match kind {
        BTF_KIND_INT => {
            let d = cur.u32("btf_int")?;
            TypeData::Int {
                size,
                encoding: int_encoding(d),
                offset: int_offset(d),
                bits: int_bits(d),
            }
        }
        BTF_KIND_PTR => TypeData::Ptr { ty: size_or_type },
        BTF_KIND_ARRAY => TypeData::Array(Array {
            elem: cur.u32("btf_array")?,
            index: cur.u32("btf_array")?,
            nelems: cur.u32("btf_array")?,
        }),
        BTF_KIND_STRUCT | BTF_KIND_UNION => {
            let members = parse_members(cur, vlen, id, offset)?;
            if kind == BTF_KIND_STRUCT {
                TypeData::Struct { size, members }
            } else {
                TypeData::Union { size, members }
            }
        }
        BTF_KIND_ENUM => {
            let values = (cur.records(vlen, BTF_ENUM_LEN, id, offset)?)
                .list(|[name_off, val]| EnumValue { name_off, val });
            TypeData::Enum { size, values }
        }
        BTF_KIND_FWD => TypeData::Fwd,
        BTF_KIND_TYPEDEF => TypeData::Typedef { ty: size_or_type },
        BTF_KIND_VOLATILE => TypeData::Volatile { ty: size_or_type },
        BTF_KIND_CONST => TypeData::Const { ty: size_or_type },
        BTF_KIND_RESTRICT => TypeData::Restrict { ty: size_or_type },
        BTF_KIND_FUNC => TypeData::Func {
            proto: size_or_type,
            linkage: vlen,
        },
        BTF_KIND_FUNC_PROTO => {
            let params = (cur.records(vlen, BTF_PARAM_LEN, id, offset)?)
                .list(|[name_off, ty]| Param { name_off, ty });
            TypeData::FuncProto {
                ret: size_or_type,
                params,
            }
        }
        BTF_KIND_VAR => TypeData::Var {
            ty: size_or_type,
            linkage: cur.u32("btf_var")?,
        },
        BTF_KIND_DATASEC => {
            let vars = (cur.records(vlen, BTF_VAR_SECINFO_LEN, id, offset)?)
                .list(|[ty, offset, size]| VarSecinfo { ty, offset, size });
            TypeData::Datasec { size, vars }
        }
        BTF_KIND_FLOAT => TypeData::Float { size },
        BTF_KIND_DECL_TAG => TypeData::DeclTag {
            ty: size_or_type,
            component_idx: cur.u32("btf_decl_tag")? as i32,
        },
        BTF_KIND_TYPE_TAG => TypeData::TypeTag { ty: size_or_type },
        BTF_KIND_ENUM64 => {
            let values = (cur.records(vlen, BTF_ENUM64_LEN, id, offset)?.words())
                .map(|[name_off, lo, hi]| Enum64Value {
                    name_off,
                    val: (hi as u64) << 32 | lo as u64,
                })
                .collect();
            TypeData::Enum64 { size, values }
        }
        BTF_KIND_LOC_PARAM | BTF_KIND_LOC_PROTO | BTF_KIND_LOCSEC => {
            parse_location(cur, kind, size, vlen, id, offset)?
        }
        // A kind from a newer writer: its size comes from the layout section.
        kind => {
            let Some(l) = layouts.get(usize::from(kind)) else {
                return Err(Error::UnknownKind { id, offset, kind });
            };
            parse_unknown(cur, kind, l, size_or_type, vlen, id, offset)?
        }
    };
    Ok(Type {
        name_off,
        kind_flag,
        data,
    })
}

/// A STRUCT's or UNION's `vlen` members.
fn parse_members(
    cur: &mut Cursor,
    vlen: u32,
    id: TypeId,
    offset: usize,
) -> Result<Records<Member>> {
    Ok(
        (cur.records(vlen, BTF_MEMBER_LEN, id, offset)?).list(|[name_off, ty, offset]| Member {
            name_off,
            ty,
            offset,
        }),
    )
}

/// The records of a location kind (bpf-next): a LOC_PARAM's flags and
/// values, a LOC_PROTO's parameters, a LOCSEC's inline sites.
fn parse_location(
    cur: &mut Cursor,
    kind: Kind,
    size: u32,
    vlen: u32,
    id: TypeId,
    offset: usize,
) -> Result<TypeData> {
    Ok(match kind {
        BTF_KIND_LOC_PARAM => {
            let flags = cur.u32("btf_loc_param")?;
            let values = (cur.records(vlen, BTF_LOC_VALUE_LEN, id, offset)?.words())
                .map(|[v]| v)
                .collect::<Vec<_>>();
            TypeData::LocParam {
                size,
                flags,
                values: values.into(),
            }
        }
        BTF_KIND_LOC_PROTO => {
            let params = (cur
                .records(vlen, BTF_LOC_PROTO_PARAM_LEN, id, offset)?
                .words())
            .map(|[p]| p)
            .collect();
            TypeData::LocProto { params }
        }
        _ => {
            let locs = (cur.records(vlen, BTF_LOC_LEN, id, offset)?.words())
                .map(|[func, loc_proto, offset]| Loc {
                    func,
                    loc_proto,
                    offset,
                })
                .collect();
            TypeData::Locsec { locs }
        }
    })
}

/// A kind from a newer writer, its words as the layout section `l` sizes
/// them.
fn parse_unknown(
    cur: &mut Cursor,
    kind: Kind,
    l: &KindLayout,
    size_or_type: u32,
    vlen: u32,
    id: TypeId,
    offset: usize,
) -> Result<TypeData> {
    if l.info_sz % 4 != 0 || l.elem_sz % 4 != 0 {
        return Err(Error::BadLayout {
            kind,
            reason: format!(
                "info_sz {} and elem_sz {} must be multiples of 4",
                l.info_sz, l.elem_sz
            ),
        });
    }
    let len =
        (l.info_sz as usize).saturating_add((vlen as usize).saturating_mul(l.elem_sz as usize));
    if len > cur.remaining() {
        return Err(Error::RecordsPastEnd { id, offset, vlen });
    }
    let words = (0..len / 4)
        .map(|_| cur.u32("unknown kind's data"))
        .collect::<Result<Vec<_>>>()?;
    Ok(TypeData::Unknown {
        kind,
        size_or_type,
        vlen,
        words: words.into(),
    })
}
