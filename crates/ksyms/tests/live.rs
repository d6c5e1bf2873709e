//! The readers on real inputs: the running kernel's /proc/kallsyms, and
//! Debian's System.map and vmlinux (scripts/fetch-debian-kernel.sh).

use std::path::Path;

use ksyms::kallsyms::{self, Hidden, PROC_KALLSYMS};
use ksyms::{elf, kaslr_offset, system_map, SizeSource, SymbolKind, Table};

fn live_table() -> Option<Table> {
    match kallsyms::read(Path::new(PROC_KALLSYMS), Hidden::Error) {
        Ok(syms) => Some(Table::new(syms)),
        Err(e @ ksyms::Error::AddressesHidden { .. }) => {
            testkit::skip(&format!("{e}"));
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Oracle: a line of /proc/kallsyms read here with std's line reader, and
/// the next line's address; an address 4 bytes into that function must
/// resolve to it with offset 4.
#[test]
fn resolve_live_kallsyms_address_inside_function_gives_offset() {
    let Some(table) = live_table() else { return };
    let text = std::fs::read_to_string(PROC_KALLSYMS).expect("read kallsyms");
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let (name, addr) = lines
        .windows(2)
        .find_map(|w| {
            let (a, b) = (&w[0], &w[1]);
            let ok = a.len() == 3 && b.len() == 3 && a[1] == "t" && !a[2].starts_with("__pfx_");
            let aa = u64::from_str_radix(a[0], 16).ok()?;
            let ba = u64::from_str_radix(b[0], 16).ok()?;
            // Unique name, and at least 8 bytes long, so offset 4 is inside.
            let unique = text.matches(&format!(" {}\n", a[2])).count() == 1;
            (ok && ba >= aa + 8 && unique).then(|| (a[2].to_owned(), aa))
        })
        .expect("a unique local function in kallsyms");
    let hit = table.lookup(addr + 4).expect("address resolves");
    assert_eq!(hit.symbol.name, name);
    assert_eq!(hit.offset, 4);
    assert_eq!(hit.symbol.kind, SymbolKind::Function);
    assert_eq!(hit.symbol.module, None);
}

/// Loads `r0 = 0; exit` as a socket filter named `name` and returns its fd
/// and tag (from BPF_OBJ_GET_INFO_BY_FD), or the errno.
fn load_socket_filter(name: &str) -> Result<(libc::c_int, [u8; 8]), std::io::Error> {
    const BPF_PROG_LOAD: libc::c_long = 5;
    const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
    const BPF_PROG_TYPE_SOCKET_FILTER: u32 = 1;
    let insns: [u8; 16] = [0xb7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0];
    let license = b"GPL\0";
    // union bpf_attr for BPF_PROG_LOAD: prog_type, insn_cnt, insns, license,
    // log_level, log_size, log_buf, kern_version, prog_flags, prog_name[16].
    let mut attr = [0u8; 128];
    attr[0..4].copy_from_slice(&BPF_PROG_TYPE_SOCKET_FILTER.to_ne_bytes());
    attr[4..8].copy_from_slice(&2u32.to_ne_bytes());
    attr[8..16].copy_from_slice(&(insns.as_ptr() as u64).to_ne_bytes());
    attr[16..24].copy_from_slice(&(license.as_ptr() as u64).to_ne_bytes());
    attr[48..48 + name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: attr and the buffers it points to outlive the call.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, BPF_PROG_LOAD, attr.as_ptr(), attr.len()) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let fd = fd as libc::c_int;
    // struct bpf_prog_info begins with type, id, tag[8].
    let mut info = [0u8; 16];
    let mut attr = [0u8; 16];
    attr[0..4].copy_from_slice(&(fd as u32).to_ne_bytes());
    attr[4..8].copy_from_slice(&(info.len() as u32).to_ne_bytes());
    attr[8..16].copy_from_slice(&(info.as_mut_ptr() as u64).to_ne_bytes());
    // SAFETY: as above; the kernel writes at most info_len bytes into info.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_OBJ_GET_INFO_BY_FD,
            attr.as_ptr(),
            attr.len(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut tag = [0u8; 8];
    tag.copy_from_slice(&info[8..16]);
    Ok((fd, tag))
}

/// Oracle: the kernel's own tag for the program we load (bpf_prog_info).
#[test]
fn bpf_program_is_recognised_in_bpf_pseudo_module() {
    let Some(()) = testkit::kernel_tier("loads a BPF program into the running kernel (root, bpf)")
    else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("loading a BPF program needs root");
    }
    let jit_kallsyms =
        std::fs::read_to_string("/proc/sys/net/core/bpf_jit_kallsyms").unwrap_or_default();
    if jit_kallsyms.trim() != "1" {
        return testkit::skip(
            "net.core.bpf_jit_kallsyms is not 1: BPF programs are not in kallsyms",
        );
    }
    let name = "btfkit_ksyms_t";
    let (fd, tag) = match load_socket_filter(name) {
        Ok(x) => x,
        Err(e) => return testkit::skip(&format!("BPF_PROG_LOAD failed: {e}")),
    };
    let table = live_table();
    // SAFETY: fd is ours and closed once.
    unsafe { libc::close(fd) };
    let Some(table) = table else { return };
    let tag_hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    let symbol = format!("bpf_prog_{tag_hex}_{name}");
    let found = table
        .by_name(&symbol)
        .next()
        .unwrap_or_else(|| panic!("{symbol} not in table"));
    assert_eq!(found.module, Some("bpf"));
    assert_eq!(
        found.kind,
        SymbolKind::BpfProgram {
            tag: u64::from_be_bytes(tag)
        }
    );
    assert_eq!(found.bpf_prog_name(), Some(name));
    let hit = table
        .lookup(found.addr + 1)
        .expect("address inside the program");
    assert_eq!(hit.symbol.name, symbol);
}

/// Oracle: System.map and vmlinux's .symtab come from the same link, so the
/// KASLR offset between them is 0; a System.map shifted by hand gives the
/// shift back.
#[test]
fn kaslr_offset_of_system_map_and_elf_of_one_vmlinux() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let map = system_map::read(&k.system_map).expect("System.map");
    let elf = elf::read(&k.vmlinux).expect("vmlinux");
    assert_eq!(kaslr_offset(&map, &elf).expect("offset"), 0);

    let mut shifted = map.clone();
    shifted.relocate(0x2e00_0000);
    assert_eq!(kaslr_offset(&map, &shifted).expect("offset"), 0x2e00_0000);
    assert_eq!(kaslr_offset(&shifted, &map).expect("offset"), -0x2e00_0000);

    // Both wakeup_show instances, with the ELF's exact sizes.
    let (map, elf) = (Table::new(map), Table::new(elf));
    let from_map: Vec<u64> = map.by_name("wakeup_show").map(|s| s.addr).collect();
    let from_elf: Vec<u64> = elf.by_name("wakeup_show").map(|s| s.addr).collect();
    assert_eq!(from_map.len(), 2);
    assert_eq!(from_map, from_elf);
    assert!(elf
        .by_name("wakeup_show")
        .all(|s| s.size_source == SizeSource::Exact));
}
