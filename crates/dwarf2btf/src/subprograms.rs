//! The subprogram DIEs of one unit and their parameters, recorded while the
//! type converter's forward pass (convert.rs) reads the unit, so that the
//! function-instance walk (funcs/collect.rs) reads none of the unit's DIEs
//! again: it resolves abstract origins and specifications in this record.
//!
//! Invariant: `subs` holds every DW_TAG_subprogram DIE of the unit in
//! offset order (the pass meets them in order), each with its direct
//! DW_TAG_formal_parameter children in order; `concrete` lists, in order,
//! those at unit level (depth 1) that have code (DW_AT_low_pc or
//! DW_AT_ranges) and are no declaration; `bodiless` the unit-level
//! definitions with a name of their own and no code (whose code GCC left
//! undescribed, or abstract instances). The subprograms of units read
//! with the unit (partial_units.rs) follow under their keys; those of a
//! compilation unit read so ([`Subprograms::imported_die`]) are in `subs`
//! only: its functions are its own conversion's. `calls` lists the calls
//! that the unit's own unit-level subprograms make outside inlined code
//! (whose DIEs the converter skips), in order.

use gimli::constants as dw;

use crate::dies::{Address, Die, Loc, Str};

/// One DW_TAG_subprogram as it describes itself.
#[derive(Clone, Debug)]
pub struct RawSub<'d> {
    /// Offset in the unit.
    pub offset: u32,
    /// DW_AT_name, as found (not decoded yet).
    pub name: Str<'d>,
    /// DW_AT_decl_file: an index in the unit's line program's files.
    pub decl_file: Option<u64>,
    /// DW_AT_decl_line, counted from 1.
    pub decl_line: Option<u64>,
    /// DW_AT_type (the return type), an offset in the unit.
    pub ret: Option<u32>,
    /// DW_AT_abstract_origin, an offset in the unit: the abstract instance
    /// (an inline or cloned function's) that this concrete one completes.
    pub origin: Option<u32>,
    /// DW_AT_specification, an offset in the unit: the declaration this
    /// definition completes.
    pub specification: Option<u32>,
    /// DW_AT_external: visible outside its unit (not `static`).
    pub external: bool,
    /// DW_AT_calling_convention is DW_CC_nocall.
    pub nocall: bool,
    /// The DW_TAG_formal_parameter children, in order.
    pub params: Vec<RawParam<'d>>,
    /// A DW_TAG_unspecified_parameters child.
    pub varargs: bool,
}

/// One DW_TAG_formal_parameter child of a subprogram.
#[derive(Clone, Debug)]
pub struct RawParam<'d> {
    /// Offset in the unit.
    pub offset: u32,
    /// DW_AT_abstract_origin, an offset in the unit: the abstract
    /// parameter whose name and type this one has.
    pub origin: Option<u32>,
    /// DW_AT_name, as found.
    pub name: Str<'d>,
    /// DW_AT_type, an offset in the unit.
    pub ty: Option<u32>,
    /// DW_AT_location, as found: where the value is at entry (a DWARF
    /// expression or a location list, read later).
    pub location: Option<Loc<'d>>,
    /// DW_AT_const_value: the value is known, nothing is passed.
    pub has_const: bool,
}

/// A call site (DW_TAG_call_site, DW_TAG_GNU_call_site) that names its
/// callee.
#[derive(Clone, Copy, Debug)]
pub struct Call {
    /// The offset of the unit-level subprogram that makes the call.
    pub caller: u32,
    /// The callee's DIE (DW_AT_call_origin, DW_AT_abstract_origin).
    pub callee: u32,
    /// DW_AT_call_tail_call: a jump that leaves the caller's return to
    /// the callee.
    pub tail: bool,
    /// DW_AT_call_return_pc (DW_AT_low_pc of a DW_TAG_GNU_call_site): the
    /// address the callee returns to.
    pub return_pc: Option<Address>,
}

/// The record of one unit's subprograms (see the module's invariant).
#[derive(Default)]
pub struct Subprograms<'d> {
    subs: Vec<RawSub<'d>>,
    /// Indexes in `subs` of the unit-level subprograms with code.
    concrete: Vec<usize>,
    /// Indexes in `subs` of the named unit-level definitions without code.
    bodiless: Vec<usize>,
    /// The unit DIE's DW_AT_name.
    cu_name: Str<'d>,
    /// Depth of the last subprogram while its children are being read.
    open: Option<isize>,
    calls: Vec<Call>,
    /// The own unit-level subprogram whose children are being read.
    caller: Option<u32>,
    /// Depth of the inlined subroutine whose children are being read.
    inlined: Option<isize>,
}

