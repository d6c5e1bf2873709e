//! Writes that keep what is at the output path (device nodes, FIFOs,
//! symlinks, hard links, owners), `pahole -J` that replaces `.BTF` without
//! growing the file, and bad input that used to give exit 0 with bad
//! output: each refused with the file and offset named, nothing written.
//! Fixtures are C compiled at test time and patched here; the oracles are
//! bpftool (libbpf's reader), pahole 1.24 and btfkit's own `check`.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use object::read::elf::ElfFile64;
use object::{Object, ObjectSection};
use testkit::compressed::{compress, CODECS};
use testkit::Fixture;

const BTFKIT: &str = env!("CARGO_BIN_EXE_btfkit");

const SOURCE: &str = r#"
struct bits { unsigned int a:3; unsigned int b:5; };
union u { int i; char c; };
struct bits g_bits;
union u g_u;
typedef struct bits bits_of_a_word;
__attribute__((noinline)) int sum_of_fields(bits_of_a_word *p, union u *q) { return p->a + q->c; }
"#;

/// A relocatable object with DWARF 5, as a module is.
fn object(fx: &Fixture) -> PathBuf {
    fx.write("t.c", SOURCE);
    fx.cc("t.o", &["t.c"], &["-c", "-g", "-gdwarf-5", "-O2"])
}

fn run(args: &[&str], paths: &[&Path]) -> Output {
    Command::new(BTFKIT)
        .args(args)
        .args(paths)
        .output()
        .expect("run btfkit")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn assert_ok(o: &Output, what: &str) {
    assert!(o.status.success(), "{what}: {:?}\n{}", o.status, text(o));
}

/// Exit code 1, no panic, and every one of `mentions` in the message.
fn assert_fails_naming(o: &Output, mentions: &[&str], what: &str) {
    assert_eq!(o.status.code(), Some(1), "{what}: {}", text(o));
    assert!(!text(o).contains("panicked"), "{what}: {}", text(o));
    for m in mentions {
        assert!(text(o).contains(m), "{what}: no '{m}' in:\n{}", text(o));
    }
}

/// The raw BTF btfkit encodes from `obj` (written to a regular file).
fn encoded(fx: &Fixture, obj: &Path) -> Vec<u8> {
    let out = fx.path("reference.btf");
    assert_ok(&run(&["encode", "-o"], &[&out, obj]), "encode");
    std::fs::read(&out).expect("read")
}

/// The commands that write a file named by a flag: `btfkit encode -o`,
/// `encode --embed`, `dedup -o`, `pahole --btf_encode_detached`.
fn writers(obj: &Path, btf: &Path, out: &Path) -> Vec<(&'static str, Vec<PathBufOrStr>)> {
    use PathBufOrStr::{P, S};
    vec![
        (
            "encode -o",
            vec![S("encode"), S("-o"), P(out.into()), P(obj.into())],
        ),
        (
            "encode --embed",
            vec![S("encode"), S("--embed"), P(out.into()), P(obj.into())],
        ),
        (
            "dedup -o",
            vec![S("dedup"), S("-o"), P(out.into()), P(btf.into())],
        ),
        (
            "pahole --btf_encode_detached",
            vec![
                S("pahole"),
                S("-J"),
                S("--btf_encode_detached"),
                P(out.into()),
                P(obj.into()),
            ],
        ),
    ]
}

enum PathBufOrStr {
    P(PathBuf),
    S(&'static str),
}

fn run_writer(args: &[PathBufOrStr]) -> Output {
    let mut c = Command::new(BTFKIT);
    for a in args {
        match a {
            PathBufOrStr::P(p) => c.arg(p),
            PathBufOrStr::S(s) => c.arg(s),
        };
    }
    c.output().expect("run btfkit")
}

// ---- item 1: -o PATH

/// As root, `-o` naming a character device (the null device, made with
/// mknod in a temporary directory, never the system's /dev/null) writes
/// into it: it is still the same device afterwards.
#[test]
fn dash_o_into_a_device_node_keeps_the_node() {
    if !testkit::is_root() {
        return testkit::skip("mknod needs root");
    }
    let fx = Fixture::new();
    let obj = object(&fx);
    let btf = fx.path("in.btf");
    std::fs::write(&btf, encoded(&fx, &obj)).expect("write");
    let null = fx.path("null");
    let c = std::ffi::CString::new(null.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid path; makedev(1, 3) is the null device.
    let r = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    assert_eq!(r, 0, "mknod: {}", std::io::Error::last_os_error());
    for (what, args) in writers(&obj, &btf, &null) {
        assert_ok(&run_writer(&args), what);
        let m = std::fs::symlink_metadata(&null).expect("stat");
        assert!(
            m.file_type().is_char_device(),
            "{what} replaced the device node"
        );
        assert_eq!(m.rdev(), libc::makedev(1, 3), "{what}");
    }
}

/// A reader of a FIFO at PATH gets the bytes a regular file would get, and
/// the FIFO stays.
#[test]
fn dash_o_into_a_fifo_gives_the_reader_the_bytes() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let btf = fx.path("in.btf");
    std::fs::write(&btf, encoded(&fx, &obj)).expect("write");
    let fifo = fx.path("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    for (what, args) in writers(&obj, &btf, &fifo) {
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).expect("read the fifo"))
        };
        assert_ok(&run_writer(&args), what);
        let got = reader.join().expect("reader");
        // The same command into a regular file.
        let regular = fx.path("regular");
        let _ = std::fs::remove_file(&regular);
        let args = writers(&obj, &btf, &regular)
            .into_iter()
            .find(|(w, _)| *w == what)
            .expect("same writer")
            .1;
        assert_ok(&run_writer(&args), what);
        assert!(!got.is_empty(), "{what}: the reader got 0 bytes");
        assert_eq!(got, std::fs::read(&regular).expect("read"), "{what}");
        let m = std::fs::symlink_metadata(&fifo).expect("stat");
        assert!(m.file_type().is_fifo(), "{what} replaced the FIFO");
    }
}

