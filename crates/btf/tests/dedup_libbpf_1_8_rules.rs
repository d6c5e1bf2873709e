//! Dedup against the newest libbpf a package registry ships (1.7.0, the
//! libbpf that crates.io's libbpf-sys vendors), the oracle for what libbpf
//! 1.1 refuses: reference cycles through typedefs, as Go binaries have them
//! (`type F func() F`). scripts/fetch-libbpf.sh builds it into the cache;
//! the small C program of tests/oracle/libbpf_dedup.c is linked against it.
//! Our rules follow libbpf 1.8's source (`Rules::Libbpf1_8`); where 1.8
//! changed more than 1.7 (the base-hash fix), the test checks the effect.
//!
//! Each input is written with the builder as several "compilation units"
//! that repeat the same cyclic types in different orders, concatenated by
//! the oracle (btf__add_btf), and deduplicated by libbpf and by us: the
//! bytes must be the same. Debian's libbpf 1.1 must refuse the same input,
//! so that the test really is about the new rule.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use btf::dedup::{dedup, DedupOptions, Rules};
use btf::format::*;
use btf::{Btf, Member, Param, Type, TypeData, TypeId};
use testkit::Fixture;

mod common;
use common::libbpf_oracle::{self, assert_same, concat, try_dedup as libbpf_dedup};

