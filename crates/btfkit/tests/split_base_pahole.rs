//! Module BTF over a base that another encoder wrote: Debian's 6.1 vmlinux,
//! whose `.BTF` pahole 1.24 made. btfkit encodes Debian's debug modules
//! over it with Debian 6.1's module command line, and so does Debian's
//! pahole (the oracle, for the named types and the sizes). No type of the
//! base may come back in the split part, the named types must be pahole's
//! (but for the base types pahole copies), and `btfkit check --base` must
//! name the base types a split BTF copies.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use btf::{Btf, Member, Type, TypeData};
use testkit::Fixture;

mod common {
    pub mod split_base;
}
use common::split_base;

const BTFKIT: &str = env!("CARGO_BIN_EXE_btfkit");

/// fs/ and net/ modules of several sizes, and two drivers.
const MODULES: [&str; 13] = [
    "kernel/fs/fat/msdos.ko",
    "kernel/fs/romfs/romfs.ko",
    "kernel/fs/pstore/ramoops.ko",
    "kernel/fs/efivarfs/efivarfs.ko",
    "kernel/fs/nfs/blocklayout/blocklayoutdriver.ko",
    "kernel/net/ipv4/ipip.ko",
    "kernel/net/sched/sch_hfsc.ko",
    "kernel/net/netfilter/nf_conntrack_sip.ko",
    "kernel/net/ipv4/udp_diag.ko",
    "kernel/net/core/failover.ko",
    "kernel/net/vmw_vsock/vsock_loopback.ko",
    "kernel/drivers/net/dummy.ko",
    "kernel/drivers/firmware/qemu_fw_cfg.ko",
];

/// scripts/Makefile.modfinal with 6.1's scripts/pahole-flags.sh for pahole
/// 1.24, the BTF written to `out` rather than into the module; `first`:
/// the subcommand that makes btfkit take pahole's command line.
fn encode(pahole: &Path, first: &[&str], base: &Path, ko: &Path, out: &Path) -> Output {
    Command::new(pahole)
        .args(first)
        .args([
            "-J",
            "--btf_gen_floats",
            "-j",
            "--lang_exclude=rust",
            "--btf_base",
        ])
        .arg(base)
        .arg("--btf_encode_detached")
        .arg(out)
        .arg(ko)
        .output()
        .expect("run the encoder")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn modules_over_pahole_1_24_base_reemit_no_base_type_pahole() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let Some(pahole) = testkit::tool_or_skip("pahole", "dwarves") else {
        return;
    };
    let fx = Fixture::new();
    let mut found = 0;
    let mut report = String::from("module: btfkit bytes (less extra FUNCs and tags) / pahole bytes; base types re-emitted by btfkit / by pahole\n");
    for m in MODULES {
        let ko = k.dbg_modules.join(m);
        if !ko.is_file() {
            continue;
        }
        found += 1;
        // A file of its own per module: pahole 1.24 writes over an existing
        // file without truncating it.
        let stem = ko.file_stem().unwrap_or_default().to_string_lossy();
        let ours_path = fx.path(&format!("{stem}.btfkit.btf"));
        let theirs_path = fx.path(&format!("{stem}.pahole.btf"));
        let o = encode(Path::new(BTFKIT), &["pahole"], &k.vmlinux, &ko, &ours_path);
        assert!(o.status.success(), "btfkit on {m}: {}", text(&o));
        let o = encode(&pahole, &[], &k.vmlinux, &ko, &theirs_path);
        assert!(o.status.success(), "pahole on {m}: {}", text(&o));
        let c = split_base::compare(m, &ours_path, &theirs_path, &k.vmlinux, true);
        report.push_str(&c.report);
        for d in &c.named_differences {
            report.push_str(&format!("  {m}: {d}\n"));
        }
        assert!(
            c.reemitted.is_empty(),
            "{m}: btfkit re-emits base types: {:?}",
            c.reemitted
        );
        assert!(
            c.named_differences.is_empty(),
            "{m}: named types differ from pahole's: {:?}",
            c.named_differences
        );
        let (core, theirs_len) = c.bytes;
        assert!(
            core * 10 <= theirs_len * 11,
            "{m}: btfkit's split BTF is {core} bytes without its extra FUNCs and tags, pahole's {theirs_len}"
        );
    }
    eprint!("{report}");
    assert!(
        found > 0,
        "none of the modules under {}",
        k.dbg_modules.display()
    );
}

