//! Real kernels built with btfkit as their pahole, booted (oracle: the booted
//! kernel itself). Debian's linux-source-6.1 and -6.12 are built by
//! scripts/kernel/build.sh with `make PAHOLE=<symlink named pahole to
//! btfkit>` (6.12 also with LLVM=-19), and with Debian's pahole 1.24 as the
//! control. Each kernel boots under QEMU with a busybox initramfs that checks:
//! - /sys/kernel/btf/vmlinux holds the `.BTF` of the built vmlinux, and the
//!   kernel parsed it (a BTF object named vmlinux exists);
//! - each module loads with insmod (a module whose BTF the kernel rejects
//!   fails to load) and /sys/kernel/btf/<module> holds the `.ko`'s `.BTF`;
//! - a BTF-typed fentry program loads and attaches on named functions of
//!   vmlinux and of both modules (tests/guest/fentry.c, built with
//!   `gcc -static` here): the verifier resolved each FUNC's name to an
//!   address and ftrace accepted it.
//! - On 6.12 (whose loader relocates a module's split BTF through its
//!   `.BTF.base`), configfs.ko is encoded again as an out-of-tree module
//!   would be (`--btf_features=...,distilled_base`): it must load, get its
//!   /sys/kernel/btf/configfs, and take fentry programs.
//!
//! The builds are cached (see the script), so a rerun only relinks when the
//! btfkit binary changed. Builds and boots run one at a time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use testkit::qemu::{qemu_or_skip, Initramfs, Qemu};

const BTFKIT: &str = env!("CARGO_BIN_EXE_btfkit");
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// One kernel build or boot at a time: each takes both cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The modules of scripts/kernel/config: file name, module name.
const MODULES: &[(&str, &str)] = &[("configfs.ko", "configfs"), ("crc-itu-t.ko", "crc_itu_t")];

/// Functions the fentry program loads on: (BTF object, names, whether
/// ftrace can attach). lib/ is built without ftrace's mcount calls, so
/// crc_itu_t takes the program (the verifier found its address through the
/// FUNC's name) but not the attach (EINVAL from ftrace).
const FENTRY: &[(&str, &[&str], bool)] = &[
    (
        "vmlinux",
        &["vfs_read", "vfs_write", "do_sys_openat2"],
        true,
    ),
    (
        "configfs",
        &[
            "configfs_register_subsystem",
            "configfs_unregister_subsystem",
        ],
        true,
    ),
    ("crc_itu_t", &["crc_itu_t"], false),
];

#[derive(Clone, Copy, PartialEq)]
enum Pahole {
    Btfkit,
    Debian124,
}

/// A pahole for the build: btfkit through a symlink named `pahole` (at a
/// fixed path in the cache, so that the kernel's config does not change with
/// the test binary's location), or Debian's pahole.
fn pahole(which: Pahole) -> Option<PathBuf> {
    match which {
        Pahole::Btfkit => {
            let dir = testkit::cache_dir().join("kernels/bin");
            std::fs::create_dir_all(&dir).expect("create the cache");
            let link = dir.join("pahole");
            let target = Path::new(BTFKIT).canonicalize().expect("btfkit binary");
            if std::fs::read_link(&link).ok().as_deref() != Some(target.as_path()) {
                let tmp = dir.join(format!(".pahole.{}", std::process::id()));
                let _ = std::fs::remove_file(&tmp);
                std::os::unix::fs::symlink(&target, &tmp).expect("symlink");
                std::fs::rename(&tmp, &link).expect("rename symlink");
            }
            Some(link)
        }
        Pahole::Debian124 => {
            let p = testkit::tool_or_skip("pahole", "dwarves")?;
            let out = Command::new(&p).arg("--version").output().ok()?;
            let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if v != "v1.24" {
                testkit::skip(&format!(
                    "the control needs Debian's pahole v1.24, found {v}"
                ));
                return None;
            }
            Some(p)
        }
    }
}

