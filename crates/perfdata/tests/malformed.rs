//! Byte-level perf.data fixtures, well-formed and not: every malformation
//! (truncated header, sizes smaller than a header or past the end, unknown
//! record types, bad feature offsets, short bodies and trailers) gives an
//! error naming its offset or a skip, never a panic; and the 6.18 inflated
//! header.size does not move the sample_id.

#![allow(clippy::unwrap_used)]

use perfdata::attr::{flag, sample, EventAttr, ATTR_SIZE};
use perfdata::dynsyms::End;
use perfdata::features::feature;
use perfdata::records::{kind, Record};
use perfdata::timeline::{Options, Timeline};
use perfdata::{Error, PerfData};

const SAMPLE_TYPE: u64 =
    sample::IP | sample::TID | sample::TIME | sample::CPU | sample::PERIOD | sample::IDENTIFIER;
const EVENT_ID: u64 = 77;
const TID: u32 = 4242;
const CPU: u32 = 1;

fn attr() -> EventAttr {
    let mut a = EventAttr {
        kind: 1,
        size: ATTR_SIZE as u32,
        sample_type: SAMPLE_TYPE,
        ..EventAttr::default()
    };
    a.set_flag(flag::SAMPLE_ID_ALL, true);
    a.set_flag(flag::KSYMBOL, true);
    a.set_flag(flag::BPF_EVENT, true);
    a
}

/// The trailer for SAMPLE_TYPE: pid/tid, time, cpu/res, identifier.
fn trailer(time: u64) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend(TID.to_le_bytes());
    t.extend(TID.to_le_bytes());
    t.extend(time.to_le_bytes());
    t.extend(CPU.to_le_bytes());
    t.extend(0u32.to_le_bytes());
    t.extend(EVENT_ID.to_le_bytes());
    t
}

fn record(k: u32, misc: u16, body: &[u8], tail: &[u8]) -> Vec<u8> {
    let size = 8 + body.len() + tail.len();
    let mut r = Vec::new();
    r.extend(k.to_le_bytes());
    r.extend(misc.to_le_bytes());
    r.extend((size as u16).to_le_bytes());
    r.extend(body);
    r.extend(tail);
    r
}

fn ksymbol_body(addr: u64, len: u32, unregister: bool, name: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(addr.to_le_bytes());
    b.extend(len.to_le_bytes());
    b.extend(1u16.to_le_bytes());
    b.extend(u16::from(unregister).to_le_bytes());
    b.extend(name.as_bytes());
    b.push(0);
    while (8 + b.len()) % 8 != 0 {
        b.push(0);
    }
    b
}

fn ksymbol(addr: u64, len: u32, unregister: bool, name: &str, time: u64) -> Vec<u8> {
    record(
        kind::KSYMBOL,
        0,
        &ksymbol_body(addr, len, unregister, name),
        &trailer(time),
    )
}

fn bpf_event(load: bool, id: u32, tag: [u8; 8], time: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(if load { 1u16 } else { 2u16 }.to_le_bytes());
    b.extend(0u16.to_le_bytes());
    b.extend(id.to_le_bytes());
    b.extend(tag);
    record(kind::BPF_EVENT, 0, &b, &trailer(time))
}

fn kernel_sample(ip: u64, time: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(EVENT_ID.to_le_bytes());
    b.extend(ip.to_le_bytes());
    b.extend(TID.to_le_bytes());
    b.extend(TID.to_le_bytes());
    b.extend(time.to_le_bytes());
    b.extend(CPU.to_le_bytes());
    b.extend(0u32.to_le_bytes());
    b.extend(1u64.to_le_bytes());
    record(kind::SAMPLE, 1, &b, &[])
}

const TAG: [u8; 8] = [0x59, 0xf4, 0xa9, 0x31, 0x74, 0x4d, 0xcd, 0xc6];
const NAME: &str = "bpf_prog_59f4a931744dcdc6_probe";
const ADDR: u64 = 0xffff_ffff_c002_2050;

/// A recording of one program's life, with samples in it and after it.
fn life() -> Vec<Vec<u8>> {
    vec![
        ksymbol(ADDR, 20, false, NAME, 100),
        bpf_event(true, 9, TAG, 101),
        kernel_sample(ADDR + 4, 150),
        ksymbol(ADDR, 20, true, NAME, 200),
        bpf_event(false, 9, TAG, 201),
        kernel_sample(ADDR + 4, 250),
    ]
}