/// Through a symlink: its target gets the bytes, the link stays a link.
#[test]
fn dash_o_through_a_symlink_writes_its_target() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let btf = fx.path("in.btf");
    std::fs::write(&btf, encoded(&fx, &obj)).expect("write");
    let (link, target) = (fx.path("link"), fx.path("target"));
    std::os::unix::fs::symlink("target", &link).expect("symlink");
    for (what, args) in writers(&obj, &btf, &link) {
        std::fs::write(&target, b"old").expect("write");
        assert_ok(&run_writer(&args), what);
        let m = std::fs::symlink_metadata(&link).expect("stat");
        assert!(m.file_type().is_symlink(), "{what} replaced the symlink");
        let got = std::fs::read(&target).expect("read");
        assert!(got.len() > 3 && got != b"old", "{what}: target not written");
    }
}

/// `-o -` writes to standard output: the same bytes as a file.
#[test]
fn dash_o_dash_writes_stdout() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let out = run(&["encode", "-o", "-"], &[&obj]);
    assert_ok(&out, "encode -o -");
    assert_eq!(out.stdout, encoded(&fx, &obj));
    assert!(!Path::new("-").exists(), "a file named - was written");
}

// ---- items 2-4: pahole -J in place

fn pahole_j(obj: &Path) -> Output {
    run(&["pahole", "-J", "-j"], &[obj])
}

/// libbpf's view of the file's BTF.
fn bpftool_dump(file: &Path) -> Option<String> {
    let bpftool = testkit::tool_or_skip("bpftool", "bpftool")?;
    let out = Command::new(bpftool)
        .args(["btf", "dump", "file"])
        .arg(file)
        .output()
        .expect("run bpftool");
    assert!(out.status.success(), "bpftool: {}", text(&out));
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn pahole_j_through_a_symlink_writes_the_target_bpftool() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let link = fx.path("link.o");
    std::os::unix::fs::symlink("t.o", &link).expect("symlink");
    assert_ok(&pahole_j(&link), "pahole -J link");
    assert!(std::fs::symlink_metadata(&link)
        .expect("stat")
        .file_type()
        .is_symlink());
    let Some(dump) = bpftool_dump(&obj) else {
        return;
    };
    assert!(
        dump.contains("STRUCT 'bits'"),
        "the target has no .BTF: {dump}"
    );
}

