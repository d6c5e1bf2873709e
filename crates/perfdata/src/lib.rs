//! perf.data and live perf events, for what they say about kernel text that
//! comes and goes: PERF_RECORD_KSYMBOL (BPF programs, trampolines, ftrace
//! and kprobe code), PERF_RECORD_BPF_EVENT, kernel and module maps, and the
//! samples to symbolize against them.
//!
//! - [`PerfData`] reads a file (`perf record -o FILE`) or a stream
//!   (`perf record -o -`): header, attrs, records, feature sections
//!   including HEADER_BPF_PROG_INFO and HEADER_BPF_BTF.
//! - [`records`] decodes records. The sample_id trailer of non-sample
//!   records is read forward from the end of the body, whose length the
//!   record's own fields give, because Linux 6.18 can inflate header.size.
//! - [`dynsyms::DynSymTable`] keeps the lifetimes of dynamic symbols and
//!   answers "what was at this address at that time".
//! - [`timeline::Timeline`] builds that table from a file; [`live`] opens
//!   one perf event per CPU and reads the same records as they happen.
//!
//! Input is never trusted: bad bytes give errors naming their offset, not
//! panics.

#![warn(clippy::expect_used, clippy::indexing_slicing)]

pub mod attr;
mod bytes;
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
