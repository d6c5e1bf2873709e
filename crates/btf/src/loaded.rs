//! BTF objects loaded in the running kernel, as `bpftool btf list` and
//! `bpftool btf dump id N` see them: their ids (BPF_BTF_GET_NEXT_ID), their
//! info and raw bytes (BPF_BTF_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD), and
//! the programs and maps that use them (their `btf_id`). Root or CAP_SYS_ADMIN.
//!
//! Info structs are read as zeroed byte buffers at the field offsets of
//! include/uapi/linux/bpf.h: the kernel fills what it knows and checks that
//! the rest is zero, so a buffer larger than this kernel's struct is fine.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::Error;

const BPF_PROG_GET_NEXT_ID: libc::c_long = 11;
const BPF_MAP_GET_NEXT_ID: libc::c_long = 12;
const BPF_PROG_GET_FD_BY_ID: libc::c_long = 13;
const BPF_MAP_GET_FD_BY_ID: libc::c_long = 14;
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;
const BPF_BTF_GET_FD_BY_ID: libc::c_long = 19;
const BPF_BTF_GET_NEXT_ID: libc::c_long = 23;

/// `struct bpf_prog_info.btf_id`.
const PROG_INFO_BTF_ID: usize = 128;
/// `struct bpf_map_info.btf_id`.
const MAP_INFO_BTF_ID: usize = 64;
/// Room for either info struct of any kernel this knows (bpf_prog_info is
/// 232 bytes in 6.18).
const INFO_LEN: usize = 512;
/// bpftool's name buffer (BTF names are module names: MODULE_NAME_LEN 56).
const NAME_LEN: usize = 64;

/// The GET_NEXT_ID / GET_FD_BY_ID member of `union bpf_attr`.
#[repr(C)]
#[derive(Default)]
struct IdAttr {
    start_or_id: u32,
    next_id: u32,
    open_flags: u32,
}

/// The BPF_OBJ_GET_INFO_BY_FD member of `union bpf_attr`.
#[repr(C)]
#[derive(Default)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// `struct bpf_btf_info`.
#[repr(C)]
#[derive(Default)]
struct BtfInfo {
    btf: u64,
    btf_size: u32,
    id: u32,
    name: u64,
    name_len: u32,
    kernel_btf: u32,
}