/// A hard-linked object is replaced whole, never written in place (where a
/// full disk or a signal halfway would leave half a file under every
/// name): the path given gets the new file, the other name keeps the old
/// content, and a warning says so.
#[test]
fn pahole_j_on_a_hard_link_replaces_the_path_given_and_warns_bpftool() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let before = std::fs::read(&obj).expect("read");
    let other = fx.path("other.o");
    std::fs::hard_link(&obj, &other).expect("link");
    let out = pahole_j(&obj);
    assert_ok(&out, "pahole -J");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning") && err.contains("1 other hard link") && err.contains("t.o"),
        "{err}"
    );
    assert_ne!(
        std::fs::metadata(&obj).expect("stat").ino(),
        std::fs::metadata(&other).expect("stat").ino(),
        "written in place"
    );
    assert_eq!(
        std::fs::read(&other).expect("read"),
        before,
        "the other link changed"
    );
    let Some(dump) = bpftool_dump(&obj) else {
        return;
    };
    assert!(dump.contains("STRUCT 'bits'"), "{dump}");
}

/// As root (the kernel build's case): owner, group and mode are kept.
#[test]
fn pahole_j_keeps_owner_group_and_mode() {
    if !testkit::is_root() {
        return testkit::skip("chown to another owner needs root");
    }
    let fx = Fixture::new();
    let obj = object(&fx);
    std::os::unix::fs::chown(&obj, Some(1234), Some(5678)).expect("chown");
    std::fs::set_permissions(&obj, std::fs::Permissions::from_mode(0o751)).expect("chmod");
    assert_ok(&pahole_j(&obj), "pahole -J");
    let m = std::fs::metadata(&obj).expect("stat");
    assert_eq!((m.uid(), m.gid(), m.mode() & 0o7777), (1234, 5678, 0o751));
}

/// How many sections of `name` the ELF at `path` has.
fn sections_named(path: &Path, name: &str) -> usize {
    let data = std::fs::read(path).expect("read");
    let elf = ElfFile64::<object::Endianness>::parse(&*data).expect("parse");
    elf.sections().filter(|s| s.name() == Ok(name)).count()
}

/// Running `pahole -J` again replaces `.BTF`: the file keeps its size after
/// the first run, as pahole 1.24's does after its second, and has one
/// `.BTF`.
#[test]
fn pahole_j_twice_does_not_grow_the_file_like_pahole() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let mut sizes = Vec::new();
    for _ in 0..3 {
        assert_ok(&pahole_j(&obj), "pahole -J");
        sizes.push(std::fs::metadata(&obj).expect("stat").len());
    }
    assert!(sizes.windows(2).all(|w| w[0] == w[1]), "sizes {sizes:?}");
    assert_eq!(sections_named(&obj, ".BTF"), 1);
    let Some(pahole) = testkit::tool_or_skip("pahole", "dwarves") else {
        return;
    };
    let theirs = fx.path("theirs.o");
    let mut pahole_sizes = Vec::new();
    fx.cc("theirs.o", &["t.c"], &["-c", "-g", "-gdwarf-5", "-O2"]);
    for _ in 0..3 {
        testkit::run_ok(
            Command::new(&pahole)
                .arg("-J")
                .arg(&theirs)
                .env("LLVM_OBJCOPY", "objcopy"),
        );
        pahole_sizes.push(std::fs::metadata(&theirs).expect("stat").len());
    }
    // pahole 1.24 adds 16 bytes on its second run (libelf's realignment),
    // then keeps the size.
    assert_eq!(
        pahole_sizes[1], pahole_sizes[2],
        "the oracle grows: {pahole_sizes:?}"
    );
    assert_eq!(sections_named(&theirs, ".BTF"), 1);
}

