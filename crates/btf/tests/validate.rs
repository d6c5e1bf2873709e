//! The validator against its oracles: the real BTFs it must accept, and the
//! running kernel's own verifier (BPF_BTF_LOAD, as root), which must agree
//! with it on every small BTF below, valid or deliberately broken.

use std::path::Path;
use std::sync::Arc;

use btf::format::*;
use btf::kernel;
use btf::validate::{validate, validate_blob, Rule};
use btf::Error;
use btf::*;

fn assert_valid(btf: &Btf, what: &str) {
    let problems = validate(btf);
    assert!(
        problems.is_empty(),
        "{what}: {} problems, first: {}",
        problems.len(),
        problems
            .iter()
            .take(5)
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn validate_accepts_sysfs_vmlinux() {
    let path = Path::new(SYSFS_VMLINUX);
    if !path.exists() {
        return testkit::skip("no /sys/kernel/btf/vmlinux on this machine");
    }
    let blob = std::fs::read(path).expect("read vmlinux BTF");
    let btf = Btf::parse(&blob).expect("parse vmlinux BTF");
    assert!(btf.type_count() > 10_000);
    assert_valid(&btf, "sysfs vmlinux");
    assert_eq!(validate_blob(&blob, &btf), vec![]);
}

#[test]
fn validate_accepts_debian_vmlinux() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let elf = std::fs::read(&k.vmlinux).expect("read Debian vmlinux");
    let blob = elf_btf_section(&elf).expect("Debian vmlinux has .BTF");
    let btf = Btf::parse(&blob).expect("parse Debian's BTF");
    assert_valid(&btf, "Debian vmlinux");
    assert_eq!(validate_blob(&blob, &btf), vec![]);
}

#[test]
fn validate_accepts_debian_module_split_btf() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let base = Arc::new(load_file(&k.vmlinux, None).expect("Debian vmlinux BTF"));
    let modules = k.image_modules.join("kernel/net");
    let mut checked = 0;
    let kos = walk(&modules);
    // Twenty modules cover what pahole writes; all of them would take minutes.
    let kos = kos
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ko"))
        .take(20);
    for path in kos {
        let elf = std::fs::read(path).expect("read module");
        let Ok(blob) = elf_btf_section(&elf) else {
            continue;
        };
        let module = Btf::parse_split(&blob, base.clone()).expect("parse module BTF");
        assert_valid(&module, &path.display().to_string());
        assert_eq!(validate_blob(&blob, &module), vec![], "{}", path.display());
        checked += 1;
    }
    assert!(checked > 0, "no module BTF under {}", modules.display());
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// The kernel's verdict on `blob`: `None` when we may not ask (not root,
/// or the kernel tier is off).
fn kernel_accepts(blob: &[u8]) -> Option<Result<(), String>> {
    if !testkit::kernel_tier_on() || !testkit::is_root() {
        return None;
    }
    match kernel::load(blob) {
        Ok(_fd) => Some(Ok(())),
        Err(Error::KernelRejected { error, log }) => {
            let tail: Vec<&str> = log.lines().rev().take(3).collect();
            Some(Err(format!("{error}: {}", tail.join(" | "))))
        }
        Err(e) => panic!("BPF_BTF_LOAD failed as root: {e}"),
    }
}

#[test]
fn kernel_accepts_sysfs_vmlinux_btf_load() {
    let Some(()) = testkit::kernel_tier("loads BTF into the running kernel (root, bpf)") else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("BPF_BTF_LOAD needs root");
    }
    let blob = std::fs::read(SYSFS_VMLINUX).expect("read vmlinux BTF");
    assert_eq!(kernel_accepts(&blob), Some(Ok(())));
}

