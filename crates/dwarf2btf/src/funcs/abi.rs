//! The x86-64 SysV calling convention applied to a source prototype, and the
//! comparison with where the compiled code really has each parameter.
//!
//! Invariant: a signature is only ever produced from registers DWARF names
//! at the entry address; when the argument registers the code uses cannot
//! all be attributed (a gap, a stack slot, an unknown location), the result
//! is `Signature::Unwritable` with the reason, never a guess.

use super::collect::{Concrete, SrcParam};
use super::ctype::{ArgClass, TypeInfo};
use super::location::{piece_eightbytes, EntryLoc};
use super::ARCH;

/// Where the source prototype says a parameter arrives.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "regs")]
pub enum Slot {
    /// In these integer argument registers (DWARF numbers), one per
    /// eightbyte: one for an INTEGER-class value of up to 8 bytes, two for
    /// a 16-byte one.
    Regs(Vec<u16>),
    /// In an SSE register (floating point); which one is not tracked.
    Sse,
    /// On the stack: MEMORY class (an aggregate over 16 bytes), or no
    /// integer argument register left for it.
    Stack,
}

/// The ABI's assignment of the source parameters to slots, in order.
pub fn expected_slots(ret: &TypeInfo, params: &[SrcParam]) -> Vec<Slot> {
    // A returned aggregate in memory takes rdi for its hidden pointer.
    let mut next = usize::from(ret.aggregate && ret.class == ArgClass::Memory);
    params
        .iter()
        .map(|p| match p.ty.class {
            ArgClass::Int1 if next < ARCH.int_arg_regs.len() => {
                next += 1;
                Slot::Regs(vec![ARCH.int_arg_regs[next - 1]])
            }
            ArgClass::Int2 if next + 2 <= ARCH.int_arg_regs.len() => {
                next += 2;
                Slot::Regs(vec![
                    ARCH.int_arg_regs[next - 2],
                    ARCH.int_arg_regs[next - 1],
                ])
            }
            ArgClass::Sse => Slot::Sse,
            _ => Slot::Stack,
        })
        .collect()
}

/// How one parameter's entry location compares with its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamState {
    /// Where the slot says: in its register (each piece in its
    /// eightbyte's register), or on the stack for a stack slot.
    InPlace,
    /// Not passed (absent, constant, parameter_ref, computed from others).
    Dropped,
    /// Some pieces in place, the others not passed.
    Partial,
    /// In another argument register.
    Moved,
    /// In a register that carries no argument, or on the stack unexpectedly.
    Unexpected,
    /// A location list that does not cover the entry address.
    Unknown,
    /// Only a whole-function location that cannot hold at entry.
    Scope,
}

/// How `loc`, where the DWARF has a parameter at entry, compares with
/// `slot`, where the ABI says the source prototype passes it.
pub fn param_state(loc: &EntryLoc, slot: &Slot) -> ParamState {
    match (loc, slot) {
        (EntryLoc::Reg { reg }, Slot::Regs(regs)) if regs.len() == 1 && regs[0] == *reg => {
            ParamState::InPlace
        }
        (EntryLoc::Reg { reg }, Slot::Sse) if (17..=32).contains(reg) => ParamState::InPlace,
        (EntryLoc::Reg { reg }, _) if ARCH.int_arg_regs.contains(reg) => ParamState::Moved,
        (EntryLoc::Reg { .. }, _) => ParamState::Unexpected,
        (EntryLoc::Stack { .. }, Slot::Stack) => ParamState::InPlace,
        // A stack home for a register argument is where the prologue spills
        // it, never where it arrives.
        (EntryLoc::Stack { .. }, _) => ParamState::Scope,
        (EntryLoc::Pieces { pieces }, Slot::Regs(regs)) => {
            let mut in_place = 0;
            let mut dropped = 0;
            for (eightbyte, reg) in piece_eightbytes(pieces) {
                match reg {
                    Some(r) if regs.get(eightbyte) == Some(&r) => in_place += 1,
                    Some(r) if ARCH.int_arg_regs.contains(&r) => return ParamState::Moved,
                    Some(_) => return ParamState::Unexpected,
                    None => dropped += 1,
                }
            }
            match (in_place, dropped) {
                (0, _) => ParamState::Dropped,
                (_, 0) => ParamState::InPlace,
                _ => ParamState::Partial,
            }
        }
        (EntryLoc::Pieces { pieces }, _) => {
            if pieces.iter().all(|p| p.reg.is_none()) {
                ParamState::Dropped
            } else {
                ParamState::Unexpected
            }
        }
        (EntryLoc::ParamRef | EntryLoc::Const | EntryLoc::Computed | EntryLoc::Absent, _) => {
            ParamState::Dropped
        }
        (EntryLoc::NotAtEntry, _) => ParamState::Unknown,
        (EntryLoc::Scope { .. }, _) => ParamState::Scope,
    }
}

