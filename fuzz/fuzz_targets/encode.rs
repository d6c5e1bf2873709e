//! The DWARF -> BTF encoder on arbitrary bytes taken as an ELF file, with
//! both function policies and every variable: it may refuse the input, it
//! may not panic, and what it encodes must write out.

#![no_main]

use std::path::Path;

use dwarf2btf::{EncodeOptions, FuncMode, NoProgress, VarsMode};
use dwarf2btf::load::ElfFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(elf) = ElfFile::from_bytes(Path::new("fuzz.o"), data) else {
        return;
    };
    for funcs in [FuncMode::Pahole, FuncMode::Exact] {
        let opts = EncodeOptions {
            jobs: 1,
            funcs,
            vars: VarsMode::All,
            ..Default::default()
        };
        if let Ok(encoded) = dwarf2btf::encode(&elf, None, &opts, &NoProgress) {
            let _ = encoded.btf.to_bytes();
        }
    }
});
