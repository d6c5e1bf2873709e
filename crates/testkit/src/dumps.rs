//! Real crash dumps of Debian's 6.1 cloud kernel, made once and cached.
//!
//! The guest (QEMU TCG, 2 CPUs, 512 MB, `-device vmcoreinfo`) loads
//! `qemu_fw_cfg` (so the dump carries VMCOREINFO) and `dummy` (a module
//! with data), starts named processes that sleep in different ways, and
//! says it is ready. The host stops the CPUs (QMP `stop`) so that every
//! dump holds the same memory, writes an ELF dump and a kdump-zlib one
//! (flattened, as QEMU writes it), and ends the machine. The lzo, snappy
//! and zstd dumps are the kdump-zlib dump with its pages recompressed.
//!
//! Cached in `<cache>/dumps/<kernel version>-<GENERATOR>`; a change to the
//! guest below must change GENERATOR. A lock file keeps two test binaries
//! from making them at once.
//!
//! [`makedumpfile_or_skip`] adds makedumpfile's own outputs made from the
//! ELF dump (their own done-marker, so the dumps above stay valid).
//!
//! The dumps are the kernel tier's: [`dumps_or_skip`] skips unless
//! `BTFKIT_KERNEL_TESTS=1` (see [`crate::kernel_tier`]).

#![allow(clippy::unwrap_used)]

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::qemu::{qemu_or_skip, Initramfs, Qemu};

const GENERATOR: &str = "qemu-busybox-1";

/// The processes the guest leaves running, by comm.
pub const GUEST_TASKS: &[&str] = &["btfkit-sleeper", "btfkit-reader", "btfkit-opener"];

pub struct Dumps {
    pub dir: PathBuf,
    pub kernel: crate::DebianKernel,
    pub elf: PathBuf,
    pub kdump_zlib: PathBuf,
    pub kdump_lzo: PathBuf,
    pub kdump_snappy: PathBuf,
    pub kdump_zstd: PathBuf,
}

impl Dumps {
    /// Every dump with a name for messages.
    pub fn all(&self) -> Vec<(&'static str, &Path)> {
        vec![
            ("elf", &self.elf),
            ("kdump-zlib", &self.kdump_zlib),
            ("kdump-lzo", &self.kdump_lzo),
            ("kdump-snappy", &self.kdump_snappy),
            ("kdump-zstd", &self.kdump_zstd),
        ]
    }
}

/// The dumps, made first if the cache lacks them; or a skip (the kernel
/// tier is off, or QEMU or Debian's kernel is missing).
pub fn dumps_or_skip() -> Option<Dumps> {
    crate::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel")?;
    qemu_or_skip()?;
    let kernel = crate::debian_vmlinuz_or_skip()?;
    let version = std::fs::read_to_string(kernel.dir.join("VERSION"))
        .unwrap_or_default()
        .trim()
        .to_owned();
    let dir = crate::cache_dir()
        .join("dumps")
        .join(format!("{version}-{GENERATOR}"));
    std::fs::create_dir_all(&dir).unwrap();
    let d = Dumps {
        elf: dir.join("vmcore.elf"),
        kdump_zlib: dir.join("vmcore.kdump-zlib"),
        kdump_lzo: dir.join("vmcore.kdump-lzo"),
        kdump_snappy: dir.join("vmcore.kdump-snappy"),
        kdump_zstd: dir.join("vmcore.kdump-zstd"),
        dir,
        kernel,
    };
    let lock = std::fs::File::create(d.dir.join("lock")).unwrap();
    // Held until `lock` is dropped (std's File::lock is newer than our MSRV).
    // SAFETY: flock on a descriptor we own.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    if !d.dir.join("done").exists() {
        make(&d);
        std::fs::write(d.dir.join("done"), GENERATOR).unwrap();
    }
    Some(d)
}

fn module(k: &crate::DebianKernel, rel: &str) -> PathBuf {
    k.image_modules.join("kernel").join(rel)
}

