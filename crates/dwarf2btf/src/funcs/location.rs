//! Where a parameter is when the function is entered: the first location
//! description that covers the entry address, or else one that covers the
//! start of the function's own code, past an entry prefix that changes no
//! register (entry_code.rs: clang starts location lists after the ftrace
//! site, GCC at the entry address).
//!
//! Invariant: the answer describes only the entry address; anything the
//! evaluator does not recognise is `Computed` (a value derived from other
//! state, i.e. not the parameter itself sitting in a register or slot).

use gimli::{AttributeValue, Operation};

use super::ARCH;
use crate::dies::Loc;
use crate::load::{Dwarf, Reader};

/// A parameter's location at function entry.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum EntryLoc {
    /// In a register (DWARF number), `DW_OP_regN` or `DW_OP_entry_value(DW_OP_regN)`;
    /// or the low bits of an argument register as clang describes a
    /// narrow value (`DW_OP_bregN 0; DW_OP_constu 0xffffffff; DW_OP_and;
    /// DW_OP_convert ...; DW_OP_stack_value` for a `bool`).
    Reg {
        /// The DWARF register number (x86-64: 5 is rdi, 4 rsi, ...).
        reg: u16,
    },
    /// On the stack: `DW_OP_fbreg` (offset from the CFA at entry).
    Stack {
        /// DW_OP_fbreg's operand: signed bytes from the frame base.
        offset: i64,
    },
    /// An aggregate in pieces: each piece's register (None: optimised out) and size in bytes.
    Pieces {
        /// The pieces, in the order of the bytes they describe.
        pieces: Vec<Piece>,
    },
    /// `DW_OP_GNU_parameter_ref`: the parameter was removed; only callers know its value.
    ParamRef,
    /// A constant (`DW_AT_const_value`, `DW_OP_lit*`/`DW_OP_implicit_value`): not passed.
    Const,
    /// Derived from other values at entry (e.g. `DW_OP_breg5 8; DW_OP_stack_value`).
    Computed,
    /// No `DW_AT_location` at all: optimised out.
    Absent,
    /// A location list whose entries start after the entry address.
    NotAtEntry,
    /// One location for the whole function that cannot hold at entry (a
    /// callee-saved register or a stack slot): GCC describes where the value
    /// lives after the prologue, not where it arrives.
    Scope {
        /// That location in words, as reports print it ("rbx for the whole
        /// function").
        what: String,
    },
}

/// One `DW_OP_piece` of a value described in pieces.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Piece {
    /// The register that holds these bytes (DWARF number); None when the
    /// piece is in no register (optimised out, or described otherwise).
    pub reg: Option<u16>,
    /// How many bytes of the value the piece covers.
    pub bytes: u64,
}

/// Each piece's register with the eightbyte of the aggregate the piece
/// starts in: eightbyte k arrives in the k-th register of its slot,
/// however many pieces describe it (GCC writes one per eightbyte, clang
/// one per member).
pub fn piece_eightbytes(pieces: &[Piece]) -> impl Iterator<Item = (usize, Option<u16>)> + '_ {
    pieces.iter().scan(0u64, |byte, p| {
        let k = usize::try_from(*byte / 8).unwrap_or(usize::MAX);
        *byte = byte.saturating_add(p.bytes);
        Some((k, p.reg))
    })
}

/// Evaluates a formal parameter's location at `entry`: `location` is its
/// DW_AT_location, `has_const` whether it has a DW_AT_const_value,
/// `own_code` where the function's own code starts (`entry` itself, or the
/// end of an entry prefix that leaves every register as it was).
pub fn entry_location(
    dwarf: &Dwarf<'_>,
    unit: &gimli::Unit<Reader<'_>>,
    has_const: bool,
    location: Option<Loc<'_>>,
    entry: u64,
    own_code: u64,
) -> gimli::Result<EntryLoc> {
    if has_const {
        return Ok(EntryLoc::Const);
    }
    let Some(loc) = location else {
        return Ok(EntryLoc::Absent);
    };
    let value = loc.value();
    if let AttributeValue::Exprloc(expr) = value {
        return Ok(match classify(expr, unit.encoding()) {
            EntryLoc::Reg { reg } if !ARCH.int_arg_regs.contains(&reg) => EntryLoc::Scope {
                what: format!("{} for the whole function", (ARCH.reg_name)(reg)),
            },
            l => l,
        });
    }
    let Some(mut list) = dwarf.attr_locations(unit, value)? else {
        return Ok(EntryLoc::Absent);
    };
    // When no entry covers the entry address, a later DW_OP_entry_value(reg)
    // still says in which register the value arrived, and a later
    // DW_OP_GNU_parameter_ref that the parameter was removed; failing
    // those, the entry that covers the start of the function's own code
    // says where the value still is, the prefix having moved nothing.
    let mut later = EntryLoc::NotAtEntry;
    let mut at_own_code = None;
    while let Some(e) = list.next()? {
        // An empty range [a, a) still documents where the value is at `a`
        // (GCC emits them for the entry point of a parameter's lifetime).
        let covers = |at: u64| {
            if e.range.begin == e.range.end {
                e.range.begin == at
            } else {
                e.range.begin <= at && at < e.range.end
            }
        };
        if covers(entry) {
            return Ok(classify(e.data, unit.encoding()));
        }
        if own_code != entry && at_own_code.is_none() && covers(own_code) {
            at_own_code = Some(classify(e.data, unit.encoding()));
        }
        if later == EntryLoc::NotAtEntry {
            later = match classify_later(e.data, unit.encoding()) {
                Some(l) => l,
                None => EntryLoc::NotAtEntry,
            };
        }
    }
    Ok(match (later, at_own_code) {
        (EntryLoc::NotAtEntry, Some(l)) => l,
        (l, _) => l,
    })
}

