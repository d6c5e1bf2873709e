//! `btfkit funcs --verify ELF BTF`: for every addr tag of a BTF, re-derive
//! from the ELF's DWARF that the tagged FUNC's parameters are where the
//! compiled code at that address takes them.
//!
//! Invariant: a tag passes only if some symbol at its address has a DWARF
//! instance whose writable signature has the FUNC's name, the same
//! parameter names in the same order, and, for each parameter, the
//! registers the x86-64 ABI assigns to the BTF parameter type equal the
//! registers the DWARF puts that value in at entry.

use btf::{Btf, Param, TypeData, TypeId};
use rustc_hash::FxHashMap;

use dwarf2btf::funcs::abi::{expected_slots, Slot};
use dwarf2btf::funcs::ctype::TypeInfo;
use dwarf2btf::funcs::location::{piece_eightbytes, EntryLoc, Piece};
use dwarf2btf::funcs::ARCH;
use dwarf2btf::funcs::{Concrete, FuncModel, Instance, Returns, Signature, Status};
use ksyms::kernel_lookup::parse_unreachable_name;

/// One `addr=0x...` DECL_TAG and the FUNC it tags.
#[derive(Clone, Debug, serde::Serialize)]
pub struct AddrTag {
    /// The link-time address of the instance the FUNC describes, as the
    /// tag's name gives it.
    pub address: u64,
    /// The type id of the FUNC the tag is on.
    pub func: TypeId,
    /// That FUNC's name (empty if the BTF gives it none).
    pub name: String,
}

/// Every addr tag on a FUNC, in type id order ([`btf::addr_tag::func_tags`]).
pub fn addr_tags(btf: &Btf) -> Vec<AddrTag> {
    btf::addr_tag::func_tags(btf)
        .map(|t| AddrTag {
            address: t.address,
            func: t.func,
            name: btf
                .type_by_id(t.func)
                .and_then(|f| btf.name_of(f).ok())
                .unwrap_or("")
                .to_owned(),
        })
        .collect()
}

/// An addr tag whose FUNC is not the code at its address, as [`verify`]
/// finds it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Violation {
    /// The tag's address.
    pub address: u64,
    /// The type id of the tagged FUNC.
    pub func: TypeId,
    /// The tagged FUNC's name.
    pub name: String,
    /// Why no instance at that address matches: one reason per symbol
    /// there, each prefixed with the symbol's name and joined by `; `, or
    /// that no function symbol is at the address.
    pub problem: String,
}

/// Checks every addr tag of `btf` against `model`.
pub fn verify(model: &FuncModel, btf: &Btf) -> Vec<Violation> {
    let mut at: FxHashMap<u64, Vec<&Instance>> = FxHashMap::default();
    for i in &model.instances {
        if i.status != Status::Fragment {
            at.entry(i.address).or_default().push(i);
        }
    }
    let mut out = Vec::new();
    for tag in addr_tags(btf) {
        let problem = match at.get(&tag.address) {
            None => Some("no function symbol at this address".to_owned()),
            Some(insts) => {
                let mut problems = Vec::new();
                let mut ok = false;
                for inst in insts {
                    match check(model, inst, btf, &tag) {
                        Ok(()) => ok = true,
                        Err(p) => problems.push(format!("{}: {p}", inst.symbol)),
                    }
                }
                (!ok).then(|| problems.join("; "))
            }
        };
        if let Some(problem) = problem {
            out.push(Violation {
                address: tag.address,
                func: tag.func,
                name: tag.name.clone(),
                problem,
            });
        }
    }
    out
}

fn check(model: &FuncModel, inst: &Instance, btf: &Btf, tag: &AddrTag) -> Result<(), String> {
    // The symbol's own name, or the unreachable name of this very address
    // (its symbol part may be cut short).
    let by_address = parse_unreachable_name(&tag.name)
        .is_some_and(|(s, a)| a == tag.address && inst.btf_name().starts_with(s));
    if inst.btf_name() != tag.name && !by_address {
        return Err(format!(
            "FUNC is named {}, the symbol is {}",
            tag.name,
            inst.btf_name()
        ));
    }
    prototype_matches(model, inst, btf, tag.func, Compare::Names)
}

