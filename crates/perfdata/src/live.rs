//! A live listener: one software dummy event per online CPU, asking only for
//! KSYMBOL and BPF_EVENT records (with a time, thread and CPU trailer), each
//! with its own ring buffer. Records come only on the CPU where the symbol
//! changed, so every CPU needs its own event.
//!
//! The unsafe code is here and nowhere else in the crate: the
//! perf_event_open syscall, mapping the ring, reading it, and a SIGINT
//! handler. Each block says why it is sound.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::attr::{flag, sample, Attrs, EventAttr, ATTR_SIZE_VER0, COUNT_SW_DUMMY, TYPE_SOFTWARE};
use crate::bytes::u16_at;
use crate::error::{Error, Result};
use crate::records::{self, Event};

const ONLINE: &str = "/sys/devices/system/cpu/online";
const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";
/// Ring buffer pages per CPU after the control page (a power of two):
/// 64 KiB holds hundreds of symbol records between two polls.
const RING_PAGES: usize = 16;
/// Offsets in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;
/// PERF_FLAG_FD_CLOEXEC (include/uapi/linux/perf_event.h).
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// The CPUs in /sys/devices/system/cpu/online (`0-3,5`).
pub fn online_cpus() -> Result<Vec<u32>> {
    let path = Path::new(ONLINE);
    let text = std::fs::read_to_string(path).map_err(|e| Error::OnlineCpus {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    parse_cpu_list(text.trim()).ok_or_else(|| Error::OnlineCpus {
        path: path.to_path_buf(),
        reason: format!("cannot parse {:?}", text.trim()),
    })
}

fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?);
                if b < a || b - a > 65536 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// The attr of the listener's events: a software dummy event that counts
/// nothing and wakes the reader for every record.
pub fn listener_attr() -> EventAttr {
    let mut a = EventAttr {
        kind: TYPE_SOFTWARE,
        size: ATTR_SIZE_VER0 as u32,
        config: COUNT_SW_DUMMY,
        sample_type: sample::TID | sample::TIME | sample::CPU,
        // With the watermark flag, wakeup is in bytes: any record wakes.
        wakeup: 1,
        ..EventAttr::default()
    };
    a.set_flag(flag::SAMPLE_ID_ALL, true);
    a.set_flag(flag::KSYMBOL, true);
    a.set_flag(flag::BPF_EVENT, true);
    a.set_flag(flag::WATERMARK, true);
    a
}

/// One CPU's event and its mapped ring buffer.
struct Ring {
    cpu: u32,
    fd: OwnedFd,
    base: NonNull<u8>,
    map_len: usize,
    data_offset: usize,
    data_size: usize,
}

impl Ring {
    fn open(cpu: u32, attr: &EventAttr) -> Result<Ring> {
        let bytes = attr.to_bytes();
        // SAFETY: `bytes` is a perf_event_attr in the kernel's layout whose
        // size field (64) is within the buffer; the kernel only reads it.
        // pid -1 with a CPU is a CPU-wide event; no group; close-on-exec.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                bytes.as_ptr(),
                -1 as libc::pid_t,
                cpu as libc::c_int,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            let source = io::Error::last_os_error();
            let hint = open_hint(&source);
            return Err(Error::PerfEventOpen {
                cpu,
                error: source,
                hint,
            });
        }
        // SAFETY: the syscall returned a new file descriptor that nothing
        // else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        let page = page_size();
        let map_len = page * (1 + RING_PAGES);
        // SAFETY: a fresh shared mapping of the event's ring buffer; the
        // kernel checks the length (one control page plus 2^n data pages).
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::Mmap {
                cpu,
                error: io::Error::last_os_error(),
            });
        }
        let Some(base) = NonNull::new(ptr.cast::<u8>()) else {
            return Err(Error::Mmap {
                cpu,
                error: io::Error::other("mmap returned a null pointer"),
            });
        };
        let mut ring = Ring {
            cpu,
            fd,
            base,
            map_len,
            data_offset: page,
            data_size: map_len - page,
        };
        // Kernels since 4.1 say where the data area is; older ones leave 0.
        let (off, size) = (ring.control(DATA_OFFSET), ring.control(DATA_SIZE));
        if off != 0 && size != 0 && off.saturating_add(size) <= map_len as u64 {
            ring.data_offset = off as usize;
            ring.data_size = size as usize;
        }
        Ok(ring)
    }

    /// A u64 field of the control page, read atomically.
    fn control_atomic(&self, at: usize) -> &AtomicU64 {
        // SAFETY: `at` is one of the 8-aligned field offsets of the control
        // page (DATA_HEAD...), inside the mapping, which lives as long as
        // `self`; the kernel updates these fields concurrently, hence atomic.
        unsafe { &*self.base.as_ptr().add(at).cast::<AtomicU64>() }
    }

    fn control(&self, at: usize) -> u64 {
        self.control_atomic(at).load(Ordering::Acquire)
    }

    /// Copies `out.len()` bytes of the data area starting at ring position
    /// `from`, wrapping at its end.
    fn copy_out(&self, from: u64, out: &mut [u8]) {
        let size = self.data_size;
        let start = (from % size as u64) as usize;
        let first = out.len().min(size - start);
        let (a, b) = out.split_at_mut(first);
        // SAFETY: both ranges lie inside the data area of the mapping
        // (start < size, first <= size - start, b.len() <= size); the
        // kernel does not write between data_tail and data_head, which is
        // where the caller reads.
        unsafe {
            let data = self.base.as_ptr().add(self.data_offset);
            std::ptr::copy_nonoverlapping(data.add(start), a.as_mut_ptr(), a.len());
            std::ptr::copy_nonoverlapping(data, b.as_mut_ptr(), b.len().min(size));
        }
    }

    /// Hands every complete record in the ring to `f` and frees its space.
    fn drain(&self, attrs: &Attrs, f: &mut dyn FnMut(Result<Event>)) {
        let head = self.control(DATA_HEAD);
        let mut tail = self.control(DATA_TAIL);
        let mut rec = Vec::new();
        while tail < head {
            let mut hdr = [0u8; 8];
            self.copy_out(tail, &mut hdr);
            let size = u16_at(&hdr, 6).unwrap_or(0);
            if size < 8 || u64::from(size) > head - tail || usize::from(size) > self.data_size {
                f(Err(Error::RecordTooSmall { offset: tail, size }));
                tail = head;
                break;
            }
            rec.resize(usize::from(size), 0);
            self.copy_out(tail, &mut rec);
            f(records::parse(&rec, tail, attrs));
            tail += u64::from(size);
        }
        self.control_atomic(DATA_TAIL)
            .store(tail, Ordering::Release);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `open`, once; no
        // reference into it outlives `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.map_len);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

/// Why perf_event_open failed, in terms of what to change.
fn open_hint(e: &io::Error) -> String {
    let paranoid = std::fs::read_to_string(PARANOID)
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into());
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            " (CPU-wide events need CAP_PERFMON or CAP_SYS_ADMIN, or {PARANOID} at -1 or 0; it is {paranoid}: run as root or lower it)"
        ),
        Some(libc::EINVAL) => " (KSYMBOL and BPF_EVENT records need Linux 5.1 or later)".into(),
        Some(libc::EMFILE) => " (too many open files: raise the limit, ulimit -n)".into(),
        _ => String::new(),
    }
}

