//! Dedup against its oracle: libbpf 1.1's btf__dedup, through the small C
//! program in tests/oracle/libbpf_dedup.c, built here with the machine's cc.
//!
//! Each comparison builds one BTF in which the same types appear many times
//! (the oracle concatenates inputs with btf__add_btf), dedups it with libbpf
//! and with us, and requires the same bytes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use btf::dedup::{dedup, DedupOptions};
use btf::format::*;
use btf::{Btf, Type, TypeData};
use testkit::{run_ok, Fixture};

mod common;
use common::libbpf_oracle::{self, assert_same, concat};

/// Builds the oracle in `fx`, or skips (no cc, no libbpf headers).
fn oracle(fx: &Fixture) -> Option<PathBuf> {
    testkit::tool_or_skip("cc", "gcc")?;
    if !Path::new("/usr/include/bpf/btf.h").is_file() {
        testkit::skip("libbpf headers are missing: apt-get install libbpf-dev");
        return None;
    }
    Some(libbpf_oracle::build(fx, None, "libbpf_dedup"))
}

/// libbpf's dedup of `input`, as bytes.
fn libbpf_dedup(oracle: &Path, input: &Path, base: Option<&Path>) -> Vec<u8> {
    libbpf_oracle::try_dedup(oracle, input, base).expect("libbpf's dedup")
}

/// Our dedup of `input`, as bytes.
fn our_dedup(input: &Path, base: Option<&Path>) -> Vec<u8> {
    let mut btf = btf::load_file(input, base).expect("load the concatenated BTF");
    dedup(&mut btf, &DedupOptions::default()).expect("dedup");
    btf.to_bytes()
}

fn compare(oracle: &Path, input: &Path, base: Option<&Path>, what: &str) {
    let theirs = libbpf_dedup(oracle, input, base);
    let ours = our_dedup(input, base);
    assert_same(&ours, &theirs, what);
    // Same input, same bytes: a second run must not differ in any way.
    assert_eq!(our_dedup(input, base), ours, "{what}: a second run differs");
}

/// Small C files whose types overlap in every way dedup cares about: the
/// same types in several CUs, structs only forward-declared in some CUs
/// (libbpf's own example), forward-declared enums, cycles, bitfields,
/// anonymous types, different structs under one name, 64-bit enums.
const FIXTURES: &[(&str, &str)] = &[
    (
        "common.h",
        r#"
typedef unsigned long u64;
typedef unsigned int u32;
typedef u32 my_u32;
struct list_head { struct list_head *next, *prev; };
struct flags { unsigned int a : 3, b : 5; int c; unsigned long long d : 40; };
union value { int i; float f; double d; long long ll; struct { short lo, hi; } parts; };
enum colour { RED, GREEN = 5, BLUE = -1 };
enum big { BIG_A = 1, BIG_B = 0x1234567890ULL };
typedef int (*callback_t)(const volatile char *restrict, union value *);
struct node {
    struct list_head list;
    struct flags fl;
    union value val[4];
    callback_t cb;
    const struct node *const parent;
    enum colour colour;
    enum big big;
    my_u32 count;
    char name[16][2];
    struct { int x, y; } point;
    int tail[];
};
"#,
    ),
    (
        "cu1.c",
        r#"
#include "common.h"
struct S;
enum fwd_enum;
struct A { int a; struct A *self; struct S *parent; };
struct B;
struct S { struct A *a_ptr; struct B *b_ptr; };
struct dup { int x; };
int f1(struct node *n, struct S *s, enum fwd_enum *e) { return n->count + (s != 0) + (e != 0); }
long f_same(struct list_head *l) { return (long)l->next; }
"#,
    ),
    (
        "cu2.c",
        r#"
#include "common.h"
struct S;
struct A;
struct B { int b; struct B *self; struct S *parent; };
struct S { struct A *a_ptr; struct B *b_ptr; };
enum fwd_enum { FE_A, FE_B };
struct dup { long y; char z; };
int f2(struct node *n, struct B *b, enum fwd_enum e, struct dup *d) { return n->fl.c + b->b + e + d->z; }
long f_same(struct list_head *l) { return (long)l->prev; }
"#,
    ),
    (
        "cu3.c",
        r#"
#include "common.h"
struct opaque;
struct node;
struct holder { struct opaque *o; struct node *n; int (*fn)(struct holder *, ...); };
struct A { int a; struct A *self; struct S *parent; };
struct S;
u64 f3(struct holder *h, volatile u64 *p, const char **argv) { return *p + (h->o != 0) + (argv != 0); }
"#,
    ),
    (
        "cu4.c",
        r#"
#include "common.h"
struct opaque { int secret; struct opaque *next; };
enum fwd_enum { FE_A, FE_B };
enum fwd_enum *g4;
struct holder { struct opaque *o; struct node *n; int (*fn)(struct holder *, ...); };
int f4(struct opaque *o, struct node *n, enum fwd_enum *e, struct holder *h) {
    return o->secret + n->point.x + (e != 0) + (h != 0);
}
"#,
    ),
    (
        // Another program's idea of the same names: cu3's forward enum and
        // its `holder` (whose `opaque` is only declared) are compatible with
        // both this CU's and cu4's, and the first candidate in libbpf's
        // order must win.
        "cu5.c",
        r#"
#include "common.h"
struct opaque { long other; };
struct holder { struct opaque *o; struct node *n; int (*fn)(struct holder *, ...); };
enum fwd_enum { FE_C = 7 };
int f5(struct holder *h, enum fwd_enum e) { return h->o->other + e; }
"#,
    ),
];

