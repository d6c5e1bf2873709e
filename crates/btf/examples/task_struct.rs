//! Prints the members of the running kernel's `struct task_struct` with
//! their offsets, as `pahole -C task_struct` lists them.
//!
//! `cargo run --release -p btfkit-btf --example task_struct [BTF-FILE]`: the BTF
//! of /sys/kernel/btf/vmlinux by default; any raw BTF or ELF file with a
//! `.BTF` section otherwise.

use std::path::PathBuf;
use std::process::ExitCode;

use btf::Kind;

fn main() -> ExitCode {
    let path = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from(btf::SYSFS_VMLINUX), PathBuf::from);
    let btf = match btf::load_file(&path, None) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("task_struct: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(task) = btf.find_by_name_kind("task_struct", Kind::STRUCT) else {
        eprintln!("task_struct: {}: no struct task_struct", path.display());
        return ExitCode::FAILURE;
    };
    println!(
        "struct task_struct: {} bytes",
        btf.resolve_size(task).unwrap_or(0)
    );
    for m in btf.members(task) {
        let m = match m {
            Ok(m) => m,
            Err(e) => {
                eprintln!("task_struct: {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        };
        let name = if m.name.is_empty() { "(anon)" } else { m.name };
        let ty = btf::cdecl::type_name(&btf, m.ty);
        let size = btf.resolve_size(m.ty).unwrap_or(0);
        if m.bitfield_size != 0 {
            // A bitfield's place is in bits: byte offset and bit within it.
            println!(
                "{:>6}:{:<2} {name}: {ty} ({} bits)",
                m.bit_offset / 8,
                m.bit_offset % 8,
                m.bitfield_size
            );
        } else {
            println!("{:>6}    {name}: {ty} ({size} bytes)", m.bit_offset / 8);
        }
    }
    ExitCode::SUCCESS
}
