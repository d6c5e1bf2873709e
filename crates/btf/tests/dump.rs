//! `dump::raw` and `dump::json` against bpftool (Debian's 7.1), run at test
//! time on the real files: the running kernel's BTF, Debian's vmlinux
//! `.BTF`, shipped modules' split BTF, and a small BTF built here with
//! every kind and every flag that the kernels above do not use.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use btf::format::*;
use btf::{Array, Btf, Enum64Value, EnumValue, Member, Param, Type, TypeData, VarSecinfo};

fn bpftool(args: &[&str], file: &Path, base: Option<&Path>) -> Vec<u8> {
    let tool = testkit::tool_or_skip("bpftool", "bpftool").expect("bpftool");
    let mut cmd = Command::new(tool);
    cmd.args(args).arg("btf").arg("dump").arg("file").arg(file);
    if let Some(b) = base {
        cmd.arg("--base").arg(b);
    }
    testkit::run_ok(&mut cmd)
}

fn have_bpftool() -> bool {
    testkit::tool_or_skip("bpftool", "bpftool").is_some()
}

fn ours_raw(btf: &Btf) -> Vec<u8> {
    let mut out = Vec::new();
    btf::dump::raw::dump(btf, &mut out).unwrap();
    out
}

fn ours_json(btf: &Btf) -> serde_json::Value {
    let mut out = Vec::new();
    btf::dump::json::dump(btf, &mut out).unwrap();
    serde_json::from_slice(&out).expect("our JSON parses")
}

/// Byte equality, reported as the first differing line rather than 12 MB.
fn assert_same_text(what: &str, ours: &[u8], theirs: &[u8]) {
    if ours == theirs {
        return;
    }
    let (a, b) = (
        String::from_utf8_lossy(ours),
        String::from_utf8_lossy(theirs),
    );
    for (n, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        assert_eq!(
            x,
            y,
            "{what}: line {} differs (left ours, right bpftool)",
            n + 1
        );
    }
    panic!(
        "{what}: same lines but lengths differ: ours {} bytes, bpftool {}",
        ours.len(),
        theirs.len()
    );
}

fn assert_same_json(what: &str, ours: &serde_json::Value, theirs: &[u8]) {
    let theirs: serde_json::Value = serde_json::from_slice(theirs).expect("bpftool's JSON parses");
    if *ours == theirs {
        return;
    }
    let (a, b) = (&ours["types"], &theirs["types"]);
    if let (Some(a), Some(b)) = (a.as_array(), b.as_array()) {
        for (x, y) in a.iter().zip(b) {
            assert_eq!(
                x, y,
                "{what}: first differing type (left ours, right bpftool)"
            );
        }
        assert_eq!(a.len(), b.len(), "{what}: number of types");
    }
    panic!("{what}: JSON differs outside \"types\"");
}

fn sysfs_vmlinux() -> Option<&'static Path> {
    let p = Path::new(btf::SYSFS_VMLINUX);
    if !p.exists() {
        testkit::skip("/sys/kernel/btf/vmlinux is not present (CONFIG_DEBUG_INFO_BTF)");
        return None;
    }
    Some(p)
}

/// A spread of Debian's shipped modules: every 150th in path order, so that
/// drivers, filesystems and networking all appear without dumping all 1,100.
fn sample_modules(dir: &Path) -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "ko") {
                out.push(p);
            }
        }
    }
    let mut all = Vec::new();
    walk(dir, &mut all);
    all.sort();
    all.into_iter().step_by(150).collect()
}

#[test]
fn dump_raw_matches_bpftool_sysfs_vmlinux() {
    let Some(p) = sysfs_vmlinux() else { return };
    if !have_bpftool() {
        return;
    }
    let btf = btf::load_file(p, None).unwrap();
    assert_same_text("sysfs vmlinux", &ours_raw(&btf), &bpftool(&[], p, None));
}

#[test]
fn dump_raw_matches_bpftool_debian_vmlinux() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    if !have_bpftool() {
        return;
    }
    let btf = btf::load_file(&k.vmlinux, None).unwrap();
    assert_same_text(
        "Debian vmlinux",
        &ours_raw(&btf),
        &bpftool(&[], &k.vmlinux, None),
    );
}

#[test]
fn dump_raw_matches_bpftool_split_module() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    if !have_bpftool() {
        return;
    }
    let base = Arc::new(btf::load_file(&k.vmlinux, None).unwrap());
    let modules = sample_modules(&k.image_modules);
    assert!(
        modules.len() >= 5,
        "too few modules under {}",
        k.image_modules.display()
    );
    for m in modules {
        let data = std::fs::read(&m).unwrap();
        let split = btf::parse_any(&data, Some(base.clone())).unwrap();
        assert!(split.start_id() == base.type_count());
        assert_same_text(
            &m.display().to_string(),
            &ours_raw(&split),
            &bpftool(&[], &m, Some(&k.vmlinux)),
        );
    }
}