#[test]
fn dedup_matches_libbpf_fixture_objects() {
    let fx = Fixture::new();
    let Some(oracle) = oracle(&fx) else { return };
    let Some(pahole) = testkit::tool_or_skip("pahole", "dwarves") else {
        return;
    };
    for (name, text) in FIXTURES {
        fx.write(name, text);
    }
    let mut objects = Vec::new();
    for opt in ["-O0", "-O2"] {
        for (name, _) in FIXTURES.iter().filter(|(n, _)| n.ends_with(".c")) {
            let obj = format!("{}{opt}.o", name.trim_end_matches(".c"));
            let o = fx.cc(&obj, &[name], &["-g", opt, "-c"]);
            run_ok(Command::new(&pahole).arg("-J").arg(&o));
            // Each object's own BTF is readable by us, and pahole already
            // deduplicated it: dedup must leave its types alone.
            btf::load_file(&o, None).expect("pahole wrote a .BTF section");
            objects.push(o);
        }
    }
    let all: Vec<&Path> = objects.iter().map(PathBuf::as_path).collect();
    // All objects, then again in another order, so that every type is
    // both a duplicate of an earlier one and the first of its kind.
    let mut twice = all.clone();
    twice.extend(all.iter().rev());
    let input = fx.path("fixtures.btf");
    concat(&oracle, &input, None, &twice);
    compare(&oracle, &input, None, "fixture objects");

    // As pahole does it: types added to a new BTF, then deduplicated in
    // the same process, where libbpf keeps the string section it built.
    let in_process = fx.path("in-process.libbpf");
    let mut cmd = Command::new(&oracle);
    cmd.arg("concat-dedup").arg(&in_process).args(&twice);
    run_ok(&mut cmd);
    let mut ours = btf::load_file(&input, None).expect("load");
    let keep = DedupOptions {
        keep_strings: true,
        ..Default::default()
    };
    dedup(&mut ours, &keep).expect("dedup keeping strings");
    assert_same(
        &ours.to_bytes(),
        &std::fs::read(&in_process).expect("read"),
        "fixture objects, strings kept",
    );
    for (i, o) in all.iter().enumerate() {
        let single = fx.path(&format!("single{i}.btf"));
        concat(&oracle, &single, None, &[o]);
        compare(&oracle, &single, None, &o.display().to_string());
    }
}

#[test]
fn dedup_matches_libbpf_vmlinux_twice() {
    let fx = Fixture::new();
    let Some(oracle) = oracle(&fx) else { return };
    let vmlinux = Path::new(btf::SYSFS_VMLINUX);
    if !vmlinux.is_file() {
        return testkit::skip("no /sys/kernel/btf/vmlinux (kernel without CONFIG_DEBUG_INFO_BTF)");
    }
    let input = fx.path("vmlinux-twice.btf");
    concat(&oracle, &input, None, &[vmlinux, vmlinux]);
    compare(&oracle, &input, None, "vmlinux twice");
}

