//! One BTF type as a Python tuple whose first item is its kind; the Python
//! side makes the drgn `Type` from it (python/btfkit_drgn/types.py reads
//! these shapes, and _native.pyi documents them).

use btf::{Btf, Type, TypeData, TypeId};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::BoundObject;

use crate::BtfkitError;

/// BTF_INT_SIGNED and BTF_INT_BOOL (include/uapi/linux/btf.h).
const INT_SIGNED: u8 = 1;
const INT_BOOL: u8 = 4;

fn name<'b>(btf: &'b Btf, t: &Type, id: TypeId) -> PyResult<&'b str> {
    btf.name_of(t)
        .map_err(|e| BtfkitError::new_err(format!("BTF type {id}: {e}")))
}

/// A name, or `None` for an anonymous type or member.
fn opt_name(btf: &Btf, off: u32, id: TypeId) -> PyResult<Option<String>> {
    let n = btf
        .str_at(off)
        .map_err(|e| BtfkitError::new_err(format!("BTF type {id}: {e}")))?;
    Ok((!n.is_empty()).then(|| n.to_owned()))
}

fn tuple<'py>(
    py: Python<'py>,
    items: impl IntoPyObject<'py, Target = PyTuple>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(items
        .into_pyobject(py)
        .map_err(Into::into)?
        .into_any()
        .into_bound())
}

/// `id` of `btf` described; 0 is `("void",)`.
pub fn describe<'py>(py: Python<'py>, btf: &Btf, id: TypeId) -> PyResult<Bound<'py, PyAny>> {
    if id == 0 {
        return tuple(py, ("void",));
    }
    let t = btf
        .type_by_id(id)
        .ok_or_else(|| BtfkitError::new_err(format!("no BTF type {id}")))?;
    match &t.data {
        TypeData::Int { size, encoding, .. } => tuple(
            py,
            (
                "int",
                name(btf, t, id)?,
                *size,
                encoding & INT_SIGNED != 0,
                encoding & INT_BOOL != 0,
            ),
        ),
        TypeData::Float { size } => tuple(py, ("float", name(btf, t, id)?, *size)),
        TypeData::Ptr { ty } => tuple(py, ("pointer", *ty)),
        TypeData::Array(a) => tuple(py, ("array", a.elem, a.nelems)),
        TypeData::Struct { size, members } | TypeData::Union { size, members } => {
            let kind = if matches!(t.data, TypeData::Struct { .. }) {
                "struct"
            } else {
                "union"
            };
            let list = members
                .iter()
                .map(|m| {
                    Ok((
                        opt_name(btf, m.name_off, id)?,
                        m.ty,
                        m.bit_offset(t.kind_flag),
                        m.bitfield_size(t.kind_flag),
                    ))
                })
                .collect::<PyResult<Vec<_>>>()?;
            tuple(py, (kind, opt_name(btf, t.name_off, id)?, *size, list))
        }
        TypeData::Enum { size, values } => enum_tuple(
            py,
            btf,
            t,
            id,
            *size,
            values
                .iter()
                .map(|v| (v.name_off, enum_value(t, u64::from(v.val), 32))),
        ),
        TypeData::Enum64 { size, values } => enum_tuple(
            py,
            btf,
            t,
            id,
            *size,
            values
                .iter()
                .map(|v| (v.name_off, enum_value(t, v.val, 64))),
        ),
        TypeData::Fwd => {
            let kind = if t.kind_flag { "union" } else { "struct" };
            tuple(py, ("fwd", kind, name(btf, t, id)?))
        }
        TypeData::Typedef { ty } => tuple(py, ("typedef", name(btf, t, id)?, *ty)),
        TypeData::Const { ty } => tuple(py, ("const", *ty)),
        TypeData::Volatile { ty } => tuple(py, ("volatile", *ty)),
        TypeData::Restrict { ty } => tuple(py, ("restrict", *ty)),
        TypeData::TypeTag { ty } => tuple(py, ("type_tag", *ty)),
        TypeData::Func { proto, .. } => tuple(py, ("func", name(btf, t, id)?, *proto)),
        TypeData::FuncProto { ret, params } => {
            // A last parameter of type void without a name is C's `...`.
            let variadic = params.last().is_some_and(|p| p.ty == 0 && p.name_off == 0);
            let n = params.len() - usize::from(variadic);
            let list = params[..n]
                .iter()
                .map(|p| Ok((opt_name(btf, p.name_off, id)?, p.ty)))
                .collect::<PyResult<Vec<_>>>()?;
            tuple(py, ("function", *ret, list, variadic))
        }
        TypeData::Var { ty, .. } => tuple(py, ("var", name(btf, t, id)?, *ty)),
        _ => Err(BtfkitError::new_err(format!(
            "BTF type {id} is a {}, which is not a C type",
            t.kind_name()
        ))),
    }
}

fn name_at(btf: &Btf, off: u32, id: TypeId) -> PyResult<String> {
    Ok(opt_name(btf, off, id)?.unwrap_or_default())
}

/// `("enum", name, size, signed, [(enumerator, value)])` for ENUM and ENUM64.
/// An enumerator's value as its signedness reads it: kind_flag set means
/// signed, `bits` (32 or 64) wide.
fn enum_value(t: &Type, raw: u64, bits: u32) -> i128 {
    if t.kind_flag {
        let shift = 64 - bits;
        i128::from(((raw << shift) as i64) >> shift)
    } else {
        i128::from(raw)
    }
}

fn enum_tuple<'py>(
    py: Python<'py>,
    btf: &Btf,
    t: &Type,
    id: TypeId,
    size: u32,
    values: impl Iterator<Item = (u32, i128)>,
) -> PyResult<Bound<'py, PyAny>> {
    let list = values
        .map(|(name_off, val)| Ok((name_at(btf, name_off, id)?, val)))
        .collect::<PyResult<Vec<_>>>()?;
    tuple(
        py,
        (
            "enum",
            opt_name(btf, t.name_off, id)?,
            size,
            t.kind_flag,
            list,
        ),
    )
}
