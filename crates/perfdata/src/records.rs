//! Records: `struct perf_event_header` followed by a body whose layout the
//! type says (include/uapi/linux/perf_event.h, enum perf_event_type), and for
//! the kernel's non-sample records, a sample_id trailer when the event has
//! sample_id_all. Records that perf itself writes (types 64 and up) are in
//! tools/perf/util/event.h.

use crate::attr::{sample, Attrs, EventAttr};
use crate::bytes::{align8, array, cstr_at, pos, u16_at, u32_at, u64_at};
use crate::error::{Error, Result};

/// Record types.
pub mod kind {
    /// PERF_RECORD_MMAP: an executable mapping (see [`Mmap`](super::Mmap)).
    pub const MMAP: u32 = 1;
    /// PERF_RECORD_LOST: records dropped because the ring buffer was full.
    pub const LOST: u32 = 2;
    /// PERF_RECORD_COMM: a thread's name (see [`Comm`](super::Comm)).
    pub const COMM: u32 = 3;
    /// PERF_RECORD_EXIT: a thread exited.
    pub const EXIT: u32 = 4;
    /// PERF_RECORD_THROTTLE: sampling was throttled.
    pub const THROTTLE: u32 = 5;
    /// PERF_RECORD_UNTHROTTLE: sampling resumed.
    pub const UNTHROTTLE: u32 = 6;
    /// PERF_RECORD_FORK: a thread was created.
    pub const FORK: u32 = 7;
    /// PERF_RECORD_READ: counter values of an inherited event.
    pub const READ: u32 = 8;
    /// PERF_RECORD_SAMPLE: a sample (see [`Sample`](super::Sample)).
    pub const SAMPLE: u32 = 9;
    /// PERF_RECORD_MMAP2: MMAP with inode or build-id data.
    pub const MMAP2: u32 = 10;
    /// PERF_RECORD_AUX: new data in the AUX buffer.
    pub const AUX: u32 = 11;
    /// PERF_RECORD_ITRACE_START: instruction tracing started.
    pub const ITRACE_START: u32 = 12;
    /// PERF_RECORD_LOST_SAMPLES: samples the hardware dropped.
    pub const LOST_SAMPLES: u32 = 13;
    /// PERF_RECORD_SWITCH: a context switch in or out.
    pub const SWITCH: u32 = 14;
    /// PERF_RECORD_SWITCH_CPU_WIDE: a context switch, with the other task.
    pub const SWITCH_CPU_WIDE: u32 = 15;
    /// PERF_RECORD_NAMESPACES: a task's namespaces.
    pub const NAMESPACES: u32 = 16;
    /// PERF_RECORD_KSYMBOL: kernel text registered or unregistered (see [`Ksymbol`](super::Ksymbol)).
    pub const KSYMBOL: u32 = 17;
    /// PERF_RECORD_BPF_EVENT: a BPF program loaded or unloaded (see [`BpfEvent`](super::BpfEvent)).
    pub const BPF_EVENT: u32 = 18;
    /// PERF_RECORD_CGROUP: a cgroup's id and path.
    pub const CGROUP: u32 = 19;
    /// PERF_RECORD_TEXT_POKE: kernel text was modified in place.
    pub const TEXT_POKE: u32 = 20;
    /// PERF_RECORD_AUX_OUTPUT_HW_ID: the hardware id of AUX output.
    pub const AUX_OUTPUT_HW_ID: u32 = 21;
    /// The first of the types perf writes itself; they have no sample_id.
    pub const USER_START: u32 = 64;
    /// PERF_RECORD_HEADER_ATTR: an attr and its ids, in pipe data.
    pub const HEADER_ATTR: u32 = 64;
    /// PERF_RECORD_HEADER_TRACING_DATA: tracepoint formats; its payload follows outside `header.size`.
    pub const HEADER_TRACING_DATA: u32 = 66;
    /// PERF_RECORD_FINISHED_ROUND: records before it may be sorted by time.
    pub const FINISHED_ROUND: u32 = 68;
    /// PERF_RECORD_AUXTRACE: AUX trace data; its payload follows outside `header.size`.
    pub const AUXTRACE: u32 = 71;
    /// PERF_RECORD_HEADER_FEATURE: a feature section, in pipe data.
    pub const HEADER_FEATURE: u32 = 80;
    /// PERF_RECORD_COMPRESSED: zstd-compressed records (`perf record -z`).
    pub const COMPRESSED: u32 = 81;
    /// PERF_RECORD_COMPRESSED2: COMPRESSED with a data size, padded to 8 bytes.
    pub const COMPRESSED2: u32 = 83;
}

