//! `struct [-o] TYPE [ADDR]`, crash's `struct`: the struct (or union) at
//! ADDR printed as `p *(struct TYPE *)ADDR` prints it; `-o`, or no ADDR,
//! prints the type's members with their offsets (`[24]`, or their
//! addresses `[ffff...]` with ADDR) like crash's `struct -o` and pahole.
//! TYPE is `task_struct`, `struct task_struct`, `union ...` or a module's
//! `MODULE:NAME` (when vmlinux has a type of that name too); ADDR is any
//! expression that gives an address (`0xffff...`, `&init_task`, `prb`).

use btf::TypeData;
use serde_json::json;

use crate::command::Reply;
use crate::error::{Error, Result};
use crate::eval::{Evaluated, Value};
use crate::program::Program;
use crate::types;

pub fn run(prog: &mut Program, args: &str) -> Result<Reply> {
    let usage = || Error::Usage("struct [-o] TYPE [ADDR]".into());
    let mut rest = args.trim_start();
    let mut offsets = false;
    if let Some(r) = rest.strip_prefix("-o") {
        offsets = true;
        rest = r.trim_start();
    }
    let word = |s: &str| -> usize { s.find(char::is_whitespace).unwrap_or(s.len()) };
    let first = &rest[..word(rest)];
    if first.is_empty() {
        return Err(usage());
    }
    let (tyname, after) = if first == "struct" || first == "union" {
        let r = rest[first.len()..].trim_start();
        let n = &r[..word(r)];
        if n.is_empty() {
            return Err(usage());
        }
        (format!("{first} {n}"), &r[n.len()..])
    } else {
        // `MODULE:NAME`: that module's type (see kernel::module_btf).
        let (module, name) = match first.split_once(':') {
            Some((m, n)) => (format!("{m}:"), n),
            None => (String::new(), first),
        };
        let key = ["struct", "union"]
            .iter()
            .map(|k| format!("{module}{k} {name}"))
            .find(|n| prog.types.contains_key(n))
            .unwrap_or_else(|| first.to_owned());
        (key, &rest[first.len()..])
    };
    let ty = prog
        .types
        .get(&tyname)
        .copied()
        .or_else(|| prog.find_type(&tyname, 0))
        .ok_or_else(|| Error::eval(0, format!("no type {tyname:?} in the BTF")))?;
    if !matches!(
        types::data(&prog.btf, ty),
        Some(TypeData::Struct { .. } | TypeData::Union { .. })
    ) {
        return Err(Error::eval(0, format!("{tyname} is no struct or union")));
    }
    let expr = after.trim();
    let addr = if expr.is_empty() {
        None
    } else {
        let col = args.len() - after.trim_start().len();
        let v = match prog.eval_str(expr).map_err(|e| e.shifted(col))? {
            Evaluated::One(v) => v,
            Evaluated::Many(_) => {
                return Err(Error::eval(col + 1, "ADDR is a list, not an address"))
            }
        };
        Some(prog.scalar(&v, col + 1)?)
    };
    match addr {
        Some(a) if !offsets => {
            let v = Value::at(ty, a);
            Ok(Reply {
                text: prog.to_text(&v),
                json: prog.to_json(&v),
            })
        }
        _ => Ok(layout(prog, ty, &tyname, addr)),
    }
}

/// The members of `ty` with offsets (or addresses from `base`), one level deep.
fn layout(prog: &Program, ty: btf::TypeId, tyname: &str, base: Option<u64>) -> Reply {
    let btf = &prog.btf;
    let mut text = format!("{tyname} {{");
    let mut members = Vec::new();
    let size = types::size_of(btf, ty).unwrap_or(0);
    if let Some(t) = btf.type_by_id(types::resolve(btf, ty)) {
        for m in t.members() {
            let bit = u64::from(m.bit_offset(t.kind_flag));
            let bits = m.bitfield_size(t.kind_flag);
            let name = btf.str_at(m.name_off).unwrap_or("");
            let mut decl = prog.shorten(&btf::cdecl::declaration(btf, m.ty, name));
            if bits > 0 {
                decl.push_str(&format!(" : {bits}"));
            }
            let at = match base {
                Some(b) => format!("[{:x}]", b.wrapping_add(bit / 8)),
                None => format!("[{}]", bit / 8),
            };
            text.push_str(&format!("\n  {at} {decl};"));
            members.push(json!({
                "name": name,
                "type": prog.type_name(m.ty),
                "offset": bit / 8,
                "bit_offset": bit,
                "bits": bits,
                "address": base.map(|b| b.wrapping_add(bit / 8)),
            }));
        }
    }
    text.push_str(&format!("\n}}\nSIZE: {size}"));
    Reply {
        text,
        json: json!({ "type": tyname, "size": size, "address": base, "members": members }),
    }
}
