//! What the drgn plugin (python/btfkit-drgn) asks of the crates, on
//! arbitrary bytes as the kernel's BTF: the program it opens over that BTF
//! (types, variables, enumerators indexed), every type as the plugin
//! describes it to drgn (names, members' bit offsets and bit-field sizes,
//! enumerators, parameters, the ids they refer to), lookups by C name, and
//! each function symbol's prototype (`BtfIndex::match_function`, as the
//! plugin's function index does) with kallsyms made of the BTF's own names.
//! None may panic; lookups of ids past the end find nothing.
#![no_main]
use std::path::Path;

use btf::{Btf, TypeData, TypeId};
use inspect::Program;
use ksyms::kallsyms::{self, Hidden};
use ksyms::{BtfIndex, SymbolKind, Table};
use libfuzzer_sys::fuzz_target;

#[path = "common/flat.rs"]
mod flat;

/// The ids a type refers to, as the plugin follows them.
fn refers_to(btf: &Btf, id: TypeId) -> Vec<TypeId> {
    let Some(t) = btf.type_by_id(id) else {
        return Vec::new();
    };
    let _ = btf.name_of(t);
    let _ = btf.str_at(t.name_off);
    match &t.data {
        TypeData::Ptr { ty }
        | TypeData::Typedef { ty }
        | TypeData::Const { ty }
        | TypeData::Volatile { ty }
        | TypeData::Restrict { ty }
        | TypeData::TypeTag { ty }
        | TypeData::Var { ty, .. } => vec![*ty],
        TypeData::Func { proto, .. } => vec![*proto],
        TypeData::Array(a) => vec![a.elem, a.index],
        TypeData::Struct { members, .. } | TypeData::Union { members, .. } => members
            .iter()
            .map(|m| {
                let _ = btf.str_at(m.name_off);
                let _ = (m.bit_offset(t.kind_flag), m.bitfield_size(t.kind_flag));
                m.ty
            })
            .collect(),
        TypeData::Enum { values, .. } => {
            for v in values.iter() {
                let _ = btf.str_at(v.name_off);
            }
            Vec::new()
        }
        TypeData::Enum64 { values, .. } => {
            for v in values.iter() {
                let _ = btf.str_at(v.name_off);
            }
            Vec::new()
        }
        TypeData::FuncProto { ret, params } => std::iter::once(*ret)
            .chain(params.iter().map(|p| {
                let _ = btf.str_at(p.name_off);
                p.ty
            }))
            .collect(),
        _ => Vec::new(),
    }
}

/// kallsyms text with a symbol for each FUNC (text) and VAR (data) name
/// that kallsyms could hold, at made-up addresses; names may repeat.
fn kallsyms_of(btf: &Btf) -> Vec<u8> {
    let mut text = String::new();
    for (i, (_, t)) in btf.iter().enumerate() {
        let letter = match t.data {
            TypeData::Func { .. } => 'T',
            TypeData::Var { .. } => 'D',
            _ => continue,
        };
        let Ok(name) = btf.name_of(t) else {
            continue;
        };
        if name.is_empty() || name.len() > 200 || name.contains(char::is_whitespace) {
            continue;
        }
        let addr = 0xffff_ffff_8100_0000u64 + 0x40 * i as u64;
        text.push_str(&format!("{addr:016x} {letter} {name}\n"));
    }
    text.into_bytes()
}

fuzz_target!(|data: &[u8]| {
    let Ok(btf) = Btf::parse(data) else {
        return;
    };
    let syms = kallsyms::parse(kallsyms_of(&btf), Path::new("fuzz"), Hidden::Error)
        .or_else(|_| kallsyms::parse(Vec::new(), Path::new("fuzz"), Hidden::Error));
    let Ok(syms) = syms else {
        return;
    };
    let mem = flat::Flat {
        base: 0xffff_8880_0000_0000,
        bytes: &[],
    };
    let mut prog = Program::new(Box::new(mem), btf, Table::new(syms));

    let n = prog.btf().type_count();
    let mut names = Vec::new();
    for id in 0..=n + 1 {
        for r in refers_to(prog.btf(), id) {
            let _ = prog.btf().type_by_id(r);
        }
        if let Some(t) = prog.btf().type_by_id(id) {
            if let Ok(name) = prog.btf().name_of(t) {
                let name = match t.data {
                    TypeData::Struct { .. } => format!("struct {name}"),
                    TypeData::Union { .. } => format!("union {name}"),
                    TypeData::Enum { .. } | TypeData::Enum64 { .. } => format!("enum {name}"),
                    _ => name.to_owned(),
                };
                names.push(name);
            }
        }
    }
    for name in names.iter().take(256) {
        let _ = prog.find_type(name, 0);
        let _ = prog.var(name);
        let _ = prog.enumerator(name);
        let _ = prog.ambiguous(name);
        let _ = prog.symbol(name);
    }
    let _ = prog.var_names().filter(|v| prog.var(v).is_some()).count();

    // The plugin's function index: each function symbol's FUNC.
    let mut index = BtfIndex::new(prog.btf());
    index.calibrate(prog.symbols());
    let table = prog.symbols();
    for sym in table.iter().filter(|s| s.kind == SymbolKind::Function) {
        let found = index.match_function(table, &sym);
        if let Some(id) = found.btf_id() {
            assert!(
                prog.btf().type_by_id(id).is_some(),
                "matched a missing type {id}"
            );
        }
        let _ = found.is_ambiguous();
    }
});