/// The newest libbpf's oracle, or a skip naming the script that builds it.
fn oracle_new(fx: &Fixture) -> Option<PathBuf> {
    testkit::tool_or_skip("cc", "gcc")?;
    let cache = std::env::var_os("BTFKIT_CACHE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("btfkit")))
        .or_else(|| std::env::var_os("HOME").map(|d| PathBuf::from(d).join(".cache/btfkit")))?;
    let dir = cache.join("libbpf-new");
    if !dir.join("lib/libbpf.a").is_file() {
        testkit::skip("the newest libbpf is not built: run scripts/fetch-libbpf.sh");
        return None;
    }
    Some(libbpf_oracle::build(fx, Some(&dir), "libbpf_dedup_new"))
}

/// The running kernel's BTF, or a skip.
fn running_vmlinux() -> Option<PathBuf> {
    let vmlinux = PathBuf::from(btf::SYSFS_VMLINUX);
    if !vmlinux.is_file() {
        testkit::skip("no /sys/kernel/btf/vmlinux (kernel without CONFIG_DEBUG_INFO_BTF)");
        return None;
    }
    Some(vmlinux)
}

fn int(btf: &mut Btf, name: &str, size: u32) -> TypeId {
    let n = btf.add_str(name);
    btf.add_type(Type::new(
        n,
        TypeData::Int {
            size,
            encoding: BTF_INT_SIGNED,
            offset: 0,
            bits: (size * 8) as u8,
        },
    ))
}

fn typedef(btf: &mut Btf, name: &str, ty: TypeId) -> TypeId {
    let n = btf.add_str(name);
    btf.add_type(Type::new(n, TypeData::Typedef { ty }))
}

fn ptr(btf: &mut Btf, ty: TypeId) -> TypeId {
    btf.add_type(Type::new(0, TypeData::Ptr { ty }))
}

fn proto(btf: &mut Btf, ret: TypeId, params: &[TypeId]) -> TypeId {
    let params = params.iter().map(|&ty| Param { name_off: 0, ty }).collect();
    btf.add_type(Type::new(0, TypeData::FuncProto { ret, params }))
}

/// Sets the type a TYPEDEF names, once the types it reaches exist.
fn close(btf: &mut Btf, td: TypeId, to: TypeId) {
    if let Some(TypeData::Typedef { ty }) = btf.type_by_id_mut(td).map(|t| &mut t.data) {
        *ty = to;
    }
}

/// One Go-like compilation unit. `order` shuffles which cycle is written
/// first, so that each unit's ids differ:
///
/// - `main.F`: typedef -> PTR -> FUNC_PROTO returning `main.F` (Go's
///   `type F func() F`; Go func values are pointers);
/// - `main.G`: typedef -> FUNC_PROTO returning `main.G` directly;
/// - `main.A` / `main.B`: typedef -> PTR -> typedef -> PTR -> back
///   (`type A *B; type B *A`);
/// - `main.S`: a struct with fields of those types, and a FUNC over it.
fn go_unit(order: usize) -> Btf {
    let mut btf = Btf::new();
    let i64_ = int(&mut btf, "int", 8);
    let mut f = 0;
    let mut g = 0;
    let mut a = 0;
    let mut b = 0;
    for step in 0..3 {
        match (step + order) % 3 {
            0 => {
                f = typedef(&mut btf, "main.F", 0);
                let p = proto(&mut btf, f, &[i64_]);
                let pp = ptr(&mut btf, p);
                close(&mut btf, f, pp);
            }
            1 => {
                g = typedef(&mut btf, "main.G", 0);
                let p = proto(&mut btf, g, &[]);
                close(&mut btf, g, p);
            }
            _ => {
                a = typedef(&mut btf, "main.A", 0);
                b = typedef(&mut btf, "main.B", 0);
                let pa = ptr(&mut btf, a);
                let pb = ptr(&mut btf, b);
                close(&mut btf, a, pb);
                close(&mut btf, b, pa);
            }
        }
    }
    let fields = [("f", f, 0), ("a", a, 64), ("n", i64_, 128)];
    let members = fields
        .iter()
        .map(|&(name, ty, offset)| Member {
            name_off: btf.add_str(name),
            ty,
            offset,
        })
        .collect();
    let n = btf.add_str("main.S");
    let s = btf.add_type(Type::new(n, TypeData::Struct { size: 24, members }));
    let ps = ptr(&mut btf, s);
    let p = proto(&mut btf, g, &[ps, b]);
    let n = btf.add_str("main.use");
    btf.add_type(Type::new(
        n,
        TypeData::Func {
            proto: p,
            linkage: BTF_FUNC_GLOBAL,
        },
    ));
    btf
}

fn write_units(fx: &Fixture, units: &[Btf], stem: &str) -> Vec<PathBuf> {
    units
        .iter()
        .enumerate()
        .map(|(i, u)| {
            let p = fx.path(&format!("{stem}{i}.btf"));
            std::fs::write(&p, u.to_bytes()).expect("write a unit");
            p
        })
        .collect()
}

fn our_dedup(input: &Path, base: Option<&Path>, rules: Rules) -> Vec<u8> {
    let mut btf = btf::load_file(input, base).expect("load the concatenated BTF");
    let opts = DedupOptions {
        rules,
        ..Default::default()
    };
    dedup(&mut btf, &opts).expect("dedup");
    btf.to_bytes()
}

/// Go's recursive typedefs: libbpf 1.1 refuses them, libbpf 1.7 takes
/// them, and so do we, by default (falling back to 1.8's rules) and when
/// asked for 1.8's rules, with libbpf 1.7's bytes. `dedup_owned` too.
#[test]
fn dedup_recursive_typedefs_matches_libbpf_1_7() {
    let fx = Fixture::new();
    let Some(oracle) = oracle_new(&fx) else {
        return;
    };
    let units: Vec<Btf> = (0..3).chain(0..3).map(go_unit).collect();
    let paths = write_units(&fx, &units, "go");
    let input = fx.path("go.btf");
    concat(&oracle, &input, None, &paths);
    let theirs = libbpf_dedup(&oracle, &input, None).expect("libbpf 1.7 deduplicates it");
    assert_same(
        &our_dedup(&input, None, Rules::Libbpf1_8),
        &theirs,
        "Go typedef cycles, 1.8 rules",
    );
    assert_same(
        &our_dedup(&input, None, Rules::Libbpf1_1),
        &theirs,
        "Go typedef cycles, default rules falling back",
    );
    let owned = btf::dedup::dedup_owned(
        btf::load_file(&input, None).expect("load"),
        &DedupOptions::default(),
    )
    .expect("dedup_owned");
    assert_same(&owned.to_bytes(), &theirs, "Go typedef cycles, dedup_owned");
    // Each cycle once: F, G, A, B, S and the rest of one unit.
    let out = Btf::parse(&theirs).expect("parse");
    assert_eq!(out.own_types().len(), go_unit(0).own_types().len());

    // The refusal this is about, where libbpf-dev 1.1 is installed.
    if Path::new("/usr/include/bpf/btf.h").is_file() {
        let old = libbpf_oracle::build(&fx, None, "libbpf_dedup_1_1");
        let err = libbpf_dedup(&old, &input, None).expect_err("libbpf 1.1 refuses cycles");
        assert!(!err.is_empty());
    }
}

/// libbpf 1.8's rules on ordinary C types (pahole's fixture objects are in
/// dedup_libbpf.rs; here the typedef-heavy part of them, built directly):
/// typedefs of typedefs, typedefs of structs only declared in some units,
/// typedef'd function pointers, the same typedef name for two types.
#[test]
fn dedup_c_typedefs_by_1_8_rules_matches_libbpf_1_7() {
    let fx = Fixture::new();
    let Some(oracle) = oracle_new(&fx) else {
        return;
    };
    let unit = |variant: u32| {
        let mut btf = Btf::new();
        let u32_ = int(&mut btf, "unsigned int", 4);
        let u32_t = typedef(&mut btf, "u32", u32_);
        let my = typedef(&mut btf, "my_u32", u32_t);
        let n = btf.add_str("node");
        let fwd_or_struct = if variant % 2 == 0 {
            btf.add_type(Type::new(n, TypeData::Fwd))
        } else {
            let members = vec![Member {
                name_off: btf.add_str("count"),
                ty: my,
                offset: 0,
            }];
            btf.add_type(Type::new(
                n,
                TypeData::Struct {
                    size: 4,
                    members: members.into(),
                },
            ))
        };
        let node_t = typedef(&mut btf, "node_t", fwd_or_struct);
        let pn = ptr(&mut btf, node_t);
        let cb = proto(&mut btf, my, &[pn]);
        let pcb = ptr(&mut btf, cb);
        typedef(&mut btf, "callback_t", pcb);
        // Same name, another type in every third unit.
        let other = if variant % 3 == 2 { my } else { u32_t };
        typedef(&mut btf, "word", other);
        btf
    };
    let units: Vec<Btf> = (0..6).map(unit).collect();
    let paths = write_units(&fx, &units, "c");
    let input = fx.path("c.btf");
    concat(&oracle, &input, None, &paths);
    let theirs = libbpf_dedup(&oracle, &input, None).expect("libbpf 1.7");
    assert_same(
        &our_dedup(&input, None, Rules::Libbpf1_8),
        &theirs,
        "C typedefs, 1.8 rules",
    );
}

/// Split BTF by 1.8's rules: typedefs of the split part that equal the
/// base's map to the base (libbpf commit 5b0f3729 fixed their hash).
#[test]
fn dedup_split_typedefs_by_1_8_rules_fold_onto_the_base() {
    // libbpf's base-hash fix (5b0f3729, April 2026) hashes the base's
    // typedefs as the split's are hashed, so a module's `pid_t` folds onto
    // the base's. No registry ships a libbpf with it (1.7.0 is the newest),
    // so this checks the fix's effect instead of bytes.
    let mut base = Btf::new();
    let b_int = int(&mut base, "int", 4);
    let b_td = typedef(&mut base, "pid_t", b_int);
    ptr(&mut base, b_td);
    let base = Arc::new(Btf::parse(&base.to_bytes()).expect("parse the base"));
    // Two "units" of a module, each with its own copies of the base's types.
    let unit = |m: &mut Btf, with_cycle: bool| {
        let i = int(m, "int", 4);
        let td = typedef(m, "pid_t", i);
        let p = ptr(m, td);
        typedef(m, "pid_ptr", p);
        if with_cycle {
            let g = typedef(m, "main.G", 0);
            let pr = proto(m, g, &[td]);
            close(m, g, pr);
        }
    };
    for with_cycle in [false, true] {
        let mut m = Btf::new_split(base.clone());
        unit(&mut m, with_cycle);
        unit(&mut m, with_cycle);
        let opts = DedupOptions {
            rules: Rules::Libbpf1_8,
            ..Default::default()
        };
        dedup(&mut m, &opts).expect("dedup");
        let what = format!("split typedefs, cycle {with_cycle}");
        let names = |kind: btf::Kind| {
            let mut v: Vec<String> = m
                .iter()
                .filter(|(id, t)| *id >= m.start_id() && t.kind() == kind)
                .map(|(_, t)| m.name_of(t).unwrap_or_default().to_string())
                .collect();
            v.sort();
            v
        };
        assert!(
            names(BTF_KIND_INT).is_empty(),
            "{what}: the int maps to the base's"
        );
        let want: &[&str] = if with_cycle {
            &["main.G", "pid_ptr"]
        } else {
            &["pid_ptr"]
        };
        assert_eq!(
            names(BTF_KIND_TYPEDEF),
            want,
            "{what}: pid_t maps to the base's, the rest once"
        );
    }
}

/// 1.8's rules on a whole kernel: the running vmlinux twice, whose second
/// copy must fold onto the first exactly as libbpf 1.7 folds it.
#[test]
fn dedup_vmlinux_twice_by_1_8_rules_matches_libbpf_1_7() {
    let fx = Fixture::new();
    let Some(oracle) = oracle_new(&fx) else {
        return;
    };
    let Some(vmlinux) = running_vmlinux() else {
        return;
    };
    let input = fx.path("vmlinux-twice.btf");
    concat(&oracle, &input, None, &[vmlinux.clone(), vmlinux]);
    let theirs = libbpf_dedup(&oracle, &input, None).expect("libbpf 1.7");
    assert_same(
        &our_dedup(&input, None, Rules::Libbpf1_8),
        &theirs,
        "vmlinux twice, 1.8 rules",
    );
}

/// Two different kernels (Debian's 6.1 and the running one) by 1.8's rules:
/// many types equal, many similar but not equal.
#[test]
fn dedup_debian_and_running_vmlinux_by_1_8_rules_matches_libbpf_1_7() {
    let fx = Fixture::new();
    let Some(oracle) = oracle_new(&fx) else {
        return;
    };
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let Some(running) = running_vmlinux() else {
        return;
    };
    let input = fx.path("debian-and-running.btf");
    concat(&oracle, &input, None, &[k.vmlinux.clone(), running]);
    let theirs = libbpf_dedup(&oracle, &input, None).expect("libbpf 1.7");
    assert_same(
        &our_dedup(&input, None, Rules::Libbpf1_8),
        &theirs,
        "Debian's vmlinux + the running vmlinux, 1.8 rules",
    );
}
