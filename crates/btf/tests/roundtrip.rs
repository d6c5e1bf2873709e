//! Read then write gives back the same bytes (oracle: the input itself), on
//! the three kinds of real BTF: the running kernel's, the `.BTF` section
//! Debian's build wrote into vmlinux with pahole, and a module's split BTF.

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