/// A temporary file left by a run killed with SIGKILL (its process is gone)
/// is removed by the next run on the same file.
#[test]
fn stale_temp_of_a_killed_run_is_removed_by_the_next_pahole_j() {
    let fx = Fixture::new();
    let obj = object(&fx);
    // A PID no process can have: above the kernel's PID_MAX_LIMIT (2^22).
    let stale = fx.path(".t.o.tmp.2000000000");
    std::fs::write(&stale, b"half a vmlinux").expect("write");
    assert_ok(&pahole_j(&obj), "pahole -J");
    assert!(!stale.exists(), "the stale temporary file is still there");
    let left: Vec<_> = std::fs::read_dir(fx.dir.path())
        .expect("ls")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// SIGINT while `pahole -J` writes a large file: the temporary file goes
/// with the process. The signal is sent as soon as the temporary file
/// appears; the run is repeated if the write won the race.
#[test]
fn sigint_during_pahole_j_removes_the_temp_file() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let vmlinux = dir.path().join("vmlinux");
    std::fs::copy(&k.vmlinux, &vmlinux).expect("copy vmlinux");
    for _ in 0..3 {
        let mut child = Command::new(BTFKIT)
            .args(["pahole", "-J", "-j"])
            .arg(&vmlinux)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let tmp = dir.path().join(format!(".vmlinux.tmp.{}", child.id()));
        let seen = loop {
            if tmp.exists() {
                break true;
            }
            if child.try_wait().expect("wait").is_some() {
                break false;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        };
        if seen {
            // SAFETY: a process this test started and has not reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        }
        let status = child.wait().expect("wait");
        assert!(!tmp.exists(), "{} left behind", tmp.display());
        use std::os::unix::process::ExitStatusExt;
        if seen && status.signal() == Some(libc::SIGINT) {
            return;
        }
    }
    panic!("three runs finished their write before SIGINT arrived");
}

// ---- item 5: an unreadable .strtab

/// Sets field `at` (8 bytes) of the section header of `name` in `elf`.
fn patch_section(elf: &mut [u8], name: &str, at: usize, value: u64) {
    let (shoff, index) = {
        let file = ElfFile64::<object::Endianness>::parse(&*elf).expect("parse");
        let s = file.section_by_name(name).expect("section");
        (
            object::read::elf::FileHeader::e_shoff(file.elf_header(), file.endian()),
            s.index().0,
        )
    };
    let off = shoff as usize + index * 64 + at;
    elf[off..off + 8].copy_from_slice(&value.to_le_bytes());
}

#[test]
fn strtab_past_the_end_is_refused_naming_its_offset() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let mut elf = std::fs::read(&obj).expect("read");
    patch_section(&mut elf, ".strtab", 24, 0x7fff_0000);
    std::fs::write(&obj, &elf).expect("write");
    let out_btf = fx.path("out.btf");
    let out = run(&["encode", "-o"], &[&out_btf, &obj]);
    assert_fails_naming(&out, &["t.o", ".strtab", "0x7fff0000"], "encode");
    assert!(!out_btf.exists());
    let out = pahole_j(&obj);
    assert_fails_naming(&out, &["t.o", "0x7fff0000"], "pahole -J");
    assert_eq!(std::fs::read(&obj).expect("read"), elf, "pahole -J wrote");
}

// ---- item 6: corrupt DWARF that would encode into invalid BTF

/// `t.c` compiled to annotated assembly, `edit` applied, assembled.
fn object_from_edited_asm(fx: &Fixture, edit: impl Fn(&str) -> String) -> PathBuf {
    fx.write("t.c", SOURCE);
    fx.cc("t.s", &["t.c"], &["-S", "-dA", "-g", "-gdwarf-5", "-O2"]);
    let asm = std::fs::read_to_string(fx.path("t.s")).expect("read");
    let edited = edit(&asm);
    assert_ne!(asm, edited, "the edit changed nothing");
    fx.write("bad.s", &edited);
    fx.cc("bad.o", &["bad.s"], &["-c"])
}

/// The encode fails naming `mentions` (the validator's reason, where the
/// DWARF itself looks sound) and writes nothing, and so does `pahole -J`.
fn assert_refused_unwritten(fx: &Fixture, obj: &Path, mentions: &[&str], what: &str) {
    let out_btf = fx.path("out.btf");
    let out = run(&["encode", "-o"], &[&out_btf, obj]);
    assert_fails_naming(&out, mentions, what);
    assert!(!out_btf.exists(), "{what}: an output was written");
    let before = std::fs::read(obj).expect("read");
    assert_fails_naming(&pahole_j(obj), mentions, what);
    assert_eq!(
        std::fs::read(obj).expect("read"),
        before,
        "{what}: -J wrote"
    );
}

#[test]
fn debug_str_of_size_0_is_refused_not_encoded() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let mut elf = std::fs::read(&obj).expect("read");
    patch_section(&mut elf, ".debug_str", 32, 0);
    std::fs::write(&obj, &elf).expect("write");
    // Every long name is a .debug_str offset: the function and the typedef
    // would be anonymous.
    assert_refused_unwritten(
        &fx,
        &obj,
        &[".debug_str", "is empty", "file offset 0x"],
        ".debug_str of size 0",
    );
}