fn make(d: &Dumps) {
    let tmp = tempfile::tempdir().unwrap();
    let initrd = tmp.path().join("initrd.cpio");
    let mut fs = Initramfs::new();
    fs.file(
        "/lib/modules/qemu_fw_cfg.ko",
        &module(&d.kernel, "drivers/firmware/qemu_fw_cfg.ko"),
    )
    .file(
        "/lib/modules/dummy.ko",
        &module(&d.kernel, "drivers/net/dummy.ko"),
    )
    // A script's comm is its file name: named processes from busybox alone.
    .bytes(
        "/bin/btfkit-sleeper",
        b"#!/bin/sh\nwhile true; do sleep 1000; done\n",
        0o755,
    )
    .bytes(
        "/bin/btfkit-reader",
        b"#!/bin/sh\nmkfifo /tmp/r\nexec 3<>/tmp/r\nread x <&3\n",
        0o755,
    )
    .bytes(
        "/bin/btfkit-opener",
        b"#!/bin/sh\nmkfifo /tmp/o\ncat /tmp/o\n",
        0o755,
    )
    .script(
        "insmod /lib/modules/qemu_fw_cfg.ko\n\
         insmod /lib/modules/dummy.ko numdummies=2\n\
         btfkit-sleeper &\nbtfkit-reader &\nbtfkit-opener &\n\
         sleep 1\necho BTFKIT-RESULT ready yes\nsleep 100000",
    );
    fs.write(&initrd).unwrap();
    let mut q = Qemu::new(&d.kernel.vmlinuz, &initrd);
    q.cpus = 2;
    q.vmcoreinfo = true;
    q.timeout = Duration::from_secs(600);
    let mut vm = q.spawn().unwrap();
    vm.wait_for("BTFKIT-RESULT ready", Duration::from_secs(300))
        .unwrap_or_else(|e| panic!("guest did not get ready: {e}\n{}", vm.console()));
    vm.qmp(serde_json::json!({ "execute": "stop" })).unwrap();
    let part = |p: &Path| {
        let mut s = p.as_os_str().to_owned();
        s.push(".part");
        PathBuf::from(s)
    };
    vm.dump(&part(&d.elf), None).unwrap();
    vm.dump(&part(&d.kdump_zlib), Some("kdump-zlib")).unwrap();
    let console = vm.quit().unwrap();
    std::fs::write(d.dir.join("console.txt"), &console.text).unwrap();
    let src = kmem::kdump::KdumpFile::parse(kmem::file::Bytes::open(&part(&d.kdump_zlib)).unwrap())
        .unwrap();
    for (codec, out) in [
        (kmem::kdump::Codec::Lzo, &d.kdump_lzo),
        (kmem::kdump::Codec::Snappy, &d.kdump_snappy),
        (kmem::kdump::Codec::Zstd, &d.kdump_zstd),
    ] {
        let mut w = std::io::BufWriter::new(std::fs::File::create(part(out)).unwrap());
        src.write_recompressed(codec, &mut w).unwrap();
        std::io::Write::flush(&mut w).unwrap();
    }
    for p in [
        &d.elf,
        &d.kdump_zlib,
        &d.kdump_lzo,
        &d.kdump_snappy,
        &d.kdump_zstd,
    ] {
        std::fs::rename(part(p), p).unwrap();
    }
}

/// A change to the makedumpfile outputs below must change this.
const MAKEDUMPFILE_GENERATOR: &str = "makedumpfile-1";

/// Dumps written by makedumpfile (Debian's build: zlib and lzo; its snappy
/// and zstd support is compiled out) from the QEMU ELF dump.
pub struct Makedumpfile {
    /// `-c -d 0`, `-l -d 0`: every page.
    pub kdump_zlib: PathBuf,
    pub kdump_lzo: PathBuf,
    /// `-F -l -d 0`: the flattened stream, as `makedumpfile -F` writes to a pipe.
    pub flat_lzo: PathBuf,
    /// `-E -d 31`: ELF with zero, cache, user and free pages left out
    /// (segments end early where the pages left out run to their end).
    pub elf_d31: PathBuf,
    /// `-c -d 31`: kdump-compressed, the same pages left out (the bitmap says which).
    pub kdump_zlib_d31: PathBuf,
}

impl Makedumpfile {
    /// The dumps that hold every page (read as the QEMU dumps do).
    pub fn full(&self) -> Vec<(&'static str, &Path)> {
        vec![
            ("makedumpfile -c", &self.kdump_zlib),
            ("makedumpfile -l", &self.kdump_lzo),
            ("makedumpfile -F -l", &self.flat_lzo),
        ]
    }

    /// The dumps filtered with dump level 31, and whether the format says
    /// which pages it left out: the kdump bitmap does; ELF cannot (the pages
    /// become zeros, or the part of a segment past its file size, which ELF
    /// readers, drgn too, read as zeros).
    pub fn filtered(&self) -> Vec<(&'static str, &Path, bool)> {
        vec![
            ("makedumpfile -E -d 31", &self.elf_d31, false),
            ("makedumpfile -c -d 31", &self.kdump_zlib_d31, true),
        ]
    }
}