/// The name perf uses for a record type (`perf report -D`), without the
/// PERF_RECORD_ prefix.
pub fn kind_name(k: u32) -> &'static str {
    match k {
        1 => "MMAP",
        2 => "LOST",
        3 => "COMM",
        4 => "EXIT",
        5 => "THROTTLE",
        6 => "UNTHROTTLE",
        7 => "FORK",
        8 => "READ",
        9 => "SAMPLE",
        10 => "MMAP2",
        11 => "AUX",
        12 => "ITRACE_START",
        13 => "LOST_SAMPLES",
        14 => "SWITCH",
        15 => "SWITCH_CPU_WIDE",
        16 => "NAMESPACES",
        17 => "KSYMBOL",
        18 => "BPF_EVENT",
        19 => "CGROUP",
        20 => "TEXT_POKE",
        21 => "AUX_OUTPUT_HW_ID",
        64 => "HEADER_ATTR",
        65 => "HEADER_EVENT_TYPE",
        66 => "HEADER_TRACING_DATA",
        67 => "HEADER_BUILD_ID",
        68 => "FINISHED_ROUND",
        69 => "ID_INDEX",
        70 => "AUXTRACE_INFO",
        71 => "AUXTRACE",
        72 => "AUXTRACE_ERROR",
        73 => "THREAD_MAP",
        74 => "CPU_MAP",
        75 => "STAT_CONFIG",
        76 => "STAT",
        77 => "STAT_ROUND",
        78 => "EVENT_UPDATE",
        79 => "TIME_CONV",
        80 => "HEADER_FEATURE",
        81 => "COMPRESSED",
        82 => "FINISHED_INIT",
        83 => "COMPRESSED2",
        _ => "unknown",
    }
}

/// `header.misc & PERF_RECORD_MISC_CPUMODE_MASK`: where the CPU was.
pub mod cpumode {
    /// PERF_RECORD_MISC_CPUMODE_MASK.
    pub const MASK: u16 = 7;
    /// PERF_RECORD_MISC_KERNEL: in the kernel.
    pub const KERNEL: u16 = 1;
    /// PERF_RECORD_MISC_USER: in user space.
    pub const USER: u16 = 2;
    /// PERF_RECORD_MISC_GUEST_KERNEL: in a guest's kernel.
    pub const GUEST_KERNEL: u16 = 4;
}

/// PERF_RECORD_MISC_COMM_EXEC: the COMM comes from an exec.
const MISC_COMM_EXEC: u16 = 1 << 13;
/// PERF_RECORD_MISC_MMAP_BUILD_ID: MMAP2 carries a build id, not inode data.
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

/// The fields of the sample_id trailer (or of a sample) that say who, when
/// and where; each is present only when the event's sample_type asks for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleId {
    /// The process id (PERF_SAMPLE_TID).
    pub pid: Option<u32>,
    /// The thread id (PERF_SAMPLE_TID).
    pub tid: Option<u32>,
    /// The timestamp in nanoseconds of the perf clock (PERF_SAMPLE_TIME).
    pub time: Option<u64>,
    /// The id of the event that wrote the record (PERF_SAMPLE_ID or
    /// IDENTIFIER): see [`Attrs::by_id`].
    pub id: Option<u64>,
    /// The id of the event it was inherited from (PERF_SAMPLE_STREAM_ID).
    pub stream_id: Option<u64>,
    /// The CPU (PERF_SAMPLE_CPU).
    pub cpu: Option<u32>,
}

/// PERF_RECORD_MMAP and MMAP2: a mapping of code. With pid -1 and a kernel
/// cpumode, the kernel image (`[kernel.kallsyms]_text`) or a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mmap {
    /// The process id; `u32::MAX` (-1) for the kernel and its modules.
    pub pid: u32,
    /// The thread id.
    pub tid: u32,
    /// The virtual address the mapping starts at.
    pub addr: u64,
    /// Its length in bytes.
    pub len: u64,
    /// The file offset mapped at `addr` (for the kernel image, perf puts the
    /// address of `_text` here).
    pub pgoff: u64,
    /// The mapped file, or a name perf gives (`[kernel.kallsyms]_text`).
    pub filename: String,
    /// MMAP2 only: protection (`PROT_*`) of the mapping.
    pub prot: Option<u32>,
    /// MMAP2 only: flags (`MAP_*`) of the mapping.
    pub map_flags: Option<u32>,
    /// MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID.
    pub build_id: Option<Vec<u8>>,
}