#[test]
fn kernel_accepts_debian_module_merged_with_its_base() {
    let Some(()) = testkit::kernel_tier("loads BTF into the running kernel (root, bpf)") else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("BPF_BTF_LOAD needs root");
    }
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let module = walk(&k.image_modules.join("kernel/net"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ko"))
        .find_map(|p| load_file(&p, Some(&k.vmlinux)).ok())
        .expect("a Debian module with BTF");
    let blob = kernel::standalone_blob(&module);
    let flat = Btf::parse(&blob).expect("parse the merged blob");
    assert_eq!(flat.type_count(), module.type_count());
    assert_eq!(kernel_accepts(&blob), Some(Ok(())));
}

/// Small BTFs and the ids the cases below refer to.
struct Fixture {
    btf: Btf,
    int: TypeId,
    char_: TypeId,
}

fn fixture() -> Fixture {
    let mut btf = Btf::new();
    let name = btf.add_str("int");
    let int = btf.add_type(Type::new(
        name,
        TypeData::Int {
            size: 4,
            encoding: BTF_INT_SIGNED,
            offset: 0,
            bits: 32,
        },
    ));
    let name = btf.add_str("char");
    let char_ = btf.add_type(Type::new(
        name,
        TypeData::Int {
            size: 1,
            encoding: BTF_INT_CHAR,
            offset: 0,
            bits: 8,
        },
    ));
    Fixture { btf, int, char_ }
}

fn member(btf: &mut Btf, name: &str, ty: TypeId, offset: u32) -> Member {
    Member {
        name_off: btf.add_str(name),
        ty,
        offset,
    }
}

fn add(btf: &mut Btf, name: &str, data: TypeData) -> TypeId {
    let off = btf.add_str(name);
    btf.add_type(Type::new(off, data))
}

fn add_kflag(btf: &mut Btf, name: &str, data: TypeData) -> TypeId {
    let off = btf.add_str(name);
    btf.add_type(Type {
        name_off: off,
        kind_flag: true,
        data,
    })
}

/// A function `int name(int a, char *b)`.
fn func(btf: &mut Btf, name: &str, int: TypeId, char_: TypeId) -> (TypeId, TypeId) {
    let ptr = add(btf, "", TypeData::Ptr { ty: char_ });
    let params = vec![
        Param {
            name_off: btf.add_str("a"),
            ty: int,
        },
        Param {
            name_off: btf.add_str("b"),
            ty: ptr,
        },
    ];
    let proto = add(
        btf,
        "",
        TypeData::FuncProto {
            ret: int,
            params: params.into(),
        },
    );
    let f = add(
        btf,
        name,
        TypeData::Func {
            proto,
            linkage: BTF_FUNC_GLOBAL,
        },
    );
    (f, proto)
}

/// Every kind, used the way compilers use them: must pass both verifiers.
fn valid_everything() -> Btf {
    let Fixture {
        mut btf,
        int,
        char_,
    } = fixture();
    let ulong = add(
        &mut btf,
        "long unsigned int",
        TypeData::Int {
            size: 8,
            encoding: 0,
            offset: 0,
            bits: 64,
        },
    );
    let list = btf.type_count() + 1;
    let list_ptr = add(&mut btf, "", TypeData::Ptr { ty: list });
    let members = vec![
        member(&mut btf, "next", list_ptr, 0),
        member(&mut btf, "prev", list_ptr, 64),
    ];
    let list2 = add(
        &mut btf,
        "list",
        TypeData::Struct {
            size: 16,
            members: members.into(),
        },
    );
    assert_eq!(list, list2);
    let values = vec![
        EnumValue {
            name_off: btf.add_str("RED"),
            val: 0,
        },
        EnumValue {
            name_off: btf.add_str("BLUE"),
            val: u32::MAX,
        },
    ];
    let color = add(
        &mut btf,
        "color",
        TypeData::Enum {
            size: 4,
            values: values.into(),
        },
    );
    let values = vec![Enum64Value {
        name_off: btf.add_str("HUGE"),
        val: 1 << 40,
    }];
    let big = add(&mut btf, "big", TypeData::Enum64 { size: 8, values });
    let ulong_t = add(&mut btf, "ulong_t", TypeData::Typedef { ty: ulong });
    let cv = add(&mut btf, "", TypeData::Volatile { ty: ulong_t });
    let c = add(&mut btf, "", TypeData::Const { ty: cv });
    let cptr = add(&mut btf, "", TypeData::Ptr { ty: c });
    let arr = add(
        &mut btf,
        "",
        TypeData::Array(Array {
            elem: char_,
            index: int,
            nelems: 3,
        }),
    );
    let float = add(&mut btf, "double", TypeData::Float { size: 8 });
    let fwd = add_kflag(&mut btf, "opaque", TypeData::Fwd);
    let fwd_ptr = add(&mut btf, "", TypeData::Ptr { ty: fwd });
    let tag = add(&mut btf, "user", TypeData::TypeTag { ty: int });
    let tag_ptr = add(&mut btf, "", TypeData::Ptr { ty: tag });
    let u_members = vec![
        member(&mut btf, "i", int, 0),
        member(&mut btf, "l", ulong, 0),
    ];
    let union = add(
        &mut btf,
        "",
        TypeData::Union {
            size: 8,
            members: u_members.into(),
        },
    );
    let (f, _) = func(&mut btf, "f1", int, char_);
    let params = vec![
        Param {
            name_off: btf.add_str("fmt"),
            ty: cptr,
        },
        Param { name_off: 0, ty: 0 },
    ];
    let vproto = add(
        &mut btf,
        "",
        TypeData::FuncProto {
            ret: 0,
            params: params.into(),
        },
    );
    let fn_ptr = add(&mut btf, "", TypeData::Ptr { ty: vproto });
    // struct s with kind_flag: bitfields carry their size in the offset word.
    let s = btf.type_count();
    let s_members = vec![
        member(&mut btf, "a", int, 0),
        member(&mut btf, "b", arr, 32),
        member(&mut btf, "x", int, (3 << 24) | 56),
        member(&mut btf, "y", int, (5 << 24) | 59),
        member(&mut btf, "l", list, 64),
        member(&mut btf, "c", color, 192),
        member(&mut btf, "p", cptr, 256),
        member(&mut btf, "d", float, 320),
        member(&mut btf, "u", union, 384),
        member(&mut btf, "fn", fn_ptr, 448),
        member(&mut btf, "o", fwd_ptr, 512),
        member(&mut btf, "t", tag_ptr, 576),
        member(&mut btf, "e", big, 640),
    ];
    let s2 = add_kflag(
        &mut btf,
        "s",
        TypeData::Struct {
            size: 88,
            members: s_members.into(),
        },
    );
    assert_eq!(s, s2);
    add(
        &mut btf,
        "cold",
        TypeData::DeclTag {
            ty: s,
            component_idx: 1,
        },
    );
    add(
        &mut btf,
        "arg",
        TypeData::DeclTag {
            ty: f,
            component_idx: 0,
        },
    );
    let var = add(
        &mut btf,
        "global_s",
        TypeData::Var {
            ty: s,
            linkage: BTF_VAR_GLOBAL_ALLOCATED,
        },
    );
    let counter = add(
        &mut btf,
        "counter",
        TypeData::Var {
            ty: int,
            linkage: BTF_VAR_STATIC,
        },
    );
    add(
        &mut btf,
        ".bss",
        TypeData::Datasec {
            size: 96,
            vars: vec![
                VarSecinfo {
                    ty: counter,
                    offset: 0,
                    size: 4,
                },
                VarSecinfo {
                    ty: var,
                    offset: 8,
                    size: 88,
                },
            ]
            .into(),
        },
    );
    btf
}

#[test]
fn validator_and_kernel_accept_a_valid_btf() {
    let btf = valid_everything();
    assert_valid(&btf, "valid_everything");
    let blob = btf.to_bytes();
    let parsed = Btf::parse(&blob).expect("parse our own blob");
    assert_eq!(validate_blob(&blob, &parsed), vec![]);
    if let Some(verdict) = kernel_accepts(&blob) {
        assert_eq!(verdict, Ok(()), "the kernel rejects what we accept");
    }
}

type Case = (&'static str, Rule, fn(&mut Fixture));

/// Each case breaks one rule on top of a valid fixture.
const BROKEN: &[Case] = &[
    ("int encoding", Rule::Int, |f| {
        add(
            &mut f.btf,
            "i",
            TypeData::Int {
                size: 4,
                encoding: 3,
                offset: 0,
                bits: 32,
            },
        );
    }),
    ("int bits past size", Rule::Int, |f| {
        add(
            &mut f.btf,
            "i",
            TypeData::Int {
                size: 4,
                encoding: 0,
                offset: 0,
                bits: 33,
            },
        );
    }),
    ("int kind_flag", Rule::KindFlag, |f| {
        add_kflag(
            &mut f.btf,
            "i",
            TypeData::Int {
                size: 4,
                encoding: 0,
                offset: 0,
                bits: 32,
            },
        );
    }),
    ("named pointer", Rule::Name, |f| {
        let int = f.int;
        add(&mut f.btf, "p", TypeData::Ptr { ty: int });
    }),
    ("anonymous typedef", Rule::Name, |f| {
        let int = f.int;
        add(&mut f.btf, "", TypeData::Typedef { ty: int });
    }),
    ("typedef name not an identifier", Rule::Name, |f| {
        let int = f.int;
        add(&mut f.btf, "1abc", TypeData::Typedef { ty: int });
    }),
    ("name offset out of range", Rule::NameOffset, |f| {
        let int = f.int;
        f.btf
            .add_type(Type::new(0x00ff_0000, TypeData::Typedef { ty: int }));
    }),
    ("pointer to a type id out of range", Rule::TypeId, |f| {
        add(&mut f.btf, "", TypeData::Ptr { ty: 999 });
    }),
    ("member offset past the struct", Rule::Member, |f| {
        let m = vec![member(&mut f.btf, "a", f.int, 64)];
        add(
            &mut f.btf,
            "s",
            TypeData::Struct {
                size: 4,
                members: m.into(),
            },
        );
    }),
    ("member ends past the struct", Rule::Member, |f| {
        let m = vec![
            member(&mut f.btf, "a", f.int, 0),
            member(&mut f.btf, "b", f.int, 32),
        ];
        add(
            &mut f.btf,
            "s",
            TypeData::Struct {
                size: 6,
                members: m.into(),
            },
        );
    }),
    ("members out of order", Rule::Member, |f| {
        let m = vec![
            member(&mut f.btf, "a", f.int, 32),
            member(&mut f.btf, "b", f.int, 0),
        ];
        add(
            &mut f.btf,
            "s",
            TypeData::Struct {
                size: 8,
                members: m.into(),
            },
        );
    }),
    ("union member at an offset", Rule::Member, |f| {
        let m = vec![member(&mut f.btf, "a", f.int, 32)];
        add(
            &mut f.btf,
            "u",
            TypeData::Union {
                size: 8,
                members: m.into(),
            },
        );
    }),
    ("member of type void", Rule::TypeId, |f| {
        let m = vec![member(&mut f.btf, "a", 0, 0)];
        add(
            &mut f.btf,
            "s",
            TypeData::Struct {
                size: 4,
                members: m.into(),
            },
        );
    }),
    ("member name not an identifier", Rule::Name, |f| {
        let m = vec![member(&mut f.btf, "a-b", f.int, 0)];
        add(
            &mut f.btf,
            "s",
            TypeData::Struct {
                size: 4,
                members: m.into(),
            },
        );
    }),
    ("bitfield wider than its int", Rule::Member, |f| {
        let m = vec![member(&mut f.btf, "a", f.int, 33 << 24)];
        add_kflag(
            &mut f.btf,
            "s",
            TypeData::Struct {
                size: 8,
                members: m.into(),
            },
        );
    }),
    ("bitfield of a struct", Rule::Member, |f| {
        let inner = vec![member(&mut f.btf, "a", f.int, 0)];
        let s = add(
            &mut f.btf,
            "in",
            TypeData::Struct {
                size: 4,
                members: inner.into(),
            },
        );
        let m = vec![member(&mut f.btf, "a", s, 3 << 24)];
        add_kflag(
            &mut f.btf,
            "s",
            TypeData::Struct {
                size: 4,
                members: m.into(),
            },
        );
    }),
    ("misaligned float member", Rule::Member, |f| {
        let d = add(&mut f.btf, "double", TypeData::Float { size: 8 });
        let m = vec![member(&mut f.btf, "d", d, 32)];
        add(
            &mut f.btf,
            "s",
            TypeData::Struct {
                size: 16,
                members: m.into(),
            },
        );
    }),
    ("struct loop", Rule::Loop, |f| {
        let a = f.btf.type_count();
        let ma = vec![member(&mut f.btf, "b", a + 1, 0)];
        add(
            &mut f.btf,
            "A",
            TypeData::Struct {
                size: 4,
                members: ma.into(),
            },
        );
        let mb = vec![member(&mut f.btf, "a", a, 0)];
        add(
            &mut f.btf,
            "B",
            TypeData::Struct {
                size: 4,
                members: mb.into(),
            },
        );
    }),
    ("typedef loop", Rule::Loop, |f| {
        let a = f.btf.type_count();
        add(&mut f.btf, "A", TypeData::Typedef { ty: a + 1 });
        add(&mut f.btf, "B", TypeData::Typedef { ty: a });
    }),
    ("pointer loop", Rule::Loop, |f| {
        let p = f.btf.type_count();
        add(&mut f.btf, "", TypeData::Ptr { ty: p + 1 });
        add(&mut f.btf, "", TypeData::Const { ty: p });
    }),
    ("array of itself", Rule::Loop, |f| {
        let a = f.btf.type_count();
        let int = f.int;
        add(
            &mut f.btf,
            "",
            TypeData::Array(Array {
                elem: a,
                index: int,
                nelems: 2,
            }),
        );
    }),
    ("41 nested typedefs", Rule::Depth, |f| {
        let first = f.btf.type_count();
        for i in 0..40 {
            add(
                &mut f.btf,
                &format!("t{i}"),
                TypeData::Typedef { ty: first + i + 1 },
            );
        }
        let int = f.int;
        add(&mut f.btf, "t40", TypeData::Typedef { ty: int });
    }),
    ("type tag after const", Rule::TypeTag, |f| {
        let int = f.int;
        let tag = add(&mut f.btf, "user", TypeData::TypeTag { ty: int });
        let c = add(&mut f.btf, "", TypeData::Const { ty: tag });
        add(&mut f.btf, "", TypeData::Ptr { ty: c });
    }),
    ("func of an int", Rule::Func, |f| {
        let int = f.int;
        add(
            &mut f.btf,
            "f",
            TypeData::Func {
                proto: int,
                linkage: 0,
            },
        );
    }),
    ("extern func", Rule::Linkage, |f| {
        let (int, c) = (f.int, f.char_);
        let (id, _) = func(&mut f.btf, "f", int, c);
        if let Some(TypeData::Func { linkage, .. }) = f.btf.type_by_id_mut(id).map(|t| &mut t.data)
        {
            *linkage = BTF_FUNC_EXTERN;
        }
    }),
    ("func with an unnamed parameter", Rule::Func, |f| {
        let int = f.int;
        let proto = add(
            &mut f.btf,
            "",
            TypeData::FuncProto {
                ret: int,
                params: vec![Param {
                    name_off: 0,
                    ty: int,
                }]
                .into(),
            },
        );
        add(&mut f.btf, "f", TypeData::Func { proto, linkage: 0 });
    }),
    ("named varargs", Rule::Func, |f| {
        let int = f.int;
        let params = vec![
            Param {
                name_off: f.btf.add_str("a"),
                ty: int,
            },
            Param {
                name_off: f.btf.add_str("rest"),
                ty: 0,
            },
        ];
        add(
            &mut f.btf,
            "",
            TypeData::FuncProto {
                ret: int,
                params: params.into(),
            },
        );
    }),
    ("void parameter before the last", Rule::Func, |f| {
        let int = f.int;
        let params = vec![
            Param { name_off: 0, ty: 0 },
            Param {
                name_off: 0,
                ty: int,
            },
        ];
        add(
            &mut f.btf,
            "",
            TypeData::FuncProto {
                ret: int,
                params: params.into(),
            },
        );
    }),
    ("function returning a function", Rule::Func, |f| {
        let int = f.int;
        let inner = add(
            &mut f.btf,
            "",
            TypeData::FuncProto {
                ret: int,
                params: Default::default(),
            },
        );
        add(
            &mut f.btf,
            "",
            TypeData::FuncProto {
                ret: inner,
                params: Default::default(),
            },
        );
    }),
    ("named func proto", Rule::Name, |f| {
        let int = f.int;
        add(
            &mut f.btf,
            "proto",
            TypeData::FuncProto {
                ret: int,
                params: Default::default(),
            },
        );
    }),
    ("var linkage extern", Rule::Linkage, |f| {
        let int = f.int;
        add(
            &mut f.btf,
            "v",
            TypeData::Var {
                ty: int,
                linkage: BTF_VAR_GLOBAL_EXTERN,
            },
        );
    }),
    ("var of a forward declaration", Rule::TypeId, |f| {
        let fwd = add(&mut f.btf, "opaque", TypeData::Fwd);
        add(
            &mut f.btf,
            "v",
            TypeData::Var {
                ty: fwd,
                linkage: 0,
            },
        );
    }),
    ("pointer to a var", Rule::TypeId, |f| {
        let int = f.int;
        let v = add(
            &mut f.btf,
            "v",
            TypeData::Var {
                ty: int,
                linkage: 0,
            },
        );
        add(&mut f.btf, "", TypeData::Ptr { ty: v });
    }),
    ("datasec entries overlap", Rule::Datasec, |f| {
        let int = f.int;
        let a = add(
            &mut f.btf,
            "a",
            TypeData::Var {
                ty: int,
                linkage: 0,
            },
        );
        let b = add(
            &mut f.btf,
            "b",
            TypeData::Var {
                ty: int,
                linkage: 0,
            },
        );
        let vars = vec![
            VarSecinfo {
                ty: a,
                offset: 0,
                size: 4,
            },
            VarSecinfo {
                ty: b,
                offset: 2,
                size: 4,
            },
        ];
        add(
            &mut f.btf,
            ".data",
            TypeData::Datasec {
                size: 8,
                vars: vars.into(),
            },
        );
    }),
    ("datasec entries unsorted", Rule::Datasec, |f| {
        let int = f.int;
        let a = add(
            &mut f.btf,
            "a",
            TypeData::Var {
                ty: int,
                linkage: 0,
            },
        );
        let b = add(
            &mut f.btf,
            "b",
            TypeData::Var {
                ty: int,
                linkage: 0,
            },
        );
        let vars = vec![
            VarSecinfo {
                ty: a,
                offset: 4,
                size: 4,
            },
            VarSecinfo {
                ty: b,
                offset: 0,
                size: 4,
            },
        ];
        add(
            &mut f.btf,
            ".data",
            TypeData::Datasec {
                size: 8,
                vars: vars.into(),
            },
        );
    }),
    ("datasec entry past the section", Rule::Datasec, |f| {
        let int = f.int;
        let a = add(
            &mut f.btf,
            "a",
            TypeData::Var {
                ty: int,
                linkage: 0,
            },
        );
        let vars = vec![VarSecinfo {
            ty: a,
            offset: 6,
            size: 4,
        }];
        add(
            &mut f.btf,
            ".data",
            TypeData::Datasec {
                size: 8,
                vars: vars.into(),
            },
        );
    }),
    ("datasec entry not a var", Rule::Datasec, |f| {
        let int = f.int;
        let vars = vec![VarSecinfo {
            ty: int,
            offset: 0,
            size: 4,
        }];
        add(
            &mut f.btf,
            ".data",
            TypeData::Datasec {
                size: 8,
                vars: vars.into(),
            },
        );
    }),
    ("datasec entry smaller than its var", Rule::Datasec, |f| {
        let int = f.int;
        let a = add(
            &mut f.btf,
            "a",
            TypeData::Var {
                ty: int,
                linkage: 0,
            },
        );
        let vars = vec![VarSecinfo {
            ty: a,
            offset: 0,
            size: 2,
        }];
        add(
            &mut f.btf,
            ".data",
            TypeData::Datasec {
                size: 8,
                vars: vars.into(),
            },
        );
    }),
    ("datasec without a name", Rule::Name, |f| {
        add(
            &mut f.btf,
            "",
            TypeData::Datasec {
                size: 8,
                vars: Default::default(),
            },
        );
    }),
    ("decl tag on an int", Rule::DeclTag, |f| {
        let int = f.int;
        add(
            &mut f.btf,
            "tag",
            TypeData::DeclTag {
                ty: int,
                component_idx: -1,
            },
        );
    }),
    ("decl tag component out of range", Rule::DeclTag, |f| {
        let m = vec![member(&mut f.btf, "a", f.int, 0)];
        let s = add(
            &mut f.btf,
            "s",
            TypeData::Struct {
                size: 4,
                members: m.into(),
            },
        );
        add(
            &mut f.btf,
            "tag",
            TypeData::DeclTag {
                ty: s,
                component_idx: 1,
            },
        );
    }),
    ("decl tag component below -1", Rule::DeclTag, |f| {
        let m = vec![member(&mut f.btf, "a", f.int, 0)];
        let s = add(
            &mut f.btf,
            "s",
            TypeData::Struct {
                size: 4,
                members: m.into(),
            },
        );
        add(
            &mut f.btf,
            "tag",
            TypeData::DeclTag {
                ty: s,
                component_idx: -2,
            },
        );
    }),
    ("float of 3 bytes", Rule::Size, |f| {
        add(&mut f.btf, "f3", TypeData::Float { size: 3 });
    }),
    ("enum of 3 bytes", Rule::Size, |f| {
        let v = vec![EnumValue {
            name_off: f.btf.add_str("A"),
            val: 0,
        }];
        add(
            &mut f.btf,
            "e",
            TypeData::Enum {
                size: 3,
                values: v.into(),
            },
        );
    }),
    ("anonymous enum value", Rule::Name, |f| {
        let v = vec![EnumValue {
            name_off: 0,
            val: 0,
        }];
        add(
            &mut f.btf,
            "e",
            TypeData::Enum {
                size: 4,
                values: v.into(),
            },
        );
    }),
    ("array of functions", Rule::TypeId, |f| {
        let int = f.int;
        let proto = add(
            &mut f.btf,
            "",
            TypeData::FuncProto {
                ret: int,
                params: Default::default(),
            },
        );
        add(
            &mut f.btf,
            "",
            TypeData::Array(Array {
                elem: proto,
                index: int,
                nelems: 2,
            }),
        );
    }),
    ("array indexed by a struct", Rule::TypeId, |f| {
        let m = vec![member(&mut f.btf, "a", f.int, 0)];
        let s = add(
            &mut f.btf,
            "s",
            TypeData::Struct {
                size: 4,
                members: m.into(),
            },
        );
        let int = f.int;
        add(
            &mut f.btf,
            "",
            TypeData::Array(Array {
                elem: int,
                index: s,
                nelems: 2,
            }),
        );
    }),
    ("array of a 3-bit int", Rule::Int, |f| {
        let b = add(
            &mut f.btf,
            "b",
            TypeData::Int {
                size: 1,
                encoding: 0,
                offset: 0,
                bits: 3,
            },
        );
        let int = f.int;
        add(
            &mut f.btf,
            "",
            TypeData::Array(Array {
                elem: b,
                index: int,
                nelems: 2,
            }),
        );
    }),
    ("array size overflows", Rule::Size, |f| {
        let int = f.int;
        add(
            &mut f.btf,
            "",
            TypeData::Array(Array {
                elem: int,
                index: int,
                nelems: 1 << 31,
            }),
        );
    }),
    ("func proto kind_flag", Rule::KindFlag, |f| {
        let int = f.int;
        add_kflag(
            &mut f.btf,
            "",
            TypeData::FuncProto {
                ret: int,
                params: Default::default(),
            },
        );
    }),
];

#[test]
fn validator_and_kernel_reject_each_broken_btf() {
    let mut disagreements = Vec::new();
    for (what, rule, build) in BROKEN {
        let mut f = fixture();
        build(&mut f);
        let problems = validate(&f.btf);
        if !problems.iter().any(|p| p.rule == *rule) {
            disagreements.push(format!(
                "{what}: expected a {rule} problem, got {:?}",
                problems.iter().map(|p| p.to_string()).collect::<Vec<_>>()
            ));
        }
        if let Some(Ok(())) = kernel_accepts(&f.btf.to_bytes()) {
            disagreements.push(format!("{what}: the kernel accepts it"));
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

#[test]
fn every_broken_case_starts_from_a_valid_fixture() {
    let f = fixture();
    assert_valid(&f.btf, "fixture");
    if let Some(verdict) = kernel_accepts(&f.btf.to_bytes()) {
        assert_eq!(verdict, Ok(()));
    }
}

/// A fixed-seed xorshift, so that the flips are the same on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The strongest oracle: the kernel's verdict on hundreds of corrupted
/// copies of a valid BTF, each flipped word or bit somewhere in the type
/// section, must be the validator's.
#[test]
fn validator_agrees_with_kernel_on_corrupted_blobs() {
    let Some(()) = testkit::kernel_tier("loads BTF into the running kernel (root, bpf)") else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("BPF_BTF_LOAD needs root");
    }
    let good = valid_everything().to_bytes();
    let type_len = u32::from_le_bytes([good[12], good[13], good[14], good[15]]) as usize;
    let hdr = BTF_HEADER_LEN as usize;
    let mut rng = Rng(0x5eed_b7f0_0d15_ea5e);
    let mut disagreements = Vec::new();
    let mut rejected = 0;
    for i in 0..600 {
        let mut blob = good.clone();
        let word = hdr + 4 * (rng.next() as usize % (type_len / 4));
        if i % 2 == 0 {
            let bit = rng.next() % 32;
            let v =
                u32::from_le_bytes([blob[word], blob[word + 1], blob[word + 2], blob[word + 3]]);
            blob[word..word + 4].copy_from_slice(&(v ^ (1 << bit)).to_le_bytes());
        } else {
            // Small values are ids, offsets and kinds: what breaks rules
            // rather than the parser.
            let v = match rng.next() % 4 {
                0 => rng.next() as u32 % 64,
                1 => (rng.next() as u32 % 20) << 24,
                2 => rng.next() as u32 % 1024,
                _ => rng.next() as u32,
            };
            blob[word..word + 4].copy_from_slice(&v.to_le_bytes());
        }
        let ours = match Btf::parse(&blob) {
            Ok(btf) => validate(&btf).is_empty() && validate_blob(&blob, &btf).is_empty(),
            Err(_) => false,
        };
        let kernel = kernel_accepts(&blob).is_some_and(|v| v.is_ok());
        rejected += usize::from(!kernel);
        if ours != kernel {
            disagreements.push(format!(
                "flip #{i} at {word:#x}: ours {ours}, kernel {kernel}"
            ));
        }
    }
    assert!(
        rejected > 100,
        "too few corruptions were caught: {rejected}"
    );
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// A split BTF's types are checked against base types that only they
/// bring into the walk (the base itself is taken as valid, as the kernel
/// takes vmlinux's): sizes through a base typedef and a base struct, and a
/// prototype whose parameter is a base modifier.
#[test]
fn validate_split_walks_the_base_types_it_uses() {
    use btf::builder::{Builder, Field, Linkage};
    let mut b = Builder::new();
    let int = b.add_int("int", 4, BTF_INT_SIGNED);
    let pair = b.add_struct(
        "pair",
        8,
        &[Field::new("a", int, 0), Field::new("b", int, 32)],
    );
    let pair_t = b.add_typedef("pair_t", pair);
    let cint = b.add_const(int);
    let base = Arc::new(b.finish());

    let split = |member_offset: u32| {
        let mut s = Builder::new_split(base.clone());
        s.add_struct("outer", 16, &[Field::new("p", pair_t, member_offset)]);
        let proto = s.add_func_proto(int, &[("x", cint)]);
        s.add_func("f", proto, Linkage::Global);
        s.finish()
    };
    assert_valid(&split(64), "pair_t at byte 8 of 16");
    let problems = validate(&split(96));
    assert_eq!(
        problems
            .iter()
            .map(|p| (p.name.as_str(), p.rule))
            .collect::<Vec<_>>(),
        vec![("outer", Rule::Member)],
        "pair_t at byte 12 of 16 ends past the struct: {problems:?}"
    );
}
