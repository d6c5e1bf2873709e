//! fileio's inputs under its rules, made at test time: bombs (zeros, and
//! zeros behind a valid ELF header) refused at their first bytes or just
//! past the ELF's end, the cap enforced inside the decoder, sizes the
//! files state over the cap refused before decoding, every zstd frame and
//! xz stream read as `zstd -dc` and `xz -dc` read them, pipes and devices
//! bounded and named, FIFOs never blocking open(), a mapped input
//! truncated under the reader turned into an error naming it, and
//! outputs that are inputs or hard-linked never destroying one.
//!
//! Oracles: the decompressed bytes equal what was compressed (and what
//! the tools give when they are installed); an error is one line naming
//! the codec or the kind of file and the offset; the peak resident memory
//! of the test process stays under 1 GB.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fileio::compressed_file::{decompress, decompress_capped};
use fileio::format::ELF_OR_BTF;
use fileio::{Format, InputFile, StreamError};

fn xz(data: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 0);
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn zst(data: &[u8]) -> Vec<u8> {
    // bulk: the frame header states its content size.
    zstd::bulk::compress(data, 1).unwrap()
}

fn zst_streamed(data: &[u8]) -> Vec<u8> {
    // streamed: no content size, as `zstd` writes from a pipe.
    zstd::encode_all(data, 1).unwrap()
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A small relocatable ELF with one section of `n` bytes.
fn elf(n: usize) -> Vec<u8> {
    use object::write::Object;
    let mut obj = Object::new(
        object::BinaryFormat::Elf,
        object::Architecture::X86_64,
        object::Endianness::Little,
    );
    let id = obj.add_section(Vec::new(), b".data".to_vec(), object::SectionKind::Data);
    obj.section_mut(id).set_data(vec![0x5a; n], 8);
    obj.write().unwrap()
}

fn peak_rss_kb() -> i64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_maxrss
}

fn assert_under_1gb() {
    let kb = peak_rss_kb();
    assert!(kb < 1 << 20, "peak RSS {kb} KB");
}

fn content_error(r: Option<Result<Vec<u8>, fileio::DecompressError>>) -> (String, StreamError) {
    match r.expect("compressed").expect_err("must be refused") {
        fileio::DecompressError::Content { codec, error } => {
            (format!("{}-compressed file: {error}", codec.name()), *error)
        }
        e => panic!("not a content error: {e}"),
    }
}

#[test]
fn zeros_of_every_codec_are_refused_at_their_first_bytes_under_1gb() {
    let zeros = vec![0u8; 16 << 20];
    for file in [xz(&zeros), zst_streamed(&zeros), gz(&zeros)] {
        let (msg, e) = content_error(decompress(&file, ELF_OR_BTF));
        assert!(matches!(e, StreamError::NotFormat { .. }), "{msg}");
        assert!(
            msg.ends_with(
                "decompresses to data that is not ELF or BTF (it starts with 00 00 00 00 00 00 00 00, at offset 0x0)"
            ),
            "{msg}"
        );
    }
    assert_under_1gb();
}

#[test]
fn zeros_behind_a_valid_elf_header_stop_1_mib_past_its_end_like_a_signature_is_kept() {
    let head = elf(100);
    let end = head.len() as u64;
    // 3 MiB of zeros after it: refused at the ELF's end + 1 MiB.
    let mut bomb = head.clone();
    bomb.resize(head.len() + (3 << 20), 0);
    for file in [xz(&bomb), zst_streamed(&bomb), gz(&bomb)] {
        let (msg, e) = content_error(decompress(&file, ELF_OR_BTF));
        match e {
            StreamError::PastEnd { end: e, offset, .. } => {
                assert_eq!(e, end, "{msg}");
                assert_eq!(offset, end + (1 << 20), "{msg}");
            }
            _ => panic!("{msg}"),
        }
        assert!(msg.contains("past the end of the ELF it holds"), "{msg}");
    }
    // A module signature's worth after the ELF is read.
    let mut signed = head.clone();
    signed.extend_from_slice(&[0x30; 4096]);
    signed.extend_from_slice(b"~Module signature appended~\n");
    assert_eq!(
        decompress(&xz(&signed), ELF_OR_BTF).unwrap().unwrap(),
        signed
    );
}

