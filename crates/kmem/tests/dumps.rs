//! kmem on real dumps of Debian's 6.1 cloud kernel (see testkit::dumps):
//! every format reads what drgn reads, the kallsyms tables in memory are the
//! System.map moved by KERNELOFFSET, and the BTF in memory is vmlinux's .BTF.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use kmem::kallsyms::{KSym, Tables};
use kmem::{Kernel, Memory};
use testkit::{drgn, dumps};

fn kallsyms(k: &Kernel) -> Vec<KSym> {
    let t = Tables::from_vmcoreinfo(k.vmcoreinfo()).unwrap();
    kmem::kallsyms::read(k, &t).unwrap()
}

fn addr_of(syms: &[KSym], name: &str) -> u64 {
    syms.iter().find(|s| s.name == name).unwrap().addr
}

#[test]
fn kallsyms_in_memory_equal_system_map_moved_by_kerneloffset() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let map = std::fs::read_to_string(&d.kernel.system_map).unwrap();
    let mut linked: HashMap<&str, Vec<(u64, char)>> = HashMap::new();
    for l in map.lines() {
        let mut it = l.split(' ');
        let (Some(a), Some(t), Some(n)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let t = t.chars().next().unwrap();
        linked
            .entry(n)
            .or_default()
            .push((u64::from_str_radix(a, 16).unwrap(), t));
    }
    for (name, path) in d.all() {
        let k = Kernel::open(path).unwrap();
        let offset = k.vmcoreinfo().kernel_offset().unwrap();
        let t = Tables::from_vmcoreinfo(k.vmcoreinfo()).unwrap();
        let (encoding, syms) = kmem::kallsyms::read_encoded(&k, &t).unwrap();
        // 6.1 on x86-64 SMP: offsets from kallsyms_relative_base, per-CPU absolute.
        assert_eq!(encoding, kmem::kallsyms::Encoding::RelativeAbsolutePercpu);
        assert!(syms.len() > 80_000, "{name}: {} symbols", syms.len());
        let mut checked = 0;
        for s in &syms {
            let Some(cands) = linked.get(s.name.as_str()) else {
                panic!("{name}: {} is not in System.map", s.name);
            };
            // Per-CPU symbols are offsets into the per-CPU area: not moved,
            // and scripts/kallsyms makes them absolute ('A').
            let ok = cands.iter().any(|&(a, t)| {
                let percpu = a < 0x100_0000;
                (t == s.type_char as char && a.wrapping_add(offset) == s.addr)
                    || (percpu && s.type_char == b'A' && a == s.addr)
            });
            assert!(
                ok,
                "{name}: {} {:#x} {} vs System.map {cands:x?}",
                s.name, s.addr, s.type_char as char
            );
            checked += 1;
        }
        eprintln!("{name}: {checked} kallsyms entries equal System.map + {offset:#x}");
    }
}

#[test]
fn btf_in_memory_is_vmlinux_btf_section() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let file = btf::read_blob(&d.kernel.vmlinux).unwrap();
    for (name, path) in d.all() {
        let k = Kernel::open(path).unwrap();
        let syms = kallsyms(&k);
        let (start, stop) = (addr_of(&syms, "__start_BTF"), addr_of(&syms, "__stop_BTF"));
        let mem = k.read_vec(start, (stop - start) as usize).unwrap();
        assert!(
            mem == file,
            "{name}: BTF in memory differs from vmlinux's .BTF"
        );
        let b = kmem::btf::read(&k, start, stop).unwrap();
        assert!(b.type_count() > 50_000, "{name}");
    }
}

/// Addresses in each kind of mapping: kernel data, bss and rodata (image),
/// per-CPU areas (direct map), task structs (slab), module data (vmalloc).
fn probe_addresses(k: &Kernel, syms: &[KSym]) -> Vec<(u64, usize)> {
    let mut out: Vec<(u64, usize)> = syms
        .iter()
        .filter(|s| b"DdBbRr".contains(&s.type_char) && s.addr > 0xffff_0000_0000_0000)
        .step_by(97)
        .map(|s| (s.addr, 64))
        .collect();
    let pco = addr_of(syms, "__per_cpu_offset");
    let current = addr_of(syms, "current_task");
    for cpu in 0..2 {
        let off = k.read_u64(pco + cpu * 8).unwrap();
        out.push((current.wrapping_add(off), 8));
        let task = k.read_u64(current.wrapping_add(off)).unwrap();
        out.push((task, 4096));
    }
    // The modules list: struct module lives in module (vmalloc) space.
    let modules = addr_of(syms, "modules");
    let mut m = k.read_u64(modules).unwrap();
    let mut n = 0;
    while m != modules && n < 16 {
        out.push((m, 1024));
        m = k.read_u64(m).unwrap();
        n += 1;
    }
    assert!(
        n >= 2,
        "expected qemu_fw_cfg and dummy in the module list, found {n}"
    );
    out
}

#[test]
fn every_format_reads_what_drgn_reads() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    if !drgn::drgn_or_skip() {
        return;
    }
    let elf = Kernel::open(&d.elf).unwrap();
    let syms = kallsyms(&elf);
    let probes = probe_addresses(&elf, &syms);
    let input: String = probes.iter().map(|(a, n)| format!("{a:x} {n}\n")).collect();
    let script = "for line in sys.stdin:\n    a, n = line.split()\n    \
                  try:\n        print(prog.read(int(a, 16), int(n)).hex())\n    \
                  except drgn.FaultError:\n        print('fault')\n";
    let oracle = drgn::run(&d.elf, &d.kernel.vmlinux, &[], script, &input);
    let oracle: Vec<&str> = oracle.lines().collect();
    assert_eq!(oracle.len(), probes.len());
    for (name, path) in d.all() {
        let k = Kernel::open(path).unwrap();
        let mut same = 0;
        for (&(a, n), want) in probes.iter().zip(&oracle) {
            let got = match k.read_vec(a, n) {
                Ok(b) => b.iter().map(|x| format!("{x:02x}")).collect(),
                Err(_) => "fault".to_string(),
            };
            assert_eq!(&got, want, "{name}: {n} bytes at {a:#x}");
            same += 1;
        }
        eprintln!(
            "{name}: {same} reads equal drgn's ({} bytes)",
            probes.iter().map(|p| p.1).sum::<usize>()
        );
    }
}

#[test]
fn formats_hold_the_same_pages() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let elf = kmem::open_dump(&d.elf).unwrap();
    for (name, path) in d.all().into_iter().skip(1) {
        let k = kmem::open_dump(path).unwrap();
        // Every 37th page of the first 512 MB, plus page 0.
        for pfn in (0..131_072u64).step_by(37) {
            let (mut a, mut b) = (vec![0; 4096], vec![0; 4096]);
            let ra = elf.read_phys(pfn * 4096, &mut a).is_ok();
            let rb = k.read_phys(pfn * 4096, &mut b).is_ok();
            assert_eq!(ra, rb, "{name}: pfn {pfn:#x} present in one format only");
            assert!(a == b, "{name}: pfn {pfn:#x} differs from the ELF dump");
        }
    }
}
