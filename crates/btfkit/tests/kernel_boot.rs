//! Real kernels built with btfkit as their pahole, booted (oracle: the booted
//! kernel itself). scripts/kernel/build.sh builds Debian's linux-source-6.1
//! (GCC 12), -6.12 (clang 19) and sid's -7.2 (GCC 16 and clang 21, in the
//! sid chroot) with `make PAHOLE=<symlink named pahole to btfkit>`, each
//! with two in-tree modules and an out-of-tree one (`make M=`, so the kernel
//! build gives its BTF a distilled base from 6.12 on). Controls: 6.1 with
//! Debian's pahole 1.24 (the offline audit of its vmlinux only), and 7.2
//! with sid's pahole 1.32, booted with modules whose BTF btfkit encoded over
//! pahole 1.32's vmlinux BTF (and compared with pahole 1.32's own split BTF
//! of them). Each kernel boots under QEMU with a busybox initramfs that checks:
//! - /sys/kernel/btf/vmlinux holds the `.BTF` of the built vmlinux, and the
//!   kernel parsed it (a BTF object named vmlinux exists);
//! - each module loads with insmod (a module whose BTF the kernel rejects
//!   fails to load) and /sys/kernel/btf/<module> holds the `.ko`'s `.BTF`
//!   (a distilled module's is relocated by the kernel: it must be there);
//! - a BTF-typed fentry program loads and attaches on named functions of
//!   vmlinux and of the modules (tests/guest/fentry.c, built with
//!   `gcc -static` here), among them the out-of-tree module's, which take
//!   vmlinux's `struct task_struct *` and `struct file *`: the verifier
//!   resolved each FUNC's name to an address and ftrace accepted it.
//! - every FUNC of the modules, and in the kernels built with btfkit every
//!   FUNC of vmlinux, takes a fentry program (`fentry all`): each
//!   outcome (loads and attaches / load fails with the verifier's errno and
//!   log / attach fails) must be the one `btfkit check --attach` predicts
//!   from the same vmlinux (its .BTF, symbols, `__mcount_loc`, DWARF) or
//!   `.ko`; counts per kernel are printed as `BTFKIT-RESULT` lines. The
//!   links stay attached (a detach waits for RCU tasks: 20 times the cost of
//!   load and attach under TCG), and `fentry instances` then reads, through
//!   /proc/kcore, the entry of every instance of each name that several
//!   functions carry: only the instance the audit says the kernel picks (the
//!   lowest address, whose prototype the FUNC carries) may be patched.
//!   vmlinux's FUNCs are shared among several boots of the kernel (see
//!   [`FUNCS_PER_BOOT`]).
//!
//! The builds are cached (see the script), so a rerun only relinks when the
//! btfkit binary changed. Builds run one at a time (each takes both cores);
//! a boot takes one core (TCG), so it runs beside a build or another boot.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use fentry::audit::{audit, predict, AuditInput, FuncReach, KernelSymbol, Reach};
use fentry::kernel_rules;
use testkit::kernel::Pahole;

mod common {
    pub mod split_base;
}
use testkit::qemu::{qemu_or_skip, Initramfs, Qemu};

const BTFKIT: &str = env!("CARGO_BIN_EXE_btfkit");

/// One kernel build at a time: make takes both cores.
static BUILDS: Mutex<()> = Mutex::new(());

/// vmlinux FUNCs walked per boot. Each attach costs time in proportion to
/// the links already attached (register_ftrace_direct copies the whole
/// direct-call hash, entry by entry): on 7.2 a batch of 256 took 2 s at the
/// start of one walk over every FUNC and 14 s at its end (580 s of attach
/// in all). Every boot walks the FUNCs whose index is K modulo N (`fentry
/// all vmlinux K/N`) and starts with no link: N boots cost N boot times
/// and about 1/N of the growth.
const FUNCS_PER_BOOT: usize = 4000;

/// The modules of a build (scripts/kernel/build.sh): file name, module
/// name. Two in-tree modules (a filesystem with its own types; a library,
/// which 7.2 can no longer select by itself) and the out-of-tree module of
/// scripts/kernel/extmod, built with `make M=`.
fn modules(version: &str) -> [(&'static str, &'static str); 3] {
    let library = if version == "7.2" {
        ("prime_numbers.ko", "prime_numbers")
    } else {
        ("crc-itu-t.ko", "crc_itu_t")
    };
    [
        ("configfs.ko", "configfs"),
        library,
        ("btfkit_oot.ko", "btfkit_oot"),
    ]
}

