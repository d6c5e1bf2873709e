//! The fentry audit (funcs/attach.rs) and the FUNC policy it checks.
//! Oracles: `nm` and System.map for where the kernel attaches a name (its
//! lowest address, kernel/kallsyms.c), the DWARF of the same binary for the
//! prototype of the code there, and mutations that recreate the unsafe
//! naming the encoder used before (every instance under its symbol name).

use std::path::Path;

use btf::{Btf, TypeData, TypeId};
use dwarf2btf::funcs::FuncModel;
use dwarf2btf::load::ElfFile;
use dwarf2btf::{encode, AddrTags, EncodeOptions, FuncMode, NoProgress};
use fentry::audit::{audit, counts, AuditInput, FuncReach, KernelSymbol, Reach};
use ksyms::kernel_lookup::parse_unreachable_name;

fn encode_mode(path: &Path, funcs: FuncMode) -> Btf {
    let elf = ElfFile::open(path).expect("open");
    let opts = EncodeOptions {
        funcs,
        addr_tags: AddrTags::Ambiguous,
        ..EncodeOptions::default()
    };
    encode(&elf, None, &opts, &NoProgress).expect("encode").btf
}

/// `nm` / System.map lines: (address, type letter, name).
fn parse_nm(text: &str) -> Vec<(u64, char, String)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let a = u64::from_str_radix(f.next()?, 16).ok()?;
            let t = f.next()?.chars().next()?;
            Some((a, t, f.next()?.to_owned()))
        })
        .collect()
}

fn kernel_symbols(syms: &[(u64, char, String)]) -> Vec<KernelSymbol<'_>> {
    syms.iter()
        .map(|(a, t, n)| KernelSymbol {
            name: n,
            address: *a,
            size: 0,
            function: matches!(t, 't' | 'T' | 'w' | 'W'),
        })
        .collect()
}

/// The lowest address of a name, as the kernel's lookup returns it.
fn lowest(syms: &[(u64, char, String)], name: &str) -> Option<u64> {
    syms.iter().filter(|s| s.2 == name).map(|s| s.0).min()
}

