//! `btf::diff` on real BTF compared with itself (oracle: identity), and on a
//! small BTF built here, then changed with the builder in known ways (oracle:
//! the changes made).

#![allow(clippy::unwrap_used)]

use std::path::Path;

use btf::diff::{diff, Category, DiffOptions};
use btf::{Btf, EnumValue, Member, Param, Type, TypeData};

struct Ids {
    int: u32,
    long: u32,
}

/// `struct pair { int a; long b; }`, `enum color { RED, GREEN = 5 }`,
/// `typedef struct pair pair_t`, `int get(struct pair *p)`, and two different
/// `struct dup` (one int, one long), as one kernel has two `elf_note_info`.
fn base() -> (Btf, Ids) {
    let mut b = Btf::new();
    let n = b.add_str("int");
    let int = b.add_type(Type::new(
        n,
        TypeData::Int {
            size: 4,
            encoding: 1,
            offset: 0,
            bits: 32,
        },
    ));
    let n = b.add_str("long");
    let long = b.add_type(Type::new(
        n,
        TypeData::Int {
            size: 8,
            encoding: 1,
            offset: 0,
            bits: 64,
        },
    ));
    let (a, bn) = (b.add_str("a"), b.add_str("b"));
    let n = b.add_str("pair");
    let pair = b.add_type(Type::new(
        n,
        TypeData::Struct {
            size: 16,
            members: vec![
                Member {
                    name_off: a,
                    ty: int,
                    offset: 0,
                },
                Member {
                    name_off: bn,
                    ty: long,
                    offset: 64,
                },
            ]
            .into(),
        },
    ));
    let (red, green) = (b.add_str("RED"), b.add_str("GREEN"));
    let n = b.add_str("color");
    b.add_type(Type::new(
        n,
        TypeData::Enum {
            size: 4,
            values: vec![
                EnumValue {
                    name_off: red,
                    val: 0,
                },
                EnumValue {
                    name_off: green,
                    val: 5,
                },
            ]
            .into(),
        },
    ));
    let n = b.add_str("pair_t");
    b.add_type(Type::new(n, TypeData::Typedef { ty: pair }));
    let ptr = b.add_type(Type::new(0, TypeData::Ptr { ty: pair }));
    let p = b.add_str("p");
    let proto = b.add_type(Type::new(
        0,
        TypeData::FuncProto {
            ret: int,
            params: vec![Param {
                name_off: p,
                ty: ptr,
            }]
            .into(),
        },
    ));
    let n = b.add_str("get");
    b.add_type(Type::new(n, TypeData::Func { proto, linkage: 0 }));
    let n = b.add_str("dup");
    for ty in [int, long] {
        b.add_type(Type::new(
            n,
            TypeData::Struct {
                size: 8,
                members: vec![Member {
                    name_off: a,
                    ty,
                    offset: 0,
                }]
                .into(),
            },
        ));
    }
    (b, Ids { int, long })
}

fn find_type(b: &Btf, name: &str, kind: btf::Kind) -> u32 {
    b.iter()
        .find(|(_, t)| t.kind() == kind && b.name_of(t).ok() == Some(name))
        .map(|(id, _)| id)
        .unwrap()
}

#[test]
fn diff_of_sysfs_vmlinux_with_itself_is_empty() {
    let p = Path::new(btf::SYSFS_VMLINUX);
    if !p.exists() {
        return testkit::skip("/sys/kernel/btf/vmlinux is not present (CONFIG_DEBUG_INFO_BTF)");
    }
    let a = btf::load_file(p, None).unwrap();
    let b = btf::load_file(p, None).unwrap();
    let d = diff(&a, &b, &DiffOptions::default());
    assert!(d.is_empty(), "{:?}", &d.changed.first());
    assert!(d.equal > 10_000, "only {} entries compared", d.equal);
}

#[test]
fn diff_ignores_type_ids() {
    let (a, ids) = base();
    // The same types with two unused ones in front: every id shifts by two.
    let mut b = Btf::new();
    let n = b.add_str("unused");
    for _ in 0..2 {
        b.add_type(Type::new(n, TypeData::Float { size: 8 }));
    }
    let shift = 2;
    for (_, t) in a.iter() {
        let mut t = t.clone();
        t.for_each_ref_mut(|id| {
            if *id != 0 {
                *id += shift
            }
        });
        t.for_each_str_mut(|off| *off = b.add_str(a.str_at(*off).unwrap()));
        b.add_type(t);
    }
    let _ = ids;
    let opts = DiffOptions {
        categories: vec![
            Category::Struct,
            Category::Enum,
            Category::Typedef,
            Category::Func,
        ],
        ..DiffOptions::default()
    };
    let d = diff(&a, &b, &opts);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(d.equal, 5, "pair, color, pair_t, get, dup");
}

