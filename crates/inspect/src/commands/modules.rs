//! `mod`: the loaded modules, like crash's `mod`: the `struct module`'s
//! address, the name, where its core memory starts and how large it is,
//! plus whether the kernel holds BTF for it (`btf_modules`).

use serde_json::json;

use crate::command::Reply;
use crate::error::{Error, Result};
use crate::format::json_addr;
use crate::kernel::module::for_each_module;
use crate::program::Program;

/// `mod`: the loaded modules, a line each (it takes no arguments).
pub fn run(prog: &mut Program, args: &str) -> Result<Reply> {
    if !args.is_empty() {
        return Err(Error::Usage(format!(
            "mod takes no arguments, not {}",
            crate::message::quoted(args)
        )));
    }
    let mods = for_each_module(prog)?;
    let name_w = mods
        .modules
        .iter()
        .map(|m| m.name.len())
        .max()
        .unwrap_or(0)
        .max(4);
    let mut text = format!(
        "{:>16}  {:name_w$}  {:>16}  {:>8}  BTF",
        "MODULE", "NAME", "BASE", "SIZE"
    );
    let mut list = Vec::new();
    for m in &mods.modules {
        let btf = match &m.btf {
            Some(b) => format!("yes ({} bytes)", b.size),
            None => "no".into(),
        };
        text.push_str(&format!(
            "\n{:016x}  {:name_w$}  {:016x}  {:>8}  {btf}",
            m.addr, m.name, m.base, m.size
        ));
        if let Some(p) = &m.problem {
            text.push_str(&format!("  <{p}>"));
        }
        list.push(json!({
            "module": json_addr(m.addr),
            "name": m.name,
            "state": m.state,
            "base": json_addr(m.base),
            "size": m.size,
            "btf": m.btf.map(|b| json!({ "btf": json_addr(b.addr), "data": json_addr(b.data), "size": b.size })),
            "error": m.problem,
        }));
    }
    if let Some(s) = &mods.stopped {
        text.push_str(&format!("\n<module list: {s}>"));
    }
    Ok(Reply {
        text,
        json: json!({ "modules": list, "error": mods.stopped }),
    })
}
