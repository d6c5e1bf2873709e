//! Split dedup over a base that describes a C type in another way than the
//! split part: the split part's type takes the base's (see "the base's
//! representation" in dedup/mod.rs), and only where the layout is the same.
//! The oracle is the layout: [`btf::base_duplicates`] (the walk `btfkit
//! check` runs) must find no base type re-emitted, and types of another
//! layout must stay.

use std::sync::Arc;

use btf::base_duplicates::base_duplicates;
use btf::builder::{Builder, Field};
use btf::dedup::{dedup, DedupOptions};
use btf::format::{BTF_INT_SIGNED, BTF_KIND_STRUCT};
use btf::Btf;

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
fn base_and_split() -> Btf {
    let mut b = Builder::new();
    let b_int = b.add_int("int", 4, BTF_INT_SIGNED);
    let b_short = b.add_int("short", 2, BTF_INT_SIGNED);
    let b_flat = b.add_array(b_int, b_int, 6);
    let b_fwd = b.add_fwd("u", false);
    let b_ptr = b.add_ptr(b_fwd);
    b.add_struct(
        "s",
        32,
        &[Field::new("a", b_flat, 0), Field::new("u", b_ptr, 192)],
    );
    let b_short12 = b.add_array(b_short, b_int, 12);
    b.add_struct("t", 24, &[Field::new("a", b_short12, 0)]);
    let base = Arc::new(b.finish());

    let mut s = Builder::new_split(base);
    let s_int = s.add_int("int", 4, BTF_INT_SIGNED);
    let s_short = s.add_int("short", 2, BTF_INT_SIGNED);
    let inner = s.add_array(s_int, s_int, 3);
    let outer = s.add_array(inner, s_int, 2);
    let s_u = s.add_struct("u", 4, &[Field::new("x", s_int, 0)]);
    let s_ptr = s.add_ptr(s_u);
    let s_s = s.add_struct(
        "s",
        32,
        &[Field::new("a", outer, 0), Field::new("u", s_ptr, 192)],
    );
    s.add_ptr(s_s);
    // 2 x 6 shorts against the base's 12: the same layout, taken too.
    let s_short6 = s.add_array(s_short, s_int, 6);
    let s_short26 = s.add_array(s_short6, s_int, 2);
    s.add_struct("t", 24, &[Field::new("a", s_short26, 0)]);
    // Another element count over the same bytes: `int a[2][3]` against
    // the base's 12 shorts is not the same type, and stays.
    let s_int23 = s.add_array(inner, s_int, 2);
    s.add_struct("t", 24, &[Field::new("a", s_int23, 0)]);
    s.finish()
}

#[test]
fn split_nest_takes_base_flat_array_and_fwd_layout() {
    let mut split = base_and_split();
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

/// Base (pahole 1.24): one flat `int[6]` shared by `struct a` and
/// `struct b`, both in `struct top`. Split: `struct a` holds the nest
/// `int[2][3]` and `struct b` holds `second`, its own array of the same
/// 6 ints. `struct top` comes first (a compiler emits a struct before the
/// types of its members as often as after), so that one walk, top's,
/// meets the base's array twice, paired first with the nest.
fn shared_base_array(second: impl Fn(&mut Builder, u32) -> u32) -> Btf {
    let mut b = Builder::new();
    let b_int = b.add_int("int", 4, BTF_INT_SIGNED);
    let b_flat = b.add_array(b_int, b_int, 6);
    let b_a = b.add_struct("a", 24, &[Field::new("x", b_flat, 0)]);
    let b_b = b.add_struct("b", 24, &[Field::new("y", b_flat, 0)]);
    b.add_struct(
        "top",
        48,
        &[Field::new("a", b_a, 0), Field::new("b", b_b, 192)],
    );
    let base = Arc::new(b.finish());

    let mut s = Builder::new_split(base);
    let s_int = s.add_int("int", 4, BTF_INT_SIGNED);
    let inner = s.add_array(s_int, s_int, 3);
    let nest = s.add_array(inner, s_int, 2);
    let other = second(&mut s, s_int);
    // The ids `struct a` and `struct b` get right after `struct top`.
    let top = s.btf().type_count();
    let (s_a, s_b) = (top + 1, top + 2);
    s.add_struct(
        "top",
        48,
        &[Field::new("a", s_a, 0), Field::new("b", s_b, 192)],
    );
    assert_eq!(s.add_struct("a", 24, &[Field::new("x", nest, 0)]), s_a);
    assert_eq!(s.add_struct("b", 24, &[Field::new("y", other, 0)]), s_b);
    s.finish()
}

#[test]
fn base_flat_array_paired_with_a_nest_takes_another_array_of_its_shape() {
    let flat = |s: &mut Builder, int| s.add_array(int, int, 6);
    let other_nest = |s: &mut Builder, int| {
        let inner = s.add_array(int, int, 2);
        s.add_array(inner, int, 3)
    };
    for (what, mut split) in [
        ("flat int[6]", shared_base_array(flat)),
        ("nest int[3][2]", shared_base_array(other_nest)),
    ] {
        assert_eq!(
            base_duplicates(&split).expect("walk").len(),
            4,
            "{what}: before dedup, int, a, b and top are copies"
        );
        dedup(&mut split, &DedupOptions::default()).expect("dedup");
        assert_eq!(
            base_duplicates(&split).expect("walk"),
            Vec::new(),
            "{what}: no base type is re-emitted"
        );
        assert_eq!(
            own_structs(&split),
            Vec::<String>::new(),
            "{what}: a, b and top are the base's"
        );
    }
}

#[test]
fn a_base_enum_declaration_is_not_duplicated_by_the_modules_definition() {
    let mut b = Builder::new();
    b.add_enum("e", 4, &[]);
    b.add_enum("f", 4, &[("F", 1)]);
    let base = Arc::new(b.finish());
    let mut s = Builder::new_split(base);
    // The base only declares `enum e`: the module's definition is its own.
    s.add_enum("e", 4, &[("A", 1), ("B", 2)]);
    // The base defines `enum f`: the module's copy is a duplicate.
    s.add_enum("f", 4, &[("F", 1)]);
    let dups = base_duplicates(&s.finish()).expect("walk");
    let names: Vec<&str> = dups.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["f"]);
}
