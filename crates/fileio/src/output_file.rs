//! Writing an output file (`-o`, `--embed`, `pahole -J` in place,
//! `--btf_encode_detached`) without harming what is at its path.
//!
//! - `-` is standard output.
//! - A symlink is followed: its target gets the content, the link stays.
//! - A device node, FIFO or socket is written into, never replaced: `-o
//!   /dev/null` as root must not delete the system's /dev/null, and a
//!   reader of a FIFO must get the bytes.
//! - A regular file (or a missing one) is written to a temporary file
//!   `.NAME.tmp.PID` next to it and renamed over it, so that readers see the
//!   old file or the whole new one and a failed run leaves it as it was.
//!   The new file keeps the old one's owner, group and mode. A file with
//!   other hard links is replaced too (pahole writes it in place): written
//!   in place, a full disk or a signal halfway would leave every name with
//!   half a file, and an output that is also the input (`pahole -J` of a
//!   hard-linked object) would be read while it is overwritten. The path
//!   given gets the new file; the other links keep the old content, which
//!   a warning on stderr says. Only a file with a single link whose owner
//!   cannot be given to a new file (not root), or in a directory where no
//!   file can be created, is written in place, as pahole does; one with
//!   other links is then refused.
//! - An output that is the same file as an input (the same device and
//!   inode, through any path, symlink or hard link) is refused before
//!   anything is read: [`refuse_input`].
//! - SIGINT and SIGTERM remove the temporary file before the process dies;
//!   one left by SIGKILL (its PID no longer running) is removed by the next
//!   write to the same path.
//!
//! No fsync, as no linker or objcopy does one: the rename alone gives
//! readers the whole file, and a kernel build writes thousands of modules,
//! for which a flush per module cost more than the encode (xfs.ko: 1.2 s of
//! wall time for 0.4 s of CPU).

use std::ffi::CString;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Once;

/// A piece of a file being written.
pub enum Part<'a> {
    /// Bytes from memory.
    Bytes(&'a [u8]),
    /// `bytes`, which are also `from`'s bytes at `offset`: copied from file
    /// to file in the kernel (`copy_file_range`) where it can, so that a
    /// file system that shares extents (XFS, Btrfs) need not copy them.
    Copy {
        /// The file the bytes come from.
        from: &'a File,
        /// Where they are in it, in bytes from its start.
        offset: u64,
        /// The same bytes in memory: written from here where the kernel
        /// cannot copy.
        bytes: &'a [u8],
    },
}

/// Writes `bytes` to `path` (see the module's rules). `perm`: the
/// permissions of a file created where nothing was.
pub fn write(path: &Path, bytes: &[u8], perm: Option<Permissions>) -> io::Result<()> {
    write_parts(path, &[Part::Bytes(bytes)], perm)
}

/// [`write()`] of the concatenation of `parts`.
pub fn write_parts(path: &Path, parts: &[Part], perm: Option<Permissions>) -> io::Result<()> {
    if path.as_os_str() == "-" {
        let mut out = io::stdout().lock();
        for part in parts {
            out.write_all(part.bytes())?;
        }
        return out.flush();
    }
    let target = follow_symlinks(path)?;
    match std::fs::metadata(&target) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => replace(&target, parts, None, perm, false),
        Err(e) => Err(e),
        Ok(m) if m.is_dir() => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        )),
        Ok(m) if m.is_file() => {
            replace(&target, parts, Some(&m), perm, m.nlink() == 1)?;
            if m.nlink() > 1 {
                eprintln!(
                    "{}: warning: {} had {} other hard link{}: it is a new file now, they keep the old content",
                    crate::program_name(),
                    target.display(),
                    m.nlink() - 1,
                    if m.nlink() == 2 { "" } else { "s" }
                );
            }
            Ok(())
        }
        Ok(m) => {
            debug_assert!(
                m.file_type().is_char_device()
                    || m.file_type().is_block_device()
                    || m.file_type().is_fifo()
                    || m.file_type().is_socket()
            );
            // A special file: written into, neither created nor truncated.
            let mut f = OpenOptions::new().write(true).open(&target)?;
            for part in parts {
                f.write_all(part.bytes())?;
            }
            Ok(())
        }
    }
}