impl<'d> Subprograms<'d> {
    /// Takes the next DIE of the pass (every DIE, in order).
    pub fn die(&mut self, die: &Die<'d>) {
        self.take(die, true);
    }

    /// Takes the next DIE of a compilation unit read with the unit: its
    /// subprograms are there to be referred to, not the unit's functions.
    pub fn imported_die(&mut self, die: &Die<'d>) {
        self.take(die, false);
    }

    #[inline]
    fn take(&mut self, die: &Die<'d>, own: bool) {
        let a = &die.attrs;
        if self.open.is_some_and(|d| die.depth <= d) {
            self.open = None;
        }
        if self.inlined.is_some_and(|d| die.depth <= d) {
            self.inlined = None;
        }
        if die.depth == 1 {
            self.caller = None;
        }
        match die.tag {
            _ if die.depth == 0 => self.cu_name = a.name(),
            dw::DW_TAG_subprogram => {
                let Ok(offset) = u32::try_from(die.offset) else {
                    return;
                };
                if die.depth == 1 && own {
                    self.caller = Some(offset);
                    if !a.declaration() && a.has_code() {
                        self.concrete.push(self.subs.len());
                    } else if !a.declaration() && a.name().is_some() {
                        self.bodiless.push(self.subs.len());
                    }
                }
                self.subs.push(RawSub {
                    offset,
                    name: a.name(),
                    decl_file: a.decl_file(),
                    decl_line: a.decl_line(),
                    ret: a.ty(),
                    origin: a.abstract_origin(),
                    specification: a.specification(),
                    external: a.external(),
                    nocall: a.calling_convention() == Some(u64::from(dw::DW_CC_nocall.0)),
                    params: Vec::new(),
                    varargs: false,
                });
                self.open = die.has_children.then_some(die.depth);
            }
            dw::DW_TAG_formal_parameter if self.open == Some(die.depth - 1) => {
                let Ok(offset) = u32::try_from(die.offset) else {
                    return;
                };
                if let Some(sub) = self.subs.last_mut() {
                    sub.params.push(RawParam {
                        offset,
                        origin: a.abstract_origin(),
                        name: a.name(),
                        ty: a.ty(),
                        location: a.param_location(),
                        has_const: a.const_value().is_some(),
                    });
                }
            }
            dw::DW_TAG_unspecified_parameters if self.open == Some(die.depth - 1) => {
                if let Some(sub) = self.subs.last_mut() {
                    sub.varargs = true;
                }
            }
            dw::DW_TAG_inlined_subroutine if die.has_children && self.inlined.is_none() => {
                self.inlined = Some(die.depth);
            }
            dw::DW_TAG_call_site | dw::DW_TAG_GNU_call_site if self.inlined.is_none() => {
                if let (Some(caller), Some(callee)) =
                    (self.caller, a.call_origin().or(a.abstract_origin()))
                {
                    self.calls.push(Call {
                        caller,
                        callee,
                        tail: a.tail_call(),
                        return_pc: a.call_return_pc(),
                    });
                }
            }
            _ => {}
        }
    }

    /// The subprogram DIE at `offset` in the unit.
    pub fn get(&self, offset: u32) -> Option<&RawSub<'d>> {
        let i = self.subs.binary_search_by_key(&offset, |s| s.offset).ok()?;
        self.subs.get(i)
    }

    /// The unit-level subprograms with code, in order.
    pub fn concrete(&self) -> impl Iterator<Item = &RawSub<'d>> {
        self.concrete.iter().filter_map(|&i| self.subs.get(i))
    }

    /// The named unit-level definitions without code, in order.
    pub fn bodiless(&self) -> impl Iterator<Item = &RawSub<'d>> {
        self.bodiless.iter().filter_map(|&i| self.subs.get(i))
    }

    /// The calls of the unit's own functions, in order.
    pub fn calls(&self) -> &[Call] {
        &self.calls
    }

    /// The unit DIE's DW_AT_name (the source file it was compiled from).
    pub fn cu_name(&self) -> Str<'d> {
        self.cu_name
    }
}