/// Builds (or finds cached) the kernel; the result directory.
fn build(version: &str, cc: &str, which: Pahole) -> Option<PathBuf> {
    let tarball = format!("/usr/src/linux-source-{version}.tar.xz");
    if !Path::new(&tarball).is_file() {
        testkit::skip(&format!(
            "{tarball} is missing (apt-get install linux-source-{version})"
        ));
        return None;
    }
    for (tool, package) in [
        ("make", "make"),
        ("bc", "bc"),
        ("flex", "flex"),
        ("bison", "bison"),
    ] {
        testkit::tool_or_skip(tool, package)?;
    }
    if cc == "clang" {
        testkit::tool_or_skip("clang-19", "clang-19")?;
        testkit::tool_or_skip("ld.lld-19", "lld-19")?;
        testkit::tool_or_skip("llvm-objcopy-19", "llvm-19")?;
    } else {
        testkit::tool_or_skip("gcc", "gcc")?;
    }
    let pahole = pahole(which)?;
    let out = Command::new("bash")
        .arg(format!("{ROOT}/scripts/kernel/build.sh"))
        .args([version, cc])
        .arg(&pahole)
        .output()
        .expect("run scripts/kernel/build.sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprint!("{stderr}");
    assert!(
        out.status.success(),
        "kernel {version} {cc} build with {} failed:\n{stderr}",
        pahole.display()
    );
    Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// sha256 of section `name` of the ELF `file` (objcopy --dump-section).
fn section_sha256(file: &Path, name: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("section");
    let copy = dir.path().join("copy");
    let st = Command::new("objcopy")
        .arg(format!("--dump-section={name}={}", out.display()))
        .arg(file)
        .arg(&copy)
        .status()
        .expect("run objcopy");
    assert!(
        st.success(),
        "objcopy --dump-section {name} {}",
        file.display()
    );
    sha256(&out)
}

fn sha256(file: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(file)
        .output()
        .expect("run sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// The guest helper, compiled static for the guest.
fn fentry_helper(dir: &Path) -> PathBuf {
    let exe = dir.join("fentry");
    let src = format!("{}/tests/guest/fentry.c", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("gcc")
        .args(["-static", "-O2", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("run gcc");
    assert!(
        out.status.success(),
        "gcc -static {src}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// The guest's checks (busybox sh).
fn guest_script(fentry_all: &[&str]) -> String {
    let mut s = String::new();
    s.push_str(
        "if [ -r /sys/kernel/btf/vmlinux ]; then\n\
         \x20 echo \"BTFKIT-RESULT sysfs-btf:vmlinux $(sha256sum /sys/kernel/btf/vmlinux | cut -d' ' -f1)\"\n\
         else echo 'BTFKIT-RESULT sysfs-btf:vmlinux missing'; fi\n\
         /bin/fentry btf\n",
    );
    for (file, name) in MODULES {
        s.push_str(&format!(
            "if insmod /lib/modules/{file}; then echo 'BTFKIT-RESULT insmod:{name} ok'; \
             else echo 'BTFKIT-RESULT insmod:{name} failed'; fi\n\
             if [ -r /sys/kernel/btf/{name} ]; then \
             echo \"BTFKIT-RESULT sysfs-btf:{name} $(sha256sum /sys/kernel/btf/{name} | cut -d' ' -f1)\"; \
             else echo 'BTFKIT-RESULT sysfs-btf:{name} missing'; fi\n"
        ));
    }
    for (obj, funcs, _) in FENTRY {
        let how = if *obj == "vmlinux" {
            "vmlinux".to_string()
        } else {
            format!("module {obj}")
        };
        s.push_str(&format!("/bin/fentry {how} {}\n", funcs.join(" ")));
    }
    for obj in fentry_all {
        s.push_str(&format!("/bin/fentry all {obj}\n"));
    }
    s.push_str("dmesg | grep -i -E 'btf|bpf' | sed 's/^/dmesg: /'\n");
    s
}

/// configfs.ko with `.BTF` over a distilled `.BTF.base` (6.12's flags for
/// an out-of-tree module), written to `dir`.
fn distilled_module(result: &Path, dir: &Path) -> PathBuf {
    let ko = dir.join("configfs.ko");
    std::fs::copy(result.join("configfs.ko"), &ko).expect("copy configfs.ko");
    let out = Command::new(BTFKIT)
        .args([
            "pahole",
            "-J",
            "-j",
            "--btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs",
            "--lang_exclude=rust",
            "--btf_features=distilled_base",
            "--btf_base",
        ])
        .arg(result.join("vmlinux"))
        .arg(&ko)
        .output()
        .expect("run btfkit pahole");
    assert!(
        out.status.success(),
        "distilled_base: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    ko
}

/// Builds, boots and checks one kernel; `distilled`: load configfs.ko with a
/// distilled base.
fn boots_with_btf(version: &str, cc: &str, which: Pahole, distilled: bool) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(_qemu) = qemu_or_skip() else { return };
    let Some(result) = build(version, cc, which) else {
        return;
    };
    let config = std::fs::read_to_string(result.join(".config")).expect("read .config");
    let want_version = match which {
        Pahole::Btfkit => {
            let out = Command::new(BTFKIT)
                .args(["pahole", "--version"])
                .output()
                .expect("btfkit pahole --version");
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .replace(['v', '.'], "")
        }
        Pahole::Debian124 => "124".to_string(),
    };
    assert!(
        config.contains(&format!("CONFIG_PAHOLE_VERSION={want_version}\n")),
        "{}: the kernel was not configured with the expected pahole",
        result.display()
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let fentry = fentry_helper(dir.path());
    // Every FUNC of a module: a test of the helper's `all` mode on a small
    // BTF; BTFKIT_FENTRY_ALL=1 adds every FUNC of vmlinux (long under TCG).
    let mut all = vec!["configfs"];
    if std::env::var_os("BTFKIT_FENTRY_ALL").is_some_and(|v| v == "1") {
        all.push("vmlinux");
    }
    let mut initramfs = Initramfs::new();
    initramfs.file("/bin/fentry", &fentry);
    let mut modules: Vec<(&str, &str, PathBuf)> = MODULES
        .iter()
        .map(|(file, name)| (*file, *name, result.join(file)))
        .collect();
    if distilled {
        modules[0].2 = distilled_module(&result, dir.path());
    }
    for (file, _, host) in &modules {
        initramfs.file(&format!("/lib/modules/{file}"), host);
    }
    initramfs.script(&guest_script(&all));
    let initrd = dir.path().join("initrd.cpio");
    initramfs.write(&initrd).expect("write initramfs");
    let mut qemu = Qemu::new(&result.join("bzImage"), &initrd);
    qemu.timeout = Duration::from_secs(if all.len() > 1 { 3600 } else { 300 });
    let console = qemu.run().expect("boot under QEMU");
    let log = result.join("console.log");
    let _ = std::fs::write(&log, &console.text);
    let what = format!(
        "{version} {cc} {} (console: {})",
        result.display(),
        log.display()
    );
    assert!(
        console.completed(),
        "{what}: the guest script did not finish"
    );

    // The kernel carries the BTF the build wrote, and parsed it.
    assert_eq!(
        console.result("sysfs-btf:vmlinux"),
        Some(section_sha256(&result.join("vmlinux"), ".BTF").as_str()),
        "{what}: /sys/kernel/btf/vmlinux is not the built vmlinux's .BTF"
    );
    assert_eq!(console.result("vmlinux-btf-object"), Some("yes"), "{what}");
    for (i, (file, name, host)) in modules.iter().enumerate() {
        assert_eq!(
            console.result(&format!("insmod:{name}")),
            Some("ok"),
            "{what}: insmod {file}"
        );
        let sysfs = console.result(&format!("sysfs-btf:{name}"));
        if distilled && i == 0 {
            // Relocated onto vmlinux by the kernel: not the file's bytes.
            assert!(
                sysfs.is_some_and(|s| s != "missing"),
                "{what}: no /sys/kernel/btf/{name} for the distilled {file}"
            );
        } else {
            assert_eq!(
                sysfs,
                Some(section_sha256(host, ".BTF").as_str()),
                "{what}: /sys/kernel/btf/{name} is not {file}'s .BTF"
            );
        }
    }
    for (obj, funcs, attaches) in FENTRY {
        for f in *funcs {
            let got = console.result(&format!("fentry:{obj}:{f}"));
            let want = if *attaches { "ok" } else { "attach 22" };
            assert_eq!(got, Some(want), "{what}: fentry on {obj} {f}");
        }
    }
    for obj in &all {
        let summary = console
            .result(&format!("fentry-all:{obj}"))
            .unwrap_or_else(|| panic!("{what}: no summary of fentry all {obj}"));
        eprintln!("{version} {cc}: fentry on every FUNC of {obj}: {summary}");
        let lines = console
            .text
            .lines()
            .filter(|l| l.starts_with("FENTRY "))
            .count();
        assert!(
            summary.starts_with("ok=") && !summary.starts_with("ok=0 ") && lines > 0,
            "{what}: fentry all {obj}: {summary}"
        );
    }
    if all.contains(&"vmlinux") {
        let (mismatches, unsafe_funcs) = fentry_all_against_audit(&result, version, &console.text);
        if which == Pahole::Btfkit {
            assert_eq!(unsafe_funcs, 0, "{what}: unsafe FUNCs in btfkit's BTF");
        }
        assert!(
            mismatches.is_empty(),
            "{what}: {} FUNCs where the kernel did not do what `check --attach` predicts:\n{}",
            mismatches.len(),
            mismatches.join("\n")
        );
    }
}

/// The guest's verdict on every FUNC of vmlinux (`FENTRY <id> <name> ok|load
/// <errno> <log>|attach <errno>`) against the audit of the same vmlinux
/// (dwarf2btf::funcs::attach: its .BTF, symbols, __mcount_loc and DWARF).
/// Returns one line per FUNC where they differ or that the guest did not
/// report, and the number of FUNCs the audit calls unsafe.
fn fentry_all_against_audit(result: &Path, version: &str, console: &str) -> (Vec<String>, usize) {
    use dwarf2btf::funcs::attach::{audit, predict, AuditInput, Outcome, Reach};
    let vmlinux = result.join("vmlinux");
    let btf = btf::load_file(&vmlinux, None).expect("vmlinux .BTF");
    let table = ksyms::Table::new(ksyms::elf::read(&vmlinux).expect("vmlinux symbols"));
    let symbols: Vec<_> = table
        .iter()
        .map(|s| dwarf2btf::funcs::attach::KernelSymbol {
            name: s.name,
            address: s.addr,
            size: s.size.unwrap_or(0),
            function: matches!(s.type_char, 't' | 'T' | 'w' | 'W'),
        })
        .collect();
    let sites = ksyms::mcount::read(&vmlinux).expect("__mcount_loc");
    let elf = dwarf2btf::load::ElfFile::open(&vmlinux).expect("open vmlinux");
    let model = dwarf2btf::funcs::has_dwarf(&elf)
        .then(|| dwarf2btf::funcs::FuncModel::from_elf(&elf).expect("function model"));
    let rows = audit(
        &btf,
        &AuditInput {
            symbols: &symbols,
            fentry_sites: Some(&sites),
            model: model.as_ref(),
        },
    );
    let (major, minor) = version.split_once('.').expect("version");
    let version = (major.parse().expect("major"), minor.parse().expect("minor"));
    let mut seen = std::collections::HashMap::new();
    for l in console.lines() {
        let mut f = l.trim_end().split(' ');
        if f.next() != Some("FENTRY") {
            continue;
        }
        let (Some(id), Some(_name), Some(what)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let Ok(id) = id.parse::<u32>() else { continue };
        let errno = f.next().and_then(|e| e.parse::<i32>().ok());
        let outcome = match (what, errno) {
            ("ok", _) => Outcome::Ok,
            ("load", Some(e)) => Outcome::Load(e),
            ("attach", Some(_)) => Outcome::Attach,
            _ => continue,
        };
        seen.insert(id, (outcome, l.to_owned()));
    }
    let mut out = Vec::new();
    for r in &rows {
        let want = predict(r, version);
        match seen.get(&r.btf_id) {
            None => out.push(format!(
                "[{}] {}: not reported by the guest",
                r.btf_id, r.name
            )),
            Some((got, line)) if *got != want => out.push(format!(
                "[{}] {} {} ({}): predicted {want:?}, guest: {line}",
                r.btf_id,
                r.name,
                r.reach.as_str(),
                r.reason
            )),
            Some(_) => {}
        }
    }
    let unsafe_funcs = rows.iter().filter(|r| r.reach == Reach::Unsafe).count();
    eprintln!(
        "{version:?}: {} FUNCs audited, {} attachable, {unsafe_funcs} unsafe, {} guest verdicts, {} mismatches",
        rows.len(),
        rows.iter().filter(|r| r.reach == Reach::Attachable).count(),
        seen.len(),
        out.len()
    );
    (out, unsafe_funcs)
}

#[test]
fn booted_kernel_6_1_gcc_btf_by_btfkit() {
    boots_with_btf("6.1", "gcc", Pahole::Btfkit, false);
}

#[test]
fn booted_kernel_6_1_gcc_btf_by_pahole_1_24_control() {
    boots_with_btf("6.1", "gcc", Pahole::Debian124, false);
}

#[test]
fn booted_kernel_6_12_gcc_btf_by_btfkit() {
    boots_with_btf("6.12", "gcc", Pahole::Btfkit, true);
}

#[test]
fn booted_kernel_6_12_clang_btf_by_btfkit() {
    boots_with_btf("6.12", "clang", Pahole::Btfkit, true);
}
