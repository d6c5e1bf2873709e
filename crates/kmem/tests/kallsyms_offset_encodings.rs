//! The kallsyms encodings Debian's 6.1 kernel does not have, on real
//! kernels that scripts/fetch-debian-kernels-pinned.sh fetches into the cache
//! (pinned versions; this test downloads nothing), booted under QEMU and
//! dumped with `dump-guest-memory`:
//! - sid's cloud kernel 7.2: place-relative `kallsyms_offsets`, no
//!   `kallsyms_relative_base`;
//! - trixie-backports' 6.19: offsets + relative base without absolute
//!   per-CPU symbols.
//!
//! The symbols kmem reads from a dump's own tables must equal the guest's
//! /proc/kallsyms (every line, compared as md5 sums of 10,000-line chunks
//! computed in the guest) and, where the package has one, its System.map
//! moved by KERNELOFFSET. No DWARF.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use kmem::kallsyms::{Encoding, KSym, Tables};
use kmem::Kernel;
use testkit::qemu::{qemu_or_skip, Console, Initramfs, Qemu};

/// A change to the guest below must change this (the cached dump is remade).
const GENERATOR: &str = "kallsyms-2";
/// sid's 7.x, as pinned in scripts/fetch-debian-kernels-pinned.sh.
const RELEASE_7X: &str = "7.2.13+deb14-cloud-amd64";
/// The last 6.x series, kept in trixie-backports (its modules package is
/// not: that dump's VMCOREINFO comes from the guest's /sys/kernel/vmcoreinfo).
const RELEASE_6_19: &str = "6.19.11+deb13-cloud-amd64";
const CHUNK: usize = 10_000;

struct NewKernel {
    dir: PathBuf,
    dump: PathBuf,
    console: Console,
}

impl NewKernel {
    /// The dump, with VMCOREINFO from its note or else from the address the
    /// guest's /sys/kernel/vmcoreinfo gave.
    fn open(&self) -> Kernel {
        let sysfs = self.console.result("vmcoreinfo").unwrap();
        let (addr, size) = kmem::vmcoreinfo::parse_sysfs(sysfs).unwrap();
        match Kernel::open(&self.dump) {
            Ok(k) => k,
            Err(_) => Kernel::open_with_note(&self.dump, addr, size).unwrap(),
        }
    }
}

/// The cached kernel `release`, or a skip naming the script that fetches it.
fn new_kernel_or_skip(release: &str) -> Option<NewKernel> {
    qemu_or_skip()?;
    let dir = testkit::cache_dir().join("debian-new").join(release);
    if !dir.join("vmlinuz").is_file() {
        testkit::skip(&format!(
            "{release} is not cached: run scripts/fetch-debian-kernels-pinned.sh"
        ));
        return None;
    }
    let lock = std::fs::File::create(dir.join("lock")).unwrap();
    // SAFETY: flock on a descriptor we own; held until `lock` is dropped.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) }, 0);
    let done = dir.join("dump-done");
    if std::fs::read_to_string(&done).ok().as_deref() != Some(GENERATOR) {
        make(&dir);
        std::fs::write(&done, GENERATOR).unwrap();
    }
    let text = std::fs::read_to_string(dir.join("console.txt")).unwrap();
    Some(NewKernel {
        dump: dir.join("vmcore.elf"),
        console: Console { text },
        dir,
    })
}

/// Boots the kernel (qemu_fw_cfg loaded when the package has it, so the
/// dump has VMCOREINFO); the guest says where its VMCOREINFO note is and
/// hashes its /proc/kallsyms (kernel image lines only) in chunks, then the
/// host stops the CPUs and writes an ELF dump.
fn make(dir: &Path) {
    let tmp = tempfile::tempdir().unwrap();
    let initrd = tmp.path().join("initrd.cpio");
    let mut fs = Initramfs::new();
    let module = dir.join("qemu_fw_cfg.ko");
    if module.exists() {
        fs.file("/lib/modules/qemu_fw_cfg.ko", &module);
    }
    fs.script(&format!(
            "[ -e /lib/modules/qemu_fw_cfg.ko ] && insmod /lib/modules/qemu_fw_cfg.ko\n\
             echo BTFKIT-RESULT vmcoreinfo $(cat /sys/kernel/vmcoreinfo)\n\
             awk 'NF == 3' /proc/kallsyms > /tmp/k\n\
             n=$(wc -l < /tmp/k)\n\
             echo BTFKIT-RESULT count $n\n\
             i=0\n\
             while [ $((i * {CHUNK})) -lt $n ]; do\n\
             sed -n \"$((i * {CHUNK} + 1)),$(((i + 1) * {CHUNK}))p\" /tmp/k | md5sum | sed \"s/ .*//; s/^/BTFKIT-RESULT chunk$i /\"\n\
             i=$((i + 1))\n\
             done\n\
             echo BTFKIT-RESULT ready yes\n\
             sleep 100000"
        ));
    fs.write(&initrd).unwrap();
    let mut q = Qemu::new(&dir.join("vmlinuz"), &initrd);
    q.vmcoreinfo = true;
    q.timeout = Duration::from_secs(900);
    let mut vm = q.spawn().unwrap();
    vm.wait_for("BTFKIT-RESULT ready", Duration::from_secs(800))
        .unwrap_or_else(|e| panic!("guest did not get ready: {e}\n{}", vm.console()));
    vm.qmp(serde_json::json!({ "execute": "stop" })).unwrap();
    let part = dir.join("vmcore.elf.part");
    vm.dump(&part, None).unwrap();
    let console = vm.quit().unwrap();
    std::fs::write(dir.join("console.txt"), &console.text).unwrap();
    std::fs::rename(&part, dir.join("vmcore.elf")).unwrap();
}