/// The listener: every online CPU's event.
pub struct Listener {
    rings: Vec<Ring>,
    attrs: Attrs,
}

impl Listener {
    /// Opens one event per online CPU. A CPU that went offline meanwhile is
    /// skipped; any other failure (permission above all) is an error.
    pub fn open() -> Result<Listener> {
        let attr = listener_attr();
        let mut rings = Vec::new();
        for cpu in online_cpus()? {
            match Ring::open(cpu, &attr) {
                Ok(r) => rings.push(r),
                Err(Error::PerfEventOpen { ref error, .. })
                    if error.raw_os_error() == Some(libc::ENODEV) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Listener {
            rings,
            attrs: Attrs::single(attr),
        })
    }

    /// The CPUs that have an event open.
    pub fn cpus(&self) -> Vec<u32> {
        self.rings.iter().map(|r| r.cpu).collect()
    }

    /// Waits up to `timeout` for records, then hands every record in every
    /// ring to `f` (a CPU's records in order; CPUs one after another). A
    /// signal ends the wait early without error.
    pub fn poll(&mut self, timeout: Duration, f: &mut dyn FnMut(Result<Event>)) -> Result<()> {
        let mut fds: Vec<libc::pollfd> = self
            .rings
            .iter()
            .map(|r| libc::pollfd {
                fd: r.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs that
        // outlives the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(Error::Poll(e));
            }
        }
        for ring in &self.rings {
            ring.drain(&self.attrs, f);
        }
        Ok(())
    }
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Makes SIGINT and SIGTERM set a flag instead of killing the process, so
/// a listener can stop cleanly; returns the flag.
pub fn stop_on_interrupt() -> &'static AtomicBool {
    let handler = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is
    // async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
    &INTERRUPTED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,5"), Some(vec![0, 1, 2, 3, 5]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }
}