/// A split BTF over Debian's vmlinux BTF that copies two base types (one
/// referring to the base's types, one to its own copy of itself) and has a
/// struct that only shares a base type's name.
fn duplicating_split(base: Arc<Btf>) -> Btf {
    let find = |name: &str| {
        base.iter()
            .find(|(_, t)| {
                matches!(t.data, TypeData::Struct { .. }) && base.name_of(t).ok() == Some(name)
            })
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("no struct {name} in the base"))
    };
    let task_struct = find("task_struct");
    let mut split = Btf::new_split(base.clone());
    split.add_type(task_struct);
    let list_head = split.add_str("list_head");
    let (next, prev) = (split.add_str("next"), split.add_str("prev"));
    let own = split.type_count();
    let member = |name_off, offset| Member {
        name_off,
        ty: own + 1,
        offset,
    };
    split.add_type(Type::new(
        list_head,
        TypeData::Struct {
            size: 16,
            members: vec![member(next, 0), member(prev, 64)].into(),
        },
    ));
    split.add_type(Type::new(0, TypeData::Ptr { ty: own }));
    // `struct file` of the module's own: one byte, not the base's.
    let file = split.add_str("file");
    let int = base
        .iter()
        .find(|(_, t)| base.name_of(t).ok() == Some("int"))
        .map(|(id, _)| id)
        .expect("int");
    let x = split.add_str("x");
    split.add_type(Type::new(
        file,
        TypeData::Struct {
            size: 4,
            members: vec![Member {
                name_off: x,
                ty: int,
                offset: 0,
            }]
            .into(),
        },
    ));
    split
}

#[test]
fn check_names_base_types_copied_into_split_btf() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let fx = Fixture::new();
    let base = Arc::new(btf::load_file(&k.vmlinux, None).expect("Debian's vmlinux BTF"));
    let split = duplicating_split(base);
    let path = fx.path("dup.btf");
    std::fs::write(&path, split.to_bytes()).expect("write the split BTF");
    let o = Command::new(BTFKIT)
        .arg("check")
        .arg("--base")
        .arg(&k.vmlinux)
        .arg(&path)
        .output()
        .expect("btfkit check");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("split BTF duplicates 2 base types (task_struct, list_head)"),
        "{out}"
    );
    assert!(!out.contains(": OK"), "{out}");
    // --json lists them, by id and name.
    let o = Command::new(BTFKIT)
        .args(["check", "--json", "--base"])
        .arg(&k.vmlinux)
        .arg(&path)
        .output()
        .expect("btfkit check --json");
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let names: Vec<&str> = report["base_duplicates"]
        .as_array()
        .expect("base_duplicates")
        .iter()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(names, ["task_struct", "list_head"], "{report}");

    // Deduplicated over its base, only the module's own `struct file` is left.
    let deduped = fx.path("deduped.btf");
    let o = Command::new(BTFKIT)
        .arg("dedup")
        .arg(&path)
        .arg("-o")
        .arg(&deduped)
        .arg("--base")
        .arg(&k.vmlinux)
        .output()
        .expect("btfkit dedup");
    assert!(o.status.success(), "{}", text(&o));
    let o = Command::new(BTFKIT)
        .arg("check")
        .arg("--base")
        .arg(&k.vmlinux)
        .arg(&deduped)
        .output()
        .expect("btfkit check");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains(": OK (1 type,"), "{out}");
}
