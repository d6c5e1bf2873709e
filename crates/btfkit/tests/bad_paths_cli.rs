//! Bad paths for every command that reads or writes a file, run as a table:
//! each file argument given a missing file, a directory, an empty file, a
//! file cut to 3 bytes and to half, /dev/null and a file without read
//! permission (run as nobody); each output given a path in a missing
//! directory, a directory, and a file in a read-only directory. The
//! oracle is the exit code and the error text: exit 1 with one line
//! `btfkit: error: ...` that names the file and says what is wrong (the
//! system's reason, or what the content lacks and where), nothing on
//! stdout, no panic or backtrace, the input untouched and no output file
//! left behind. What a truncated file says in depth is tested where its
//! reader is (bad_input.rs, inspect_cli_bad_input.rs, perfdata's malformed.rs);
//! writes into devices, FIFOs and symlinks in writes_and_bad_input.rs.
//!
//! A command that `btfkit --help` lists must be in a table here (or in
//! the short list of commands that read no file), so that a new command
//! is run through the campaign too.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use testkit::Fixture;

const BTFKIT: &str = env!("CARGO_BIN_EXE_btfkit");

/// The commands that read and write no file of the user's.
const NO_FILES: &[&str] = &["list", "watch", "completions", "help"];

/// How a bad input is made from a good one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bad {
    Missing,
    Directory,
    Empty,
    /// Its first 3 bytes.
    Few,
    /// Its first half.
    Half,
    DevNull,
    /// Mode 000, read by nobody.
    Unreadable,
}

const BAD: [Bad; 7] = [
    Bad::Missing,
    Bad::Directory,
    Bad::Empty,
    Bad::Few,
    Bad::Half,
    Bad::DevNull,
    Bad::Unreadable,
];

/// What the error says about a file's content, by the reader the
/// command hands it to: for an empty file, 3 bytes, half the file and
/// /dev/null (None: that cut leaves a file the reader takes).
type Says = [Option<&'static str>; 4];

/// `btf::load_file` of raw BTF.
const BTF: Says = [
    Some("BTF is empty"),
    Some("truncated: header at offset 0x0 needs 24 bytes, 3 left"),
    Some("lies outside the"),
    Some("BTF is empty"),
];
/// `btf::load_file` of an ELF with a `.BTF` section (3 bytes of it are
/// no ELF, so they are read as raw BTF).
const BTF_OF_ELF: Says = [
    Some("BTF is empty"),
    Some("truncated: header at offset 0x0 needs 24 bytes, 3 left"),
    Some("Invalid ELF section header"),
    Some("BTF is empty"),
];
/// The encoder's ELF reader (dwarf2btf), which maps the file (and reads
/// what cannot be mapped: the null device).
const DWARF: Says = [
    Some("Could not read file magic"),
    Some("Could not read file magic"),
    Some("Invalid ELF section header"),
    Some("Could not read file magic"),
];
/// ksyms' ELF symbol table reader.
const SYMTAB: Says = [
    Some("Could not read file magic"),
    Some("Could not read file magic"),
    Some("Invalid ELF section header"),
    Some("Could not read file magic"),
];
/// `check --attach`'s SYMBOLS: an ELF by its magic, else System.map text.
const SYMBOLS: Says = [
    Some("lists no symbols"),
    Some("expected a hexadecimal address"),
    Some("Invalid ELF section header"),
    Some("lists no symbols"),
];
/// A kallsyms or System.map file; half of one is a shorter table.
const TEXT: Says = [
    Some("lists no symbols"),
    Some("(byte offset 3)"),
    None,
    Some("lists no symbols"),
];
/// A perf.data; the valid one here is only its header, so no half.
const PERF: Says = [
    Some("truncated: file header at offset 0x0"),
    Some("truncated: file header at offset 0x0"),
    None,
    Some("truncated: file header at offset 0x0"),
];
/// A crash dump.
const DUMP: Says = [
    Some("truncated"),
    Some("truncated"),
    Some("file offset 0x"),
    Some("a character device, not a crash dump"),
];

impl Bad {
    /// What the message must say (None: the reader takes such a file).
    fn says(self, reader: &Says) -> Option<&'static str> {
        match self {
            Bad::Missing => Some("No such file or directory"),
            // "Is a directory", or inspect's "a directory, not a crash dump".
            Bad::Directory => Some("a directory"),
            Bad::Empty => reader[0],
            Bad::Few => reader[1],
            Bad::Half => reader[2],
            Bad::DevNull => reader[3],
            Bad::Unreadable => Some("Permission denied"),
        }
    }
}