#[test]
fn bit_field_wider_than_its_type_is_refused_not_encoded() {
    let fx = Fixture::new();
    let obj = object_from_edited_asm(&fx, |asm| {
        asm.replacen(
            "\t.byte\t0x3\t# DW_AT_bit_size",
            "\t.byte\t0x9d\t# DW_AT_bit_size",
            1,
        )
    });
    assert_refused_unwritten(
        &fx,
        &obj,
        &["kernel would refuse", "'bits'"],
        "a 157-bit bit field",
    );
}

#[test]
fn union_member_past_the_union_is_refused_not_encoded() {
    let fx = Fixture::new();
    let obj = object_from_edited_asm(&fx, |asm| {
        // The union's DW_AT_byte_size, the first after its DIE: 4 -> 1.
        let at = asm.find("DW_TAG_union_type)").expect("a union DIE");
        let (head, tail) = asm.split_at(at);
        format!(
            "{head}{}",
            tail.replacen(
                "\t.byte\t0x4\t# DW_AT_byte_size",
                "\t.byte\t0x1\t# DW_AT_byte_size",
                1
            )
        )
    });
    assert_refused_unwritten(
        &fx,
        &obj,
        &["kernel would refuse", "'u'"],
        "a union member past the union",
    );
}

// ---- item 7: dedup over a base the input is not split over

#[test]
fn dedup_over_a_base_it_is_not_split_over_is_refused() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let full = fx.path("full.btf");
    std::fs::write(&full, encoded(&fx, &obj)).expect("write");
    // Another program's BTF as the base.
    fx.write(
        "other.c",
        "struct other { long x; char *y; }; struct other o; int f(struct other *p) { return p->x; }\n",
    );
    let other = fx.cc("other.o", &["other.c"], &["-c", "-g", "-O2"]);
    let base = fx.path("base.btf");
    assert_ok(&run(&["encode", "-o"], &[&base, &other]), "encode base");
    let out_btf = fx.path("out.btf");
    let out = run(
        &["dedup", "--base"],
        &[&base, &full, Path::new("-o"), &out_btf],
    );
    assert_fails_naming(
        &out,
        &["full.btf", "not valid split BTF", "base.btf"],
        "dedup",
    );
    assert!(!out_btf.exists());
    // The same input without --base deduplicates, and check accepts it.
    assert_ok(&run(&["dedup", "-o"], &[&out_btf, &full]), "dedup");
    assert_ok(&run(&["check"], &[&out_btf]), "check");
}

// ---- item 8: headers bpftool and the kernel refuse

fn put_u32(blob: &mut [u8], at: usize, v: u32) {
    blob[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// `dump` refuses `blob` naming the header offset, and bpftool refuses it
/// too (the oracle).
fn assert_dump_refuses_like_bpftool(fx: &Fixture, blob: &[u8], mention: &str, what: &str) {
    let path = fx.path("bad.btf");
    std::fs::write(&path, blob).expect("write");
    assert_fails_naming(&run(&["dump"], &[&path]), &["bad.btf", mention], what);
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    let theirs = Command::new(bpftool)
        .args(["btf", "dump", "file"])
        .arg(&path)
        .output()
        .expect("run bpftool");
    assert!(!theirs.status.success(), "{what}: bpftool accepts it");
}

#[test]
fn string_section_overlapping_the_types_is_refused_like_bpftool() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let mut blob = encoded(&fx, &obj);
    // str_off = 4: inside the type section.
    put_u32(&mut blob, 16, 4);
    assert_dump_refuses_like_bpftool(&fx, &blob, "overlaps the type section", "overlap");
}

#[test]
fn empty_string_section_is_refused_like_bpftool() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let mut blob = encoded(&fx, &obj);
    let str_off = u32::from_le_bytes(blob[16..20].try_into().expect("4 bytes"));
    put_u32(&mut blob, 20, 0);
    blob.truncate(24 + str_off as usize);
    assert_dump_refuses_like_bpftool(&fx, &blob, "string section is empty", "str_len 0");
}

