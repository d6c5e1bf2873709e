//! Inputs that are hostile or odd, and outputs that could destroy an
//! input (issue 48, items 1-7): decompression bombs of xz, zstd and gzip
//! (zeros, and zeros behind a valid ELF header), modules split into
//! several zstd frames or xz streams, /dev/zero and endless pipes, FIFOs
//! with no writer or a slow one, an input truncated while it is mapped,
//! outputs that are an input or hard-linked, and `perf record -z` data.
//!
//! The reproducers of /work/shared/repro are run when that directory is
//! there; the same cases are also made here at test time (bombs from
//! /dev/zero-like streams through the `xz`, `zstd` and `gzip` tools, each
//! 256 MiB of zeros compressed once and repeated as concatenated streams,
//! which the tools read whole).
//!
//! The oracle for what must be refused: one line `btfkit: error: ...`
//! naming the file, exit 1, nothing on stdout, no output written, and a
//! peak resident memory of btfkit under 1 GB (wait4's rusage of the
//! child). For what must be read: the same output as the uncompressed
//! file (or as `zstd -dc` / `xz -dc` give), or perf report -D's counts.

#![allow(clippy::unwrap_used)]

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testkit::Fixture;

const BTFKIT: &str = env!("CARGO_BIN_EXE_btfkit");
const REPRO: &str = "/work/shared/repro";
/// 1 GB, in the KB that ru_maxrss counts.
const RSS_LIMIT_KB: i64 = 1 << 20;

const SOURCE: &str = "struct point { int x; long y; char name[16]; };\n\
struct node { struct node *next, *prev; int val; };\n\
static int helper(struct point *p) { return p->x + (int)p->y; }\n\
int exported(struct point *p, struct node *n) { return helper(p) + n->val; }\n\
int gvar = 3;\n";

/// A run of btfkit: its exit, output and peak resident memory.
struct Run {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    rss_kb: i64,
}

fn os(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    args.iter().map(|a| a.as_ref().to_owned()).collect()
}

/// Runs btfkit with `args` and `stdin`; kills it and fails after
/// `limit` (it blocked). The child is reaped by wait4, for its rusage.
#[allow(clippy::zombie_processes)]
fn run_with(args: &[OsString], stdin: Stdio, limit: Duration) -> Run {
    let mut child = Command::new(BTFKIT)
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).unwrap();
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).unwrap();
        v
    });
    let pid = child.id() as libc::pid_t;
    let start = Instant::now();
    let (status, ru) = loop {
        let mut status = 0;
        // SAFETY: wait4 on our own child, with structs it fills.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break (status, ru);
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if start.elapsed() > limit {
            // SAFETY: our child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("btfkit {args:?} ran for more than {limit:?} (blocked?)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stdout: out.join().unwrap(),
        stderr: String::from_utf8_lossy(&err.join().unwrap()).into_owned(),
        rss_kb: ru.ru_maxrss,
    }
}

fn run(args: &[OsString]) -> Run {
    run_with(args, Stdio::null(), Duration::from_secs(120))
}

/// The refusal oracle: one error line naming `file` and saying `says`,
/// exit 1, nothing on stdout, under 1 GB.
fn assert_refused(r: &Run, file: &Path, says: &str, what: &str) {
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(r.code, Some(1), "{what}: {}", r.stderr);
    assert_eq!(lines.len(), 1, "{what}: not one line: {}", r.stderr);
    assert!(
        lines[0].starts_with("btfkit: error: "),
        "{what}: {}",
        r.stderr
    );
    assert!(
        lines[0].contains(&*file.to_string_lossy()),
        "{what}: the file is not named: {}",
        r.stderr
    );
    assert!(
        lines[0].contains(says),
        "{what}: no '{says}' in {}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{what}: stdout");
    assert!(
        r.rss_kb < RSS_LIMIT_KB,
        "{what}: peak RSS {} KB, over 1 GB",
        r.rss_kb
    );
}

fn assert_ok(r: &Run, what: &str) {
    assert_eq!(r.code, Some(0), "{what}: {}", r.stderr);
}

/// The small object of the reproducers, its embedded-BTF copy and its raw
/// BTF.
struct Inputs {
    fx: Fixture,
    obj: PathBuf,
    elf: PathBuf,
    btf: PathBuf,
}