#[test]
fn the_cap_is_enforced_inside_the_decoder_and_stated_sizes_before_it() {
    let data = vec![7u8; 2 << 20];
    // No stated size: refused as the bytes pass the cap.
    for file in [zst_streamed(&data), gz(&data)] {
        let (msg, e) = content_error(decompress_capped(&file, &[], 1 << 20));
        assert!(
            matches!(e, StreamError::TooLarge { cap, .. } if cap == 1 << 20),
            "{msg}"
        );
        assert!(msg.contains("refused at offset 0x100000"), "{msg}");
    }
    // The xz index and the zstd frame header state it: refused first.
    for (file, by) in [(xz(&data), "index"), (zst(&data), "frame headers")] {
        let (msg, e) = content_error(decompress_capped(&file, &[], 1 << 20));
        assert!(
            matches!(e, StreamError::ClaimsTooMuch { claimed, .. } if claimed == 2 << 20),
            "{msg}"
        );
        assert!(msg.contains(&format!("as its {by} says")), "{msg}");
    }
}

/// The tool's output for `file`, if the tool is installed.
fn tool_dc(tool: &str, file: &[u8]) -> Option<Vec<u8>> {
    let mut child = Command::new(tool)
        .arg("-dc")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take().unwrap();
    let input = file.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "{tool} -dc failed");
    Some(out.stdout)
}

#[test]
fn three_zstd_frames_and_xz_streams_with_padding_read_whole_like_zstd_dc_and_xz_dc() {
    let whole = elf(5000);
    let (a, rest) = whole.split_at(1000);
    let (b, c) = rest.split_at(2500);
    let mut zstd3 = zst(a);
    zstd3.extend(zst_streamed(b));
    // A skippable frame between: zstd -dc skips it.
    zstd3.extend_from_slice(&0x184d_2a50u32.to_le_bytes());
    zstd3.extend_from_slice(&4u32.to_le_bytes());
    zstd3.extend_from_slice(b"skip");
    zstd3.extend(zst(c));
    let mut xz3 = xz(a);
    xz3.extend(xz(b));
    xz3.extend_from_slice(&[0; 8]); // stream padding
    xz3.extend(xz(c));
    let mut gz3 = gz(a);
    gz3.extend(gz(b));
    gz3.extend(gz(c));
    for (tool, file) in [("zstd", zstd3), ("xz", xz3), ("gzip", gz3)] {
        let got = decompress(&file, ELF_OR_BTF).unwrap().unwrap();
        assert_eq!(got, whole, "{tool}");
        if let Some(expected) = tool_dc(tool, &file) {
            assert_eq!(got, expected, "not as {tool} -dc reads it");
        }
    }
}

#[test]
fn a_corrupt_frame_after_a_whole_elf_is_an_error_like_zstd_dc() {
    let mut file = zst(&elf(100));
    let mut junk = zst(b"more");
    let n = junk.len();
    junk.truncate(n - 2);
    file.extend(junk);
    let err = decompress(&file, ELF_OR_BTF)
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("zstd-compressed file: "), "{err}");
    assert!(err.contains("at compressed offset 0x"), "{err}");
}

#[test]
fn an_endless_stream_is_read_up_to_the_cap_then_refused_naming_it() {
    let path = Path::new("/dev/fd/0");
    let err = fileio::input_file::read_stream(path, "a pipe", std::io::repeat(0), &[], 1 << 20)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("/dev/fd/0: a pipe that holds more than 1048576 bytes"),
        "{err}"
    );
    let err =
        fileio::input_file::read_stream(path, "a pipe", std::io::repeat(0), ELF_OR_BTF, 4 << 30)
            .unwrap_err()
            .to_string();
    assert!(err.contains("a pipe, not ELF or BTF"), "{err}");
    assert_under_1gb();
}

#[test]
fn a_compressed_pipe_is_decompressed_under_the_same_rules() {
    let whole = elf(3000);
    let got = fileio::input_file::read_stream(
        Path::new("-"),
        "standard input",
        &xz(&whole)[..],
        ELF_OR_BTF,
        fileio::MAX_SIZE,
    )
    .unwrap();
    assert_eq!(got, whole);
    let err = fileio::input_file::read_stream(
        Path::new("-"),
        "standard input",
        &zst_streamed(&[0; 1 << 20])[..],
        ELF_OR_BTF,
        fileio::MAX_SIZE,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("-: zstd-compressed file: decompresses to data that is not"),
        "{err}"
    );
}

