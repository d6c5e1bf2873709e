//! Read then write gives back the same bytes (oracle: the input itself), on
//! the three kinds of real BTF: the running kernel's, the `.BTF` section
//! Debian's build wrote into vmlinux with pahole, and a module's split BTF.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use btf::Btf;

fn section_or_file(path: &Path) -> Vec<u8> {
    let data = std::fs::read(path).unwrap();
    if data.starts_with(b"\x7fELF") {
        btf::elf_btf_section(&data).unwrap()
    } else {
        data
    }
}

fn assert_same(path: &Path, blob: &[u8], out: &[u8]) {
    if let Some(i) = out.iter().zip(blob).position(|(a, b)| a != b) {
        panic!("{}: first difference at byte {i:#x}", path.display());
    }
    assert_eq!(out.len(), blob.len(), "{}: length differs", path.display());
}

#[test]
fn roundtrip_sysfs_vmlinux_is_byte_identical() {
    let p = Path::new(btf::SYSFS_VMLINUX);
    if !p.exists() {
        return testkit::skip("/sys/kernel/btf/vmlinux is not present (CONFIG_DEBUG_INFO_BTF)");
    }
    let blob = section_or_file(p);
    assert_same(p, &blob, &Btf::parse(&blob).unwrap().to_bytes());
}

#[test]
fn roundtrip_debian_vmlinux_btf_section_is_byte_identical() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let blob = section_or_file(&k.vmlinux);
    assert_same(&k.vmlinux, &blob, &Btf::parse(&blob).unwrap().to_bytes());
}

#[test]
fn roundtrip_debian_module_split_btf_is_byte_identical() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let base = Arc::new(Btf::parse(&section_or_file(&k.vmlinux)).unwrap());
    let module = k.image_modules.join("kernel/net/key/af_key.ko");
    let blob = section_or_file(&module);
    let split = Btf::parse_split(&blob, base.clone()).unwrap();
    assert!(split.start_id() == base.type_count());
    assert!(!split.own_types().is_empty());
    assert_same(&module, &blob, &split.to_bytes());
}

/// `load_file` parses a vmlinux in place, its strings left in a mapping of
/// the file; what it gives must be what parsing a copy of the section gives
/// (oracle: the section's bytes), before and after a string is added (the
/// mapped section is copied then).
#[test]
fn roundtrip_mapped_debian_vmlinux_equals_parsed_copy() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let blob = section_or_file(&k.vmlinux);
    let mut mapped = btf::load_file(&k.vmlinux, None).unwrap();
    assert_same(&k.vmlinux, &blob, &mapped.to_bytes());
    let mut copied = Btf::parse(&blob).unwrap();
    assert_eq!(
        mapped.find_str("task_struct"),
        copied.find_str("task_struct")
    );
    let (a, b) = (
        mapped.add_str("btfkit_new_string"),
        copied.add_str("btfkit_new_string"),
    );
    assert_eq!(a, b);
    assert_eq!(mapped.str_at(a).unwrap(), "btfkit_new_string");
    assert_same(&k.vmlinux, &copied.to_bytes(), &mapped.to_bytes());
}