fn inputs() -> Inputs {
    let fx = Fixture::new();
    fx.write("t.c", SOURCE);
    let obj = fx.cc("t.o", &["t.c"], &["-c", "-g", "-O2"]);
    let (elf, btf) = (fx.path("e.o"), fx.path("raw.btf"));
    assert_ok(
        &run(&os(&[&"encode", &"--embed", &elf, &obj])),
        "encode --embed",
    );
    assert_ok(&run(&os(&[&"encode", &"-o", &btf, &obj])), "encode -o");
    Inputs { fx, obj, elf, btf }
}

/// The codecs: tool, package, extension, the options that compress best.
const CODECS: [(&str, &str, &str, &[&str]); 3] = [
    ("xz", "xz-utils", "xz", &["-0", "-T1"]),
    ("zstd", "zstd", "zst", &["-1", "-q"]),
    ("gzip", "gzip", "gz", &["-9"]),
];

/// `data` compressed by `tool` (from a pipe, as a kernel build does).
fn compress(
    tool: &Path,
    opts: &[&str],
    data: impl Iterator<Item = Vec<u8>> + Send + 'static,
) -> Vec<u8> {
    let mut child = Command::new(tool)
        .args(opts)
        .arg("-c")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for piece in data {
            stdin.write_all(&piece).unwrap();
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "{}", tool.display());
    out.stdout
}

/// 256 MiB of zeros, as pieces.
fn zeros_256m() -> impl Iterator<Item = Vec<u8>> + Send + 'static {
    (0..256).map(|_| vec![0u8; 1 << 20])
}

/// A codec's tool, installed, and 256 MiB of zeros compressed by it.
struct Unit {
    name: &'static str,
    ext: &'static str,
    tool: PathBuf,
    opts: &'static [&'static str],
    zeros: Vec<u8>,
}

/// The tools that are installed, with their compressed 256 MiB of zeros.
fn zero_units() -> Vec<Unit> {
    let mut units = Vec::new();
    for (name, package, ext, opts) in CODECS {
        let Some(tool) = testkit::tool_or_skip(name, package) else {
            continue;
        };
        let zeros = compress(&tool, opts, zeros_256m());
        units.push(Unit {
            name,
            ext,
            tool,
            opts,
            zeros,
        });
    }
    units
}

/// The readers of ELF files (and what takes an ELF: check --attach's
/// SYMBOLS) given `file`; an output path for encode.
fn readers(i: &Inputs, file: &Path, out: &Path) -> Vec<(&'static str, Vec<OsString>)> {
    vec![
        ("dump", os(&[&"dump", &file])),
        ("funcs", os(&[&"funcs", &file])),
        ("encode", os(&[&"encode", &file, &"-o", &out])),
        (
            "resolve --elf",
            os(&[&"resolve", &"--elf", &file, &"exported"]),
        ),
        (
            "check --attach",
            os(&[&"check", &"--attach", &i.btf, &file]),
        ),
    ]
}

/// Every reader refuses `file` in one line naming it, under 1 GB, nothing
/// written.
fn assert_every_reader_refuses(i: &Inputs, file: &Path, says: &str) {
    let out = i.fx.path("out.btf");
    for (what, args) in readers(i, file, &out) {
        let r = run(&args);
        assert_refused(&r, file, says, &format!("{what} {}", file.display()));
        assert!(!out.exists(), "{what}: wrote {}", out.display());
    }
}

#[test]
fn repro_bombs_are_one_line_naming_them_under_1gb_in_every_reader() {
    let i = inputs();
    let mut n = 0;
    for name in ["bomb5g.ko.xz", "bomb6g.ko.zst"] {
        let bomb = Path::new(REPRO).join(name);
        if bomb.is_file() {
            assert_every_reader_refuses(&i, &bomb, "-compressed file: decompresses to");
            n += 1;
        }
    }
    if n == 0 {
        eprintln!("no {REPRO}: the bombs made at test time stand for them");
    }
}

#[test]
fn bombs_of_5_gib_of_zeros_are_refused_at_once_under_1gb_xz_zstd_gzip() {
    let i = inputs();
    for u in zero_units() {
        // 20 streams of 256 MiB: 5 GiB, read whole as `xz -dc` would.
        let bomb = i.fx.path(&format!("bomb5g.ko.{}", u.ext));
        std::fs::write(&bomb, u.zeros.repeat(20)).unwrap();
        let says = format!("{}-compressed file: decompresses to", u.name);
        assert_every_reader_refuses(&i, &bomb, &says);
    }
}

