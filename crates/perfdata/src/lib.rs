//! perf.data and live perf events, for what they say about kernel text that
//! comes and goes: PERF_RECORD_KSYMBOL (BPF programs, trampolines, ftrace
//! and kprobe code), PERF_RECORD_BPF_EVENT, kernel and module maps, and the
//! samples to symbolize against them.
//!
//! - [`PerfData`] reads a file (`perf record -o FILE`) or a stream
//!   (`perf record -o -`): header, attrs, records, feature sections
//!   including HEADER_BPF_PROG_INFO and HEADER_BPF_BTF.
//! - [`records`] decodes records; the records inside PERF_RECORD_COMPRESSED
//!   ones (`perf record -z`, zstd) are decompressed and given after each,
//!   as perf reads them. The sample_id trailer of non-sample
//!   records is read forward from the end of the body, whose length the
//!   record's own fields give, because Linux 6.18 can inflate header.size.
//! - [`dynsyms::DynSymTable`] keeps the lifetimes of dynamic symbols and
//!   answers "what was at this address at that time".
//! - [`timeline::Timeline`] builds that table from a file; [`live`] opens
//!   one perf event per CPU and reads the same records as they happen.
//!
//! Input is never trusted: bad bytes give errors naming their offset, not
//! panics.
//!
//! Offsets are byte offsets in the file (or stream); addresses are kernel
//! virtual addresses; times are nanoseconds of the perf clock, which
//! [`format_time`] prints as perf does. Only little-endian data is read.
//!
//! # Example
//!
//! The symbols that came and went while `perf record -a` ran:
//!
//! ```no_run
//! use perfdata::timeline::{Options, Timeline};
//! use perfdata::PerfData;
//!
//! let perf = PerfData::open("perf.data".as_ref())?;
//! let timeline = Timeline::build(&perf, Options::default());
//! for sym in timeline.tracker.table.symbols() {
//!     println!("{:#x} {:5} {} {:?}", sym.addr, sym.len, sym.name, sym.registered);
//! }
//! # Ok::<(), perfdata::Error>(())
//! ```
//!
//! The same from a stream built in memory: the pipe header and one
//! PERF_RECORD_KSYMBOL for a BPF program.
//!
//! ```
//! use perfdata::records::{kind, ksym_type};
//! use perfdata::timeline::{Options, Timeline};
//! use perfdata::PerfData;
//!
//! let name = b"bpf_prog_6deef7357e7b4530_sd_fw\0"; // NUL-padded to 8 bytes
//! let mut data = b"PERFILE2".to_vec();
//! data.extend_from_slice(&16u64.to_le_bytes()); // header size 16: pipe format
//! data.extend_from_slice(&kind::KSYMBOL.to_le_bytes());
//! data.extend_from_slice(&0u16.to_le_bytes()); // misc
//! data.extend_from_slice(&(24 + name.len() as u16).to_le_bytes());
//! data.extend_from_slice(&0xffff_ffff_c000_1000u64.to_le_bytes()); // addr
//! data.extend_from_slice(&0x80u32.to_le_bytes()); // len
//! data.extend_from_slice(&ksym_type::BPF.to_le_bytes());
//! data.extend_from_slice(&0u16.to_le_bytes()); // flags: registered
//! data.extend_from_slice(name);
//!
//! let perf = PerfData::from_bytes(data)?;
//! let table = Timeline::build(&perf, Options::default()).tracker.table;
//! let (_, sym, offset) = table.lookup(0xffff_ffff_c000_1010, 0).expect("registered");
//! assert_eq!((sym.name.as_str(), offset), ("bpf_prog_6deef7357e7b4530_sd_fw", 0x10));
//! # Ok::<(), perfdata::Error>(())
//! ```

#![warn(missing_docs)]
#![warn(clippy::expect_used, clippy::indexing_slicing)]

pub mod attr;
mod bytes;
mod compressed;
pub mod dynsyms;
mod error;
pub mod features;
pub mod header;
pub mod live;
mod reader;
pub mod records;
pub mod timeline;

pub use error::{Error, Result};
pub use reader::{Frames, PerfData, Records};

/// A perf timestamp (nanoseconds of the perf clock) as perf prints it:
/// seconds and nanoseconds.
pub fn format_time(ns: u64) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}
