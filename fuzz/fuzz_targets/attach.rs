//! The fentry audit's inputs on arbitrary bytes: the `__mcount_loc` reader,
//! a module's symbols and call sites (`module_input`) and the kernel's
//! rules (version banner, deny set) of an ELF file, and the audit itself
//! over whatever BTF parses, against a few symbols, by the rules of kernels
//! before and after 6.19, for vmlinux and for a module; none may panic.

#![no_main]

use fentry::audit::{audit, module_input, AuditInput, KernelSymbol};
use fentry::kernel_rules::{denied_functions, kernel_version};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ksyms::mcount::parse(data, std::path::Path::new("fuzz.elf"));
    let btf = btf::parse_any(data, None);
    if let Ok(obj) = object::File::parse(data) {
        let _ = kernel_version(&obj);
        let _ = module_input(&obj);
        if let Ok(btf) = &btf {
            let _ = denied_functions(&obj, btf);
        }
    }
    if let Ok(btf) = btf {
        let symbols = [
            KernelSymbol { name: "f", address: 0x1000, size: 16, function: true },
            KernelSymbol { name: "f", address: 0x800, size: 0, function: false },
            KernelSymbol { name: "g.isra.0", address: 0x2000, size: 8, function: true },
            KernelSymbol { name: "h.llvm.7", address: 0x3000, size: 8, function: true },
        ];
        let sites = [0x1000, 0x2004];
        for (version, module) in [(None, false), (Some((7, 2)), false), (Some((7, 2)), true)] {
            let input = AuditInput {
                symbols: &symbols,
                module,
                fentry_sites: Some(&sites),
                model: None,
                version,
            };
            let _ = audit(&btf, &input);
        }
    }
});