#[test]
fn dedup_matches_libbpf_debian_and_running_vmlinux() {
    let fx = Fixture::new();
    let Some(oracle) = oracle(&fx) else { return };
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let running = Path::new(btf::SYSFS_VMLINUX);
    if !running.is_file() {
        return testkit::skip("no /sys/kernel/btf/vmlinux (kernel without CONFIG_DEBUG_INFO_BTF)");
    }
    // Two different kernels: many types equal, many similar but not equal.
    let input = fx.path("debian-and-running.btf");
    concat(&oracle, &input, None, &[&k.vmlinux, running]);
    compare(
        &oracle,
        &input,
        None,
        "Debian's vmlinux + the running vmlinux",
    );
}

#[test]
fn dedup_split_matches_libbpf_module() {
    let fx = Fixture::new();
    let Some(oracle) = oracle(&fx) else { return };
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let base_raw = fx.path("base.btf");
    std::fs::write(
        &base_raw,
        btf::load_file(&k.vmlinux, None)
            .expect("Debian's BTF")
            .to_bytes(),
    )
    .expect("write the base");
    let modules = [
        "kernel/net/sunrpc/sunrpc.ko",
        "kernel/net/bridge/bridge.ko",
        "kernel/net/vmw_vsock/vsock.ko",
    ];
    let mut found = 0;
    for m in modules {
        let ko = k.image_modules.join(m);
        if !ko.is_file() {
            continue;
        }
        found += 1;
        let input = fx.path(&format!(
            "{}-twice.btf",
            ko.file_stem().unwrap_or_default().to_string_lossy()
        ));
        concat(&oracle, &input, Some(&base_raw), &[&ko, &ko]);
        compare(&oracle, &input, Some(&base_raw), m);
        // The shipped module alone: already deduplicated against its base
        // by Debian's build, it must come back the same size.
        let single = fx.path("single.btf");
        concat(&oracle, &single, Some(&base_raw), &[&ko]);
        compare(&oracle, &single, Some(&base_raw), m);
    }
    assert!(
        found > 0,
        "none of {modules:?} under {}",
        k.image_modules.display()
    );
}

/// Two CUs' worth of one static function: `int foo(int)`, tagged with
/// `tags[cu]` (DECL_TAG names, component_idx -1) in each.
fn two_cus_of_foo(tags: [&str; 2]) -> Btf {
    let mut btf = Btf::new();
    for tag in tags {
        let int = btf.add_str("int");
        let x = btf.add_str("x");
        let name_foo = btf.add_str("foo");
        let int_id = btf.add_type(Type::new(
            int,
            TypeData::Int {
                size: 4,
                encoding: BTF_INT_SIGNED,
                offset: 0,
                bits: 32,
            },
        ));
        let proto = btf.add_type(Type::new(
            0,
            TypeData::FuncProto {
                ret: int_id,
                params: vec![btf::Param {
                    name_off: x,
                    ty: int_id,
                }]
                .into(),
            },
        ));
        let func = btf.add_type(Type::new(
            name_foo,
            TypeData::Func {
                proto,
                linkage: BTF_FUNC_STATIC,
            },
        ));
        let name = btf.add_str(tag);
        btf.add_type(Type::new(
            name,
            TypeData::DeclTag {
                ty: func,
                component_idx: -1,
            },
        ));
    }
    btf
}

fn count_kind(btf: &Btf, kind: btf::Kind) -> usize {
    btf.iter().filter(|(_, t)| t.kind() == kind).count()
}

/// The tag names and the FUNC each points at.
fn tag_targets(btf: &Btf) -> Vec<(String, u32)> {
    btf.iter()
        .filter_map(|(_, t)| match t.data {
            TypeData::DeclTag { ty, .. } => {
                Some((btf.name_of(t).expect("tag name").to_owned(), ty))
            }
            _ => None,
        })
        .collect()
}

