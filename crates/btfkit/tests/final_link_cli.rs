//! Addresses in the BTF of a kernel build: btfkit runs as the kernel's
//! pahole on a pre-link image, and the final link then inserts `.BTF`
//! before the init code, moving it. Made here with a miniature of the
//! kernel's flow: C objects with a static function of one name in `.text`
//! and in `.init.text`, a linker script that reserves `.BTF` in the
//! read-only data (`__start_BTF`/`__stop_BTF`) and places `.init.text`
//! after it; the BTF step on the pre-link image (6.1's
//! scripts/link-vmlinux.sh: `pahole -J` in place, then `objcopy` of its
//! `.BTF` into an object; 7.x's scripts/gen-btf.sh: `pahole -J
//! --btf_encode_detached` leaving the image as it is, the file added to an
//! empty object); the final link with that object.
//! Oracles: `nm` of the final link (the addresses the kernel's kallsyms
//! would hold) and bpftool's reading of the BTF.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use testkit::{run_ok, Fixture};

const BTFKIT: &str = env!("CARGO_BIN_EXE_btfkit");

/// `.text`: `helper` (the kernel's pick for that name) and the entry.
const TEXT_C: &str = r#"
int counter = 1;
int setup(void);
const char banner[] = "fixture";
static __attribute__((noipa)) int helper(int x) { return x * 3 + counter; }
const char *get_banner(void) { return banner; }
int start_kernel(void) { return helper(counter) + setup(); }
"#;

/// `.init.text`: another `helper` and one of two `twice`s.
const INIT_C: &str = r#"
#define __init __attribute__((section(".init.text"), noipa))
extern int counter;
int setup2(void);
static __init long helper(long a, const char *s) { return a + s[0] + counter; }
static __init int twice(long v, int w) { return v * w + counter; }
int __init setup(void) { return helper(2, "x") + twice(3, counter) + setup2(); }
"#;

/// `.init.text`: the other `twice`.
const INIT2_C: &str = r#"
#define __init __attribute__((section(".init.text"), noipa))
extern int counter;
static __init int twice(int v) { return v + counter; }
int __init setup2(void) { return twice(counter); }
"#;

/// The layout of include/asm-generic/vmlinux.lds.h in small: `.BTF` in
/// the read-only data, init text after the data.
const LDS: &str = r#"
ENTRY(start_kernel)
SECTIONS {
  . = 0x1000000;
  .text : { *(.text .text.*) }
  . = ALIGN(0x1000);
  .rodata : { *(.rodata .rodata.*) }
  .BTF : { __start_BTF = .; KEEP(*(.BTF)) __stop_BTF = .; }
  . = ALIGN(64);
  .data : { *(.data .data.*) }
  .init.text : { *(.init.text) }
  .bss : { *(.bss .bss.*) }
}
"#;

/// The build so far: objects linked once (the pre-link image, without
/// BTF), and the tools.
struct Build {
    fx: Fixture,
    objects: Vec<PathBuf>,
    ld: PathBuf,
    objcopy: PathBuf,
    nm: PathBuf,
    bpftool: PathBuf,
}

fn build_or_skip() -> Option<Build> {
    let ld = testkit::tool_or_skip("ld", "binutils")?;
    let objcopy = testkit::tool_or_skip("objcopy", "binutils")?;
    let nm = testkit::tool_or_skip("nm", "binutils")?;
    let bpftool = testkit::tool_or_skip("bpftool", "bpftool")?;
    let fx = Fixture::new();
    fx.write("kernel.lds", LDS);
    let mut objects = Vec::new();
    for (name, src) in [("text", TEXT_C), ("init", INIT_C), ("init2", INIT2_C)] {
        fx.write(&format!("{name}.c"), src);
        objects.push(fx.cc(
            &format!("{name}.o"),
            &[&format!("{name}.c")],
            &[
                "-c",
                "-g",
                "-O2",
                "-fno-pie",
                "-fno-asynchronous-unwind-tables",
                "-fno-stack-protector",
                "-fcf-protection=none",
            ],
        ));
    }
    Some(Build {
        fx,
        objects,
        ld,
        objcopy,
        nm,
        bpftool,
    })
}