/// The good inputs, in a directory nobody can read (for the runs as
/// nobody, whose other inputs must be readable).
struct Inputs {
    fx: Fixture,
    /// An object with DWARF.
    obj: PathBuf,
    /// The same with `.BTF` (`encode --embed`).
    elf: PathBuf,
    /// Its raw BTF.
    btf: PathBuf,
    /// A System.map, named so.
    map: PathBuf,
    /// A perf.data's header.
    perf: PathBuf,
    /// A dump's first bytes (a flattened kdump's header).
    dump_head: PathBuf,
    /// A whole dump, for the tests that have one.
    dump: Option<PathBuf>,
}

impl Inputs {
    fn new() -> Inputs {
        let fx = Fixture::new();
        fx.write(
            "t.c",
            "struct bits { unsigned int a:3; unsigned int b:5; };\n\
             struct bits g_bits;\n\
             __attribute__((noinline)) int sum_of_fields(struct bits *p) { return p->a + p->b; }\n",
        );
        let obj = fx.cc("t.o", &["t.c"], &["-c", "-g", "-O2"]);
        let (elf, btf) = (fx.path("e.o"), fx.path("raw.btf"));
        ok(&btfkit(&[s("encode"), s("--embed"), p(&elf), p(&obj)]));
        ok(&btfkit(&[s("encode"), s("-o"), p(&btf), p(&obj)]));
        let map = fx.path("System.map");
        std::fs::write(
            &map,
            "ffffffff81000000 T _stext\nffffffff81000100 T sum_of_fields\n",
        )
        .expect("write");
        let perf = fx.path("perf.data");
        let mut header = b"PERFILE2".to_vec();
        header.resize(104, 0);
        std::fs::write(&perf, header).expect("write");
        let dump_head = fx.path("vmcore");
        std::fs::write(&dump_head, b"makedumpfile\0\0\0\0").expect("write");
        readable_by_all(fx.dir.path());
        Inputs {
            fx,
            obj,
            elf,
            btf,
            map,
            perf,
            dump_head,
            dump: None,
        }
    }

    /// A copy of `from` cut or replaced as `bad` says, or the path that
    /// stands for it.
    fn bad(&self, from: &Path, bad: Bad, n: usize) -> PathBuf {
        let cut = |bytes: &[u8]| {
            let path = self.fx.path(&format!("bad{n}"));
            std::fs::write(&path, bytes).expect("write");
            path
        };
        let data = || std::fs::read(from).expect("read");
        match bad {
            Bad::Missing => self.fx.path("no-such-file"),
            Bad::Directory => {
                let d = self.fx.path("a-directory");
                std::fs::create_dir_all(&d).expect("mkdir");
                d
            }
            Bad::Empty => cut(&[]),
            Bad::Few => cut(&data()[..3]),
            Bad::Half => {
                let d = data();
                cut(&d[..d.len() / 2])
            }
            Bad::DevNull => PathBuf::from("/dev/null"),
            Bad::Unreadable => {
                let path = cut(&data());
                std::fs::set_permissions(&path, PermissionsExt::from_mode(0o000)).expect("chmod");
                path
            }
        }
    }
}

fn s(arg: &str) -> OsString {
    arg.into()
}

fn p(path: &Path) -> OsString {
    path.into()
}

fn btfkit(args: &[OsString]) -> Output {
    Command::new(BTFKIT)
        .args(args)
        .output()
        .expect("run btfkit")
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn readable_by_all(dir: &Path) {
    std::fs::set_permissions(dir, PermissionsExt::from_mode(0o755)).expect("chmod");
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let path = e.expect("entry").path();
        let mode = if path.is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(&path, PermissionsExt::from_mode(mode)).expect("chmod");
    }
}

/// btfkit run with `args`, as nobody when `nobody` (and we are root, who
/// reads any file): setpriv, or None with a skip.
fn run_as(args: &[OsString], nobody: bool) -> Option<Output> {
    if !(nobody && testkit::is_root()) {
        return Some(btfkit(args));
    }
    let setpriv = testkit::tool_or_skip("setpriv", "util-linux")?;
    Some(
        Command::new(setpriv)
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(BTFKIT)
            .args(args)
            .output()
            .expect("run btfkit as nobody"),
    )
}

