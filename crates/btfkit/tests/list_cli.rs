//! `btfkit list` and `btfkit dump id N` against bpftool's `btf list` and
//! `btf dump id N` on the running kernel (root): a BTF object this test
//! loads, two maps that use it, and vmlinux's. Other processes may load and
//! free BTF objects meanwhile, so the objects both tools saw are compared.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Output};

use btf::builder::{Builder, Field, Linkage};
use btf::Btf;

fn btfkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .args(args)
        .output()
        .expect("run btfkit")
}

/// `struct s { int a; }` and `int`: a map's key and value types.
fn small_btf() -> Builder {
    let mut b = Builder::new();
    let int = b.add_int("int", 4, btf::format::BTF_INT_SIGNED);
    b.add_struct("s", 4, &[Field::new("a", int, 0)]);
    b
}

/// An array map of one `int -> int` entry typed by BTF object `btf_fd`.
fn array_map(btf_fd: &OwnedFd, name: &str) -> OwnedFd {
    let mut attr = [0u8; 72];
    let put = |a: &mut [u8], at: usize, v: u32| a[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    put(&mut attr, 0, 2); // BPF_MAP_TYPE_ARRAY
    put(&mut attr, 4, 4); // key_size
    put(&mut attr, 8, 4); // value_size
    put(&mut attr, 12, 1); // max_entries
    attr[28..28 + name.len()].copy_from_slice(name.as_bytes());
    put(&mut attr, 48, btf_fd.as_raw_fd() as u32);
    put(&mut attr, 52, 1); // btf_key_type_id: int
    put(&mut attr, 56, 1); // btf_value_type_id: int
                           // SAFETY: `attr` is BPF_MAP_CREATE's part of `union bpf_attr`
                           // (zeroed past the fields set), passed with its size.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, 0 as libc::c_long, attr.as_ptr(), attr.len()) };
    assert!(
        fd >= 0,
        "BPF_MAP_CREATE: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a new fd nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

fn by_id(v: &serde_json::Value) -> std::collections::BTreeMap<u64, serde_json::Value> {
    v.as_array()
        .expect("a JSON array")
        .iter()
        .map(|o| (o["id"].as_u64().expect("id"), o.clone()))
        .collect()
}

#[test]
fn list_and_dump_id_match_bpftool_btf_list_and_dump_id() {
    let Some(()) =
        testkit::kernel_tier("loads BTF, maps and programs into the running kernel (root, bpf)")
    else {
        return;
    };
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("reading the kernel's BTF objects needs root");
    }
    let btf_fd = btf::kernel::load(&small_btf().finish().to_bytes()).expect("BPF_BTF_LOAD");
    let (m1, m2) = (
        array_map(&btf_fd, "btfkit_t1"),
        array_map(&btf_fd, "btfkit_t2"),
    );

    // The objects no other process or test thread can change between the
    // two tools' listings: this test's own and the kernel's (vmlinux and
    // modules). The other test of this file frees its programs meanwhile.
    let ours = btfkit(&["list", "--json"]);
    let ours: serde_json::Value = serde_json::from_slice(&ours.stdout).expect("JSON");
    let theirs: serde_json::Value = serde_json::from_slice(&testkit::run_ok(
        Command::new(&bpftool).args(["-j", "btf", "list"]),
    ))
    .expect("bpftool JSON");
    let (o, t) = (by_id(&ours), by_id(&theirs));
    let ours_id = o
        .values()
        .find(|v| v["map_ids"].as_array().is_some_and(|m| m.len() == 2))
        .and_then(|v| v["id"].as_u64())
        .expect("our id");
    let stable = |id: &u64| *id == ours_id || o[id]["kernel"] == serde_json::Value::Bool(true);
    let common: Vec<u64> = o
        .keys()
        .filter(|k| t.contains_key(k) && stable(k))
        .copied()
        .collect();
    assert!(common.len() >= 2, "{o:?}\n{t:?}");
    for id in &common {
        assert_eq!(o[id], t[id], "btf id {id}");
    }

    let ours = btfkit(&["list"]);
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let theirs = testkit::run_ok(Command::new(&bpftool).args(["btf", "list"]));
    let lines = |b: &[u8]| -> std::collections::BTreeMap<String, String> {
        String::from_utf8_lossy(b)
            .split_inclusive('\n')
            .map(|l| {
                (
                    l.split(':').next().unwrap_or("").to_owned(),
                    l.trim_end().to_owned(),
                )
            })
            .collect()
    };
    let (lo, lt) = (lines(&ours.stdout), lines(&theirs));
    for id in &common {
        let id = id.to_string();
        if let (Some(line), Some(other)) = (lo.get(&id), lt.get(&id)) {
            assert_eq!(line, other, "btfkit list vs bpftool btf list");
        }
    }
    // Ours has two map ids, highest first, as bpftool orders them.
    let ours_line = &lo[&ours_id.to_string()];
    assert!(ours_line.contains("name <anon>"), "{ours_line}");
    assert!(ours_line.contains("map_ids"), "{ours_line}");

    // dump id: our object, and vmlinux (id 1 is the first the kernel registers).
    let ours_id = ours_id.to_string();
    for id in [ours_id.as_str(), "1"] {
        let ours = btfkit(&["dump", "id", id]);
        assert!(
            ours.status.success(),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let theirs = testkit::run_ok(Command::new(&bpftool).args(["btf", "dump", "id", id]));
        assert!(ours.stdout == theirs, "dump id {id} differs from bpftool's");
    }
    let ours = btfkit(&["dump", "id", &ours_id, "--format", "c"]);
    let theirs = testkit::run_ok(
        Command::new(&bpftool).args(["btf", "dump", "id", &ours_id, "format", "c"]),
    );
    assert!(ours.stdout == theirs, "dump id {ours_id} format c differs");
    drop((m1, m2, btf_fd));

    let none = btfkit(&["dump", "id", "4294967295"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).contains("4294967295"));
    let bad = btfkit(&["dump", "id", "x"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// `int f(void)` for a program's func_info, after the types of [`small_btf`].
fn btf_with_func() -> (Btf, u32) {
    let mut b = small_btf();
    let proto = b.add_func_proto(1, &[]);
    let func = b.add_func("btfkit_prog", proto, Linkage::Global);
    (b.finish(), func)
}

/// A socket filter `r0 = 0; exit` whose func_info names FUNC `func` of
/// BTF object `btf_fd`: the program's btf_id is that object.
fn program(btf_fd: &OwnedFd, func: u32) -> OwnedFd {
    let insns: [u64; 2] = [0x0000_0000_0000_00b7, 0x0000_0000_0000_0095];
    let license = b"GPL\0";
    let func_info: [u32; 2] = [0, func];
    let mut attr = [0u8; 144];
    let put = |a: &mut [u8], at: usize, v: u32| a[at..at + 4].copy_from_slice(&v.to_ne_bytes());
    let put64 = |a: &mut [u8], at: usize, v: u64| a[at..at + 8].copy_from_slice(&v.to_ne_bytes());
    put(&mut attr, 0, 1); // BPF_PROG_TYPE_SOCKET_FILTER
    put(&mut attr, 4, 2); // insn_cnt
    put64(&mut attr, 8, insns.as_ptr() as u64);
    put64(&mut attr, 16, license.as_ptr() as u64);
    put(&mut attr, 72, btf_fd.as_raw_fd() as u32); // prog_btf_fd
    put(&mut attr, 76, 8); // func_info_rec_size
    put64(&mut attr, 80, func_info.as_ptr() as u64);
    put(&mut attr, 88, 1); // func_info_cnt
                           // SAFETY: `attr` is BPF_PROG_LOAD's part of `union bpf_attr` (zeroed
                           // past the fields set); its pointers refer to the arrays above, alive
                           // for the call.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, 5 as libc::c_long, attr.as_ptr(), attr.len()) };
    assert!(
        fd >= 0,
        "BPF_PROG_LOAD: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a new fd nothing else owns.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

/// Two programs and a map on one BTF object: their ids as bpftool lists
/// them, text and JSON.
#[test]
fn list_prog_and_map_owners_match_bpftool_btf_list() {
    let Some(()) =
        testkit::kernel_tier("loads BTF, maps and programs into the running kernel (root, bpf)")
    else {
        return;
    };
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("reading the kernel's BTF objects needs root");
    }
    let (b, func) = btf_with_func();
    let btf_fd = btf::kernel::load(&b.to_bytes()).expect("BPF_BTF_LOAD");
    let owners = (
        program(&btf_fd, func),
        program(&btf_fd, func),
        array_map(&btf_fd, "btfkit_t3"),
    );
    let ours = btfkit(&["list"]);
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let theirs = testkit::run_ok(Command::new(&bpftool).args(["btf", "list"]));
    let theirs = String::from_utf8_lossy(&theirs).into_owned();
    let line = String::from_utf8_lossy(&ours.stdout)
        .lines()
        .find(|l| l.contains("prog_ids") && l.contains("map_ids"))
        .map(str::to_owned)
        .expect("the test's object with programs and a map");
    assert!(
        theirs.lines().any(|l| l == line),
        "{line}\nnot in\n{theirs}"
    );
    let ids = line
        .split("prog_ids ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next());
    assert_eq!(ids.map(|i| i.split(',').count()), Some(2), "{line}");

    let ours: serde_json::Value =
        serde_json::from_slice(&btfkit(&["list", "--json"]).stdout).expect("JSON");
    let theirs: serde_json::Value = serde_json::from_slice(&testkit::run_ok(
        Command::new(&bpftool).args(["-j", "btf", "list"]),
    ))
    .expect("bpftool JSON");
    let id = line
        .split(':')
        .next()
        .and_then(|i| i.parse::<u64>().ok())
        .expect("id");
    assert_eq!(by_id(&ours).get(&id), by_id(&theirs).get(&id));
    drop((owners, btf_fd));
}