impl Build {
    /// Links the objects (and `extra`) with the kernel's linker script.
    fn link(&self, out: &str, extra: Option<&Path>) -> PathBuf {
        let o = self.fx.path(out);
        run_ok(
            Command::new(&self.ld)
                .args(["-static", "-nostdlib", "-T"])
                .arg(self.fx.path("kernel.lds"))
                .arg("-o")
                .arg(&o)
                .args(&self.objects)
                .args(extra),
        );
        o
    }

    /// The kernel's BTF step: btfkit as `pahole -J` with 6.1's flags,
    /// in place.
    fn pahole_j(&self, image: &Path) {
        let pahole = self.fx.path("pahole");
        if !pahole.exists() {
            std::os::unix::fs::symlink(BTFKIT, &pahole).expect("symlink");
        }
        run_ok(
            Command::new(&pahole)
                .args([
                    "-J",
                    "-j",
                    "--btf_gen_floats",
                    "--lang_exclude=rust",
                    "--skip_encoding_btf_inconsistent_proto",
                    "--btf_gen_optimized",
                ])
                .arg(image),
        );
    }

    /// 7.x's BTF step (scripts/gen-btf.sh): btfkit as `pahole -J` with
    /// 7.2's flags into a detached file, the image left as it is; the file
    /// becomes the allocated `.BTF` of an otherwise empty object (ET_REL).
    fn pahole_detached(&self, image: &Path, out: &str) -> PathBuf {
        let pahole = self.fx.path("pahole");
        if !pahole.exists() {
            std::os::unix::fs::symlink(BTFKIT, &pahole).expect("symlink");
        }
        let raw = self.fx.path(&format!("{out}.BTF"));
        run_ok(
            Command::new(&pahole)
                .args([
                    "-J",
                    "-j",
                    "--btf_features=encode_force,var,float,enum64,decl_tag,type_tag,optimized_func,consistent_func,decl_tag_kfuncs,attributes,layout",
                    "--lang_exclude=rust",
                ])
                .arg(format!("--btf_encode_detached={}", raw.display()))
                .arg(image),
        );
        self.fx.write(&format!("{out}.empty.c"), "");
        let btf_o = self.fx.cc(
            &format!("{out}.btf.o"),
            &[&format!("{out}.empty.c")],
            &["-c"],
        );
        let mut section = std::ffi::OsString::from(".BTF=");
        section.push(&raw);
        run_ok(
            Command::new(&self.objcopy)
                .arg("--add-section")
                .arg(section)
                .args(["--set-section-flags", ".BTF=alloc,readonly"])
                .arg(&btf_o),
        );
        run_ok(
            Command::new(&self.objcopy)
                .args(["--only-section=.BTF", "--strip-all"])
                .arg(&btf_o),
        );
        btf_o
    }

    /// The final link: `.BTF` of `image` as an allocated section of an
    /// object (link-vmlinux.sh's objcopy, and e_type set to ET_REL as it
    /// does), linked with the objects.
    fn final_link(&self, image: &Path, out: &str) -> PathBuf {
        let btf_o = self.fx.path(&format!("{out}.btf.o"));
        run_ok(
            Command::new(&self.objcopy)
                .args([
                    "--only-section=.BTF",
                    "--set-section-flags",
                    ".BTF=alloc,readonly",
                    "--strip-all",
                ])
                .arg(image)
                .arg(&btf_o),
        );
        let mut bytes = std::fs::read(&btf_o).expect("read btf.o");
        bytes[16] = 1; // ET_REL
        std::fs::write(&btf_o, bytes).expect("write btf.o");
        self.link(out, Some(&btf_o))
    }

