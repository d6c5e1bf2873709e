//! Putting a [`Program`] together: memory (a dump, or /proc/kcore), symbols
//! (a file given, else the kernel's own tables read from memory) and BTF (a
//! file given, /sys/kernel/btf/vmlinux live, else the BTF in memory).

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use kmem::kallsyms::Tables;
use kmem::Kernel;

use crate::error::{Error, Result};
use crate::program::Program;

/// What to open: `btfkit inspect`'s inputs. `Default` is the live kernel
/// with its own BTF and symbols.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// A dump; `None` is the live kernel.
    pub vmcore: Option<PathBuf>,
    /// The kernel's BTF (raw or in an ELF's `.BTF`; `--btf`). `None`:
    /// /sys/kernel/btf/vmlinux for the live kernel, else the BTF the
    /// kernel holds in its memory (`__start_BTF`..`__stop_BTF`).
    pub btf: Option<PathBuf>,
    /// /proc/kallsyms text or a System.map (moved by KERNELOFFSET).
    pub kallsyms: Option<PathBuf>,
    /// Modules' BTF files (module name, file): split BTF over `btf`, with
    /// the variables the kernel's module BTF lacks (see kernel::module_btf).
    pub btf_modules: Vec<(String, PathBuf)>,
}

/// Opens the kernel `opts` names: its memory, its symbols (with the
/// modules' read from memory), its BTF and the modules' BTF.
pub fn open(opts: &Options) -> Result<Program> {
    let kernel = match &opts.vmcore {
        Some(p) => open_dump(p)?,
        None => Kernel::live()?,
    };
    let syms = symbols(&kernel, opts)?;
    let btf = match &opts.btf {
        Some(p) => btf::load_file(p, None)?,
        None if opts.vmcore.is_none() && Path::new(btf::SYSFS_VMLINUX).exists() => {
            btf::load_file(Path::new(btf::SYSFS_VMLINUX), None)?
        }
        None => {
            let find = |n: &'static str| syms.kernel_addr(n).ok_or(Error::NoBtfSymbol(n));
            let (start, stop) = (find("__start_BTF")?, find("__stop_BTF")?);
            kmem::btf::read(&kernel, start, stop).map_err(|e| in_dump(&kernel, e))?
        }
    };
    let mut prog = Program::new(Box::new(kernel), btf, ksyms::Table::new(syms.clone()));
    // Modules' symbols from their kallsyms in memory (a live /proc/kallsyms
    // has them already); what does not read is left out and `mod` says why.
    crate::kernel::module::load_symbols(&mut prog, syms);
    let mut given = Vec::new();
    for (module, path) in &opts.btf_modules {
        crate::kernel::module_btf::load_file(&mut prog, module, path)?;
        given.push(module.clone());
    }
    crate::kernel::module_btf::load(&mut prog, &given);
    Ok(prog)
}

/// A dump, or why the file is none: missing, not a regular file (a
/// mistyped path, /dev/null), or not in a dump format.
fn open_dump(path: &Path) -> Result<Kernel> {
    let meta = std::fs::metadata(path).map_err(|error| Error::File {
        path: path.to_owned(),
        error,
    })?;
    let ft = meta.file_type();
    let kind = if ft.is_dir() {
        Some("a directory")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_fifo() {
        Some("a FIFO")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        None
    };
    if let Some(kind) = kind {
        return Err(Error::NotAFile {
            path: path.to_owned(),
            kind,
        });
    }
    Kernel::open(path).map_err(|error| Error::NotADump {
        path: path.to_owned(),
        error,
    })
}

fn symbols(kernel: &Kernel, opts: &Options) -> Result<ksyms::Symbols> {
    use ksyms::kallsyms::Hidden;
    if let Some(p) = &opts.kallsyms {
        let text = std::fs::read(p).map_err(|error| Error::File {
            path: p.clone(),
            error,
        })?;
        // A System.map holds link-time addresses: moved by KERNELOFFSET.
        let is_map = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains("System.map"));
        let syms = if is_map {
            let off = kernel.vmcoreinfo().kernel_offset().unwrap_or(0);
            let moved = relocate_system_map(&text, off);
            ksyms::kallsyms::parse(moved, p, Hidden::Error)?
        } else {
            ksyms::kallsyms::parse(text, p, Hidden::Error)?
        };
        if syms.is_empty() {
            return Err(ksyms::Error::NoSymbols { path: p.clone() }.into());
        }
        return Ok(syms);
    }
    if opts.vmcore.is_none() {
        let p = Path::new(ksyms::kallsyms::PROC_KALLSYMS);
        if let Ok(s) = ksyms::kallsyms::read(p, Hidden::Error) {
            return Ok(s);
        }
    }
    let tables = Tables::from_vmcoreinfo(kernel.vmcoreinfo()).map_err(|e| in_dump(kernel, e))?;
    let list = kmem::kallsyms::read(kernel, &tables).map_err(|e| in_dump(kernel, e))?;
    let source = kernel.path().join("kallsyms");
    Ok(ksyms::kallsyms::parse(
        kmem::kallsyms::to_text(&list),
        &source,
        Hidden::Allow,
    )?)
}

/// An error reading the kernel's memory, naming the dump it is in (the
/// error names the address and the file offset).
fn in_dump(kernel: &Kernel, error: kmem::Error) -> Error {
    Error::InDump {
        path: kernel.path().to_owned(),
        error,
    }
}

/// System.map moved by the KASLR offset, as kallsyms text. Per-CPU symbols
/// (x86-64: offsets from 0 up to `__per_cpu_end`) are not addresses and do
/// not move.
fn relocate_system_map(text: &[u8], offset: u64) -> Vec<u8> {
    let text = String::from_utf8_lossy(text);
    let percpu_end = text
        .lines()
        .find_map(|l| l.strip_suffix(" __per_cpu_end"))
        .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
        .filter(|&e| e < 0x1_0000_0000)
        .unwrap_or(0);
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut it = line.splitn(2, ' ');
        let (Some(a), Some(rest)) = (it.next(), it.next()) else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(a, 16) else {
            continue;
        };
        let addr = if addr < percpu_end {
            addr
        } else {
            addr.wrapping_add(offset)
        };
        out.push_str(&format!("{addr:016x} {rest}\n"));
    }
    out.into_bytes()
}