/// PERF_RECORD_COMM: a thread's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comm {
    /// The process id.
    pub pid: u32,
    /// The thread id.
    pub tid: u32,
    /// The new name.
    pub comm: String,
    /// Set by exec rather than prctl(PR_SET_NAME).
    pub exec: bool,
}

/// PERF_RECORD_FORK and EXIT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    /// The process id.
    pub pid: u32,
    /// The parent's process id.
    pub ppid: u32,
    /// The thread id.
    pub tid: u32,
    /// The parent's thread id.
    pub ptid: u32,
    /// When, in nanoseconds of the perf clock.
    pub time: u64,
}

/// ksym_type of PERF_RECORD_KSYMBOL.
pub mod ksym_type {
    /// PERF_RECORD_KSYMBOL_TYPE_UNKNOWN.
    pub const UNKNOWN: u16 = 0;
    /// PERF_RECORD_KSYMBOL_TYPE_BPF: a BPF program's JITed code.
    pub const BPF: u16 = 1;
    /// Out-of-line code: ftrace and BPF trampolines, dispatchers, kprobes.
    pub const OOL: u16 = 2;

    /// The type's name as perf prints it: `unknown`, `bpf`, `ool`, `other`.
    pub fn name(t: u16) -> &'static str {
        match t {
            UNKNOWN => "unknown",
            BPF => "bpf",
            OOL => "ool",
            _ => "other",
        }
    }
}

/// PERF_RECORD_KSYMBOL: kernel text registered or unregistered at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ksymbol {
    /// The kernel virtual address the text starts at.
    pub addr: u64,
    /// Its length in bytes.
    pub len: u32,
    /// What the text is: a [`ksym_type`] value.
    pub ksym_type: u16,
    /// Bit 0: the text went away (see [`Ksymbol::is_unregister`]).
    pub flags: u16,
    /// The symbol name, as kallsyms lists it (`bpf_prog_<tag>_<name>`...).
    pub name: String,
}

impl Ksymbol {
    /// PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER.
    pub fn is_unregister(&self) -> bool {
        self.flags & 1 != 0
    }
}

/// PERF_RECORD_BPF_EVENT: a BPF program loaded (1) or unloaded (2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpfEvent {
    /// [`BpfEvent::PROG_LOAD`] or [`BpfEvent::PROG_UNLOAD`].
    pub kind: u16,
    /// Reserved, 0.
    pub flags: u16,
    /// The program id, as `bpftool prog` shows it.
    pub id: u32,
    /// The program tag (a hash of its instructions).
    pub tag: [u8; 8],
}

impl BpfEvent {
    /// PERF_BPF_EVENT_PROG_LOAD.
    pub const PROG_LOAD: u16 = 1;
    /// PERF_BPF_EVENT_PROG_UNLOAD.
    pub const PROG_UNLOAD: u16 = 2;

    /// The tag as bpftool and kallsyms print it: 16 hex digits.
    pub fn tag_hex(&self) -> String {
        tag_hex(&self.tag)
    }
}

/// A BPF program tag as bpftool and kallsyms print it: 16 hex digits.
pub fn tag_hex(tag: &[u8; 8]) -> String {
    tag.iter().map(|b| format!("{b:02x}")).collect()
}

/// PERF_RECORD_SAMPLE, decoded up to the callchain; the pid, tid, time, id
/// and cpu are in the [`Event`]'s [`SampleId`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// The instruction pointer (PERF_SAMPLE_IP).
    pub ip: Option<u64>,
    /// The data address (PERF_SAMPLE_ADDR).
    pub addr: Option<u64>,
    /// The period (PERF_SAMPLE_PERIOD).
    pub period: Option<u64>,
    /// The callchain as the kernel writes it: addresses innermost first,
    /// with the `PERF_CONTEXT_*` markers (`PERF_CONTEXT_KERNEL` is -128 as a
    /// `u64`) kept; empty without PERF_SAMPLE_CALLCHAIN.
    pub callchain: Vec<u64>,
    /// `header.misc & 7`: kernel, user, guest... (see [`cpumode`]).
    pub cpumode: u16,
}

