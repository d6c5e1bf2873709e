//! The reader, validator and writer on arbitrary bytes, as base BTF and as
//! split BTF over a small base: none may panic, and what parses must write
//! out to bytes that parse back to the same BTF.

#![no_main]

use std::sync::{Arc, OnceLock};

use btf::validate::{validate, validate_blob, Problem};
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
        b.add_type(Type::new(name, TypeData::Struct { size: 16, members }));
        Arc::new(b)
    })
    .clone()
}

/// Header problems may go when the writer lays sections out afresh; the
/// types' problems must stay.
fn type_problems(ps: Vec<Problem>) -> Vec<Problem> {
    ps.into_iter().filter(|p| p.id != 0).collect()
}

fn round_trip(btf: &Btf, parse: impl Fn(&[u8]) -> btf::Result<Btf>) {
    let problems = validate(btf);
    for p in &problems {
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
    assert_eq!(type_problems(validate(&again)), type_problems(problems));
}

fuzz_target!(|data: &[u8]| {
    // parse_any also takes the ELF path (the object crate) on ELF input.
    if let Ok(btf) = btf::parse_any(data, None) {
        if !data.starts_with(b"\x7fELF") {
            let _ = validate_blob(data, &btf);
        }
        round_trip(&btf, Btf::parse);
    }
    if let Ok(split) = Btf::parse_split(data, base()) {
        let _ = validate_blob(data, &split);
        round_trip(&split, |b| Btf::parse_split(b, base()));
    }
});
