//! The reader, validator (by the rules of Linux 6.18 and of bpf-next) and
//! writer on arbitrary bytes, as base BTF and as split BTF over a small
//! base: none may panic, and what parses must write out to bytes that parse
//! back to the same BTF. The base has a layout section with records for two
//! kinds past the known ones (23 and 24), so that split input can hold
//! kinds read through the base's layout. The bytes are also read from a
//! file, as `btfkit` reads them (mapped, records in place).

#![no_main]

use std::sync::{Arc, OnceLock};

use btf::validate::{validate_blob_for, validate_for, Problem, Target};
use btf::{Btf, Member, Type, TypeData};
use libfuzzer_sys::fuzz_target;

/// A base with an INT, a pointer and a struct, for split BTF to refer to.
fn base() -> Arc<Btf> {
    static BASE: OnceLock<Arc<Btf>> = OnceLock::new();
    BASE.get_or_init(|| {
        let mut b = Btf::new();
        let name = b.add_str("int");
        let int = b.add_type(Type::new(
            name,
            TypeData::Int {
                size: 4,
                encoding: 1,
                offset: 0,
                bits: 32,
            },
        ));
        let ptr = b.add_type(Type::new(0, TypeData::Ptr { ty: 3 }));
        let name = b.add_str("s");
        let members = vec![
            Member {
                name_off: b.add_str("a"),
                ty: int,
                offset: 0,
            },
            Member {
                name_off: b.add_str("next"),
                ty: ptr,
                offset: 64,
            },
        ];
        b.add_type(Type::new(
            name,
            TypeData::Struct {
                size: 16,
                members: members.into(),
            },
        ));
        b.set_layout(true);
        // Records for kinds 23 (one info word, 4-byte records) and 24
        // (8-byte records) before the strings.
        let mut blob = b.to_bytes();
        let word =
            |b: &[u8], at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let (str_off, layout_off, layout_len) = (word(&blob, 16), word(&blob, 24), word(&blob, 28));
        let at = 32 + (layout_off + layout_len) as usize;
        blob.splice(at..at, [4u8, 4, 0, 0, 0, 8, 0, 0]);
        blob[16..20].copy_from_slice(&(str_off + 8).to_le_bytes());
        blob[28..32].copy_from_slice(&(layout_len + 8).to_le_bytes());
        Arc::new(Btf::parse(&blob).expect("the fuzz base parses"))
    })
    .clone()
}

/// Header problems may go when the writer lays sections out afresh; the
/// types' problems must stay.
fn type_problems(ps: Vec<Problem>) -> Vec<Problem> {
    ps.into_iter().filter(|p| p.id != 0).collect()
}

fn round_trip(btf: &Btf, parse: impl Fn(&[u8]) -> btf::Result<Btf>) {
    let problems = validate_for(btf, Target::Linux6_18);
    for p in problems.iter().chain(&validate_for(btf, Target::BpfNext)) {
        let _ = p.to_string();
    }
    let bytes = btf.to_bytes();
    let again = match parse(&bytes) {
        Ok(b) => b,
        Err(e) => panic!("our own output does not parse: {e}"),
    };
    assert_eq!(again.own_types(), btf.own_types());
    assert_eq!(again.string_section(), btf.string_section());
    assert_eq!(again.to_bytes(), bytes, "writing is not stable");
    assert_eq!(
        type_problems(validate_for(&again, Target::Linux6_18)),
        type_problems(problems)
    );
}

/// The same raw bytes read from a file: mapped, with the records of the types
/// read in place where they are aligned (records.rs). It must give what
/// the parse of the bytes in memory gives.
fn from_file(data: &[u8], parsed: &btf::Result<Btf>) {
    static PATH: OnceLock<std::path::PathBuf> = OnceLock::new();
    let path = PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("btfkit-fuzz-read-{}", std::process::id()))
    });
    std::fs::write(path, data).expect("the fuzz input is written to a file");
    let loaded = btf::load_file(path, None);
    match (parsed, &loaded) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.own_types(), b.own_types());
            assert_eq!(a.string_section(), b.string_section());
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!(
            "in memory: {:?}; from a file: {:?}",
            a.as_ref().err().map(ToString::to_string),
            b.as_ref().err().map(ToString::to_string)
        ),
    }
}

fuzz_target!(|data: &[u8]| {
    // parse_any also takes the ELF path (the object crate) on ELF input.
    let parsed = btf::parse_any(data, None);
    let raw = !data.starts_with(b"\x7fELF");
    if raw {
        from_file(data, &parsed);
    }
    if let Ok(btf) = parsed {
        if raw {
            let _ = validate_blob_for(data, &btf, Target::Linux6_18);
            let _ = validate_blob_for(data, &btf, Target::BpfNext);
        }
        round_trip(&btf, Btf::parse);
    }
    if let Ok(split) = Btf::parse_split(data, base()) {
        let _ = validate_blob_for(data, &split, Target::Linux6_18);
        let _ = validate_blob_for(data, &split, Target::BpfNext);
        round_trip(&split, |b| Btf::parse_split(b, base()));
    }
});
