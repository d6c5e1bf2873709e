//! From records to history: the dynamic symbol table fed with KSYMBOL
//! records, BPF program ids and tags attached from BPF_EVENT records and
//! from HEADER_BPF_PROG_INFO, kernel and module maps from MMAP records, and
//! optionally the samples, for symbolization.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use crate::dynsyms::{tag_of_name, BpfProg, Change, DynSymTable};
use crate::error::Error;
use crate::features::BpfProgInfo;
use crate::reader::PerfData;
use crate::records::{cpumode, ksym_type, BpfEvent, Event, Ksymbol, Record};

/// A BPF program's life as BPF_EVENT records tell it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProgLife {
    /// The program id.
    pub id: u32,
    /// The program tag.
    pub tag: [u8; 8],
    /// When it was loaded (nanoseconds of the perf clock), if a record says.
    pub loaded: Option<u64>,
    /// When it was unloaded, if a record says.
    pub unloaded: Option<u64>,
    /// Its symbols' lifetimes in the [`DynSymTable`].
    pub symbols: Vec<usize>,
}

/// What applying one record did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// A KSYMBOL registered the lifetime with this index.
    Registered(usize),
    /// A KSYMBOL ended the lifetime with this index.
    Unregistered(usize),
    /// A BPF_EVENT for this program id.
    Bpf(u32),
    /// Neither KSYMBOL nor BPF_EVENT: nothing changed.
    Ignored,
}

/// Applies KSYMBOL and BPF_EVENT records one by one, as they come (the live
/// listener) or in time order (a file).
#[derive(Debug, Default)]
pub struct Tracker {
    /// The symbols' lifetimes.
    pub table: DynSymTable,
    /// The BPF programs, by id.
    pub progs: BTreeMap<u32, ProgLife>,
    /// BPF symbols waiting for the BPF_EVENT of their program, per thread.
    /// The kernel reports a program's symbols and then the program itself
    /// from the same syscall (kernel/events/core.c, perf_event_bpf_event),
    /// so the next BPF_EVENT of that thread names them.
    pending: FxHashMap<Option<u32>, Vec<usize>>,
}

impl Tracker {
    /// Nothing tracked yet.
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// Applies one record: a KSYMBOL registers or unregisters a symbol, a
    /// BPF_EVENT names the program of the BPF symbols its thread just
    /// registered. Other records are ignored.
    pub fn apply(&mut self, ev: &Event) -> Applied {
        match &ev.record {
            Record::Ksymbol(k) => self.ksymbol(ev, k),
            Record::BpfEvent(b) => self.bpf_event(ev, b),
            _ => Applied::Ignored,
        }
    }

    fn ksymbol(&mut self, ev: &Event, k: &Ksymbol) -> Applied {
        let change = Change {
            name: &k.name,
            addr: k.addr,
            len: k.len,
            ksym_type: k.ksym_type,
            time: ev.id.time,
            offset: Some(ev.offset),
        };
        let (index, applied) = if k.is_unregister() {
            let i = self.table.unregister(change);
            (i, Applied::Unregistered(i))
        } else {
            let i = self.table.register(change);
            (i, Applied::Registered(i))
        };
        if k.ksym_type == ksym_type::BPF {
            self.pending.entry(ev.id.tid).or_default().push(index);
        }
        applied
    }

    fn bpf_event(&mut self, ev: &Event, b: &BpfEvent) -> Applied {
        let life = self.progs.entry(b.id).or_insert_with(|| ProgLife {
            id: b.id,
            tag: b.tag,
            ..ProgLife::default()
        });
        match b.kind {
            BpfEvent::PROG_LOAD => life.loaded = ev.id.time.or(life.loaded),
            BpfEvent::PROG_UNLOAD => life.unloaded = ev.id.time.or(life.unloaded),
            _ => {}
        }
        let prog = BpfProg {
            id: b.id,
            tag: b.tag,
        };
        for index in self.pending.remove(&ev.id.tid).unwrap_or_default() {
            if self.table.get(index).is_some_and(|s| s.bpf.is_none()) {
                self.table.set_bpf(index, prog);
            }
            if !life.symbols.contains(&index) {
                life.symbols.push(index);
            }
        }
        Applied::Bpf(b.id)
    }

    /// Attaches programs from HEADER_BPF_PROG_INFO to symbols still without
    /// one: a symbol at one of the program's function addresses, whose name
    /// carries that function's tag when perf saved the tags.
    pub fn attach_prog_info(&mut self, infos: &[BpfProgInfo]) {
        for info in infos {
            for (i, &addr) in info.jited_ksyms.iter().enumerate() {
                let want_tag = info.prog_tags.get(i).copied();
                let found: Vec<usize> = self
                    .table
                    .symbols()
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| {
                        s.addr == addr
                            && s.ksym_type == ksym_type::BPF
                            && s.bpf.is_none()
                            && want_tag.is_none_or(|t| tag_of_name(&s.name) == Some(t))
                    })
                    .map(|(index, _)| index)
                    .collect();
                for index in found {
                    self.table.set_bpf(
                        index,
                        BpfProg {
                            id: info.id,
                            tag: info.tag,
                        },
                    );
                    let life = self.progs.entry(info.id).or_insert_with(|| ProgLife {
                        id: info.id,
                        tag: info.tag,
                        ..ProgLife::default()
                    });
                    if !life.symbols.contains(&index) {
                        life.symbols.push(index);
                    }
                }
            }
        }
    }
}

