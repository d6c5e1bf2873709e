//! The kernel's ORC tables read from memory, and finding an address's entry.
//!
//! vmlinux has two parallel arrays: `__start_orc_unwind_ip` (s32 each, an
//! address relative to the entry itself) and `__start_orc_unwind` (6-byte
//! `struct orc_entry`), sorted by address, with `orc_lookup` (one u32 index
//! per 256-byte block of `_stext.._etext`, `lookup_num_blocks` of them) to
//! narrow the search. A module has the same pair in
//! `mod->arch.orc_unwind_ip`, `orc_unwind`, `num_orcs`.
//!
//! Search invariant (the kernel's `__orc_find`): the entry of an address is
//! the rightmost one whose address is <= it; in a range that starts above
//! the address, the first one.

use super::modules::ModuleText;
use crate::program::Program;

/// An ORC register (`ORC_REG_*`): what an entry's `sp_reg` or `bp_reg`
/// computes from. UNDEFINED: none (as `sp_reg`, no unwind information; as
/// `bp_reg`, bp is unchanged or in the pt_regs).
pub const REG_UNDEFINED: u8 = 0;
/// As `bp_reg`: the caller's bp is saved at the caller's sp plus `bp_offset`.
pub const REG_PREV_SP: u8 = 1;
/// rdx, from the registers known at the frame.
pub const REG_DX: u8 = 2;
/// rdi, from the registers known at the frame.
pub const REG_DI: u8 = 3;
/// rbp: the caller's sp is bp plus `sp_offset` (as `bp_reg`: the caller's
/// bp is saved at bp plus `bp_offset`).
pub const REG_BP: u8 = 4;
/// rsp: the caller's sp is sp plus `sp_offset`.
pub const REG_SP: u8 = 5;
/// r10, from the registers known at the frame.
pub const REG_R10: u8 = 6;
/// r13, from the registers known at the frame.
pub const REG_R13: u8 = 7;
/// The caller's sp is the word at bp plus `sp_offset`.
pub const REG_BP_INDIRECT: u8 = 8;
/// The caller's sp is the word at sp, plus `sp_offset`.
pub const REG_SP_INDIRECT: u8 = 9;

const ENTRY_SIZE: u64 = 6;
const LOOKUP_BLOCK_SIZE: u64 = 256;

/// What kind of frame an entry describes, in one form for every kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// No unwind information: unwinding cannot go on.
    Undefined,
    /// The bottom of a stack (a kernel thread's first frame, entry code).
    EndOfStack,
    /// A call frame: the caller's return address is the word below the
    /// computed sp.
    Call,
    /// A full `struct pt_regs` at the computed sp.
    Regs,
    /// Only the iret frame of a `struct pt_regs` at the computed sp.
    RegsPartial,
    /// A type value this reader does not know (the raw bits).
    Unknown(u8),
}

/// One `struct orc_entry`, decoded: how to find the caller's frame from
/// this one's registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Bytes added to `sp_reg`'s value to get the caller's sp (the CFA).
    pub sp_offset: i16,
    /// Bytes added to `bp_reg`'s value to get where the caller's bp is saved.
    pub bp_offset: i16,
    /// What the caller's sp is computed from (a `REG_*`).
    pub sp_reg: u8,
    /// Where the caller's bp is found (a `REG_*`).
    pub bp_reg: u8,
    /// What kind of frame this is.
    pub kind: Kind,
    /// The ip of the frame is exact (interrupted), not a return address.
    pub signal: bool,
}

/// The bit layout of `struct orc_entry`'s flag half-word, which changed twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Up to 6.2: `sp_reg:4 bp_reg:4 type:2 end:1`, CALL 0, REGS 1,
    /// REGS_PARTIAL 2; end of stack is sp_reg UNDEFINED with `end`.
    V1,
    /// 6.3: the same with `signal:1` after `end`.
    V2,
    /// 6.4+: `sp_reg:4 bp_reg:4 type:3 signal:1`, UNDEFINED 0,
    /// END_OF_STACK 1, CALL 2, REGS 3, REGS_PARTIAL 4.
    V3,
}

impl Format {
    /// The format of a kernel release (`6.1.0-13-amd64`).
    pub fn for_release(release: &str) -> Option<Format> {
        let mut it = release.split(|c: char| !c.is_ascii_digit());
        let major: u32 = it.next()?.parse().ok()?;
        let minor: u32 = it.next()?.parse().ok()?;
        Some(match (major, minor) {
            (m, _) if m < 6 => Format::V1,
            (6, n) if n < 3 => Format::V1,
            (6, 3) => Format::V2,
            _ => Format::V3,
        })
    }
}

