//! `struct perf_event_attr` (include/uapi/linux/perf_event.h): what an event
//! counts and which fields its records carry. Only the fields this crate uses
//! are decoded; the attr grows over kernel versions, so `size` says how much
//! of it a file holds and missing fields read as zero.

use crate::bytes::{u32_at, u64_at};
use crate::error::{Error, Result};

/// PERF_TYPE_SOFTWARE.
pub const TYPE_SOFTWARE: u32 = 1;
/// PERF_COUNT_SW_DUMMY: counts nothing, carries side-band records.
pub const COUNT_SW_DUMMY: u64 = 9;

/// The bits of `sample_type`, in the order their fields appear in a sample.
pub mod sample {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const IDENTIFIER: u64 = 1 << 16;
}

/// The bits of `read_format`.
pub mod read_format {
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const ID: u64 = 1 << 2;
    pub const GROUP: u64 = 1 << 3;
    pub const LOST: u64 = 1 << 4;
}

/// Bit numbers in the flags word (offset 40) of perf_event_attr.
pub mod flag {
    pub const DISABLED: u32 = 0;
    pub const MMAP: u32 = 8;
    pub const COMM: u32 = 9;
    pub const FREQ: u32 = 10;
    pub const WATERMARK: u32 = 14;
    pub const SAMPLE_ID_ALL: u32 = 18;
    pub const MMAP2: u32 = 23;
    pub const KSYMBOL: u32 = 29;
    pub const BPF_EVENT: u32 = 30;
}

/// PERF_ATTR_SIZE_VER0: type through config1, the smallest attr there is.
pub const ATTR_SIZE_VER0: usize = 64;
/// The attr size this crate writes (PERF_ATTR_SIZE_VER8).
pub const ATTR_SIZE: usize = 136;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventAttr {
    pub kind: u32,
    /// The size the attr claims for itself.
    pub size: u32,
    pub config: u64,
    /// sample_period, or sample_freq when the [`flag::FREQ`] bit of `flags` is set.
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    /// The bit-field word: disabled, inherit, ..., sample_id_all, ksymbol...
    pub flags: u64,
    /// wakeup_events, or wakeup_watermark when the watermark flag is set.
    pub wakeup: u32,
}

impl EventAttr {
    /// Decodes an attr from `b` (as many bytes as the file gives it);
    /// `offset` is where `b` starts, for errors.
    pub fn parse(b: &[u8], offset: u64) -> Result<EventAttr> {
        if b.len() < ATTR_SIZE_VER0 {
            return Err(Error::BadAttr {
                offset,
                reason: format!(
                    "{} bytes, smaller than the first attr layout ({ATTR_SIZE_VER0})",
                    b.len()
                ),
            });
        }
        let field32 = |off| u32_at(b, off).unwrap_or(0);
        let field64 = |off| u64_at(b, off).unwrap_or(0);
        Ok(EventAttr {
            kind: field32(0),
            size: field32(4),
            config: field64(8),
            sample_period: field64(16),
            sample_type: field64(24),
            read_format: field64(32),
            flags: field64(40),
            wakeup: field32(48),
        })
    }

    /// The attr in the kernel's layout, [`ATTR_SIZE`] bytes, for
    /// perf_event_open and for writing test files.
    pub fn to_bytes(&self) -> [u8; ATTR_SIZE] {
        let mut b = [0u8; ATTR_SIZE];
        let mut put = |off: usize, v: &[u8]| {
            if let Some(dst) = b.get_mut(off..off + v.len()) {
                dst.copy_from_slice(v);
            }
        };
        put(0, &self.kind.to_le_bytes());
        put(4, &self.size.to_le_bytes());
        put(8, &self.config.to_le_bytes());
        put(16, &self.sample_period.to_le_bytes());
        put(24, &self.sample_type.to_le_bytes());
        put(32, &self.read_format.to_le_bytes());
        put(40, &self.flags.to_le_bytes());
        put(48, &self.wakeup.to_le_bytes());
        b
    }

    pub fn flag(&self, bit: u32) -> bool {
        self.flags & (1 << bit) != 0
    }

    pub fn set_flag(&mut self, bit: u32, on: bool) {
        if on {
            self.flags |= 1 << bit;
        } else {
            self.flags &= !(1 << bit);
        }
    }

    /// Non-sample records carry a sample_id trailer.
    pub fn sample_id_all(&self) -> bool {
        self.flag(flag::SAMPLE_ID_ALL)
    }

    pub fn has(&self, sample_bit: u64) -> bool {
        self.sample_type & sample_bit != 0
    }

