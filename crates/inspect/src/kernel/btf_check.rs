//! Whether a BTF file given for a kernel (`--btf`) describes that kernel.
//! A BTF of another release or architecture loads, and then reads every
//! value with the wrong layout; so before anything is read with it:
//!
//! - the architecture: the BTF's `struct pt_regs` and `long` are those of
//!   x86-64, the only architecture kmem reads;
//! - `init_uts_ns`, as the drgn plugin checks it (python/btfkit_drgn): its
//!   release read with the BTF's `struct uts_namespace` and `struct
//!   new_utsname` is VMCOREINFO's OSRELEASE, and a BTF that places the
//!   variable places it at VMCOREINFO's `SYMBOL(init_uts_ns)`;
//! - the variables are where kallsyms has them (the drgn plugin's address
//!   check): no more than 2% elsewhere;
//! - VMCOREINFO's `SIZE(type)` and `OFFSET(type.member)` (the kernel's own
//!   statement of its layout for dump readers, `OFFSET(uts_namespace.name)`
//!   among them) are the BTF's, for every type the BTF has.
//!
//! Each check that cannot be made (no `struct pt_regs`, no VMCOREINFO
//! entry, a type the BTF only declares) is left out; what differs is said
//! in one line.

use btf::TypeId;
use kmem::VmcoreInfo;

use crate::program::Program;
use crate::types;

/// The architecture kmem reads: dumps of others are refused by name
/// (arch::Arch::of_elf), so the kernel is of this one.
const KERNEL: &arch::Arch = &arch::X86_64;

/// The kernel's architecture, as `uname -m` says it.
pub const ARCH: &str = KERNEL.uname_machine;

/// More than this share of variables elsewhere than kallsyms says: the
/// BTF describes another build (the kernel's own BTF has a few statics
/// whose names other symbols share). The drgn plugin's MAX_MISPLACED.
const MAX_MISPLACED: f64 = 0.02;

/// How many differences a message lists; the rest are counted.
const SHOWN: usize = 3;

/// What differs between the program's BTF and its kernel, most telling
/// first; empty when nothing does. `info` is the kernel's VMCOREINFO.
pub fn differences(prog: &Program, info: &VmcoreInfo) -> Vec<String> {
    let mut out = Vec::new();
    architecture(prog, &mut out);
    uts_namespace(prog, info, &mut out);
    variables(prog, &mut out);
    vmcoreinfo_layout(prog, info, &mut out);
    out
}

/// The differences as a message's tail: the first few, then how many more.
pub fn summary(differences: &[String]) -> String {
    let mut text = differences
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if differences.len() > SHOWN {
        text.push_str(&format!(
            "; and {} more differences",
            differences.len() - SHOWN
        ));
    }
    text
}