/// What a location-list entry after the entry address reveals about entry.
fn classify_later(expr: gimli::Expression<Reader<'_>>, enc: gimli::Encoding) -> Option<EntryLoc> {
    let mut bytes = expr.0;
    while !bytes.is_empty() {
        match Operation::parse(&mut bytes, enc).ok()? {
            Operation::EntryValue { expression } => {
                return match classify(gimli::Expression(expression), enc) {
                    EntryLoc::Reg { reg } => Some(EntryLoc::Reg { reg }),
                    _ => None,
                }
            }
            Operation::ParameterRef { .. } => return Some(EntryLoc::ParamRef),
            _ => {}
        }
    }
    None
}

/// The shape of one location expression.
fn classify(expr: gimli::Expression<Reader<'_>>, enc: gimli::Encoding) -> EntryLoc {
    let mut ops = Vec::new();
    let mut bytes = expr.0;
    while !bytes.is_empty() {
        match Operation::parse(&mut bytes, enc) {
            Ok(op) => ops.push(op),
            Err(_) => return EntryLoc::Computed,
        }
        if ops.len() > 64 {
            return EntryLoc::Computed;
        }
    }
    if ops.iter().any(|o| matches!(o, Operation::Piece { .. })) {
        return pieces(&ops, enc);
    }
    single(&ops, enc)
}

fn single(ops: &[Operation<Reader<'_>>], enc: gimli::Encoding) -> EntryLoc {
    match ops {
        [] => EntryLoc::Absent,
        [Operation::Register { register }] => EntryLoc::Reg { reg: register.0 },
        [Operation::EntryValue { expression }]
        | [Operation::EntryValue { expression }, Operation::StackValue] => {
            match classify(gimli::Expression(*expression), enc) {
                EntryLoc::Reg { reg } => EntryLoc::Reg { reg },
                _ => EntryLoc::Computed,
            }
        }
        [Operation::RegisterOffset {
            register,
            offset: 0,
            base_type,
        }, narrowing @ .., Operation::StackValue]
            if base_type.0 == 0
                && ARCH.int_arg_regs.contains(&register.0)
                && only_narrows(narrowing) =>
        {
            EntryLoc::Reg { reg: register.0 }
        }
        [Operation::FrameOffset { offset }] => EntryLoc::Stack { offset: *offset },
        [Operation::ParameterRef { .. }, ..] => EntryLoc::ParamRef,
        [Operation::ImplicitValue { .. }] => EntryLoc::Const,
        [Operation::UnsignedConstant { .. } | Operation::SignedConstant { .. }, Operation::StackValue] => {
            EntryLoc::Const
        }
        _ => EntryLoc::Computed,
    }
}

/// Whether `ops` only keep low bits of the value on the stack: masks of
/// the form 2^k - 1 and conversions to base types (a register's value cut
/// to the parameter's width, as the ABI passes it: no offset, no shift).
fn only_narrows(ops: &[Operation<Reader<'_>>]) -> bool {
    let mut rest = ops;
    loop {
        rest = match rest {
            [] => return true,
            [Operation::Convert { .. }, tail @ ..] => tail,
            [Operation::UnsignedConstant { value }, Operation::And, tail @ ..]
                if *value != 0 && value.wrapping_add(1) & *value == 0 =>
            {
                tail
            }
            _ => return false,
        }
    }
}

fn pieces(ops: &[Operation<Reader<'_>>], enc: gimli::Encoding) -> EntryLoc {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, op) in ops.iter().enumerate() {
        if let Operation::Piece { size_in_bits, .. } = op {
            let reg = match single(&ops[start..i], enc) {
                EntryLoc::Reg { reg } => Some(reg),
                _ => None,
            };
            out.push(Piece {
                reg,
                bytes: size_in_bits / 8,
            });
            start = i + 1;
        }
    }
    EntryLoc::Pieces { pieces: out }
}
