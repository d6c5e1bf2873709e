//! `btfkit resolve --elf MODULE.ko`: every section of a module starts at 0,
//! so its addresses are shown and read as `SECTION+0xOFF` (a bare hex
//! address is a `.text` offset), and each function gets the prototype of
//! the code at its own section and offset. Oracles, on Debian's 6.1
//! modules: binutils' `readelf -sW` and `-SW` (each symbol's section,
//! offset and size), binutils' `addr2line -f -j SECTION` (which DWARF
//! subprogram is there).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use testkit::Fixture;

mod common {
    pub mod addr2line;
}
use common::addr2line::addr2line;

const BTFKIT: &str = env!("CARGO_BIN_EXE_btfkit");

const MODULES: [&str; 3] = [
    "fs/configfs/configfs.ko",
    "fs/fat/fat.ko",
    "fs/isofs/isofs.ko",
];

/// A FUNC symbol as readelf lists it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ElfFunc {
    section: String,
    offset: u64,
    size: u64,
}

impl ElfFunc {
    /// The address as a user of the module knows it: a `.text` offset
    /// alone, any other section's with the section's name.
    fn text(&self) -> String {
        if self.section == ".text" {
            format!("{:#x}", self.offset)
        } else {
            format!("{}+{:#x}", self.section, self.offset)
        }
    }
}

fn readelf(args: &[&str], ko: &Path) -> String {
    let out = testkit::run_ok(Command::new("readelf").args(args).arg(ko));
    String::from_utf8(out).expect("UTF-8")
}

/// Every FUNC symbol of `ko` by name, from `readelf -sW` with the section
/// names of `readelf -SW`.
fn elf_funcs(ko: &Path) -> BTreeMap<String, BTreeSet<ElfFunc>> {
    let mut sections: BTreeMap<u32, String> = BTreeMap::new();
    for line in readelf(&["-SW"], ko).lines() {
        let Some((index, rest)) = line
            .trim_start()
            .strip_prefix('[')
            .and_then(|l| l.split_once(']'))
        else {
            continue;
        };
        let (Ok(index), Some(name)) = (index.trim().parse(), rest.split_whitespace().next()) else {
            continue;
        };
        sections.insert(index, name.to_owned());
    }
    let mut funcs: BTreeMap<String, BTreeSet<ElfFunc>> = BTreeMap::new();
    for line in readelf(&["-sW"], ko).lines() {
        // Num: Value Size Type Bind Vis Ndx Name
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 8 || f[3] != "FUNC" {
            continue;
        }
        let Ok(ndx) = f[6].parse::<u32>() else {
            continue;
        };
        let size = match f[2].strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => f[2].parse(),
        }
        .expect("size");
        funcs.entry(f[7].to_owned()).or_default().insert(ElfFunc {
            section: sections.get(&ndx).expect("section of a symbol").clone(),
            offset: u64::from_str_radix(f[1], 16).expect("value"),
            size,
        });
    }
    funcs
}

/// `btfkit resolve ARGS`.
fn run_resolve(args: &[&str]) -> std::process::Output {
    Command::new(BTFKIT)
        .arg("resolve")
        .args(args)
        .output()
        .expect("run btfkit")
}

