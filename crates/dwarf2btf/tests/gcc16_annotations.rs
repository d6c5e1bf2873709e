//! GCC 16's btf_type_tag and btf_decl_tag: not children of the annotated
//! DIE (clang's DW_TAG_LLVM_annotation) but a DW_AT_GNU_annotation (0x2139)
//! reference to a chain of DW_TAG_GNU_annotation (0x6001) DIEs, each
//! pointing at the next. No compiler here writes them, so the fixture is
//! assembled with gimli's writer, DIE for DIE as GCC 16 lays out
//!
//! ```c
//! #define __tag(x) __attribute__((btf_type_tag(x)))
//! #define __decl(x) __attribute__((btf_decl_tag(x)))
//! struct sample { int x __decl("m1") __decl("m2"); long y; } __decl("s1");
//! struct sample __tag("outer") __tag("inner") *p;
//! ```
//!
//! The oracle is pahole master's dwarf_loader.c (2026-07), read with the
//! search tools: on a pointer the chain is taken from the tag nearest the
//! `*` (GCC writes "inner" first) while it names btf_type_tag, giving
//! PTR -> TYPE_TAG "inner" -> TYPE_TAG "outer" -> STRUCT; on a member or a
//! struct every btf_decl_tag of the chain becomes a DECL_TAG (component
//! index of the member, or -1), other names skipped.

use std::path::Path;

use btf::{Btf, TypeData};
use dwarf2btf::load::ElfFile;
use dwarf2btf::{EncodeOptions, FuncMode, NoProgress};
use gimli::write::{AttributeValue, DwarfUnit, EndianVec, Sections, UnitEntryId};
use gimli::{constants as dw, Encoding, Format, LittleEndian};

mod common {
    pub mod dwarf_elf;
}

const DW_AT_GNU_ANNOTATION: dw::DwAt = dw::DwAt(0x2139);
const DW_TAG_GNU_ANNOTATION: dw::DwTag = dw::DwTag(0x6001);

/// One annotation DIE under the unit: `kind` ("btf_type_tag" or
/// "btf_decl_tag"), `value`, and the next of the chain.
fn annotation(
    unit: &mut DwarfUnit,
    kind: &str,
    value: &str,
    next: Option<UnitEntryId>,
) -> UnitEntryId {
    let root = unit.unit.root();
    let id = unit.unit.add(root, DW_TAG_GNU_ANNOTATION);
    let e = unit.unit.get_mut(id);
    e.set(dw::DW_AT_name, AttributeValue::String(kind.into()));
    e.set(dw::DW_AT_const_value, AttributeValue::String(value.into()));
    if let Some(n) = next {
        e.set(DW_AT_GNU_ANNOTATION, AttributeValue::UnitRef(n));
    }
    id
}