/// What type a parameter of a written signature has.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "die")]
pub enum SigType {
    /// The type DIE at this `.debug_info` offset (None: void).
    Die(Option<u64>),
    /// A whole eightbyte of an aggregate with no single member in it.
    U64,
}

/// One parameter of a [`Signature::True`], as the compiled code takes it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct SigParam {
    /// The source parameter's name, or `<param>__coerce<N>` for eightbyte
    /// N of an aggregate passed in pieces.
    pub name: String,
    /// Its type.
    pub ty: SigType,
    /// C spelling of the type.
    pub c: String,
    /// The register it arrives in (DWARF number), or None for stack/SSE.
    pub reg: Option<u16>,
}

/// The prototype the compiled code takes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Signature {
    /// The source prototype is what the code takes.
    Source,
    /// Reconstructed from the entry locations (the ABI changed).
    True {
        /// The parameters in argument register order.
        params: Vec<SigParam>,
    },
    /// Cannot be written from DWARF alone.
    Unwritable {
        /// Why: which parameter or register the DWARF leaves unexplained.
        reason: String,
    },
    /// No DWARF, or not a function entry.
    None,
}

/// The analysis's verdict for one instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Every parameter is where the source prototype's ABI puts it.
    Consistent,
    /// Consistent (or with optimized parameters) in itself, but another
    /// instance of the same name has another source prototype (compared
    /// structurally: one struct name built against different headers
    /// counts as different).
    InconsistentPrototype,
    /// The source ABI holds, but some parameters are unused at entry: the
    /// callers still pass them, since the compiler did not mark the code as
    /// changed (no suffix, no DW_CC_nocall).
    OptimizedParameters,
    /// The compiler changed the calling convention (a suffixed clone or
    /// DW_CC_nocall): parameters dropped, split or moved, or a return value
    /// removed. The signature is the true one when the DWARF gives it.
    ChangedAbi,
    /// Code the compiler did not mark as changed whose DWARF has a
    /// parameter in another argument register than the ABI's: not written.
    Reordered,
    /// A parameter in a register that carries no argument (not written),
    /// or described only where the prologue moves it (the source prototype
    /// is kept: code the compiler did not mark as changed takes the source
    /// ABI).
    UnexpectedRegister,
    /// An aggregate larger than 16 bytes passed on the stack, which BPF
    /// trampolines do not take.
    AggregateOnStack,
    /// No DWARF subprogram has code here; the prototype is that of the one
    /// definition without code named as the symbol, which one symbol alone
    /// carries (collect.rs).
    PrototypeOnly,
    /// No DWARF subprogram describes the code at this address (assembly,
    /// or DWARF whose code address is tied to no section).
    NoDwarf,
    /// `.cold` and similar: code of another function, not an entry point.
    Fragment,
}

impl Status {
    /// Every status, in declaration order (the order `btfkit funcs
    /// --summary` lists them).
    pub const ALL: [Status; 10] = [
        Status::Consistent,
        Status::InconsistentPrototype,
        Status::OptimizedParameters,
        Status::ChangedAbi,
        Status::Reordered,
        Status::UnexpectedRegister,
        Status::AggregateOnStack,
        Status::PrototypeOnly,
        Status::NoDwarf,
        Status::Fragment,
    ];