    /// Function symbols of `image` by `nm`: name -> addresses.
    fn nm_functions(&self, image: &Path) -> HashMap<String, BTreeSet<u64>> {
        let out = run_ok(Command::new(&self.nm).arg(image));
        let mut m: HashMap<String, BTreeSet<u64>> = HashMap::new();
        for l in String::from_utf8_lossy(&out).lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if let [addr, "t" | "T", name] = f[..] {
                let a = u64::from_str_radix(addr, 16).expect("nm address");
                m.entry(name.to_owned()).or_default().insert(a);
            }
        }
        m
    }

    /// The FUNCs of `image`'s BTF as bpftool reads them: (id, name, tags).
    fn funcs(&self, image: &Path) -> Vec<(u32, String, Vec<u64>)> {
        let out = run_ok(
            Command::new(&self.bpftool)
                .args(["btf", "dump", "file"])
                .arg(image),
        );
        let text = String::from_utf8_lossy(&out);
        let mut funcs: Vec<(u32, String, Vec<u64>)> = Vec::new();
        for l in text.lines() {
            let id: u32 = l
                .strip_prefix('[')
                .and_then(|r| r.split(']').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let quoted = l.split('\'').nth(1).unwrap_or("");
            if l.contains("] FUNC '") {
                funcs.push((id, quoted.to_owned(), Vec::new()));
            } else if let Some(hex) = quoted.strip_prefix("addr=0x") {
                let a = u64::from_str_radix(hex, 16).expect("addr tag");
                let target: u32 = l
                    .split("type_id=")
                    .nth(1)
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|n| n.parse().ok())
                    .expect("type_id");
                let f = funcs
                    .iter_mut()
                    .find(|f| f.0 == target)
                    .expect("tagged FUNC");
                f.2.push(a);
            }
        }
        funcs
    }
}

/// (FUNC id, address) of every addr tag and `..` name of `funcs` that is
/// not an address of a function symbol of that name in `symbols`.
fn wrong_by_nm(
    funcs: &[(u32, String, Vec<u64>)],
    symbols: &HashMap<String, BTreeSet<u64>>,
) -> BTreeSet<(u32, u64)> {
    let at = |name: &str, a: u64| symbols.get(name).is_some_and(|s| s.contains(&a));
    let mut wrong = BTreeSet::new();
    for (id, name, tags) in funcs {
        let (symbol, named) = match name.split_once("..") {
            Some((s, hex)) => (s, Some(u64::from_str_radix(hex, 16).expect("hex"))),
            None => (name.as_str(), None),
        };
        for a in tags.iter().copied().chain(named) {
            if !at(symbol, a) {
                wrong.insert((*id, a));
            }
        }
    }
    wrong
}

fn btfkit(args: &[&Path]) -> Output {
    Command::new(BTFKIT)
        .args(args)
        .output()
        .expect("run btfkit")
}

/// How the kernel build hands the BTF step's output to the final link.
#[derive(Clone, Copy, PartialEq)]
enum Flow {
    /// 6.1: `pahole -J` writes `.BTF` into a copy of the pre-link image.
    InPlace,
    /// 7.x: `pahole -J --btf_encode_detached` on the pre-link image itself.
    Detached,
}

#[test]
fn kernel_build_addr_tags_and_names_match_the_final_links_nm() {
    addr_tags_and_names_match_the_final_links_nm(Flow::InPlace);
}

#[test]
fn kernel_build_7_x_detached_addr_tags_and_names_match_the_final_links_nm() {
    addr_tags_and_names_match_the_final_links_nm(Flow::Detached);
}