#[test]
fn diff_reports_builder_changes() {
    let (a, ids) = base();
    let mut b = a.clone();
    // struct pair: b moves from 64 to 32 and becomes an int, the size shrinks.
    let pair = find_type(&b, "pair", btf::format::BTF_KIND_STRUCT);
    if let Some(Type {
        data: TypeData::Struct { size, members },
        ..
    }) = b.type_by_id_mut(pair)
    {
        *size = 8;
        members[1].offset = 32;
        members[1].ty = ids.int;
    }
    // enum color: GREEN = 6.
    let color = find_type(&b, "color", btf::format::BTF_KIND_ENUM);
    if let Some(Type {
        data: TypeData::Enum { values, .. },
        ..
    }) = b.type_by_id_mut(color)
    {
        values[1].val = 6;
    }
    // A struct only in B.
    let n = b.add_str("extra");
    b.add_type(Type::new(
        n,
        TypeData::Struct {
            size: 0,
            members: Default::default(),
        },
    ));
    let d = diff(&a, &b, &DiffOptions::default());
    assert!(!d.is_empty());
    assert!(d.only_a.is_empty());
    assert_eq!(d.only_b.len(), 1);
    assert_eq!(d.only_b[0].name, "extra");
    let pair = d.changed.iter().find(|c| c.name == "pair").expect("pair");
    assert_eq!(pair.category, Category::Struct);
    assert!(
        pair.details.contains(&"size 16 -> 8 bytes".to_owned()),
        "{pair:?}"
    );
    assert!(pair
        .details
        .contains(&"member b: offset bit 64 -> 32".to_owned()));
    assert!(pair
        .details
        .contains(&"member b: type long -> int".to_owned()));
    let color = d.changed.iter().find(|c| c.name == "color").expect("color");
    assert_eq!(color.details, vec!["GREEN: 5 -> 6".to_owned()]);
    // pair_t and get refer to struct pair by name: unchanged.
    assert!(d
        .changed
        .iter()
        .all(|c| c.name != "pair_t" && c.name != "get"));
    assert_eq!(d.changed.len(), 2);
    let _ = ids.long;
}

#[test]
fn diff_compares_same_name_as_multiset() {
    let (a, ids) = base();
    // B: the two `struct dup` in the other order: still equal.
    let mut b = a.clone();
    let dups: Vec<u32> = b
        .iter()
        .filter(|(_, t)| b.name_of(t).ok() == Some("dup"))
        .map(|(id, _)| id)
        .collect();
    let first = b.type_by_id(dups[0]).unwrap().clone();
    let second = b.type_by_id(dups[1]).unwrap().clone();
    *b.type_by_id_mut(dups[0]).unwrap() = second;
    *b.type_by_id_mut(dups[1]).unwrap() = first;
    let d = diff(&a, &b, &DiffOptions::default());
    assert!(d.is_empty(), "{d:?}");

    // C: both `struct dup` hold an int: one layout of A has no partner.
    let mut c = a.clone();
    if let Some(Type {
        data: TypeData::Struct { members, .. },
        ..
    }) = c.type_by_id_mut(dups[1])
    {
        members[0].ty = ids.int;
    }
    let d = diff(&a, &c, &DiffOptions::default());
    assert_eq!(d.changed.len(), 1);
    let dup = &d.changed[0];
    assert_eq!((dup.count_a, dup.count_b), (2, 2));
    assert_eq!(dup.unmatched_a.len(), 1);
    assert_eq!(dup.unmatched_b.len(), 1);
    assert_eq!(dup.details, vec!["member a: type long -> int".to_owned()]);
}

#[test]
fn diff_renders_prototypes_as_c() {
    let (a, _) = base();
    let mut b = Btf::new();
    let n = b.add_str("int");
    let int = b.add_type(Type::new(
        n,
        TypeData::Int {
            size: 4,
            encoding: 1,
            offset: 0,
            bits: 32,
        },
    ));
    let proto = b.add_type(Type::new(
        0,
        TypeData::FuncProto {
            ret: int,
            params: Default::default(),
        },
    ));
    let n = b.add_str("get");
    b.add_type(Type::new(n, TypeData::Func { proto, linkage: 1 }));
    let d = diff(
        &a,
        &b,
        &DiffOptions {
            categories: vec![Category::Func],
            ..DiffOptions::default()
        },
    );
    assert_eq!(d.changed.len(), 1);
    assert_eq!(
        d.changed[0].details,
        vec!["static int get(struct pair *p) -> global int get(void)".to_owned()]
    );
}

/// Anonymous structs are spelled out where they are used; forty levels of
/// an anonymous struct holding two of the next would be 2^40 expansions.
/// The renderer cuts that short instead of running forever.
#[test]
fn diff_survives_exponential_anonymous_nesting() {
    let mut b = Btf::new();
    let n = b.add_str("int");
    let mut inner = b.add_type(Type::new(
        n,
        TypeData::Int {
            size: 4,
            encoding: 1,
            offset: 0,
            bits: 32,
        },
    ));
    for _ in 0..40 {
        let m = |offset| Member {
            name_off: 0,
            ty: inner,
            offset,
        };
        inner = b.add_type(Type::new(
            0,
            TypeData::Struct {
                size: 8,
                members: vec![m(0), m(32)].into(),
            },
        ));
    }
    let n = b.add_str("top");
    b.add_type(Type::new(n, TypeData::Typedef { ty: inner }));
    let d = diff(&b, &b, &DiffOptions::default());
    assert!(d.is_empty());
    assert_eq!(d.equal, 1);
}