/// A record's body, decoded for the types this crate uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// PERF_RECORD_MMAP or MMAP2.
    Mmap(Mmap),
    /// PERF_RECORD_COMM.
    Comm(Comm),
    /// PERF_RECORD_FORK.
    Fork(Task),
    /// PERF_RECORD_EXIT.
    Exit(Task),
    /// PERF_RECORD_LOST: the ring buffer overflowed.
    Lost {
        /// The id of the event that lost records.
        id: u64,
        /// How many records were lost.
        lost: u64,
    },
    /// PERF_RECORD_SAMPLE.
    Sample(Sample),
    /// PERF_RECORD_KSYMBOL.
    Ksymbol(Ksymbol),
    /// PERF_RECORD_BPF_EVENT.
    BpfEvent(BpfEvent),
    /// PERF_RECORD_FINISHED_ROUND: no later record is older than those
    /// before it.
    FinishedRound,
    /// Pipe format: an event's attr and ids.
    HeaderAttr {
        /// The attr.
        attr: EventAttr,
        /// The ids of its events.
        ids: Vec<u64>,
    },
    /// Pipe format: a header feature section, carried as a record.
    HeaderFeature {
        /// The feature's number ([`features::feature`](crate::features::feature)).
        feature: u64,
        /// The section's bytes.
        data: Vec<u8>,
    },
    /// zstd-compressed records (`perf record -z`): the records they hold
    /// follow this one in [`PerfData::records`](crate::PerfData::records).
    Compressed,
    /// A type this crate does not decode (see [`Event::kind`]).
    Other,
}

/// One record, where it was and its sample_id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Offset of the record's header in the file (or stream).
    pub offset: u64,
    /// `header.type`: a [`kind`] value.
    pub kind: u32,
    /// `header.misc`: the [`cpumode`] and type-specific bits.
    pub misc: u16,
    /// `header.size` as written; may exceed the record's real length.
    pub size: u16,
    /// The decoded body.
    pub record: Record,
    /// Who, when and where: the sample's fields or the trailer's.
    pub id: SampleId,
}

impl Event {
    /// The timestamp in nanoseconds of the perf clock, when the record has one.
    pub fn time(&self) -> Option<u64> {
        self.id.time
    }
}

/// Bytes that follow a record outside its `header.size`: perf writes the
/// payload of tracing data and AUX trace data right after those records.
pub(crate) fn extra_payload(rec: &[u8], k: u32) -> u64 {
    match k {
        kind::HEADER_TRACING_DATA => u32_at(rec, 8).map_or(0, |n| (u64::from(n) + 7) & !7),
        kind::AUXTRACE => u64_at(rec, 8).map_or(0, |n| n.saturating_add(7) & !7),
        _ => 0,
    }
}

/// The body of one record being decoded, with the accessors every kind's
/// decoder uses: fields by record offset, NUL-terminated strings padded
/// to 8 bytes, and errors naming the record.
struct Body<'a> {
    rec: &'a [u8],
    offset: u64,
    name: &'static str,
}

impl Body<'_> {
    fn bad(&self, reason: String) -> Error {
        Error::record(self.offset, self.name, reason)
    }

    /// The record holds at least `n` bytes (for `what`).
    fn need(&self, n: usize, what: &str) -> Result<()> {
        if self.rec.len() < n {
            Err(self.bad(format!(
                "body needs {n} bytes for {what}, the record has {}",
                self.rec.len()
            )))
        } else {
            Ok(())
        }
    }

    fn u16(&self, off: usize) -> u16 {
        u16_at(self.rec, off).unwrap_or(0)
    }

    fn u32(&self, off: usize) -> u32 {
        u32_at(self.rec, off).unwrap_or(0)
    }

    fn u64(&self, off: usize) -> u64 {
        u64_at(self.rec, off).unwrap_or(0)
    }

    /// The string at `off` and where the 8-byte aligned field after it ends.
    fn string(&self, off: usize, what: &str) -> Result<(String, usize)> {
        let (s, after) = cstr_at(self.rec, off)
            .ok_or_else(|| self.bad(format!("{what} at record offset {off} has no NUL")))?;
        let end = align8(after).ok_or_else(|| self.bad(format!("{what} is too long")))?;
        Ok((s, end))
    }
}

/// A decoded record and where its body ends (None when its layout is not
/// known here, so no trailer can be read after it).
type Decoded = (Record, Option<usize>);