/// A file: header, one attr with its ids, the records, then the features.
fn file(records: &[Vec<u8>], features: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let attr_size = ATTR_SIZE + 16;
    let attrs_at = 104;
    let ids_at = attrs_at + attr_size;
    let data_at = ids_at + 8;
    let data: Vec<u8> = records.concat();
    let mut f = Vec::new();
    f.extend(b"PERFILE2");
    f.extend(104u64.to_le_bytes());
    f.extend((attr_size as u64).to_le_bytes());
    f.extend((attrs_at as u64).to_le_bytes());
    f.extend((attr_size as u64).to_le_bytes());
    f.extend((data_at as u64).to_le_bytes());
    f.extend((data.len() as u64).to_le_bytes());
    f.extend([0u8; 16]);
    let mut bits = [0u64; 4];
    for (id, _) in features {
        bits[(*id / 64) as usize] |= 1 << (id % 64);
    }
    for w in bits {
        f.extend(w.to_le_bytes());
    }
    assert_eq!(f.len(), 104);
    f.extend(attr().to_bytes());
    f.extend((ids_at as u64).to_le_bytes());
    f.extend(8u64.to_le_bytes());
    f.extend(EVENT_ID.to_le_bytes());
    f.extend(&data);
    let mut sorted: Vec<&(u32, Vec<u8>)> = features.iter().collect();
    sorted.sort_by_key(|(id, _)| *id);
    let mut at = f.len() + 16 * sorted.len();
    for (_, bytes) in &sorted {
        f.extend((at as u64).to_le_bytes());
        f.extend((bytes.len() as u64).to_le_bytes());
        at += bytes.len();
    }
    for (_, bytes) in &sorted {
        f.extend(bytes);
    }
    f
}

fn data_offset() -> u64 {
    (104 + ATTR_SIZE + 16 + 8) as u64
}

fn timeline(bytes: Vec<u8>) -> Timeline {
    let perf = PerfData::from_bytes(bytes).unwrap();
    Timeline::build(&perf, Options { samples: true })
}

#[test]
fn well_formed_life_of_a_program() {
    let t = timeline(file(&life(), &[]));
    assert!(t.errors.is_empty() && t.stopped.is_none(), "{:?}", t.errors);
    let syms = t.tracker.table.symbols();
    assert_eq!(syms.len(), 1);
    let s = &syms[0];
    assert_eq!((s.name.as_str(), s.addr, s.len), (NAME, ADDR, 20));
    assert_eq!((s.registered, s.unregistered), (Some(100), Some(200)));
    assert_eq!(s.end, Some(End::Unregistered));
    assert_eq!(s.bpf.map(|b| (b.id, b.tag)), Some((9, TAG)));
    assert_eq!(s.register_offset, Some(data_offset()));
    let prog = &t.tracker.progs[&9];
    assert_eq!((prog.loaded, prog.unloaded), (Some(101), Some(201)));
    assert_eq!(t.samples.len(), 2);
    assert!(t
        .samples
        .iter()
        .all(|p| p.in_kernel() && p.tid == Some(TID) && p.cpu == Some(CPU)));
    assert!(t.tracker.table.lookup(t.samples[0].ip, 150).is_some());
    assert!(t.tracker.table.lookup(t.samples[1].ip, 250).is_none());
}

/// Linux 6.18 can grow header.size past the trailer: the trailer is where
/// the body ends, and the extra bytes are ignored.
#[test]
fn inflated_header_size_reads_sample_id_forward() {
    let body = ksymbol_body(ADDR, 20, false, NAME);
    let mut tail = trailer(100);
    // What a backward read would take for the trailer: garbage.
    tail.extend([0xff; 24]);
    let rec = record(kind::KSYMBOL, 0, &body, &tail);
    let t = timeline(file(&[rec], &[]));
    assert!(t.errors.is_empty(), "{:?}", t.errors);
    let s = &t.tracker.table.symbols()[0];
    assert_eq!(s.registered, Some(100));
}

#[test]
fn truncated_file_header_is_an_error() {
    let f = file(&life(), &[]);
    for len in [0, 7, 15, 50, 103] {
        match PerfData::from_bytes(f[..len].to_vec()) {
            Err(Error::Truncated { offset: 0, .. }) => {}
            Err(e) => panic!("{len} bytes: unexpected error {e}"),
            Ok(_) => panic!("{len} bytes accepted"),
        }
    }
}

