//! `--funcs exact` emission: FUNCs per distinct prototype, addr tags, the
//! naming rule (the lowest-address instance of a name keeps it, the others
//! are `<symbol>..<hex address>`), and what each tag mode costs. Oracles:
//! `nm` and System.map for addresses (the kernel attaches a name at its
//! lowest address), btf's validator for the format.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use btf::addr_tag;
use btf::{Btf, TypeData};
use dwarf2btf::funcs::{FuncModel, Status};
use dwarf2btf::load::ElfFile;
use dwarf2btf::{AddrTags, EncodeOptions, NoProgress};
use fentry::verify;

fn encode(path: &Path, tags: AddrTags) -> Btf {
    let elf = ElfFile::open(path).expect("open");
    let opts = EncodeOptions {
        addr_tags: tags,
        ..EncodeOptions::default()
    };
    dwarf2btf::encode(&elf, None, &opts, &NoProgress)
        .expect("encode")
        .btf
}

/// FUNC name -> [(prototype in C, sorted addr tags)].
fn funcs(btf: &Btf) -> BTreeMap<String, Vec<(String, Vec<u64>)>> {
    let mut tags: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for (_, t) in btf.iter() {
        if let TypeData::DeclTag {
            ty,
            component_idx: -1,
        } = t.data
        {
            let name = btf.name_of(t).expect("tag name");
            if addr_tag::has_prefix(name.as_bytes()) {
                tags.entry(ty)
                    .or_default()
                    .push(addr_tag::parse(name).expect("addr=0x<hex>"));
            }
        }
    }
    let mut out: BTreeMap<String, Vec<(String, Vec<u64>)>> = BTreeMap::new();
    for (id, t) in btf.iter() {
        if let TypeData::Func { .. } = t.data {
            let mut a = tags.remove(&id).unwrap_or_default();
            a.sort_unstable();
            out.entry(btf.name_of(t).expect("name").to_owned())
                .or_default()
                .push((btf::cdecl::func_prototype(btf, id), a));
        }
    }
    out
}

/// The FUNCs of every instance of symbol `name`: the one named `name` and
/// those named `name..<hex>`, each with its prototype and tags.
fn instances<'a>(
    f: &'a BTreeMap<String, Vec<(String, Vec<u64>)>>,
    name: &str,
) -> Vec<(&'a str, &'a (String, Vec<u64>))> {
    f.iter()
        .filter(|(n, _)| {
            n.as_str() == name
                || n.strip_prefix(name)
                    .and_then(|r| r.strip_prefix(".."))
                    .is_some_and(|h| u64::from_str_radix(h, 16).is_ok())
        })
        .flat_map(|(n, v)| v.iter().map(move |x| (n.as_str(), x)))
        .collect()
}

/// libbpf (through bpftool) parses the blob: ids, strings and kinds are sane.
fn bpftool_accepts(btf: &Btf) {
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("out.btf");
    std::fs::write(&p, btf.to_bytes()).expect("write");
    testkit::run_ok(Command::new(bpftool).args(["btf", "dump", "file"]).arg(&p));
}

fn tag_bytes(btf: &Btf) -> usize {
    let mut n = 0;
    for (_, t) in btf.iter() {
        if let TypeData::DeclTag { .. } = t.data {
            let name = btf.name_of(t).expect("tag name");
            if addr_tag::has_prefix(name.as_bytes()) {
                n += t.encoded_len() + name.len() + 1;
            }
        }
    }
    n
}

