//! `struct [-o] TYPE[.MEMBER,...] [ADDR]`, crash's `struct`: the struct
//! (or union) at ADDR printed as `p *(struct TYPE *)ADDR` prints it, or
//! only the members named (`struct task_struct.pid,comm ADDR`, a line
//! each, `.pid = (pid_t)1`); `-o`, or no ADDR, prints the type's members
//! (or those named) with their offsets (`[24]`, or their addresses
//! `[ffff...]` with ADDR) like crash's `struct -o` and pahole.
//! TYPE is `task_struct`, `struct task_struct`, `union ...` or a module's
//! `MODULE:NAME` (when vmlinux has a type of that name too); ADDR is an
//! address in hex, with or without `0x` (as crash takes it), or any
//! expression that gives one (`&init_task`, `prb`).

use btf::TypeData;
use serde_json::json;

use super::sym;
use crate::command::Reply;
use crate::error::{Error, Result};
use crate::eval::{Evaluated, Loc, Value};
use crate::format::json_addr;
use crate::message::quoted;
use crate::program::Program;
use crate::types;

/// `struct [-o] TYPE[.MEMBER,...] [ADDR]`: the struct at ADDR, or the
/// members named, or with `-o` (or no ADDR) the members' offsets.
pub fn run(prog: &mut Program, args: &str) -> Result<Reply> {
    let usage = || Error::Usage("struct [-o] TYPE[.MEMBER,...] [ADDR]".into());
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
    let (tyname, after, members) = if first == "struct" || first == "union" {
        let r = rest[first.len()..].trim_start();
        let n = &r[..word(r)];
        if n.is_empty() {
            return Err(usage());
        }
        let (n, members) = split_members(n);
        (format!("{first} {n}"), &r[word(r)..], members)
    } else {
        let after = &rest[first.len()..];
        let (first, members) = split_members(first);
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
        (key, after, members)
    };
    let ty = prog
        .types
        .get(&tyname)
        .copied()
        .or_else(|| prog.find_type(&tyname, 0))
        .ok_or_else(|| Error::eval(0, format!("no type {} in the BTF", quoted(&tyname))))?;
    if !matches!(
        prog.btf.resolved_data(ty),
        Some(TypeData::Struct { .. } | TypeData::Union { .. })
    ) {
        return Err(Error::eval(0, format!("{tyname} is no struct or union")));
    }
    let expr = after.trim();
    let col = args.len() - after.trim_start().len();
    let addr = if expr.is_empty() {
        None
    } else if let Some(a) = sym::parse_address(expr) {
        Some(a)
    } else {
        let v = match prog.eval_str(expr).map_err(|e| e.shifted(col))? {
            Evaluated::One(v) => v,
            Evaluated::Many(_) => {
                return Err(Error::eval(col + 1, "ADDR is a list, not an address"))
            }
        };
        Some(prog.scalar(&v, col + 1)?)
    };
    for m in &members {
        if types::member_path(&prog.btf, ty, m).is_none() {
            return Err(Error::eval(
                0,
                format!("{tyname} has no member {}", quoted(m)),
            ));
        }
    }
    // A struct whose start does not read is one error naming the address,
    // not one per member.
    if let (Some(a), false) = (addr, offsets) {
        let mut first = [0u8];
        prog.mem
            .read_virt(a, &mut first)
            .map_err(|error| Error::Memory {
                col: col + 1,
                error,
            })?;
    }
    match addr {
        Some(a) if !offsets && members.is_empty() => {
            let v = Value::at(ty, a);
            Ok(Reply {
                text: prog.to_text(&v),
                json: prog.to_json(&v),
            })
        }
        Some(a) if !offsets => Ok(selected(prog, ty, a, &members)),
        _ => Ok(layout(prog, ty, &tyname, addr, &members)),
    }
}

/// `task_struct.pid,comm` -> (`task_struct`, [`pid`, `comm`]).
fn split_members(word: &str) -> (&str, Vec<String>) {
    match word.split_once('.') {
        Some((t, m)) => (
            t,
            m.split(',')
                .filter(|m| !m.is_empty())
                .map(str::to_owned)
                .collect(),
        ),
        None => (word, Vec::new()),
    }
}

/// The named members of the struct at `addr`, a line each.
fn selected(prog: &Program, ty: btf::TypeId, addr: u64, members: &[String]) -> Reply {
    let mut lines = Vec::new();
    let mut obj = serde_json::Map::new();
    for m in members {
        let Some(f) = types::member_path(&prog.btf, ty, m) else {
            continue;
        };
        let v = if f.bits > 0 {
            Value {
                ty: f.ty,
                loc: Loc::Mem {
                    addr,
                    bit: f.bit_offset as u32,
                    bits: f.bits,
                },
            }
        } else {
            Value::at(f.ty, addr.wrapping_add(f.bit_offset / 8))
        };
        lines.push(format!(".{m} = {}", prog.to_text(&v)));
        obj.insert(m.clone(), prog.to_json(&v));
    }
    Reply {
        text: lines.join("\n"),
        json: serde_json::Value::Object(obj),
    }
}

/// The members of `ty` (all, or those of `only` at the first level) with
/// offsets (or addresses from `base`), one level deep.
fn layout(
    prog: &Program,
    ty: btf::TypeId,
    tyname: &str,
    base: Option<u64>,
    only: &[String],
) -> Reply {
    let btf = &prog.btf;
    let mut text = format!("{tyname} {{");
    let mut members = Vec::new();
    let size = btf.resolve_size(ty).unwrap_or(0);
    if let Some(t) = btf.type_by_id(btf.skip_mods_and_typedefs(ty)) {
        for m in t.members() {
            let bit = u64::from(m.bit_offset(t.kind_flag));
            let bits = m.bitfield_size(t.kind_flag);
            let name = btf.str_at(m.name_off).unwrap_or("");
            if !only.is_empty()
                && !only
                    .iter()
                    .any(|o| o.split(['.', '[']).next() == Some(name))
            {
                continue;
            }
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
                "address": base.map(|b| json_addr(b.wrapping_add(bit / 8))),
            }));
        }
    }
    text.push_str(&format!("\n}}\nSIZE: {size}"));
    Reply {
        text,
        json: json!({
            "type": tyname,
            "size": size,
            "address": base.map(json_addr),
            "members": members,
        }),
    }
}
