//! A mapped input that shrinks while it is read: SIGBUS, turned into an
//! error naming the file.
//!
//! Inputs stay mapped (see [`input_file`](crate::input_file) for why). When
//! another process truncates one, touching a page past its new end raises
//! SIGBUS, which by default kills the process without a word. The handler
//! installed here (on the first mapped input, chained to the one before
//! it: Rust's own, which reports stack overflows) finds the mapping of the
//! faulting address in /proc/self/maps; if it maps a file opened as an
//! input, it prints `PROGRAM: error: PATH: changed while it was read ...`,
//! removes the temporary files of outputs being written, and exits with
//! status 1. Any other SIGBUS goes to the previous handler, or kills the
//! process as before.
//!
//! The handler calls only async-signal-safe functions (open, read, write,
//! unlink, _exit) and reads only what was stored before: C strings that
//! are never freed and atomics.

use std::ffi::{c_char, c_int, c_void, CString};
use std::fs::Metadata;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Once;

/// An input file that is mapped: its device, inode and path.
struct Watched {
    dev: AtomicU64,
    ino: AtomicU64,
    path: AtomicPtr<c_char>,
}

const SLOTS: usize = 64;

static WATCHED: [Watched; SLOTS] = [const {
    Watched {
        dev: AtomicU64::new(0),
        ino: AtomicU64::new(0),
        path: AtomicPtr::new(std::ptr::null_mut()),
    }
}; SLOTS];
static NEXT: AtomicUsize = AtomicUsize::new(0);
/// The handler installed before this one (a leaked `sigaction`).
static OLD: AtomicPtr<libc::sigaction> = AtomicPtr::new(std::ptr::null_mut());
/// `PROGRAM: error: `.
static PREFIX: AtomicPtr<c_char> = AtomicPtr::new(std::ptr::null_mut());
/// A thread is reporting: the others wait for its exit.
static REPORTING: AtomicBool = AtomicBool::new(false);

/// Names `path`, mapped with metadata `meta`, in the error a SIGBUS in a
/// mapping of it becomes (the handler is installed on first use).
pub(crate) fn watch(path: &Path, meta: &Metadata) {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(install);
    let (dev, ino) = (meta.dev(), meta.ino());
    let known = WATCHED.iter().any(|w| {
        !w.path.load(Ordering::Acquire).is_null()
            && w.dev.load(Ordering::Relaxed) == dev
            && w.ino.load(Ordering::Relaxed) == ino
    });
    if known {
        return;
    }
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    let slot = &WATCHED[NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS];
    // Unpublished while it changes; the old path is leaked, as the handler
    // may be reading it.
    slot.path.store(std::ptr::null_mut(), Ordering::Release);
    slot.dev.store(dev, Ordering::Relaxed);
    slot.ino.store(ino, Ordering::Relaxed);
    slot.path.store(c.into_raw(), Ordering::Release);
}

fn install() {
    if let Ok(c) = CString::new(format!("{}: error: ", crate::program_name())) {
        PREFIX.store(c.into_raw(), Ordering::Release);
    }
    // SAFETY: sigaction with zeroed structs is the documented way to read
    // and set a handler; the handler only calls async-signal-safe
    // functions.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 {
            return;
        }
        OLD.store(Box::into_raw(Box::new(old)), Ordering::Release);
        let mut new: libc::sigaction = std::mem::zeroed();
        new.sa_sigaction = on_sigbus as extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void)
            as libc::sighandler_t;
        // On the alternate stack where the thread has one (Rust gives its
        // threads one), as the handler before this one ran.
        new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut new.sa_mask);
        libc::sigaction(libc::SIGBUS, &new, std::ptr::null_mut());
    }
}

extern "C" fn on_sigbus(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    // SAFETY: with SA_SIGINFO the kernel passes a valid siginfo.
    let addr = unsafe { (*info).si_addr() } as u64;
    if let Some(m) = mapping_at(addr) {
        if let Some(path) = watched(&m) {
            report(path, addr - m.start + m.offset);
        }
    }
    chain(sig, info, ctx);
}

/// Prints the error and exits 1.
fn report(path: *const c_char, offset: u64) -> ! {
    if REPORTING.swap(true, Ordering::SeqCst) {
        // Another thread faulted first and is exiting.
        loop {
            // SAFETY: pause only waits for a signal.
            unsafe {
                libc::pause();
            }
        }
    }
    let prefix = PREFIX.load(Ordering::Acquire);
    if !prefix.is_null() {
        write_cstr(prefix);
    }
    write_cstr(path);
    write_bytes(b": changed while it was read (its bytes at offset 0x");
    write_hex(offset);
    write_bytes(b" are gone: truncated by another process?)\n");
    crate::output_file::unlink_temps();
    // SAFETY: _exit ends the process without running anything else.
    unsafe { libc::_exit(1) }
}

/// Passes the signal to the handler before this one, or restores the
/// default action, so that the fault kills the process when it repeats.
fn chain(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let old = OLD.load(Ordering::Acquire);
    // SAFETY: `old` was leaked by install and is never freed; calling the
    // previous handler as it was registered (SA_SIGINFO or not) is what the
    // kernel would have done.
    unsafe {
        if old.is_null()
            || (*old).sa_sigaction == libc::SIG_DFL
            || (*old).sa_sigaction == libc::SIG_IGN
        {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
        } else if (*old).sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void) =
                std::mem::transmute((*old).sa_sigaction);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(c_int) = std::mem::transmute((*old).sa_sigaction);
            f(sig);
        }
    }
}

