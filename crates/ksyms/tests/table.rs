//! Readers and the lookup table on crafted inputs whose answers are written
//! out by hand in each test.

use std::path::Path;

use ksyms::kallsyms::{self, Hidden};
use ksyms::{kaslr_offset, system_map, Error, SizeSource, SymbolKind, Table, TrampolineTarget};

const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000100 t __pfx_wakeup_show
ffffffff81000110 t wakeup_show
ffffffff81000200 t wakeup_show.cold
ffffffff81000240 t __pfx_wakeup_show
ffffffff81000250 t wakeup_show
ffffffff81000300 t match_id.isra.0
ffffffff81000400 D jiffies
ffffffff81000500 T _etext
ffffffffc0001000 t mod_fn\t[e1000]
ffffffffc0001080 t mod_fn2\t[e1000]
ffffffffc0002000 t bpf_prog_6deef7357e7b4530_sd_fw_egress\t[bpf]
ffffffffc0002100 t bpf_trampoline_6442491543\t[bpf]
ffffffffc0002200 t bpf_dispatcher_xdp\t[bpf]
ffffffffc0003000 t ftrace_trampoline\t[__builtin__ftrace]
ffffffffc0004000 t kprobe_insn_page\t[__builtin__kprobes]
";

fn table(text: &str) -> Table {
    let syms = kallsyms::parse(
        text.as_bytes().to_vec(),
        Path::new("test-kallsyms"),
        Hidden::Error,
    )
    .expect("parse");
    Table::new(syms)
}

#[test]
fn kallsyms_lines_give_kinds_modules_and_sizes() {
    let t = table(KALLSYMS);
    assert_eq!(t.len(), 17);
    assert_eq!(
        t.modules(),
        ["e1000", "bpf", "__builtin__ftrace", "__builtin__kprobes"]
    );

    let pfx = t.by_name("__pfx_wakeup_show").next().expect("pfx");
    assert_eq!(pfx.kind, SymbolKind::Padding);
    assert_eq!(pfx.parent(), Some("wakeup_show"));

    let cold = t.by_name("wakeup_show.cold").next().expect("cold");
    assert_eq!(cold.kind, SymbolKind::ColdFragment);
    assert_eq!(cold.parent(), Some("wakeup_show"));

    let dup: Vec<u64> = t.by_name("wakeup_show").map(|s| s.addr).collect();
    assert_eq!(dup, [0xffffffff81000110, 0xffffffff81000250]);
    // Size: up to the next symbol of the same module.
    let first = t.by_name("wakeup_show").next().expect("first");
    assert_eq!(first.size, Some(0xf0));
    assert_eq!(first.size_source, SizeSource::NextSymbol);

    let clone = t.by_name("match_id.isra.0").next().expect("clone");
    assert!(clone.is_clone());
    assert_eq!(clone.base_name(), "match_id");
    assert_eq!(
        t.by_name("jiffies").next().expect("jiffies").kind,
        SymbolKind::Data
    );

    // The last symbol of e1000 has no next symbol in e1000: unknown size,
    // although [bpf] symbols follow it in address order.
    let mod2 = t.by_name("mod_fn2").next().expect("mod_fn2");
    assert_eq!(mod2.module, Some("e1000"));
    assert!(mod2.in_module());
    assert_eq!(mod2.size, None);

    let prog = t
        .by_name("bpf_prog_6deef7357e7b4530_sd_fw_egress")
        .next()
        .expect("prog");
    assert_eq!(
        prog.kind,
        SymbolKind::BpfProgram {
            tag: 0x6deef7357e7b4530
        }
    );
    assert_eq!(prog.bpf_prog_name(), Some("sd_fw_egress"));
    assert!(!prog.in_module());

    // 6442491543 = 1 << 32 | 0x80000000 | 40599: vmlinux (obj id 1), type 40599.
    let tramp = t
        .by_name("bpf_trampoline_6442491543")
        .next()
        .expect("trampoline");
    assert_eq!(
        tramp.kind,
        SymbolKind::BpfTrampoline(TrampolineTarget::Kernel {
            btf_obj_id: 1,
            btf_id: 40599
        })
    );
    assert_eq!(
        TrampolineTarget::from_key((7 << 32) | 12),
        TrampolineTarget::Program {
            prog_id: 7,
            btf_id: 12
        }
    );
    let kind = |n| t.by_name(n).next().expect(n).kind;
    assert_eq!(kind("bpf_dispatcher_xdp"), SymbolKind::BpfDispatcher);
    assert_eq!(kind("ftrace_trampoline"), SymbolKind::Ftrace);
    assert_eq!(kind("kprobe_insn_page"), SymbolKind::Kprobe);
}