/// Kernel text mapped when the recording began: `[kernel.kallsyms]_text`
/// and modules (perf synthesizes these MMAP records from /proc/modules).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMap {
    /// The MMAP's file name: `[kernel.kallsyms]_text` or the module's path.
    pub name: String,
    /// The kernel virtual address it starts at.
    pub start: u64,
    /// Its length in bytes.
    pub len: u64,
    /// The MMAP's `pgoff` (see [`Mmap::pgoff`](crate::records::Mmap::pgoff)).
    pub pgoff: u64,
    /// The record's time, if it has one.
    pub time: Option<u64>,
}

/// A sample's address and context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplePoint {
    /// The sampled instruction pointer.
    pub ip: u64,
    /// When, in nanoseconds of the perf clock.
    pub time: Option<u64>,
    /// On which CPU.
    pub cpu: Option<u32>,
    /// In which thread.
    pub tid: Option<u32>,
    /// Where the CPU was: a [`cpumode`] value.
    pub cpumode: u16,
}

impl SamplePoint {
    /// Whether the sample is in a kernel (the host's or a guest's).
    pub fn in_kernel(&self) -> bool {
        matches!(self.cpumode, cpumode::KERNEL | cpumode::GUEST_KERNEL)
    }
}

/// What [`Timeline::build`] keeps besides the symbols.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Keep every sample's address (for symbolization).
    pub samples: bool,
}

/// What a perf.data file says about dynamic kernel text: its symbols'
/// lifetimes, the kernel and module maps, and optionally the samples.
#[derive(Debug, Default)]
pub struct Timeline {
    /// The symbols and programs.
    pub tracker: Tracker,
    /// The kernel and module MMAP records, in file order.
    pub kernel_maps: Vec<KernelMap>,
    /// The samples that have an ip, in file order (only with
    /// [`Options::samples`]).
    pub samples: Vec<SamplePoint>,
    /// Records read, by type.
    pub record_counts: BTreeMap<u32, u64>,
    /// Records that could not be decoded; the others were still read.
    pub errors: Vec<Error>,
    /// The error that ended the reading early, if one did.
    pub stopped: Option<Error>,
    /// False when some KSYMBOL or BPF_EVENT record had no time, so records
    /// were applied in file order rather than time order.
    pub time_ordered: bool,
}

impl Timeline {
    /// Reads every record of `perf`, applies the KSYMBOL and BPF_EVENT
    /// records in time order (file order when some lack a time), then the
    /// programs of HEADER_BPF_PROG_INFO. Bad records are collected in
    /// `errors`, not returned: the rest is still read.
    pub fn build(perf: &PerfData, opts: Options) -> Timeline {
        let mut t = Timeline::default();
        let mut changes: Vec<Event> = Vec::new();
        for item in perf.records() {
            let ev = match item {
                Ok(ev) => ev,
                Err(e) if e.breaks_framing() => {
                    t.stopped = Some(e);
                    break;
                }
                Err(e) => {
                    t.errors.push(e);
                    continue;
                }
            };
            *t.record_counts.entry(ev.kind).or_default() += 1;
            match &ev.record {
                Record::Ksymbol(_) | Record::BpfEvent(_) => changes.push(ev),
                Record::Mmap(m)
                    if ev.misc & cpumode::MASK == cpumode::KERNEL || m.pid == u32::MAX =>
                {
                    t.kernel_maps.push(KernelMap {
                        name: m.filename.clone(),
                        start: m.addr,
                        len: m.len,
                        pgoff: m.pgoff,
                        time: ev.id.time,
                    });
                }
                Record::Sample(s) if opts.samples => {
                    if let Some(ip) = s.ip {
                        t.samples.push(SamplePoint {
                            ip,
                            time: ev.id.time,
                            cpu: ev.id.cpu,
                            tid: ev.id.tid,
                            cpumode: s.cpumode,
                        });
                    }
                }
                _ => {}
            }
        }
        // Per-CPU buffers are written one after another, so records are in
        // time order only within a CPU; perf report sorts them the same way.
        t.time_ordered = changes.iter().all(|e| e.id.time.is_some());
        if t.time_ordered {
            changes.sort_by_key(|e| e.id.time);
        }
        for ev in &changes {
            t.tracker.apply(ev);
        }
        t.tracker.attach_prog_info(&perf.features.bpf_progs);
        t
    }
}