/// One bpf(2) call on `attr`.
fn sys_bpf<T>(cmd: libc::c_long, attr: &mut T) -> io::Result<libc::c_long> {
    let ptr: *mut T = attr;
    // SAFETY: every `T` passed here is a `#[repr(C)]` prefix of `union
    // bpf_attr` for `cmd`, passed with its exact size; the pointers inside
    // it (info and name buffers) point at live buffers of the lengths given
    // next to them, borrowed for the whole call.
    let ret = unsafe { libc::syscall(libc::SYS_bpf, cmd, ptr, std::mem::size_of::<T>()) };
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The ids of every object of one kind, ascending (`*_GET_NEXT_ID`).
fn ids(cmd: libc::c_long) -> io::Result<Vec<u32>> {
    let mut out = Vec::new();
    let mut attr = IdAttr::default();
    loop {
        match sys_bpf(cmd, &mut attr) {
            Ok(_) => {
                out.push(attr.next_id);
                attr.start_or_id = attr.next_id;
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(out),
            Err(e) => return Err(e),
        }
    }
}

/// An fd for object `id` (`*_GET_FD_BY_ID`); None when it went away.
fn fd_by_id(cmd: libc::c_long, id: u32) -> io::Result<Option<OwnedFd>> {
    let mut attr = IdAttr {
        start_or_id: id,
        ..IdAttr::default()
    };
    match sys_bpf(cmd, &mut attr) {
        // SAFETY: a non-negative result of *_GET_FD_BY_ID is a new file
        // descriptor that nothing else owns.
        Ok(fd) => Ok(Some(unsafe { OwnedFd::from_raw_fd(fd as i32) })),
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

fn info_by_fd<T>(fd: &OwnedFd, info: &mut T) -> io::Result<()> {
    let mut attr = InfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: std::mem::size_of::<T>() as u32,
        info: info as *mut T as u64,
    };
    sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr).map(drop)
}

/// One loaded BTF object, as `bpftool btf list` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedBtf {
    /// The object id (`bpftool btf show id N`).
    pub id: u32,
    /// "vmlinux", a module's name, or what a loader named it (may be empty).
    pub name: String,
    /// The size of its raw BTF, in bytes.
    pub size: u32,
    /// vmlinux's or a module's, rather than loaded by a program.
    pub kernel: bool,
    /// Programs and maps whose `btf_id` is this object, in the order
    /// bpftool lists them.
    pub prog_ids: Vec<u32>,
    /// Maps whose `btf_id` is this object, in the order bpftool lists them.
    pub map_ids: Vec<u32>,
}

fn bpf_err(what: &'static str) -> impl Fn(io::Error) -> Error {
    move |error| {
        if matches!(error.raw_os_error(), Some(libc::EPERM | libc::EACCES)) {
            Error::LoadedPermission(error)
        } else {
            Error::Bpf { what, error }
        }
    }
}

/// The `btf_id` of every program (or map), object id by object id.
fn owners(
    next: libc::c_long,
    by_id: libc::c_long,
    btf_id_at: usize,
) -> Result<Vec<(u32, u32)>, Error> {
    let what = if next == BPF_PROG_GET_NEXT_ID {
        "listing BPF programs"
    } else {
        "listing BPF maps"
    };
    let mut out = Vec::new();
    for id in ids(next).map_err(bpf_err(what))? {
        let Some(fd) = fd_by_id(by_id, id).map_err(bpf_err(what))? else {
            continue;
        };
        let mut info = [0u8; INFO_LEN];
        info_by_fd(&fd, &mut info).map_err(bpf_err(what))?;
        let btf_id = u32::from_ne_bytes([
            info[btf_id_at],
            info[btf_id_at + 1],
            info[btf_id_at + 2],
            info[btf_id_at + 3],
        ]);
        if btf_id != 0 {
            out.push((btf_id, id));
        }
    }
    Ok(out)
}

/// The info of BTF object `fd`, and its bytes if `data`.
fn btf_info(fd: &OwnedFd, data: bool) -> io::Result<(BtfInfo, String, Vec<u8>)> {
    let mut name = [0u8; NAME_LEN];
    let mut info = BtfInfo {
        name: name.as_mut_ptr() as u64,
        name_len: NAME_LEN as u32,
        ..BtfInfo::default()
    };
    info_by_fd(fd, &mut info)?;
    let mut bytes = Vec::new();
    if data {
        bytes = vec![0u8; info.btf_size as usize];
        info = BtfInfo {
            btf: bytes.as_mut_ptr() as u64,
            btf_size: bytes.len() as u32,
            name: name.as_mut_ptr() as u64,
            name_len: NAME_LEN as u32,
            ..BtfInfo::default()
        };
        info_by_fd(fd, &mut info)?;
        bytes.truncate(info.btf_size as usize);
    }
    let end = name.iter().position(|&b| b == 0).unwrap_or(NAME_LEN);
    Ok((
        info,
        String::from_utf8_lossy(&name[..end]).into_owned(),
        bytes,
    ))
}

/// Every BTF object loaded in the kernel, by id, with the programs and
/// maps that use it. Needs CAP_SYS_ADMIN ([`Error::LoadedPermission`]).
pub fn list() -> Result<Vec<LoadedBtf>, Error> {
    let progs = owners(
        BPF_PROG_GET_NEXT_ID,
        BPF_PROG_GET_FD_BY_ID,
        PROG_INFO_BTF_ID,
    )?;
    let maps = owners(BPF_MAP_GET_NEXT_ID, BPF_MAP_GET_FD_BY_ID, MAP_INFO_BTF_ID)?;
    // bpftool keeps owners in a libbpf hashmap, which puts each new entry
    // first among those of its key: the highest object id comes first.
    let owned_by = |table: &[(u32, u32)], btf: u32| -> Vec<u32> {
        table
            .iter()
            .rev()
            .filter(|&&(b, _)| b == btf)
            .map(|&(_, id)| id)
            .collect()
    };
    let what = "listing BTF objects";
    let mut out = Vec::new();
    for id in ids(BPF_BTF_GET_NEXT_ID).map_err(bpf_err(what))? {
        let Some(fd) = fd_by_id(BPF_BTF_GET_FD_BY_ID, id).map_err(bpf_err(what))? else {
            continue;
        };
        let (info, name, _) = btf_info(&fd, false).map_err(bpf_err(what))?;
        out.push(LoadedBtf {
            id,
            name,
            size: info.btf_size,
            kernel: info.kernel_btf != 0,
            prog_ids: owned_by(&progs, id),
            map_ids: owned_by(&maps, id),
        });
    }
    Ok(out)
}

/// The raw bytes of BTF object `id`, its name, and whether it is the
/// kernel's (vmlinux or a module: a module's is split over vmlinux).
/// [`Error::NoSuchBtfId`] when no object has that id.
pub fn read(id: u32) -> Result<(Vec<u8>, String, bool), Error> {
    let what = "reading a BTF object";
    let fd = fd_by_id(BPF_BTF_GET_FD_BY_ID, id)
        .map_err(bpf_err(what))?
        .ok_or_else(|| Error::NoSuchBtfId(id))?;
    let (info, name, bytes) = btf_info(&fd, true).map_err(bpf_err(what))?;
    Ok((bytes, name, info.kernel_btf != 0))
}