/// Decodes one record; `rec` is exactly `header.size` bytes (framing was
/// checked by the caller) and `offset` is where it starts.
pub fn parse(rec: &[u8], offset: u64, attrs: &Attrs) -> Result<Event> {
    let k = u32_at(rec, 0).unwrap_or(0);
    let misc = u16_at(rec, 4).unwrap_or(0);
    let name = kind_name(k);
    let b = Body { rec, offset, name };
    let (record, body_end) = match k {
        kind::SAMPLE => {
            let attr = attrs
                .for_sample(rec)
                .ok_or_else(|| b.bad("no attr describes this sample".into()))?;
            let (sample, id) = parse_sample(rec, offset, attr, misc)?;
            let mut event = plain(rec, offset, Record::Sample(sample));
            event.id = id;
            return Ok(event);
        }
        kind::MMAP | kind::MMAP2 => mmap(&b, k == kind::MMAP2, misc)?,
        kind::COMM | kind::FORK | kind::EXIT => task(&b, k, misc)?,
        kind::LOST | kind::KSYMBOL | kind::BPF_EVENT => symbol_or_loss(&b, k)?,
        kind::HEADER_ATTR | kind::HEADER_FEATURE => return header(&b, k),
        kind::FINISHED_ROUND => return Ok(plain(rec, offset, Record::FinishedRound)),
        kind::COMPRESSED | kind::COMPRESSED2 => return Ok(plain(rec, offset, Record::Compressed)),
        _ => match layout_only(&b, k, attrs)? {
            Some(d) => d,
            None => return Ok(plain(rec, offset, Record::Other)),
        },
    };
    let mut event = plain(rec, offset, record);
    if k >= kind::USER_START {
        return Ok(event);
    }
    if let Some(end) = body_end {
        if end > rec.len() {
            return Err(b.bad(format!(
                "body needs {end} bytes, the record has {}",
                rec.len()
            )));
        }
        if let Some(attr) = attrs.for_trailer(rec, end) {
            event.id = parse_sample_id(rec, end, offset, name, attr)?;
        }
    }
    Ok(event)
}

/// MMAP and MMAP2 (`two`): a mapping, with MMAP2's protection, flags and
/// build id.
fn mmap(b: &Body<'_>, two: bool, misc: u16) -> Result<Decoded> {
    let at = if two { 72 } else { 40 };
    if two {
        b.need(72, "pid, tid, addr, len, pgoff, ids, prot, flags")?;
    } else {
        b.need(40, "pid, tid, addr, len, pgoff")?;
    }
    let (filename, end) = b.string(at, "filename")?;
    let build_id = (two && misc & MISC_MMAP_BUILD_ID != 0).then(|| {
        let n = usize::from(b.rec.get(40).copied().unwrap_or(0)).min(20);
        b.rec
            .get(44..44 + n)
            .map(<[u8]>::to_vec)
            .unwrap_or_default()
    });
    let m = Mmap {
        pid: b.u32(8),
        tid: b.u32(12),
        addr: b.u64(16),
        len: b.u64(24),
        pgoff: b.u64(32),
        filename,
        prot: two.then(|| b.u32(64)),
        map_flags: two.then(|| b.u32(68)),
        build_id,
    };
    Ok((Record::Mmap(m), Some(end)))
}

/// COMM, FORK and EXIT: a task's name, birth or death.
fn task(b: &Body<'_>, k: u32, misc: u16) -> Result<Decoded> {
    if k == kind::COMM {
        b.need(16, "pid, tid")?;
        let (comm, end) = b.string(16, "comm")?;
        let c = Comm {
            pid: b.u32(8),
            tid: b.u32(12),
            comm,
            exec: misc & MISC_COMM_EXEC != 0,
        };
        return Ok((Record::Comm(c), Some(end)));
    }
    b.need(32, "pid, ppid, tid, ptid, time")?;
    let t = Task {
        pid: b.u32(8),
        ppid: b.u32(12),
        tid: b.u32(16),
        ptid: b.u32(20),
        time: b.u64(24),
    };
    let r = if k == kind::FORK {
        Record::Fork(t)
    } else {
        Record::Exit(t)
    };
    Ok((r, Some(32)))
}