#[test]
fn a_character_device_that_is_not_elf_or_btf_is_named_as_such_and_dev_null_left_to_the_reader() {
    let err = InputFile::open(Path::new("/dev/zero"))
        .err()
        .expect("refused")
        .to_string();
    assert_eq!(
        err,
        "/dev/zero: a character device, not ELF or BTF (it starts with 00 00 00 00 00 00, at offset 0x0)"
    );
    let err = InputFile::open_as(Path::new("/dev/zero"), &[Format::PerfData])
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("a character device, not perf.data"), "{err}");
    let null = InputFile::open(Path::new("/dev/null")).unwrap();
    assert!(null.is_empty());
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// `InputFile::open` of `path` in a thread, or a failure after 10 s (it
/// blocked).
fn open_within_10s(path: &Path) -> Result<Vec<u8>, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let r = InputFile::open(&p)
            .map(|d| d.to_vec())
            .map_err(|e| e.to_string());
        let _ = tx.send(r);
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("InputFile::open blocked for 10 s")
}

#[test]
fn a_fifo_with_no_writer_is_refused_at_once_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let t = Instant::now();
    let err = open_within_10s(&fifo).unwrap_err();
    assert_eq!(
        err,
        format!(
            "{}: a FIFO with no writer (nothing to read)",
            fifo.display()
        )
    );
    assert!(t.elapsed() < Duration::from_secs(2));
}

#[test]
fn peek_reads_a_files_first_bytes_and_nothing_of_a_fifo_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, b"\x7fELF and more").unwrap();
    assert_eq!(fileio::input_file::peek(&file, 4).unwrap(), b"\x7fELF");
    assert_eq!(fileio::input_file::peek(&file, 100).unwrap().len(), 13);
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    assert!(fileio::input_file::peek(&fifo, 4).unwrap().is_empty());
}

#[test]
fn a_fifo_with_a_slow_writer_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    // The writer has it open (read-write: open does not wait) before the
    // reader opens it, then writes after a while, in two pieces.
    let w = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let whole = elf(200_000);
    let data = whole.clone();
    let writer = std::thread::spawn(move || {
        let mut w = w;
        std::thread::sleep(Duration::from_millis(500));
        w.write_all(&data[..1000]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        w.write_all(&data[1000..]).unwrap();
    });
    let got = open_within_10s(&fifo).unwrap();
    writer.join().unwrap();
    assert_eq!(got, whole);
}

/// The test binary runs itself with this variable set to a file: the child
/// maps it, truncates it and reads past the new end.
const TRUNCATE_CHILD: &str = "FILEIO_TEST_TRUNCATE_CHILD";

#[test]
fn a_mapped_input_truncated_while_read_is_one_line_changed_while_read_exit_1() {
    if let Some(path) = std::env::var_os(TRUNCATE_CHILD) {
        let path = PathBuf::from(path);
        let data = InputFile::open(&path).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        let sum: u64 = data.iter().map(|&b| u64::from(b)).sum();
        panic!("read past the end without a fault: {sum}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input.o");
    let mut bytes = elf(1 << 20);
    bytes.resize(4 << 20, 1);
    std::fs::write(&path, &bytes).unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_mapped_input_truncated_while_read_is_one_line_changed_while_read_exit_1",
            "--nocapture",
        ])
        .env(TRUNCATE_CHILD, &path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("changed while it was read"))
        .unwrap_or_else(|| panic!("no message: {err}"));
    assert!(line.contains(&*path.to_string_lossy()), "{line}");
    assert!(line.contains("at offset 0x"), "{line}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_output_that_is_an_input_is_refused_through_symlinks_and_hard_links() {
    use fileio::output_file::refuse_input;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("a.o");
    std::fs::write(&input, b"object").unwrap();
    let sym = dir.path().join("sym.o");
    std::os::unix::fs::symlink("a.o", &sym).unwrap();
    let hard = dir.path().join("hard.o");
    std::fs::hard_link(&input, &hard).unwrap();
    for out in [&input, &sym, &hard] {
        let err = refuse_input(out, &[&input]).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "{} is the same file as the input {}",
                out.display(),
                input.display()
            )),
            "{err}"
        );
    }
    assert!(refuse_input(&dir.path().join("new.o"), &[&input]).is_ok());
    assert!(refuse_input(Path::new("-"), &[&input]).is_ok());
    assert!(refuse_input(Path::new("/dev/null"), &[Path::new("/dev/null")]).is_ok());
}

#[test]
fn a_hard_linked_output_is_replaced_whole_and_its_other_link_keeps_the_old_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.btf");
    std::fs::write(&out, b"old").unwrap();
    let other = dir.path().join("other.btf");
    std::fs::hard_link(&out, &other).unwrap();
    let ino = std::fs::metadata(&out).unwrap().ino();
    fileio::output_file::write(&out, b"new bytes", None).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), b"new bytes");
    assert_ne!(
        std::fs::metadata(&out).unwrap().ino(),
        ino,
        "written in place"
    );
    assert_eq!(std::fs::read(&other).unwrap(), b"old");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
}
