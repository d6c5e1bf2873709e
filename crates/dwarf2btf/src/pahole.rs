//! `--funcs pahole`: the functions pahole 1.24 encodes.
//!
//! pahole 1.24 keeps a DWARF subprogram when it is not a declaration, every
//! parameter has a name, and its name is exactly the name of an ELF STT_FUNC
//! symbol; of several such subprograms with one name the first wins. Each
//! kept one becomes FUNC_PROTO + FUNC with static linkage. Invariant here:
//! "first" is the first in unit order and DIE order, so the choice does not
//! depend on threads (pahole's -j made it racy).

use rustc_hash::FxHashSet;

use btf::{Btf, Param, Type, TypeData, TypeId};
use gimli::{constants as dw, UnitOffset};

use crate::convert::UnitBuilder;
use crate::dies::{Attrs, DieReader, Fields};
use crate::encode::{func_type, FuncPolicy, UnitContext, UnitRemap};
use crate::error::{Error, Result};

pub struct PaholeFuncs;

/// A function of one unit that may be encoded.
pub struct Candidate {
    name: String,
    /// Local ids of the unit.
    ret: TypeId,
    params: Vec<(String, TypeId)>,
    varargs: bool,
}

/// Name and type of a DIE, looking through DW_AT_abstract_origin and
/// DW_AT_specification (concrete instances and out-of-line definitions
/// carry neither themselves).
fn name_and_type<'d>(
    cx: &UnitContext<'_, 'd>,
    dies: &mut DieReader<'_, 'd>,
    attrs: &Attrs<'d>,
) -> gimli::Result<(Option<&'d [u8]>, Option<u32>)> {
    let mut name = attrs.name().bytes(cx.dwarf, cx.unit);
    let mut ty = attrs.ty();
    let mut next = attrs.abstract_origin().or(attrs.specification());
    for _ in 0..4 {
        let Some(at) = next.filter(|_| name.is_none() || ty.is_none()) else {
            break;
        };
        let Some(die) = dies.die_at(at)? else { break };
        name = name.or_else(|| die.attrs.name().bytes(cx.dwarf, cx.unit));
        ty = ty.or(die.attrs.ty());
        next = die.attrs.abstract_origin().or(die.attrs.specification());
    }
    Ok((name, ty))
}

impl PaholeFuncs {
    /// The unit's top-level function definitions whose name an ELF
    /// function symbol has, with their parameters. Only the unit's top
    /// level and the functions' direct children are read: every other
    /// subtree is skipped (through DW_AT_sibling when the producer gives it).
    fn candidates(&self, cx: &UnitContext<'_, '_>) -> gimli::Result<Vec<Candidate>> {
        let mut out = Vec::new();
        let mut dies = DieReader::new(cx.unit, Fields::FUNCS)?;
        let type_of =
            |t: Option<u32>| t.map_or(0, |t| cx.types.type_id(UnitOffset(t as usize)).unwrap_or(0));
        // The function being read, and whether all its parameters are named.
        let mut current: Option<(Candidate, bool)> = None;
        while let Some(die) = dies.next()? {
            let (depth, tag) = (die.depth, die.tag);
            if depth <= 1 {
                if let Some((c, true)) = current.take() {
                    out.push(c);
                }
            }
            match depth {
                0 => continue,
                1 if tag == dw::DW_TAG_subprogram && !die.attrs.declaration() => {
                    let attrs = die.attrs;
                    let (name, ret) = name_and_type(cx, &mut dies, &attrs)?;
                    let name = name.and_then(|n| std::str::from_utf8(n).ok());
                    match name.filter(|n| cx.elf.func_names.contains(n)) {
                        Some(name) => {
                            let c = Candidate {
                                name: name.to_owned(),
                                ret: type_of(ret),
                                params: Vec::new(),
                                varargs: false,
                            };
                            current = Some((c, true));
                            continue;
                        }
                        None => dies.skip_children()?,
                    }
                }
                2 => {
                    if let Some((c, named)) = &mut current {
                        match tag {
                            dw::DW_TAG_formal_parameter => {
                                let attrs = die.attrs;
                                let (pname, pty) = name_and_type(cx, &mut dies, &attrs)?;
                                match pname.and_then(|n| std::str::from_utf8(n).ok()) {
                                    Some(n) => c.params.push((n.to_owned(), type_of(pty))),
                                    None => *named = false,
                                }
                            }
                            dw::DW_TAG_unspecified_parameters => c.varargs = true,
                            _ => {}
                        }
                    }
                    dies.skip_children()?;
                }
                _ => dies.skip_children()?,
            }
        }
        if let Some((c, true)) = current {
            out.push(c);
        }
        Ok(out)
    }
}

impl FuncPolicy for PaholeFuncs {
    type Unit = Vec<Candidate>;

    fn unit(&self, cx: &UnitContext<'_, '_>, _out: &mut UnitBuilder) -> Result<Vec<Candidate>> {
        let offset = cx.types.unit_offset().0 as u64;
        self.candidates(cx).map_err(|e| Error::Dwarf {
            path: cx.path.to_owned(),
            offset,
            source: e,
        })
    }

    fn referenced(&self, unit: &Vec<Candidate>, ids: &mut Vec<TypeId>) {
        for c in unit {
            ids.push(c.ret);
            ids.extend(c.params.iter().map(|p| p.1));
        }
    }

    fn finish(&self, units: Vec<(UnitRemap, Vec<Candidate>)>, btf: &mut Btf) -> Result<()> {
        let mut done: FxHashSet<String> = FxHashSet::default();
        for (remap, cands) in units {
            for c in cands {
                if done.contains(&c.name) {
                    continue;
                }
                let mut params: Vec<Param> = c
                    .params
                    .iter()
                    .map(|(n, t)| Param {
                        name_off: btf.add_str(n),
                        ty: remap.type_id(*t),
                    })
                    .collect();
                if c.varargs {
                    params.push(Param { name_off: 0, ty: 0 });
                }
                let proto = btf.add_type(Type::new(
                    0,
                    TypeData::FuncProto {
                        ret: remap.type_id(c.ret),
                        params,
                    },
                ));
                let name = btf.add_str(&c.name);
                btf.add_type(func_type(name, proto));
                done.insert(c.name);
            }
        }
        Ok(())
    }
}
