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
