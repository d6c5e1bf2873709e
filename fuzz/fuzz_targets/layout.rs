//! pahole's layout view on arbitrary bytes: taken as BTF (every struct,
//! --sizes, --holes, -E --hex -a -y, each type by id, --contains) and, for ELF input, as DWARF (every struct and a -C
//! lookup). It may refuse the input; it may not panic or recurse without end.

#![no_main]

use std::path::Path;

use layout::{Filter, Layout, Seen, View};
use dwarf2btf::load::ElfFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.starts_with(b"\x7fELF") {
        let Ok(elf) = ElfFile::from_bytes(Path::new("fuzz.o"), data) else {
            return;
        };
        let _ = layout::dwarf::print_elf(&elf, &[], Filter::default(), 64);
        let names = ["s".to_owned(), "list".to_owned()];
        let _ = layout::dwarf::print_elf(&elf, &names, Filter::default(), 64);
        return;
    }
    let Ok(btf) = btf::Btf::parse(data) else {
        return;
    };
    let expanded = Filter {
        anon_include: true,
        prefix: Some("s"),
        view: View {
            hex: true,
            expand_types: true,
        },
        ..Filter::default()
    };
    for filter in [
        Filter::default(),
        Filter {
            sizes: true,
            min_holes: 1,
            ..Filter::default()
        },
        expanded,
    ] {
        let mut layout = Layout::from_btf(&btf, 64);
        let mut out = String::new();
        layout.print_all(filter, &mut Seen::default(), &mut out);
    }
    for filter in [
        Filter::default(),
        expanded,
        Filter {
            contains: true,
            ..Filter::default()
        },
    ] {
        let mut layout = Layout::from_btf(&btf, 64);
        let mut out = String::new();
        let mut seen = Seen::default();
        for id in 1..layout.type_count() {
            layout.print_named(id, filter, &mut seen, &mut out);
            out.clear();
        }
    }
});