/// Functions the fentry program loads on: (BTF object, names, whether
/// ftrace can attach). lib/ is built without ftrace's mcount calls, so
/// crc_itu_t takes the program (the verifier found its address through the
/// FUNC's name) but not the attach (EINVAL from ftrace); lib/math/ is
/// built with them. The out-of-tree module's functions take vmlinux's
/// `struct task_struct *` and `struct file *`.
fn fentry_targets(version: &str) -> [(&'static str, &'static [&'static str], bool); 4] {
    let library: (&str, &[&str], bool) = if version == "7.2" {
        (
            "prime_numbers",
            &["next_prime_number", "is_prime_number"],
            true,
        )
    } else {
        ("crc_itu_t", &["crc_itu_t"], false)
    };
    [
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
        library,
        (
            "btfkit_oot",
            &["btfkit_oot_task_pid", "btfkit_oot_file_size"],
            true,
        ),
    ]
}

/// Builds (or finds cached) the kernel; the result directory.
fn build(version: &str, cc: &str, which: Pahole) -> Option<PathBuf> {
    let _one = BUILDS.lock().unwrap_or_else(|e| e.into_inner());
    testkit::kernel::build(version, cc, which, Path::new(BTFKIT))
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

/// The guest's checks (busybox sh). `vmlinux_part`: fentry on every FUNC
/// of vmlinux whose index is K modulo N, then where the kernel patched
/// same-name instances; the test modules' FUNCs are all tried in every
/// kernel.
fn guest_script(version: &str, vmlinux_part: Option<(usize, usize)>) -> String {
    let mut s = String::new();
    s.push_str(
        "if [ -r /sys/kernel/btf/vmlinux ]; then\n\
         \x20 echo \"BTFKIT-RESULT sysfs-btf:vmlinux $(sha256sum /sys/kernel/btf/vmlinux | cut -d' ' -f1)\"\n\
         else echo 'BTFKIT-RESULT sysfs-btf:vmlinux missing'; fi\n\
         /bin/fentry btf\n\
         if [ -r /etc/addr-tags ]; then\n\
         \x20 echo \"BTFKIT-RESULT kallsyms-addr-tags $(awk 'NR == FNR { want[$1 \" \" $2] = 1; n++; next }\n\
         \x20   ($3 \" \" $1) in want { delete want[$3 \" \" $1]; found++ }\n\
         \x20   END { printf \"%d/%d\", found, n }' /etc/addr-tags /proc/kallsyms)\"\n\
         fi\n",
    );
    for (file, name) in modules(version) {
        s.push_str(&format!(
            "if insmod /lib/modules/{file}; then echo 'BTFKIT-RESULT insmod:{name} ok'; \
             else echo 'BTFKIT-RESULT insmod:{name} failed'; fi\n\
             if [ -r /sys/kernel/btf/{name} ]; then \
             echo \"BTFKIT-RESULT sysfs-btf:{name} $(sha256sum /sys/kernel/btf/{name} | cut -d' ' -f1)\"; \
             else echo 'BTFKIT-RESULT sysfs-btf:{name} missing'; fi\n"
        ));
    }
    for (obj, funcs, _) in fentry_targets(version) {
        let how = if obj == "vmlinux" {
            "vmlinux".to_string()
        } else {
            format!("module {obj}")
        };
        s.push_str(&format!("/bin/fentry {how} {}\n", funcs.join(" ")));
    }
    for (_, name) in modules(version) {
        s.push_str(&format!("/bin/fentry all {name}\n"));
    }
    if let Some(part) = vmlinux_part {
        s.push_str(&vmlinux_part_script(part));
    }
    s.push_str("dmesg | grep -i -E 'btf|bpf' | sed 's/^/dmesg: /'\n");
    s
}

/// The guest's script of a boot that walks part K of N of vmlinux's FUNCs.
fn vmlinux_part_script((k, n): (usize, usize)) -> String {
    format!("/bin/fentry all vmlinux {k}/{n}\n/bin/fentry instances\n")
}

/// Linux 7.2's pahole flags (scripts/Makefile.btf for pahole 1.32, without
/// `-j`'s count).
const FLAGS_7_2: &[&str] = &[
    "-j",
    "--btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs,attributes,layout",
    "--lang_exclude=rust",
];

/// A module of `result` with its BTF encoded again by btfkit over the
/// build's vmlinux (7.2's flags, and a distilled base for the out-of-tree
/// module as its `make M=` asks): the modules of a kernel whose vmlinux BTF
/// another pahole made, as a distribution's later module builds would be.
/// Written to `dir`.
fn btfkit_module(result: &Path, file: &str, dir: &Path) -> PathBuf {
    let ko = dir.join(file);
    std::fs::copy(result.join(file), &ko).expect("copy the module");
    let out = Command::new(BTFKIT)
        .args(["pahole", "-J"])
        .args(FLAGS_7_2)
        .args(
            (file == "btfkit_oot.ko")
                .then_some("--btf_features=distilled_base")
                .as_slice(),
        )
        .arg("--btf_base")
        .arg(result.join("vmlinux"))
        .arg(&ko)
        .output()
        .expect("run btfkit pahole");
    assert!(
        out.status.success(),
        "btfkit pahole -J {file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    ko
}

/// The modules of the pahole 1.32 control against pahole 1.32 itself: each
/// module's split BTF over that build's vmlinux (whose BTF pahole 1.32
/// made), by btfkit and by pahole 1.32 with 7.2's flags. btfkit's must
/// re-emit no base type, have the same named types, and stay within 1.1x
/// pahole's bytes less btfkit's extra FUNCs and tags.
fn modules_over_pahole_1_32_base(result: &Path, version: &str) {
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let vmlinux = result.join("vmlinux");
    let mut failures = Vec::new();
    for (file, _) in modules(version) {
        let ko = result.join(file);
        let (ours, theirs) = (
            dir.path().join(format!("{file}.btfkit")),
            dir.path().join(format!("{file}.132")),
        );
        let detached = |out: &Path| {
            let mut args: Vec<String> = FLAGS_7_2.iter().map(|a| a.to_string()).collect();
            args.extend([
                "--btf_base".to_owned(),
                vmlinux.display().to_string(),
                format!("--btf_encode_detached={}", out.display()),
                ko.display().to_string(),
            ]);
            args
        };
        sid.run_ok(&[dir.path(), result], "pahole", detached(&theirs));
        let out = Command::new(BTFKIT)
            .arg("pahole")
            .arg("-J")
            .args(detached(&ours))
            .output()
            .expect("run btfkit pahole");
        assert!(
            out.status.success(),
            "btfkit on {file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let c = common::split_base::compare(file, &ours, &theirs, &vmlinux, true);
        let (core, theirs_len) = c.bytes;
        println!(
            "BTFKIT-RESULT {version}-split-over-pahole-1.32:{file} bytes={core}/{theirs_len} reemitted={} named-differences={}",
            c.reemitted.len(),
            c.named_differences.len()
        );
        eprint!("{}", c.report);
        if !c.reemitted.is_empty() {
            failures.push(format!("{file}: re-emits base types {:?}", c.reemitted));
        }
        if !c.named_differences.is_empty() {
            failures.push(format!(
                "{file}: named types differ: {:?}",
                c.named_differences
            ));
        }
        if core * 10 > theirs_len * 11 {
            failures.push(format!(
                "{file}: {core} bytes without btfkit's extra FUNCs and tags, pahole 1.32's {theirs_len}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Whether the ELF `file` has a section `name`.
fn has_section(file: &Path, name: &str) -> bool {
    use object::{Object, ObjectSection};
    let data = std::fs::read(file).expect("read the module");
    let elf = object::File::parse(&*data).expect("module ELF");
    elf.sections().any(|s| s.name() == Ok(name))
}

/// Builds, boots and checks one kernel. In the pahole 1.32 control, the
/// modules carry BTF that btfkit encoded over pahole's vmlinux BTF.
fn boots_with_btf(version: &str, cc: &str, which: Pahole) {
    let Some(_qemu) = qemu_or_skip() else { return };
    let Some(result) = build(version, cc, which) else {
        return;
    };
    let config = std::fs::read_to_string(result.join(".config")).expect("read .config");
    let want_version = which.config_version(Path::new(BTFKIT));
    assert!(
        config.contains(&format!("CONFIG_PAHOLE_VERSION={want_version}\n")),
        "{}: the kernel was not configured with the expected pahole",
        result.display()
    );

    if which == Pahole::Sid132 {
        modules_over_pahole_1_32_base(&result, version);
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let fentry = fentry_helper(dir.path());
    // Every FUNC of vmlinux in the kernels built with btfkit, over `parts`
    // boots; the control gets the offline audit of pahole 1.24's 6.1 and
    // the audit of its modules only.
    let parts = (which == Pahole::Btfkit).then(|| {
        let funcs = btf::load_file(&result.join("vmlinux"), None)
            .expect("vmlinux .BTF")
            .iter()
            .filter(|(_, t)| matches!(t.data, btf::TypeData::Func { .. }))
            .count();
        funcs.div_ceil(FUNCS_PER_BOOT)
    });
    let mut initramfs = Initramfs::new();
    initramfs.file("/bin/fentry", &fentry);
    // Every addr= tag of vmlinux as "<symbol> <address>", which the guest
    // looks up in its /proc/kallsyms.
    let tags = vmlinux_addr_tags(&result.join("vmlinux"));
    if which == Pahole::Btfkit {
        let text: String = tags
            .iter()
            .map(|(n, a)| format!("{n} {a:016x}\n"))
            .collect();
        initramfs.bytes("/etc/addr-tags", text.as_bytes(), 0o644);
    }
    let modules: Vec<(&str, &str, PathBuf)> = modules(version)
        .into_iter()
        .map(|(file, name)| {
            let ko = if which == Pahole::Sid132 {
                btfkit_module(&result, file, dir.path())
            } else {
                result.join(file)
            };
            (file, name, ko)
        })
        .collect();
    for (file, _, host) in &modules {
        initramfs.file(&format!("/lib/modules/{file}"), host);
    }
    // The first boot checks everything and walks part 0 of vmlinux; the
    // others walk the other parts.
    let boot = |script: &str, name: &str| {
        let mut initramfs = initramfs.clone();
        initramfs.script(script);
        let initrd = dir.path().join(name);
        initramfs.write(&initrd).expect("write initramfs");
        let mut qemu = Qemu::new(&result.join("bzImage"), &initrd);
        // Thousands of FUNCs attached: each trampoline needs memory, and
        // `quiet` keeps the serial console (slow under TCG) to the guest's
        // own lines.
        qemu.memory_mb = 2048;
        qemu.append = "quiet".into();
        qemu.timeout = Duration::from_secs(if parts.is_some() { 3600 } else { 600 });
        qemu.run().expect("boot under QEMU")
    };
    let n = parts.unwrap_or(1);
    let walks: Vec<_> = (0..n)
        .map(|k| match k {
            0 => boot(&guest_script(version, parts.map(|n| (0, n))), "initrd.cpio"),
            _ => boot(&vmlinux_part_script((k, n)), &format!("initrd-{k}.cpio")),
        })
        .collect();
    let console = &walks[0];
    let log = result.join("console.log");
    let _ = std::fs::write(
        &log,
        walks
            .iter()
            .enumerate()
            .map(|(k, c)| format!("=== boot {k}\n{}", c.text))
            .collect::<String>(),
    );
    let what = format!(
        "{version} {cc} {} (console: {})",
        result.display(),
        log.display()
    );
    for (k, c) in walks.iter().enumerate() {
        assert!(
            c.completed(),
            "{what}: the guest script of boot {k} did not finish"
        );
    }

    // The kernel carries the BTF the build wrote, and parsed it.
    assert_eq!(
        console.result("sysfs-btf:vmlinux"),
        Some(section_sha256(&result.join("vmlinux"), ".BTF").as_str()),
        "{what}: /sys/kernel/btf/vmlinux is not the built vmlinux's .BTF"
    );
    assert_eq!(console.result("vmlinux-btf-object"), Some("yes"), "{what}");
    if which == Pahole::Btfkit {
        // Each tag names a function at that address in the running kernel.
        assert_eq!(
            console.result("kallsyms-addr-tags"),
            Some(format!("{}/{}", tags.len(), tags.len()).as_str()),
            "{what}: addr= tags of vmlinux found in /proc/kallsyms"
        );
    }
    for (file, name, host) in &modules {
        assert_eq!(
            console.result(&format!("insmod:{name}")),
            Some("ok"),
            "{what}: insmod {file}"
        );
        let sysfs = console.result(&format!("sysfs-btf:{name}"));
        // `make M=` gives an out-of-tree module a distilled base where the
        // kernel relocates one (6.12 on).
        let distilled = has_section(host, ".BTF.base");
        assert_eq!(
            distilled,
            *file == "btfkit_oot.ko" && version != "6.1",
            "{what}: {file}: a .BTF.base where the kernel build gives one, only there"
        );
        if distilled {
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
    for (obj, funcs, attaches) in fentry_targets(version) {
        for f in funcs {
            let got = console.result(&format!("fentry:{obj}:{f}"));
            let want = if attaches { "ok" } else { "attach 22" };
            assert_eq!(got, Some(want), "{what}: fentry on {obj} {f}");
        }
    }
    let all: String = walks.iter().map(|c| c.text.as_str()).collect();
    fentry_every_func(&result, (version, cc, which), parts, &modules, &all, &what);
}

/// `fentry all` of the test modules and (`which` = btfkit) of vmlinux,
/// walked in `vmlinux_parts` boots whose consoles `console` joins, against
/// the audit, and where the kernel attached same-name instances.
fn fentry_every_func(
    result: &Path,
    (version, cc, which): (&str, &str, Pahole),
    vmlinux_parts: Option<usize>,
    modules: &[(&str, &str, PathBuf)],
    console: &str,
    what: &str,
) {
    let (major, minor) = version.split_once('.').expect("version");
    let v = (major.parse().expect("major"), minor.parse().expect("minor"));
    let kernel = format!("{version}-{cc}-{}", which.label());
    let report = |key: &str, value: String| {
        println!("BTFKIT-RESULT {kernel}:{key} {value}");
        eprintln!("BTFKIT-RESULT {kernel}:{key} {value}");
    };
    let vmlinux = result.join("vmlinux");
    let rows = audit_reported(&kernel, &vmlinux);
    let counts = fentry::audit::counts(&rows);
    let unsafe_funcs = counts.get(&Reach::Unsafe).copied().unwrap_or(0);
    if which == Pahole::Btfkit {
        assert_eq!(unsafe_funcs, 0, "{what}: unsafe FUNCs in btfkit's BTF");
        // Tags and `..` names encoded from the pre-link image are the
        // final image's addresses.
        let btf = btf::load_file(&vmlinux, None).expect("vmlinux .BTF");
        let table = vmlinux_symbols(&vmlinux);
        let wrong = fentry::audit::wrong_addresses(&btf, &kernel_symbols(&table));
        report(
            "addr-tags:vmlinux",
            format!(
                "tags={} wrong-address={}",
                btf::addr_tag::func_tags(&btf).count(),
                wrong.len()
            ),
        );
        assert!(
            wrong.is_empty(),
            "{what}: addresses not in the final vmlinux: {:?}",
            wrong.iter().map(|w| &w.reason).collect::<Vec<_>>()
        );
    }
    let mut mismatches = Vec::new();
    let mut objects: Vec<(&str, Vec<FuncReach>, usize)> = modules
        .iter()
        .map(|(_, name, ko)| (*name, audit_module(ko, &vmlinux, v), 1))
        .collect();
    if let Some(parts) = vmlinux_parts {
        objects.push(("vmlinux", rows, parts));
    }
    // The verifier's deny list holds vmlinux's BTF ids: a module's own
    // copy of a denied function is not refused.
    let denied = denied_functions(&vmlinux);
    let no_denied = std::collections::BTreeSet::new();
    for (obj, rows, parts) in &objects {
        let lines = guest_lines(console, obj);
        // A module's BTF is relocated by the kernel when it carries a
        // distilled base: its own types keep their order, not their ids, so
        // the n-th FUNC the guest reports is the n-th FUNC of the file.
        let seen: HashMap<u32, Verdict> = if *obj == "vmlinux" {
            lines.into_iter().map(|(id, _, v)| (id, v)).collect()
        } else {
            assert_eq!(
                lines.iter().map(|l| l.1.as_str()).collect::<Vec<_>>(),
                rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
                "{what}: {obj}: the guest's FUNCs are not the file's"
            );
            rows.iter()
                .zip(lines)
                .map(|(r, (_, _, v))| (r.btf_id, v))
                .collect()
        };
        let denied = if *obj == "vmlinux" {
            &denied
        } else {
            &no_denied
        };
        let (wrong, measured) = against_audit(rows, &seen, v, denied, *parts);
        let attached = seen
            .values()
            .filter(|x| x.outcome == fentry::audit::Outcome::Ok)
            .count();
        let attachable = rows.iter().filter(|r| r.reach == Reach::Attachable).count();
        report(
            &format!("fentry:{obj}"),
            format!(
                "funcs={} attachable={attachable} attached={attached} reported={} mismatches={}",
                rows.len(),
                seen.len(),
                wrong.len()
            ),
        );
        for (k, n) in &measured {
            report(&format!("fentry:{obj}:measured"), format!("{k}: {n}"));
        }
        for l in console.lines() {
            if let Some(t) = l.split(&format!("BTFKIT-RESULT fentry-time:{obj}:")).nth(1) {
                let (part, time) = t.split_once(' ').unwrap_or((t, ""));
                report(
                    &format!("fentry:{obj}:guest-time"),
                    format!("part={part} {}", time.trim()),
                );
            }
        }
        // (crc_itu_t's one FUNC has no call site: lib/ is built without.)
        assert!(
            attached > 0 || attachable == 0,
            "{what}: no FUNC of {obj} attached"
        );
        mismatches.extend(wrong.into_iter().map(|w| format!("{obj}: {w}")));
        if *obj == "vmlinux" {
            let (checked, errors) =
                check_instances(rows, &seen, console, &result.join("System.map"));
            report(
                "instances",
                format!("names-checked={checked} errors={}", errors.len()),
            );
            assert!(checked > 0, "{what}: no same-name instances checked");
            mismatches.extend(errors);
        }
    }
    assert!(
        mismatches.is_empty(),
        "{what}: {} FUNCs where the kernel did not do what `check --attach` predicts:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// [`audit_vmlinux`], its counts by verdict printed as a `BTFKIT-RESULT
/// <kernel>:audit:vmlinux` line.
fn audit_reported(kernel: &str, vmlinux: &Path) -> Vec<FuncReach> {
    let rows = audit_vmlinux(vmlinux);
    let counts = fentry::audit::counts(&rows);
    let line = format!(
        "BTFKIT-RESULT {kernel}:audit:vmlinux funcs={} {}",
        rows.len(),
        Reach::ALL
            .iter()
            .map(|k| format!("{}={}", k.as_str(), counts.get(k).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!("{line}");
    eprintln!("{line}");
    rows
}

/// The guest's `FENTRY <obj> <id> <name> ...` lines of one object.
fn guest_lines(console: &str, obj: &str) -> Vec<(u32, String, Verdict)> {
    guest_verdicts(console)
        .into_iter()
        .filter(|(o, ..)| o == obj)
        .map(|(_, id, name, v)| (id, name, v))
        .collect()
}
/// What the guest reported for one FUNC of `fentry all`.
#[derive(Clone)]
struct Verdict {
    outcome: fentry::audit::Outcome,
    errno: i32,
    line: String,
}

/// The guest's `FENTRY <obj> <id> <name> ok|load <errno> <log>|attach
/// <errno>` lines.
fn guest_verdicts(console: &str) -> Vec<(String, u32, String, Verdict)> {
    use fentry::audit::Outcome;
    let mut seen = Vec::new();
    for l in console.lines() {
        let mut f = l.trim_end().split(' ');
        if f.next() != Some("FENTRY") {
            continue;
        }
        let (Some(obj), Some(id), Some(name), Some(what)) =
            (f.next(), f.next(), f.next(), f.next())
        else {
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
        seen.push((
            obj.to_owned(),
            id,
            name.to_owned(),
            Verdict {
                outcome,
                errno: errno.unwrap_or(0),
                line: l.trim_end().to_owned(),
            },
        ));
    }
    seen
}

/// The symbol table of the ELF `vmlinux`.
fn vmlinux_symbols(vmlinux: &Path) -> ksyms::Table {
    ksyms::Table::new(ksyms::elf::read(vmlinux).expect("vmlinux symbols"))
}

/// `table` as the audit takes symbols.
fn kernel_symbols(table: &ksyms::Table) -> Vec<KernelSymbol<'_>> {
    table
        .iter()
        .map(|s| KernelSymbol {
            name: s.name,
            address: s.addr,
            size: s.size.unwrap_or(0),
            function: matches!(s.type_char, 't' | 'T' | 'w' | 'W'),
        })
        .collect()
}

/// Every `addr=` tag of the BTF of `vmlinux`: the symbol its FUNC names
/// (`<symbol>..<address>` names `<symbol>`) and the tag's address.
fn vmlinux_addr_tags(vmlinux: &Path) -> Vec<(String, u64)> {
    let btf = btf::load_file(vmlinux, None).expect("vmlinux .BTF");
    btf::addr_tag::func_tags(&btf)
        .filter_map(|t| {
            let name = btf.name_of(btf.type_by_id(t.func)?).ok()?;
            let symbol = name.split("..").next().unwrap_or(name);
            Some((symbol.to_owned(), t.address))
        })
        .collect()
}

/// `btfkit check --attach` of the built vmlinux (its .BTF, symbol table,
/// __mcount_loc and DWARF), through the library the command runs.
fn audit_vmlinux(vmlinux: &Path) -> Vec<FuncReach> {
    let btf = btf::load_file(vmlinux, None).expect("vmlinux .BTF");
    let table = vmlinux_symbols(vmlinux);
    let symbols = kernel_symbols(&table);
    let sites = ksyms::mcount::read(vmlinux).expect("__mcount_loc");
    let elf = dwarf2btf::load::ElfFile::open(vmlinux).expect("open vmlinux");
    let model = dwarf2btf::funcs::has_dwarf(&elf)
        .then(|| dwarf2btf::funcs::FuncModel::from_elf(&elf).expect("function model"));
    let obj = elf.object().expect("vmlinux ELF");
    let version = kernel_rules::kernel_version(&obj).expect("vmlinux's linux_banner");
    audit(
        &btf,
        &AuditInput {
            symbols: &symbols,
            module: false,
            fentry_sites: Some(&sites),
            model: model.as_ref(),
            version: Some(version),
        },
    )
}

/// The functions of the image's `btf_id_deny` set (the verifier refuses
/// them whatever their BTF; which ones depends on the configuration).
fn denied_functions(vmlinux: &Path) -> std::collections::BTreeSet<String> {
    let btf = btf::load_file(vmlinux, None).expect("vmlinux .BTF");
    let data = std::fs::read(vmlinux).expect("read vmlinux");
    let obj = object::File::parse(&*data).expect("vmlinux ELF");
    kernel_rules::denied_functions(&obj, &btf).expect("vmlinux's btf_id_deny set")
}

/// The same audit of a module's split BTF, over the symbols and call
/// sites `btfkit check --attach` takes from a module
/// (`attach::module_input`: the symbols its kallsyms keeps after init, the
/// targets of its `__mcount_loc` relocations, keyed by section, since a
/// module is linked at load).
fn audit_module(ko: &Path, vmlinux: &Path, version: (u32, u32)) -> Vec<FuncReach> {
    use object::{Object, ObjectSection};
    let data = std::fs::read(ko).expect("read module");
    let file = object::File::parse(&*data).expect("module ELF");
    // A distilled module's split BTF continues its own `.BTF.base`.
    let dir = tempfile::tempdir().expect("tempdir");
    let base = match file.section_by_name(".BTF.base") {
        Some(sec) => {
            let raw = dir.path().join("base.btf");
            std::fs::write(&raw, sec.data().expect(".BTF.base")).expect("write .BTF.base");
            raw
        }
        None => vmlinux.to_path_buf(),
    };
    let btf = btf::load_file(ko, Some(&base)).expect("module .BTF");
    let (symbols, sites) = fentry::audit::module_input(&file).expect("a relocatable module");
    audit(
        &btf,
        &AuditInput {
            symbols: &symbols,
            module: true,
            fentry_sites: Some(&sites),
            model: None,
            version: Some(version),
        },
    )
}

/// Per FUNC: the audit's prediction against the guest's verdict, the
/// FUNCs walked in `parts` boots (the n-th FUNC in boot n mod `parts`).
/// Returns the FUNCs where they differ (or that the guest did not report)
/// and what each audit verdict measured as: "reach -> guest outcome errno"
/// counts.
fn against_audit(
    rows: &[FuncReach],
    seen: &HashMap<u32, Verdict>,
    version: (u32, u32),
    denied: &std::collections::BTreeSet<String>,
    parts: usize,
) -> (Vec<String>, BTreeMap<String, usize>) {
    use fentry::audit::Outcome;
    let mut out = Vec::new();
    let mut measured = BTreeMap::new();
    // A boot keeps every link: a second FUNC of the same boot resolving to
    // code that already has a trampoline (an alias, COND_SYSCALL's
    // sys_ni_syscall, a folded copy) cannot get its own direct call there
    // (EBUSY).
    let mut taken = std::collections::HashSet::new();
    let mut ids: Vec<u32> = rows.iter().map(|r| r.btf_id).collect();
    ids.sort_unstable();
    for r in rows {
        let nth = ids.binary_search(&r.btf_id).expect("a row's id");
        let at = r.address.map(|a| (nth % parts, a));
        let mut want = predict(&arch::X86_64, r, version, denied);
        let busy = want == Outcome::Ok && at.is_some_and(|a| taken.contains(&a));
        if busy {
            want = Outcome::Attach;
        }
        if seen
            .get(&r.btf_id)
            .is_some_and(|v| v.outcome == Outcome::Ok)
        {
            taken.extend(at);
        }
        let Some(got) = seen.get(&r.btf_id) else {
            out.push(format!(
                "[{}] {}: not reported by the guest",
                r.btf_id, r.name
            ));
            continue;
        };
        let how = match got.outcome {
            Outcome::Ok => "ok".to_string(),
            Outcome::Load(e) => format!("load {e}"),
            Outcome::Attach => format!("attach {}", got.errno),
        };
        let reach = if busy {
            "attachable, its code already attached"
        } else {
            r.reach.as_str()
        };
        *measured.entry(format!("{reach} -> {how}")).or_default() += 1;
        // A name the kernel cannot resolve fails in the verifier with this
        // log (bpf_check_attach_target), not merely with ENOENT.
        let log_ok = r.reach != Reach::NotASymbol
            || got.line.contains(&format!(
                "The address of function {} cannot be found",
                r.name
            ));
        // A function without an __mcount_loc entry can still attach:
        // bpf_arch_text_poke patches an entry ftrace does not manage when
        // the bytes there are what it expects, which the audit cannot see
        // in the file (alternatives rewrite them at boot: 7.2's get_cycles
        // starts with a jmp that becomes a NOP where the CPU has a TSC).
        // Measured on 6.1 (__memcpy, __memset, copy_to_user_nofault,
        // bpf_dispatcher_nop_func) and 7.2 (get_cycles, random_get_entropy,
        // __do_softirq); 6.12 refused those four (EBUSY). The audit's safety
        // verdict comes before this one, so such a FUNC was found safe.
        // Counted in the measured lines.
        let text_poked = r.reach == Reach::NoFentrySite
            && r.fentry_site == Some(false)
            && got.outcome == Outcome::Ok;
        if (got.outcome != want && !text_poked) || !log_ok {
            out.push(format!(
                "[{}] {} {} ({}): predicted {want:?}, guest: {}",
                r.btf_id,
                r.name,
                r.reach.as_str(),
                r.reason,
                got.line
            ));
        }
    }
    (out, measured)
}

/// Where the kernel attached names that several functions carry. Each
/// boot's `fentry instances` read each instance's entry through
/// /proc/kcore while the boot's links were attached (`INSTANCE <name>
/// <addr> call <target>|nop|other <bytes>`); an instance is patched when
/// one boot found it patched. A call out of the kernel's image is a
/// patched fentry site (the target is a BPF trampoline, in module space).
/// An instance in init text says nothing: that memory was freed after
/// boot and holds whatever reused it (6.12's freed `kfunc_init` once read
/// as a call into init text). Checks: every patched instance is the
/// address the audit says the kernel picks for an attachable FUNC of that
/// name that attached, that address is the name's lowest, the FUNC's
/// addr= tags (when it has any) name it, and every such FUNC's instance is
/// patched. Returns the names checked and the errors. (These kernels have
/// no KASLR: guest and System.map addresses agree.)
fn check_instances(
    rows: &[FuncReach],
    seen: &HashMap<u32, Verdict>,
    console: &str,
    system_map: &Path,
) -> (usize, Vec<String>) {
    use fentry::audit::Outcome;
    let map = std::fs::read_to_string(system_map).expect("read System.map");
    let symbol = |want: &str| {
        map.lines()
            .find_map(|l| {
                let mut f = l.split_whitespace();
                let addr = f.next()?;
                (f.nth(1)? == want).then(|| u64::from_str_radix(addr, 16).ok())?
            })
            .unwrap_or_else(|| panic!("{want} in {}", system_map.display()))
    };
    let image_end = symbol("_end");
    let init_text = symbol("__init_begin")..symbol("__init_end");
    let mut instances: HashMap<&str, BTreeMap<u64, bool>> = HashMap::new();
    for l in console.lines() {
        let mut f = l.trim_end().split(' ');
        if f.next() != Some("INSTANCE") {
            continue;
        }
        let (Some(name), Some(addr), Some(state)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        if init_text.contains(&addr) {
            continue;
        }
        let patched = state == "call"
            && f.next()
                .and_then(|t| u64::from_str_radix(t, 16).ok())
                .is_some_and(|t| t >= image_end);
        *instances.entry(name).or_default().entry(addr).or_default() |= patched;
    }
    let mut errors = Vec::new();
    let mut checked = 0;
    let attached: HashMap<&str, &FuncReach> = rows
        .iter()
        .filter(|r| {
            r.reach == Reach::Attachable
                && seen
                    .get(&r.btf_id)
                    .is_some_and(|v| v.outcome == Outcome::Ok)
        })
        .map(|r| (r.name.as_str(), r))
        .collect();
    for (name, list) in &instances {
        let patched: Vec<u64> = list.iter().filter(|i| *i.1).map(|i| *i.0).collect();
        let Some(row) = attached.get(name) else {
            if !patched.is_empty() {
                errors.push(format!(
                    "{name}: patched at {patched:x?} but no attachable FUNC of that name attached"
                ));
            }
            continue;
        };
        checked += 1;
        let lowest = list.keys().next().copied();
        if row.address.is_none() || row.address != lowest {
            errors.push(format!(
                "{name}: the audit's pick {:x?} is not the lowest instance {lowest:x?}",
                row.address
            ));
        }
        if patched != row.address.into_iter().collect::<Vec<_>>() {
            errors.push(format!(
                "{name}: the kernel patched {patched:x?}, the FUNC [{}] describes {:x?}; instances {list:x?}",
                row.btf_id, row.address
            ));
        }
        if !row.tags.is_empty() && !row.address.is_some_and(|a| row.tags.contains(&a)) {
            errors.push(format!(
                "{name}: FUNC [{}] tags {:x?} do not name the patched instance",
                row.btf_id, row.tags
            ));
        }
    }
    (checked, errors)
}

#[test]
fn booted_kernel_6_1_gcc_btf_by_btfkit() {
    let Some(()) = testkit::kernel_tier("builds and boots kernels with btfkit as pahole") else {
        return;
    };
    boots_with_btf("6.1", "gcc", Pahole::Btfkit);
}

/// The pahole 1.24 control of 6.1 is not booted: the audit of its vmlinux
/// says what its FUNCs do (the booted btfkit kernels prove the audit right),
/// beside btfkit's build of the same kernel.
#[test]
fn offline_audit_6_1_gcc_btf_by_pahole_1_24_control() {
    let Some(()) = testkit::kernel_tier("builds and boots kernels with btfkit as pahole") else {
        return;
    };
    let Some(result) = build("6.1", "gcc", Pahole::Debian124) else {
        return;
    };
    let rows = audit_reported("6.1-gcc-pahole", &result.join("vmlinux"));
    assert!(
        rows.iter().any(|r| r.reach == Reach::Attachable),
        "{}: no attachable FUNC in pahole 1.24's BTF",
        result.display()
    );
}

#[test]
fn booted_kernel_6_12_clang_btf_by_btfkit() {
    let Some(()) = testkit::kernel_tier("builds and boots kernels with btfkit as pahole") else {
        return;
    };
    boots_with_btf("6.12", "clang", Pahole::Btfkit);
}

#[test]
fn booted_kernel_7_2_gcc16_btf_by_btfkit() {
    let Some(()) = testkit::kernel_tier("builds and boots kernels with btfkit as pahole") else {
        return;
    };
    boots_with_btf("7.2", "gcc", Pahole::Btfkit);
}

#[test]
fn booted_kernel_7_2_clang_btf_by_btfkit() {
    let Some(()) = testkit::kernel_tier("builds and boots kernels with btfkit as pahole") else {
        return;
    };
    boots_with_btf("7.2", "clang", Pahole::Btfkit);
}

#[test]
fn booted_kernel_7_2_gcc16_btf_by_pahole_1_32_control_modules_by_btfkit() {
    let Some(()) = testkit::kernel_tier("builds and boots kernels with btfkit as pahole") else {
        return;
    };
    boots_with_btf("7.2", "gcc", Pahole::Sid132);
}