/// What identifies a parameter besides its registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    /// Its name (a FUNC made from this DWARF has the DWARF's names).
    Names,
    /// Its type's C spelling, whitespace aside (what a program relies on;
    /// another producer may name parameters otherwise, as pahole names
    /// `strcpy`'s after a fortified inline copy).
    Types,
}

/// Whether the FUNC `func`'s prototype is the one the compiled code of
/// `inst` takes: as many parameters, each identified as `compare` says and
/// in the registers the DWARF puts it in at entry. FUNC names are not
/// compared.
pub fn prototype_matches(
    model: &FuncModel,
    inst: &Instance,
    btf: &Btf,
    func: TypeId,
    compare: Compare,
) -> Result<(), String> {
    let Some(c) = model.concrete(inst) else {
        return Err("no DWARF".into());
    };
    if !inst.encodable() {
        return Err(format!(
            "DWARF says it cannot be described: {}",
            inst.detail.as_deref().unwrap_or(inst.status.as_str())
        ));
    }
    let dwarf = code_params(inst, c)?;
    let Some(TypeData::Func { proto, .. }) = btf.type_by_id(func).map(|t| &t.data) else {
        return Err("not a FUNC".into());
    };
    let Some(TypeData::FuncProto { ret, params }) = btf.type_by_id(*proto).map(|t| &t.data) else {
        return Err("FUNC without FUNC_PROTO".into());
    };
    let named: Vec<_> = params
        .iter()
        .filter(|p| !(p.name_off == 0 && p.ty == 0))
        .collect();
    if named.len() != dwarf.len() {
        return Err(format!(
            "BTF has {} parameters, the code takes {}",
            named.len(),
            dwarf.len()
        ));
    }
    let code_ret = inst.returns.of(c);
    let code_ret_c = code_ret.map_or("void", |r| r.c.as_str());
    if compare == Compare::Types && !same_type(btf, *ret, code_ret_c, code_ret) {
        let removed = if inst.returns == Returns::Void {
            " (the compiler removed the value, or may have)"
        } else {
            ""
        };
        return Err(format!(
            "returns {} where the code returns {code_ret_c}{removed}",
            btf::cdecl::type_name(btf, *ret),
        ));
    }
    let next = usize::from(returns_in_memory(btf, *ret));
    compare_params(btf, &named, &dwarf, compare, next)
}

/// One parameter as the code takes it: name, C type, type, registers.
type CodeParam<'c> = (String, &'c str, Option<&'c TypeInfo>, Vec<u16>);

/// DWARF stage: each parameter of `inst`'s signature as the code takes it.
fn code_params<'c>(inst: &'c Instance, c: &'c Concrete) -> Result<Vec<CodeParam<'c>>, String> {
    Ok(match &inst.signature {
        Signature::Source => {
            let slots = expected_slots(&c.ret, &c.params);
            c.params
                .iter()
                .zip(slots)
                .map(|(p, slot)| {
                    let abi = match slot {
                        Slot::Regs(r) => r,
                        _ => Vec::new(),
                    };
                    // An unsuffixed function keeps its ABI: where DWARF does
                    // not place the value in a register at entry, the ABI's
                    // register stands.
                    let regs = match &p.loc {
                        EntryLoc::Reg { reg } => vec![*reg],
                        EntryLoc::Pieces { pieces } => eightbyte_regs(pieces, &abi),
                        _ => abi,
                    };
                    (p.name.clone(), p.ty.c.as_str(), Some(&p.ty), regs)
                })
                .collect()
        }
        Signature::True { params } => params
            .iter()
            .map(|p| {
                (
                    p.name.clone(),
                    p.c.as_str(),
                    None,
                    p.reg.into_iter().collect(),
                )
            })
            .collect(),
        Signature::Unwritable { .. } | Signature::None => return Err("no signature".into()),
    })
}

