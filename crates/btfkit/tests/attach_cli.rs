//! `btfkit check --attach` and the fentry column of `btfkit funcs`, run as
//! a user would on Debian's 6.1 vmlinux. Oracles: System.map (the kernel
//! attaches a name at its lowest address), the machine code at a function's
//! entry (`objdump`: the 5-byte NOP ftrace patches, or not), the exit codes.

use std::path::Path;
use std::process::{Command, Output};

fn btfkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .args(args)
        .output()
        .expect("run btfkit")
}

/// The JSON array a command printed.
fn json(out: &Output) -> Vec<serde_json::Value> {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not a JSON array ({e}): {text}"))
}

/// A "0x..." JSON string as a number; addresses are never JSON numbers.
fn hex(v: &serde_json::Value) -> Option<u64> {
    let s = v.as_str()?;
    u64::from_str_radix(s.strip_prefix("0x")?, 16).ok()
}

/// Whether the code at `addr` starts with an fentry call site: the 5-byte
/// NOP objtool leaves (Debian's 6.1 has no IBT), or, in .init.text, the
/// call to __fentry__ itself.
fn starts_with_fentry(objdump: &Path, vmlinux: &Path, addr: u64) -> bool {
    let text = disassemble(objdump, vmlinux, addr);
    text.starts_with("0f 1f 44 00 00") || text.contains("<__fentry__>")
}

/// The first instruction at `addr`, as objdump shows it: bytes, mnemonic.
fn disassemble(objdump: &Path, vmlinux: &Path, addr: u64) -> String {
    let out = testkit::run_ok(
        Command::new(objdump)
            .arg("-d")
            .arg(format!("--start-address={addr:#x}"))
            .arg(format!("--stop-address={:#x}", addr + 5))
            .arg(vmlinux),
    );
    let text = String::from_utf8_lossy(&out);
    text.lines()
        .filter(|l| l.split('\t').count() > 1)
        .flat_map(|l| l.split('\t').skip(1))
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn check_attach_debian_vmlinux_exit_codes_hex_json_mcount_objdump() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let Some(objdump) = testkit::tool_or_skip("objdump", "binutils") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("vmlinux.btf");
    let vmlinux = k.vmlinux.to_str().expect("path");
    let o = btfkit(&["encode", vmlinux, "-o", out.to_str().expect("path")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // Ours: no unsafe FUNC (exit 0), every other verdict with a reason.
    let o = btfkit(&[
        "check",
        "--attach",
        out.to_str().expect("p"),
        vmlinux,
        "--json",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows = json(&o);
    let reach = |r: &serde_json::Value| r["reach"].as_str().unwrap_or("").to_owned();
    assert!(rows.iter().all(|r| reach(r) != "unsafe"));
    for r in rows.iter().filter(|r| reach(r) != "attachable") {
        assert!(!r["reason"].as_str().unwrap_or("").is_empty(), "{r}");
    }
    let map = std::fs::read_to_string(&k.system_map).expect("System.map");
    let lowest = |name: &str| -> Option<u64> {
        map.lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (a, _, n) = (f.next()?, f.next()?, f.next()?);
                (n == name).then(|| u64::from_str_radix(a, 16).ok())?
            })
            .min()
    };
    let wake = rows
        .iter()
        .find(|r| r["name"] == "wakeup_show")
        .expect("wakeup_show");
    assert_eq!(wake["reach"], "attachable");
    assert_eq!(hex(&wake["address"]), lowest("wakeup_show"));
    assert!(rows
        .iter()
        .flat_map(|r| r["tags"].as_array().into_iter().flatten())
        .all(|t| hex(t).is_some()));

    // Call sites from __mcount_loc: attachable code starts with one, code
    // without a site does not.
    // (Init code has its sites in the file but is freed after boot: also
    // no-fentry-site, with fentry_site true; not sampled here.)
    let sample = |verdict: &str| -> Vec<u64> {
        rows.iter()
            .filter(|r| reach(r) == verdict)
            .filter(|r| verdict != "no-fentry-site" || r["fentry_site"] == false)
            .filter_map(|r| hex(&r["address"]))
            .step_by(997)
            .take(5)
            .collect()
    };
    let attachable = sample("attachable");
    let no_site = sample("no-fentry-site");
    assert_eq!(attachable.len(), 5);
    assert!(!no_site.is_empty());
    for a in attachable {
        assert!(
            starts_with_fentry(&objdump, &k.vmlinux, a),
            "{a:#x}: {}",
            disassemble(&objdump, &k.vmlinux, a)
        );
    }
    for a in no_site {
        assert!(
            !starts_with_fentry(&objdump, &k.vmlinux, a),
            "{a:#x}: {}",
            disassemble(&objdump, &k.vmlinux, a)
        );
    }

    // Debian's own BTF (in the vmlinux): unsafe FUNCs, so exit 1, each listed.
    let o = btfkit(&["check", "--attach", vmlinux, vmlinux]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains(" wakeup_show unsafe: ") && l.contains("0xffffffff81111e90")),
        "{text}"
    );

    // A System.map has no call sites: said in the summary.
    let map_path = k.system_map.to_str().expect("path");
    let o = btfkit(&["check", "--attach", out.to_str().expect("p"), map_path]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("call sites not checked"));

    // funcs: the lowest wakeup_show is reached by name through the FUNC
    // named wakeup_show; the other only through its tagged FUNC.
    let o = btfkit(&[
        "funcs",
        vmlinux,
        out.to_str().expect("p"),
        "--name",
        "wakeup_show",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let inst = json(&o);
    assert_eq!(inst.len(), 2);
    for i in &inst {
        let addr = u64::from_str_radix(
            i["address"]
                .as_str()
                .expect("address")
                .trim_start_matches("0x"),
            16,
        )
        .expect("hex");
        let f = &i["fentry"];
        if Some(addr) == lowest("wakeup_show") {
            assert_eq!(f["by_name"], true, "{i}");
            assert_eq!(f["verdict"], "attachable", "{i}");
            let id = f["func"].as_u64().expect("FUNC id");
            let row = rows.iter().find(|r| r["btf_id"] == id).expect("row");
            assert_eq!(row["name"], "wakeup_show");
        } else {
            assert_eq!(f["by_name"], false, "{i}");
            let id = f["tagged_func"].as_u64().expect("tagged FUNC");
            let row = rows.iter().find(|r| r["btf_id"] == id).expect("row");
            assert_eq!(row["name"], format!("wakeup_show..{addr:x}"));
            assert_eq!(row["reach"], "not-a-symbol");
        }
    }
}