#[test]
fn zeros_behind_a_valid_elf_header_stop_past_its_end_under_1gb_xz_zstd_gzip() {
    let i = inputs();
    let obj = std::fs::read(&i.obj).unwrap();
    for Unit {
        name,
        ext,
        tool,
        opts,
        zeros,
    } in zero_units()
    {
        // The whole object, then 3 GiB of zeros (less than the cap: what
        // stops them is the end the ELF's headers give).
        let mut bomb = compress(&tool, opts, std::iter::once(obj.clone()));
        bomb.extend(zeros.repeat(12));
        let path = i.fx.path(&format!("elfbomb.ko.{ext}"));
        std::fs::write(&path, bomb).unwrap();
        let says = format!("{name}-compressed file: decompresses to more than 1048576 bytes past the end of the ELF it holds");
        assert_every_reader_refuses(&i, &path, &says);
    }
}

/// `file` split into `n` pieces, each compressed on its own, concatenated.
fn split(tool: &Path, opts: &[&str], file: &Path, n: usize) -> Vec<u8> {
    let data = std::fs::read(file).unwrap();
    let mut out = Vec::new();
    for piece in data.chunks(data.len().div_ceil(n)) {
        out.extend(compress(tool, opts, std::iter::once(piece.to_vec())));
    }
    out
}

#[test]
fn modules_in_three_zstd_frames_or_xz_streams_read_whole_like_zstd_dc_and_xz_dc() {
    let i = inputs();
    let want_funcs = run(&os(&[&"funcs", &i.elf]));
    let want_dump = run(&os(&[&"dump", &i.elf]));
    assert_ok(&want_funcs, "funcs");
    for (name, package, ext, opts) in CODECS {
        let Some(tool) = testkit::tool_or_skip(name, package) else {
            continue;
        };
        let path = i.fx.path(&format!("split3.ko.{ext}"));
        std::fs::write(&path, split(&tool, opts, &i.elf, 3)).unwrap();
        let dc = testkit::run_ok(Command::new(&tool).arg("-dc").arg(&path));
        assert_eq!(dc, std::fs::read(&i.elf).unwrap(), "{name} -dc");
        for (want, args) in [
            (&want_funcs, os(&[&"funcs", &path])),
            (&want_dump, os(&[&"dump", &path])),
        ] {
            let got = run(&args);
            assert_ok(&got, &format!("{args:?}"));
            assert_eq!(got.stdout, want.stdout, "{args:?}: not as the file reads");
        }
    }
    // The reproducers: t.o in two frames or streams.
    for name in ["split.ko.zst", "split.ko.xz"] {
        let path = Path::new(REPRO).join(name);
        if path.is_file() {
            let got = run(&os(&[&"funcs", &path]));
            assert_ok(&got, name);
            assert!(
                String::from_utf8_lossy(&got.stdout).contains("exported"),
                "{name}: {}",
                String::from_utf8_lossy(&got.stdout)
            );
        }
    }
}

#[test]
fn a_broken_frame_after_a_whole_elf_is_an_error_like_zstd_dc_not_ignored() {
    let Some(tool) = testkit::tool_or_skip("zstd", "zstd") else {
        return;
    };
    let i = inputs();
    let mut file = compress(
        &tool,
        &["-q"],
        std::iter::once(std::fs::read(&i.elf).unwrap()),
    );
    let mut junk = compress(&tool, &["-q"], std::iter::once(b"more bytes".to_vec()));
    junk.truncate(junk.len() - 3);
    file.extend(junk);
    let path = i.fx.path("trailing.ko.zst");
    std::fs::write(&path, file).unwrap();
    let dc = Command::new(&tool).arg("-dc").arg(&path).output().unwrap();
    assert!(!dc.status.success(), "zstd -dc read it");
    let r = run(&os(&[&"funcs", &path]));
    assert_refused(&r, &path, "zstd-compressed file: ", "funcs");
}