#[test]
fn dump_json_equals_bpftool_json_sysfs_vmlinux() {
    let Some(p) = sysfs_vmlinux() else { return };
    if !have_bpftool() {
        return;
    }
    let btf = btf::load_file(p, None).unwrap();
    assert_same_json(
        "sysfs vmlinux",
        &ours_json(&btf),
        &bpftool(&["-j"], p, None),
    );
}

#[test]
fn dump_json_equals_bpftool_json_debian_vmlinux() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    if !have_bpftool() {
        return;
    }
    let btf = btf::load_file(&k.vmlinux, None).unwrap();
    assert_same_json(
        "Debian vmlinux",
        &ours_json(&btf),
        &bpftool(&["-j"], &k.vmlinux, None),
    );
}

#[test]
fn dump_json_equals_bpftool_json_split_module() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    if !have_bpftool() {
        return;
    }
    let base = Arc::new(btf::load_file(&k.vmlinux, None).unwrap());
    for m in sample_modules(&k.image_modules).into_iter().take(3) {
        let data = std::fs::read(&m).unwrap();
        let split = btf::parse_any(&data, Some(base.clone())).unwrap();
        assert_same_json(
            &m.display().to_string(),
            &ours_json(&split),
            &bpftool(&["-j"], &m, Some(&k.vmlinux)),
        );
    }
}

/// Every kind, with what real kernels leave out: signed and negative
/// enumerators, signed ENUM64, unsigned values with the top bit set,
/// bitfields, a union FWD, global and extern FUNC/VAR linkage, a DECL_TAG on
/// a member, a vararg prototype, an INT with bits_offset and each encoding.
fn every_kind() -> Btf {
    let mut b = Btf::new();
    let s = |b: &mut Btf, x: &str| b.add_str(x);
    let int_name = s(&mut b, "int");
    let int = b.add_type(Type::new(
        int_name,
        TypeData::Int {
            size: 4,
            encoding: BTF_INT_SIGNED,
            offset: 0,
            bits: 32,
        },
    ));
    for (name, encoding, offset, bits) in [
        ("char", BTF_INT_CHAR, 0, 8),
        ("_Bool", BTF_INT_BOOL, 0, 1),
        ("u24", 0, 8, 24),
        ("weird", 3, 0, 32),
    ] {
        let n = s(&mut b, name);
        b.add_type(Type::new(
            n,
            TypeData::Int {
                size: 4,
                encoding,
                offset,
                bits,
            },
        ));
    }
    let ptr = b.add_type(Type::new(0, TypeData::Ptr { ty: int }));
    b.add_type(Type::new(
        0,
        TypeData::Array(Array {
            elem: ptr,
            index: int,
            nelems: 16,
        }),
    ));
    let (a, bf, c) = (s(&mut b, "a"), s(&mut b, "bf"), s(&mut b, "c"));
    let sname = s(&mut b, "s");
    let st = b.add_type(Type {
        name_off: sname,
        kind_flag: true,
        data: TypeData::Struct {
            size: 8,
            members: vec![
                Member {
                    name_off: a,
                    ty: int,
                    offset: 0,
                },
                Member {
                    name_off: bf,
                    ty: int,
                    offset: (3 << 24) | 32,
                },
                Member {
                    name_off: 0,
                    ty: int,
                    offset: (5 << 24) | 35,
                },
            ]
            .into(),
        },
    });
    b.add_type(Type::new(
        0,
        TypeData::Union {
            size: 4,
            members: vec![Member {
                name_off: c,
                ty: int,
                offset: 0,
            }]
            .into(),
        },
    ));
    let (neg, big) = (s(&mut b, "NEG"), s(&mut b, "BIG"));
    let ename = s(&mut b, "e_signed");
    b.add_type(Type {
        name_off: ename,
        kind_flag: true,
        data: TypeData::Enum {
            size: 4,
            values: vec![
                EnumValue {
                    name_off: neg,
                    val: -5i32 as u32,
                },
                EnumValue {
                    name_off: big,
                    val: 7,
                },
            ]
            .into(),
        },
    });
    let uname = s(&mut b, "e_unsigned");
    b.add_type(Type::new(
        uname,
        TypeData::Enum {
            size: 4,
            values: vec![EnumValue {
                name_off: big,
                val: 0xffff_fff0,
            }]
            .into(),
        },
    ));
    let e64 = s(&mut b, "e64");
    b.add_type(Type {
        name_off: e64,
        kind_flag: true,
        data: TypeData::Enum64 {
            size: 8,
            values: vec![
                Enum64Value {
                    name_off: neg,
                    val: -(1i64 << 40) as u64,
                },
                Enum64Value {
                    name_off: big,
                    val: 1 << 62,
                },
            ],
        },
    });
    b.add_type(Type::new(
        e64,
        TypeData::Enum64 {
            size: 8,
            values: vec![Enum64Value {
                name_off: big,
                val: u64::MAX,
            }],
        },
    ));
    let fwd_u = s(&mut b, "fwd_union");
    b.add_type(Type {
        name_off: fwd_u,
        kind_flag: true,
        data: TypeData::Fwd,
    });
    let fwd_s = s(&mut b, "fwd_struct");
    b.add_type(Type::new(fwd_s, TypeData::Fwd));
    let td = s(&mut b, "td");
    b.add_type(Type::new(td, TypeData::Typedef { ty: st }));
    let v = b.add_type(Type::new(0, TypeData::Volatile { ty: int }));
    let cst = b.add_type(Type::new(0, TypeData::Const { ty: v }));
    b.add_type(Type::new(0, TypeData::Restrict { ty: ptr }));
    let x = s(&mut b, "x");
    let proto = b.add_type(Type::new(
        0,
        TypeData::FuncProto {
            ret: int,
            params: vec![
                Param {
                    name_off: x,
                    ty: cst,
                },
                Param {
                    name_off: 0,
                    ty: int,
                },
                Param { name_off: 0, ty: 0 },
            ]
            .into(),
        },
    ));
    for (name, linkage) in [("f_static", 0), ("f_global", 1), ("f_extern", 2)] {
        let n = s(&mut b, name);
        b.add_type(Type::new(n, TypeData::Func { proto, linkage }));
    }
    let mut vars = Vec::new();
    for (i, (name, linkage)) in [("v_static", 0), ("v_global", 1), ("v_extern", 2)]
        .into_iter()
        .enumerate()
    {
        let n = s(&mut b, name);
        let id = b.add_type(Type::new(n, TypeData::Var { ty: int, linkage }));
        vars.push(VarSecinfo {
            ty: id,
            offset: 4 * i as u32,
            size: 4,
        });
    }
    let sec = s(&mut b, ".data");
    b.add_type(Type::new(
        sec,
        TypeData::Datasec {
            size: 12,
            vars: vars.into(),
        },
    ));
    let dbl = s(&mut b, "double");
    b.add_type(Type::new(dbl, TypeData::Float { size: 8 }));
    let tag = s(&mut b, "tag");
    b.add_type(Type::new(
        tag,
        TypeData::DeclTag {
            ty: st,
            component_idx: 1,
        },
    ));
    b.add_type(Type::new(
        tag,
        TypeData::DeclTag {
            ty: st,
            component_idx: -1,
        },
    ));
    let user = s(&mut b, "user");
    b.add_type(Type::new(user, TypeData::TypeTag { ty: int }));
    b
}

