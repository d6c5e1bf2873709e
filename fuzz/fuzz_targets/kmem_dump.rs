//! Arbitrary bytes as a dump file (ELF core, kdump-compressed, flattened):
//! opening and reading pages must return errors, never panic or hang.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(dump) = kmem::open_bytes(kmem::file::Bytes::Owned(data.to_vec())) else {
        return;
    };
    let mut buf = [0u8; 64];
    for addr in [0u64, 0x1000, 0xff8, 0x10_0000, 0xffff_ffff_8100_0000] {
        let _ = dump.read_phys(addr, &mut buf);
        let _ = dump.read_virt_segment(addr, &mut buf);
    }
    if let Some(info) = dump.vmcoreinfo() {
        let info = kmem::VmcoreInfo::parse(info);
        let _ = kmem::kallsyms::Tables::from_vmcoreinfo(&info);
    }
    let _ = kmem::Kernel::new(dump, std::path::Path::new("fuzz"), None);
});