/// The fixture's DWARF sections, in a relocatable x86-64 ELF object.
fn gcc16_object() -> Vec<u8> {
    let encoding = Encoding {
        format: Format::Dwarf32,
        version: 5,
        address_size: 8,
    };
    let mut unit = DwarfUnit::new(encoding);
    let root = unit.unit.root();
    let r = unit.unit.get_mut(root);
    r.set(
        dw::DW_AT_producer,
        AttributeValue::String(b"GNU C17 16.1.0".to_vec()),
    );
    r.set(
        dw::DW_AT_language,
        AttributeValue::Language(dw::DW_LANG_C11),
    );
    r.set(dw::DW_AT_name, AttributeValue::String(b"tags.c".to_vec()));

    let base = |unit: &mut DwarfUnit, name: &str, size: u8| {
        let id = unit.unit.add(root, dw::DW_TAG_base_type);
        let e = unit.unit.get_mut(id);
        e.set(dw::DW_AT_name, AttributeValue::String(name.into()));
        e.set(dw::DW_AT_byte_size, AttributeValue::Data1(size));
        e.set(
            dw::DW_AT_encoding,
            AttributeValue::Encoding(dw::DW_ATE_signed),
        );
        id
    };
    let int = base(&mut unit, "int", 4);
    let long = base(&mut unit, "long int", 8);

    // Chains: the pointer's type tags, ending in a decl tag that must stop
    // the walk; the struct's, with a type tag that must be skipped; the
    // member's two decl tags.
    let ptr_stop = annotation(&mut unit, "btf_decl_tag", "not-a-type-tag", None);
    let outer = annotation(&mut unit, "btf_type_tag", "outer", Some(ptr_stop));
    let inner = annotation(&mut unit, "btf_type_tag", "inner", Some(outer));
    let s_last = annotation(&mut unit, "btf_decl_tag", "s2", None);
    let s_skip = annotation(&mut unit, "btf_type_tag", "skipped", Some(s_last));
    let s_first = annotation(&mut unit, "btf_decl_tag", "s1", Some(s_skip));
    let m2 = annotation(&mut unit, "btf_decl_tag", "m2", None);
    let m1 = annotation(&mut unit, "btf_decl_tag", "m1", Some(m2));

    let s = unit.unit.add(root, dw::DW_TAG_structure_type);
    let e = unit.unit.get_mut(s);
    e.set(dw::DW_AT_name, AttributeValue::String(b"sample".to_vec()));
    e.set(dw::DW_AT_byte_size, AttributeValue::Data1(16));
    e.set(DW_AT_GNU_ANNOTATION, AttributeValue::UnitRef(s_first));
    for (name, ty, off, tags) in [("x", int, 0u8, Some(m1)), ("y", long, 8, None)] {
        let m = unit.unit.add(s, dw::DW_TAG_member);
        let e = unit.unit.get_mut(m);
        e.set(dw::DW_AT_name, AttributeValue::String(name.into()));
        e.set(dw::DW_AT_type, AttributeValue::UnitRef(ty));
        e.set(dw::DW_AT_data_member_location, AttributeValue::Data1(off));
        if let Some(t) = tags {
            e.set(DW_AT_GNU_ANNOTATION, AttributeValue::UnitRef(t));
        }
    }
    let p = unit.unit.add(root, dw::DW_TAG_pointer_type);
    let e = unit.unit.get_mut(p);
    e.set(dw::DW_AT_byte_size, AttributeValue::Data1(8));
    e.set(dw::DW_AT_type, AttributeValue::UnitRef(s));
    e.set(DW_AT_GNU_ANNOTATION, AttributeValue::UnitRef(inner));
    // An untagged pointer to the same struct stays a plain PTR.
    let plain = unit.unit.add(root, dw::DW_TAG_pointer_type);
    let e = unit.unit.get_mut(plain);
    e.set(dw::DW_AT_byte_size, AttributeValue::Data1(8));
    e.set(dw::DW_AT_type, AttributeValue::UnitRef(s));

    elf_of(&mut unit)
}

/// `unit`'s DWARF sections in a relocatable x86-64 ELF object.
fn elf_of(unit: &mut DwarfUnit) -> Vec<u8> {
    let mut sections = Sections::new(EndianVec::new(LittleEndian));
    unit.write(&mut sections).expect("write DWARF");
    common::dwarf_elf::elf_with(&sections)
}

fn encode(bytes: &[u8]) -> Btf {
    let elf = ElfFile::from_bytes(Path::new("gcc16-tags.o"), bytes).expect("ELF");
    let opts = EncodeOptions {
        funcs: FuncMode::Pahole,
        ..EncodeOptions::default()
    };
    dwarf2btf::encode(&elf, None, &opts, &NoProgress)
        .expect("encode")
        .btf
}

fn name(btf: &Btf, off: u32) -> String {
    btf.str_at(off).expect("name").to_owned()
}