#[test]
fn lookup_finds_symbol_and_offset() {
    let t = table(KALLSYMS);
    let hit = t.lookup(0xffffffff81000123).expect("hit");
    assert_eq!((hit.symbol.name, hit.offset), ("wakeup_show", 0x13));
    // Aliases at one address: the first of equal preference, in file order.
    let hit = t.lookup(0xffffffff81000004).expect("stext");
    assert_eq!(hit.symbol.name, "_stext");
    assert_eq!(t.at_address(0xffffffff81000000).count(), 2);
    let hit = t.lookup(0xffffffff81000104).expect("pfx");
    assert_eq!(hit.symbol.kind, SymbolKind::Padding);
    let hit = t.lookup(0xffffffffc0002010).expect("bpf");
    assert_eq!((hit.symbol.module, hit.offset), (Some("bpf"), 0x10));
    assert!(t.lookup(0x1000).is_none());
}

#[test]
fn instances_fold_clones_and_fragments() {
    let t = table(KALLSYMS);
    let names: Vec<&str> = t.instances("wakeup_show").map(|s| s.name).collect();
    assert_eq!(names, ["wakeup_show", "wakeup_show.cold", "wakeup_show"]);
    let names: Vec<&str> = t.instances("match_id").map(|s| s.name).collect();
    assert_eq!(names, ["match_id.isra.0"]);
    assert_eq!(t.instances("no_such_function").count(), 0);
}

#[test]
fn zeroed_addresses_give_an_error_that_explains_why() {
    let zeroed: String = KALLSYMS
        .lines()
        .map(|l| format!("0000000000000000{}\n", &l[16..]))
        .collect();
    let err = kallsyms::parse(
        zeroed.clone().into_bytes(),
        Path::new("zeroed"),
        Hidden::Error,
    )
    .expect_err("must fail");
    assert!(
        matches!(err, Error::AddressesHidden { count: 17, .. }),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with("zeroed: all 17 addresses read as zero"),
        "{msg}"
    );
    assert!(
        msg.contains("kptr_restrict") && msg.contains("perf_event_paranoid"),
        "{msg}"
    );

    let syms =
        kallsyms::parse(zeroed.into_bytes(), Path::new("zeroed"), Hidden::Allow).expect("allowed");
    assert!(syms.addresses_hidden());
    let t = Table::new(syms);
    assert!(t.lookup(0).is_none());
    assert_eq!(t.by_name("wakeup_show").count(), 2);
}

#[test]
fn bad_lines_name_file_and_line() {
    let cases: [(&[u8], usize, &str); 6] = [
        (
            b"ffffffff81000000 T a\nzzzz T b\n",
            2,
            "hexadecimal address",
        ),
        (
            b"ffffffff81000000 T a\nffffffff81000000 T\n",
            2,
            "after the type letter",
        ),
        (
            b"ffffffff81000000 T a\tmodule\n",
            1,
            "after the symbol name",
        ),
        (b"ffffffff81000000 T a\t[m\n", 1, "module name"),
        (b"11112222333344445 T a\n", 1, "hexadecimal address"),
        (b"ffffffff81000000 T a\n\xff\n", 2, "UTF-8"),
    ];
    for (text, line, what) in cases {
        let shown = String::from_utf8_lossy(text);
        let err =
            kallsyms::parse(text.to_vec(), Path::new("bad"), Hidden::Error).expect_err(&shown);
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("bad:{line}: ")),
            "{shown:?}: {msg}"
        );
        assert!(msg.contains(what), "{shown:?}: {msg}");
    }
}

#[test]
fn system_map_has_no_modules_and_gives_kaslr_offset() {
    let map = "\
0000000000000000 D __per_cpu_start
ffffffff81000000 T _text
ffffffff81000000 T _stext
ffffffff81000110 t wakeup_show
";
    let err = system_map::parse(
        b"ffffffff81000000 T _text\tx\n".to_vec(),
        Path::new("System.map"),
    )
    .expect_err("no modules in System.map");
    assert!(err.to_string().starts_with("System.map:1:"), "{err}");

    let linked = system_map::parse(map.as_bytes().to_vec(), Path::new("m")).expect("map");
    let live = kallsyms::parse(KALLSYMS.into(), Path::new("k"), Hidden::Error).expect("parse");
    assert_eq!(kaslr_offset(&linked, &live).expect("offset"), 0);

    let shifted = "ffffffff9e200000 T _stext\nffffffff9e200110 t wakeup_show\n";
    let live = kallsyms::parse(shifted.into(), Path::new("k"), Hidden::Error).expect("parse");
    let offset = kaslr_offset(&linked, &live).expect("offset");
    assert_eq!(offset, 0x1d200000);
    let mut moved = system_map::parse(map.as_bytes().to_vec(), Path::new("m")).expect("map");
    moved.relocate(offset);
    let moved = Table::new(moved);
    assert_eq!(
        moved.lookup(0xffffffff9e200114).expect("hit").symbol.name,
        "wakeup_show"
    );
}
