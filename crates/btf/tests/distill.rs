//! Distilled base BTF on Debian's shipped modules (split BTF written by
//! Debian's pahole over its vmlinux). Oracles: libbpf (bpftool reads the
//! distilled base and the new split over it, and prints it as C), and the
//! meaning of every type, which must survive: each split type keeps its kind
//! and name, and each of its references leads to a type of the same name
//! and kind family as before (a named struct may become a FWD or a sized
//! struct without members in the base, as libbpf's btf__distill_base does).
//! The kernel's own relocation is exercised by the 6.12 boot test
//! (crates/btfkit/tests/kernel_boot.rs).

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use btf::distill::distill_base;
use btf::{Btf, Type, TypeData, TypeId};

fn modules(dir: &std::path::Path, n: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "ko") && out.len() < n {
                out.push(p);
            }
        }
    }
    out
}

/// The kind family a reference may change within: a named composite may
/// become a FWD, an ENUM64 an ENUM.
fn family(t: &Type) -> &'static str {
    match t.data {
        TypeData::Struct { .. } | TypeData::Union { .. } | TypeData::Fwd => "composite",
        TypeData::Enum { .. } | TypeData::Enum64 { .. } => "enum",
        _ => t.kind_name(),
    }
}

fn name_of(btf: &Btf, id: TypeId) -> (String, &'static str) {
    match btf.type_by_id(id) {
        None => (String::new(), "void"),
        Some(t) => (btf.name_of(t).unwrap_or("?").to_string(), family(t)),
    }
}

fn refs(t: &Type) -> Vec<TypeId> {
    let mut v = Vec::new();
    t.for_each_ref(|r| v.push(r));
    v
}

#[test]
fn distilled_modules_keep_every_reference_libbpf() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let vmlinux = Arc::new(btf::load_file(&k.vmlinux, None).expect("vmlinux BTF"));
    let kos = modules(&k.image_modules, 40);
    assert!(
        !kos.is_empty(),
        "no modules under {}",
        k.image_modules.display()
    );
    let bpftool = testkit::tool_or_skip("bpftool", "bpftool");
    let tmp = tempfile::tempdir().expect("tempdir");
    for ko in &kos {
        let data = std::fs::read(ko).expect("read module");
        let split = btf::parse_any(&data, Some(vmlinux.clone())).expect("module BTF");
        let (base, new) = distill_base(&split).expect("distill");
        assert!(base.type_count() < vmlinux.type_count());
        assert_eq!(new.start_id(), base.type_count());
        let own = split.own_types().len();
        assert!(new.own_types().len() >= own);
        for (i, (id, t)) in split.iter().enumerate() {
            let nid = new.start_id() + i as u32;
            let nt = new.get(nid).expect("type");
            assert_eq!(t.kind(), nt.kind(), "{}: [{id}] -> [{nid}]", ko.display());
            assert_eq!(
                split.name_of(t).ok(),
                new.name_of(nt).ok(),
                "{}: [{id}]",
                ko.display()
            );
            for (r, nr) in refs(t).into_iter().zip(refs(nt)) {
                assert_eq!(
                    name_of(&split, r),
                    name_of(&new, nr),
                    "{}: [{id}] reference {r} -> {nr}",
                    ko.display()
                );
            }
        }
        // The base holds only bare named descriptions.
        for (_, t) in base.iter() {
            assert!(
                t.name_off != 0,
                "{}: anonymous type in the base",
                ko.display()
            );
            assert!(
                t.members().is_empty(),
                "{}: members in the base",
                ko.display()
            );
        }
        if let Some(bpftool) = &bpftool {
            let b = tmp.path().join("base");
            let s = tmp.path().join("split");
            std::fs::write(&b, base.to_bytes()).expect("write");
            std::fs::write(&s, new.to_bytes()).expect("write");
            let out = Command::new(bpftool)
                .args(["btf", "dump", "file"])
                .arg(&s)
                .arg("--base-btf")
                .arg(&b)
                .args(["format", "c"])
                .output()
                .expect("bpftool");
            assert!(
                out.status.success(),
                "{}: libbpf rejects the distilled BTF: {}",
                ko.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