    /// The status's kebab-case name, as the reports spell it (its serde
    /// name).
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Consistent => "consistent",
            Status::InconsistentPrototype => "inconsistent-prototype",
            Status::OptimizedParameters => "optimized-parameters",
            Status::ChangedAbi => "changed-abi",
            Status::Reordered => "reordered",
            Status::UnexpectedRegister => "unexpected-register",
            Status::AggregateOnStack => "aggregate-on-stack",
            Status::PrototypeOnly => "prototype-only",
            Status::NoDwarf => "no-dwarf",
            Status::Fragment => "fragment",
        }
    }
}

/// What [`analyse`] says of one instance.
pub struct Verdict {
    /// What the analysis found.
    pub status: Status,
    /// The prototype a FUNC may give the code, if any.
    pub signature: Signature,
    /// Why it is not encoded, or what changed.
    pub detail: Option<String>,
    /// What an encodable signature returns.
    pub returns: Returns,
}

/// What a FUNC may say the code returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Returns {
    /// The source's return type (void included).
    #[default]
    Source,
    /// void, where the source returns a value the compiler removed or may
    /// have removed (see `removed_return`).
    Void,
}

impl Returns {
    /// The return type of `c`'s prototype: None for void.
    pub fn of(self, c: &Concrete) -> Option<&TypeInfo> {
        match self {
            Returns::Source if c.ret.die.is_some() => Some(&c.ret),
            _ => None,
        }
    }
}

/// A verdict on the parameters, before the return value is looked at.
struct Params {
    status: Status,
    signature: Signature,
    detail: Option<String>,
}

/// A symbol whose code no DWARF subprogram describes, with the one
/// definition without code of its name: its prototype is the source's, and
/// the symbol, named exactly as the source function (no compiler suffix:
/// collect.rs matches whole names), keeps the source ABI (GCC renames what
/// it changes).
fn bodiless(c: &Concrete) -> Params {
    let die = c.source_die;
    if let Some(i) = c.params.iter().position(|p| p.name.is_empty()) {
        let reason = format!(
            "no DWARF subprogram starts here; DIE {die:#x} leaves parameter {} unnamed",
            i + 1
        );
        return Params {
            status: Status::NoDwarf,
            signature: Signature::Unwritable {
                reason: reason.clone(),
            },
            detail: Some(reason),
        };
    }
    Params {
        status: Status::PrototypeOnly,
        signature: Signature::Source,
        detail: Some(format!(
            "no DWARF subprogram starts here: prototype of DIE {die:#x}, which has no code"
        )),
    }
}

/// Analyses one instance. `suffix` is set when the symbol carries a
/// compiler suffix (`.isra.0`, `.constprop.1`, `.part.0`, `.llvm.N`): GCC and
/// LLVM rename every function whose calling convention they change, so an
/// unsuffixed function keeps its source ABI whatever its DWARF says about
/// unused parameters. `keeps_return(entry)`: whether the code at `entry`
/// returns its source's value wherever that is not void (no symbol there
/// names a clone that may drop it, [`may_drop_return`]).
pub fn analyse(c: &Concrete, suffix: Option<&str>, keeps_return: &dyn Fn(u64) -> bool) -> Verdict {
    let p = if c.bodiless {
        bodiless(c)
    } else {
        params(c, suffix)
    };
    let mut v = Verdict {
        status: p.status,
        signature: p.signature,
        detail: p.detail,
        returns: Returns::Source,
    };
    let encodable = matches!(v.signature, Signature::Source | Signature::True { .. });
    if let Some(why) = removed_return(c, suffix, &v.signature, keeps_return).filter(|_| encodable) {
        v.returns = Returns::Void;
        if v.status == Status::Consistent {
            v.status = Status::ChangedAbi;
        }
        v.detail = Some(match v.detail {
            Some(d) => format!("{d}; {why}"),
            None => why,
        });
    }
    v
}