/// btfkit's one departure from libbpf (see the comment on top of dedup):
/// FUNCs tied to different addresses stay apart, and both tags survive.
#[test]
fn dedup_keeps_distinct_decl_tags_on_funcs() {
    let mut btf = two_cus_of_foo(["addr=0xffffffff81000100", "addr=0xffffffff81000200"]);
    dedup(&mut btf, &DedupOptions::default()).expect("dedup");
    assert_eq!(count_kind(&btf, BTF_KIND_INT), 1);
    assert_eq!(count_kind(&btf, BTF_KIND_FUNC_PROTO), 1);
    assert_eq!(
        count_kind(&btf, BTF_KIND_FUNC),
        2,
        "the two instances must stay two FUNCs"
    );
    let tags = tag_targets(&btf);
    assert_eq!(tags.len(), 2, "both address tags survive: {tags:?}");
    assert_ne!(tags[0].1, tags[1].1, "each tag on its own FUNC: {tags:?}");
    for (_, target) in &tags {
        let t = btf.type_by_id(*target).expect("tag target exists");
        assert_eq!(t.kind(), BTF_KIND_FUNC);
        assert_eq!(btf.name_of(t).expect("name"), "foo");
    }

    // The same address twice is the same instance: one FUNC, one tag.
    let mut same = two_cus_of_foo(["addr=0xffffffff81000100", "addr=0xffffffff81000100"]);
    dedup(&mut same, &DedupOptions::default()).expect("dedup");
    assert_eq!(count_kind(&same, BTF_KIND_FUNC), 1);
    assert_eq!(tag_targets(&same).len(), 1);

    // Tags that are not addresses keep libbpf's behaviour exactly: the
    // FUNCs merge and both tags point at the one FUNC.
    let fx = Fixture::new();
    let Some(oracle) = oracle(&fx) else { return };
    for tags in [["bpf_kfunc", "bpf_fastcall"], ["addr=0x1", "addr=0x2"]] {
        let input = fx.path("tagged.btf");
        std::fs::write(&input, two_cus_of_foo(tags).to_bytes()).expect("write");
        let theirs = libbpf_dedup(&oracle, &input, None);
        let ours = our_dedup(&input, None);
        if tags[0].starts_with("addr=") {
            assert_ne!(ours, theirs, "libbpf merges the tagged FUNCs; we must not");
            let libbpf = Btf::parse(&theirs).expect("libbpf's output parses");
            assert_eq!(count_kind(&libbpf, BTF_KIND_FUNC), 1);
            assert_eq!(tag_targets(&libbpf).len(), 2);
        } else {
            assert_same(&ours, &theirs, "FUNCs with non-address tags");
        }
    }
}

#[test]
fn dedup_split_over_in_memory_base() {
    // A split BTF whose types all exist in its base dedups to nothing.
    let base = Arc::new(two_cus_of_foo(["bpf_kfunc", "bpf_kfunc"]));
    let mut deduped_base = (*base).clone();
    dedup(&mut deduped_base, &DedupOptions::default()).expect("dedup base");
    let base = Arc::new(deduped_base);
    let mut split = Btf::new_split(base.clone());
    let int = split.add_str("int");
    split.add_type(Type::new(
        int,
        TypeData::Int {
            size: 4,
            encoding: BTF_INT_SIGNED,
            offset: 0,
            bits: 32,
        },
    ));
    let long = split.add_str("long");
    split.add_type(Type::new(
        long,
        TypeData::Int {
            size: 8,
            encoding: BTF_INT_SIGNED,
            offset: 0,
            bits: 64,
        },
    ));
    dedup(&mut split, &DedupOptions::default()).expect("dedup split");
    assert_eq!(split.own_types().len(), 1, "only 'long' is new");
    assert_eq!(split.start_id(), base.type_count());
    let (_, t) = split.iter().next().expect("one type");
    assert_eq!(split.name_of(t).expect("name"), "long");
}

#[test]
fn dedup_rejects_bad_ids_without_panicking() {
    // A pointer to a type that does not exist.
    let mut btf = Btf::new();
    btf.add_type(Type::new(0, TypeData::Ptr { ty: 7 }));
    let err = dedup(&mut btf, &DedupOptions::default()).expect_err("id 7 is out of range");
    assert!(err.to_string().contains("[1]"), "names the type: {err}");

    // A cycle of reference types that passes through no struct.
    let mut btf = Btf::new();
    btf.add_type(Type::new(0, TypeData::Const { ty: 2 }));
    btf.add_type(Type::new(0, TypeData::Ptr { ty: 1 }));
    let before = btf.to_bytes();
    let err = dedup(&mut btf, &DedupOptions::default()).expect_err("a loop");
    assert!(err.to_string().contains("cycle"), "{err}");
    assert_eq!(
        btf.to_bytes(),
        before,
        "a failed dedup leaves the BTF unchanged"
    );

    // A struct that embeds itself, twice: impossible in C, must not hang.
    let mut btf = Btf::new();
    for _ in 0..2 {
        let s = btf.add_str("s");
        let m = btf.add_str("m");
        let id = btf.type_count();
        btf.add_type(Type::new(
            s,
            TypeData::Struct {
                size: 4,
                members: vec![btf::Member {
                    name_off: m,
                    ty: id,
                    offset: 0,
                }]
                .into(),
            },
        ));
    }
    dedup(&mut btf, &DedupOptions::default()).expect("self-embedding structs dedup");
    assert_eq!(btf.own_types().len(), 1);
}

