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
    /// PERF_SAMPLE_IP: the instruction pointer.
    pub const IP: u64 = 1 << 0;
    /// PERF_SAMPLE_TID: pid and tid, two `u32`.
    pub const TID: u64 = 1 << 1;
    /// PERF_SAMPLE_TIME: the timestamp, in nanoseconds of the perf clock.
    pub const TIME: u64 = 1 << 2;
    /// PERF_SAMPLE_ADDR: the data address of the event.
    pub const ADDR: u64 = 1 << 3;
    /// PERF_SAMPLE_READ: counter values, laid out as `read_format` says.
    pub const READ: u64 = 1 << 4;
    /// PERF_SAMPLE_CALLCHAIN: a count and that many return addresses.
    pub const CALLCHAIN: u64 = 1 << 5;
    /// PERF_SAMPLE_ID: the event id (see [`Attrs::by_id`](super::Attrs::by_id)).
    pub const ID: u64 = 1 << 6;
    /// PERF_SAMPLE_CPU: the CPU and a reserved `u32`.
    pub const CPU: u64 = 1 << 7;
    /// PERF_SAMPLE_PERIOD: the sample period.
    pub const PERIOD: u64 = 1 << 8;
    /// PERF_SAMPLE_STREAM_ID: the id of the event that was inherited from.
    pub const STREAM_ID: u64 = 1 << 9;
    /// PERF_SAMPLE_IDENTIFIER: the id again, at a fixed place (first in a sample, last in a trailer).
    pub const IDENTIFIER: u64 = 1 << 16;
}

/// The bits of `read_format`.
pub mod read_format {
    /// PERF_FORMAT_TOTAL_TIME_ENABLED: the time enabled, in nanoseconds.
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    /// PERF_FORMAT_TOTAL_TIME_RUNNING: the time running, in nanoseconds.
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    /// PERF_FORMAT_ID: each value is followed by its event id.
    pub const ID: u64 = 1 << 2;
    /// PERF_FORMAT_GROUP: the values of the whole group, after their count.
    pub const GROUP: u64 = 1 << 3;
    /// PERF_FORMAT_LOST: each value is followed by its lost-sample count.
    pub const LOST: u64 = 1 << 4;
}

/// Bit numbers in the flags word (offset 40) of perf_event_attr.
pub mod flag {
    /// `disabled`: the event starts off.
    pub const DISABLED: u32 = 0;
    /// `mmap`: emit PERF_RECORD_MMAP for executable mappings.
    pub const MMAP: u32 = 8;
    /// `comm`: emit PERF_RECORD_COMM when a task changes its name.
    pub const COMM: u32 = 9;
    /// `freq`: `sample_period` is a frequency in Hz.
    pub const FREQ: u32 = 10;
    /// `watermark`: `wakeup` counts bytes, not events.
    pub const WATERMARK: u32 = 14;
    /// `sample_id_all`: non-sample records carry a sample_id trailer.
    pub const SAMPLE_ID_ALL: u32 = 18;
    /// `mmap2`: emit PERF_RECORD_MMAP2 instead of MMAP.
    pub const MMAP2: u32 = 23;
    /// `ksymbol`: emit PERF_RECORD_KSYMBOL when kernel text comes or goes.
    pub const KSYMBOL: u32 = 29;
    /// `bpf_event`: emit PERF_RECORD_BPF_EVENT on BPF program load and unload.
    pub const BPF_EVENT: u32 = 30;
}

/// PERF_ATTR_SIZE_VER0: type through config1, the smallest attr there is.
pub const ATTR_SIZE_VER0: usize = 64;
/// The attr size this crate writes (PERF_ATTR_SIZE_VER8).
pub const ATTR_SIZE: usize = 136;

/// The decoded fields of a `perf_event_attr`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventAttr {
    /// `type`: PERF_TYPE_HARDWARE, [`TYPE_SOFTWARE`], ...
    pub kind: u32,
    /// The size the attr claims for itself, in bytes.
    pub size: u32,
    /// `config`: which event of the type ([`COUNT_SW_DUMMY`], ...).
    pub config: u64,
    /// sample_period, or sample_freq when the [`flag::FREQ`] bit of `flags` is set.
    pub sample_period: u64,
    /// Which fields a sample carries: [`sample`] bits.
    pub sample_type: u64,
    /// What a counter read holds: [`read_format`](mod@read_format) bits.
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

    /// Whether the bit numbered `bit` ([`flag`](mod@flag)) of `flags` is set.
    pub fn flag(&self, bit: u32) -> bool {
        self.flags & (1 << bit) != 0
    }

    /// Sets or clears the bit numbered `bit` ([`flag`](mod@flag)) of `flags`.
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

    /// Whether `sample_type` has the [`sample`] bit `sample_bit`.
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
    /// The attr.
    pub attr: EventAttr,
    /// The ids that samples and trailers carry (PERF_SAMPLE_ID, IDENTIFIER).
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
    /// No attr.
    pub fn new() -> Attrs {
        Attrs::default()
    }

    /// A single attr, as a live listener has.
    pub fn single(attr: EventAttr) -> Attrs {
        let mut a = Attrs::new();
        a.push(attr, Vec::new());
        a
    }

    /// Adds an attr and the ids of its events.
    pub fn push(&mut self, attr: EventAttr, ids: Vec<u64>) {
        let index = self.entries.len();
        for &id in &ids {
            self.by_id.insert(id, index);
        }
        self.entries.push(AttrEntry { attr, ids });
    }

    /// The attrs in file order.
    pub fn entries(&self) -> &[AttrEntry] {
        &self.entries
    }

    /// True when there is no attr (pipe data before its ATTR records).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The attr of the event with this id.
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
