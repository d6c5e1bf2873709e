//! Arbitrary bytes as kernel memory holding the kallsyms tables: the first
//! 40 bytes place the tables in it, the reader must not panic or allocate
//! without bound.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common/flat.rs"]
mod flat;

const BASE: u64 = 0xffff_ffff_8100_0000;

fuzz_target!(|data: &[u8]| {
    if data.len() < 40 {
        return;
    }
    let at = |i: usize| BASE + u64::from(u16::from_le_bytes([data[i], data[i + 1]]));
    let flags = data[12];
    let t = kmem::kallsyms::Tables {
        names: at(0),
        num_syms: at(2),
        token_table: at(4),
        token_index: at(6),
        addresses: (flags & 1 != 0).then(|| at(8)),
        offsets: (flags & 1 == 0).then(|| at(8)),
        relative_base: (flags & 2 == 0).then(|| at(10)),
    };
    let _ = kmem::kallsyms::read(
        &flat::Flat {
            base: BASE,
            bytes: data,
        },
        &t,
    );
});
