//! `btf::query` on the running kernel's BTF against two oracles: bpftool's
//! JSON dump (members, bit offsets, bitfield sizes, struct sizes, lookup by
//! name and kind) and the C compiler's `sizeof` over bpftool's C dump
//! (sizes resolved through typedefs, qualifiers and arrays). Struct and
//! union sizes are compared with bpftool's JSON only: its C dump cannot
//! always give a struct the size its BTF says (an empty transparent union,
//! a struct aligned to a cache line), so `sizeof` is asked of the typedefs
//! of scalars, pointers and arrays of them.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use btf::{Btf, Kind, TypeData};

fn sysfs_vmlinux() -> Option<Btf> {
    let p = Path::new(btf::SYSFS_VMLINUX);
    if !p.exists() {
        testkit::skip("/sys/kernel/btf/vmlinux is not present (CONFIG_DEBUG_INFO_BTF)");
        return None;
    }
    Some(btf::load_file(p, None).expect("load the running kernel's BTF"))
}

fn bpftool_dump(args: &[&str]) -> Option<Vec<u8>> {
    let tool = testkit::tool_or_skip("bpftool", "bpftool")?;
    let mut cmd = Command::new(tool);
    cmd.args(["btf", "dump", "file", btf::SYSFS_VMLINUX])
        .args(args);
    Some(testkit::run_ok(&mut cmd))
}

#[test]
fn query_members_and_lookups_match_bpftool_json() {
    let Some(btf) = sysfs_vmlinux() else { return };
    let Some(json) = bpftool_dump(&["-j"]) else {
        return;
    };
    let json: serde_json::Value = serde_json::from_slice(&json).expect("bpftool's JSON");
    let types = json["types"].as_array().expect("types");
    let mut first_by_name_kind: HashMap<(&str, &str), u64> = HashMap::new();
    let mut structs = 0;
    for t in types {
        let id = t["id"].as_u64().expect("id");
        let kind = t["kind"].as_str().expect("kind");
        let name = t["name"].as_str().unwrap_or("");
        first_by_name_kind.entry((name, kind)).or_insert(id);
        if kind != "STRUCT" && kind != "UNION" {
            continue;
        }
        structs += 1;
        let id = id as u32;
        assert_eq!(
            btf.resolve_size(id),
            t["size"].as_u64(),
            "[{id}] {kind} '{name}' size"
        );
        let ours: Vec<(String, u64, u64, u64)> = btf
            .members(id)
            .map(|m| m.expect("member name"))
            .map(|m| {
                (
                    m.name.to_owned(),
                    u64::from(m.ty),
                    u64::from(m.bit_offset),
                    u64::from(m.bitfield_size),
                )
            })
            .collect();
        let theirs: Vec<(String, u64, u64, u64)> = t["members"]
            .as_array()
            .expect("members")
            .iter()
            .map(|m| {
                (
                    // bpftool's JSON names anonymous members "(anon)".
                    match m["name"].as_str() {
                        Some("(anon)") | None => String::new(),
                        Some(n) => n.to_owned(),
                    },
                    m["type_id"].as_u64().expect("type_id"),
                    m["bits_offset"].as_u64().expect("bits_offset"),
                    m["bitfield_size"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(ours, theirs, "[{id}] {kind} '{name}' members");
    }
    assert!(structs > 1000, "only {structs} structs and unions");
    for name in ["task_struct", "sk_buff", "file", "list_head", "page"] {
        assert_eq!(
            btf.find_by_name_kind(name, Kind::STRUCT).map(u64::from),
            first_by_name_kind.get(&(name, "STRUCT")).copied(),
            "struct {name}"
        );
    }
    assert_eq!(
        btf.find_by_name_kind("task_struct", Kind::UNION),
        None,
        "no union task_struct"
    );
}

/// Whether the type, under typedefs, qualifiers and arrays, is a struct or union.
fn ends_in_composite(btf: &Btf, mut id: u32) -> bool {
    for _ in 0..btf::query::MAX_RESOLVE_DEPTH {
        match btf.resolved_type(id).map(|t| &t.data) {
            Some(TypeData::Array(a)) => id = a.elem,
            Some(TypeData::Struct { .. } | TypeData::Union { .. }) => return true,
            _ => return false,
        }
    }
    false
}

#[test]
fn query_sizes_through_typedefs_match_the_c_compilers_sizeof() {
    let Some(btf) = sysfs_vmlinux() else { return };
    let Some(cc) = testkit::tool_or_skip("cc", "gcc") else {
        return;
    };
    let Some(header) = bpftool_dump(&["format", "c"]) else {
        return;
    };
    // Typedefs whose name only one typedef has: bpftool renames the others.
    let mut count: HashMap<&str, usize> = HashMap::new();
    for (_, t) in btf.iter() {
        if matches!(t.data, TypeData::Typedef { .. }) {
            *count.entry(btf.name_of(t).expect("name")).or_default() += 1;
        }
    }
    let mut asserts = String::new();
    let mut checked = 0;
    for (id, t) in btf.iter() {
        let TypeData::Typedef { ty } = t.data else {
            continue;
        };
        let name = btf.name_of(t).expect("name");
        // Typedefs of functions and of void have no size.
        let Some(size) = btf.resolve_size(id) else {
            continue;
        };
        if count[name] != 1 || btf.resolved_type(ty).is_none() || ends_in_composite(&btf, ty) {
            continue;
        }
        asserts.push_str(&format!(
            "_Static_assert(sizeof({name}) == {size}, \"{name}\");\n"
        ));
        checked += 1;
    }
    assert!(checked > 1000, "only {checked} typedefs");
    let fixture = testkit::Fixture::new();
    let mut src = header;
    src.extend_from_slice(asserts.as_bytes());
    let c = fixture.path("sizes.c");
    std::fs::write(&c, src).expect("write sizes.c");
    testkit::run_ok(Command::new(cc).arg("-fsyntax-only").arg(&c));
}