    /// The length of the sample_id trailer of non-sample records, 0 without
    /// sample_id_all: TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER, 8 bytes each.
    pub fn sample_id_len(&self) -> usize {
        if !self.sample_id_all() {
            return 0;
        }
        [
            sample::TID,
            sample::TIME,
            sample::ID,
            sample::STREAM_ID,
            sample::CPU,
            sample::IDENTIFIER,
        ]
        .iter()
        .filter(|&&bit| self.has(bit))
        .count()
            * 8
    }

    /// The size of a `struct read_format` for this attr's read_format.
    /// `nr` is the group size read from the sample (GROUP only).
    pub(crate) fn read_format_len(&self, nr: u64) -> Option<usize> {
        let rf = self.read_format;
        let per_value = 8
            + if rf & read_format::ID != 0 { 8 } else { 0 }
            + if rf & read_format::LOST != 0 { 8 } else { 0 };
        let times = (rf & read_format::TOTAL_TIME_ENABLED != 0) as usize * 8
            + (rf & read_format::TOTAL_TIME_RUNNING != 0) as usize * 8;
        if rf & read_format::GROUP != 0 {
            let values = usize::try_from(nr).ok()?.checked_mul(per_value)?;
            values.checked_add(8 + times)
        } else {
            Some(per_value + times)
        }
    }
}

/// One attr of a perf.data file and the ids of the kernel events opened
/// with it (one per CPU or thread).
#[derive(Clone, Debug, Default)]
pub struct AttrEntry {
    pub attr: EventAttr,
    pub ids: Vec<u64>,
}

/// The attrs of a file: which layout a record has depends on the attr of
/// the event that wrote it, found through the record's sample id.
#[derive(Clone, Debug, Default)]
pub struct Attrs {
    entries: Vec<AttrEntry>,
    by_id: rustc_hash::FxHashMap<u64, usize>,
}

impl Attrs {
    pub fn new() -> Attrs {
        Attrs::default()
    }

    /// A single attr, as a live listener has.
    pub fn single(attr: EventAttr) -> Attrs {
        let mut a = Attrs::new();
        a.push(attr, Vec::new());
        a
    }

    pub fn push(&mut self, attr: EventAttr, ids: Vec<u64>) {
        let index = self.entries.len();
        for &id in &ids {
            self.by_id.insert(id, index);
        }
        self.entries.push(AttrEntry { attr, ids });
    }

    pub fn entries(&self) -> &[AttrEntry] {
        &self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn by_id(&self, id: u64) -> Option<&EventAttr> {
        self.by_id
            .get(&id)
            .and_then(|&i| self.entries.get(i))
            .map(|e| &e.attr)
    }

    fn first(&self) -> Option<&EventAttr> {
        self.entries.first().map(|e| &e.attr)
    }

    /// All attrs lay out samples and trailers alike (perf record's usual
    /// case): then any of them describes every record.
    fn uniform(&self) -> bool {
        let mut it = self.entries.iter().map(|e| &e.attr);
        let Some(first) = it.next() else { return true };
        it.all(|a| {
            a.sample_type == first.sample_type
                && a.sample_id_all() == first.sample_id_all()
                && a.read_format == first.read_format
        })
    }

    /// The attr of a SAMPLE record (`rec` includes the header). With
    /// several layouts only PERF_SAMPLE_IDENTIFIER, the first field, can say
    /// which attr it is; without it the first attr is the best guess.
    pub(crate) fn for_sample(&self, rec: &[u8]) -> Option<&EventAttr> {
        if self.uniform() {
            return self.first();
        }
        if self.entries.iter().all(|e| e.attr.has(sample::IDENTIFIER)) {
            if let Some(a) = u64_at(rec, 8).and_then(|id| self.by_id(id)) {
                return Some(a);
            }
        }
        self.first()
    }

    /// The attr whose sample_id trailer follows a non-sample record whose
    /// body ends at `body_end`. The trailer is read forward from there, never
    /// backward from the record's size (Linux 6.18 can inflate the size), so
    /// with several layouts each candidate is tried: its trailer's last field,
    /// the IDENTIFIER, must name an event of that same layout.
    pub(crate) fn for_trailer(&self, rec: &[u8], body_end: usize) -> Option<&EventAttr> {
        if self.uniform() {
            return self.first();
        }
        self.entries
            .iter()
            .map(|e| &e.attr)
            .filter(|a| a.sample_id_all() && a.has(sample::IDENTIFIER))
            .find(|a| {
                let Some(id_off) = body_end.checked_add(a.sample_id_len() - 8) else {
                    return false;
                };
                u64_at(rec, id_off)
                    .and_then(|id| self.by_id(id))
                    .is_some_and(|owner| owner.sample_type == a.sample_type)
            })
            .or_else(|| self.first())
    }
}