/// LOST, KSYMBOL and BPF_EVENT.
fn symbol_or_loss(b: &Body<'_>, k: u32) -> Result<Decoded> {
    match k {
        kind::LOST => {
            b.need(24, "id, lost")?;
            let r = Record::Lost {
                id: b.u64(8),
                lost: b.u64(16),
            };
            Ok((r, Some(24)))
        }
        kind::KSYMBOL => {
            b.need(24, "addr, len, ksym_type, flags")?;
            let (name, end) = b.string(24, "name")?;
            let ks = Ksymbol {
                addr: b.u64(8),
                len: b.u32(16),
                ksym_type: b.u16(20),
                flags: b.u16(22),
                name,
            };
            Ok((Record::Ksymbol(ks), Some(end)))
        }
        _ => {
            b.need(24, "type, flags, id, tag")?;
            let ev = BpfEvent {
                kind: b.u16(8),
                flags: b.u16(10),
                id: b.u32(12),
                tag: array(b.rec, 16).unwrap_or_default(),
            };
            Ok((Record::BpfEvent(ev), Some(24)))
        }
    }
}

/// The records of kinds decoded only for where their body ends (so that
/// their sample_id trailer can be read); `None` for a kind not known here.
fn layout_only(b: &Body<'_>, k: u32, attrs: &Attrs) -> Result<Option<Decoded>> {
    let end = match k {
        kind::THROTTLE | kind::UNTHROTTLE | kind::AUX => Some(32),
        kind::ITRACE_START | kind::SWITCH_CPU_WIDE => Some(16),
        kind::LOST_SAMPLES | kind::AUX_OUTPUT_HW_ID => Some(16),
        kind::SWITCH => Some(8),
        kind::NAMESPACES => {
            b.need(24, "pid, tid, nr_namespaces")?;
            let end = usize::try_from(b.u64(16))
                .ok()
                .and_then(|n| n.checked_mul(16))
                .and_then(|n| n.checked_add(24))
                .ok_or_else(|| b.bad("nr_namespaces is absurd".into()))?;
            Some(end)
        }
        kind::CGROUP => {
            b.need(16, "id")?;
            Some(b.string(16, "path")?.1)
        }
        kind::TEXT_POKE => {
            b.need(20, "addr, old_len, new_len")?;
            let bytes = 4 + usize::from(b.u16(16)) + usize::from(b.u16(18));
            align8(bytes).map(|n| 16 + n)
        }
        kind::READ => {
            b.need(16, "pid, tid")?;
            attrs
                .for_trailer(b.rec, 16)
                .and_then(|a| a.read_format_len(b.u64(16)))
                .and_then(|n| n.checked_add(16))
        }
        _ => return Ok(None),
    };
    Ok(Some((Record::Other, end)))
}

/// HEADER_ATTR and HEADER_FEATURE, the header records of a pipe-mode file.
fn header(b: &Body<'_>, k: u32) -> Result<Event> {
    let rec = b.rec;
    let record = if k == kind::HEADER_ATTR {
        b.need(16, "attr")?;
        let attr_size = b.u32(12) as usize;
        let attr_bytes = rec
            .get(8..8usize.saturating_add(attr_size))
            .ok_or_else(|| b.bad(format!("attr of {attr_size} bytes runs past the record")))?;
        let attr = EventAttr::parse(attr_bytes, b.offset + 8)?;
        let ids = rec
            .get(8 + attr_size..)
            .unwrap_or_default()
            .chunks_exact(8)
            .filter_map(|c| u64_at(c, 0))
            .collect();
        Record::HeaderAttr { attr, ids }
    } else {
        b.need(16, "feature id")?;
        Record::HeaderFeature {
            feature: b.u64(8),
            data: rec.get(16..).unwrap_or_default().to_vec(),
        }
    };
    Ok(plain(rec, b.offset, record))
}

fn plain(rec: &[u8], offset: u64, record: Record) -> Event {
    Event {
        offset,
        kind: u32_at(rec, 0).unwrap_or(0),
        misc: u16_at(rec, 4).unwrap_or(0),
        size: u16_at(rec, 6).unwrap_or(0),
        record,
        id: SampleId::default(),
    }
}