/// Whether the BTF type `id` is the code's type: its C text `c` and, from
/// DWARF, its `info`.
fn same_type(btf: &Btf, id: TypeId, c: &str, info: Option<&TypeInfo>) -> bool {
    same_c_type(&btf::cdecl::type_name(btf, id), c)
        || info.is_some_and(|i| same_scalar(btf, id, i))
        || (void_pointer(btf, id) && info.map_or(c.trim_end().ends_with('*'), |i| i.pointer))
}

/// Parameter stage: each BTF parameter against the code's, by name or
/// type, and by the registers it arrives in from the `next` argument
/// register on.
fn compare_params(
    btf: &Btf,
    named: &[&Param],
    dwarf: &[CodeParam<'_>],
    compare: Compare,
    mut next: usize,
) -> Result<(), String> {
    for (p, (dname, dtype, dinfo, dregs)) in named.iter().zip(dwarf) {
        let bname = btf.str_at(p.name_off).unwrap_or("");
        match compare {
            Compare::Names if bname != dname => {
                return Err(format!("parameter {bname} where DWARF has {dname}"));
            }
            Compare::Types if !same_type(btf, p.ty, dtype, *dinfo) => {
                return Err(format!(
                    "parameter {bname} is {} where the code takes {dtype} {dname}",
                    btf::cdecl::type_name(btf, p.ty)
                ));
            }
            _ => {}
        }
        let n = match regs_for(btf, p.ty) {
            Some(n) if next + n <= ARCH.int_arg_regs.len() => n,
            _ => 0,
        };
        let bregs: Vec<u16> = ARCH.int_arg_regs[next..next + n].to_vec();
        next += n;
        if !dregs.is_empty() && bregs != *dregs {
            let show = |r: &[u16]| {
                r.iter()
                    .map(|r| (ARCH.reg_name)(*r))
                    .collect::<Vec<_>>()
                    .join("+")
            };
            return Err(format!(
                "{bname}: BTF puts it in {}, the code takes it in {}",
                if bregs.is_empty() {
                    "memory".into()
                } else {
                    show(&bregs)
                },
                show(dregs)
            ));
        }
    }
    Ok(())
}

/// The registers an aggregate in pieces arrives in, eightbyte by
/// eightbyte: those its pieces name there, or the ABI's register where
/// none does (0, rax, where the ABI has none either).
fn eightbyte_regs(pieces: &[Piece], abi: &[u16]) -> Vec<u16> {
    let mut per: Vec<Vec<u16>> = Vec::new();
    for (k, reg) in piece_eightbytes(pieces) {
        if per.len() <= k {
            per.resize(k + 1, Vec::new());
        }
        if let Some(r) = reg.filter(|r| !per[k].contains(r)) {
            per[k].push(r);
        }
    }
    per.into_iter()
        .enumerate()
        .flat_map(|(k, regs)| {
            if regs.is_empty() {
                vec![abi.get(k).copied().unwrap_or(0)]
            } else {
                regs
            }
        })
        .collect()
}

/// Whether a BTF type's C spelling and the model's are one type: the two
/// spellers differ in whitespace, in `[0]`/`[]` for flexible arrays and in
/// `(anon)`/`{...}` for anonymous aggregates; an eightbyte the model could
/// only call `u64` is the encoder's `long unsigned int`; `?` (a type the
/// model could not name) proves nothing either way. A parameter's
/// top-level qualifier (`char *const p`) is no part of the type a caller
/// passes.
fn same_c_type(btf: &str, model: &str) -> bool {
    // Qualifiers anywhere: the verifier reads through them (a `const char *`
    // argument is a `char *` to a program).
    let norm = |s: &str| {
        s.split(|c: char| c.is_whitespace() || c == '*')
            .filter(|w| !matches!(*w, "const" | "volatile" | "restrict" | ""))
            .collect::<Vec<_>>()
            .join(" ")
            + &"*".repeat(s.matches('*').count())
    };
    let norm = |s: &str| {
        norm(s)
            .replace(' ', "")
            .replace("[0]", "[]")
            .replace("(anon)", "{...}")
    };
    let (b, m) = (norm(btf), norm(model));
    b == m || m.contains('?') || (m == "u64" && b == "longunsignedint")
}

/// Whether both are integers (or enums) of one size under their typedefs
/// (`__kernel_size_t` and `size_t`): one value in one register.
fn same_scalar(btf: &Btf, id: TypeId, model: &TypeInfo) -> bool {
    if model.pointer || model.aggregate || id == 0 {
        return false;
    }
    match btf.resolved_type(id).map(|t| &t.data) {
        Some(
            TypeData::Int { size, .. }
            | TypeData::Enum { size, .. }
            | TypeData::Enum64 { size, .. },
        ) => Some(u64::from(*size)) == model.size,
        _ => false,
    }
}

/// Whether a BTF type is `void *`: the verifier takes a pointer to
/// anything but a struct as a scalar (btf_ctx_access), so a `void *`
/// describes any pointer the code takes in its registers (7.x's legacy
/// `_impl` kfuncs take the implicit `struct btf_struct_meta *` as `void
/// *meta__ign`, and the verifier traces the kfunc with that prototype).
fn void_pointer(btf: &Btf, id: TypeId) -> bool {
    match btf.resolved_type(id).map(|t| &t.data) {
        Some(TypeData::Ptr { ty }) => btf.skip_mods_and_typedefs(*ty) == 0,
        _ => false,
    }
}

/// Size of a BTF type, through typedefs and modifiers.
fn size_of(btf: &Btf, id: TypeId) -> Option<(u64, bool)> {
    Some(match &btf.resolved_type(id)?.data {
        TypeData::Int { size, .. }
        | TypeData::Enum { size, .. }
        | TypeData::Enum64 { size, .. }
        | TypeData::Struct { size, .. }
        | TypeData::Union { size, .. } => (u64::from(*size), false),
        TypeData::Float { size } => (u64::from(*size), true),
        TypeData::Ptr { .. } => (8, false),
        _ => return None,
    })
}

/// General-purpose registers a parameter of this BTF type takes (0: memory or SSE).
fn regs_for(btf: &Btf, id: TypeId) -> Option<usize> {
    let (size, float) = size_of(btf, id)?;
    Some(match (size, float) {
        (_, true) => 0,
        (1..=8, _) => 1,
        (9..=16, _) => 2,
        _ => 0,
    })
}

fn returns_in_memory(btf: &Btf, ret: TypeId) -> bool {
    matches!(
        btf.resolved_type(ret).map(|t| &t.data),
        Some(TypeData::Struct { size, .. } | TypeData::Union { size, .. }) if *size > 16
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dwarf2btf::funcs::location::Piece;

    fn piece(reg: Option<u16>, bytes: u64) -> Piece {
        Piece { reg, bytes }
    }

    #[test]
    fn pieces_map_to_eightbytes_by_byte_offset() {
        let (rdx, rcx) = (ARCH.int_arg_regs[2], ARCH.int_arg_regs[3]);
        // clang 21's 8-byte struct printf_spec in rcx (7.2's
        // restricted_pointer): its upper half computed from rcx.
        assert_eq!(
            eightbyte_regs(&[piece(Some(rcx), 4), piece(None, 4)], &[rcx]),
            vec![rcx]
        );
        // A 16-byte struct: one register per eightbyte, the ABI's where no
        // piece of an eightbyte is in one.
        assert_eq!(
            eightbyte_regs(&[piece(Some(rdx), 8), piece(None, 8)], &[rdx, rcx]),
            vec![rdx, rcx]
        );
        assert_eq!(
            eightbyte_regs(&[piece(Some(rdx), 4), piece(Some(rcx), 4)], &[rdx]),
            vec![rdx, rcx],
            "one eightbyte in two registers is no ABI placement"
        );
    }
}
