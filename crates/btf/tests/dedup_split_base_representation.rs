//! Split dedup over a base that describes a C type in another way than the
//! split part: the split part's type takes the base's (see "the base's
//! representation" in dedup/mod.rs), and only where the layout is the same.
//! The oracle is the layout: [`btf::base_duplicates`] (the walk `btfkit
//! check` runs) must find no base type re-emitted, and types of another
//! layout must stay.

use std::sync::Arc;

use btf::base_duplicates::base_duplicates;
use btf::dedup::{dedup, DedupOptions};
use btf::format::BTF_KIND_STRUCT;
use btf::{Array, Btf, Member, Type, TypeData, TypeId};

fn int(btf: &mut Btf, name: &str, size: u32) -> TypeId {
    let n = btf.add_str(name);
    btf.add_type(Type::new(
        n,
        TypeData::Int {
            size,
            encoding: 1,
            offset: 0,
            bits: (size * 8) as u8,
        },
    ))
}

fn array(btf: &mut Btf, elem: TypeId, index: TypeId, nelems: u32) -> TypeId {
    btf.add_type(Type::new(
        0,
        TypeData::Array(Array {
            elem,
            index,
            nelems,
        }),
    ))
}

fn strukt(btf: &mut Btf, name: &str, size: u32, members: &[(&str, TypeId, u32)]) -> TypeId {
    let n = btf.add_str(name);
    let members: Vec<Member> = members
        .iter()
        .map(|&(m, ty, offset)| Member {
            name_off: btf.add_str(m),
            ty,
            offset,
        })
        .collect();
    btf.add_type(Type::new(
        n,
        TypeData::Struct {
            size,
            members: members.into(),
        },
    ))
}

/// The own structs left after dedup, by name.
fn own_structs(btf: &Btf) -> Vec<String> {
    btf.iter()
        .filter(|(_, t)| t.kind() == BTF_KIND_STRUCT)
        .map(|(_, t)| btf.name_of(t).expect("name").to_string())
        .collect()
}

/// Base: `struct s { int a[6]; struct u *u; }` as pahole 1.24 writes it
/// (flat array), `struct u` only declared. Split: the same `struct s` with
/// `int a[2][3]` nested (pahole >= 1.25), `struct u` defined;
/// `struct t { short a[2][6]; }` against the base's `short a[12]`, and a
/// `struct t { int a[2][3]; }` of the same size but other elements.
fn base_and_split() -> (Arc<Btf>, Btf) {
    let mut base = Btf::new();
    let b_int = int(&mut base, "int", 4);
    let b_short = int(&mut base, "short", 2);
    let b_flat = array(&mut base, b_int, b_int, 6);
    let u = base.add_str("u");
    let b_fwd = base.add_type(Type::new(u, TypeData::Fwd));
    let b_ptr = base.add_type(Type::new(0, TypeData::Ptr { ty: b_fwd }));
    strukt(&mut base, "s", 32, &[("a", b_flat, 0), ("u", b_ptr, 192)]);
    let b_short12 = array(&mut base, b_short, b_int, 12);
    strukt(&mut base, "t", 24, &[("a", b_short12, 0)]);
    let base = Arc::new(base);

    let mut split = Btf::new_split(base.clone());
    let s_int = int(&mut split, "int", 4);
    let s_short = int(&mut split, "short", 2);
    let inner = array(&mut split, s_int, s_int, 3);
    let outer = array(&mut split, inner, s_int, 2);
    let s_u = strukt(&mut split, "u", 4, &[("x", s_int, 0)]);
    let s_ptr = split.add_type(Type::new(0, TypeData::Ptr { ty: s_u }));
    let s_s = strukt(&mut split, "s", 32, &[("a", outer, 0), ("u", s_ptr, 192)]);
    split.add_type(Type::new(0, TypeData::Ptr { ty: s_s }));
    // 2 x 6 shorts against the base's 12: the same layout, taken too.
    let s_short6 = array(&mut split, s_short, s_int, 6);
    let s_short26 = array(&mut split, s_short6, s_int, 2);
    strukt(&mut split, "t", 24, &[("a", s_short26, 0)]);
    // Another element count over the same bytes: `int a[2][3]` against
    // the base's 12 shorts is not the same type, and stays.
    let s_int23 = array(&mut split, inner, s_int, 2);
    let t2 = split.add_str("t");
    let a = split.add_str("a");
    split.add_type(Type::new(
        t2,
        TypeData::Struct {
            size: 24,
            members: vec![Member {
                name_off: a,
                ty: s_int23,
                offset: 0,
            }]
            .into(),
        },
    ));
    (base, split)
}

#[test]
fn split_nest_takes_base_flat_array_and_fwd_layout() {
    let (_base, mut split) = base_and_split();
    assert_eq!(
        base_duplicates(&split).expect("walk").len(),
        4,
        "before dedup: int, short, s and the first t are copies"
    );
    dedup(&mut split, &DedupOptions::default()).expect("dedup");
    assert_eq!(
        base_duplicates(&split).expect("walk"),
        Vec::new(),
        "no base type is re-emitted"
    );
    // `u` is defined only in the split part; the `t` of int[2][3] is
    // another type than the base's `t` of short[12].
    assert_eq!(own_structs(&split), ["u", "t"]);
}