/// The architecture whose `struct pt_regs` the BTF has, and the members
/// that say so.
pub fn btf_architecture(prog: &Program) -> Option<(&'static str, &'static [&'static str])> {
    let regs = *prog.types.get("struct pt_regs")?;
    arch::PT_REGS_MEMBERS
        .iter()
        .find(|(_, members)| {
            members
                .iter()
                .all(|m| prog.btf.find_member(regs, m).is_some())
        })
        .copied()
}

fn architecture(prog: &Program, out: &mut Vec<String>) {
    if let Some((arch, members)) = btf_architecture(prog) {
        if arch != ARCH {
            out.push(format!(
                "the BTF is of {arch} (struct pt_regs has {}), the kernel of {ARCH}",
                members.join(" and ")
            ));
            return;
        }
    }
    let long = ["long int", "long"]
        .iter()
        .find_map(|n| prog.types.get(*n))
        .and_then(|&id| prog.btf.resolve_size(id));
    let want = u64::from(KERNEL.pointer_bytes);
    if let Some(size) = long.filter(|&s| s != want) {
        out.push(format!(
            "long is {size} bytes in the BTF, {want} in this {ARCH} kernel"
        ));
    }
}

fn uts_namespace(prog: &Program, info: &VmcoreInfo, out: &mut Vec<String>) {
    let at = info
        .symbol("init_uts_ns")
        .or_else(|| prog.symbol("init_uts_ns"));
    if let (Some(var), Some(at)) = (prog.var("init_uts_ns"), at) {
        if var.addr != at {
            out.push(format!(
                "the BTF places init_uts_ns at {:#x}, VMCOREINFO at {at:#x}",
                var.addr
            ));
        }
    }
    let Some((offset, _)) = prog.member_offset("struct uts_namespace", "name.release") else {
        out.push("the BTF has no struct uts_namespace with name.release".into());
        return;
    };
    let (Some(at), Some(release)) = (at, info.osrelease()) else {
        return;
    };
    // Memory that does not read says nothing of the BTF.
    let Ok(read) = prog.mem.read_cstr(at.wrapping_add(offset), 65) else {
        return;
    };
    let read = String::from_utf8_lossy(&read);
    if read != release {
        out.push(format!(
            "init_uts_ns read with the BTF's struct uts_namespace gives release {read:?}, VMCOREINFO {release:?}"
        ));
    }
}

/// A type by the name VMCOREINFO gives it: a struct's or union's tag, or
/// a typedef (`nodemask_t`).
fn vmcoreinfo_type(prog: &Program, name: &str) -> Option<(TypeId, String)> {
    ["struct ", "union ", ""].iter().find_map(|prefix| {
        let key = format!("{prefix}{name}");
        prog.types.get(&key).map(|&id| (id, key))
    })
}

fn vmcoreinfo_layout(prog: &Program, info: &VmcoreInfo, out: &mut Vec<String>) {
    // (offset or not, key): sizes first, then offsets, each by key, as
    // VMCOREINFO's entries come in no order.
    let mut found: Vec<((bool, String), String)> = Vec::new();
    for (key, value) in info.entries() {
        let Ok(want) = value.parse::<u64>() else {
            continue;
        };
        if let Some(name) = key.strip_prefix("SIZE(").and_then(|r| r.strip_suffix(')')) {
            let Some((id, ty)) = vmcoreinfo_type(prog, name) else {
                continue;
            };
            // No size (a declaration only) says nothing.
            match prog.btf.resolve_size(id) {
                Some(got) if got != want => found.push((
                    (false, key.to_owned()),
                    format!("sizeof({ty}) is {got} in the BTF, {want} in VMCOREINFO"),
                )),
                _ => {}
            }
        } else if let Some(path) = key
            .strip_prefix("OFFSET(")
            .and_then(|r| r.strip_suffix(')'))
        {
            let Some((name, member)) = path.split_once('.') else {
                continue;
            };
            let Some((id, ty)) =
                vmcoreinfo_type(prog, name).filter(|&(id, _)| prog.btf.resolve_size(id).is_some())
            else {
                continue;
            };
            match types::member_path(&prog.btf, id, member) {
                Some(f) if f.bit_offset / 8 == want => {}
                Some(f) => found.push((
                    (true, key.to_owned()),
                    format!(
                        "offsetof({ty}, {member}) is {} in the BTF, {want} in VMCOREINFO",
                        f.bit_offset / 8
                    ),
                )),
                None => found.push((
                    (true, key.to_owned()),
                    format!("{ty} has no member {member} in the BTF, VMCOREINFO has it at {want}"),
                )),
            }
        }
    }
    found.sort();
    out.extend(found.into_iter().map(|(_, d)| d));
}

fn variables(prog: &Program, out: &mut Vec<String>) {
    let checked = prog.var_symbols;
    let misplaced = &prog.mismatches;
    if checked == 0 || (misplaced.len() as f64) <= MAX_MISPLACED * checked as f64 {
        return;
    }
    if let Some((name, at, sym)) = misplaced.first() {
        out.push(format!(
            "{} of {checked} variables are not where kallsyms has them (first: {name} at {at:#x}, kallsyms {sym:#x})",
            misplaced.len()
        ));
    }
}