#[test]
fn funcs_emit_fixture_two_prototypes_tagged_nm() {
    let Some((_fx, exe)) = testkit::funcs_fixture::build_fixture() else {
        return;
    };
    let btf = encode(&exe, AddrTags::Ambiguous);
    let f = funcs(&btf);
    let wake = instances(&f, "wakeup_show");
    assert_eq!(wake.len(), 2, "{wake:?}");
    let mut tagged: Vec<u64> = wake.iter().flat_map(|(_, (_, a))| a.clone()).collect();
    tagged.sort_unstable();
    let addrs = testkit::funcs_fixture::nm(&exe, "wakeup_show");
    assert_eq!(tagged, addrs);
    assert!(wake.iter().all(|(_, (_, a))| a.len() == 1));
    // The lowest address keeps the name; the other is named by its address.
    assert_eq!(f["wakeup_show"][0].1, vec![addrs[0]]);
    assert_eq!(
        f[&format!("wakeup_show..{:x}", addrs[1])][0].1,
        vec![addrs[1]]
    );
    // Built twice against different headers: two FUNCs, each with its address.
    let fill = instances(&f, "fill_thread_core_info");
    assert!(
        fill.is_empty() || fill.iter().all(|(_, (_, a))| a.len() == 1),
        "{fill:?}"
    );
    // The true signature under the symbol-table name.
    let cp = &f["cp_fn.constprop.0"];
    assert_eq!(cp.len(), 1);
    assert!(
        cp[0].0.contains("cp_fn.constprop.0(long int v)") || cp[0].0.contains("(long v)"),
        "{:?}",
        cp[0]
    );
    // A name that picks out one symbol needs no tag in `ambiguous` mode...
    assert_eq!(f["a_entry"], vec![(f["a_entry"][0].0.clone(), vec![])]);
    // ...and has one in `all` mode.
    let all = funcs(&encode(&exe, AddrTags::All));
    assert_eq!(
        all["a_entry"][0].1,
        testkit::funcs_fixture::nm(&exe, "a_entry")
    );
    let model = FuncModel::from_elf(&ElfFile::open(&exe).expect("open")).expect("model");
    let all_btf = encode(&exe, AddrTags::All);
    assert_eq!(verify::verify(&model, &all_btf).len(), 0);
    // Swap the two wakeup_show tags: both must be reported.
    let mut bad = all_btf.clone();
    let wake: Vec<u32> = verify::addr_tags(&bad)
        .into_iter()
        .filter(|t| t.name.starts_with("wakeup_show"))
        .map(|t| t.func)
        .collect();
    assert_eq!(wake.len(), 2);
    let tag_ids: Vec<u32> = bad
        .iter()
        .filter(|(_, t)| matches!(t.data, TypeData::DeclTag { ty, .. } if wake.contains(&ty)))
        .map(|(id, _)| id)
        .collect();
    for (id, to) in tag_ids.iter().zip(wake.iter().rev()) {
        if let Some(TypeData::DeclTag { ty, .. }) = bad.type_by_id_mut(*id).map(|t| &mut t.data) {
            *ty = *to;
        }
    }
    let v = verify::verify(&model, &bad);
    assert_eq!(v.len(), 2, "{v:?}");
    let none = funcs(&encode(&exe, AddrTags::None));
    assert!(none.values().flatten().all(|(_, a)| a.is_empty()));
    bpftool_accepts(&btf);
}

/// A clone whose result no caller uses returns nothing: GCC's IPA-SRA
/// removed the value of `ret_drop.isra.0` (a.c) while its DWARF keeps the
/// source's `long`. The FUNC says void, so that no fexit program reads rax
/// as its result. Oracle: objdump, in which the clone's code reaches its
/// `ret` without writing rax.
#[test]
fn funcs_emit_fixture_isra_without_its_return_value_is_void_objdump() {
    let Some((_fx, exe)) = testkit::funcs_fixture::build_fixture() else {
        return;
    };
    let name = "ret_drop.isra.0";
    let code = testkit::objdump::code_to_first_ret(&exe, name);
    assert!(
        !code.iter().any(|i| testkit::objdump::writes_rax(i)),
        "{name} writes rax before its ret: {code:?}"
    );
    let model = FuncModel::from_elf(&ElfFile::open(&exe).expect("open")).expect("model");
    let inst = model
        .instances
        .iter()
        .find(|i| i.symbol == name)
        .expect("an instance");
    let concrete = model.concrete(inst).expect("its DWARF");
    assert_eq!(
        concrete.ret.c, "long int",
        "the DWARF keeps the source's type"
    );
    assert_eq!(inst.status, Status::ChangedAbi);
    assert!(
        inst.detail
            .as_deref()
            .is_some_and(|d| d.contains("IPA-SRA")),
        "{:?}",
        inst.detail
    );
    let f = funcs(&encode(&exe, AddrTags::Ambiguous));
    assert_eq!(
        f[name][0].0,
        format!("void {name}(long int a, long int b)"),
        "{:?}",
        f[name]
    );
    // IPA-CP alone keeps the value.
    assert!(f["cp_fn.constprop.0"][0].0.starts_with("long int "));
}