// ---- item 10: messages

/// Raw BTF (what /sys/kernel/btf/vmlinux is) given to encode: it says so.
#[test]
fn encode_of_raw_btf_says_it_is_btf_without_dwarf() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let raw = fx.path("raw.btf");
    std::fs::write(&raw, encoded(&fx, &obj)).expect("write");
    let mut files = vec![raw];
    let sysfs = PathBuf::from(btf::SYSFS_VMLINUX);
    if sysfs.exists() {
        files.push(sysfs);
    }
    for f in &files {
        let out = run(&["encode", "-o"], &[&fx.path("out.btf"), f]);
        assert_fails_naming(
            &out,
            &["this is BTF, not an ELF file with DWARF"],
            "encode BTF",
        );
        assert!(!text(&out).contains("Permission denied"), "{}", text(&out));
    }
}

/// `.ko.xz` (Debian's), `.ko.zst` and `.ko.gz` modules encode to the same
/// BTF as the uncompressed object, and their embedded .BTF dumps as it does.
#[test]
fn compressed_modules_encode_like_their_uncompressed_selves_xz_zstd_gzip() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let reference = encoded(&fx, &obj);
    let embedded = fx.path("e.ko");
    assert_ok(&run(&["encode", "--embed"], &[&embedded, &obj]), "embed");
    let plain_dump = run(&["dump"], &[&embedded]);
    assert_ok(&plain_dump, "dump e.ko");
    for (tool, package, ext) in CODECS {
        let Some(tool) = testkit::tool_or_skip(tool, package) else {
            return;
        };
        for input in [&obj, &embedded] {
            let out = compress(&tool, input, fx.dir.path(), ext);
            if input == &obj {
                let btf = fx.path("c.btf");
                assert_ok(&run(&["encode", "-o"], &[&btf, &out]), ext);
                assert_eq!(std::fs::read(&btf).expect("read"), reference, "{ext}");
            } else {
                let dump = run(&["dump"], &[&out]);
                assert_ok(&dump, ext);
                assert_eq!(dump.stdout, plain_dump.stdout, "dump of .{ext}");
            }
        }
    }
}

