//! `btf::dump::c` against its oracle, `bpftool btf dump file F format c`
//! (Debian's bpftool 7.1), run at test time on the same input: the running
//! kernel's BTF, Debian's vmlinux, and small blobs built here with the
//! builder API to cover each construct on its own.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use btf::{Array, Btf, Enum64Value, EnumValue, Member, Param, Type, TypeData, TypeId};

fn bpftool_c(bpftool: &Path, file: &Path) -> Vec<u8> {
    testkit::run_ok(
        Command::new(bpftool)
            .args(["btf", "dump", "file"])
            .arg(file)
            .args(["format", "c"]),
    )
}

fn ours_c(btf: &Btf) -> Vec<u8> {
    let mut out = Vec::new();
    btf::dump::c::dump(btf, &mut out).expect("dump c");
    out
}

/// Fails with the first differing line and a little context, never the
/// whole (tens of megabytes) output.
fn assert_same_text(what: &str, ours: &[u8], theirs: &[u8]) {
    if ours == theirs {
        return;
    }
    let a: Vec<&[u8]> = ours.split(|&b| b == b'\n').collect();
    let b: Vec<&[u8]> = theirs.split(|&b| b == b'\n').collect();
    let i = a
        .iter()
        .zip(&b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let show = |lines: &[&[u8]]| {
        let lo = i.saturating_sub(4);
        let hi = (i + 4).min(lines.len());
        (lo..hi)
            .map(|k| {
                let mark = if k == i { ">" } else { " " };
                format!("{mark}{:7} {}\n", k + 1, String::from_utf8_lossy(lines[k]))
            })
            .collect::<String>()
    };
    panic!(
        "{what}: first difference at line {} (ours {} lines, bpftool {} lines)\n\
         --- ours:\n{}--- bpftool:\n{}",
        i + 1,
        a.len(),
        b.len(),
        show(&a),
        show(&b)
    );
}

fn check_file(bpftool: &Path, file: &Path) {
    let btf = btf::load_file(file, None).expect("load BTF");
    assert_same_text(
        &file.display().to_string(),
        &ours_c(&btf),
        &bpftool_c(bpftool, file),
    );
}

#[test]
fn dump_c_matches_bpftool_sysfs_vmlinux() {
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    let p = Path::new(btf::SYSFS_VMLINUX);
    if !p.exists() {
        return testkit::skip("/sys/kernel/btf/vmlinux is not present (CONFIG_DEBUG_INFO_BTF)");
    }
    check_file(&bpftool, p);
}

#[test]
fn dump_c_matches_bpftool_debian_vmlinux() {
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    check_file(&bpftool, &k.vmlinux);
}

/// Compiles `header` from a tiny C file with `cc -c`.
fn assert_compiles(header: &[u8]) {
    let fx = testkit::Fixture::new();
    std::fs::write(fx.path("vmlinux.h"), header).unwrap();
    fx.write(
        "use.c",
        "#include \"vmlinux.h\"\nint btfkit_dump_c_probe;\n",
    );
    let out = Command::new("cc")
        .current_dir(fx.dir.path())
        .args(["-c", "-Wno-unknown-pragmas", "-o", "use.o", "use.c"])
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc -c failed on the dumped header:\n{}",
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .take(30)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn dump_c_header_compiles_with_cc() {
    if testkit::tool_or_skip("cc", "gcc").is_none() {
        return;
    }
    let p = Path::new(btf::SYSFS_VMLINUX);
    if !p.exists() {
        return testkit::skip("/sys/kernel/btf/vmlinux is not present (CONFIG_DEBUG_INFO_BTF)");
    }
    let btf = btf::load_file(p, None).unwrap();
    assert_compiles(&ours_c(&btf));
}

// ---- fixtures built with the builder API ----

/// A small builder over `Btf` for readable fixtures.
struct B {
    btf: Btf,
}

impl B {
    fn new() -> B {
        B { btf: Btf::new() }
    }
    fn add(&mut self, name: &str, data: TypeData) -> TypeId {
        let off = self.btf.add_str(name);
        self.btf.add_type(Type::new(off, data))
    }
    fn add_kf(&mut self, name: &str, data: TypeData) -> TypeId {
        let off = self.btf.add_str(name);
        self.btf.add_type(Type {
            name_off: off,
            kind_flag: true,
            data,
        })
    }
    fn int(&mut self, name: &str, size: u32, signed: bool) -> TypeId {
        self.add(
            name,
            TypeData::Int {
                size,
                encoding: if signed { 1 } else { 0 },
                offset: 0,
                bits: (size * 8) as u8,
            },
        )
    }
    fn ptr(&mut self, ty: TypeId) -> TypeId {
        self.add("", TypeData::Ptr { ty })
    }
    fn konst(&mut self, ty: TypeId) -> TypeId {
        self.add("", TypeData::Const { ty })
    }
    fn array(&mut self, elem: TypeId, index: TypeId, nelems: u32) -> TypeId {
        self.add(
            "",
            TypeData::Array(Array {
                elem,
                index,
                nelems,
            }),
        )
    }
    fn member(&mut self, name: &str, ty: TypeId, bit_off: u32) -> Member {
        Member {
            name_off: self.btf.add_str(name),
            ty,
            offset: bit_off,
        }
    }
    /// A bitfield member (the struct must have kind_flag set).
    fn bitfield(&mut self, name: &str, ty: TypeId, bit_off: u32, bits: u32) -> Member {
        Member {
            name_off: self.btf.add_str(name),
            ty,
            offset: bits << 24 | bit_off,
        }
    }
    fn strukt(&mut self, name: &str, size: u32, members: Vec<Member>) -> TypeId {
        self.add(
            name,
            TypeData::Struct {
                size,
                members: members.into(),
            },
        )
    }
    fn param(&mut self, name: &str, ty: TypeId) -> Param {
        Param {
            name_off: self.btf.add_str(name),
            ty,
        }
    }
    fn proto(&mut self, ret: TypeId, params: Vec<Param>) -> TypeId {
        self.add(
            "",
            TypeData::FuncProto {
                ret,
                params: params.into(),
            },
        )
    }
    fn enumv(&mut self, name: &str, val: u32) -> EnumValue {
        EnumValue {
            name_off: self.btf.add_str(name),
            val,
        }
    }

    /// Compares our dump of the blob with bpftool's on the same bytes, and
    /// checks that the header compiles.
    fn check(self, what: &str) {
        let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
            return;
        };
        let blob = self.btf.to_bytes();
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(format!("{what}.btf"));
        std::fs::write(&file, &blob).unwrap();
        let reread = Btf::parse(&blob).unwrap();
        let ours = ours_c(&reread);
        assert_same_text(what, &ours, &bpftool_c(&bpftool, &file));
        if testkit::tool_or_skip("cc", "gcc").is_some() {
            assert_compiles(&ours);
        }
    }
}

fn fixture_bitfields() -> B {
    let mut b = B::new();
    let int = b.int("int", 4, true);
    let uint = b.int("unsigned int", 4, false);
    let uchar = b.int("unsigned char", 1, false);
    let long = b.int("long", 8, true);
    let ushort = b.int("short unsigned int", 2, false);
    // Bitfields with a gap inside and a long after a hole.
    let m = vec![
        b.bitfield("a", uint, 0, 3),
        b.bitfield("b", uint, 3, 5),
        b.bitfield("c", uint, 12, 4),
        b.bitfield("d", uchar, 40, 2),
        b.bitfield("e", int, 64, 31),
        b.bitfield("f", long, 128, 1),
        b.bitfield("g", ushort, 200, 7),
        b.bitfield("h", long, 256, 64),
        b.bitfield("i", uchar, 384, 8),
    ];
    b.add_kf(
        "bits",
        TypeData::Struct {
            size: 56,
            members: m.into(),
        },
    );
    // Explicit holes between ordinary members and at the end.
    let m = vec![
        b.member("x", uchar, 0),
        b.member("y", int, 64),
        b.member("z", uchar, 192),
    ];
    b.strukt("holes", 40, m);
    let m = vec![b.member("x", long, 0), b.member("y", uchar, 64)];
    b.strukt("tail", 24, m);
    // An empty struct, an empty one with a size, and an empty union.
    b.strukt("empty", 0, vec![]);
    b.strukt("sized_empty", 8, vec![]);
    b.add(
        "nothing",
        TypeData::Union {
            size: 0,
            members: Default::default(),
        },
    );
    b
}

#[test]
fn dump_c_fixture_bitfields_and_padding_match_bpftool() {
    fixture_bitfields().check("bitfields");
}

fn fixture_packed() -> B {
    let mut b = B::new();
    let int = b.int("int", 4, true);
    let char_ = b.int("char", 1, true);
    let long = b.int("long int", 8, true);
    let m = vec![b.member("c", char_, 0), b.member("i", int, 8)];
    let p = b.strukt("packed_misaligned", 5, m);
    let m = vec![b.member("l", long, 0), b.member("c", char_, 64)];
    b.strukt("packed_short_size", 9, m);
    // Contains the packed struct at an odd offset, itself natural.
    let m = vec![b.member("c", char_, 0), b.member("p", p, 8)];
    b.strukt("holds_packed", 6, m);
    // A naturally aligned struct stays unmarked.
    let m = vec![b.member("i", int, 0), b.member("c", char_, 32)];
    b.strukt("natural", 8, m);
    // A union with a size not a multiple of its alignment.
    let m = vec![b.member("i", int, 0), b.member("c", char_, 0)];
    b.add(
        "odd_union",
        TypeData::Union {
            size: 6,
            members: m.into(),
        },
    );
    b
}

#[test]
fn dump_c_fixture_packed_matches_bpftool() {
    fixture_packed().check("packed");
}

fn fixture_anonymous() -> B {
    let mut b = B::new();
    let int = b.int("int", 4, true);
    let char_ = b.int("char", 1, true);
    let v = vec![b.enumv("RED", 0), b.enumv("GREEN", 1)];
    let anon_enum = b.add(
        "",
        TypeData::Enum {
            size: 4,
            values: v.into(),
        },
    );
    let m = vec![b.member("a", int, 0), b.member("b", char_, 32)];
    let inner = b.strukt("", 8, m);
    let m = vec![b.member("", inner, 0), b.member("word", int, 0)];
    let anon_union = b.add(
        "",
        TypeData::Union {
            size: 8,
            members: m.into(),
        },
    );
    let m = vec![b.member("x", int, 0), b.member("", anon_union, 64)];
    let ptr_to_anon_member = b.strukt("", 16, m);
    let p = b.ptr(ptr_to_anon_member);
    let m = vec![
        b.member("colour", anon_enum, 0),
        b.member("", anon_union, 64),
        b.member("p", p, 128),
    ];
    b.strukt("outer", 24, m);
    // Top-level anonymous enums: constants nobody refers to, signed, 8 bytes.
    let v = vec![b.enumv("CONST_A", 1), b.enumv("CONST_B", 0xffff_fffe)];
    b.add_kf(
        "",
        TypeData::Enum {
            size: 4,
            values: v.into(),
        },
    );
    let v = vec![b.enumv("BIG", 7)];
    b.add(
        "",
        TypeData::Enum {
            size: 8,
            values: v.into(),
        },
    );
    let v = vec![b.enumv("TINY", 1)];
    b.add(
        "tiny",
        TypeData::Enum {
            size: 1,
            values: v.into(),
        },
    );
    let v = vec![
        Enum64Value {
            name_off: b.btf.add_str("E64_SMALL"),
            val: 5,
        },
        Enum64Value {
            name_off: b.btf.add_str("E64_HUGE"),
            val: 1 << 40,
        },
    ];
    b.add("e64", TypeData::Enum64 { size: 8, values: v });
    let v = vec![Enum64Value {
        name_off: b.btf.add_str("E64_NEG"),
        val: (-3i64) as u64,
    }];
    b.add_kf("e64s", TypeData::Enum64 { size: 8, values: v });
    // A typedef of an anonymous struct and of an anonymous enum.
    let m = vec![b.member("v", int, 0)];
    let s = b.strukt("", 4, m);
    b.add("anon_t", TypeData::Typedef { ty: s });
    let v = vec![b.enumv("MODE_X", 3)];
    let e = b.add(
        "",
        TypeData::Enum {
            size: 4,
            values: v.into(),
        },
    );
    b.add("mode_t", TypeData::Typedef { ty: e });
    // An anonymous enum used only as a return type counts as unreferenced
    // (libbpf marks parameters, not return types): it is printed on its
    // own, and again inline in the prototype.
    let v = vec![b.enumv("RET_OK", 0)];
    let ret = b.add(
        "",
        TypeData::Enum {
            size: 4,
            values: v.into(),
        },
    );
    let proto = b.proto(ret, vec![]);
    let p = b.ptr(proto);
    let m = vec![b.member("cb", p, 0)];
    b.strukt("callbacks", 8, m);
    b
}

#[test]
fn dump_c_fixture_anonymous_types_match_bpftool() {
    fixture_anonymous().check("anonymous");
}

fn fixture_funcptrs() -> B {
    let mut b = B::new();
    let int = b.int("int", 4, true);
    let char_ = b.int("char", 1, true);
    let long = b.int("long unsigned int", 8, false);
    let i128 = b.int("__int128", 16, true);
    let dbl = b.add("double", TypeData::Float { size: 8 });
    let cchar = b.konst(char_);
    let pcchar = b.ptr(cchar);
    // int (*)(const char *, ...)
    let pa = b.param("fmt", pcchar);
    let pv = b.param("", 0);
    let printf_proto = b.proto(int, vec![pa, pv]);
    let printf_ptr = b.ptr(printf_proto);
    // void (*)(void)
    let pv = b.param("", 0);
    let void_proto = b.proto(0, vec![pv]);
    let void_ptr = b.ptr(void_proto);
    // An array of 4 function pointers.
    let arr_fp = b.array(void_ptr, int, 4);
    // A function returning a pointer to a function: int (*(*)(long))(char)
    let pc = b.param("c", char_);
    let inner = b.proto(int, vec![pc]);
    let inner_ptr = b.ptr(inner);
    let pl = b.param("n", long);
    let outer = b.proto(inner_ptr, vec![pl]);
    let outer_ptr = b.ptr(outer);
    // Qualifiers: const volatile int *restrict, int *const, pointer to array.
    let vol = b.add("", TypeData::Volatile { ty: int });
    let cvol = b.konst(vol);
    let pcv = b.ptr(cvol);
    let rp = b.add("", TypeData::Restrict { ty: pcv });
    let pint = b.ptr(int);
    let cpint = b.konst(pint);
    let arr3 = b.array(int, int, 3);
    let parr = b.ptr(arr3);
    let arr2x3 = b.array(arr3, int, 2);
    let pchar = b.ptr(char_);
    let ppchar = b.ptr(pchar);
    let m = vec![
        b.member("log", printf_ptr, 0),
        b.member("hooks", arr_fp, 64),
        b.member("factory", outer_ptr, 320),
        b.member("rp", rp, 384),
        b.member("cp", cpint, 448),
        b.member("parr", parr, 512),
        b.member("grid", arr2x3, 576),
        b.member("argv", ppchar, 768),
        b.member("wide", i128, 896),
        b.member("d", dbl, 1024),
    ];
    b.strukt("ops", 144, m);
    // typedefs of a function type and of a function pointer.
    let pa = b.param("a", int);
    let pb = b.param("b", long);
    let handler = b.proto(long, vec![pa, pb]);
    b.add("handler_fn", TypeData::Typedef { ty: handler });
    let hp = b.ptr(handler);
    b.add("handler_ptr", TypeData::Typedef { ty: hp });
    // Functions, variables and their section are not part of the header.
    let f = b.add(
        "some_func",
        TypeData::Func {
            proto: handler,
            linkage: 1,
        },
    );
    let v = b.add(
        "some_var",
        TypeData::Var {
            ty: int,
            linkage: 1,
        },
    );
    b.add(
        ".data",
        TypeData::Datasec {
            size: 4,
            vars: vec![btf::VarSecinfo {
                ty: v,
                offset: 0,
                size: 4,
            }]
            .into(),
        },
    );
    b.add(
        "tag",
        TypeData::DeclTag {
            ty: f,
            component_idx: -1,
        },
    );
    b
}

#[test]
fn dump_c_fixture_function_pointers_match_bpftool() {
    fixture_funcptrs().check("funcptrs");
}

fn fixture_forward() -> B {
    let mut b = B::new();
    let int = b.int("int", 4, true);
    // Mutually pointing structs: the first needs a forward declaration.
    let a_id = b.btf.type_count();
    let b_id = a_id + 3;
    let pb = b.ptr(b_id);
    assert_eq!(pb, a_id);
    let m = vec![b.member("b", pb, 0), b.member("n", int, 64)];
    let sa = b.strukt("alpha", 16, m);
    assert_eq!(sa, a_id + 1);
    let pa = b.ptr(sa);
    let m = vec![b.member("a", pa, 0), b.member("next", b_id + 1, 64)];
    let sb = b.strukt("beta", 16, m);
    assert_eq!(sb, b_id);
    // A self-referencing list node (pointer to itself needs nothing).
    let pnode = b.ptr(sb + 2);
    assert_eq!(pnode, sb + 1);
    let m = vec![b.member("next", pnode, 0), b.member("v", int, 64)];
    b.strukt("node", 16, m);
    // FWD kinds: struct and union, used through pointers.
    let fs = b.add("opaque", TypeData::Fwd);
    let fu = b.add_kf("opaque_u", TypeData::Fwd);
    let pfs = b.ptr(fs);
    let pfu = b.ptr(fu);
    // A typedef to a struct reached only through a pointer, and one that
    // embeds a struct defined later in id order.
    let later = b.btf.type_count() + 3;
    let td = b.add("later_t", TypeData::Typedef { ty: later });
    let ptd = b.ptr(td);
    let m = vec![
        b.member("o", pfs, 0),
        b.member("u", pfu, 64),
        b.member("t", ptd, 128),
    ];
    let user = b.strukt("user", 24, m);
    let m = vec![b.member("x", int, 0)];
    let l = b.strukt("later", 4, m);
    assert_eq!(l, later);
    assert!(user < l);
    // A struct that embeds a typedef'ed struct.
    let m = vec![b.member("t", td, 0)];
    b.strukt("embeds", 4, m);
    b
}

#[test]
fn dump_c_fixture_forward_declarations_match_bpftool() {
    fixture_forward().check("forward");
}

fn fixture_conflicts() -> B {
    let mut b = B::new();
    let int = b.int("int", 4, true);
    let long = b.int("long", 8, true);
    let m = vec![b.member("a", int, 0)];
    let d1 = b.strukt("dup", 4, m);
    let m = vec![b.member("b", long, 0)];
    let d2 = b.strukt("dup", 8, m);
    let m = vec![b.member("c", int, 0)];
    b.add(
        "dup",
        TypeData::Union {
            size: 4,
            members: m.into(),
        },
    );
    let m = vec![b.member("one", d1, 0), b.member("two", d2, 64)];
    b.strukt("user", 16, m);
    b.add("dup_t", TypeData::Typedef { ty: d1 });
    b.add("dup_t", TypeData::Typedef { ty: d2 });
    // Enumerators and typedefs share a namespace.
    let v = vec![b.enumv("VAL", 1), b.enumv("dup_t", 2)];
    b.add(
        "en",
        TypeData::Enum {
            size: 4,
            values: v.into(),
        },
    );
    let v = vec![b.enumv("VAL", 3)];
    b.add(
        "en",
        TypeData::Enum {
            size: 4,
            values: v.into(),
        },
    );
    // A forward declaration and an empty enum never get a suffix.
    b.add("dup", TypeData::Fwd);
    b.add(
        "en",
        TypeData::Enum {
            size: 4,
            values: Default::default(),
        },
    );
    b
}

#[test]
fn dump_c_fixture_name_conflicts_match_bpftool() {
    fixture_conflicts().check("conflicts");
}

fn fixture_quirks() -> B {
    let mut b = B::new();
    let int = b.int("int", 4, true);
    let char_ = b.int("char", 1, true);
    // GCC's va_list types: the builtin is never redefined, and an old
    // GCC's typedef of void becomes a typedef of the builtin.
    let va = b.strukt("__va_list_tag", 24, vec![]);
    let va_arr = b.array(va, int, 1);
    let builtin = b.add("__builtin_va_list", TypeData::Typedef { ty: va_arr });
    b.add("__gnuc_va_list", TypeData::Typedef { ty: 0 });
    b.add("va_list", TypeData::Typedef { ty: builtin });
    // ARM's polynomial types get an alias when a member uses them.
    let poly8 = b.int("__Poly8_t", 1, false);
    b.int("__Poly128_t", 16, false);
    // A typedef'ed pointer to a struct that uses the typedef: the typedef
    // comes first, as its own forward declaration.
    let list_id = b.btf.type_count() + 2;
    let plist = b.ptr(list_id);
    let list_p = b.add("list_p", TypeData::Typedef { ty: plist });
    let m = vec![b.member("next", list_p, 0), b.member("v", int, 64)];
    assert_eq!(b.strukt("list", 16, m), list_id);
    // Qualifiers GCC puts on arrays of const and on noreturn function
    // pointers are dropped.
    let cint = b.konst(int);
    let carr = b.array(cint, int, 2);
    let const_arr = b.konst(carr);
    let pv = b.param("", 0);
    let noret = b.proto(0, vec![pv]);
    let vnoret = b.add("", TypeData::Volatile { ty: noret });
    let pvnoret = b.ptr(vnoret);
    // Signed enumerators, negative ones included.
    let v = vec![b.enumv("NEG", (-5i32) as u32), b.enumv("POS", 5)];
    let signed = b.add_kf(
        "sgn",
        TypeData::Enum {
            size: 4,
            values: v.into(),
        },
    );
    let m = vec![
        b.member("ca", const_arr, 0),
        b.member("die", pvnoret, 64),
        b.member("s", signed, 128),
        b.member("c", char_, 160),
        b.member("p8", poly8, 168),
    ];
    b.strukt("quirks", 24, m);
    b
}

#[test]
fn dump_c_fixture_quirks_match_bpftool() {
    fixture_quirks().check("quirks");
}

#[test]
fn dump_c_rejects_bad_ids_and_loops_without_panicking() {
    // A member type id past the end.
    let mut b = B::new();
    let int = b.int("int", 4, true);
    let m = vec![b.member("x", int + 40, 0)];
    b.strukt("bad", 4, m);
    let err = btf::dump::c::dump(&b.btf, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("type [2]"), "{err}");

    // A const that refers to itself: no struct to break the loop.
    let mut b = B::new();
    let id = b.btf.type_count();
    b.add("", TypeData::Const { ty: id });
    assert!(btf::dump::c::dump(&b.btf, &mut Vec::new()).is_err());

    // Pointer loop used as a member type: the declaration chain is bounded.
    let mut b = B::new();
    let id = b.btf.type_count();
    b.add("", TypeData::Ptr { ty: id });
    let m = vec![b.member("p", id, 0)];
    b.strukt("s", 8, m);
    assert!(btf::dump::c::dump(&b.btf, &mut Vec::new()).is_err());

    // A struct that embeds itself cannot be ordered.
    let mut b = B::new();
    let id = b.btf.type_count();
    let m = vec![b.member("me", id, 0)];
    b.strukt("self", 4, m);
    let err = btf::dump::c::dump(&b.btf, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("cycle"), "{err}");

    // A member far past its 24-byte struct (a fuzzer's find): padding up to
    // it would be ~24 million lines; it is an error naming the type instead.
    let mut b = B::new();
    let int = b.int("int", 4, true);
    let m = vec![b.member("x", int, 0), b.member("far", int, 1_543_503_904)];
    let s = b.strukt("s", 24, m);
    let err = btf::dump::c::dump(&b.btf, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains(&format!("type [{s}]")), "{err}");
}

fn fixture_tags() -> B {
    let mut b = B::new();
    let int = b.int("int", 4, true);
    // int __attribute__((btf_type_tag("user"))) *p;
    let tag = b.add("user", TypeData::TypeTag { ty: int });
    let p = b.ptr(tag);
    // const tagged pointer target, and a tag on a pointer itself.
    let c = b.konst(int);
    let tag2 = b.add("rcu", TypeData::TypeTag { ty: c });
    let p2 = b.ptr(tag2);
    let tag3 = b.add("percpu", TypeData::TypeTag { ty: p2 });
    let m = vec![b.member("p", p, 0), b.member("q", tag3, 64)];
    let s = b.strukt("tagged", 16, m);
    // Declaration tags print nothing.
    b.add(
        "member_tag",
        TypeData::DeclTag {
            ty: s,
            component_idx: 0,
        },
    );
    b.add(
        "struct_tag",
        TypeData::DeclTag {
            ty: s,
            component_idx: -1,
        },
    );
    b
}

#[test]
fn dump_c_fixture_type_and_decl_tags_match_bpftool() {
    fixture_tags().check("tags");
}

#[test]
fn dump_c_matches_bpftool_debian_module_split_btf() {
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let ko = k.image_modules.join("kernel/net/key/af_key.ko");
    if !ko.is_file() {
        return testkit::skip(
            "Debian's af_key.ko is not cached: run scripts/fetch-debian-kernel.sh",
        );
    }
    let btf = btf::load_file(&ko, Some(&k.vmlinux)).expect("load split BTF");
    let theirs = testkit::run_ok(
        Command::new(&bpftool)
            .arg("-B")
            .arg(&k.vmlinux)
            .args(["btf", "dump", "file"])
            .arg(&ko)
            .args(["format", "c"]),
    );
    assert_same_text(&ko.display().to_string(), &ours_c(&btf), &theirs);
}

#[test]
fn dump_c_deep_nesting_errors_or_succeeds_without_overflow() {
    // Anonymous structs nested inside each other, far deeper than any real
    // kernel: written inline, each level recurses. This runs on a test
    // thread's small stack on purpose.
    for levels in [200u32, 1000, 5000] {
        let mut b = B::new();
        let int = b.int("int", 4, true);
        let mut inner = int;
        for _ in 0..levels {
            let m = vec![b.member("x", inner, 0)];
            inner = b.strukt("", 4, m);
        }
        let m = vec![b.member("deep", inner, 0)];
        b.strukt("top", 4, m);
        let mut out = Vec::new();
        let res = btf::dump::c::dump(&b.btf, &mut out);
        if levels == 200 {
            res.expect("200 levels are within bounds");
            let text = String::from_utf8(out).unwrap();
            assert_eq!(text.matches("struct {").count(), 200);
        } else if levels == 5000 {
            assert!(res.is_err(), "5000 levels must be refused, not crash");
        }
    }
}

#[test]
fn dump_c_shared_prototypes_do_not_blow_up() {
    // Each prototype takes two pointers to the next one: printed in full,
    // the declaration doubles at each level (2^48 here). The dump must
    // refuse it quickly rather than run for ever.
    let mut b = B::new();
    let int = b.int("int", 4, true);
    let mut next = b.proto(int, vec![]);
    for _ in 0..48 {
        let p = b.ptr(next);
        let pa = b.param("a", p);
        let pb = b.param("b", p);
        next = b.proto(int, vec![pa, pb]);
    }
    let p = b.ptr(next);
    b.add("huge_t", TypeData::Typedef { ty: p });
    let err = btf::dump::c::dump(&b.btf, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("without bound"), "{err}");
}

#[test]
fn dump_c_survives_scrambled_references() {
    // Rewire the references of every fixture at random (within range):
    // loops, functions used as members, arrays of void... Each dump must
    // end with output or an error, never a panic or a hang.
    let fixtures = [
        fixture_bitfields(),
        fixture_packed(),
        fixture_anonymous(),
        fixture_funcptrs(),
        fixture_forward(),
        fixture_conflicts(),
        fixture_tags(),
        fixture_quirks(),
    ];
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for fx in fixtures {
        let n = u64::from(fx.btf.type_count());
        for _ in 0..100 {
            let mut btf = fx.btf.clone();
            for id in 1..btf.type_count() {
                let t = btf.type_by_id_mut(id).unwrap();
                t.for_each_ref_mut(|r| {
                    if next() % 3 == 0 {
                        *r = (next() % n) as TypeId;
                    }
                });
                // Also flags, names (some past the string section) and
                // member offsets. A struct keeps its kind_flag: read the
                // other way, a bitfield's offset word is a gap of millions
                // of bits, which both bpftool and we fill, slowly.
                let composite = matches!(t.data, TypeData::Struct { .. } | TypeData::Union { .. });
                if !composite && next() % 7 == 0 {
                    t.kind_flag = !t.kind_flag;
                }
                if next() % 11 == 0 {
                    t.name_off = (next() % 1000) as u32;
                }
                if let TypeData::Struct { members, .. } | TypeData::Union { members, .. } =
                    &mut t.data
                {
                    for m in members {
                        if next() % 5 == 0 {
                            m.offset = (next() % 65536) as u32;
                        }
                    }
                }
            }
            let _ = btf::dump::c::dump(&btf, &mut Vec::new());
        }
    }
}