#[test]
fn bad_and_byte_swapped_magic_are_errors() {
    let mut f = file(&life(), &[]);
    f[..8].copy_from_slice(b"PERFFILE");
    assert!(matches!(
        PerfData::from_bytes(f.clone()),
        Err(Error::BadMagic { .. })
    ));
    f[..8].copy_from_slice(b"2ELIFREP");
    assert!(matches!(PerfData::from_bytes(f), Err(Error::BigEndian)));
}

#[test]
fn size_smaller_than_header_stops_with_its_offset() {
    let mut recs = life();
    let bad_at = data_offset() + recs[0].len() as u64 + recs[1].len() as u64;
    recs.insert(2, record(kind::KSYMBOL, 0, &[], &[]));
    let n = recs[2].len();
    recs[2][6..8].copy_from_slice(&4u16.to_le_bytes());
    assert_eq!(n, 8);
    let t = timeline(file(&recs, &[]));
    match t.stopped {
        Some(Error::RecordTooSmall { offset, size: 4 }) => assert_eq!(offset, bad_at),
        other => panic!("{other:?}"),
    }
    // What came before is kept.
    assert_eq!(t.tracker.table.symbols()[0].registered, Some(100));
}

#[test]
fn size_past_the_end_stops_with_its_offset() {
    let mut recs = life();
    let last = recs.len() - 1;
    let bad_at = data_offset() + recs[..last].iter().map(|r| r.len() as u64).sum::<u64>();
    recs[last][6..8].copy_from_slice(&0x400u16.to_le_bytes());
    let t = timeline(file(&recs, &[]));
    match t.stopped {
        Some(Error::RecordPastEnd {
            offset,
            size: 0x400,
            ..
        }) => assert_eq!(offset, bad_at),
        other => panic!("{other:?}"),
    }
    assert_eq!(t.tracker.table.symbols()[0].unregistered, Some(200));
}

#[test]
fn unknown_record_types_are_skipped() {
    let mut recs = life();
    recs.insert(1, record(50, 0, &[1, 2, 3, 4, 5, 6, 7, 8], &[]));
    recs.insert(3, record(200, 0, &[0xee; 24], &[]));
    recs.insert(4, record(0, 0, &[], &[]));
    let t = timeline(file(&recs, &[]));
    assert!(t.errors.is_empty() && t.stopped.is_none(), "{:?}", t.errors);
    assert_eq!(t.record_counts[&50], 1);
    assert_eq!(t.record_counts[&200], 1);
    assert_eq!(t.tracker.table.symbols()[0].unregistered, Some(200));
}

#[test]
fn short_ksymbol_body_is_skipped_with_its_offset() {
    let mut recs = life();
    recs.insert(0, record(kind::KSYMBOL, 0, &[0; 8], &[]));
    let t = timeline(file(&recs, &[]));
    assert_eq!(t.errors.len(), 1);
    match &t.errors[0] {
        Error::BadRecord {
            offset,
            kind: "KSYMBOL",
            ..
        } => assert_eq!(*offset, data_offset()),
        e => panic!("{e}"),
    }
    assert!(t.stopped.is_none());
    assert_eq!(t.tracker.table.symbols().len(), 1);
}

#[test]
fn name_without_nul_is_an_error() {
    let mut body = ksymbol_body(ADDR, 20, false, NAME);
    let n = body.len();
    body[16..n].fill(b'x');
    let t = timeline(file(&[record(kind::KSYMBOL, 0, &body, &[])], &[]));
    assert!(
        matches!(t.errors[..], [Error::BadRecord { .. }]),
        "{:?}",
        t.errors
    );
}

#[test]
fn sample_id_all_with_short_body_is_an_error_not_a_panic() {
    let body = ksymbol_body(ADDR, 20, false, NAME);
    for cut in 0..32 {
        let rec = record(kind::KSYMBOL, 0, &body, &trailer(100)[..cut]);
        let t = timeline(file(&[rec.clone(), rec], &[]));
        assert_eq!(t.errors.len(), 2, "trailer cut to {cut}");
        assert!(t.tracker.table.is_empty());
    }
    let mut b = Vec::new();
    b.extend(EVENT_ID.to_le_bytes());
    b.extend(ADDR.to_le_bytes());
    let t = timeline(file(&[record(kind::SAMPLE, 1, &b, &[])], &[]));
    assert!(matches!(
        t.errors[..],
        [Error::BadRecord { kind: "SAMPLE", .. }]
    ));
}

fn perf_string(s: &str) -> Vec<u8> {
    let mut padded = s.as_bytes().to_vec();
    padded.push(0);
    padded.resize(padded.len().div_ceil(64) * 64, 0);
    let mut b = (padded.len() as u32).to_le_bytes().to_vec();
    b.extend(padded);
    b
}

