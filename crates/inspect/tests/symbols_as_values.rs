//! `inspect::open` passes the symbols it reads as values: kallsyms read
//! from a dump's memory go into the table without being written as
//! /proc/kallsyms text and parsed again, and a System.map is moved by
//! KERNELOFFSET in its parsed symbols rather than rewritten as text. The
//! oracle is the old path, text written and parsed: on the real dumps of
//! Debian's 6.1 kernel both give the same table (every symbol, in order,
//! with its type, size, kind and module), and the program's symbols (with
//! the modules' added) are the same whichever way the kernel's are read.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use kmem::kallsyms::Tables;
use kmem::Kernel;
use ksyms::kallsyms::{self, Hidden};
use ksyms::Table;
use testkit::dumps;

fn assert_same(values: &Table, text: &Table) {
    assert_eq!(values.len(), text.len());
    assert_eq!(values.source(), text.source());
    assert_eq!(values.addresses_hidden(), text.addresses_hidden());
    for (a, b) in values.iter().zip(text.iter()) {
        assert_eq!(a, b);
    }
}

#[test]
fn a_dump_s_kallsyms_as_values_equal_the_kallsyms_text_parsed() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    for (_, dump) in d.all() {
        let kernel = Kernel::open(dump).unwrap();
        let tables = Tables::from_vmcoreinfo(kernel.vmcoreinfo()).unwrap();
        let list = kmem::kallsyms::read(&kernel, &tables).unwrap();
        let source = dump.join("kallsyms");
        let values = Table::new(inspect::open::kernel_symbols(&list, &source).unwrap());
        let text = kmem::kallsyms::to_text(&list);
        let parsed = Table::new(kallsyms::parse(text, &source, Hidden::Allow).unwrap());
        assert!(values.len() > 50_000, "{}", values.len());
        assert_same(&values, &parsed);
    }
}

/// The old System.map path: its text moved line by line.
fn moved_as_text(text: &str, offset: u64) -> Vec<u8> {
    let percpu_end = text
        .lines()
        .find_map(|l| l.strip_suffix(" __per_cpu_end"))
        .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
        .filter(|&e| e < 0x1_0000_0000)
        .unwrap_or(0);
    let mut out = String::new();
    for line in text.lines() {
        let Some((a, rest)) = line.split_once(' ') else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(a, 16) else {
            continue;
        };
        let addr = if addr < percpu_end {
            addr
        } else {
            addr.wrapping_add(offset)
        };
        out.push_str(&format!("{addr:016x} {rest}\n"));
    }
    out.into_bytes()
}

#[test]
fn debian_s_system_map_moved_as_values_equals_the_moved_text_and_the_dump_s_kallsyms() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let map = &d.kernel.system_map;
    let kernel = Kernel::open(&d.elf).unwrap();
    let offset = kernel.vmcoreinfo().kernel_offset().unwrap();
    assert_ne!(offset, 0, "a KASLR kernel");
    let mut syms = ksyms::system_map::read(map).unwrap();
    inspect::open::relocate_system_map(&mut syms, offset);
    let values = Table::new(syms);
    let text = std::fs::read_to_string(map).unwrap();
    let parsed =
        Table::new(kallsyms::parse(moved_as_text(&text, offset), map, Hidden::Error).unwrap());
    assert_same(&values, &parsed);

    // Moved, System.map says what the dump's own kallsyms say of each
    // function (kallsyms lists fewer: no absolute or local data symbols
    // of some kinds).
    let tables = Tables::from_vmcoreinfo(kernel.vmcoreinfo()).unwrap();
    let list = kmem::kallsyms::read(&kernel, &tables).unwrap();
    let mut checked = 0;
    for s in list.iter().filter(|s| s.type_char == b'T').step_by(97) {
        let found: Vec<u64> = values.by_name(&s.name).map(|m| m.addr).collect();
        assert!(
            found.contains(&s.addr),
            "{} at {:#x}: {found:x?}",
            s.name,
            s.addr
        );
        checked += 1;
    }
    assert!(checked > 100, "{checked}");
    // Per-CPU symbols stay offsets.
    let runqueues = values.by_name("runqueues").next().unwrap();
    assert!(runqueues.addr < 0x1_0000_0000, "{:#x}", runqueues.addr);
}

/// `inspect` with `--kallsyms System.map` and with the dump's own tables
/// gives the same values of symbols.
#[test]
fn inspect_over_system_map_or_the_dump_s_kallsyms_gives_the_same_program_symbols() {
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let open = |kallsyms: Option<&Path>| {
        inspect::open::open(&inspect::open::Options {
            vmcore: Some(d.kdump_zlib.clone()),
            kallsyms: kallsyms.map(Path::to_owned),
            ..Default::default()
        })
        .unwrap()
    };
    let own = open(None);
    let map = open(Some(&d.kernel.system_map));
    for name in ["schedule", "init_task", "jiffies_64", "runqueues", "_stext"] {
        assert_eq!(own.symbol(name), map.symbol(name), "{name}");
        assert!(own.symbol(name).is_some(), "{name}");
    }
}