fn add_int(btf: &mut Btf, name: &str, size: u32) -> u32 {
    let name = btf.add_str(name);
    btf.add_type(Type::new(
        name,
        TypeData::Int {
            size,
            encoding: BTF_INT_SIGNED,
            offset: 0,
            bits: (size * 8) as u8,
        },
    ))
}

fn add_enum(btf: &mut Btf, name: &str, values: &[(&str, u32)]) -> u32 {
    let name = btf.add_str(name);
    let values = values
        .iter()
        .map(|&(n, val)| btf::EnumValue {
            name_off: btf.add_str(n),
            val,
        })
        .collect();
    btf.add_type(Type::new(name, TypeData::Enum { size: 4, values }))
}

/// A struct `name` with one pointer member `o` to `target`.
fn add_holder(btf: &mut Btf, name: &str, target: u32) -> u32 {
    let ptr = btf.add_type(Type::new(0, TypeData::Ptr { ty: target }));
    let name = btf.add_str(name);
    let o = btf.add_str("o");
    btf.add_type(Type::new(
        name,
        TypeData::Struct {
            size: 8,
            members: vec![btf::Member {
                name_off: o,
                ty: ptr,
                offset: 0,
            }]
            .into(),
        },
    ))
}

/// One small BTF in which a forward enum and a forward struct are each
/// compatible with two canonical types of their name, with `fill[i]`
/// unrelated INTs at four places in between.
fn ambiguous_fwds(fill: [u32; 4], fwd_first: bool) -> Btf {
    let mut btf = Btf::new();
    let filler = |btf: &mut Btf, n: u32, tag: &str| {
        for i in 0..n {
            add_int(btf, &format!("f{tag}{i}"), 4);
        }
    };
    let int = add_int(&mut btf, "int", 4);
    let long = add_int(&mut btf, "long", 8);
    filler(&mut btf, fill[0], "a");
    // Two full enums and a forward one of the same name.
    if fwd_first {
        let fwd = add_enum(&mut btf, "e", &[]);
        btf.add_type(Type::new(0, TypeData::Ptr { ty: fwd }));
    }
    add_enum(&mut btf, "e", &[("X", 1)]);
    filler(&mut btf, fill[1], "b");
    add_enum(&mut btf, "e", &[("Y", 2)]);
    filler(&mut btf, fill[2], "c");
    let fwd = add_enum(&mut btf, "e", &[]);
    btf.add_type(Type::new(0, TypeData::Ptr { ty: fwd }));
    // Two different `opaque`s, each behind a `holder`, and a third `holder`
    // whose `opaque` is only declared: equivalent to both.
    let o_name = btf.add_str("opaque");
    for (member, ty, size) in [("a", int, 4), ("b", long, 8)] {
        let m = btf.add_str(member);
        let o = btf.add_type(Type::new(
            o_name,
            TypeData::Struct {
                size,
                members: vec![btf::Member {
                    name_off: m,
                    ty,
                    offset: 0,
                }]
                .into(),
            },
        ));
        add_holder(&mut btf, "holder", o);
        filler(&mut btf, fill[3], member);
    }
    let fwd = btf.add_type(Type::new(o_name, TypeData::Fwd));
    add_holder(&mut btf, "holder", fwd);
    btf
}