impl Part<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Part::Bytes(b) => b,
            Part::Copy { bytes, .. } => bytes,
        }
    }
}

/// The path that `path`'s symlinks lead to (a missing last target is
/// returned as it is named, to be created).
fn follow_symlinks(path: &Path) -> io::Result<PathBuf> {
    // Linux's own limit (MAXSYMLINKS).
    const MAX_LINKS: usize = 40;
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&at)?;
                at = match at.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            Ok(_) => return Ok(at),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(at),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::from_raw_os_error(libc::ELOOP))
}

/// The directory of `path` and the prefix of its temporary files.
fn temp_prefix(path: &Path) -> (PathBuf, String) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (dir, format!(".{name}.tmp."))
}

/// Removes the temporary files of `path` whose process is gone (killed by
/// SIGKILL, or by a power cut).
fn remove_stale_temps(dir: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|p| p.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only asks whether the process exists.
        let gone = pid > 0
            && unsafe { libc::kill(pid, 0) } != 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            // Best effort: another run may be removing it too.
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Writes a temporary file next to `target` and renames it over `target`.
/// `old`: what is at `target` now (its owner, group and mode are kept).
/// Where that cannot be done, `target` is written in place if `in_place`
/// (an existing file with no other link), else refused.
fn replace(
    target: &Path,
    parts: &[Part],
    old: Option<&std::fs::Metadata>,
    perm: Option<Permissions>,
    in_place: bool,
) -> io::Result<()> {
    let write_in_place = |target: &Path, parts: &[Part], why: &str| {
        if in_place {
            return write_in_place(target, parts);
        }
        let links = old.map_or(0, |m| m.nlink().saturating_sub(1));
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "cannot be replaced ({why}) and has {links} other hard links: not written in place, \
                 where a failure halfway would leave half a file under every name"
            ),
        ))
    };
    let (dir, prefix) = temp_prefix(target);
    remove_stale_temps(&dir, &prefix);
    let tmp = dir.join(format!("{prefix}{}", std::process::id()));
    // Registered before it exists: a signal between the creation and the
    // registration would leave the file behind (a signal before the
    // creation unlinks nothing).
    remove_on_signal(&tmp);
    let file = match OpenOptions::new().write(true).create_new(true).open(&tmp) {
        Ok(f) => f,
        // A writable file in a directory that is not: as pahole, in place.
        Err(e)
            if old.is_some()
                && matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM)) =>
        {
            return write_in_place(target, parts, "its directory is not writable");
        }
        Err(e) => return Err(e),
    };
    let result = (|| {
        if let Some(old) = old {
            use std::os::fd::AsRawFd;
            // SAFETY: an open descriptor; the ids are plain integers.
            if unsafe { libc::fchown(file.as_raw_fd(), old.uid(), old.gid()) } != 0 {
                // The owner cannot be kept (not root): then the file itself
                // is written, which keeps it.
                return Ok(false);
            }
            // After fchown, which clears the set-id bits.
            file.set_permissions(Permissions::from_mode(old.mode() & 0o7777))?;
        } else if let Some(perm) = perm {
            file.set_permissions(perm)?;
        }
        write_all_parts(&file, parts)?;
        std::fs::rename(&tmp, target)?;
        Ok(true)
    })();
    drop(file);
    let renamed = matches!(result, Ok(true));
    if !renamed {
        // Best effort: the error that matters is the one being returned.
        let _ = std::fs::remove_file(&tmp);
    }
    match result {
        Ok(true) => Ok(()),
        Ok(false) => write_in_place(target, parts, "its owner cannot be given to a new file"),
        Err(e) => Err(e),
    }
}