#[test]
fn gcc16_gnu_annotation_chains_encoded_as_pahole_master() {
    let btf = encode(&gcc16_object());
    let sample = btf
        .iter()
        .find(|(_, t)| {
            matches!(t.data, TypeData::Struct { .. }) && name(&btf, t.name_off) == "sample"
        })
        .map(|(id, _)| id)
        .expect("struct sample");

    // PTR -> TYPE_TAG "inner" -> TYPE_TAG "outer" -> STRUCT sample.
    let mut chains = Vec::new();
    for (_, t) in btf.iter() {
        let TypeData::Ptr { ty } = t.data else {
            continue;
        };
        let mut chain = Vec::new();
        let mut at = ty;
        while let Some(TypeData::TypeTag { ty }) = btf.type_by_id(at).map(|t| &t.data) {
            chain.push(name(&btf, btf.type_by_id(at).expect("tag").name_off));
            at = *ty;
        }
        assert_eq!(at, sample, "every pointer ends at struct sample");
        chains.push(chain);
    }
    chains.sort();
    assert_eq!(
        chains,
        [vec![], vec!["inner".to_owned(), "outer".to_owned()]],
        "type tags nearest the pointer first, the chain cut at the decl tag"
    );

    // DECL_TAGs: the member's two (component 0), the struct's two (-1).
    let mut decls: Vec<(String, u32, i32)> = btf
        .iter()
        .filter_map(|(_, t)| match t.data {
            TypeData::DeclTag { ty, component_idx } => {
                Some((name(&btf, t.name_off), ty, component_idx))
            }
            _ => None,
        })
        .collect();
    decls.sort();
    assert_eq!(
        decls,
        [
            ("m1".to_owned(), sample, 0),
            ("m2".to_owned(), sample, 0),
            ("s1".to_owned(), sample, -1),
            ("s2".to_owned(), sample, -1),
        ]
    );
    assert!(
        !btf.iter().any(|(_, t)| name(&btf, t.name_off) == "skipped"),
        "a type tag in a decl chain is not a decl tag"
    );
    // The result is BTF the kernel's rules accept.
    let problems = btf::validate::validate(&Btf::parse(&btf.to_bytes()).expect("parse"));
    assert!(problems.is_empty(), "{problems:?}");
}

/// A chain that points back at itself (corrupt input) ends after 64 tags:
/// more type tags on one pointer than the kernel resolves (32 nested
/// types), so the encode refuses the result instead of writing it.
#[test]
fn gcc16_annotation_chain_loop_is_cut() {
    let mut unit = DwarfUnit::new(Encoding {
        format: Format::Dwarf32,
        version: 5,
        address_size: 8,
    });
    let root = unit.unit.root();
    let int = unit.unit.add(root, dw::DW_TAG_base_type);
    let e = unit.unit.get_mut(int);
    e.set(dw::DW_AT_name, AttributeValue::String(b"int".to_vec()));
    e.set(dw::DW_AT_byte_size, AttributeValue::Data1(4));
    e.set(
        dw::DW_AT_encoding,
        AttributeValue::Encoding(dw::DW_ATE_signed),
    );
    let a = annotation(&mut unit, "btf_type_tag", "loop", None);
    unit.unit
        .get_mut(a)
        .set(DW_AT_GNU_ANNOTATION, AttributeValue::UnitRef(a));
    let p = unit.unit.add(root, dw::DW_TAG_pointer_type);
    let e = unit.unit.get_mut(p);
    e.set(dw::DW_AT_byte_size, AttributeValue::Data1(8));
    e.set(dw::DW_AT_type, AttributeValue::UnitRef(int));
    e.set(DW_AT_GNU_ANNOTATION, AttributeValue::UnitRef(a));
    let bytes = elf_of(&mut unit);
    let elf = ElfFile::from_bytes(Path::new("gcc16-tags.o"), &bytes).expect("ELF");
    let opts = EncodeOptions {
        funcs: FuncMode::Pahole,
        ..EncodeOptions::default()
    };
    let err = dwarf2btf::encode(&elf, None, &opts, &NoProgress)
        .err()
        .expect("a chain of 64 type tags is refused")
        .to_string();
    assert!(
        err.contains("PTR") && err.contains("more than 32 nested types"),
        "{err}"
    );
}
