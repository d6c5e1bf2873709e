//! `btfkit resolve` and the no-argument report, run as a user would.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn btfkit(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run btfkit");
    if let Some(input) = stdin {
        child
            .stdin
            .as_mut()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("btfkit output")
}

fn json(out: &Output) -> Vec<serde_json::Value> {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

const ZEROED: &str = "\
0000000000000000 T _stext
0000000000000000 t __pfx_wakeup_show
0000000000000000 t wakeup_show
0000000000000000 t bpf_prog_6deef7357e7b4530_sd_fw_egress\t[bpf]
";

#[test]
fn zeroed_kallsyms_gives_the_explained_error_and_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("kallsyms");
    std::fs::write(&path, ZEROED).expect("write");
    let p = path.to_str().expect("utf-8 path");
    let out = btfkit(&["resolve", "--kallsyms", p, "wakeup_show"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{p}: all 4 addresses read as zero")),
        "{err}"
    );
    assert!(
        err.contains("kptr_restrict") && err.contains("perf_event_paranoid"),
        "{err}"
    );

    // The report still runs, and says what it cannot see.
    let out = btfkit(&["--kallsyms", p, "--json"], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report JSON");
    assert_eq!(r["addresses_visible"], false);
    assert_eq!(
        r["bpf_programs"][0],
        "bpf_prog_6deef7357e7b4530_sd_fw_egress"
    );
    let notes = r["notes"].as_array().expect("notes");
    assert!(notes
        .iter()
        .any(|n| n.as_str().is_some_and(|n| n.contains("read as zero"))));
}

/// Oracle: /proc/kallsyms read here line by line: the address of a unique
/// function plus 2 resolves to it at offset 2, also from stdin.
#[test]
fn resolve_live_address_with_offset_as_json_and_from_stdin() {
    let text = std::fs::read_to_string("/proc/kallsyms").expect("kallsyms");
    let Some((addr, name)) = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            let (a, t, n) = (f.next()?, f.next()?, f.next()?);
            (t == "T" && !n.starts_with("__pfx_") && !n.contains('\t')).then_some((a, n))
        })
        .find(|&(_, n)| text.matches(&format!(" {n}\n")).count() == 1)
    else {
        panic!("no unique global function in /proc/kallsyms");
    };
    if addr.bytes().all(|c| c == b'0') {
        return testkit::skip("/proc/kallsyms addresses are hidden from this user");
    }
    let target = format!("{:#x}", u64::from_str_radix(addr, 16).expect("hex") + 2);
    let out = btfkit(&["resolve", "--json", &target], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["symbol"], name);
    assert_eq!(r[0]["offset"], 2);
    assert_eq!(r[0]["addr"], format!("0x{}", addr.trim_start_matches('0')));
    for key in ["module", "size", "btf_id", "prototype", "file"] {
        assert!(r[0].get(key).is_some(), "missing {key}");
    }

    let out = btfkit(&["resolve", "--json"], Some(&format!("{target}\n\n0x10\n")));
    assert_eq!(out.status.code(), Some(1), "0x10 resolves to nothing");
    let r = json(&out);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0]["symbol"], name);
    assert_eq!(r[1]["kind"], "unresolved");
}

/// Oracle: Debian's System.map lists wakeup_show twice; Debian's BTF has
/// two FUNCs of that name (drivers/base/power/sysfs.c takes a struct
/// device, kernel/irq/irqdesc.c a struct kobject) and no address tags.
#[test]
fn debian_wakeup_show_by_name_gives_both_instances() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let map = std::fs::read_to_string(&k.system_map).expect("System.map");
    let expected: Vec<String> = map
        .lines()
        .filter(|l| l.ends_with(" t wakeup_show"))
        .map(|l| format!("0x{}", l[..16].trim_start_matches('0')))
        .collect();
    assert_eq!(expected.len(), 2);
    let (btf, sysmap) = (
        k.vmlinux.to_str().expect("path"),
        k.system_map.to_str().expect("path"),
    );
    let out = btfkit(
        &[
            "resolve",
            "--json",
            "--btf",
            btf,
            "--system-map",
            sysmap,
            "wakeup_show",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    let addrs: Vec<&str> = r.iter().filter_map(|o| o["addr"].as_str()).collect();
    assert_eq!(addrs, expected);
    for o in &r {
        assert!(o["btf_id"].is_u64(), "{o}");
        let warning = o["warning"].as_str().expect("ambiguity warning");
        assert!(warning.contains("ambiguous"), "{warning}");
        assert!(warning.contains("struct device *dev"), "{warning}");
        assert!(warning.contains("struct kobject *kobj"), "{warning}");
    }
}

/// The address of the symbols named `name` in Debian's System.map.
fn system_map_addrs(map: &str, name: &str) -> Vec<u64> {
    map.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (a, _, n) = (f.next()?, f.next()?, f.next()?);
            (n == name).then(|| u64::from_str_radix(a, 16).ok())?
        })
        .collect()
}