/// Writes `parts` over the regular file `target` from its first byte and
/// cuts it at their end. It is not truncated first: the parts may be
/// `target`'s own mapped bytes, at the offsets they are written to.
fn write_in_place(target: &Path, parts: &[Part]) -> io::Result<()> {
    let file = OpenOptions::new().write(true).open(target)?;
    write_all_parts(&file, parts)?;
    let len: u64 = parts.iter().map(|p| p.bytes().len() as u64).sum();
    file.set_len(len)
}

/// Writes `parts` to `file` at its position.
fn write_all_parts(file: &File, parts: &[Part]) -> io::Result<()> {
    let mut f = io::BufWriter::with_capacity(1 << 20, file);
    for part in parts {
        match *part {
            Part::Bytes(b) => f.write_all(b)?,
            Part::Copy {
                from,
                offset,
                bytes,
            } => {
                f.flush()?;
                copy_range(f.get_ref(), from, offset, bytes)?;
            }
        }
    }
    f.flush()
}

/// Appends `bytes`, which are `from`'s bytes at `offset`, to `out` (at its
/// position): by `copy_file_range`, which copies in the kernel, and by a
/// write of what it did not copy (a kernel or a pair of file systems it
/// does not serve, an input that ended early, a copy of a file to itself).
fn copy_range(mut out: &File, from: &File, offset: u64, bytes: &[u8]) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut done = 0;
    if let Ok(mut off_in) = libc::loff_t::try_from(offset) {
        while done < bytes.len() {
            // SAFETY: two open descriptors and a valid offset pointer; with
            // a null output offset the kernel writes at `out`'s position
            // and advances it, as a write would.
            let n = unsafe {
                libc::copy_file_range(
                    from.as_raw_fd(),
                    &mut off_in,
                    out.as_raw_fd(),
                    std::ptr::null_mut(),
                    bytes.len() - done,
                    0,
                )
            };
            match usize::try_from(n) {
                Ok(n) if n > 0 => done += n,
                _ => break,
            }
        }
    }
    out.write_all(bytes.get(done..).unwrap_or_default())
}

/// Temporary files to remove if SIGINT or SIGTERM arrives: C strings,
/// never freed (the handler may be reading one while a writer finishes).
static TEMPS: [AtomicPtr<libc::c_char>; 8] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 8];

/// Removes `tmp` when SIGINT or SIGTERM ends the process (the handlers are
/// installed on first use, unless the signal is ignored, as under nohup).
fn remove_on_signal(tmp: &Path) {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: sigaction with zeroed structs is the documented way to
            // read and set a handler; the handler only calls
            // async-signal-safe functions.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction != libc::SIG_DFL
                {
                    continue;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
                new.sa_flags = libc::SA_RESETHAND;
                libc::sigemptyset(&mut new.sa_mask);
                libc::sigaction(sig, &new, std::ptr::null_mut());
            }
        }
    });
    let Ok(c) = CString::new(tmp.as_os_str().as_bytes()) else {
        return;
    };
    let c = c.into_raw();
    // A slot that is free, or the oldest one: a process writes its
    // outputs one after the other, so a full table holds finished ones.
    for slot in &TEMPS {
        if slot
            .compare_exchange(std::ptr::null_mut(), c, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
    TEMPS[0].store(c, Ordering::SeqCst);
}

extern "C" fn on_signal(sig: libc::c_int) {
    unlink_temps();
    // SAFETY: SA_RESETHAND restored the default action: the process dies
    // of the signal, as it would have without this handler.
    unsafe {
        libc::raise(sig);
    }
}

/// Removes the temporary files of outputs being written: from a signal
/// handler (async-signal-safe: unlink only).
pub(crate) fn unlink_temps() {
    for slot in &TEMPS {
        let p = slot.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: a NUL-terminated string that is never freed; unlink
            // and raise are async-signal-safe. A temp that was already
            // renamed is gone under that name: unlink fails harmlessly
            // (nothing else takes a `.NAME.tmp.PID` name of this PID).
            unsafe {
                libc::unlink(p);
            }
        }
    }
}