/// Decodes one `struct orc_entry`.
pub fn decode(b: [u8; 6], format: Format) -> Entry {
    let sp_offset = i16::from_le_bytes([b[0], b[1]]);
    let bp_offset = i16::from_le_bytes([b[2], b[3]]);
    let flags = u16::from_le_bytes([b[4], b[5]]);
    let sp_reg = (flags & 0xf) as u8;
    let bp_reg = ((flags >> 4) & 0xf) as u8;
    let (kind, signal) = match format {
        Format::V1 | Format::V2 => {
            let end = flags & (1 << 10) != 0;
            let signal = format == Format::V2 && flags & (1 << 11) != 0;
            let kind = if sp_reg == REG_UNDEFINED {
                if end {
                    Kind::EndOfStack
                } else {
                    Kind::Undefined
                }
            } else {
                match (flags >> 8) & 3 {
                    0 => Kind::Call,
                    1 => Kind::Regs,
                    2 => Kind::RegsPartial,
                    t => Kind::Unknown(t as u8),
                }
            };
            // Before 6.3 a regs frame's ip was always exact.
            let signal = signal || matches!(kind, Kind::Regs | Kind::RegsPartial);
            (kind, signal)
        }
        Format::V3 => {
            let kind = match (flags >> 8) & 7 {
                0 => Kind::Undefined,
                1 => Kind::EndOfStack,
                2 => Kind::Call,
                3 => Kind::Regs,
                4 => Kind::RegsPartial,
                t => Kind::Unknown(t as u8),
            };
            (kind, flags & (1 << 11) != 0)
        }
    };
    Entry {
        sp_offset,
        bp_offset,
        sp_reg,
        bp_reg,
        kind,
        signal,
    }
}

/// One pair of sorted arrays.
#[derive(Clone, Copy, Debug)]
struct Table {
    ip: u64,
    entries: u64,
    len: u64,
}

/// The ORC tables of vmlinux and of the modules.
pub struct Tables {
    format: Format,
    vmlinux: Option<Table>,
    /// `orc_lookup`, `lookup_num_blocks`, `_stext`, `_etext`.
    lookup: Option<(u64, u64, u64, u64)>,
    modules: Vec<(ModuleText, Table)>,
    /// Why a table is missing, for the frames that would need it.
    pub problems: Vec<String>,
}

/// An address's entry, or why there is none.
pub enum Found {
    /// The entry that describes the address.
    Entry(Entry),
    /// The address is in no table (generated code, BPF, not kernel text).
    NoTable,
    /// A table covers it but could not be read or is inconsistent.
    Bad(String),
}

impl Tables {
    /// Reads vmlinux's tables (by their symbols), the lookup index and the
    /// tables of `modules`, all decoded as `format`. A table that is
    /// missing is noted in [`Tables::problems`], not an error.
    pub fn read(prog: &Program, format: Format, modules: Vec<ModuleText>) -> Tables {
        let mut problems = Vec::new();
        let sym = |n: &str| prog.symbol(n);
        let vmlinux = match (
            sym("__start_orc_unwind_ip"),
            sym("__stop_orc_unwind_ip"),
            sym("__start_orc_unwind"),
        ) {
            (Some(ip), Some(stop), Some(entries)) if stop >= ip => Some(Table {
                ip,
                entries,
                len: (stop - ip) / 4,
            }),
            _ => {
                problems.push("vmlinux has no ORC tables (__start_orc_unwind_ip)".into());
                None
            }
        };
        let lookup = match (
            sym("orc_lookup"),
            sym("lookup_num_blocks"),
            sym("_stext"),
            sym("_etext"),
        ) {
            (Some(l), Some(n), Some(s), Some(e)) => prog
                .memory()
                .read_u32(n)
                .ok()
                .map(|n| (l, u64::from(n), s, e)),
            _ => None,
        };
        let modules = modules
            .into_iter()
            .filter_map(|m| {
                let t = Table {
                    ip: m.orc_ip,
                    entries: m.orc_entries,
                    len: m.num_orcs,
                };
                (t.ip != 0 && t.entries != 0).then_some((m, t))
            })
            .collect();
        Tables {
            format,
            vmlinux,
            lookup,
            modules,
            problems,
        }
    }