/// Why the code may not return the value its source prototype returns:
/// compilers remove a return value that no caller uses, and the DWARF keeps
/// the source's return type. GCC does so in IPA-SRA clones (`.isra`) and in
/// split parts (`.part`) that leave the value to their caller, and names
/// nothing else that way; clang wherever DeadArgumentElimination changed the
/// function's type, which it marks DW_CC_nocall (LLVM: "it may not be safe
/// to call this function or try to interpret the return value"). Only
/// clang's mark with every parameter where the ABI puts it says for certain
/// that the value went (the type changed, not in its parameters: on 7.2
/// built with clang 21, `mount_nodev_root` returns at `ret` right after a
/// `test %rax,%rax`). A FUNC that kept the source's return type would let
/// an fexit program read whatever rax holds as the result; one that says
/// void may hide a value the code still returns, never show one it does
/// not.
///
/// Where the removal is only possible, a use of the value proves it kept.
/// A caller that reads rax right after calling the instance reads its
/// value (call_return.rs, collect.rs's `value_read`). A caller that returns
/// a value of its own and jumps to the instance (DW_AT_call_tail_call,
/// `tail_callers`) returns whatever the instance leaves in rax, so the
/// compiler kept the value that the caller's callers use (`return
/// foo.part.0(x);` in `foo`); that caller counts when its own value is
/// certain: not DW_CC_nocall (collect.rs) and no clone that may drop it
/// (`keeps_return`).
fn removed_return(
    c: &Concrete,
    suffix: Option<&str>,
    params: &Signature,
    keeps_return: &dyn Fn(u64) -> bool,
) -> Option<String> {
    let clone_kind = |kind: &str| suffix.is_some_and(|s| s.split('.').any(|k| k == kind));
    let certain = c.nocall && *params == Signature::Source;
    let used = c.value_read || c.tail_callers.iter().any(|&e| keeps_return(e));
    let why = if c.ret.die.is_none() || (used && !certain) {
        return None;
    } else if certain {
        "return value removed (DW_CC_nocall with every parameter in place)"
    } else if c.nocall {
        "the return value may have been removed with them"
    } else if clone_kind("isra") {
        "an IPA-SRA clone may not return the value"
    } else if clone_kind("part") {
        "a split part may leave the return value to its caller"
    } else {
        return None;
    };
    Some(format!("{why}: returns void"))
}

/// Whether `symbol` names a clone whose code may not return its source's
/// value (see `removed_return`): GCC's `.isra` and `.part`.
pub fn may_drop_return(symbol: &str) -> bool {
    symbol
        .split('.')
        .skip(1)
        .any(|k| k == "isra" || k == "part")
}

