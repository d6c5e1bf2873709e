//! `btfkit inspect DUMP --btf FILE` with a BTF of another kernel is
//! refused before it reads anything: one line naming the BTF file, the
//! dump and what differs, exit 1, nothing on stdout. The oracles: the
//! drgn plugin's checks (python/btfkit_drgn: `init_uts_ns` read with the
//! BTF's types gives VMCOREINFO's OSRELEASE; no more than 2% of the
//! variables elsewhere than kallsyms has them), VMCOREINFO's own SIZE()
//! and OFFSET() of the kernel's layout, and the dump's architecture
//! (x86-64, the only one kmem reads). The kernel's own BTF (from the
//! dump's memory, written to a file) and one `btfkit encode --vars all`
//! makes from Debian's vmlinux of that kernel are accepted.
//!
//! The other kernels' BTF: the machine's own /sys/kernel/btf/vmlinux
//! (another release than the dump's 6.1, as the Python plugin's test
//! takes it), and the dump's own BTF with one thing changed each (a
//! struct size, `struct uts_namespace` as before 5.11, `struct pt_regs`
//! of arm64, a 4-byte `long`, the per-CPU variables moved).

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use btf::{Btf, TypeData};
use testkit::dumps;

fn inspect(dump: &Path, btf: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .arg("inspect")
        .arg(dump)
        .arg("--btf")
        .arg(btf)
        .args(args)
        .output()
        .unwrap()
}

/// The dump's own BTF, as the kernel has it in memory.
fn own_btf(dump: &Path) -> Btf {
    let prog = inspect::open::open(&inspect::open::Options {
        vmcore: Some(dump.to_owned()),
        ..Default::default()
    })
    .unwrap();
    prog.btf().clone()
}

fn write(dir: &Path, name: &str, btf: &Btf) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, btf.to_bytes()).unwrap();
    p
}

/// The id of the struct called `name`.
fn struct_id(btf: &Btf, name: &str) -> btf::TypeId {
    btf.iter()
        .find(|(_, t)| {
            matches!(t.data, TypeData::Struct { .. }) && btf.name_of(t).ok() == Some(name)
        })
        .map(|(id, _)| id)
        .unwrap()
}

/// The index of member `name` of struct `id`.
fn member_index(btf: &Btf, id: btf::TypeId, name: &str) -> usize {
    let t = btf.type_by_id(id).unwrap();
    t.members()
        .iter()
        .position(|m| btf.str_at(m.name_off).ok() == Some(name))
        .unwrap()
}

/// Refused: exit 1, nothing on stdout, one line on stderr that names the
/// BTF file and the dump, says the dump's release and contains `want`.
fn assert_refused(o: &Output, btf: &Path, dump: &Path, want: &str) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let head = format!(
        "btfkit: error: {}: BTF of another kernel than {} (6.1.0-",
        btf.display(),
        dump.display()
    );
    assert!(err.starts_with(&head), "{err}");
    assert!(err.contains(want), "missing {want:?} in:\n{err}");
    err
}

#[test]
fn the_kernel_s_own_btf_and_one_encoded_from_its_vmlinux_are_accepted() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let own = write(dir.path(), "own.btf", &own_btf(&d.kdump_zlib));
    let vars = dir.path().join("vars.btf");
    testkit::run_ok(
        Command::new(env!("CARGO_BIN_EXE_btfkit"))
            .arg("encode")
            .arg(&d.kernel.vmlinux)
            .args(["--vars", "all", "-o"])
            .arg(&vars),
    );
    let exprs = ["sizeof(struct rq)", "per_cpu(runqueues, 1).cpu"];
    let plain = Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .arg("inspect")
        .arg(&d.kdump_zlib)
        .args(exprs)
        .output()
        .unwrap();
    assert!(plain.status.success());
    for btf in [&own, &vars] {
        for (_, dump) in d.all() {
            let o = inspect(dump, btf, &exprs);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{}: {err}", btf.display());
            assert_eq!(o.stdout, plain.stdout, "{}", btf.display());
        }
    }
    // With every variable, init_uts_ns reads: VMCOREINFO's release.
    let o = inspect(&d.elf, &vars, &["init_uts_ns.name.release"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.starts_with("(char [65])\"6.1.0-"), "{out}");
}

/// As the drgn plugin's test does: this machine's kernel is not the dump's.
#[test]
fn the_machine_s_own_btf_of_another_release_is_refused_as_the_drgn_plugin_refuses_it() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let other = Path::new("/sys/kernel/btf/vmlinux");
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    if !other.is_file() || release.starts_with("6.1.0-") {
        testkit::skip("no /sys/kernel/btf/vmlinux of another release than the dump's");
        return;
    }
    for (_, dump) in d.all() {
        let o = inspect(
            dump,
            other,
            &["sizeof(struct rq)", "per_cpu(runqueues, 1).cpu"],
        );
        let err = assert_refused(&o, other, dump, "in VMCOREINFO");
        assert!(err.contains(" more differences"), "{err}");
    }
}

#[test]
fn a_struct_size_other_than_vmcoreinfo_s_is_refused() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut btf = own_btf(&d.kdump_zlib);
    let zone = struct_id(&btf, "zone");
    if let TypeData::Struct { size, .. } = &mut btf.type_by_id_mut(zone).unwrap().data {
        *size += 64;
    }
    let p = write(dir.path(), "zone.btf", &btf);
    let o = inspect(&d.elf, &p, &["sizeof(struct zone)"]);
    let err = assert_refused(
        &o,
        &p,
        &d.elf,
        "): sizeof(struct zone) is 1600 in the BTF, 1536 in VMCOREINFO\n",
    );
    assert!(!err.contains("more differences"), "{err}");
}