/// HEADER_BPF_PROG_INFO with one program: perf_bpil header, the info with
/// array pointers as offsets into data, then data (jited_ksyms, func lens).
fn prog_info(id: u32, addr: u64) -> Vec<u8> {
    let mut info = vec![0u8; 232];
    info[4..8].copy_from_slice(&id.to_le_bytes());
    info[8..16].copy_from_slice(&TAG);
    info[64..69].copy_from_slice(b"probe");
    info[104..108].copy_from_slice(&1u32.to_le_bytes());
    info[108..112].copy_from_slice(&1u32.to_le_bytes());
    info[112..120].copy_from_slice(&0u64.to_le_bytes());
    info[120..128].copy_from_slice(&8u64.to_le_bytes());
    let mut data = addr.to_le_bytes().to_vec();
    data.extend(20u32.to_le_bytes());
    data.extend([0; 4]);
    let mut b = 1u32.to_le_bytes().to_vec();
    b.extend((info.len() as u32).to_le_bytes());
    b.extend((data.len() as u32).to_le_bytes());
    b.extend(((1u64 << 3) | (1 << 4)).to_le_bytes());
    b.extend(info);
    b.extend(data);
    b
}

fn btf_feature() -> Vec<u8> {
    let mut b = 1u32.to_le_bytes().to_vec();
    b.extend(5u32.to_le_bytes());
    b.extend(4u32.to_le_bytes());
    b.extend([0x9f, 0xeb, 1, 0]);
    b
}

#[test]
fn feature_sections_are_decoded() {
    // Only the KSYMBOL records: HEADER_BPF_PROG_INFO names the program.
    let recs = vec![
        ksymbol(ADDR, 20, false, NAME, 100),
        ksymbol(ADDR, 20, true, NAME, 200),
    ];
    let features = [
        (feature::OSRELEASE, perf_string("6.18.0-test")),
        (feature::BPF_PROG_INFO, prog_info(9, ADDR)),
        (feature::BPF_BTF, btf_feature()),
    ];
    let perf = PerfData::from_bytes(file(&recs, &features)).unwrap();
    let f = &perf.features;
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    assert_eq!(f.osrelease.as_deref(), Some("6.18.0-test"));
    assert_eq!(f.bpf_progs.len(), 1);
    let p = &f.bpf_progs[0];
    assert_eq!((p.id, p.tag, p.name.as_str()), (9, TAG, "probe"));
    assert_eq!(
        (p.jited_ksyms.as_slice(), p.jited_func_lens.as_slice()),
        (&[ADDR][..], &[20][..])
    );
    assert_eq!((f.bpf_btfs[0].id, f.bpf_btfs[0].data.len()), (5, 4));
    let t = Timeline::build(&perf, Options::default());
    assert_eq!(t.tracker.table.symbols()[0].bpf.map(|b| b.id), Some(9));
}

#[test]
fn bad_feature_section_offsets_are_warnings() {
    let recs = life();
    let features = [
        (feature::HOSTNAME, perf_string("host")),
        (feature::BPF_PROG_INFO, prog_info(9, ADDR)),
    ];
    let good = file(&recs, &features);
    let table_at = good.len() - features.iter().map(|(_, b)| b.len()).sum::<usize>() - 32;

    // The BPF_PROG_INFO section points past the end of the file.
    let mut f = good.clone();
    f[table_at + 16..table_at + 24].copy_from_slice(&u64::MAX.to_le_bytes());
    let perf = PerfData::from_bytes(f).unwrap();
    assert_eq!(perf.features.hostname.as_deref(), Some("host"));
    assert!(matches!(
        perf.features.warnings[..],
        [Error::SectionOutOfBounds { offset, .. }] if offset == (table_at + 16) as u64
    ));
    assert_eq!(timeline(good.clone()).tracker.table.len(), 1);

    // A count that promises more programs than the section holds.
    let mut f = good.clone();
    let info_at = good.len() - features[1].1.len();
    f[info_at..info_at + 4].copy_from_slice(&1000u32.to_le_bytes());
    let perf = PerfData::from_bytes(f).unwrap();
    assert!(matches!(
        perf.features.warnings[..],
        [Error::BadFeature { .. }]
    ));

    // The feature table itself cut off: the bits promise sections that are not there.
    let perf = PerfData::from_bytes(good[..table_at + 8].to_vec()).unwrap();
    assert_eq!(perf.features.warnings.len(), 2);
    assert!(perf.features.bpf_progs.is_empty());
}

