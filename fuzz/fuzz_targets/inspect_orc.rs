//! The ORC unwinder over a fuzzed memory image: kernel text, an ORC ip
//! table, ORC entries and a stack all come from the input, as do the
//! starting registers. Each unwind must end (a frame bound, a direction
//! check) with frames and a reason, never panic or loop. The layout is
//! compact (text, tables, lookup and stack in the first KiB) so that short
//! inputs reach every part.
#![no_main]
use std::path::Path;

use inspect::unwind::{orc, registers, unwind, Stacks};
use kmem::Memory;
use libfuzzer_sys::fuzz_target;

const BASE: u64 = 0xffff_ffff_8100_0000;
const IP_TABLE: u64 = BASE + 0x100;
const ENTRIES: u64 = BASE + 0x180;
const STACK: u64 = BASE + 0x200;

/// The input as memory at BASE; anything else is unmapped.
struct Image(Vec<u8>);

impl Memory for Image {
    fn read_phys(&self, addr: u64, _: &mut [u8]) -> kmem::Result<()> {
        Err(kmem::Error::PhysMissing(addr))
    }
    fn read_virt(&self, addr: u64, buf: &mut [u8]) -> kmem::Result<()> {
        let off = addr.wrapping_sub(BASE) as usize;
        match self.0.get(off..off.saturating_add(buf.len())) {
            Some(b) if off < self.0.len() => {
                buf.copy_from_slice(b);
                Ok(())
            }
            _ => Err(kmem::Error::PhysMissing(addr)),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 32 {
        return;
    }
    let word = |i: usize| u64::from_le_bytes(data[i..i + 8].try_into().unwrap_or([0; 8]));
    let entries = u64::from(data[24] % 32) + 1;
    let format = match data[25] % 3 {
        0 => orc::Format::V1,
        1 => orc::Format::V2,
        _ => orc::Format::V3,
    };
    let image = data[32..].to_vec();
    let kallsyms = format!(
        "{BASE:016x} T _stext\n{:016x} T f1\n{IP_TABLE:016x} D __start_orc_unwind_ip\n\
         {:016x} D __stop_orc_unwind_ip\n{ENTRIES:016x} D __start_orc_unwind\n\
         {:016x} T _etext\n{:016x} D orc_lookup\n{:016x} D lookup_num_blocks\n",
        BASE + 0x10,
        IP_TABLE + entries * 4,
        BASE + 0x100,
        BASE + 0x1e0,
        BASE + 0x1f8,
    );
    let Ok(syms) = ksyms::kallsyms::parse(
        kallsyms.into_bytes(),
        Path::new("fuzz"),
        ksyms::kallsyms::Hidden::Allow,
    ) else {
        return;
    };
    let prog = inspect::Program::new(
        Box::new(Image(image)),
        btf::Btf::new(),
        ksyms::Table::new(syms),
    );
    let tables = orc::Tables::read(&prog, format, Vec::new());
    let start = registers::Start {
        ip: BASE + (word(0) & 0xff),
        sp: STACK + (word(8) & 0x1ff),
        bp: word(16),
        regs: registers::Known::None,
        signal: data[26] & 1 != 0,
        cpu: None,
    };
    let stacks = Stacks {
        task: STACK,
        irq: Vec::new(),
    };
    let trace = unwind(&prog, &tables, &stacks, start);
    assert!(trace.frames.len() <= inspect::unwind::MAX_FRAMES);
    assert!(!trace.end.why.is_empty());
});
