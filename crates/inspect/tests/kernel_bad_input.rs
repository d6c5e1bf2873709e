//! `mod` and `log` on a corrupt kernel: a real dump of Debian's 6.1 kernel
//! seen through a memory view that changes chosen bytes (a module list
//! with a cycle or a pointer to nowhere, an empty or endless printk ring,
//! a descriptor whose text block runs past the ring or belongs to another
//! record). The part that is wrong says why; the rest still prints; no
//! panic, no hang. The oracle is the unchanged dump.

#![allow(clippy::unwrap_used)]

use inspect::commands::run_line;
use inspect::kernel::module::for_each_module;
use inspect::kernel::printk::{read_log, ring, Ring};
use inspect::kernel::structs::Struct;
use inspect::Program;
use kmem::Memory;
use testkit::dumps;

/// Memory with some bytes replaced.
struct Patched {
    inner: Box<dyn Memory>,
    patches: Vec<(u64, Vec<u8>)>,
}

impl Memory for Patched {
    fn read_phys(&self, addr: u64, buf: &mut [u8]) -> kmem::Result<()> {
        self.inner.read_phys(addr, buf)
    }
    fn read_virt(&self, addr: u64, buf: &mut [u8]) -> kmem::Result<()> {
        self.inner.read_virt(addr, buf)?;
        for (at, bytes) in &self.patches {
            for (i, b) in bytes.iter().enumerate() {
                let a = at + i as u64;
                if a >= addr && a - addr < buf.len() as u64 {
                    buf[(a - addr) as usize] = *b;
                }
            }
        }
        Ok(())
    }
}

fn open() -> Option<Program> {
    let d = dumps::dumps_or_skip()?;
    Some(
        inspect::open::open(&inspect::open::Options {
            vmcore: Some(d.kdump_zlib.clone()),
            ..Default::default()
        })
        .unwrap(),
    )
}

fn patch(prog: &mut Program, patches: Vec<(u64, Vec<u8>)>) {
    prog.map_memory(|inner| Box::new(Patched { inner, patches }));
}

fn u64_at(addr: u64, v: u64) -> (u64, Vec<u8>) {
    (addr, v.to_le_bytes().to_vec())
}

#[test]
fn module_list_with_a_cycle_or_a_bad_pointer_stops_with_the_reason() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(mut prog) = open() else { return };
    let mods = for_each_module(&prog).unwrap().modules;
    assert_eq!(mods.len(), 2);
    let list = Struct::find(&prog, "struct module")
        .unwrap()
        .offset("list")
        .unwrap();
    // The second module's next goes back to the first: a cycle without the head.
    patch(
        &mut prog,
        vec![u64_at(mods[1].addr + list, mods[0].addr + list)],
    );
    let got = for_each_module(&prog).unwrap();
    assert_eq!(got.modules.len(), 2);
    assert_eq!(got.modules[1].name, mods[1].name);
    assert!(
        got.stopped.as_deref().unwrap().contains("seen before"),
        "{:?}",
        got.stopped
    );
    let text = run_line(&mut prog, "mod").unwrap().text;
    assert!(
        text.contains(&mods[0].name) && text.contains("<module list:"),
        "{text}"
    );

    let Some(mut prog) = open() else { return };
    // The first module's next points nowhere.
    patch(
        &mut prog,
        vec![u64_at(mods[0].addr + list, 0xdead_0000_0000_0000)],
    );
    let got = for_each_module(&prog).unwrap();
    assert_eq!(got.modules[0].name, mods[0].name);
    // The entry at the bad pointer does not read, and the walk ends there.
    assert!(got.modules[1].problem.is_some(), "{:?}", got.modules);
    assert!(got.stopped.is_some());
    assert!(run_line(&mut prog, "mod").is_ok());
}

/// Where the ring header's members are: (prb, head_id, tail_id, count_bits).
fn header(prog: &Program) -> (u64, u64, u64, u64) {
    let rb = Struct::find(prog, "struct printk_ringbuffer").unwrap();
    let prb = prog.memory().read_u64(prog.symbol("prb").unwrap()).unwrap();
    (
        prb,
        prb + rb.offset("desc_ring.head_id.counter").unwrap(),
        prb + rb.offset("desc_ring.tail_id.counter").unwrap(),
        prb + rb.offset("desc_ring.count_bits").unwrap(),
    )
}

fn desc_addr(r: &Ring, id: u64) -> u64 {
    r.descs + (id & ((1 << r.count_bits) - 1)) * r.desc_size
}

#[test]
fn empty_and_endless_rings_end() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(mut prog) = open() else { return };
    let r = ring(&prog).unwrap();
    let (_, head, tail, _) = header(&prog);
    // Empty: head and tail on a slot that holds an older record.
    patch(
        &mut prog,
        vec![u64_at(head, r.head_id + 1), u64_at(tail, r.head_id + 1)],
    );
    let log = read_log(&prog).unwrap();
    assert!(log.records.is_empty() && log.stopped.is_none());
    assert_eq!(run_line(&mut prog, "log").unwrap().text, "");

    let Some(mut prog) = open() else { return };
    let before = read_log(&prog).unwrap().records.len();
    // Endless: head behind tail, never reached going forward.
    patch(&mut prog, vec![u64_at(head, r.tail_id - 1)]);
    let log = read_log(&prog).unwrap();
    assert!(log.stopped.as_deref().unwrap().contains("not reached"));
    assert_eq!(log.records.len(), before);

    let Some(mut prog) = open() else { return };
    let (_, _, _, count_bits) = header(&prog);
    patch(&mut prog, vec![(count_bits, 60u32.to_le_bytes().to_vec())]);
    let e = run_line(&mut prog, "log").err().unwrap().to_string();
    assert!(e.contains("make no ring"), "{e}");
}

#[test]
fn corrupt_descriptors_and_text_blocks_say_so_and_the_rest_prints() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(mut prog) = open() else { return };
    let want = read_log(&prog).unwrap().records;
    let r = ring(&prog).unwrap();
    let size = 1u64 << r.size_bits;
    let (bad1, bad2) = (r.tail_id + 10, r.tail_id + 20);
    let d1 = desc_addr(&r, bad1);
    let begin1 = prog.memory().read_u64(d1 + r.begin_off).unwrap();
    let d2 = desc_addr(&r, bad2);
    let begin2 = prog.memory().read_u64(d2 + r.begin_off).unwrap();
    patch(
        &mut prog,
        vec![
            // A text block longer than the ring (lpos values start at
            // -size, so they wrap as the kernel's do).
            u64_at(d1 + r.next_off, begin1.wrapping_add(2 * size)),
            // A text block that names another record.
            u64_at(r.data + (begin2 & (size - 1)), bad2 + 7),
        ],
    );
    let got = read_log(&prog).unwrap().records;
    assert_eq!(got.len(), want.len());
    let problems: Vec<(u64, String)> = got
        .iter()
        .filter_map(|r| Some((r.seq, r.problem.clone()?)))
        .collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].1.contains("does not fit"), "{problems:?}");
    assert!(
        problems[1].1.contains("belongs to descriptor"),
        "{problems:?}"
    );
    for (g, w) in got.iter().zip(&want) {
        if g.problem.is_none() {
            assert_eq!(g.text, w.text);
        }
    }
    let text = run_line(&mut prog, "log").unwrap().text;
    assert_eq!(text.matches("<record ").count(), 2, "{text}");
}
