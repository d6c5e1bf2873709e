//! `btf::builder` against the kernel and bpftool: BTF with every kind the
//! builder adds validates, bpftool reads its bytes as the types built
//! (its raw dump is ours), and the running kernel loads it
//! (BPF_BTF_LOAD, as root).

use std::process::Command;

use btf::builder::{Builder, Field, Linkage};
use btf::format::BTF_INT_SIGNED;
use btf::{Btf, Kind};

/// One type of every kind the builder adds, as C would give them.
fn every_kind() -> Btf {
    let mut b = Builder::new();
    let int = b.add_int("int", 4, BTF_INT_SIGNED);
    let uint = b.add_int("unsigned int", 4, 0);
    let char_ = b.add_int("char", 1, BTF_INT_SIGNED);
    let long = b.add_int("long", 8, BTF_INT_SIGNED);
    b.add_float("double", 8);
    let cchar = b.add_const(char_);
    let name = b.add_ptr(cchar);
    let buf = b.add_array(char_, int, 16);
    let fwd = b.add_fwd("list_head", false);
    let next = b.add_ptr(fwd);
    let inner = b.add_union("", 8, &[Field::new("l", long, 0), Field::new("i", int, 0)]);
    let task = b.add_struct(
        "task",
        48,
        &[
            Field::new("name", name, 0),
            Field::new("comm", buf, 64),
            Field::bitfield("flags", uint, 192, 3),
            Field::bitfield("state", uint, 195, 5),
            Field::new("next", next, 256),
            Field::new("", inner, 320),
        ],
    );
    let user = b.add_type_tag("user", task);
    let uptr = b.add_ptr(user);
    let vptr = b.add_volatile(uptr);
    let rptr = b.add_restrict(vptr);
    b.add_typedef("task_t", task);
    b.add_enum("state", 4, &[("RUNNING", 0), ("DEAD", -1)]);
    b.add_enum("big", 8, &[("HUGE", 1 << 40)]);
    let proto = b.add_func_proto(int, &[("t", rptr), ("n", long)]);
    let func = b.add_func("wake", proto, Linkage::Global);
    b.add_decl_tag("hot", func, None);
    b.add_decl_tag("nonnull", func, Some(0));
    b.add_decl_tag("addr=0xffffffff81000000", func, None);
    let var = b.add_var("current_task", task, Linkage::Global);
    b.add_datasec(".data", 48, &[(var, 0, 48)]);
    b.finish()
}

#[test]
fn builder_output_validates() {
    let btf = every_kind();
    assert_eq!(btf::validate::validate(&btf), []);
    let blob = btf.to_bytes();
    let reread = Btf::parse(&blob).expect("our bytes parse");
    assert_eq!(reread.own_types(), btf.own_types());
    let task = reread
        .find_by_name_kind("task", Kind::STRUCT)
        .expect("task");
    let bits: Vec<(&str, u32, u32)> = reread
        .members(task)
        .map(|m| m.expect("member name"))
        .map(|m| (m.name, m.bit_offset, m.bitfield_size))
        .collect();
    assert_eq!(
        bits,
        [
            ("name", 0, 0),
            ("comm", 64, 0),
            ("flags", 192, 3),
            ("state", 195, 5),
            ("next", 256, 0),
            ("", 320, 0)
        ]
    );
}

#[test]
fn builder_output_reads_the_same_in_bpftool() {
    let Some(tool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    let btf = every_kind();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("built.btf");
    std::fs::write(&path, btf.to_bytes()).expect("write");
    let theirs = testkit::run_ok(Command::new(tool).args(["btf", "dump", "file"]).arg(&path));
    let mut ours = Vec::new();
    btf::dump::raw::dump(&btf, &mut ours).expect("dump");
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs)
    );
}

#[test]
fn kernel_loads_builder_output_btf_load() {
    let Some(()) = testkit::kernel_tier("loads BTF into the running kernel (root, bpf)") else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("BPF_BTF_LOAD needs root");
    }
    let btf = every_kind();
    if let Err(e) = btf::kernel::load(&btf.to_bytes()) {
        panic!("the kernel rejects the built BTF: {e:?}");
    }
}