/// The sample_id trailer that starts at `start`, right after the body.
fn parse_sample_id(
    rec: &[u8],
    start: usize,
    offset: u64,
    name: &'static str,
    attr: &EventAttr,
) -> Result<SampleId> {
    let len = attr.sample_id_len();
    if len == 0 {
        return Ok(SampleId::default());
    }
    let have = rec.len().saturating_sub(start);
    if have < len {
        return Err(Error::record(
            offset,
            name,
            format!("sample_id trailer at record offset {start} needs {len} bytes, {have} left"),
        ));
    }
    let mut id = SampleId::default();
    let mut f = Fields {
        rec,
        at: start,
        offset,
        name,
    };
    // The trailer's order (perf_event__sample_id's): not a sample's.
    for bit in [
        sample::TID,
        sample::TIME,
        sample::ID,
        sample::STREAM_ID,
        sample::CPU,
        sample::IDENTIFIER,
    ] {
        if attr.has(bit) {
            f.id_field(bit, &mut id)?;
        }
    }
    Ok(id)
}

/// Sequential reads inside one record, with errors that say where.
struct Fields<'a> {
    rec: &'a [u8],
    at: usize,
    offset: u64,
    name: &'static str,
}

impl Fields<'_> {
    fn err(&self, n: usize) -> Error {
        Error::record(
            self.offset,
            self.name,
            format!(
                "field at record offset {} (file offset {:#x}) needs {n} bytes, the record has {}",
                self.at,
                self.offset + pos(self.at),
                self.rec.len()
            ),
        )
    }

    fn u32(&mut self) -> Result<u32> {
        let v = u32_at(self.rec, self.at).ok_or_else(|| self.err(4))?;
        self.at += 4;
        Ok(v)
    }

    fn u64(&mut self) -> Result<u64> {
        let v = u64_at(self.rec, self.at).ok_or_else(|| self.err(8))?;
        self.at += 8;
        Ok(v)
    }

    /// The field of `bit` that a sample and a sample_id trailer share
    /// (TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER), into `id`.
    fn id_field(&mut self, bit: u64, id: &mut SampleId) -> Result<()> {
        match bit {
            sample::TID => {
                id.pid = Some(self.u32()?);
                id.tid = Some(self.u32()?);
            }
            sample::TIME => id.time = Some(self.u64()?),
            sample::STREAM_ID => id.stream_id = Some(self.u64()?),
            sample::CPU => {
                id.cpu = Some(self.u32()?);
                self.u32()?;
            }
            // ID and IDENTIFIER: the same id, at two places.
            _ => id.id = Some(self.u64()?),
        }
        Ok(())
    }

    fn skip(&mut self, n: usize) -> Result<()> {
        match self.at.checked_add(n) {
            Some(end) if end <= self.rec.len() => {
                self.at = end;
                Ok(())
            }
            _ => Err(self.err(n)),
        }
    }
}

/// A sample's fields in kernel order (perf_output_sample), up to the
/// callchain; later fields (raw data, branch stacks, registers) are left.
fn parse_sample(
    rec: &[u8],
    offset: u64,
    attr: &EventAttr,
    misc: u16,
) -> Result<(Sample, SampleId)> {
    let mut f = Fields {
        rec,
        at: 8,
        offset,
        name: "SAMPLE",
    };
    let mut s = Sample {
        cpumode: misc & cpumode::MASK,
        ..Sample::default()
    };
    let mut id = SampleId::default();
    for bit in [
        sample::IDENTIFIER,
        sample::IP,
        sample::TID,
        sample::TIME,
        sample::ADDR,
        sample::ID,
        sample::STREAM_ID,
        sample::CPU,
        sample::PERIOD,
    ] {
        if !attr.has(bit) {
            continue;
        }
        match bit {
            sample::IP => s.ip = Some(f.u64()?),
            sample::ADDR => s.addr = Some(f.u64()?),
            sample::PERIOD => s.period = Some(f.u64()?),
            _ => f.id_field(bit, &mut id)?,
        }
    }
    if attr.has(sample::READ) {
        let nr = if attr.read_format & crate::attr::read_format::GROUP != 0 {
            u64_at(rec, f.at).unwrap_or(0)
        } else {
            0
        };
        let len = attr
            .read_format_len(nr)
            .ok_or_else(|| Error::record(offset, "SAMPLE", format!("read group of {nr} values")))?;
        f.skip(len)?;
    }
    if attr.has(sample::CALLCHAIN) {
        let nr = f.u64()?;
        // Bounded by the record: a u16 size holds at most 8191 addresses.
        let left = (rec.len().saturating_sub(f.at) / 8) as u64;
        if nr > left {
            return Err(Error::record(
                offset,
                "SAMPLE",
                format!("callchain of {nr} entries, room for {left}"),
            ));
        }
        for _ in 0..nr {
            s.callchain.push(f.u64()?);
        }
    }
    Ok((s, id))
}