fn md5(text: &[u8]) -> String {
    let mut child = Command::new("md5sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("md5sum (coreutils)");
    child.stdin.take().unwrap().write_all(text).unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_owned()
}

fn read(k: &Kernel) -> (Encoding, Vec<KSym>) {
    let t = Tables::from_vmcoreinfo(k.vmcoreinfo()).unwrap();
    kmem::kallsyms::read_encoded(k, &t).unwrap()
}

#[test]
fn place_relative_kallsyms_in_a_7x_dump_equal_the_guests_proc_kallsyms() {
    let Some(()) = testkit::kernel_tier("boots Debian's 7.2 and 6.19 kernels under QEMU") else {
        return;
    };
    equal_the_guests_proc_kallsyms(RELEASE_7X, false, Encoding::PlaceRelative);
}

#[test]
fn relative_kallsyms_without_absolute_percpu_in_a_6_19_dump_equal_the_guests_proc_kallsyms() {
    let Some(()) = testkit::kernel_tier("boots Debian's 7.2 and 6.19 kernels under QEMU") else {
        return;
    };
    equal_the_guests_proc_kallsyms(RELEASE_6_19, true, Encoding::Relative);
}

/// The dump of `release`, whose VMCOREINFO names `kallsyms_relative_base`
/// or not, read with `want_encoding`.
fn equal_the_guests_proc_kallsyms(release: &str, base: bool, want_encoding: Encoding) {
    let Some(nk) = new_kernel_or_skip(release) else {
        return;
    };
    let k = nk.open();
    assert_eq!(
        k.vmcoreinfo()
            .get("SYMBOL(kallsyms_relative_base)")
            .is_some(),
        base,
        "{}: kallsyms_relative_base in VMCOREINFO",
        nk.dir.display()
    );
    let release = k.vmcoreinfo().osrelease().unwrap().to_owned();
    let (encoding, syms) = read(&k);
    assert_eq!(encoding, want_encoding, "{release}");
    let want: usize = nk.console.result("count").unwrap().parse().unwrap();
    assert_eq!(
        syms.len(),
        want,
        "{release}: symbols in the dump vs /proc/kallsyms"
    );
    let text = kmem::kallsyms::to_text(&syms);
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    for (i, chunk) in lines.chunks(CHUNK).enumerate() {
        let got = md5(&chunk.concat());
        let want = nk.console.result(&format!("chunk{i}")).unwrap();
        assert_eq!(
            got,
            want,
            "{release}: /proc/kallsyms lines {}..{} differ; ours begin with {}",
            i * CHUNK + 1,
            i * CHUNK + chunk.len(),
            String::from_utf8_lossy(chunk[0])
        );
    }
    eprintln!(
        "{release}: {} symbols from the dump's tables ({encoding:?}) equal the guest's /proc/kallsyms",
        syms.len()
    );
}

#[test]
fn place_relative_kallsyms_in_a_7x_dump_equal_system_map_moved_by_kerneloffset() {
    let Some(()) = testkit::kernel_tier("boots Debian's 7.2 and 6.19 kernels under QEMU") else {
        return;
    };
    let Some(nk) = new_kernel_or_skip(RELEASE_7X) else {
        return;
    };
    let k = nk.open();
    let offset = k.vmcoreinfo().kernel_offset().unwrap();
    let map = std::fs::read_to_string(nk.dir.join("System.map")).unwrap_or_else(|e| {
        panic!(
            "{}: no System.map ({e}): the release has no -dbg package in sid",
            nk.dir.display()
        )
    });
    let mut linked: HashMap<&str, Vec<(u64, char)>> = HashMap::new();
    for l in map.lines() {
        let mut it = l.split(' ');
        let (Some(a), Some(t), Some(n)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        linked.entry(n).or_default().push((
            u64::from_str_radix(a, 16).unwrap(),
            t.chars().next().unwrap(),
        ));
    }
    let (_, syms) = read(&k);
    assert!(syms.len() > 80_000, "{} symbols", syms.len());
    for s in &syms {
        let cands = linked
            .get(s.name.as_str())
            .unwrap_or_else(|| panic!("{} is not in System.map", s.name));
        // No absolute per-CPU symbols any more: every symbol moves with KASLR.
        assert!(
            cands
                .iter()
                .any(|&(a, t)| t == s.type_char as char && a.wrapping_add(offset) == s.addr),
            "{} {:#x} {} vs System.map {cands:x?} + {offset:#x}",
            s.name,
            s.addr,
            s.type_char as char
        );
    }
    eprintln!(
        "{} kallsyms entries equal System.map + {offset:#x}",
        syms.len()
    );
}