/// `struct uts_namespace` as before Linux 5.11 (a `struct kref` first):
/// init_uts_ns reads another release than VMCOREINFO's, and
/// VMCOREINFO's OFFSET(uts_namespace.name) is not the BTF's.
#[test]
fn init_uts_ns_laid_out_otherwise_gives_another_release_and_is_refused() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut btf = own_btf(&d.kdump_zlib);
    let uts = struct_id(&btf, "uts_namespace");
    let name = member_index(&btf, uts, "name");
    if let TypeData::Struct { members, .. } = &mut btf.type_by_id_mut(uts).unwrap().data {
        members[name].offset += 32;
    }
    let p = write(dir.path(), "uts.btf", &btf);
    let o = inspect(&d.kdump_lzo, &p, &["init_uts_ns"]);
    let err = assert_refused(
        &o,
        &p,
        &d.kdump_lzo,
        "init_uts_ns read with the BTF's struct uts_namespace gives release \"",
    );
    assert!(
        err.contains("\", VMCOREINFO \"6.1.0-")
            && err
                .contains("offsetof(struct uts_namespace, name) is 4 in the BTF, 0 in VMCOREINFO"),
        "{err}"
    );
}

/// arm64's `struct pt_regs` (pstate, orig_x0) where x86-64's was.
#[test]
fn another_architecture_s_btf_is_refused_naming_both_architectures() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut btf = own_btf(&d.kdump_zlib);
    let regs = struct_id(&btf, "pt_regs");
    let (r15, orig_ax) = (
        member_index(&btf, regs, "r15"),
        member_index(&btf, regs, "orig_ax"),
    );
    let (pstate, orig_x0) = (btf.add_str("pstate"), btf.add_str("orig_x0"));
    if let TypeData::Struct { members, .. } = &mut btf.type_by_id_mut(regs).unwrap().data {
        members[r15].name_off = pstate;
        members[orig_ax].name_off = orig_x0;
    }
    let p = write(dir.path(), "arm64.btf", &btf);
    let o = inspect(&d.kdump_snappy, &p, &["1"]);
    assert_refused(
        &o,
        &p,
        &d.kdump_snappy,
        "): the BTF is of arm64 (struct pt_regs has pstate and orig_x0), the kernel of x86_64\n",
    );

    // A 32-bit architecture's `long`.
    let mut btf = own_btf(&d.kdump_zlib);
    let long = btf
        .iter()
        .find(|(_, t)| btf.name_of(t).ok() == Some("long int"))
        .map(|(id, _)| id)
        .unwrap();
    if let TypeData::Int { size, bits, .. } = &mut btf.type_by_id_mut(long).unwrap().data {
        (*size, *bits) = (4, 32);
    }
    let p = write(dir.path(), "long32.btf", &btf);
    let o = inspect(&d.kdump_snappy, &p, &["1"]);
    assert_refused(
        &o,
        &p,
        &d.kdump_snappy,
        "): long is 4 bytes in the BTF, 8 in this x86_64 kernel\n",
    );
}

/// The per-CPU variables 8 bytes further than kallsyms has them: the drgn
/// plugin's address check.
#[test]
fn variables_elsewhere_than_kallsyms_has_them_are_refused_as_the_drgn_plugin_refuses_them() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut btf = own_btf(&d.kdump_zlib);
    let percpu = btf
        .iter()
        .find(|(_, t)| {
            matches!(t.data, TypeData::Datasec { .. })
                && btf.name_of(t).ok() == Some(".data..percpu")
        })
        .map(|(id, _)| id)
        .unwrap();
    if let TypeData::Datasec { vars, .. } = &mut btf.type_by_id_mut(percpu).unwrap().data {
        for v in vars.iter_mut() {
            v.offset += 8;
        }
    }
    let p = write(dir.path(), "moved.btf", &btf);
    let o = inspect(&d.kdump_zstd, &p, &["per_cpu(runqueues, 1).cpu"]);
    let err = assert_refused(
        &o,
        &p,
        &d.kdump_zstd,
        " variables are not where kallsyms has them (first: ",
    );
    assert!(!err.contains("VMCOREINFO"), "{err}");
}

/// Debian's 7.2 (sid) dump that tests/kallsyms_new_kernel.rs of kmem
/// makes and caches, with its own BTF and with 6.1's: another release
/// both ways, refused both ways; each kernel's own BTF is accepted.
#[test]
fn debian_7_2_and_6_1_refuse_each_other_s_btf_and_take_their_own() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let new = testkit::cache_dir()
        .join("debian-new")
        .join("7.2.13+deb14-cloud-amd64");
    if !new.join("dump-done").is_file() {
        testkit::skip(
            "no 7.2 dump cached: cargo test -p btfkit-kmem --test kallsyms_new_kernel makes it",
        );
        return;
    }
    let dump72 = new.join("vmcore.elf");
    let dir = tempfile::tempdir().unwrap();
    let btf72 = write(dir.path(), "7.2.btf", &own_btf(&dump72));
    let btf61 = write(dir.path(), "6.1.btf", &own_btf(&d.elf));
    let o = inspect(&dump72, &btf72, &["sizeof(struct rq)"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = inspect(&d.elf, &btf61, &["sizeof(struct rq)"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let o = inspect(&d.elf, &btf72, &["sizeof(struct rq)"]);
    assert_refused(
        &o,
        &btf72,
        &d.elf,
        " variables are not where kallsyms has them",
    );
    let o = inspect(&dump72, &btf61, &["sizeof(struct rq)"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty());
    let head = format!(
        "btfkit: error: {}: BTF of another kernel than {} (7.2.13+deb14-cloud-amd64): ",
        btf61.display(),
        dump72.display()
    );
    assert!(err.starts_with(&head), "{err}");
    assert!(err.contains(" in VMCOREINFO"), "{err}");
}