fn run(btf: &Btf, syms: &[KernelSymbol<'_>], model: Option<&FuncModel>) -> Vec<FuncReach> {
    audit(
        btf,
        &AuditInput {
            symbols: syms,
            module: false,
            fentry_sites: None,
            model,
            version: None,
        },
    )
}

/// Renames every `<symbol>..<address>` FUNC back to `<symbol>`, as the
/// encoder named them before the policy: returns the renamed ids.
fn rename_back(btf: &mut Btf) -> Vec<TypeId> {
    let targets: Vec<(TypeId, String)> = btf
        .iter()
        .filter(|(_, t)| matches!(t.data, TypeData::Func { .. }))
        .filter_map(|(id, t)| {
            let (sym, _) = parse_unreachable_name(btf.name_of(t).ok()?)?;
            Some((id, sym.to_owned()))
        })
        .collect();
    for (id, sym) in &targets {
        let off = btf.add_str(sym);
        if let Some(t) = btf.type_by_id_mut(*id) {
            t.name_off = off;
        }
    }
    targets.into_iter().map(|(id, _)| id).collect()
}

/// Every FUNC not attachable says why; every `..` name is unreachable and
/// names an address its symbol does not resolve to, and carries that tag.
fn check_reasons(rows: &[FuncReach], syms: &[(u64, char, String)]) {
    for r in rows.iter().filter(|r| r.reach != Reach::Attachable) {
        assert!(!r.reason.is_empty(), "{r:?}");
    }
    for r in rows {
        if let Some((sym, a)) = parse_unreachable_name(&r.name) {
            assert_eq!(r.reach, Reach::NotASymbol, "{r:?}");
            assert_eq!(r.tags, vec![a], "{r:?}");
            assert_ne!(lowest(syms, sym), Some(a), "{r:?}");
        }
    }
}

#[test]
fn funcs_attach_fixture_lowest_address_nm() {
    let Some((_fx, exe)) = testkit::funcs_fixture::build_fixture() else {
        return;
    };
    let nm = testkit::run_ok(std::process::Command::new("nm").arg(&exe));
    let syms = parse_nm(&String::from_utf8_lossy(&nm));
    let ks = kernel_symbols(&syms);
    let model = FuncModel::from_elf(&ElfFile::open(&exe).expect("open")).expect("model");
    for mode in [FuncMode::Exact, FuncMode::Pahole] {
        let btf = encode_mode(&exe, mode);
        let rows = run(&btf, &ks, Some(&model));
        check_reasons(&rows, &syms);
        let c = counts(&rows);
        assert_eq!(c.get(&Reach::Unsafe), None, "{mode:?}: {rows:#?}");
        let wake = rows.iter().find(|r| r.name == "wakeup_show").expect("FUNC");
        assert_eq!(wake.reach, Reach::Attachable, "{wake:?}");
        assert_eq!(
            wake.address,
            testkit::funcs_fixture::nm(&exe, "wakeup_show")
                .first()
                .copied()
        );
    }
    // The old naming: both wakeup_show FUNCs under the name. The audit
    // finds the one that is not the lowest address's, by its tag alone
    // and by DWARF alone.
    let mut old = encode_mode(&exe, FuncMode::Exact);
    let renamed = rename_back(&mut old);
    assert!(!renamed.is_empty());
    for model in [None, Some(&model)] {
        let rows = run(&old, &ks, model);
        let unsafe_ids: Vec<TypeId> = rows
            .iter()
            .filter(|r| r.reach == Reach::Unsafe)
            .map(|r| r.btf_id)
            .collect();
        assert_eq!(unsafe_ids, renamed, "{rows:#?}");
    }
}

#[test]
fn funcs_attach_debian_policies_and_debian_btf_system_map_dwarf() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let map = std::fs::read_to_string(&k.system_map).expect("System.map");
    let syms = parse_nm(&map);
    let ks = kernel_symbols(&syms);
    let model = FuncModel::from_elf(&ElfFile::open(&k.vmlinux).expect("open")).expect("model");

    let exact = encode_mode(&k.vmlinux, FuncMode::Exact);
    let rows = run(&exact, &ks, Some(&model));
    check_reasons(&rows, &syms);
    let c = counts(&rows);
    eprintln!("exact: {c:?}");
    assert_eq!(c.get(&Reach::Unsafe), None);
    assert_eq!(c.get(&Reach::Unverified), None);
    let unreachable = rows
        .iter()
        .filter(|r| parse_unreachable_name(&r.name).is_some())
        .count();
    // Every FUNC that no lookup resolves is one named by its address: a
    // consistent clone is under its symbol-table name now.
    assert_eq!(c.get(&Reach::NotASymbol).copied().unwrap_or(0), unreachable);
    assert!(c.get(&Reach::Attachable).copied().unwrap_or(0) > 35_000);
    for name in ["wakeup_show", "bpf_iter_detach_map", "cpumask_weight"] {
        let r = rows.iter().find(|r| r.name == name).expect(name);
        assert_eq!(r.reach, Reach::Attachable, "{r:?}");
        assert_eq!(r.address, lowest(&syms, name), "{name}");
    }

    // What the encoder wrote before: the audit flags every FUNC it renamed.
    let mut old = exact.clone();
    let renamed = rename_back(&mut old);
    let rows = run(&old, &ks, Some(&model));
    let flagged: Vec<TypeId> = rows
        .iter()
        .filter(|r| r.reach == Reach::Unsafe)
        .map(|r| r.btf_id)
        .collect();
    eprintln!("old naming: {} unsafe", flagged.len());
    // Every FUNC it renamed, but those of init code: freed after boot, the
    // kernel attaches none of it, whatever the prototype (no fentry site).
    let (kept, init): (Vec<TypeId>, Vec<TypeId>) =
        renamed.iter().partition(|id| flagged.contains(id));
    assert_eq!(flagged, kept);
    for id in init {
        let r = rows.iter().find(|r| r.btf_id == id).expect("row");
        assert_eq!(r.reach, Reach::NoFentrySite, "{r:?}");
    }

    let pahole = encode_mode(&k.vmlinux, FuncMode::Pahole);
    let rows = run(&pahole, &ks, Some(&model));
    check_reasons(&rows, &syms);
    let c = counts(&rows);
    eprintln!("pahole: {c:?}");
    assert_eq!(c.get(&Reach::Unsafe), None);
    assert_eq!(c.get(&Reach::Unverified), None);
    assert_eq!(c.get(&Reach::NotASymbol), None);

    // Debian's own BTF (pahole's): its wakeup_show is drivers/base/power's
    // (struct device *), while the kernel attaches the name at
    // kernel/irq/irqdesc.c's lower address (struct kobject *).
    let debian = btf::load_file(&k.vmlinux, None).expect("Debian .BTF");
    let rows = run(&debian, &ks, Some(&model));
    eprintln!("Debian's BTF: {:?}", counts(&rows));
    let wake = rows.iter().find(|r| r.name == "wakeup_show").expect("FUNC");
    assert_eq!(wake.reach, Reach::Unsafe, "{wake:?}");
    assert_eq!(wake.address, Some(0xffffffff81111e90));
}