/// `btfkit resolve --json ARGS`, which must succeed.
fn resolve(args: &[&str]) -> Vec<serde_json::Value> {
    let out = run_resolve(&[&["--json"], args].concat());
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// `SECTION+0xOFF` or a `.text` offset, as the JSON's `addr` says it.
fn place(addr: &str) -> (String, u64) {
    let (section, offset) = addr.split_once('+').unwrap_or((".text", addr));
    let offset = u64::from_str_radix(offset.trim_start_matches("0x"), 16).expect("hex");
    (section.to_owned(), offset)
}

/// The function name of a C prototype (`foo.part.0` for a clone's).
fn function_name(proto: &str) -> &str {
    let open = proto.find('(').expect("(");
    let start = proto[..open]
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .map_or(0, |i| i + 1);
    &proto[start..open]
}

/// A C prototype with its function's name as `F`.
fn unnamed(proto: &str) -> String {
    proto.replacen(&format!("{}(", function_name(proto)), "F(", 1)
}

/// Debian's debug module `rel`, copied into `fx`, and its BTF as btfkit
/// encodes it (every FUNC tagged with its address key; standalone unless
/// `encode` adds `--base VMLINUX`).
fn module(fx: &Fixture, rel: &str, encode: &[&Path]) -> Option<(PathBuf, PathBuf)> {
    let k = testkit::debian_kernel_or_skip()?;
    let src = k.dbg_modules.join("kernel").join(rel);
    if !src.is_file() {
        testkit::skip(&format!(
            "{} is not cached: run scripts/fetch-debian-kernel.sh",
            src.display()
        ));
        return None;
    }
    let ko = fx.path("m.ko");
    std::fs::copy(&src, &ko).expect("copy module");
    let btf = fx.path("m.btf");
    testkit::run_ok(
        Command::new(BTFKIT)
            .args(["encode", "--addr-tags", "all"])
            .args(encode)
            .arg("-o")
            .args([&btf, &ko]),
    );
    Some((ko, btf))
}

/// By name, every FUNC symbol of a module: its address is the section and
/// offset readelf gives it, its size readelf's, and its prototype (from
/// the DWARF at that address) is the one of the subprogram addr2line
/// finds there, named as the symbol. Then the same without DWARF: the
/// FUNC that the BTF's address tag gives each symbol is that one.
#[test]
fn debian_module_funcs_by_name_at_readelf_section_offset_with_addr2line_prototype() {
    if testkit::tool_or_skip("readelf", "binutils").is_none()
        || testkit::tool_or_skip("addr2line", "binutils").is_none()
        || testkit::tool_or_skip("objcopy", "binutils").is_none()
    {
        return;
    }
    let (mut checked, mut keyed, mut tagged) = (0, 0, 0);
    for rel in MODULES {
        let fx = Fixture::new();
        let Some((ko, btf)) = module(&fx, rel, &[]) else {
            return;
        };
        let funcs = elf_funcs(&ko);
        let (ko_s, btf_s) = (ko.to_str().expect("path"), btf.to_str().expect("path"));
        let mut args = vec!["--elf", ko_s, "--btf", btf_s];
        args.extend(funcs.keys().map(String::as_str));
        let results = resolve(&args);
        // Per symbol: where resolve puts it, and the prototype there.
        let mut got: BTreeMap<String, BTreeSet<ElfFunc>> = BTreeMap::new();
        // (symbol, place) -> (prototype, its FUNC in the encoded BTF).
        let mut protos: BTreeMap<(String, ElfFunc), (String, Option<u64>)> = BTreeMap::new();
        for r in &results {
            let name = r["symbol"].as_str().expect("symbol");
            if r["input"] != name {
                continue; // a clone of the name asked for: asked for itself too
            }
            let (section, offset) = place(r["addr"].as_str().expect("addr"));
            let f = ElfFunc {
                section,
                offset,
                size: r["size"].as_u64().expect("size"),
            };
            got.entry(name.to_owned()).or_default().insert(f.clone());
            if r["prototype_from"] == "dwarf" {
                let proto = r["prototype"].as_str().expect("prototype").to_owned();
                protos.insert((name.to_owned(), f), (proto, r["btf_id"].as_u64()));
            }
        }
        assert_eq!(got, funcs, "{rel}: resolve against readelf");
        keyed += funcs
            .values()
            .flatten()
            .filter(|f| f.section != ".text")
            .count();

        // addr2line, per section: the subprogram at each symbol.
        let mut by_section: BTreeMap<&str, Vec<&(String, ElfFunc)>> = BTreeMap::new();
        for key in protos.keys() {
            by_section
                .entry(key.1.section.as_str())
                .or_default()
                .push(key);
        }
        let mut wrong = Vec::new();
        for (section, keys) in by_section {
            let offsets: Vec<u64> = keys.iter().map(|k| k.1.offset).collect();
            let subs = addr2line(&ko, section, &offsets);
            for (key @ (name, f), sub) in keys.into_iter().zip(subs) {
                let proto = &protos[key].0;
                // The prototype is named as the symbol: a clone's base name
                // is `sub`; an alias (init_module) has the prototype of the
                // symbol named `sub` at the same place.
                let own = function_name(proto);
                let same_code = own.split('.').next() == Some(sub.as_str())
                    || (own == name
                        && protos
                            .iter()
                            .find(|((n, g), _)| *n == sub && g == f)
                            .is_some_and(|(_, (p, _))| unnamed(p) == unnamed(proto)));
                if !same_code {
                    wrong.push(format!(
                        "{rel}: {name} at {}: {proto}, addr2line: {sub}",
                        f.text()
                    ));
                }
                checked += 1;
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));

        // Without DWARF, the address tags alone link each symbol to its
        // FUNC, whose prototype is the one the DWARF at the symbol gave.
        let stripped = fx.path("stripped.ko");
        testkit::run_ok(
            Command::new("objcopy")
                .arg("--strip-debug")
                .args([&ko, &stripped]),
        );
        let mut args = vec!["--elf", stripped.to_str().expect("path"), "--btf", btf_s];
        let names: BTreeSet<&str> = protos.keys().map(|(n, _)| n.as_str()).collect();
        args.extend(names.iter().copied());
        for r in resolve(&args) {
            let name = r["symbol"].as_str().expect("symbol");
            let (section, offset) = place(r["addr"].as_str().expect("addr"));
            let f = ElfFunc {
                section,
                offset,
                size: r["size"].as_u64().expect("size"),
            };
            // Functions the encoder left out have no FUNC to find.
            let Some((want, Some(_))) = protos.get(&(name.to_owned(), f)) else {
                continue;
            };
            assert_eq!(r["prototype_from"], "btf", "{rel}: {r}");
            assert_eq!(r["prototype"].as_str(), Some(want.as_str()), "{rel}: {r}");
            tagged += 1;
        }
    }
    eprintln!("{checked} prototypes checked, {keyed} symbols outside .text, {tagged} FUNCs by tag");
    assert!(checked > 200, "{checked}");
    assert!(keyed >= 2 * MODULES.len(), "{keyed}");
    assert!(tagged > 200, "{tagged}");
}

/// By address: a hex number is a `.text` offset, `SECTION+0xOFF` an offset
/// in that section; each resolves to a symbol readelf puts there.
/// An offset beyond what a section can hold is an error.
#[test]
fn debian_module_addresses_are_text_offsets_or_section_offsets_readelf() {
    if testkit::tool_or_skip("readelf", "binutils").is_none() {
        return;
    }
    for rel in MODULES {
        let fx = Fixture::new();
        let Some((ko, btf)) = module(&fx, rel, &[]) else {
            return;
        };
        let funcs = elf_funcs(&ko);
        let mut at: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
        for (name, places) in &funcs {
            for f in places {
                at.entry(f.text()).or_default().insert(name);
            }
        }
        let (ko_s, btf_s) = (ko.to_str().expect("path"), btf.to_str().expect("path"));
        let mut args = vec!["--elf", ko_s, "--btf", btf_s];
        args.extend(at.keys().map(String::as_str));
        let results = resolve(&args);
        assert_eq!(results.len(), at.len(), "{rel}");
        for r in &results {
            let input = r["input"].as_str().expect("input");
            let names = &at[input];
            let symbol = r["symbol"].as_str().expect("symbol");
            assert!(
                names.contains(symbol),
                "{rel}: {input}: {r}, readelf: {names:?}"
            );
            assert_eq!(r["offset"], 0, "{rel}: {r}");
            assert_eq!(r["addr"], input, "{rel}: {r}");
        }
        assert!(at.keys().any(|a| a.starts_with(".init.text+")), "{rel}");
        assert!(at.keys().any(|a| a.starts_with("0x")), "{rel}");
        // An offset no section can have (it would be the next section's
        // key): an error naming the file, exit 1.
        let out = run_resolve(&["--elf", ko_s, "--btf", btf_s, ".init.text+0x100000000"]);
        assert_eq!(out.status.code(), Some(1), "{rel}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("does not fit section .init.text of {ko_s}")),
            "{text}"
        );
    }
}

/// A module's BTF as the kernel has it: split over its vmlinux's. With
/// `--base` (Debian's vmlinux, whose .BTF the module's is split over),
/// each function's FUNC, found without DWARF, has the prototype that the
/// DWARF of the code at its symbol gives (itself checked against
/// addr2line above); without it, an error that names the file and the
/// option, exit 1.
#[test]
fn debian_module_split_btf_with_base_gives_the_dwarf_prototypes() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let rel = MODULES[0];
    let fx = Fixture::new();
    let Some((ko, split)) = module(&fx, rel, &[Path::new("--base"), &k.vmlinux]) else {
        return;
    };
    let stripped = fx.path("stripped.ko");
    testkit::run_ok(
        Command::new("objcopy")
            .arg("--strip-debug")
            .args([&ko, &stripped]),
    );
    let (ko_s, stripped_s) = (ko.to_str().expect("path"), stripped.to_str().expect("path"));
    let (split_s, base_s) = (
        split.to_str().expect("path"),
        k.vmlinux.to_str().expect("path"),
    );
    let names: Vec<String> = elf_funcs(&ko).into_keys().collect();
    let mut with_dwarf = vec!["--elf", ko_s, "--btf", split_s, "--base", base_s];
    with_dwarf.extend(names.iter().map(String::as_str));
    let mut by_btf = vec!["--elf", stripped_s, "--btf", split_s, "--base", base_s];
    by_btf.extend(names.iter().map(String::as_str));
    let mut matched = 0;
    for (d, b) in resolve(&with_dwarf).iter().zip(resolve(&by_btf)) {
        assert_eq!(d["addr"], b["addr"], "{rel}: {d} {b}");
        if d["prototype_from"] != "dwarf" || b["prototype_from"] != "btf" {
            continue;
        }
        assert_eq!(d["prototype"], b["prototype"], "{rel}: {d} {b}");
        matched += 1;
    }
    eprintln!("{rel}: {matched} prototypes from split BTF equal the DWARF's");
    assert!(matched > 50, "{matched}");

    let out = run_resolve(&["--elf", stripped_s, "--btf", split_s, "init_module"]);
    assert_eq!(out.status.code(), Some(1), "{rel}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(split_s) && err.contains("--base"), "{err}");
}

/// `funcs --json` and `check --attach --json` on a module show its
/// addresses as resolve does: each instance's, each FUNC's and each addr
/// tag's `SECTION+0xOFF` (or `.text` offset) is where readelf puts a
/// function symbol of that name (a tag: of any name). With the module's
/// BTF, an instance's `btf_id` is a FUNC that bpftool names as a function
/// symbol at the instance's address (its own, or an alias's).
#[test]
fn debian_module_funcs_and_attach_json_show_section_offsets_readelf_bpftool() {
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    for rel in MODULES {
        let fx = Fixture::new();
        let Some((ko, btf)) = module(&fx, rel, &[]) else {
            return;
        };
        let elf = elf_funcs(&ko);
        let at = |name: &str, addr: &str| {
            let (section, offset) = place(addr);
            elf.get(name).is_some_and(|fs| {
                fs.iter()
                    .any(|f| f.section == section && f.offset == offset)
            })
        };
        let json = |args: &[&Path]| -> Vec<serde_json::Value> {
            let out = Command::new(BTFKIT)
                .args(args)
                .output()
                .expect("run btfkit");
            serde_json::from_slice(&out.stdout).expect("JSON")
        };
        let funcs = json(&[Path::new("funcs"), Path::new("--json"), &ko, &btf]);
        let dump = testkit::run_ok(
            Command::new(&bpftool)
                .args(["btf", "dump", "file"])
                .arg(&btf),
        );
        let func_names: BTreeMap<u64, String> = String::from_utf8_lossy(&dump)
            .lines()
            .filter_map(|l| {
                let (id, rest) = l.strip_prefix('[')?.split_once("] FUNC '")?;
                Some((id.parse().ok()?, rest.split_once('\'')?.0.to_owned()))
            })
            .collect();
        let mut with_id = 0;
        for f in &funcs {
            // The FUNC of the symbol, or of an alias at its address.
            if let Some(id) = f["btf_id"].as_u64() {
                let addr = f["address"].as_str().expect("address");
                let func = func_names.get(&id).expect("a FUNC of that id");
                assert!(at(func, addr), "{rel}: FUNC [{id}] {func} for {f}");
                with_id += 1;
            }
        }
        assert!(
            with_id * 2 > funcs.len(),
            "{rel}: {with_id} of {} rows with a FUNC",
            funcs.len()
        );
        let mut elsewhere = 0;
        for f in &funcs {
            let (symbol, addr) = (
                f["symbol"].as_str().expect("symbol"),
                f["address"].as_str().expect("address"),
            );
            assert!(at(symbol, addr), "{rel}: funcs: {symbol} at {addr}");
            elsewhere += usize::from(addr.contains('+'));
        }
        assert!(elsewhere > 0, "{rel}: no instance outside .text");
        let attach = json(&[
            Path::new("check"),
            Path::new("--attach"),
            Path::new("--json"),
            &btf,
            &ko,
        ]);
        let mut tags = 0;
        for r in &attach {
            let name = r["name"].as_str().expect("name");
            if let Some(addr) = r["address"].as_str() {
                assert!(at(name, addr), "{rel}: check --attach: {name} at {addr}");
            }
            for t in r["tags"].as_array().expect("tags") {
                let t = t.as_str().expect("tag");
                assert!(
                    elf.keys().any(|n| at(n, t)),
                    "{rel}: check --attach: {name} tag {t}"
                );
                tags += 1;
            }
        }
        assert!(tags > 0, "{rel}: no addr tags");
    }
}