/// When a forward declaration is compatible with several canonical types,
/// the first candidate in libbpf's hash map order wins, and that order
/// depends on when the map grew: the cases put the growths everywhere.
#[test]
fn dedup_matches_libbpf_when_candidate_order_decides() {
    let fx = Fixture::new();
    let Some(oracle) = oracle(&fx) else { return };
    let input = fx.path("order.btf");
    for a in 0..14 {
        for b in [0, 3] {
            for c in [0, 2, 5] {
                for d in [0, 1, 4] {
                    let btf = ambiguous_fwds([a, b, c, d], a % 2 == 1);
                    std::fs::write(&input, btf.to_bytes()).expect("write");
                    let theirs = libbpf_dedup(&oracle, &input, None);
                    let ours = our_dedup(&input, None);
                    assert_same(&ours, &theirs, &format!("fillers {a} {b} {c} {d}"));
                }
            }
        }
    }
}

/// Bad input is an error or a result, never a panic or a hang: references
/// scrambled at random (within range, so that every kind meets every kind:
/// pointers to variables, structs embedding themselves, loops of typedefs).
#[test]
fn dedup_survives_scrambled_references() {
    let mut original = ambiguous_fwds([1, 2, 3, 1], true);
    // One of every other kind, referring to type 1 until scrambled.
    let name = original.add_str("v");
    let var = original.add_type(Type::new(
        name,
        TypeData::Var {
            ty: 1,
            linkage: BTF_VAR_GLOBAL_ALLOCATED,
        },
    ));
    let sec = original.add_str(".data");
    original.add_type(Type::new(
        sec,
        TypeData::Datasec {
            size: 4,
            vars: vec![btf::VarSecinfo {
                ty: var,
                offset: 0,
                size: 4,
            }]
            .into(),
        },
    ));
    let proto = original.add_type(Type::new(
        0,
        TypeData::FuncProto {
            ret: 1,
            params: vec![btf::Param { name_off: 0, ty: 1 }].into(),
        },
    ));
    let func = original.add_type(Type::new(
        name,
        TypeData::Func {
            proto,
            linkage: BTF_FUNC_STATIC,
        },
    ));
    let tag = original.add_str("addr=0x10");
    original.add_type(Type::new(
        tag,
        TypeData::DeclTag {
            ty: func,
            component_idx: -1,
        },
    ));
    original.add_type(Type::new(
        0,
        TypeData::Array(btf::Array {
            elem: 1,
            index: 1,
            nelems: 2,
        }),
    ));
    for data in [
        TypeData::Typedef { ty: 1 },
        TypeData::Const { ty: 1 },
        TypeData::Volatile { ty: 1 },
        TypeData::TypeTag { ty: 1 },
    ] {
        let name = original.add_str("t");
        original.add_type(Type::new(name, data));
    }
    let count = original.type_count();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut ok, mut failed) = (0, 0);
    for _ in 0..5000 {
        let mut types: Vec<Type> = original.own_types().to_vec();
        for _ in 0..1 + next() % 4 {
            let i = (next() % types.len() as u64) as usize;
            let mut refs = 0;
            types[i].for_each_ref(|_| refs += 1);
            if refs == 0 {
                continue;
            }
            let which = next() % refs;
            let target = (next() % u64::from(count)) as u32;
            let mut k = 0;
            types[i].for_each_ref_mut(|r| {
                if k == which {
                    *r = target;
                }
                k += 1;
            });
        }
        let mut btf = original.clone();
        btf.set_contents(types, original.string_section().to_vec());
        match dedup(&mut btf, &DedupOptions::default()) {
            Ok(()) => ok += 1,
            Err(_) => failed += 1,
        }
    }
    assert!(ok > 0 && failed > 0, "{ok} deduplicated, {failed} refused");
}

#[test]
fn dedup_keep_strings_leaves_the_string_section_alone() {
    let mut btf = Btf::new();
    // Not referenced by any type, and out of reference order.
    btf.add_str("unused");
    btf.add_str("long");
    add_int(&mut btf, "int", 4);
    add_int(&mut btf, "int", 4);
    add_int(&mut btf, "long", 8);
    let strings = btf.string_section().to_vec();
    let mut kept = btf.clone();
    dedup(
        &mut kept,
        &DedupOptions {
            keep_strings: true,
            ..Default::default()
        },
    )
    .expect("dedup");
    assert_eq!(kept.string_section(), &strings[..]);
    assert_eq!(kept.own_types().len(), 2);
    // Without the option, pass 1 drops "unused" and orders by reference.
    dedup(&mut btf, &DedupOptions::default()).expect("dedup");
    assert_eq!(btf.string_section(), b"\0int\0long\0");
}