    /// The `struct orc_entry` layout the entries are decoded with.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The entry that describes `ip`.
    pub fn find(&self, prog: &Program, ip: u64) -> Found {
        if let Some(t) = self.vmlinux {
            if let Some((lookup, blocks, stext, etext)) = self.lookup {
                if ip >= stext && ip < etext {
                    let idx = (ip - stext) / LOOKUP_BLOCK_SIZE;
                    if idx + 1 >= blocks {
                        return Found::Bad(format!(
                            "orc_lookup block {idx} of {blocks} for {ip:#x}"
                        ));
                    }
                    let read = |i: u64| prog.memory().read_u32(lookup.wrapping_add(i * 4));
                    let (Ok(start), Ok(stop)) = (read(idx), read(idx + 1)) else {
                        return Found::Bad(format!("orc_lookup unreadable at block {idx}"));
                    };
                    let (start, stop) = (u64::from(start), u64::from(stop) + 1);
                    if start >= t.len || stop > t.len || start > stop {
                        return Found::Bad(format!(
                            "orc_lookup block {idx} says entries {start}..{stop} of {}",
                            t.len
                        ));
                    }
                    let sub = Table {
                        ip: t.ip.wrapping_add(start * 4),
                        entries: t.entries.wrapping_add(start.wrapping_mul(ENTRY_SIZE)),
                        len: stop - start,
                    };
                    return self.search(prog, sub, ip);
                }
            }
        }
        for (m, t) in &self.modules {
            if m.contains(ip) {
                return self.search(prog, *t, ip);
            }
        }
        // vmlinux outside _stext.._etext (.init.text, entry code): the
        // whole table, within its first and last address.
        if let Some(t) = self.vmlinux.filter(|t| t.len > 0) {
            let first = self.ip_at(prog, t, 0);
            let last = self.ip_at(prog, t, t.len - 1);
            if let (Some(first), Some(last)) = (first, last) {
                if ip >= first && ip <= last {
                    return self.search(prog, t, ip);
                }
            }
        }
        Found::NoTable
    }

    fn ip_at(&self, prog: &Program, t: Table, i: u64) -> Option<u64> {
        let at = t.ip.wrapping_add(i.wrapping_mul(4));
        let rel = prog.memory().read_u32(at).ok()? as i32;
        Some(at.wrapping_add_signed(i64::from(rel)))
    }

    /// Binary search for the rightmost entry at or below `ip`.
    fn search(&self, prog: &Program, t: Table, ip: u64) -> Found {
        if t.len == 0 {
            return Found::NoTable;
        }
        let (mut first, mut last) = (0i64, t.len as i64 - 1);
        let mut found = 0u64;
        while first <= last {
            let mid = first + (last - first) / 2;
            let Some(at) = self.ip_at(prog, t, mid as u64) else {
                return Found::Bad(format!(
                    "ORC ip table unreadable at {:#x}",
                    t.ip.wrapping_add(mid as u64 * 4)
                ));
            };
            if at <= ip {
                found = mid as u64;
                first = mid + 1;
            } else {
                last = mid - 1;
            }
        }
        let addr = t.entries.wrapping_add(found.wrapping_mul(ENTRY_SIZE));
        let mut b = [0u8; 6];
        match prog.memory().read_virt(addr, &mut b) {
            Ok(()) => Found::Entry(decode(b, self.format)),
            Err(e) => Found::Bad(format!("ORC entry at {addr:#x}: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_release() {
        assert_eq!(
            Format::for_release("6.1.0-56-cloud-amd64"),
            Some(Format::V1)
        );
        assert_eq!(Format::for_release("5.10.0"), Some(Format::V1));
        assert_eq!(Format::for_release("6.3.1"), Some(Format::V2));
        assert_eq!(Format::for_release("6.12.9+bpo-amd64"), Some(Format::V3));
        assert_eq!(Format::for_release("x"), None);
    }

    #[test]
    fn entries_of_both_layouts() {
        // sp = sp + 8, CALL: sp_reg 5, bp_reg 0.
        let call_v1 = decode([8, 0, 0, 0, 0x05, 0x00], Format::V1);
        assert_eq!((call_v1.kind, call_v1.sp_offset), (Kind::Call, 8));
        let call_v3 = decode([8, 0, 0, 0, 0x05, 0x02], Format::V3);
        assert_eq!(call_v3.kind, Kind::Call);
        // The end of a stack: sp_reg UNDEFINED with `end` (V1), type 1 (V3).
        assert_eq!(decode([0; 6], Format::V1).kind, Kind::Undefined);
        assert_eq!(
            decode([0, 0, 0, 0, 0, 0x04], Format::V1).kind,
            Kind::EndOfStack
        );
        assert_eq!(
            decode([0, 0, 0, 0, 0, 0x01], Format::V3).kind,
            Kind::EndOfStack
        );
        let regs = decode([0, 0, 0, 0, 0x15, 0x01], Format::V1);
        assert_eq!((regs.kind, regs.bp_reg, regs.signal), (Kind::Regs, 1, true));
    }
}