/// The verdict on the parameters of an instance with code.
fn params(c: &Concrete, suffix: Option<&str>) -> Params {
    let clone = suffix.is_some();
    let isra = suffix.is_some_and(|s| s.contains(".isra"));
    let slots = expected_slots(&c.ret, &c.params);
    let states: Vec<ParamState> = c
        .params
        .iter()
        .zip(&slots)
        .map(|(p, s)| param_state(&p.loc, s))
        .collect();
    let changed = clone || c.nocall;
    let all_in_place = states.iter().all(|s| *s == ParamState::InPlace);
    let on_stack = c.params.iter().zip(&states).find(|(p, s)| {
        p.ty.aggregate && p.ty.class == ArgClass::Memory && **s != ParamState::Dropped
    });
    let describe = |want: ParamState| {
        c.params
            .iter()
            .zip(&states)
            .zip(&slots)
            .filter(|((_, s), _)| **s == want)
            .map(|((p, _), slot)| {
                format!(
                    "{} at {} (ABI: {})",
                    p.name,
                    loc_text(&p.loc),
                    slot_text(slot)
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if changed && !all_in_place {
        return match true_signature(c, isra) {
            Ok(params) => Params {
                status: Status::ChangedAbi,
                signature: Signature::True { params },
                detail: Some(changes(c, &states)),
            },
            Err(reason) => Params {
                status: Status::ChangedAbi,
                signature: Signature::Unwritable {
                    reason: reason.clone(),
                },
                detail: Some(reason),
            },
        };
    }
    if states.contains(&ParamState::Scope)
        && !states.contains(&ParamState::Unexpected)
        && !states.contains(&ParamState::Moved)
    {
        // Unsuffixed, so callers still pass the source ABI; DWARF only
        // describes where the prologue moves the values.
        return Params {
            status: Status::UnexpectedRegister,
            signature: Signature::Source,
            detail: Some(describe(ParamState::Scope)),
        };
    }
    if states.contains(&ParamState::Unexpected) {
        return Params {
            status: Status::UnexpectedRegister,
            signature: Signature::Unwritable {
                reason: describe(ParamState::Unexpected),
            },
            detail: Some(describe(ParamState::Unexpected)),
        };
    }
    if states.contains(&ParamState::Moved) {
        return Params {
            status: Status::Reordered,
            signature: Signature::Unwritable {
                reason: describe(ParamState::Moved),
            },
            detail: Some(describe(ParamState::Moved)),
        };
    }
    if let Some((p, _)) = on_stack {
        return Params {
            status: Status::AggregateOnStack,
            signature: Signature::Source,
            detail: Some(format!(
                "{} ({}, {} bytes) is passed on the stack: BPF trampolines take at most 16-byte aggregates",
                p.name,
                p.ty.c,
                p.ty.size.unwrap_or(0)
            )),
        };
    }
    let dropped: Vec<&str> = c
        .params
        .iter()
        .zip(&states)
        .filter(|(_, s)| matches!(s, ParamState::Dropped | ParamState::Partial))
        .map(|(p, _)| p.name.as_str())
        .collect();
    if !dropped.is_empty() {
        return Params {
            status: Status::OptimizedParameters,
            signature: Signature::Source,
            detail: Some(format!(
                "unused at entry, still passed: {}",
                dropped.join(", ")
            )),
        };
    }
    Params {
        status: Status::Consistent,
        signature: Signature::Source,
        detail: None,
    }
}

fn changes(c: &Concrete, states: &[ParamState]) -> String {
    let mut out = Vec::new();
    for (p, s) in c.params.iter().zip(states) {
        match s {
            ParamState::Dropped => out.push(format!("{} dropped", p.name)),
            ParamState::Partial => out.push(format!("{} split", p.name)),
            ParamState::Moved => out.push(format!("{} moved to {}", p.name, loc_text(&p.loc))),
            _ => {}
        }
    }
    if c.nocall {
        out.push("DW_CC_nocall".into());
    }
    out.join(", ")
}

/// Rebuilds the prototype from entry locations: each argument register the
/// DWARF attributes to a (part of a) parameter becomes a parameter, in
/// register order. Aggregate halves are named `<param>__coerce<N>` (N: the
/// eightbyte), LLVM's convention (`uattr__coerce1` in the thread
/// <https://lore.kernel.org/bpf/3f95f01b-9cc4-499b-a18d-5c4975f0b0e5@oracle.com/>), with
/// the type of the one member that fills that eightbyte or else `u64`; the
/// member-name alternative breaks down when an eightbyte holds several
/// members, `__coerce<N>` never does.
pub fn true_signature(c: &Concrete, isra: bool) -> Result<Vec<SigParam>, String> {
    let mut placed: Vec<(usize, SigParam)> = Vec::new();
    for p in &c.params {
        match &p.loc {
            EntryLoc::Reg { reg } => {
                let Some(pos) = ARCH.int_arg_regs.iter().position(|r| r == reg) else {
                    return Err(format!(
                        "{} arrives in {}, which is not an argument register",
                        p.name,
                        (ARCH.reg_name)(*reg)
                    ));
                };
                if p.ty.class == ArgClass::Int2 {
                    return Err(format!(
                        "{} ({} bytes) arrives in {} alone",
                        p.name,
                        p.ty.size.unwrap_or(0),
                        (ARCH.reg_name)(*reg)
                    ));
                }
                placed.push((
                    pos,
                    SigParam {
                        name: p.name.clone(),
                        ty: SigType::Die(p.ty.die),
                        c: p.ty.c.clone(),
                        reg: Some(*reg),
                    },
                ));
            }
            EntryLoc::Pieces { pieces } => {
                for (k, reg) in piece_eightbytes(pieces) {
                    if let Some(reg) = reg {
                        let Some(pos) = ARCH.int_arg_regs.iter().position(|r| *r == reg) else {
                            return Err(format!(
                                "part of {} arrives in {}, which is not an argument register",
                                p.name,
                                (ARCH.reg_name)(reg)
                            ));
                        };
                        let (ty, cty) = eightbyte_type(p, k as u64);
                        placed.push((
                            pos,
                            SigParam {
                                name: format!("{}__coerce{k}", p.name),
                                ty,
                                c: cty,
                                reg: Some(reg),
                            },
                        ));
                    }
                }
            }
            EntryLoc::Stack { .. } => {
                return Err(format!(
                    "{} is on the stack at entry: its position among the arguments is unknown",
                    p.name
                ))
            }
            EntryLoc::NotAtEntry | EntryLoc::Scope { .. } => {
                return Err(format!(
                    "{}: DWARF does not say where it is at entry",
                    p.name
                ))
            }
            // GCC marks every parameter a clone no longer receives this way;
            // IPA-SRA (`.isra`) may pass parts of a pointed-to or by-value
            // aggregate instead, in registers DWARF does not describe. A
            // scalar cannot be split, so it was simply removed.
            EntryLoc::ParamRef if !isra || !(p.ty.pointer || p.ty.aggregate) => {}
            EntryLoc::ParamRef => {
                return Err(format!(
                    "{} was removed by IPA-SRA, which may pass parts of it in registers DWARF does not describe",
                    p.name
                ))
            }
            EntryLoc::Const | EntryLoc::Computed | EntryLoc::Absent => {}
        }
    }
    placed.sort_by_key(|(pos, _)| *pos);
    for w in placed.windows(2) {
        if w[0].0 == w[1].0 {
            return Err(format!(
                "{} and {} both claim {}",
                w[0].1.name,
                w[1].1.name,
                (ARCH.reg_name)(ARCH.int_arg_regs[w[0].0])
            ));
        }
    }
    let used = placed.last().map_or(0, |(pos, _)| pos + 1);
    let missing: Vec<String> = (0..used)
        .filter(|i| !placed.iter().any(|(pos, _)| pos == i))
        .map(|i| (ARCH.reg_name)(ARCH.int_arg_regs[i]))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} carr{} values DWARF does not describe",
            missing.join(", "),
            if missing.len() == 1 { "ies" } else { "y" }
        ));
    }
    Ok(placed.into_iter().map(|(_, p)| p).collect())
}

