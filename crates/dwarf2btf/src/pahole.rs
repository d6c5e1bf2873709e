//! `--funcs pahole`: the functions pahole 1.24 encodes.
//!
//! pahole 1.24 keeps a DWARF subprogram when it is not a declaration, every
//! parameter has a name, and its name is exactly the name of an ELF STT_FUNC
//! symbol; of several such subprograms with one name the first wins. Each
//! kept one becomes FUNC_PROTO + FUNC with static linkage. Invariant here:
//! "first" is the first in unit order and DIE order, so the choice does not
//! depend on threads (pahole's -j made it racy).

use std::collections::HashSet;

use btf::{Btf, Param, Type, TypeData, TypeId};
use gimli::{constants as dw, AttributeValue, UnitOffset};

use crate::convert::UnitBuilder;
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
    off: UnitOffset,
) -> gimli::Result<(Option<&'d [u8]>, Option<UnitOffset>)> {
    let mut off = off;
    let mut name = None;
    let mut ty = None;
    for _ in 0..4 {
        let entry = cx.unit.entry(off)?;
        let mut next = None;
        let mut attrs = entry.attrs();
        while let Some(a) = attrs.next()? {
            match (a.name(), a.value()) {
                (dw::DW_AT_name, v) if name.is_none() => {
                    name = cx.dwarf.attr_string(cx.unit, v).ok().map(|r| r.slice())
                }
                (dw::DW_AT_type, AttributeValue::UnitRef(t)) if ty.is_none() => ty = Some(t),
                (
                    dw::DW_AT_abstract_origin | dw::DW_AT_specification,
                    AttributeValue::UnitRef(o),
                ) => next = Some(o),
                _ => {}
            }
        }
        match next {
            Some(o) if name.is_none() || ty.is_none() => off = o,
            _ => break,
        }
    }
    Ok((name, ty))
}

impl PaholeFuncs {
    fn candidates(&self, cx: &UnitContext<'_, '_>) -> gimli::Result<Vec<Candidate>> {
        let mut out = Vec::new();
        let mut tree = cx.unit.entries_tree(None)?;
        let root = tree.root()?;
        let mut children = root.children();
        let type_of = |t: Option<UnitOffset>| t.map_or(0, |t| cx.types.type_id(t).unwrap_or(0));
        while let Some(node) = children.next()? {
            let entry = node.entry();
            if entry.tag() != dw::DW_TAG_subprogram {
                continue;
            }
            if matches!(
                entry.attr_value(dw::DW_AT_declaration)?,
                Some(AttributeValue::Flag(true))
            ) {
                continue;
            }
            let (name, ret) = name_and_type(cx, entry.offset())?;
            let Some(name) = name.and_then(|n| std::str::from_utf8(n).ok()) else {
                continue;
            };
            let mut c = Candidate {
                name: name.to_owned(),
                ret: type_of(ret),
                params: Vec::new(),
                varargs: false,
            };
            let mut named = true;
            let mut params = node.children();
            while let Some(p) = params.next()? {
                match p.entry().tag() {
                    dw::DW_TAG_formal_parameter => {
                        let (pname, pty) = name_and_type(cx, p.entry().offset())?;
                        match pname.and_then(|n| std::str::from_utf8(n).ok()) {
                            Some(n) => c.params.push((n.to_owned(), type_of(pty))),
                            None => named = false,
                        }
                    }
                    dw::DW_TAG_unspecified_parameters => c.varargs = true,
                    _ => {}
                }
            }
            if named {
                out.push(c);
            }
        }
        Ok(out)
    }
}

impl FuncPolicy for PaholeFuncs {
    type Unit = Vec<Candidate>;

    fn unit(&self, cx: &UnitContext<'_, '_>, _out: &mut UnitBuilder) -> Result<Vec<Candidate>> {
        let offset = cx.types.unit_offset().0 as u64;
        let mut c = self.candidates(cx).map_err(|e| Error::Dwarf {
            path: cx.path.to_owned(),
            offset,
            source: e,
        })?;
        c.retain(|c| cx.elf.func_names.contains(c.name.as_str()));
        Ok(c)
    }

    fn referenced(&self, unit: &Vec<Candidate>, ids: &mut Vec<TypeId>) {
        for c in unit {
            ids.push(c.ret);
            ids.extend(c.params.iter().map(|p| p.1));
        }
    }

    fn finish(&self, units: Vec<(UnitRemap, Vec<Candidate>)>, btf: &mut Btf) -> Result<()> {
        let mut done: HashSet<String> = HashSet::new();
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
