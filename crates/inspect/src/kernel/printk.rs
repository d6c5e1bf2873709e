//! The kernel log: the printk ring buffer of Linux 5.10+ (the lockless
//! `struct printk_ringbuffer`, kernel/printk/printk_ringbuffer.c), read
//! from memory.
//!
//! `prb` points at the ring. Its descriptor ring holds `1 << count_bits`
//! descriptors (`descs`) and as many `printk_info`s (`infos`); a record's
//! id picks slot `id & mask`, and its `state_var` holds the id it belongs
//! to and its state in the top two bits. Records run from `tail_id` to
//! `head_id`. A record's text is a block of the text data ring between
//! logical positions `begin` and `next`: the block starts with the
//! record's id (an unsigned long) and the text follows. A block that would
//! cross the ring's end is written at the ring's start instead: then
//! `next`'s wrap count (lpos >> size_bits) is one more than `begin`'s and
//! the block is `data[0 .. next & mask]`. Continuation lines (KERN_CONT)
//! are appended to their record by the kernel, so one record is one line.
//!
//! Invariant of the walk: it visits ids from tail to head once each, at
//! most `1 << count_bits` of them, so a corrupt ring ends instead of
//! looping; a record that does not read says why, and the walk goes on.

use crate::error::{Error, Result};
use crate::kernel::structs::{self, Struct};
use crate::program::Program;

/// `desc_committed` and `desc_finalized` of `enum desc_state`: readable
/// records (a committed one may still be extended, drgn shows it too).
const DESC_COMMITTED: u64 = 1;
const DESC_FINALIZED: u64 = 2;
/// Rings larger than this are corrupt (the kernel's maximum LOG_BUF_SHIFT is 25).
const MAX_COUNT_BITS: u64 = 28;
const MAX_SIZE_BITS: u64 = 34;
/// `info->flags` bit of a record that continues the previous line.
const LOG_CONT: u64 = 8;
/// Bytes of the id at the start of a text block (unsigned long).
const BLOCK_ID: u64 = 8;

/// One record of the log, from its `printk_info` and its text block.
#[derive(Clone, Debug, Default)]
pub struct Record {
    /// `info->seq`: the record's sequence number, counted from 0 at boot.
    pub seq: u64,
    /// `info->ts_nsec`: when it was logged, in nanoseconds of the local
    /// clock since boot.
    pub ts_nsec: u64,
    /// `info->level`: its log level, 0 (KERN_EMERG) to 7 (KERN_DEBUG).
    pub level: u8,
    /// `info->facility`: syslog's facility (0: the kernel's own).
    pub facility: u8,
    /// `info->caller_id`: a task id, or a CPU with the top bit set.
    pub caller_id: u32,
    /// LOG_CONT in `info->flags`: it continues the previous record's line.
    pub continuation: bool,
    /// The text, without a newline (bytes that are not UTF-8 replaced).
    pub text: String,
    /// Why this record's text is missing or cut (the rest of it is shown).
    pub problem: Option<String>,
}

impl Record {
    /// The caller as the kernel prints it with CONFIG_PRINTK_CALLER: `T<tid>` or `C<cpu>`.
    pub fn caller(&self) -> String {
        if self.caller_id & 0x8000_0000 != 0 {
            format!("C{}", self.caller_id & 0x7fff_ffff)
        } else {
            format!("T{}", self.caller_id)
        }
    }
}

/// The records of the ring in order, and why the walk stopped early if it did.
pub struct Log {
    /// The readable records, oldest first.
    pub records: Vec<Record>,
    /// Why the walk stopped before the head (None: it did not).
    pub stopped: Option<String>,
}

/// The ring's header values and the layouts of its descriptors and
/// infos (byte offsets; bitfields as bit offset and width), from the BTF.
#[derive(Clone, Debug)]
pub struct Ring {
    /// `desc_ring.descs`: the address of the descriptor array.
    pub descs: u64,
    /// `desc_ring.infos`: the address of the `printk_info` array.
    pub infos: u64,
    /// `desc_ring.count_bits`: the rings hold `1 << count_bits` records.
    pub count_bits: u64,
    /// `desc_ring.head_id`: the newest record's id.
    pub head_id: u64,
    /// `desc_ring.tail_id`: the oldest record's id.
    pub tail_id: u64,
    /// `text_data_ring.data`: the address of the text data ring.
    pub data: u64,
    /// `text_data_ring.size_bits`: the text ring is `1 << size_bits` bytes.
    pub size_bits: u64,
    /// Size of a `struct prb_desc` in bytes.
    pub desc_size: u64,
    /// Size of a `struct printk_info` in bytes.
    pub info_size: u64,
    /// Offset of `state_var.counter` in a `prb_desc`.
    pub state_off: u64,
    /// Offset of `text_blk_lpos.begin` in a `prb_desc`.
    pub begin_off: u64,
    /// Offset of `text_blk_lpos.next` in a `prb_desc`.
    pub next_off: u64,
    /// Offset of `seq` in a `printk_info`.
    pub seq: u64,
    /// Offset of `ts_nsec` in a `printk_info`.
    pub ts: u64,
    /// Offset of `text_len` (16 bits) in a `printk_info`.
    pub text_len: u64,
    /// Offset of `facility` (8 bits) in a `printk_info`.
    pub facility: u64,
    /// The `flags` bitfield of a `printk_info`: bit offset and width.
    pub flags: (u64, u32),
    /// The `level` bitfield of a `printk_info`: bit offset and width.
    pub level: (u64, u32),
    /// Offset of `caller_id` (32 bits) in a `printk_info`.
    pub caller: u64,
}