pub fn makedumpfile_or_skip(d: &Dumps) -> Option<Makedumpfile> {
    let tool = crate::tool_or_skip("makedumpfile", "makedumpfile")?;
    let m = Makedumpfile {
        kdump_zlib: d.dir.join("vmcore.mdf-zlib"),
        kdump_lzo: d.dir.join("vmcore.mdf-lzo"),
        flat_lzo: d.dir.join("vmcore.mdf-flat-lzo"),
        elf_d31: d.dir.join("vmcore.mdf-elf-d31"),
        kdump_zlib_d31: d.dir.join("vmcore.mdf-zlib-d31"),
    };
    let lock = std::fs::File::create(d.dir.join("lock")).unwrap();
    // SAFETY: flock on a descriptor we own; held until `lock` is dropped.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    let done = d.dir.join("makedumpfile-done");
    if std::fs::read_to_string(&done).ok().as_deref() != Some(MAKEDUMPFILE_GENERATOR) {
        make_with_makedumpfile(&tool, d, &m);
        std::fs::write(&done, MAKEDUMPFILE_GENERATOR).unwrap();
    }
    Some(m)
}

fn make_with_makedumpfile(tool: &Path, d: &Dumps, m: &Makedumpfile) {
    let tmp = tempfile::tempdir_in(&d.dir).unwrap();
    let input = tmp.path().join("vmcore.elf");
    program_headers_first(&d.elf, &input);
    for (args, dest) in [
        (&["-c", "-d", "0"][..], &m.kdump_zlib),
        (&["-l", "-d", "0"], &m.kdump_lzo),
        (&["-F", "-l", "-d", "0"], &m.flat_lzo),
        (&["-E", "-d", "31"], &m.elf_d31),
        (&["-c", "-d", "31"], &m.kdump_zlib_d31),
    ] {
        let part = tmp.path().join("out");
        let mut cmd = std::process::Command::new(tool);
        cmd.args(args).arg(&input);
        if args.contains(&"-F") {
            // The flattened format goes to stdout.
            cmd.stdout(std::fs::File::create(&part).unwrap());
        } else {
            cmd.arg(&part).stdout(std::process::Stdio::null());
        }
        let out = cmd.stderr(std::process::Stdio::piped()).output().unwrap();
        assert!(
            out.status.success(),
            "makedumpfile {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::rename(&part, dest).unwrap();
    }
}

/// QEMU writes its ELF dump with the section headers before the program
/// headers; makedumpfile (1.7) reads the program headers as if they
/// followed the ELF header. The same file with the program headers right
/// after the ELF header, no section headers, and every segment's bytes
/// unchanged.
fn program_headers_first(src: &Path, dst: &Path) {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::File::open(src).unwrap();
    let mut eh = [0u8; 64];
    f.read_exact(&mut eh).unwrap();
    let u16_at = |b: &[u8], o: usize| u16::from_le_bytes([b[o], b[o + 1]]);
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let phoff = u64_at(&eh, 0x20);
    let (phentsize, phnum) = (u16_at(&eh, 0x36) as usize, u16_at(&eh, 0x38) as usize);
    assert_eq!(phentsize, 56, "{}: not an ELF64 dump", src.display());
    let mut ph = vec![0u8; 56 * phnum];
    f.seek(SeekFrom::Start(phoff)).unwrap();
    f.read_exact(&mut ph).unwrap();
    eh[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
    eh[0x28..0x30].copy_from_slice(&0u64.to_le_bytes());
    eh[0x34..0x36].copy_from_slice(&64u16.to_le_bytes());
    // e_shentsize, e_shnum, e_shstrndx: no section headers.
    eh[0x3a..0x40].fill(0);
    let mut at = 64 + ph.len() as u64;
    let mut moves = Vec::new();
    for p in ph.chunks_exact_mut(56) {
        let (offset, filesz) = (u64_at(p, 8), u64_at(p, 32));
        moves.push((offset, filesz));
        p[8..16].copy_from_slice(&at.to_le_bytes());
        at += filesz;
    }
    let mut w = std::io::BufWriter::new(std::fs::File::create(dst).unwrap());
    w.write_all(&eh).unwrap();
    w.write_all(&ph).unwrap();
    for (offset, filesz) in moves {
        f.seek(SeekFrom::Start(offset)).unwrap();
        let n = std::io::copy(&mut (&mut f).take(filesz), &mut w).unwrap();
        assert_eq!(
            n,
            filesz,
            "{}: segment at {offset:#x} is short",
            src.display()
        );
    }
    w.flush().unwrap();
}