/// A split part whose value its parent returns by jumping to it keeps its
/// return type: `part_kept` (c.c) returns `long` and jumps to
/// `part_kept.part.0`, so the part's rax is its result. Without a caller
/// that uses the value a clone stays void: `part_fn.part.0`, whose calls
/// sit in its header inlined into `pcall1`..`pcall3`, which do not read rax
/// right after them, and `ret_drop.isra.0`, which a void function jumps to
/// (`ret_caller1`). Oracle: objdump (the jumps and calls, and the part
/// writing rax before its `ret`).
#[test]
fn funcs_emit_fixture_part_tail_called_for_its_value_keeps_it_objdump() {
    // DWARF 5 call sites, and DWARF 4's GNU ones.
    for debug in ["-g", "-gdwarf-4"] {
        let Some((_fx, exe)) = testkit::funcs_fixture::build_fixture_with(debug) else {
            return;
        };
        part_tail_called_for_its_value_keeps_it(&exe);
    }
}

fn part_tail_called_for_its_value_keeps_it(exe: &std::path::Path) {
    let branches = |caller: &str, insn: &str, callee: &str| {
        let out = testkit::run_ok(
            std::process::Command::new("objdump")
                .args([
                    "-d",
                    "--no-show-raw-insn",
                    &format!("--disassemble={caller}"),
                ])
                .arg(exe),
        );
        String::from_utf8_lossy(&out)
            .lines()
            .any(|l| l.contains(&format!("\t{insn} ")) && l.ends_with(&format!("<{callee}>")))
    };
    let name = "part_kept.part.0";
    assert!(branches("part_kept", "jmp", name), "no tail jump to {name}");
    assert!(branches("ret_caller1", "jmp", "ret_drop.isra.0"));
    for caller in ["pcall1", "pcall2", "pcall3"] {
        assert!(branches(caller, "call", "part_fn.part.0"), "{caller}");
    }
    let code = testkit::objdump::code_to_first_ret(exe, name);
    assert!(
        code.iter().any(|i| testkit::objdump::writes_rax(i)),
        "{name} does not write rax before its ret: {code:?}"
    );
    let model = FuncModel::from_elf(&ElfFile::open(exe).expect("open")).expect("model");
    let status = |symbol: &str| {
        let i = model.instances.iter().find(|i| i.symbol == symbol);
        i.map(|i| (i.status, i.detail.clone()))
            .expect("an instance")
    };
    assert_eq!(status(name), (Status::Consistent, None));
    assert_eq!(status("part_fn.part.0").0, Status::ChangedAbi);
    let f = funcs(&encode(exe, AddrTags::Ambiguous));
    assert_eq!(
        f[name][0].0,
        format!("long int {name}(struct tty *tty, int sig)")
    );
    assert!(f["part_fn.part.0"][0].0.starts_with("void "));
    assert!(f["ret_drop.isra.0"][0].0.starts_with("void "));
}