/// The type of eightbyte `k` of an aggregate parameter.
fn eightbyte_type(p: &SrcParam, k: u64) -> (SigType, String) {
    let lo = k * 8;
    let hi = lo + 8;
    let inside: Vec<_> = p
        .members
        .iter()
        .filter(|m| m.byte_offset < hi && m.byte_offset + m.byte_size.max(1) > lo)
        .collect();
    match inside.as_slice() {
        [m] if m.byte_offset >= lo && m.byte_offset + m.byte_size <= hi => {
            (SigType::Die(Some(m.ty)), m.c.clone())
        }
        _ => (SigType::U64, "u64".into()),
    }
}

/// An entry location as reports print it: a register name (`rdi`),
/// `stack+8`, pieces `reg:bytes` joined by `+` (`-` for a piece not
/// passed), or a word for the rest (`constant`, `optimized out`, ...).
pub fn loc_text(loc: &EntryLoc) -> String {
    match loc {
        EntryLoc::Reg { reg } => (ARCH.reg_name)(*reg),
        EntryLoc::Stack { offset } => format!("stack{offset:+}"),
        EntryLoc::Pieces { pieces } => pieces
            .iter()
            .map(|p| match p.reg {
                Some(r) => format!("{}:{}", (ARCH.reg_name)(r), p.bytes),
                None => format!("-:{}", p.bytes),
            })
            .collect::<Vec<_>>()
            .join("+"),
        EntryLoc::ParamRef => "parameter_ref".into(),
        EntryLoc::Const => "constant".into(),
        EntryLoc::Computed => "computed".into(),
        EntryLoc::Absent => "optimized out".into(),
        EntryLoc::NotAtEntry => "not at entry".into(),
        EntryLoc::Scope { what } => what.clone(),
    }
}

/// A slot as reports print it: its registers joined by `+` (`rdi+rsi`),
/// `xmm` or `stack`.
pub fn slot_text(slot: &Slot) -> String {
    match slot {
        Slot::Regs(r) => r
            .iter()
            .map(|r| (ARCH.reg_name)(*r))
            .collect::<Vec<_>>()
            .join("+"),
        Slot::Sse => "xmm".into(),
        Slot::Stack => "stack".into(),
    }
}