#[test]
fn dump_raw_matches_bpftool_every_kind_built_here() {
    if !have_bpftool() {
        return;
    }
    let b = every_kind();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("every_kind.btf");
    std::fs::write(&path, b.to_bytes()).unwrap();
    assert_same_text("every kind", &ours_raw(&b), &bpftool(&[], &path, None));
}

#[test]
fn dump_json_equals_bpftool_json_every_kind_built_here() {
    if !have_bpftool() {
        return;
    }
    let b = every_kind();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("every_kind.btf");
    std::fs::write(&path, b.to_bytes()).unwrap();
    assert_same_json("every kind", &ours_json(&b), &bpftool(&["-j"], &path, None));
}

/// bpftool prints `(invalid)` for a name offset no string section holds;
/// so do we, rather than failing the whole dump.
#[test]
fn dump_raw_shows_bad_string_offset_as_invalid() {
    let mut b = Btf::new();
    b.add_type(Type::new(0x7fff_0000, TypeData::Float { size: 8 }));
    let text = String::from_utf8(ours_raw(&b)).unwrap();
    assert_eq!(text, "[1] FLOAT '(invalid)' size=8\n");
    assert_eq!(ours_json(&b)["types"][0]["name"], "(invalid)");
}

/// Whatever the reader accepts, the dumps and the diff print without
/// panicking: ids out of range, string offsets past the end, bad linkage
/// and encodings, reference loops. Oracle: no panic. The flips are
/// deterministic (xorshift), so a failure reproduces.
#[test]
fn dump_and_diff_never_panic_on_flipped_bytes() {
    let blob = every_kind().to_bytes();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut parsed = 0;
    for _ in 0..3000 {
        let mut bad = blob.clone();
        for _ in 0..1 + next() % 4 {
            let i = (next() % bad.len() as u64) as usize;
            bad[i] ^= 1 << (next() % 8);
        }
        let Ok(b) = Btf::parse(&bad) else { continue };
        parsed += 1;
        ours_raw(&b);
        ours_json(&b);
        btf::diff::diff(&b, &every_kind(), &btf::diff::DiffOptions::default());
    }
    assert!(parsed > 100, "only {parsed} corrupted blobs parsed");
}
