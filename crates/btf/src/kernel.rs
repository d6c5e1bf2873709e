//! Loading BTF into the running kernel with `bpf(BPF_BTF_LOAD)`, whose
//! verifier is the strictest judge of a blob there is.
//!
//! `union bpf_attr` for BPF_BTF_LOAD (include/uapi/linux/bpf.h, Linux 6.18)
//! has no field for a base: user space loads only base BTF. A split BTF's ids
//! and string offsets continue its base's, so [`standalone_blob`] writes base
//! and split as one blob that means the same and can be loaded instead.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use crate::{Btf, Error};

const BPF_BTF_LOAD: libc::c_long = 18;
const BPF_LOG_LEVEL1: u32 = 1;

/// The largest blob BPF_BTF_LOAD takes (BTF_MAX_SIZE in kernel/bpf/btf.c).
pub const MAX_BTF_SIZE: usize = 16 << 20;

/// The first log buffer tried; the kernel says how much it needed if short.
const LOG_START: usize = 1 << 20;
/// The kernel refuses log buffers above `UINT_MAX >> 2`.
const LOG_MAX: usize = (u32::MAX >> 2) as usize;

/// The BPF_BTF_LOAD member of `union bpf_attr`.
#[repr(C)]
#[derive(Default)]
struct BtfLoadAttr {
    btf: u64,
    btf_log_buf: u64,
    btf_size: u32,
    btf_log_size: u32,
    btf_log_level: u32,
    /// Output: the log size the kernel needed, terminating NUL included.
    btf_log_true_size: u32,
    btf_flags: u32,
    btf_token_fd: i32,
}

/// Loads `blob` with BPF_BTF_LOAD. On success the kernel's BTF object is
/// kept for as long as the returned fd is open. On rejection, loads it again
/// with a verbose log (growing the buffer until the whole log fits) and
/// returns that log.
pub fn load(blob: &[u8]) -> Result<OwnedFd, Error> {
    if blob.len() > MAX_BTF_SIZE {
        return Err(Error::KernelTooBig { size: blob.len() });
    }
    // Without a log first: a verbose log of a whole vmlinux runs to tens of
    // megabytes and is only worth its cost when there is an error to explain.
    let error = match btf_load(blob, None) {
        Ok(fd) => return Ok(fd),
        Err((e, _)) if is_permission(&e) => return Err(Error::KernelPermission(e)),
        Err((e, _)) => e,
    };
    let mut size = LOG_START;
    loop {
        let mut buf = vec![0u8; size];
        match btf_load(blob, Some(&mut buf)) {
            // Accepted the second time: nothing to explain.
            Ok(fd) => return Ok(fd),
            Err((e, needed)) if e.raw_os_error() == Some(libc::ENOSPC) && size < LOG_MAX => {
                size = (needed as usize).max(size * 2).min(LOG_MAX);
            }
            Err(_) => {
                let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                let log = String::from_utf8_lossy(&buf[..end]).into_owned();
                return Err(Error::KernelRejected { error, log });
            }
        }
    }
}

fn is_permission(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES))
}

/// One BPF_BTF_LOAD call; on failure the error and the log size the kernel
/// wanted.
fn btf_load(blob: &[u8], log: Option<&mut [u8]>) -> Result<OwnedFd, (io::Error, u32)> {
    let mut attr = BtfLoadAttr {
        btf: blob.as_ptr() as u64,
        btf_size: blob.len() as u32,
        ..BtfLoadAttr::default()
    };
    if let Some(buf) = log {
        attr.btf_log_buf = buf.as_mut_ptr() as u64;
        attr.btf_log_size = buf.len() as u32;
        attr.btf_log_level = BPF_LOG_LEVEL1;
    }
    let attr_ptr: *mut BtfLoadAttr = &mut attr;
    // SAFETY: `attr` is the BPF_BTF_LOAD layout of `union bpf_attr` and we
    // pass its exact size. Its pointers refer to `blob` (read, `btf_size`
    // bytes) and the log buffer (written, at most `btf_log_size` bytes), both
    // borrowed for the whole call. The kernel writes `btf_log_true_size` back
    // through `attr_ptr`, which points at our live, mutable `attr`.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_BTF_LOAD,
            attr_ptr,
            std::mem::size_of::<BtfLoadAttr>(),
        )
    };
    if ret < 0 {
        return Err((io::Error::last_os_error(), attr.btf_log_true_size));
    }
    // SAFETY: a non-negative result of BPF_BTF_LOAD is a new file descriptor
    // that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as i32) })
}

/// `btf` as one base blob that BPF_BTF_LOAD takes: itself when it is base
/// BTF; for split BTF, its base's types then its own, and its base's strings
/// then its own, which keeps every id and string offset as it was.
pub fn standalone_blob(btf: &Btf) -> Vec<u8> {
    if btf.base().is_none() {
        return btf.to_bytes();
    }
    fn collect(btf: &Btf, types: &mut Vec<crate::Type>, strings: &mut Vec<u8>) {
        if let Some(base) = btf.base() {
            collect(base, types, strings);
        }
        types.extend_from_slice(btf.own_types());
        strings.extend_from_slice(btf.string_section());
    }
    let mut types = Vec::new();
    let mut strings = Vec::new();
    collect(btf, &mut types, &mut strings);
    let mut flat = Btf::new();
    flat.set_contents(types, strings);
    flat.to_bytes()
}
