//! The printk ring reader over a fuzzed memory image: the first bytes
//! give the ring's header (sizes, head and tail ids, where descriptors,
//! infos and text are), the rest is memory at a fixed address; the layout
//! is Linux 6.1's. The reader must end with records or an error, never
//! panic, allocate without bound or loop for long.
#![no_main]
use inspect::kernel::printk::{read_ring, Ring};
use libfuzzer_sys::fuzz_target;

#[path = "common/flat.rs"]
mod flat;

const BASE: u64 = 0xffff_8880_0000_0000;
const HEADER: usize = 24;

fn u64_at(d: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[at..at + 8]);
    u64::from_le_bytes(b)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < HEADER {
        return;
    }
    let (h, image) = data.split_at(HEADER);
    let off = |i: usize| BASE + u64::from(u16::from_le_bytes([h[i], h[i + 1]]));
    let r = Ring {
        // Small rings only: the walk is bounded by the descriptor count.
        count_bits: u64::from(h[0] % 12),
        size_bits: u64::from(h[1] % 20),
        descs: off(2),
        infos: off(4),
        data: off(6),
        head_id: u64_at(h, 8),
        tail_id: u64_at(h, 16),
        desc_size: 24,
        info_size: 88,
        state_off: 0,
        begin_off: 8,
        next_off: 16,
        seq: 0,
        ts: 8,
        text_len: 16,
        facility: 18,
        flags: (19 * 8, 5),
        level: (19 * 8 + 5, 3),
        caller: 20,
    };
    if let Ok(log) = read_ring(
        &flat::Flat {
            base: BASE,
            bytes: image,
        },
        &r,
    ) {
        for rec in &log.records {
            let _ = inspect::kernel::printk::line(rec);
        }
    }
});