/// Debian's configfs module compressed with xz, zstd and gzip: `resolve
/// --elf`, `funcs` and `check --attach` read the `.ko.EXT` for its symbols
/// (and DWARF) and answer as for the uncompressed `.ko` (the oracle; the
/// symbols themselves are compared with nm's in ksyms' elf_compressed_nm).
#[test]
fn compressed_module_resolves_funcs_and_attach_like_the_uncompressed_xz_zstd_gzip() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let rel = "kernel/fs/configfs/configfs.ko";
    let (image, dbg) = (k.image_modules.join(rel), k.dbg_modules.join(rel));
    if !image.is_file() || !dbg.is_file() {
        return testkit::skip("configfs.ko is not cached: run scripts/fetch-debian-kernel.sh");
    }
    let fx = Fixture::new();
    // Same names in two directories, so that outputs naming them compare.
    let (plain, packed) = (fx.path("plain"), fx.path("packed"));
    std::fs::create_dir(&plain).expect("mkdir");
    std::fs::create_dir(&packed).expect("mkdir");
    let (img, dbg_ko) = (plain.join("img.ko"), plain.join("dbg.ko"));
    std::fs::copy(&image, &img).expect("copy");
    std::fs::copy(&dbg, &dbg_ko).expect("copy");
    let vmlinux = k.vmlinux.to_str().expect("path");
    let outputs = |img: &Path, dbg: &Path| -> Vec<Vec<u8>> {
        let (img, dbg) = (img.to_str().expect("path"), dbg.to_str().expect("path"));
        [
            vec!["resolve", "--json", "--elf", img, "--base", vmlinux],
            vec![
                "resolve", "--json", "--elf", dbg, "--btf", img, "--base", vmlinux,
            ],
            vec!["funcs", "--json", dbg, img, "--base", vmlinux],
            vec!["check", "--json", "--attach", img, dbg, "--base", vmlinux],
        ]
        .into_iter()
        .map(|mut args| {
            if args[0] == "resolve" {
                args.extend(["init_module", ".init.text+0x0", "0x10", "configfs_setattr"]);
            }
            let out = Command::new(BTFKIT).args(&args).output().expect("run");
            assert_ok(&out, &args.join(" "));
            // Where the output names a file, it is the name without `.EXT`.
            String::from_utf8(out.stdout)
                .expect("UTF-8")
                .replace(".ko.xz", ".ko")
                .replace(".ko.zst", ".ko")
                .replace(".ko.gz", ".ko")
                .replace(
                    packed.to_str().expect("path"),
                    plain.to_str().expect("path"),
                )
                .into_bytes()
        })
        .collect()
    };
    let expected = outputs(&img, &dbg_ko);
    for (tool, package, ext) in CODECS {
        let Some(tool) = testkit::tool_or_skip(tool, package) else {
            return;
        };
        let got = outputs(
            &compress(&tool, &img, &packed, ext),
            &compress(&tool, &dbg_ko, &packed, ext),
        );
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(
                String::from_utf8_lossy(g),
                String::from_utf8_lossy(e),
                ".{ext}"
            );
        }
    }
}

/// An uncompressed section whose bytes are past the end of the file: the
/// message names the file offset.
#[test]
fn section_past_the_end_names_its_file_offset() {
    let fx = Fixture::new();
    let obj = object(&fx);
    let mut elf = std::fs::read(&obj).expect("read");
    patch_section(&mut elf, ".debug_info", 24, 0x7fff_0000);
    std::fs::write(&obj, &elf).expect("write");
    let out = run(&["encode", "-o"], &[&fx.path("out.btf"), &obj]);
    assert_fails_naming(&out, &["t.o", "file offset 0x7fff0000"], "encode");
    assert!(
        !text(&out).contains("Invalid compressed data"),
        "{}",
        text(&out)
    );
}

// ---- item 12: __thread variables

/// An object with a `__thread` variable (R_X86_64_DTPOFF32 in its DWARF)
/// encodes, with the same structs and functions as pahole 1.24's.
#[test]
fn thread_local_variable_encodes_like_pahole_1_24() {
    let fx = Fixture::new();
    fx.write(
        "tls.c",
        "struct bits { unsigned int a:3; unsigned int b:5; };\n\
         __thread struct bits tls_bits;\n\
         __attribute__((noinline)) int use(struct bits *p) { return p->a + tls_bits.b; }\n",
    );
    let obj = fx.cc("tls.o", &["tls.c"], &["-c", "-g", "-O2"]);
    let ours = fx.path("ours.btf");
    assert_ok(&run(&["encode", "-o"], &[&ours, &obj]), "encode");
    let Some(pahole) = testkit::tool_or_skip("pahole", "dwarves") else {
        return;
    };
    let theirs = fx.path("theirs.btf");
    testkit::run_ok(
        Command::new(pahole)
            .arg("--btf_encode_detached")
            .arg(&theirs)
            .arg(&obj),
    );
    let names = |f: &Path| -> Vec<String> {
        let dump = run(&["dump"], &[f]);
        assert_ok(&dump, "dump");
        let mut v: Vec<String> = String::from_utf8_lossy(&dump.stdout)
            .lines()
            .filter(|l| l.contains("STRUCT '") || l.contains("FUNC '") || l.contains("INT '"))
            // "[3] STRUCT 'bits' size=4 ...": the kind and name, not the ids.
            .filter_map(|l| {
                let rest = l.split_once(' ')?.1;
                let close = rest.find('\'')? + 1 + rest[rest.find('\'')? + 1..].find('\'')?;
                Some(rest[..=close].to_owned())
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&ours), names(&theirs));
}