#[test]
fn dev_zero_and_pipes_of_zeros_are_refused_at_once_naming_what_they_are_under_1gb() {
    let dev_zero = Path::new("/dev/zero");
    let r = run(&os(&[&"dump", &dev_zero]));
    assert_refused(
        &r,
        dev_zero,
        "a character device, not ELF or BTF",
        "dump /dev/zero",
    );
    let r = run(&os(&[&"perf", &dev_zero]));
    assert_refused(
        &r,
        dev_zero,
        "a character device, not perf.data",
        "perf /dev/zero",
    );
    for args in [
        ["dump", "/dev/stdin"],
        ["perf", "/dev/stdin"],
        ["perf", "-"],
    ] {
        let mut cat = Command::new("cat")
            .arg("/dev/zero")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = Stdio::from(cat.stdout.take().unwrap());
        let r = run_with(&os(&[&args[0], &args[1]]), stdin, Duration::from_secs(60));
        cat.kill().unwrap();
        cat.wait().unwrap();
        let what = if args[1] == "-" {
            "standard input"
        } else {
            "a pipe"
        };
        assert_refused(
            &r,
            Path::new(args[1]),
            what,
            &format!("{args:?} < /dev/zero"),
        );
    }
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

#[test]
fn fifos_with_no_writer_are_refused_at_once_by_dump_encode_funcs_perf_layout() {
    // `layout FILE` without -F first peeks at the magic with a blocking
    // open (layout::dwarf::has_dwarf): not yet through fileio, so the
    // formats are given here.
    let i = inputs();
    let fifo = i.fx.path("fifo");
    mkfifo(&fifo);
    let out = i.fx.path("out.btf");
    for args in [
        os(&[&"dump", &fifo]),
        os(&[&"encode", &fifo, &"-o", &out]),
        os(&[&"funcs", &fifo]),
        os(&[&"perf", &fifo]),
        os(&[&"layout", &"-F", &"btf", &fifo]),
        os(&[&"layout", &"-F", &"dwarf", &fifo]),
    ] {
        let r = run_with(&args, Stdio::null(), Duration::from_secs(20));
        assert_refused(&r, &fifo, "a FIFO with no writer", &format!("{args:?}"));
        assert!(!out.exists());
    }
}

#[test]
fn a_fifo_with_a_slow_writer_reads_like_the_file_dump_and_layout() {
    let i = inputs();
    let commands: [&[&str]; 2] = [&["dump"], &["layout", "-F", "btf", "-C", "point"]];
    for command in commands {
        let fifo = i.fx.path("slow-fifo");
        let _ = std::fs::remove_file(&fifo);
        mkfifo(&fifo);
        let argv = |f: &Path| {
            let mut v: Vec<OsString> = command.iter().map(OsString::from).collect();
            v.push(f.as_os_str().to_owned());
            v
        };
        let want = run(&argv(&i.btf));
        assert_ok(&want, command[0]);
        // The writer has the FIFO open before btfkit opens it (read-write:
        // open does not wait), then writes a second later, in pieces.
        let w = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .unwrap();
        let data = std::fs::read(&i.btf).unwrap();
        let writer = std::thread::spawn(move || {
            let mut w = w;
            std::thread::sleep(Duration::from_secs(1));
            for piece in data.chunks(100) {
                w.write_all(piece).unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let got = run_with(&argv(&fifo), Stdio::null(), Duration::from_secs(60));
        writer.join().unwrap();
        assert_ok(&got, &format!("{command:?} of a slow FIFO"));
        assert_eq!(
            got.stdout, want.stdout,
            "{command:?}: not as the file reads"
        );
    }
}

/// A copy of Debian's vmlinux in `dir` (skip without one).
fn vmlinux_copy(dir: &Path) -> Option<PathBuf> {
    let k = testkit::debian_kernel_or_skip()?;
    let v = dir.join("vmlinux");
    std::fs::copy(&k.vmlinux, &v).unwrap();
    Some(v)
}

#[test]
fn an_input_truncated_while_encode_maps_it_is_one_line_changed_while_read_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let Some(v) = vmlinux_copy(dir.path()) else {
        return;
    };
    let out = dir.path().join("o.btf");
    let child = Command::new(BTFKIT)
        .args(["encode", "-j1"])
        .arg(&v)
        .arg("-o")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Truncated as soon as encode has mapped it, long before it has read
    // the DWARF (a release build encodes vmlinux in about a second, so a
    // fixed wait may come after the encode).
    let maps = format!("/proc/{}/maps", child.id());
    let name = v.to_string_lossy().into_owned();
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&maps).is_ok_and(|m| m.contains(&name)) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "encode never mapped {name}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(&v)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("btfkit: error: "), "{err}");
    assert!(
        err.contains(&format!("{}: changed while it was read", v.display())),
        "{err}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [OsString::from("vmlinux")], "written: {left:?}");
}

#[test]
fn an_output_that_is_an_input_is_refused_naming_both_before_anything_is_read() {
    let i = inputs();
    let a = i.fx.path("a.o");
    std::fs::copy(&i.obj, &a).unwrap();
    let before = std::fs::read(&a).unwrap();
    let sym = i.fx.path("l.o");
    std::os::unix::fs::symlink("a.o", &sym).unwrap();
    let hard = i.fx.path("h.o");
    std::fs::hard_link(&a, &hard).unwrap();
    let raw = i.fx.path("r.btf");
    std::fs::copy(&i.btf, &raw).unwrap();
    // A base that blocks or fails when read: refused before it is.
    let fifo = i.fx.path("base-fifo");
    mkfifo(&fifo);
    for (out, args) in [
        (&a, os(&[&"encode", &a, &"-o", &a])),
        (&sym, os(&[&"encode", &a, &"-o", &sym])),
        (&hard, os(&[&"encode", &a, &"-o", &hard, &"--base", &fifo])),
        (
            &fifo,
            os(&[&"encode", &a, &"-o", &i.fx.path("x"), &"--base", &fifo]),
        ),
        (
            &a,
            os(&[
                &"pahole",
                &"-J",
                &format!("--btf_encode_detached={}", a.display()),
                &a,
            ]),
        ),
        (&raw, os(&[&"dedup", &raw, &"-o", &raw])),
    ] {
        let r = run_with(&args, Stdio::null(), Duration::from_secs(20));
        if out == &fifo {
            // Not an output: the FIFO is read (and has no writer).
            assert_refused(&r, &fifo, "a FIFO with no writer", &format!("{args:?}"));
            continue;
        }
        assert_refused(
            &r,
            out,
            "is the same file as the input",
            &format!("{args:?}"),
        );
        assert!(
            r.stderr.contains("writing it would destroy the input"),
            "{}",
            r.stderr
        );
    }
    assert_eq!(std::fs::read(&a).unwrap(), before, "the input changed");
    assert_eq!(std::fs::read(&raw).unwrap(), std::fs::read(&i.btf).unwrap());
    // pahole -J without a detached output writes .BTF into the file.
    assert_ok(&run(&os(&[&"pahole", &"-J", &a])), "pahole -J a.o");
    assert_ok(&run(&os(&[&"dump", &a])), "dump a.o after pahole -J");
    assert_eq!(
        std::fs::read(&hard).unwrap(),
        before,
        "the other link changed"
    );
}

#[test]
fn a_hard_linked_object_on_a_full_disk_is_left_whole_by_pahole_j() {
    if !testkit::is_root() {
        return testkit::skip("mounting a 64k tmpfs needs root");
    }
    let i = inputs();
    let mnt = i.fx.path("full");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mnt)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        return testkit::skip("mount -t tmpfs failed");
    }
    let h = mnt.join("h.o");
    std::fs::copy(&i.obj, &h).unwrap();
    std::fs::hard_link(&h, mnt.join("h2.o")).unwrap();
    let before = std::fs::read(&h).unwrap();
    // Fill what is left.
    let mut fill = std::fs::File::create(mnt.join("fill")).unwrap();
    while fill.write_all(&[0; 4096]).is_ok() {}
    drop(fill);
    let r = run(&os(&[&"pahole", &"-J", &h]));
    let h_after = std::fs::read(&h).unwrap();
    let h2_after = std::fs::read(mnt.join("h2.o")).unwrap();
    let mut left: Vec<String> = std::fs::read_dir(&mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let _ = Command::new("umount").arg(&mnt).status();
    assert_refused(
        &r,
        &h,
        "No space left on device",
        "pahole -J on a full disk",
    );
    assert_eq!(h_after, before, "h.o changed");
    assert_eq!(h2_after, before, "h2.o changed");
    assert_eq!(left, ["fill", "h.o", "h2.o"], "a temporary file was left");
}

#[test]
fn sigint_while_writing_a_hard_linked_output_leaves_its_old_content() {
    let dir = tempfile::tempdir().unwrap();
    let Some(v) = vmlinux_copy(dir.path()) else {
        return;
    };
    let (len, ino) = {
        let m = std::fs::metadata(&v).unwrap();
        (m.len(), m.ino())
    };
    let other = dir.path().join("vmlinux.link");
    std::fs::hard_link(&v, &other).unwrap();
    for _ in 0..3 {
        let mut child = Command::new(BTFKIT)
            .args(["pahole", "-J", "-j"])
            .arg(&v)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let tmp = dir.path().join(format!(".vmlinux.tmp.{}", child.id()));
        let seen = loop {
            if tmp.exists() {
                break true;
            }
            if child.try_wait().unwrap().is_some() {
                break false;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        if seen {
            // SAFETY: a process this test started and has not reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        }
        let status = child.wait().unwrap();
        assert!(!tmp.exists(), "{} left behind", tmp.display());
        use std::os::unix::process::ExitStatusExt;
        if seen && status.signal() == Some(libc::SIGINT) {
            let m = std::fs::metadata(&v).unwrap();
            assert_eq!(
                (m.len(), m.ino(), m.nlink()),
                (len, ino, 2),
                "vmlinux changed"
            );
            return;
        }
        assert!(status.success(), "{status:?}");
        // The write won the race: the path is a new file, the link the old.
        assert_eq!(std::fs::metadata(&other).unwrap().len(), len);
        std::fs::remove_file(&v).unwrap();
        std::fs::hard_link(&other, &v).unwrap();
    }
    panic!("three runs finished their write before SIGINT arrived");
}

/// `perf report -D`'s aggregated counts of `file`: record name to count.
fn perf_report_counts(perf: &Path, file: &Path) -> std::collections::BTreeMap<String, u64> {
    let out = testkit::run_ok(Command::new(perf).args(["report", "-D", "-i"]).arg(file));
    let text = String::from_utf8_lossy(&out);
    let mut counts = std::collections::BTreeMap::new();
    let stats = text.split("Aggregated stats:").nth(1).unwrap_or_default();
    for line in stats.lines() {
        let Some((name, rest)) = line.trim().split_once(" events:") else {
            continue;
        };
        if name == "TOTAL" || name.contains(' ') {
            continue;
        }
        let n = rest.split_whitespace().next().unwrap().parse().unwrap();
        // The per-event section repeats names: the first list is the file's.
        counts.entry(name.to_owned()).or_insert(n);
    }
    counts
}

#[test]
fn perf_record_z_data_gives_its_records_and_samples_like_perf_report_d() {
    let fx = Fixture::new();
    let repro = Path::new(REPRO).join("pz.data");
    let file = if repro.is_file() {
        repro
    } else {
        let Some(perf) = testkit::tool_or_skip("perf", "linux-perf") else {
            return;
        };
        let f = fx.path("pz.data");
        let st = Command::new(perf)
            .args([
                "record",
                "-q",
                "-z",
                "-e",
                "cpu-clock",
                "-c",
                "250000",
                "-o",
            ])
            .arg(&f)
            .args([
                "--",
                "sh",
                "-c",
                "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        if !st.success() {
            return testkit::skip("perf record -z failed (perf_event_paranoid?)");
        }
        f
    };
    let r = run(&os(&[&"perf", &file, &"--json", &"--symbolize"]));
    assert_ok(&r, "perf --json --symbolize");
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let ours: std::collections::BTreeMap<String, u64> = doc["records"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect();
    assert!(ours.get("SAMPLE").copied().unwrap_or(0) > 0, "{ours:?}");
    let Some(perf) = testkit::tool_or_skip("perf", "linux-perf") else {
        return;
    };
    assert_eq!(
        ours,
        perf_report_counts(&perf, &file),
        "not as perf report -D counts"
    );
}

#[test]
fn a_perf_compressed_record_of_zeros_is_a_warning_naming_it_under_1gb() {
    let Some(tool) = testkit::tool_or_skip("zstd", "zstd") else {
        return;
    };
    let fx = Fixture::new();
    // 1 GiB of zeros as one zstd stream, cut into COMPRESSED records of a
    // pipe-format perf.data, as `perf record -z -o -` writes them.
    let stream = compress(&tool, &["-1", "-q"], (0..4).flat_map(|_| zeros_256m()));
    let mut data = b"PERFILE2".to_vec();
    data.extend_from_slice(&16u64.to_le_bytes());
    for piece in stream.chunks(60_000) {
        data.extend_from_slice(&81u32.to_le_bytes());
        data.extend_from_slice(&0u16.to_le_bytes());
        data.extend_from_slice(&(8 + piece.len() as u16).to_le_bytes());
        data.extend_from_slice(piece);
    }
    let path = fx.path("zbomb.data");
    std::fs::write(&path, data).unwrap();
    let r = run(&os(&[&"perf", &path, &"--symbolize"]));
    assert_ok(&r, "perf");
    assert!(r.rss_kb < RSS_LIMIT_KB, "peak RSS {} KB", r.rss_kb);
    assert!(
        r.stderr.contains(&format!(
            "btfkit: warning: {}: record skipped: COMPRESSED record at offset 0x10: ",
            path.display()
        )) && r.stderr.contains("smaller than its 8-byte header"),
        "{}",
        r.stderr
    );
}