#[test]
fn funcs_emit_debian_seed_examples_system_map() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let map = std::fs::read_to_string(&k.system_map).expect("System.map");
    let addrs = |name: &str| testkit::funcs_fixture::addresses_of(&map, name);
    let mut sizes = Vec::new();
    for mode in [AddrTags::None, AddrTags::Ambiguous, AddrTags::All] {
        let btf = encode(&k.vmlinux, mode);
        sizes.push((mode, tag_bytes(&btf), btf.to_bytes().len()));
        if mode == AddrTags::All {
            all_tags_cover_system_map(&k.vmlinux, &map, &btf);
        }
        if mode != AddrTags::Ambiguous {
            continue;
        }
        let f = funcs(&btf);
        // kernel/irq/irqdesc.c's has the lower address: it keeps the name.
        let wake = &f["wakeup_show"];
        assert_eq!(wake.len(), 1);
        assert!(wake[0].0.contains("struct kobject *"), "{wake:?}");
        assert_eq!(wake[0].1, vec![0xffffffff81111e90]);
        assert_eq!(addrs("wakeup_show")[0], 0xffffffff81111e90);
        let other = &f["wakeup_show..ffffffff8170ac00"];
        assert!(other[0].0.contains("struct device *"), "{other:?}");
        assert_eq!(
            other[0].1,
            vec![0xffffffff8170ac00],
            "drivers/base/power/sysfs.c"
        );
        // One prototype for both instances: one FUNC, under the name.
        let detach = &f["bpf_iter_detach_map"];
        assert_eq!(detach.len(), 1);
        assert_eq!(detach[0].1, addrs("bpf_iter_detach_map"));
        for name in [
            "cpumask_weight",
            "cpumask_weight.constprop.0",
            "find_next_bit.constprop.0",
        ] {
            let all = addrs(name);
            let mut v: Vec<u64> = instances(&f, name)
                .iter()
                .flat_map(|(_, (_, a))| a.clone())
                .collect();
            v.sort_unstable();
            assert_eq!(v, all, "{name}");
            // The FUNC under the exact name describes the lowest address.
            assert!(f[name].iter().any(|(_, a)| a.contains(&all[0])), "{name}");
            for (n, (_, a)) in instances(&f, name) {
                if n != name {
                    assert_eq!(n, format!("{name}..{:x}", a[0]));
                    assert!(!a.contains(&all[0]));
                }
            }
        }
        assert!(f.contains_key("map_create"));
        bpftool_accepts(&btf);
    }
    eprintln!("(mode, addr tag bytes, BTF bytes): {sizes:?}");
}

/// With `--addr-tags all`, at least 99% of System.map's function addresses
/// that have a concrete DWARF definition carry a tag, every tag verifies,
/// and each untagged address is listed with its reason.
fn all_tags_cover_system_map(vmlinux: &Path, map: &str, btf: &Btf) {
    let model = FuncModel::from_elf(&ElfFile::open(vmlinux).expect("open")).expect("model");
    let violations = verify::verify(&model, btf);
    for v in &violations {
        eprintln!("violation: {:#x} {}: {}", v.address, v.name, v.problem);
    }
    assert_eq!(violations.len(), 0);
    let tagged: std::collections::HashSet<u64> = verify::addr_tags(btf)
        .into_iter()
        .map(|t| t.address)
        .collect();
    let funcs: std::collections::HashSet<u64> = map
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (a, kind) = (f.next()?, f.next()?);
            matches!(kind, "t" | "T" | "W").then(|| u64::from_str_radix(a, 16).ok())?
        })
        .collect();
    let mut with_dwarf = std::collections::BTreeMap::new();
    for i in &model.instances {
        if funcs.contains(&i.address) && i.concrete.is_some() && i.status != Status::Fragment {
            with_dwarf.entry(i.address).or_insert(i);
        }
    }
    let untagged: Vec<_> = with_dwarf
        .iter()
        .filter(|(a, _)| !tagged.contains(a))
        .collect();
    for (a, i) in &untagged {
        eprintln!(
            "untagged {a:#x} {} {}: {}",
            i.symbol,
            i.status.as_str(),
            i.detail.as_deref().unwrap_or("")
        );
    }
    let ratio = 1.0 - untagged.len() as f64 / with_dwarf.len() as f64;
    eprintln!(
        "{} of {} System.map function addresses with DWARF tagged ({:.3}%), {} tags verified",
        with_dwarf.len() - untagged.len(),
        with_dwarf.len(),
        ratio * 100.0,
        tagged.len()
    );
    assert!(ratio >= 0.99);
}
