//! Broken dumps give errors that say what and where, never a panic: made
//! from the real dumps (testkit::dumps) by cutting and corrupting them.

use kmem::file::Bytes;
use kmem::kdump::KdumpFile;
use kmem::{Dump, Kernel, Memory};
use testkit::dumps;

fn open_owned(data: Vec<u8>) -> kmem::Result<Box<dyn Dump>> {
    kmem::open_bytes(Bytes::Owned(data))
}

#[test]
fn truncated_dumps_name_the_offset() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    // An ELF cut inside its first segment: refused at open.
    let mut elf = vec![0; 1 << 20];
    std::io::Read::read_exact(&mut std::fs::File::open(&d.elf).unwrap(), &mut elf).unwrap();
    let e = open_owned(elf)
        .err()
        .expect("truncated ELF opens")
        .to_string();
    assert!(
        e.contains("truncated") && e.contains("file offset 0x"),
        "{e}"
    );

    // A flattened kdump cut in half: its record index ends early.
    let zlib = std::fs::read(&d.kdump_zlib).unwrap();
    let e = open_owned(zlib[..zlib.len() / 2].to_vec())
        .err()
        .expect("truncated flattened dump opens")
        .to_string();
    assert!(
        e.contains("flattened record") && e.contains("truncated"),
        "{e}"
    );

    // A plain kdump cut in half: headers read, the pages past the cut do not.
    let zstd = std::fs::read(&d.kdump_zstd).unwrap();
    let cut = open_owned(zstd[..zstd.len() / 2].to_vec()).unwrap();
    let full = open_owned(zstd).unwrap();
    let mut buf = vec![0; 4096];
    let mut errors = 0;
    for pfn in (0..131_072u64).step_by(101) {
        if full.read_phys(pfn * 4096, &mut buf).is_err() {
            continue;
        }
        if let Err(e) = cut.read_phys(pfn * 4096, &mut buf) {
            let e = e.to_string();
            assert!(
                e.contains("truncated") && e.contains("file offset 0x"),
                "{e}"
            );
            errors += 1;
        }
    }
    assert!(errors > 10, "only {errors} pages past the cut failed");

    // Anything else is not a dump.
    let e = open_owned(b"not a dump at all".to_vec())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not a kernel dump"), "{e}");
}

#[test]
fn corrupt_compressed_page_names_its_address_and_the_rest_still_reads() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    for path in [&d.kdump_lzo, &d.kdump_snappy, &d.kdump_zstd] {
        let mut data = std::fs::read(path).unwrap();
        let k = KdumpFile::parse(Bytes::Owned(data.clone())).unwrap();
        // The first compressed page above 16 MB.
        let (pfn, desc) = (4096..k.max_mapnr())
            .filter_map(|p| Some((p, k.page_desc(p).ok()??)))
            .find(|(_, d)| d.flags != 0 && d.size > 64)
            .unwrap();
        let at = desc.offset as usize;
        for b in &mut data[at + 4..at + 40] {
            *b ^= 0x5a;
        }
        let bad = open_owned(data).unwrap();
        let mut buf = vec![0; 4096];
        let e = bad.read_phys(pfn * 4096, &mut buf).unwrap_err().to_string();
        assert!(
            e.contains(&format!("physical address {:#x}", pfn * 4096))
                && e.contains(&format!("file offset {:#x}", desc.offset)),
            "{}: {e}",
            path.display()
        );
        // Its neighbours are unharmed.
        let good = kmem::open_dump(path).unwrap();
        let mut want = vec![0; 4096];
        for p in [pfn - 1, pfn + 1] {
            if good.read_phys(p * 4096, &mut want).is_ok() {
                bad.read_phys(p * 4096, &mut buf).unwrap();
                assert_eq!(buf, want);
            }
        }
    }
}

#[test]
fn missing_vmcoreinfo_and_unmapped_addresses_are_named() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let mut data = std::fs::read(&d.kdump_lzo).unwrap();
    // Hide VMCOREINFO: rename its ELF note, and zero size_vmcoreinfo in
    // the sub-header (block 1, offset 40) that points at the other copy.
    let i = data.windows(10).position(|w| w == b"VMCOREINFO").unwrap();
    data[i] = b'X';
    data[4096 + 40..4096 + 48].fill(0);
    let dump = open_owned(data).unwrap();
    let e = Kernel::new(dump, std::path::Path::new("cut"), None)
        .err()
        .expect("a dump without VMCOREINFO opens")
        .to_string();
    assert!(e.contains("no VMCOREINFO"), "{e}");

    let k = Kernel::open(&d.kdump_lzo).unwrap();
    // The vmalloc area's first page is never mapped (a guard).
    let addr = 0xffff_c900_0000_0000u64 - 0x1000 * 7;
    let e = k.read_u64(addr).unwrap_err().to_string();
    assert!(
        e.contains(&format!("{addr:#x}")) && e.contains("not mapped"),
        "{e}"
    );
}
