//! The fentry audit's inputs on arbitrary bytes: the `__mcount_loc` reader
//! (as an ELF file) and the audit itself over whatever BTF parses, against
//! a few symbols; neither may panic.

#![no_main]

use dwarf2btf::funcs::attach::{audit, AuditInput, KernelSymbol};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ksyms::mcount::parse(data, std::path::Path::new("fuzz.elf"));
    if let Ok(btf) = btf::parse_any(data, None) {
        let symbols = [
            KernelSymbol { name: "f", address: 0x1000, size: 16, function: true },
            KernelSymbol { name: "f", address: 0x800, size: 0, function: false },
            KernelSymbol { name: "g.isra.0", address: 0x2000, size: 8, function: true },
            KernelSymbol { name: "h.llvm.7", address: 0x3000, size: 8, function: true },
        ];
        let sites = [0x1000, 0x2004];
        let _ = audit(
            &btf,
            &AuditInput { symbols: &symbols, fentry_sites: Some(&sites), model: None },
        );
    }
});
