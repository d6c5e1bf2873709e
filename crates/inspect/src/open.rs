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
    let info = kernel.vmcoreinfo().clone();
    let described = match &opts.vmcore {
        Some(_) => kernel.path().display().to_string(),
        None => "the running kernel".to_owned(),
    };
    let mut prog = Program::new(Box::new(kernel), btf, ksyms::Table::new(syms.clone()));
    // A BTF file given may be another kernel's: refused before it reads anything.
    if let Some(path) = &opts.btf {
        let differences = crate::kernel::btf_check::differences(&prog, &info);
        if !differences.is_empty() {
            return Err(Error::OtherKernelBtf {
                btf: path.clone(),
                kernel: described,
                release: info.osrelease().unwrap_or("release unknown").to_owned(),
                differences: crate::kernel::btf_check::summary(&differences),
            });
        }
    }
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
        // A System.map holds link-time addresses: moved by KERNELOFFSET.
        let is_map = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().contains("System.map"));
        let syms = if is_map {
            let mut syms = ksyms::system_map::read(p)?;
            let off = kernel.vmcoreinfo().kernel_offset().unwrap_or(0);
            relocate_system_map(&mut syms, off);
            syms
        } else {
            let text = std::fs::read(p).map_err(|error| Error::File {
                path: p.clone(),
                error,
            })?;
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
    kernel_symbols(&list, &kernel.path().join("kallsyms"))
}

