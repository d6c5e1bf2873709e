//! Read then write must give back the same bytes (oracle: the input itself).

use std::path::Path;

fn roundtrip(path: &Path) {
    let data = std::fs::read(path).unwrap();
    let blob = if data.starts_with(b"\x7fELF") {
        btf::elf_btf_section(&data).unwrap()
    } else {
        data
    };
    let btf = btf::Btf::parse(&blob).unwrap();
    let out = btf.to_bytes();
    assert_eq!(out.len(), blob.len(), "{}: length differs", path.display());
    if let Some(i) = out.iter().zip(&blob).position(|(a, b)| a != b) {
        panic!("{}: first difference at byte {i:#x}", path.display());
    }
}

#[test]
fn roundtrip_sysfs_vmlinux_is_byte_identical() {
    let p = Path::new(btf::SYSFS_VMLINUX);
    if !p.exists() {
        eprintln!("skip: {} is not present", p.display());
        return;
    }
    roundtrip(p);
}