fn addr_tags_and_names_match_the_final_links_nm(flow: Flow) {
    let Some(b) = build_or_skip() else {
        return;
    };
    let prelink = b.link("prelink", None);
    let (image, vmlinux) = match flow {
        Flow::InPlace => {
            let image = b.fx.path("tmp_vmlinux");
            std::fs::copy(&prelink, &image).expect("copy");
            b.pahole_j(&image);
            let vmlinux = b.final_link(&image, "vmlinux");
            (image, vmlinux)
        }
        Flow::Detached => {
            let linked = std::fs::read(&prelink).expect("read the pre-link image");
            let btf_o = b.pahole_detached(&prelink, "prelink");
            assert!(
                std::fs::read(&prelink).expect("read the pre-link image") == linked,
                "the detached BTF step leaves the pre-link image as it is"
            );
            (prelink.clone(), b.link("vmlinux", Some(&btf_o)))
        }
    };

    // The fixture does what a kernel build does: text stays, init moves.
    let before = b.nm_functions(&prelink);
    let after = b.nm_functions(&vmlinux);
    for name in ["helper", "start_kernel", "setup", "twice", "setup2"] {
        let (x, y) = (&before[name], &after[name]);
        let text = name == "start_kernel";
        assert_eq!(x == y, text, "{name}: {x:x?} before, {y:x?} after");
    }
    assert_eq!(before["helper"].first(), after["helper"].first());

    let funcs = b.funcs(&vmlinux);
    let wrong = wrong_by_nm(&funcs, &after);
    assert!(wrong.is_empty(), "{wrong:x?} in {funcs:x?}");
    let named = |n: &str| funcs.iter().filter(|f| f.1 == n).collect::<Vec<_>>();
    // The text helper is the kernel's pick: named and tagged (two symbols
    // carry the name); the init one has no FUNC, no name by address.
    let helper = named("helper");
    assert_eq!(helper.len(), 1, "{funcs:x?}");
    assert_eq!(helper[0].2, vec![*after["helper"].first().expect("helper")]);
    assert!(
        !funcs.iter().any(|f| f.1.contains("..")),
        "a FUNC named by an address that moves: {funcs:x?}"
    );
    // The init twice the kernel picks keeps its FUNC, without a tag.
    let twice = named("twice");
    assert_eq!(twice.len(), 1, "{funcs:x?}");
    assert!(twice[0].2.is_empty(), "{funcs:x?}");
    assert_eq!(named("setup").len(), 1);

    // The audit agrees with nm, from the final vmlinux's symbols.
    let o = btfkit(&[
        Path::new("check"),
        Path::new("--attach"),
        &vmlinux,
        &vmlinux,
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains(" 0 wrong-address"), "{text}");

    // funcs says why the init instances have no tag.
    let o = btfkit(&[Path::new("funcs"), &image, Path::new("--json")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).expect("JSON");
    for r in &rows {
        let a = u64::from_str_radix(
            r["address"]
                .as_str()
                .expect("address")
                .trim_start_matches("0x"),
            16,
        )
        .expect("hex");
        let moved = !after
            .get(r["symbol"].as_str().expect("symbol"))
            .is_some_and(|s| s.contains(&a));
        assert_eq!(r["address_not_final"].is_string(), moved, "{r}");
    }
}

#[test]
fn check_attach_reports_every_tag_and_name_the_final_link_moved_as_nm_says() {
    let Some(b) = build_or_skip() else {
        return;
    };
    // Without __start_BTF/__stop_BTF nothing says the image will be linked
    // again: its BTF has the init code's pre-link addresses, as btfkit's
    // before it knew (0x200000 low on 6.1).
    let image = b.link("prelink", None);
    run_ok(
        Command::new(&b.objcopy)
            .args(["--strip-symbol=__start_BTF", "--strip-symbol=__stop_BTF"])
            .arg(&image),
    );
    b.pahole_j(&image);
    let vmlinux = b.final_link(&image, "vmlinux");
    let funcs = b.funcs(&image);
    let expected = wrong_by_nm(&funcs, &b.nm_functions(&vmlinux));
    assert!(
        expected.len() >= 3,
        "twice's tag, twice.. and helper.. should be wrong: {funcs:x?}"
    );

    let o = btfkit(&[
        Path::new("check"),
        Path::new("--attach"),
        &image,
        &vmlinux,
        Path::new("--json"),
    ]);
    assert_eq!(o.status.code(), Some(1), "wrong addresses exit 1");
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).expect("JSON");
    let mut reported = BTreeSet::new();
    for r in &rows {
        for w in r["wrong_addresses"].as_array().into_iter().flatten() {
            let a = w["address"].as_str().expect("\"0x...\" address");
            let a = u64::from_str_radix(a.trim_start_matches("0x"), 16).expect("hex");
            assert!(!w["reason"].as_str().unwrap_or("").is_empty(), "{r}");
            reported.insert((r["btf_id"].as_u64().expect("id") as u32, a));
        }
    }
    assert_eq!(reported, expected);

    // The text report: one line per wrong address, counted in the summary.
    let o = btfkit(&[Path::new("check"), Path::new("--attach"), &image, &vmlinux]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    let lines = text
        .lines()
        .filter(|l| l.contains(" wrong-address: "))
        .count();
    assert_eq!(lines, expected.len(), "{text}");
    assert!(
        text.contains(&format!(" {} wrong-address", expected.len())),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("twice wrong-address: addr=0x") && l.contains("twice is at")),
        "{text}"
    );
}