/// The symbols kmem read from the kernel's own tables, as values (no
/// kallsyms text written and parsed again); `source` names them. Every
/// address zero (a dump of a kernel that hides them) is kept, marked.
pub fn kernel_symbols(list: &[kmem::kallsyms::KSym], source: &Path) -> Result<ksyms::Symbols> {
    let values = list.iter().map(|s| (s.addr, s.type_char, s.name.as_str()));
    Ok(ksyms::kallsyms::from_values(
        source,
        values,
        ksyms::kallsyms::Hidden::Allow,
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

/// A System.map's symbols moved by the KASLR offset. Per-CPU symbols
/// (x86-64: offsets from 0 up to `__per_cpu_end`) are not addresses and do
/// not move.
pub fn relocate_system_map(syms: &mut ksyms::Symbols, offset: u64) {
    let percpu_end = syms
        .kernel_addr("__per_cpu_end")
        .filter(|&e| e < 0x1_0000_0000)
        .unwrap_or(0);
    syms.relocate_from(percpu_end, offset as i64);
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use kmem::kallsyms::KSym;
    use ksyms::kallsyms::{self, Hidden};
    use ksyms::Table;

    use super::{kernel_symbols, relocate_system_map};

    /// Every symbol, in table order, and what the table says of itself.
    fn assert_same(values: &Table, text: &Table) {
        assert_eq!(values.len(), text.len());
        assert_eq!(values.source(), text.source());
        assert_eq!(values.addresses_hidden(), text.addresses_hidden());
        assert_eq!(values.modules(), text.modules());
        for (a, b) in values.iter().zip(text.iter()) {
            assert_eq!(a, b);
        }
        for s in text.iter().step_by(7) {
            assert!(
                values.by_name(s.name).eq(text.by_name(s.name)),
                "{}",
                s.name
            );
            assert_eq!(values.lookup(s.addr), text.lookup(s.addr));
        }
    }

    /// A kallsyms as kmem reads one: per-CPU offsets from 0 first, then
    /// text and data with padding, clones, cold parts, names that repeat,
    /// symbols that share an address, and a few out of order.
    fn generated(n: usize) -> Vec<KSym> {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut out = Vec::new();
        for i in 0..50u64 {
            out.push(KSym {
                addr: i * 0x40,
                type_char: b'A',
                name: format!("percpu_var_{i}"),
            });
        }
        out.push(KSym {
            addr: 0x40 * 50,
            type_char: b'A',
            name: "__per_cpu_end".into(),
        });
        let mut addr = 0xffff_ffff_8100_0000u64;
        for i in 0..n {
            let r = next();
            addr += r % 0x300 * u64::from(r % 11 != 0);
            let letters = b"tTtTdDbBrRwWvVaAU";
            let type_char = letters[(r >> 20) as usize % letters.len()];
            let base = format!("sym_{}", (r >> 32) % (n as u64 / 3 + 1));
            let name = match (r >> 8) % 9 {
                0 => format!("__pfx_{base}"),
                1 => format!("{base}.cold"),
                2 => format!("{base}.isra.{}", i % 3),
                3 => format!("{base}.constprop.0.cold"),
                4 => format!("bpf_prog_{:016x}_{base}", r),
                _ => base,
            };
            let at = if r % 97 == 0 { addr - 0x1000 } else { addr };
            out.push(KSym {
                addr: at,
                type_char,
                name,
            });
        }
        out
    }

    fn from_text(list: &[KSym], source: &Path) -> Table {
        let text = kmem::kallsyms::to_text(list);
        Table::new(kallsyms::parse(text, source, Hidden::Allow).expect("kallsyms text"))
    }

    /// The symbols passed as values give the table that writing them as
    /// /proc/kallsyms text and parsing that gave (the path before).
    #[test]
    fn kallsyms_as_values_equal_kallsyms_parsed_from_text() {
        let source = Path::new("/var/crash/vmcore/kallsyms");
        let list = generated(20_000);
        let values = Table::new(kernel_symbols(&list, source).expect("values"));
        assert_same(&values, &from_text(&list, source));
        assert!(values.len() > 20_000);

        // A kernel that hid its addresses: kept, and marked so.
        let hidden: Vec<KSym> = list
            .iter()
            .take(100)
            .map(|s| KSym {
                addr: 0,
                ..s.clone()
            })
            .collect();
        let values = Table::new(kernel_symbols(&hidden, source).expect("values"));
        assert!(values.addresses_hidden());
        assert_same(&values, &from_text(&hidden, source));

        let none = Table::new(kernel_symbols(&[], source).expect("values"));
        assert_same(&none, &from_text(&[], source));
    }

    /// The text rewrite the System.map path did before, kept as the oracle.
    fn relocated_as_text(text: &[u8], offset: u64) -> Vec<u8> {
        let text = String::from_utf8_lossy(text);
        let percpu_end = text
            .lines()
            .find_map(|l| l.strip_suffix(" __per_cpu_end"))
            .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
            .filter(|&e| e < 0x1_0000_0000)
            .unwrap_or(0);
        let mut out = String::new();
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

    /// A System.map moved by KERNELOFFSET as values equals the moved text
    /// parsed again, with and without per-CPU symbols.
    #[test]
    fn system_map_moved_as_values_equals_the_moved_text() {
        let dir = std::env::temp_dir().join(format!("inspect-system-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        let mut list = generated(5_000);
        list.sort_by_key(|s| s.addr);
        for (percpu, name) in [(true, "System.map"), (false, "System.map-noper")] {
            let kept: Vec<KSym> = list
                .iter()
                .filter(|s| percpu || s.addr >= 0x1_0000_0000)
                .cloned()
                .collect();
            let text = kmem::kallsyms::to_text(&kept);
            let path = dir.join(name);
            std::fs::write(&path, &text).expect("write");
            for offset in [0, 0x2b80_0000, 0x3c00_0000] {
                let mut syms = ksyms::system_map::read(&path).expect("System.map");
                relocate_system_map(&mut syms, offset);
                let values = Table::new(syms);
                let moved = relocated_as_text(&text, offset);
                let text = Table::new(kallsyms::parse(moved, &path, Hidden::Error).expect("text"));
                assert_same(&values, &text);
                if percpu {
                    let var = values.by_name("percpu_var_3").next().expect("per-CPU");
                    assert_eq!(var.addr, 0xc0, "per-CPU symbols do not move");
                }
            }
        }
        std::fs::remove_dir_all(&dir).expect("remove the temporary directory");
    }
}