/// A line of /proc/self/maps.
#[derive(Default)]
struct Mapping {
    start: u64,
    end: u64,
    offset: u64,
    major: u64,
    minor: u64,
    ino: u64,
}

/// The path watched for the file `m` maps: by device and inode, or by
/// inode alone (overlayfs and btrfs show another device in the maps than
/// stat gives).
fn watched(m: &Mapping) -> Option<*const c_char> {
    if m.ino == 0 {
        return None;
    }
    let find = |same_dev: bool| {
        WATCHED.iter().find_map(|w| {
            let path = w.path.load(Ordering::Acquire);
            let dev = w.dev.load(Ordering::Relaxed);
            let hit = !path.is_null()
                && w.ino.load(Ordering::Relaxed) == m.ino
                && (!same_dev
                    || (u64::from(libc::major(dev)) == m.major
                        && u64::from(libc::minor(dev)) == m.minor));
            hit.then_some(path.cast_const())
        })
    };
    find(true).or_else(|| find(false))
}

/// The mapping that holds `addr`, from /proc/self/maps, parsed as it is
/// read (no allocation): `start-end perms offset major:minor inode path`.
fn mapping_at(addr: u64) -> Option<Mapping> {
    // SAFETY: open, read and close with a NUL-terminated path and a
    // buffer of the length given.
    let fd = unsafe {
        libc::open(
            c"/proc/self/maps".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    let mut buf = [0u8; 512];
    let mut line = Mapping::default();
    let (mut field, mut cur, mut in_field) = (0u8, 0u64, false);
    let mut found = None;
    'read: loop {
        // SAFETY: as above.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        let Ok(n) = usize::try_from(n) else { break };
        if n == 0 {
            break;
        }
        for &b in buf.get(..n).unwrap_or_default() {
            if b == b'\n' {
                if field == 4 && in_field {
                    line.ino = cur;
                }
                if line.start <= addr && addr < line.end {
                    found = Some(line);
                    break 'read;
                }
                line = Mapping::default();
                (field, cur, in_field) = (0, 0, false);
                continue;
            }
            if field > 4 {
                continue;
            }
            if b == b' ' {
                if in_field {
                    match field {
                        0 => line.end = cur,
                        2 => line.offset = cur,
                        3 => line.minor = cur,
                        4 => line.ino = cur,
                        _ => {}
                    }
                    field += 1;
                    (cur, in_field) = (0, false);
                }
                continue;
            }
            in_field = true;
            match (field, b) {
                (0, b'-') => (line.start, cur) = (cur, 0),
                (3, b':') => (line.major, cur) = (cur, 0),
                (4, b'0'..=b'9') => cur = cur.wrapping_mul(10).wrapping_add(u64::from(b - b'0')),
                (0 | 2 | 3, _) => {
                    let digit = match b {
                        b'0'..=b'9' => b - b'0',
                        b'a'..=b'f' => b - b'a' + 10,
                        _ => 0,
                    };
                    cur = (cur << 4) | u64::from(digit);
                }
                _ => {}
            }
        }
    }
    // SAFETY: closes the descriptor opened above.
    unsafe {
        libc::close(fd);
    }
    found
}

fn write_bytes(bytes: &[u8]) {
    // SAFETY: write to stderr from a buffer of the length given; a short
    // or failed write of an error message is all that can go wrong.
    unsafe {
        libc::write(2, bytes.as_ptr().cast(), bytes.len());
    }
}

fn write_cstr(s: *const c_char) {
    // SAFETY: `s` is a NUL-terminated string leaked by this module.
    let len = unsafe { libc::strlen(s) };
    // SAFETY: as write_bytes, over the string's bytes.
    unsafe {
        libc::write(2, s.cast(), len);
    }
}

fn write_hex(v: u64) {
    let mut buf = [0u8; 16];
    let mut at = buf.len();
    let mut v = v;
    loop {
        at -= 1;
        let d = (v & 15) as u8;
        buf[at] = if d < 10 { b'0' + d } else { b'a' + d - 10 };
        v >>= 4;
        if v == 0 || at == 0 {
            break;
        }
    }
    write_bytes(buf.get(at..).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mapping_of_an_address_is_found_in_proc_self_maps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![1u8; 3 * 4096]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a read-only mapping of a file this test alone has.
        let map = unsafe { memmap2::MmapOptions::new().offset(4096).map(&file) }.unwrap();
        let addr = map.as_ptr() as u64 + 10;
        let m = mapping_at(addr).expect("mapped");
        assert_eq!(m.ino, file.metadata().unwrap().ino());
        assert_eq!(addr - m.start + m.offset, 4096 + 10);
        watch(&path, &file.metadata().unwrap());
        let p = watched(&m).expect("watched");
        // SAFETY: watch stored a NUL-terminated string, never freed.
        let p = unsafe { std::ffi::CStr::from_ptr(p) };
        assert_eq!(p.to_bytes(), path.as_os_str().as_bytes());
    }
}
