//! BTF as bpf-next writes it in 2026: the layout section, 24-bit vlen, kinds
//! read through the layout section, and the location kinds.
//!
//! No kernel or tool on this machine writes or reads these, so the oracles
//! are bpf-next's own selftests, restated here: libbpf's `btf_kind`
//! (layout placement; a kind unknown to the reader, skipped through the
//! layout section, with the ids after it as libbpf finds them) and bpftool's
//! `bpftool_btf_dump` `loc_dump` (the raw dump of the location kinds, byte
//! for byte). The validator's bpf-next verdicts follow the merged uapi
//! header's rules (see `btf::validate::Target::BpfNext`).

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use btf::format::*;
use btf::validate::{validate, validate_blob, validate_blob_for, validate_for, Rule, Target};
use btf::{Btf, Member, Type, TypeData};

use testkit::layout_and_location_btf::{add_int, loc_btf, set_info, with_extra_layout_record};

fn raw(btf: &Btf) -> String {
    let mut out = Vec::new();
    btf::dump::raw::dump(btf, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn json(btf: &Btf) -> serde_json::Value {
    let mut out = Vec::new();
    btf::dump::json::dump(btf, &mut out).unwrap();
    serde_json::from_slice(&out).expect("our JSON parses")
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

fn rules(problems: &[btf::validate::Problem]) -> Vec<Rule> {
    problems.iter().map(|p| p.rule).collect()
}

/// libbpf's `btf_kind_encoding`: with a layout, the header is 32 bytes and
/// the layout section (one record per kind) sits between types and
/// strings, 4-byte aligned; without one, strings follow the types.
#[test]
fn layout_section_placed_as_libbpf_selftest_btf_kind_encoding() {
    let mut btf = Btf::new();
    add_int(&mut btf, "int", 4, BTF_INT_SIGNED);
    btf.set_layout(true);
    let b = btf.to_bytes();
    assert_eq!(u32_at(&b, 4), BTF_HEADER_LAYOUT_LEN, "hdr_len");
    let (type_off, type_len, str_off) = (u32_at(&b, 8), u32_at(&b, 12), u32_at(&b, 16));
    let (layout_off, layout_len) = (u32_at(&b, 24), u32_at(&b, 28));
    assert_eq!(layout_off % 4, 0, "layout_aligned");
    assert_eq!(
        layout_len as usize,
        BTF_LAYOUT_LEN * (usize::from(BTF_KIND_MAX) + 1),
        "layout_len"
    );
    assert_eq!(layout_off, type_off + type_len);
    assert_eq!(str_off, layout_off + layout_len, "str_after_layout");

    // Read back: the same bytes, and the records say what libbpf's table says.
    let back = Btf::parse(&b).unwrap();
    assert_eq!(back.to_bytes(), b, "byte-identical round trip");
    let layouts = back.kind_layouts();
    assert_eq!(layouts[usize::from(BTF_KIND_INT)].info_sz, 4);
    assert_eq!(layouts[usize::from(BTF_KIND_STRUCT)].elem_sz, 12);
    assert_eq!(layouts[usize::from(BTF_KIND_LOC_PARAM)].info_sz, 4);
    assert_eq!(layouts[usize::from(BTF_KIND_LOC_PARAM)].elem_sz, 4);
    assert_eq!(layouts[usize::from(BTF_KIND_LOCSEC)].elem_sz, 12);

    btf.set_layout(false);
    let b = btf.to_bytes();
    assert_eq!((u32_at(&b, 24), u32_at(&b, 28)), (0, 0), "no layout");
    assert_eq!(u32_at(&b, 16), u32_at(&b, 8) + u32_at(&b, 12));
}

/// A valid blob with a layout section is a Linux 6.18 problem (non-zero
/// header fields it does not know) and fine for bpf-next.
#[test]
fn validator_layout_section_bpf_next_accepts_linux_6_18_rejects() {
    let mut btf = Btf::new();
    add_int(&mut btf, "int", 4, BTF_INT_SIGNED);
    btf.set_layout(true);
    let b = btf.to_bytes();
    let back = Btf::parse(&b).unwrap();
    assert!(validate_for(&back, Target::BpfNext).is_empty());
    assert!(validate_blob_for(&b, &back, Target::BpfNext).is_empty());
    assert_eq!(rules(&validate(&back)), [Rule::Header]);

    // A layout record that contradicts a kind's fixed size.
    let mut bad = b.clone();
    let layout_at = 32 + u32_at(&b, 24) as usize;
    bad[layout_at + 4 * usize::from(BTF_KIND_INT)] = 8;
    let parsed = Btf::parse(&bad).unwrap();
    assert_eq!(
        rules(&validate_for(&parsed, Target::BpfNext)),
        [Rule::Layout]
    );

    // Layout after the strings: libbpf refuses the placement.
    let mut moved = b.clone();
    let (type_len, str_len, layout_len) = (u32_at(&b, 12), u32_at(&b, 20), u32_at(&b, 28));
    let body = &b[32..];
    let mut new_body = body[..type_len as usize].to_vec();
    new_body.extend_from_slice(
        &body[(type_len + layout_len) as usize..(type_len + layout_len + str_len) as usize],
    );
    new_body.extend_from_slice(&body[type_len as usize..(type_len + layout_len) as usize]);
    moved.truncate(32);
    moved.extend_from_slice(&new_body);
    put_u32(&mut moved, 16, type_len);
    put_u32(&mut moved, 24, type_len + str_len);
    let parsed = Btf::parse(&moved).unwrap();
    let problems = validate_blob_for(&moved, &parsed, Target::BpfNext);
    assert!(
        problems
            .iter()
            .any(|p| p.detail.contains("not between the type and string")),
        "{problems:?}"
    );
}

/// libbpf's `btf_kind_decoding`, step by step: a typedef turned into kind
/// NR_BTF_KINDS with a layout record describing it is read (kept opaque,
/// its id kept), the types after it keep theirs; with `info_sz` 12 the next
/// type is swallowed as its data and the ids after shift by one; so too
/// with `elem_sz` 12 and vlen 1.
#[test]
fn unknown_kind_read_through_layout_as_libbpf_selftest_btf_kind_decoding() {
    let mut btf = Btf::new();
    let int_id = add_int(&mut btf, "test_char", 1, BTF_INT_CHAR);
    let typedef = |btf: &mut Btf, name: &str| {
        let n = btf.add_str(name);
        btf.add_type(Type::new(n, TypeData::Typedef { ty: int_id }))
    };
    let unrec_id = typedef(&mut btf, "unrec_kind");
    let id = typedef(&mut btf, "test_lookup");
    let id2 = typedef(&mut btf, "test_lookup2");
    btf.set_layout(true);

    // One more layout record, for kind NR_BTF_KINDS; strings move up.
    let new_kind = u32::from(BTF_KIND_MAX.as_u8()) + 1;
    let (mut b, rec) = with_extra_layout_record(&btf.to_bytes(), 0, 0);
    // The typedef after the INT (12 + 4 bytes) becomes the unknown kind.
    let unrec_at = 32 + 16;
    set_info(&mut b, unrec_at, new_kind << 24);

    let lookup = |btf: &Btf, name: &str| {
        btf.iter()
            .find(|(_, t)| btf.name_of(t).ok() == Some(name))
            .map(|(id, t)| (id, t.kind()))
    };

    let parsed = Btf::parse(&b).expect("a kind the layout section describes is read");
    assert_eq!(
        lookup(&parsed, "unrec_kind"),
        Some((unrec_id, btf::Kind::new(new_kind as u8)))
    );
    assert_eq!(lookup(&parsed, "test_lookup"), Some((id, BTF_KIND_TYPEDEF)));
    assert_eq!(
        lookup(&parsed, "test_lookup2"),
        Some((id2, BTF_KIND_TYPEDEF))
    );
    assert_eq!(parsed.to_bytes(), b, "byte-identical round trip");
    let text = raw(&parsed);
    assert!(
        text.contains(&format!(
            "[{unrec_id}] UNKNOWN_KIND_{new_kind} 'unrec_kind'\n"
        )),
        "{text}"
    );
    assert_eq!(
        json(&parsed)["types"][1]["kind"],
        format!("UNKNOWN_KIND_{new_kind}")
    );
    // No kernel accepts a kind it does not know.
    let problems = validate_for(&parsed, Target::BpfNext);
    assert_eq!(rules(&problems), [Rule::Kind], "{problems:?}");
    assert!(validate_blob_for(&b, &parsed, Target::BpfNext).is_empty());

    // info_sz 12: "test_lookup" is the unknown type's data now.
    b[rec] = 12;
    let parsed = Btf::parse(&b).unwrap();
    assert_eq!(lookup(&parsed, "test_lookup"), None, "verify_id_not_found");
    assert_eq!(
        lookup(&parsed, "test_lookup2"),
        Some((id2 - 1, BTF_KIND_TYPEDEF)),
        "verify_id_lookup2"
    );
    assert_eq!(parsed.to_bytes(), b);

    // elem_sz 12 and vlen 1: the same through the vlen records.
    b[rec] = 0;
    b[rec + 1] = 12;
    set_info(&mut b, unrec_at, new_kind << 24 | 1);
    let parsed = Btf::parse(&b).unwrap();
    assert_eq!(lookup(&parsed, "test_lookup"), None);
    assert_eq!(
        lookup(&parsed, "test_lookup2"),
        Some((id2 - 1, BTF_KIND_TYPEDEF))
    );
    assert_eq!(parsed.to_bytes(), b);

    // A record size that is not whole words is refused, as libbpf does.
    b[rec + 1] = 6;
    assert!(matches!(Btf::parse(&b), Err(btf::Error::BadLayout { .. })));

    // Without a layout record for it, the kind is an error naming it.
    btf.set_layout(false);
    let mut no_layout = btf.to_bytes();
    set_info(&mut no_layout, unrec_at, new_kind << 24);
    let err = Btf::parse(&no_layout).unwrap_err().to_string();
    assert!(err.contains("unknown kind 23"), "{err}");
}

/// A split BTF without a layout section of its own reads unknown kinds
/// through its base's (libbpf's `btf_type_size_unknown`).
#[test]
fn split_btf_reads_unknown_kind_through_base_layout() {
    let mut base = Btf::new();
    add_int(&mut base, "int", 4, BTF_INT_SIGNED);
    base.set_layout(true);
    // A layout record for kind 23: three info words.
    let (bb, _) = with_extra_layout_record(&base.to_bytes(), 12, 0);
    let base = Arc::new(Btf::parse(&bb).unwrap());

    let mut split = Btf::new_split(base.clone());
    let n = split.add_str("opaque");
    split.add_type(Type::new(n, TypeData::Typedef { ty: 1 }));
    split.add_type(Type::new(n, TypeData::Ptr { ty: 1 }));
    let mut sb = split.to_bytes();
    assert_eq!(u32_at(&sb, 4), BTF_HEADER_LEN, "split BTF has no layout");
    // [2] becomes kind 23, whose three info words are the PTR after it.
    set_info(&mut sb, 24, 23 << 24);
    let parsed = Btf::parse_split(&sb, base).unwrap();
    assert_eq!(parsed.type_count(), 3);
    assert!(matches!(
        parsed.type_by_id(2).unwrap().data,
        TypeData::Unknown { kind, ref words, .. } if kind == btf::Kind::new(23) && words.len() == 3
    ));
    assert_eq!(parsed.to_bytes(), sb);
}

/// The expected text of bpftool's `loc_dump` selftest (bpf-next,
/// tools/testing/selftests/bpf/prog_tests/bpftool_btf_dump.c), verbatim.
const BPFTOOL_LOC_DUMP: &str = "\
[1] INT 'int' size=4 bits_offset=0 nr_bits=32 encoding=SIGNED
[2] FUNC_PROTO '(anon)' ret_type_id=1 vlen=5
\t'arg1' type_id=1
\t'arg2' type_id=1
\t'arg3' type_id=1
\t'arg4' type_id=1
\t'arg5' type_id=1
[3] FUNC 'foo' type_id=2 linkage=static
[4] LOC_PARAM '(anon)' size=4 flags=0x8 vlen=1 values='reg1'
[5] LOC_PARAM '(anon)' size=8 flags=0x38 vlen=2 values='*(reg2 + 0x10)'
[6] LOC_PARAM '(anon)' size=8 flags=0x29 vlen=2 values='fbreg - 0x10'
[7] LOC_PARAM '(anon)' size=8 flags=0x6 vlen=2 values='0x123456789abcdef0 (addr)'
[8] LOC_PARAM '(anon)' size=8 flags=0x2 vlen=2 values='0xdeadbeeffeedface'
[9] LOC_PARAM '(anon)' size=8 flags=0x39 vlen=2 values='*(fbreg - 0x20)'
[10] LOC_PROTO '(anon)' vlen=6
\ttype_id=4 value='reg1'
\ttype_id=5 value='*(reg2 + 0x10)'
\ttype_id=6 value='fbreg - 0x10'
\ttype_id=7 value='0x123456789abcdef0 (addr)'
\ttype_id=8 value='0xdeadbeeffeedface'
\ttype_id=9 value='*(fbreg - 0x20)'
[11] LOCSEC 'inline.text' vlen=1
\tname='foo' func_type_id=3 loc_proto_type_id=10 offset=64
";

#[test]
fn location_kinds_raw_dump_matches_bpftool_selftest_loc_dump() {
    let btf = Btf::parse(&loc_btf().to_bytes()).unwrap();
    assert_eq!(raw(&btf), BPFTOOL_LOC_DUMP);
}

#[test]
fn location_kinds_round_trip_byte_identical_with_and_without_layout() {
    for layout in [false, true] {
        let mut btf = loc_btf();
        btf.set_layout(layout);
        let b = btf.to_bytes();
        let back = Btf::parse(&b).unwrap();
        assert_eq!(back.to_bytes(), b, "layout {layout}");
        assert_eq!(back.own_types(), btf.own_types());
    }
}

/// JSON carries the raw format's fields; its shape is ours (bpftool's JSON
/// for these kinds was not available), checked field by field.
#[test]
fn location_kinds_json_dump_fields() {
    let j = json(&loc_btf());
    let types = j["types"].as_array().unwrap();
    let p = &types[4];
    assert_eq!(p["kind"], "LOC_PARAM");
    assert_eq!(p["size"], 8);
    assert_eq!(p["flags"], 0x38);
    assert_eq!(p["vlen"], 2);
    assert_eq!(p["values"], serde_json::json!([2, 16]));
    assert_eq!(p["value"], "*(reg2 + 0x10)");
    let proto = &types[9];
    assert_eq!(proto["kind"], "LOC_PROTO");
    assert_eq!(proto["params"][2]["type_id"], 6);
    assert_eq!(proto["params"][2]["value"], "fbreg - 0x10");
    let sec = &types[10];
    assert_eq!(sec["kind"], "LOCSEC");
    assert_eq!(sec["name"], "inline.text");
    assert_eq!(
        sec["locs"][0],
        serde_json::json!({"name": "foo", "func_type_id": 3, "loc_proto_type_id": 10, "offset": 64})
    );
}

/// bpf-next accepts the selftest's BTF; Linux 6.18 knows none of the kinds.
#[test]
fn validator_location_kinds_bpf_next_accepts_linux_6_18_rejects() {
    let b = loc_btf().to_bytes();
    let btf = Btf::parse(&b).unwrap();
    assert!(validate_for(&btf, Target::BpfNext).is_empty());
    let blob = validate_blob_for(&b, &btf, Target::BpfNext);
    assert!(blob.is_empty(), "{blob:?}");
    let old = validate(&btf);
    assert_eq!(old.len(), 8, "{old:?}");
    assert!(old.iter().all(|p| p.rule == Rule::Kind));
    assert!(validate_blob(&b, &btf).is_empty());
}

/// Each broken location is reported by the rule it breaks (bpf-next rules
/// as the merged uapi header defines LOC_PARAM, LOC_PROTO and LOCSEC).
#[test]
fn validator_location_kinds_bpf_next_rejects_each_broken_case() {
    type Break = fn(&mut Btf);
    let set_param = |btf: &mut Btf, id: u32, size: u32, flags: u32, values: Vec<u32>| {
        btf.type_by_id_mut(id).unwrap().data = TypeData::LocParam {
            size,
            flags,
            values: values.into(),
        };
    };
    let cases: Vec<(&str, Rule, Break)> = vec![
        ("size 3", Rule::Size, |b| {
            if let TypeData::LocParam { size, .. } = &mut b.type_by_id_mut(4).unwrap().data {
                *size = 3;
            }
        }),
        ("undefined flag", Rule::Location, |b| {
            if let TypeData::LocParam { flags, .. } = &mut b.type_by_id_mut(4).unwrap().data {
                *flags |= 0x40;
            }
        }),
        ("named", Rule::Name, |b| {
            let n = b.add_str("p");
            b.type_by_id_mut(4).unwrap().name_off = n;
        }),
        ("kind_flag", Rule::KindFlag, |b| {
            b.type_by_id_mut(10).unwrap().kind_flag = true;
        }),
        ("loc_proto lists a FUNC", Rule::Location, |b| {
            if let TypeData::LocProto { params } = &mut b.type_by_id_mut(10).unwrap().data {
                params[0] = 3;
            }
        }),
        ("locsec site's func is a LOC_PARAM", Rule::Location, |b| {
            if let TypeData::Locsec { locs } = &mut b.type_by_id_mut(11).unwrap().data {
                locs[0].func = 4;
            }
        }),
        (
            "locsec site's loc_proto out of range",
            Rule::Location,
            |b| {
                if let TypeData::Locsec { locs } = &mut b.type_by_id_mut(11).unwrap().data {
                    locs[0].loc_proto = 99;
                }
            },
        ),
        ("locsec without a name", Rule::Name, |b| {
            b.type_by_id_mut(11).unwrap().name_off = 0;
        }),
        ("pointer to a LOC_PARAM", Rule::TypeId, |b| {
            b.add_type(Type::new(0, TypeData::Ptr { ty: 4 }));
        }),
    ];
    for (what, rule, f) in cases {
        let mut btf = loc_btf();
        f(&mut btf);
        let problems = validate_for(&btf, Target::BpfNext);
        assert_eq!(rules(&problems), [rule], "{what}: {problems:?}");
    }
    // Flag and value-count combinations.
    let bad: &[(u32, u32, &[u32])] = &[
        (4, BTF_LOC_PARAM_REG | BTF_LOC_PARAM_CONST, &[1]),
        (4, 0, &[1]),
        (8, BTF_LOC_PARAM_CONST, &[1]),
        (4, BTF_LOC_PARAM_CONST | BTF_LOC_PARAM_DEREF, &[1]),
        (8, BTF_LOC_PARAM_REG | BTF_LOC_PARAM_OFFSET, &[1]),
        (8, BTF_LOC_PARAM_REG | BTF_LOC_PARAM_ADDR, &[1]),
        (8, BTF_LOC_PARAM_REG, &[1, 2, 3]),
    ];
    for &(size, flags, values) in bad {
        let mut btf = loc_btf();
        set_param(&mut btf, 4, size, flags, values.to_vec());
        let problems = validate_for(&btf, Target::BpfNext);
        assert_eq!(
            rules(&problems),
            [Rule::Location],
            "size {size} flags {flags:#x} values {values:?}: {problems:?}"
        );
    }
}

/// vlen has 24 bits in bpf-next: a struct of 70,000 members round-trips,
/// bpf-next accepts it and Linux 6.18 does not (vlen bits it reserves).
#[test]
fn vlen_24_bits_round_trip_and_validator_targets() {
    let mut btf = Btf::new();
    add_int(&mut btf, "int", 4, BTF_INT_SIGNED);
    let count = 70_000u32;
    let members = (0..count)
        .map(|i| Member {
            name_off: btf.add_str(&format!("m{i}")),
            ty: 1,
            offset: i * 32,
        })
        .collect();
    let n = btf.add_str("big");
    btf.add_type(Type::new(
        n,
        TypeData::Struct {
            size: count * 4,
            members,
        },
    ));
    let b = btf.to_bytes();
    let info = u32_at(&b, 24 + 16 + 4);
    assert_eq!(info_vlen(info), count);
    assert_eq!(info_kind(info), BTF_KIND_STRUCT);
    let back = Btf::parse(&b).unwrap();
    assert_eq!(back.to_bytes(), b);
    assert!(validate_for(&back, Target::BpfNext).is_empty());
    assert!(validate_blob_for(&b, &back, Target::BpfNext).is_empty());
    assert_eq!(rules(&validate(&back)), [Rule::Vlen]);
    assert_eq!(rules(&validate_blob(&b, &back)), [Rule::Header]);
}

/// `btfkit diff`'s inline entries: a parameter found elsewhere shows as a
/// changed site, a moved site (another offset) does not.
#[test]
fn diff_inline_sites_compare_locations_not_offsets() {
    let a = loc_btf();
    let mut moved = loc_btf();
    if let TypeData::Locsec { locs } = &mut moved.type_by_id_mut(11).unwrap().data {
        locs[0].offset = 4096;
    }
    let d = btf::diff::diff(&a, &moved, &Default::default());
    assert!(d.is_empty(), "{d:?}");
    let mut changed = loc_btf();
    if let TypeData::LocParam { values, .. } = &mut changed.type_by_id_mut(4).unwrap().data {
        values[0] = 5;
    }
    let d = btf::diff::diff(&a, &changed, &Default::default());
    assert_eq!(d.changed.len(), 1, "{d:?}");
    assert_eq!(d.changed[0].category, btf::diff::Category::Inline);
    assert_eq!(d.changed[0].name, "foo");
}