#[test]
fn attrs_section_outside_the_file_is_an_error() {
    let mut f = file(&life(), &[]);
    f[24..32].copy_from_slice(&0x10_0000u64.to_le_bytes());
    assert!(matches!(
        PerfData::from_bytes(f),
        Err(Error::SectionOutOfBounds { offset: 24, .. })
    ));
}

/// The pipe format: a 16-byte header, the attr as a HEADER_ATTR record, a
/// feature as a HEADER_FEATURE record, then the records.
fn pipe(records: &[Vec<u8>]) -> Vec<u8> {
    let mut f = b"PERFILE2".to_vec();
    f.extend(16u64.to_le_bytes());
    let mut attr_body = attr().to_bytes().to_vec();
    attr_body.extend(EVENT_ID.to_le_bytes());
    f.extend(record(kind::HEADER_ATTR, 0, &attr_body, &[]));
    let mut feat = u64::from(feature::OSRELEASE).to_le_bytes().to_vec();
    feat.extend(perf_string("6.18.0-pipe"));
    f.extend(record(kind::HEADER_FEATURE, 0, &feat, &[]));
    // Tracing data: its payload follows the record, outside header.size.
    let mut tracing = 16u32.to_le_bytes().to_vec();
    tracing.extend([0; 4]);
    f.extend(record(kind::HEADER_TRACING_DATA, 0, &tracing, &[]));
    f.extend([0xaa; 16]);
    f.extend(records.concat());
    f
}

#[test]
fn pipe_format_reads_attrs_and_features_from_records() {
    let perf = PerfData::from_bytes(pipe(&life())).unwrap();
    assert_eq!(perf.format(), perfdata::header::Format::Pipe);
    assert_eq!(perf.attrs.entries().len(), 1);
    assert_eq!(perf.attrs.entries()[0].ids, [EVENT_ID]);
    assert_eq!(perf.features.osrelease.as_deref(), Some("6.18.0-pipe"));
    let t = Timeline::build(&perf, Options { samples: true });
    assert!(t.errors.is_empty() && t.stopped.is_none(), "{:?}", t.errors);
    let s = &t.tracker.table.symbols()[0];
    assert_eq!((s.registered, s.unregistered), (Some(100), Some(200)));
    assert_eq!(t.samples.len(), 2);
    let first_ksymbol = perf
        .records()
        .filter_map(Result::ok)
        .find(|e| matches!(e.record, Record::Ksymbol(_)))
        .unwrap();
    assert_eq!(first_ksymbol.id.time, Some(100));
}

/// Every prefix of a file and every single-byte change of it reads as an
/// error or a skip; none panics.
#[test]
fn every_truncation_and_byte_flip_is_an_error_or_a_skip() {
    let features = [
        (feature::HOSTNAME, perf_string("host")),
        (feature::BPF_PROG_INFO, prog_info(9, ADDR)),
        (feature::BPF_BTF, btf_feature()),
    ];
    for good in [file(&life(), &features), pipe(&life())] {
        let read = |bytes: Vec<u8>| {
            if let Ok(perf) = PerfData::from_bytes(bytes) {
                let t = Timeline::build(&perf, Options { samples: true });
                for s in &t.samples {
                    t.tracker.table.lookup(s.ip, s.time.unwrap_or(0));
                }
            }
        };
        for len in 0..good.len() {
            read(good[..len].to_vec());
        }
        for i in 0..good.len() {
            for v in [0x00, 0xff, good[i] ^ 0x80, good[i].wrapping_add(1)] {
                let mut f = good.clone();
                f[i] = v;
                read(f);
            }
        }
    }
}

/// A recording cut short: the records that are there are read, the cut
/// ends the reading with its offset, and the data section is a warning.
#[test]
fn file_cut_inside_the_data_reads_what_is_there() {
    let recs = life();
    let f = file(&recs, &[(feature::HOSTNAME, perf_string("host"))]);
    let cut = data_offset() as usize + recs[0].len() + recs[1].len() + 10;
    let perf = PerfData::from_bytes(f[..cut].to_vec()).unwrap();
    assert!(matches!(
        perf.warnings[..],
        [Error::SectionOutOfBounds { offset: 40, .. }]
    ));
    assert!(perf.features.warnings.is_empty());
    let t = Timeline::build(&perf, Options::default());
    assert!(matches!(t.stopped, Some(Error::RecordPastEnd { .. })));
    assert_eq!(t.tracker.table.symbols()[0].registered, Some(100));
    assert_eq!(t.tracker.progs[&9].loaded, Some(101));
}