/// The kernel's ring (`*prb`) and its layouts.
pub fn ring(prog: &Program) -> Result<Ring> {
    let mem = prog.memory();
    let prb_sym = prog
        .symbol("prb")
        .or_else(|| prog.var("prb").map(|v| v.addr))
        .ok_or_else(|| {
            Error::NoSymbol("prb (the kernel log of Linux 5.10+ is a printk_ringbuffer)".into())
        })?;
    let prb = structs::read_u64(mem, "prb", prb_sym)?;
    let rb = Struct::find(prog, "struct printk_ringbuffer")?;
    let desc = Struct::find(prog, "struct prb_desc")?;
    let info = Struct::find(prog, "struct printk_info")?;
    let raw = structs::read(
        mem,
        "struct printk_ringbuffer",
        prb,
        usize::try_from(rb.size()).unwrap_or(0),
    )?;
    let r = Ring {
        count_bits: structs::field(&raw, rb.offset("desc_ring.count_bits")?, 4),
        descs: structs::field(&raw, rb.offset("desc_ring.descs")?, 8),
        infos: structs::field(&raw, rb.offset("desc_ring.infos")?, 8),
        head_id: structs::field(&raw, rb.offset("desc_ring.head_id.counter")?, 8),
        tail_id: structs::field(&raw, rb.offset("desc_ring.tail_id.counter")?, 8),
        size_bits: structs::field(&raw, rb.offset("text_data_ring.size_bits")?, 4),
        data: structs::field(&raw, rb.offset("text_data_ring.data")?, 8),
        desc_size: desc.size(),
        info_size: info.size(),
        state_off: desc.offset("state_var.counter")?,
        begin_off: desc.offset("text_blk_lpos.begin")?,
        next_off: desc.offset("text_blk_lpos.next")?,
        seq: info.offset("seq")?,
        ts: info.offset("ts_nsec")?,
        text_len: info.offset("text_len")?,
        facility: info.offset("facility")?,
        flags: info.bits("flags")?,
        level: info.bits("level")?,
        caller: info.offset("caller_id")?,
    };
    match no_ring(&r) {
        Some(why) => Err(Error::Corrupt(format!(
            "printk_ringbuffer at {prb:#x}: {why}"
        ))),
        None => Ok(r),
    }
}

/// Why the sizes of a ring make none, if they do not.
fn no_ring(r: &Ring) -> Option<String> {
    if r.count_bits > MAX_COUNT_BITS || r.size_bits > MAX_SIZE_BITS || r.size_bits < 4 {
        return Some(format!(
            "count_bits {} and size_bits {} make no ring",
            r.count_bits, r.size_bits
        ));
    }
    if r.desc_size == 0 || r.info_size == 0 || r.desc_size > 4096 || r.info_size > 4096 {
        return Some(format!(
            "descriptors of {} bytes and infos of {} make no ring",
            r.desc_size, r.info_size
        ));
    }
    None
}

/// The records of the kernel log, oldest first.
pub fn read_log(prog: &Program) -> Result<Log> {
    read_ring(prog.memory(), &ring(prog)?)
}

/// The records of a ring in `mem`, oldest first.
pub fn read_ring(mem: &dyn kmem::Memory, r: &Ring) -> Result<Log> {
    if let Some(why) = no_ring(r) {
        return Err(Error::Corrupt(why));
    }
    // state_var: the id in the low 62 bits, the state in the top two.
    let flags_shift = 62;
    let id_mask = (1u64 << flags_shift) - 1;
    let count = 1u64 << r.count_bits;
    let mut records = Vec::new();
    let mut stopped = None;
    let mut id = r.tail_id & id_mask;
    let head = r.head_id & id_mask;
    let mut visited = 0u64;
    loop {
        if visited >= count {
            stopped = Some(format!(
                "head_id {head} not reached from tail_id {} in {count} descriptors",
                r.tail_id & id_mask
            ));
            break;
        }
        visited += 1;
        if let Some(rec) = record(mem, r, id, flags_shift) {
            records.push(rec);
        }
        if id == head {
            break;
        }
        id = (id + 1) & id_mask;
    }
    Ok(Log { records, stopped })
}