fn hex(v: &serde_json::Value) -> u64 {
    let s = v.as_str().expect("a 0x string");
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex")
}

/// With `--elf` Debian's vmlinux (with DWARF), each `wakeup_show` gets its
/// own prototype, by address or by name. Oracles: System.map (the two
/// addresses), addr2line reading the same DWARF (which file each is in:
/// kernel/irq/irqdesc.c's takes a struct kobject, drivers/base/power/
/// sysfs.c's a struct device).
#[test]
fn debian_elf_dwarf_gives_each_wakeup_show_its_prototype_addr2line() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let Some(addr2line) = testkit::tool_or_skip("addr2line", "binutils") else {
        return;
    };
    let map = std::fs::read_to_string(&k.system_map).expect("System.map");
    let addrs = system_map_addrs(&map, "wakeup_show");
    assert_eq!(addrs.len(), 2);
    let vmlinux = k.vmlinux.to_str().expect("path");
    let inputs: Vec<String> = addrs.iter().map(|a| format!("{a:#x}")).collect();
    let mut args = vec!["resolve", "--json", "--elf", vmlinux, "wakeup_show"];
    args.extend(inputs.iter().map(String::as_str));
    let out = btfkit(&args, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    assert_eq!(r.len(), 4, "{r:?}");
    for o in &r {
        let addr = hex(&o["addr"]);
        let file = testkit::run_ok(
            Command::new(&addr2line)
                .arg("-e")
                .arg(&k.vmlinux)
                .arg(format!("{addr:#x}")),
        );
        let file = String::from_utf8_lossy(&file);
        let proto = o["prototype"].as_str().expect("prototype");
        assert_eq!(o["prototype_from"], "dwarf", "{o}");
        if file.contains("kernel/irq/irqdesc.c") {
            assert!(proto.contains("struct kobject *"), "{file}: {o}");
        } else {
            assert!(file.contains("drivers/base/power/sysfs.c"), "{file}");
            assert!(proto.contains("struct device *"), "{file}: {o}");
        }
        assert!(o.get("warning").is_none(), "{o}");
    }
}

/// `vfs_read+0x10/0x360` (an oops line) and btfkit's own `sym+off/size`
/// output resolve to the address they name. Oracle: System.map.
#[test]
fn debian_symbol_offset_oops_format_resolves_system_map() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let map = std::fs::read_to_string(&k.system_map).expect("System.map");
    let vfs_read = system_map_addrs(&map, "vfs_read");
    assert_eq!(vfs_read.len(), 1);
    let (btf, sysmap) = (
        k.vmlinux.to_str().expect("path"),
        k.system_map.to_str().expect("path"),
    );
    let base = ["resolve", "--btf", btf, "--system-map", sysmap];
    let out = btfkit(&[&base[..], &["--json", "vfs_read+0x10"]].concat(), None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = json(&out);
    assert_eq!(hex(&r[0]["addr"]), vfs_read[0]);
    assert_eq!(r[0]["offset"], 0x10);
    assert_eq!(r[0]["symbol"], "vfs_read");
    let size = r[0]["size"].as_u64().expect("size");

    // The oops format, the size included, and with a module after it; then
    // what btfkit printed, read back.
    let oops = format!("vfs_read+0x10/{size:#x}");
    let text = btfkit(&base, Some(&format!("{oops}\n"))).stdout;
    let text = String::from_utf8_lossy(&text).into_owned();
    assert!(
        text.starts_with(&format!("{oops}: vfs_read+0x10/{size:#x} function: ")),
        "{text}"
    );
    let own = text.split_whitespace().nth(1).expect("sym+off/size");
    let again = json(&btfkit(&[&base[..], &["--json", own]].concat(), None));
    assert_eq!(hex(&again[0]["addr"]), vfs_read[0]);
    assert_eq!(again[0]["offset"], 0x10);

    let wrong_size = json(&btfkit(
        &[
            &base[..],
            &["--json", &format!("vfs_read+0x10/{:#x}", size + 1)],
        ]
        .concat(),
        None,
    ));
    assert!(wrong_size[0]["warning"]
        .as_str()
        .is_some_and(|w| w.contains("another build")));
    let past_end = format!("vfs_read+{size:#x}");
    let past = btfkit(&[&base[..], &[past_end.as_str()]].concat(), None);
    assert_eq!(past.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&past.stdout).contains("past the end of vfs_read"));
}
