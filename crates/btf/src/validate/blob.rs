//! The raw blob's rules that the parsed model cannot show: section layout,
//! reserved `info` bits, `vlen` and `type` words that must be 0.

use super::*;
/// The `u32` at `off` in the blob's byte order, `None` past its end.
pub(super) fn read_u32(blob: &[u8], btf: &Btf, off: usize) -> Option<u32> {
    let b = blob.get(off..)?.first_chunk::<4>()?;
    Some(btf.header().endian.u32(*b))
}

/// A header problem of the blob as a whole.
pub(super) fn header_problem(detail: String) -> Problem {
    Problem {
        id: 0,
        kind: "",
        name: String::new(),
        rule: Rule::Header,
        detail,
    }
}

/// `btf_parse_hdr`'s section layout: no data after the header, and the
/// sections must tile everything after it.
pub(super) fn check_sections(
    blob: &[u8],
    btf: &Btf,
    target: Target,
    type_len: u32,
    str_len: u32,
    problems: &mut Vec<Problem>,
) {
    let h = btf.header();
    let hdr_len = h.hdr_len as u64;
    let expected_total = (blob.len() as u64).saturating_sub(hdr_len);
    if btf.base().is_none() && expected_total == 0 {
        problems.push(header_problem("no data after the header".into()));
    }
    // Linux 6.18 knows only the type and string sections, bpf-next also
    // the layout section: sorted by offset they must tile everything after
    // the header, with nothing left over.
    let layout_len = h.layout.len() as u64;
    let mut secs = vec![
        ("type", h.type_off as u64, type_len as u64),
        ("string", h.str_off as u64, str_len as u64),
    ];
    if target == Target::BpfNext && layout_len > 0 {
        secs.push(("layout", h.layout_off as u64, layout_len));
        if h.layout_off % 4 != 0 {
            problems.push(header_problem(format!(
                "layout section offset {:#x} is not 4-byte aligned",
                h.layout_off
            )));
        }
        if (h.layout_off as u64) < h.type_off as u64 + type_len as u64
            || h.layout_off as u64 + layout_len > h.str_off as u64
        {
            problems.push(header_problem(
                "layout section is not between the type and string sections".into(),
            ));
        }
    }
    secs.sort_by_key(|&(_, off, len)| (off, len));
    let mut total = 0u64;
    for (name, off, len) in secs {
        if off > total {
            problems.push(header_problem(format!(
                "gap of {} bytes before the {name} section",
                off - total
            )));
        } else if off < total {
            problems.push(header_problem(format!(
                "{name} section at {off:#x} overlaps the one before it"
            )));
        }
        total = off + len;
    }
    if total < expected_total {
        problems.push(header_problem(format!(
            "{} bytes after the last section that the kernel does not know",
            expected_total - total
        )));
    }
    if h.str_off as u64 + str_len as u64 != expected_total {
        problems.push(header_problem("string section is not at the end".into()));
    }
}

/// `btf_check_meta`'s checks of each type record's raw words: reserved
/// `info` bits, `vlen` and `type` words that must be 0, INT data bits.
pub(super) fn check_records(
    blob: &[u8],
    btf: &Btf,
    target: Target,
    type_len: u32,
    problems: &mut Vec<Problem>,
) {
    let h = btf.header();
    let rd = |off: usize| read_u32(blob, btf, off);
    let unused_mask = match target {
        Target::Linux6_18 => BTF_INFO_UNUSED_MASK_6_18,
        Target::BpfNext => 0,
    };
    let layouts = btf.kind_layouts();
    let start = h.hdr_len as u64 + h.type_off as u64;
    let end = start + type_len as u64;
    let mut pos = start;
    let mut id = btf.start_id();
    while pos + BTF_TYPE_LEN as u64 <= end {
        let p = pos as usize;
        let (Some(info), Some(size_or_type)) = (rd(p + 4), rd(p + 8)) else {
            break;
        };
        let kind = info_kind(info);
        let vlen = info_vlen(info) as u64;
        let mut raw_problem = |rule: Rule, detail: String| {
            let (kind, name) = btf
                .type_by_id(id)
                .map(|t| (t.kind_name(), lossy(btf, t.name_off)))
                .unwrap_or(("UNKNOWN", String::new()));
            problems.push(Problem {
                id,
                kind,
                name,
                rule,
                detail,
            })
        };
        if info & unused_mask != 0 {
            raw_problem(
                Rule::Header,
                format!("info {info:#010x} sets bits the kernel reserves"),
            );
        }
        if !has_vlen(kind) && vlen != 0 {
            raw_problem(Rule::Vlen, format!("vlen {vlen} must be 0 for this kind"));
        }
        if matches!(
            kind,
            BTF_KIND_FWD | BTF_KIND_ARRAY | BTF_KIND_LOC_PROTO | BTF_KIND_LOCSEC
        ) && size_or_type != 0
        {
            raw_problem(
                Rule::Size,
                format!("size/type word {size_or_type} must be 0 for this kind"),
            );
        }
        if kind == BTF_KIND_INT {
            if let Some(data) = rd(p + BTF_TYPE_LEN) {
                if data & 0xf000_0000 != 0 {
                    raw_problem(
                        Rule::Int,
                        format!("int data {data:#010x} sets bits the kernel reserves"),
                    );
                }
            }
        }
        let Some(extra) = extra_len(kind, vlen, &layouts) else {
            break;
        };
        pos += BTF_TYPE_LEN as u64 + extra;
        id += 1;
    }
}

/// Kinds whose `vlen` may be non-zero; kinds past the known ones are read
/// through the layout section, which gives them one.
fn has_vlen(kind: Kind) -> bool {
    matches!(
        kind,
        BTF_KIND_STRUCT
            | BTF_KIND_UNION
            | BTF_KIND_ENUM
            | BTF_KIND_ENUM64
            | BTF_KIND_FUNC_PROTO
            | BTF_KIND_DATASEC
            | BTF_KIND_FUNC
            | BTF_KIND_LOC_PARAM
            | BTF_KIND_LOC_PROTO
            | BTF_KIND_LOCSEC
    ) || kind > BTF_KIND_MAX
}

/// How many bytes follow a record's 12-byte `btf_type`, `None` for a kind
/// the layout section does not describe either.
fn extra_len(kind: Kind, vlen: u64, layouts: &[KindLayout]) -> Option<u64> {
    // Kind 0 is no type: the parser reads it, as the kinds it does not
    // know, through the layout section.
    let l = known_layout(kind)
        .filter(|_| kind != BTF_KIND_UNKN)
        .or_else(|| layouts.get(usize::from(kind)).copied())?;
    Some(l.info_sz as u64 + vlen * l.elem_sz as u64)
}