/// One record by id: None for a slot that holds no readable record (being
/// written, reused, or of another id), a record with `problem` when its
/// descriptor reads but its text does not.
fn record(mem: &dyn kmem::Memory, r: &Ring, id: u64, flags_shift: u32) -> Option<Record> {
    let slot = id & ((1u64 << r.count_bits) - 1);
    let daddr = r.descs.wrapping_add(slot.wrapping_mul(r.desc_size));
    let problem = |msg: String| Record {
        problem: Some(msg),
        ..Record::default()
    };
    let desc = match structs::read(mem, "prb_desc", daddr, r.desc_size as usize) {
        Ok(d) => d,
        Err(e) => return Some(problem(format!("descriptor {id}: {e}"))),
    };
    let state_var = structs::field(&desc, r.state_off, 8);
    let state = state_var >> flags_shift;
    if state_var & ((1u64 << flags_shift) - 1) != id
        || !(state == DESC_COMMITTED || state == DESC_FINALIZED)
    {
        return None;
    }
    let iaddr = r.infos.wrapping_add(slot.wrapping_mul(r.info_size));
    let info = match structs::read(mem, "printk_info", iaddr, r.info_size as usize) {
        Ok(i) => i,
        Err(e) => return Some(problem(format!("descriptor {id}: {e}"))),
    };
    let mut rec = Record {
        seq: structs::field(&info, r.seq, 8),
        ts_nsec: structs::field(&info, r.ts, 8),
        level: structs::bitfield(&info, r.level) as u8,
        facility: structs::field(&info, r.facility, 1) as u8,
        caller_id: structs::field(&info, r.caller, 4) as u32,
        continuation: structs::bitfield(&info, r.flags) & LOG_CONT != 0,
        text: String::new(),
        problem: None,
    };
    let text_len = structs::field(&info, r.text_len, 2);
    let begin = structs::field(&desc, r.begin_off, 8);
    let next = structs::field(&desc, r.next_off, 8);
    match text(mem, r, id, begin, next, text_len) {
        Ok(t) => rec.text = t,
        Err(e) => rec.problem = Some(format!("record {}: {e}", rec.seq)),
    }
    Some(rec)
}

/// The text of the block `[begin, next)` of the data ring for record `id`.
fn text(
    mem: &dyn kmem::Memory,
    r: &Ring,
    id: u64,
    begin: u64,
    next: u64,
    len: u64,
) -> Result<String> {
    // Both positions odd: a record without data (an empty line, or text that was lost).
    if begin & 1 == 1 && next & 1 == 1 {
        return if len == 0 {
            Ok(String::new())
        } else {
            Err(Error::Corrupt(format!(
                "its {len} bytes of text were not stored (lpos {begin:#x})"
            )))
        };
    }
    let size = 1u64 << r.size_bits;
    let mask = size - 1;
    let (wraps_b, wraps_n) = (begin >> r.size_bits, next >> r.size_bits);
    let (start, block) = if wraps_b == wraps_n && next > begin {
        (begin & mask, next - begin)
    } else if wraps_b.wrapping_add(1) == wraps_n && next & mask > 0 {
        (0, next & mask)
    } else {
        return Err(Error::Corrupt(format!(
            "text block [{begin:#x}, {next:#x}) does not fit a ring of {size} bytes"
        )));
    };
    if block < BLOCK_ID || start + block > size {
        return Err(Error::Corrupt(format!(
            "text block [{begin:#x}, {next:#x}) runs past the ring of {size} bytes"
        )));
    }
    let at = r.data.wrapping_add(start);
    // The id and at most the text (text_len is 16 bits): never the whole block.
    let n = len.min(block - BLOCK_ID);
    let bytes = structs::read(mem, "text block", at, (BLOCK_ID + n) as usize)?;
    let owner = structs::field(&bytes, 0, 8);
    if owner != id {
        return Err(Error::Corrupt(format!(
            "text block at {at:#x} belongs to descriptor id {owner}, not {id}"
        )));
    }
    let t = bytes.get(BLOCK_ID as usize..).unwrap_or(&[]);
    Ok(String::from_utf8_lossy(t).into_owned())
}

/// A record as dmesg and drgn's get_dmesg() print it: `[    1.234567] text`.
pub fn line(rec: &Record) -> String {
    format!(
        "[{:5}.{:06}] {}",
        rec.ts_nsec / 1_000_000_000,
        rec.ts_nsec % 1_000_000_000 / 1000,
        rec.text
    )
}