/// The one-line error the campaign wants: exit 1, `btfkit: error: `,
/// naming `file` and saying `says`, nothing on stdout.
fn assert_one_line_error(out: &Output, file: &Path, says: &str, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{what}: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{what}: {err}"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: not one line: {err}");
    assert!(lines[0].starts_with("btfkit: error: "), "{what}: {err}");
    assert!(
        lines[0].contains(&*file.to_string_lossy()),
        "{what}: the file is not named: {err}"
    );
    assert!(lines[0].contains(says), "{what}: no '{says}' in: {err}");
    assert!(
        out.stdout.is_empty(),
        "{what}: stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A file argument of a command: the arguments with the file (and an
/// output path, in a directory that must stay empty), the good file it is
/// cut from, and what its reader says.
struct Slot {
    name: &'static str,
    args: fn(&Inputs, &Path, &Path) -> Vec<OsString>,
    good: fn(&Inputs) -> PathBuf,
    says: &'static Says,
}

/// Every file argument of every command but `inspect`'s that need a dump.
fn slots() -> Vec<Slot> {
    vec![
        Slot {
            name: "dump FILE",
            args: |_, x, _| vec![s("dump"), p(x)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "dump --format c FILE",
            args: |_, x, _| vec![s("dump"), s("--format"), s("c"), p(x)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "dump --base B",
            args: |i, x, _| vec![s("dump"), s("--base"), p(x), p(&i.btf)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "check FILE",
            args: |_, x, _| vec![s("check"), p(x)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "check --base B",
            args: |i, x, _| vec![s("check"), s("--base"), p(x), p(&i.btf)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "check --attach BTF",
            args: |i, x, _| vec![s("check"), s("--attach"), p(x), p(&i.elf)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "check --attach SYMBOLS (ELF)",
            args: |i, x, _| vec![s("check"), s("--attach"), p(&i.btf), p(x)],
            good: |i| i.elf.clone(),
            says: &SYMBOLS,
        },
        Slot {
            name: "check --attach SYMBOLS (System.map)",
            args: |i, x, _| vec![s("check"), s("--attach"), p(&i.btf), p(x)],
            good: |i| i.map.clone(),
            says: &TEXT,
        },
        Slot {
            name: "encode ELF",
            args: |_, x, o| vec![s("encode"), s("-o"), p(o), p(x)],
            good: |i| i.obj.clone(),
            says: &DWARF,
        },
        Slot {
            name: "encode --base B",
            args: |i, x, o| vec![s("encode"), s("--base"), p(x), s("-o"), p(o), p(&i.obj)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "dedup IN",
            args: |_, x, o| vec![s("dedup"), s("-o"), p(o), p(x)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "dedup --base B",
            args: |i, x, o| vec![s("dedup"), s("--base"), p(x), s("-o"), p(o), p(&i.btf)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "diff A",
            args: |i, x, _| vec![s("diff"), p(x), p(&i.btf)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "diff B",
            args: |i, x, _| vec![s("diff"), p(&i.btf), p(x)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "diff --base B",
            args: |i, x, _| vec![s("diff"), s("--base"), p(x), p(&i.btf), p(&i.btf)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "funcs FILE",
            args: |_, x, _| vec![s("funcs"), p(x)],
            good: |i| i.elf.clone(),
            says: &BTF_OF_ELF,
        },
        Slot {
            name: "funcs FILE BTF",
            args: |i, x, _| vec![s("funcs"), p(&i.elf), p(x)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "funcs --base B",
            args: |i, x, _| vec![s("funcs"), s("--base"), p(x), p(&i.elf)],
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "resolve --btf",
            args: |i, x, _| {
                let map = p(&i.map);
                vec![
                    s("resolve"),
                    s("--system-map"),
                    map,
                    s("--btf"),
                    p(x),
                    s("sum_of_fields"),
                ]
            },
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "resolve --base",
            args: |i, x, _| {
                let (map, btf) = (p(&i.map), p(&i.btf));
                let base = p(x);
                vec![
                    s("resolve"),
                    s("--system-map"),
                    map,
                    s("--btf"),
                    btf,
                    s("--base"),
                    base,
                    s("0"),
                ]
            },
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "resolve --system-map",
            args: |i, x, _| {
                let btf = p(&i.btf);
                vec![
                    s("resolve"),
                    s("--btf"),
                    btf,
                    s("--system-map"),
                    p(x),
                    s("sum_of_fields"),
                ]
            },
            good: |i| i.map.clone(),
            says: &TEXT,
        },
        Slot {
            name: "resolve --kallsyms",
            args: |i, x, _| {
                let btf = p(&i.btf);
                vec![
                    s("resolve"),
                    s("--btf"),
                    btf,
                    s("--kallsyms"),
                    p(x),
                    s("sum_of_fields"),
                ]
            },
            good: |i| i.map.clone(),
            says: &TEXT,
        },
        Slot {
            name: "resolve --elf",
            args: |_, x, _| vec![s("resolve"), s("--elf"), p(x), s("sum_of_fields")],
            good: |i| i.elf.clone(),
            says: &SYMTAB,
        },
        Slot {
            name: "perf FILE",
            args: |_, x, _| vec![s("perf"), p(x)],
            good: |i| i.perf.clone(),
            says: &PERF,
        },
        Slot {
            name: "inspect VMCORE",
            args: |_, x, _| vec![s("inspect"), p(x), s("1")],
            good: |i| i.dump.clone().unwrap_or_else(|| i.dump_head.clone()),
            says: &DUMP,
        },
        Slot {
            name: "pahole FILE",
            args: |_, x, _| vec![s("pahole"), s("-C"), s("bits"), p(x)],
            good: |i| i.elf.clone(),
            says: &BTF_OF_ELF,
        },
        Slot {
            name: "pahole -J FILE",
            args: |_, x, _| vec![s("pahole"), s("-J"), p(x)],
            good: |i| i.obj.clone(),
            says: &DWARF,
        },
        Slot {
            name: "pahole --btf_base B",
            args: |i, x, o| {
                let obj = p(&i.obj);
                vec![
                    s("pahole"),
                    s("-J"),
                    s("--btf_base"),
                    p(x),
                    s("--btf_encode_detached"),
                    p(o),
                    obj,
                ]
            },
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "layout FILE",
            args: |_, x, _| vec![s("layout"), s("-C"), s("bits"), p(x)],
            good: |i| i.elf.clone(),
            says: &BTF_OF_ELF,
        },
        Slot {
            name: "layout -F dwarf FILE",
            args: |_, x, _| vec![s("layout"), s("-F"), s("dwarf"), s("-C"), s("bits"), p(x)],
            good: |i| i.obj.clone(),
            says: &DWARF,
        },
        Slot {
            name: "layout --base B",
            args: |i, x, _| {
                vec![
                    s("layout"),
                    s("--base"),
                    p(x),
                    s("-C"),
                    s("bits"),
                    p(&i.btf),
                ]
            },
            good: |i| i.btf.clone(),
            says: &BTF,
        },
    ]
}

/// `inspect`'s file options, which read their file after the dump.
fn dump_slots() -> Vec<Slot> {
    vec![
        Slot {
            name: "inspect --btf",
            args: |i, x, _| {
                let dump = p(i.dump.as_deref().expect("a dump"));
                vec![s("inspect"), dump, s("--btf"), p(x), s("1")]
            },
            good: |i| i.btf.clone(),
            says: &BTF,
        },
        Slot {
            name: "inspect --kallsyms",
            args: |i, x, _| {
                let dump = p(i.dump.as_deref().expect("a dump"));
                vec![s("inspect"), dump, s("--kallsyms"), p(x), s("1")]
            },
            good: |i| i.map.clone(),
            says: &TEXT,
        },
        Slot {
            name: "inspect --btf-module",
            args: |i, x, _| {
                let dump = p(i.dump.as_deref().expect("a dump"));
                let mut module = s("qemu_fw_cfg=");
                module.push(x);
                vec![s("inspect"), dump, s("--btf-module"), module, s("1")]
            },
            good: |i| i.btf.clone(),
            says: &BTF,
        },
    ]
}

/// Runs every slot with every bad input; returns the slots' commands.
fn campaign(inputs: &Inputs, slots: &[Slot], only: &[Bad]) -> Vec<String> {
    let out_dir = inputs.fx.path("out");
    std::fs::create_dir_all(&out_dir).expect("mkdir");
    readable_by_all(&out_dir);
    let output = out_dir.join("out");
    let mut n = 0;
    for slot in slots {
        let good = (slot.good)(inputs);
        for &bad in only {
            let Some(says) = bad.says(slot.says) else {
                continue;
            };
            n += 1;
            let file = inputs.bad(&good, bad, n);
            let before = std::fs::read(&file).ok();
            let what = format!("{} given {bad:?} {}", slot.name, file.display());
            let Some(out) = run_as(&(slot.args)(inputs, &file, &output), bad == Bad::Unreadable)
            else {
                continue;
            };
            assert_one_line_error(&out, &file, says, &what);
            assert_eq!(
                std::fs::read(&file).ok(),
                before,
                "{what}: the input changed"
            );
            let left: Vec<_> = std::fs::read_dir(&out_dir).expect("read_dir").collect();
            assert!(left.is_empty(), "{what}: left {left:?}");
        }
    }
    slots
        .iter()
        .map(|s| s.name.split(' ').next().unwrap_or("").to_owned())
        .collect()
}

/// The commands `btfkit --help` lists.
fn listed_commands() -> Vec<String> {
    let out = btfkit(&[s("--help")]);
    ok(&out);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

/// Every file argument of every command, given every bad input: the error
/// names the file and says why, exit 1. And every command that `--help`
/// lists is in these tables (or reads no file).
#[test]
fn every_command_names_a_bad_input_file_in_one_line_exit_1() {
    let inputs = Inputs::new();
    let mut tested = campaign(&inputs, &slots(), &BAD);
    tested.extend(
        writers()
            .iter()
            .map(|w| w.name.split(' ').next().unwrap_or("").to_owned()),
    );
    for command in listed_commands() {
        assert!(
            tested.contains(&command) || NO_FILES.contains(&command.as_str()),
            "btfkit {command} is in no bad-path table of this test: add its files"
        );
    }
}

/// `inspect`'s `--btf`, `--kallsyms` and `--btf-module` files, read after
/// a real dump (the cached QEMU one), and that dump cut in half: named
/// with the offset (the kernel's tables in it did not name the dump).
#[test]
fn inspect_names_a_bad_file_given_with_a_dump_in_one_line_exit_1() {
    let Some(d) = testkit::dumps::dumps_or_skip() else {
        return;
    };
    let mut inputs = Inputs::new();
    // Readable by nobody, as the other inputs.
    let dump = inputs.fx.path("vmcore.kdump");
    std::fs::copy(&d.kdump_zlib, &dump).expect("copy the dump");
    readable_by_all(inputs.fx.dir.path());
    inputs.dump = Some(dump);
    campaign(&inputs, &dump_slots(), &BAD);
    let vmcore: Vec<Slot> = slots()
        .into_iter()
        .filter(|s| s.name == "inspect VMCORE")
        .collect();
    campaign(&inputs, &vmcore, &[Bad::Half]);
}

/// How a bad output path is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BadOut {
    /// In a directory that does not exist.
    InMissingDirectory,
    /// A directory.
    Directory,
    /// In a directory nobody may write (run as nobody).
    InReadOnlyDirectory,
}

/// A command's output argument: its arguments with the output path, and
/// what the error says for each bad path (None: it succeeds).
struct Writer {
    name: &'static str,
    args: fn(&Inputs, &Path) -> Vec<OsString>,
    says: fn(BadOut) -> Option<&'static str>,
}

fn file_says(bad: BadOut) -> Option<&'static str> {
    Some(match bad {
        BadOut::InMissingDirectory => "No such file or directory",
        BadOut::Directory => "is a directory",
        BadOut::InReadOnlyDirectory => "Permission denied",
    })
}

fn writers() -> Vec<Writer> {
    vec![
        Writer {
            name: "encode -o",
            args: |i, o| vec![s("encode"), s("-o"), p(o), p(&i.obj)],
            says: file_says,
        },
        Writer {
            name: "encode --embed",
            args: |i, o| vec![s("encode"), s("--embed"), p(o), p(&i.obj)],
            says: file_says,
        },
        Writer {
            name: "dedup -o",
            args: |i, o| vec![s("dedup"), s("-o"), p(o), p(&i.btf)],
            says: file_says,
        },
        Writer {
            name: "pahole --btf_encode_detached",
            args: |i, o| {
                vec![
                    s("pahole"),
                    s("-J"),
                    s("--btf_encode_detached"),
                    p(o),
                    p(&i.obj),
                ]
            },
            says: file_says,
        },
        Writer {
            name: "man DIR",
            args: |_, o| vec![s("man"), p(o)],
            // DIR is created where missing; the bad one is a file.
            says: |bad| match bad {
                BadOut::InMissingDirectory => None,
                BadOut::Directory => Some("not a directory"),
                BadOut::InReadOnlyDirectory => Some("Permission denied"),
            },
        },
    ]
}

/// The files under `dir`, by path, with their bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let path = e.expect("entry").path();
        if path.is_dir() {
            out.extend(tree(&path));
            out.insert(path, Vec::new());
        } else {
            out.insert(path.clone(), std::fs::read(&path).expect("read"));
        }
    }
    out
}

/// Every output given a path in a missing directory, a directory (for
/// `man DIR`, a file) and a file in a read-only directory: exit 1, the
/// path named with the system's reason, nothing written anywhere.
#[test]
fn every_output_in_a_bad_place_is_named_in_one_line_exit_1_nothing_written() {
    let inputs = Inputs::new();
    let root = inputs.fx.path("outputs");
    let read_only = root.join("read-only");
    std::fs::create_dir_all(&read_only).expect("mkdir");
    let a_file = root.join("a-file");
    std::fs::write(&a_file, "kept").expect("write");
    readable_by_all(&root);
    std::fs::set_permissions(&read_only, PermissionsExt::from_mode(0o555)).expect("chmod");
    for w in writers() {
        for bad in [
            BadOut::InMissingDirectory,
            BadOut::Directory,
            BadOut::InReadOnlyDirectory,
        ] {
            let out = match bad {
                BadOut::InMissingDirectory => root.join("no-such-dir").join("out"),
                BadOut::Directory if w.name == "man DIR" => a_file.clone(),
                BadOut::Directory => read_only.clone(),
                BadOut::InReadOnlyDirectory => read_only.join("out"),
            };
            let what = format!("{} given {bad:?} {}", w.name, out.display());
            let before = tree(&root);
            let Some(o) = run_as(&(w.args)(&inputs, &out), bad == BadOut::InReadOnlyDirectory)
            else {
                return;
            };
            match (w.says)(bad) {
                Some(says) => {
                    assert_one_line_error(&o, &out, says, &what);
                    assert_eq!(tree(&root), before, "{what}: something was written");
                }
                None => {
                    ok(&o);
                    std::fs::remove_dir_all(root.join("no-such-dir")).expect("rm");
                }
            }
        }
    }
}

/// `pahole -J FILE` writes FILE in place: a FILE that may not be written
/// in a directory nobody may write is refused naming it, and stays as it
/// was.
#[test]
fn pahole_j_on_a_file_it_may_not_write_is_named_and_kept() {
    let inputs = Inputs::new();
    let dir = inputs.fx.path("read-only");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let obj = dir.join("t.o");
    std::fs::copy(&inputs.obj, &obj).expect("copy");
    std::fs::set_permissions(&obj, PermissionsExt::from_mode(0o444)).expect("chmod");
    std::fs::set_permissions(&dir, PermissionsExt::from_mode(0o555)).expect("chmod");
    let before = tree(&dir);
    let out = run_as(&[s("pahole"), s("-J"), p(&obj)], true);
    std::fs::set_permissions(&dir, PermissionsExt::from_mode(0o755)).expect("chmod back");
    let Some(out) = out else {
        return;
    };
    assert_one_line_error(&out, &obj, "Permission denied", "pahole -J read-only");
    assert_eq!(tree(&dir), before);
}

/// Standard output on a full device (`> /dev/full`): every command that
/// prints says so in one line, exit 1 (clap_complete panicked there).
#[test]
fn stdout_on_a_full_device_is_one_error_line_exit_1_never_a_panic() {
    let inputs = Inputs::new();
    let (btf, elf, map) = (p(&inputs.btf), p(&inputs.elf), p(&inputs.map));
    let runs: Vec<Vec<OsString>> = vec![
        vec![s("completions"), s("bash")],
        vec![s("dump"), btf.clone()],
        vec![s("dump"), s("--format"), s("c"), btf.clone()],
        vec![s("check"), btf.clone()],
        vec![s("check"), s("--attach"), btf.clone(), elf.clone()],
        vec![s("diff"), btf.clone(), btf.clone()],
        vec![s("funcs"), elf.clone()],
        vec![s("funcs"), s("--json"), elf.clone()],
        vec![
            s("resolve"),
            s("--btf"),
            btf,
            s("--system-map"),
            map,
            s("sum_of_fields"),
        ],
        vec![s("layout"), s("-C"), s("bits"), elf.clone()],
        vec![s("pahole"), s("-C"), s("bits"), elf],
    ];
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    for args in runs {
        let what = format!("{args:?} > /dev/full");
        let out = Command::new(BTFKIT)
            .args(&args)
            .stdout(full.try_clone().expect("dup"))
            .output()
            .expect("run btfkit");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{what}: {err}");
        assert!(!err.contains("panicked"), "{what}: {err}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(
            err.starts_with("btfkit: error: ") && err.contains("No space left on device"),
            "{what}: {err}"
        );
    }
}
