//! An encode's threads against the kernel's list of this process's threads
//! (/proc/self/task): `dwarf2btf::encode` returns once every thread it
//! started has exited, so a library caller (a test, the fuzzer's leak
//! check) sees no thread or thread-local memory of an encode that is over.
//! Alone in its test binary: no other test starts threads meanwhile.

use std::sync::Arc;

use dwarf2btf::load::ElfFile;
use dwarf2btf::{EncodeOptions, NoProgress};
use testkit::Fixture;

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

#[test]
fn encode_leaves_no_thread_proc_self_task() {
    let fx = Fixture::new();
    fx.write("base.c", "struct s { int a; long b; }; struct s g_s;\n");
    fx.write(
        "module.c",
        "struct s { int a; long b; };\nint f(struct s *s) { return s->a; }\n",
    );
    let base_obj = fx.cc("base.o", &["base.c"], &["-g", "-O2", "-c"]);
    let module_obj = fx.cc("module.o", &["module.c"], &["-g", "-O2", "-c"]);
    let opts = EncodeOptions {
        jobs: 2,
        ..EncodeOptions::default()
    };
    let before = threads();
    // Whole: the worker pool. Split over a base read from bytes (as a
    // module build reads vmlinux's): the pool and the base's preparation
    // (over so small a base that one usually exits in time unjoined too).
    let base = dwarf2btf::encode(&ElfFile::open(&base_obj).unwrap(), None, &opts, &NoProgress)
        .expect("encode base.o")
        .btf
        .to_bytes();
    assert_eq!(threads(), before, "threads left by a whole encode");
    let base = Arc::new(btf::parse_any(&base, None).expect("parse base"));
    dwarf2btf::encode(
        &ElfFile::open(&module_obj).unwrap(),
        Some(base),
        &opts,
        &NoProgress,
    )
    .expect("encode module.o");
    assert_eq!(threads(), before, "threads left by a split encode");
}
