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

#![allow(dead_code)]

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use testkit::qemu::{qemu_or_skip, Initramfs, Qemu};

const GENERATOR: &str = "qemu-busybox-1";

/// The processes the guest leaves running, by comm.
pub const GUEST_TASKS: &[&str] = &["btfkit-sleeper", "btfkit-reader", "btfkit-opener"];

pub struct Dumps {
    pub dir: PathBuf,
    pub kernel: testkit::DebianKernel,
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

pub fn dumps_or_skip() -> Option<Dumps> {
    qemu_or_skip()?;
    let kernel = testkit::debian_vmlinuz_or_skip()?;
    let version = std::fs::read_to_string(kernel.dir.join("VERSION"))
        .unwrap_or_default()
        .trim()
        .to_owned();
    let dir = testkit::cache_dir()
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

fn module(k: &testkit::DebianKernel, rel: &str) -> PathBuf {
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
