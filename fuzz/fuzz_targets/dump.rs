//! The three dumps (bpftool's raw text, JSON, C header) on whatever the
//! reader accepts, valid or not, the 2026 kinds included (location kinds,
//! kinds read through a layout section): none may panic or recurse without
//! end.

#![no_main]

use btf::TypeData;
use libfuzzer_sys::fuzz_target;

/// The C dump pads a struct to its size with `long: 64;` lines, as libbpf
/// does, so its output grows with the size: a corrupted 2 GB struct is
/// hundreds of millions of lines, correct but too slow for a fuzzer.
const MAX_C_AGGREGATE: u32 = 1 << 16;

fuzz_target!(|data: &[u8]| {
    let Ok(btf) = btf::Btf::parse(data) else {
        return;
    };
    let mut out = Vec::new();
    let _ = btf::dump::raw::dump(&btf, &mut out);
    out.clear();
    let _ = btf::dump::json::dump(&btf, &mut out);
    out.clear();
    let huge = btf.iter().any(|(_, t)| {
        matches!(t.data, TypeData::Struct { size, .. } | TypeData::Union { size, .. } if size > MAX_C_AGGREGATE)
    });
    if !huge {
        let _ = btf::dump::c::dump(&btf, &mut out);
    }
});