/// An output path that names an input file.
#[derive(Debug, thiserror::Error)]
#[error("{output} is the same file as the input {input}: writing it would destroy the input (give another output)")]
pub struct OutputIsInput {
    /// The output path given.
    pub output: PathBuf,
    /// The input path given.
    pub input: PathBuf,
}

/// Refuses `output` if it is the same file as one of `inputs` (the same
/// device and inode, symlinks followed): to be called before any input is
/// read. A missing output, standard output (`-`) and special files
/// (devices, FIFOs) are never refused.
pub fn refuse_input(output: &Path, inputs: &[&Path]) -> Result<(), OutputIsInput> {
    if output.as_os_str() == "-" {
        return Ok(());
    }
    let Ok(out) = std::fs::metadata(output) else {
        return Ok(());
    };
    if !out.is_file() {
        return Ok(());
    }
    for input in inputs {
        let same =
            std::fs::metadata(input).is_ok_and(|m| m.dev() == out.dev() && m.ino() == out.ino());
        if same {
            return Err(OutputIsInput {
                output: output.to_owned(),
                input: input.to_path_buf(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_written(parts: &[Part]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        write_parts(&path, parts, None).unwrap();
        std::fs::read(&path).unwrap()
    }

    #[test]
    fn copy_parts_copy_from_the_offset_in_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, b"abcdefgh").unwrap();
        let from = File::open(&path).unwrap();
        let parts = [
            Part::Bytes(b"head"),
            Part::Copy {
                from: &from,
                offset: 3,
                bytes: b"defgh",
            },
        ];
        assert_eq!(bytes_written(&parts), b"headdefgh");
    }

    #[test]
    fn copy_parts_write_what_the_kernel_cannot_copy() {
        // A descriptor open for writing only: copy_file_range refuses it.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        std::fs::write(&path, b"abcdefgh").unwrap();
        let from = OpenOptions::new().write(true).open(&path).unwrap();
        let parts = [
            Part::Bytes(b"head"),
            Part::Copy {
                from: &from,
                offset: 3,
                bytes: b"defgh",
            },
        ];
        assert_eq!(bytes_written(&parts), b"headdefgh");
    }

    /// The test binary runs itself with this variable set: the child
    /// registers a temporary file and is killed by SIGINT or SIGTERM.
    const CHILD: &str = "BTF_OUTPUT_FILE_SIGNAL_CHILD";

    #[test]
    fn sigint_and_sigterm_remove_the_temporary_file() {
        use std::os::unix::process::ExitStatusExt;
        if let Some(tmp) = std::env::var_os(CHILD) {
            let (tmp, sig) = (PathBuf::from(tmp), std::env::var("SIG").unwrap());
            std::fs::write(&tmp, b"half a vmlinux").unwrap();
            remove_on_signal(&tmp);
            // SAFETY: raise only sends a signal to this thread.
            unsafe { libc::raise(sig.parse().unwrap()) };
            unreachable!("the signal killed the process");
        }
        let dir = tempfile::tempdir().unwrap();
        for sig in [libc::SIGINT, libc::SIGTERM] {
            let tmp = dir.path().join(format!(".out.tmp.{sig}"));
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "output_file::tests::sigint_and_sigterm_remove_the_temporary_file",
                ])
                .env(CHILD, &tmp)
                .env("SIG", sig.to_string())
                .status()
                .unwrap();
            assert_eq!(status.signal(), Some(sig), "{status:?}");
            assert!(!tmp.exists(), "signal {sig} left {}", tmp.display());
        }
    }

    #[test]
    fn a_stale_temp_of_a_dead_process_is_removed_and_a_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        // A PID that no process has: above the kernel's pid_max limit.
        let stale = dir.path().join(".out.tmp.2000000000");
        let live = dir.path().join(format!(".out.tmp.{}", std::process::id()));
        std::fs::write(&stale, b"old").unwrap();
        std::fs::write(&live, b"mine").unwrap();
        let (d, prefix) = temp_prefix(&out);
        remove_stale_temps(&d, &prefix);
        assert!(!stale.exists());
        assert!(live.exists());
    }
}
