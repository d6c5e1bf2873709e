//! One name for a split BTF's base in every command: `--base` (`layout`,
//! `dump`, `diff`, `funcs`, `resolve`). `layout` also keeps pahole's
//! `--btf_base`. Oracles: pahole 1.32's layout view (the
//! one btfkit follows, from the sid chroot) of a Debian module over Debian's
//! vmlinux, and bpftool's dump with `-B`.

use std::path::Path;
use std::process::{Command, Output};

fn btfkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_btfkit"))
        .args(args)
        .output()
        .expect("run btfkit")
}

#[test]
fn base_flag_layout_dump_diff_debian_module_pahole_bpftool() {
    let Some(k) = testkit::debian_kernel_or_skip() else {
        return;
    };
    let Some(sid) = testkit::sid::sid_or_skip() else {
        return;
    };
    let Some(bpftool) = testkit::tool_or_skip("bpftool", "bpftool") else {
        return;
    };
    let ko_path = k.image_modules.join("kernel/net/key/af_key.ko");
    let (base, ko) = (
        k.vmlinux.to_str().expect("path"),
        ko_path.to_str().expect("path"),
    );
    let binds: [&Path; 2] = [&k.vmlinux, &ko_path];
    let theirs = sid.run_ok(&binds, "pahole", ["-F", "btf", "--btf_base", base, ko]);
    for flag in ["--base", "--btf_base"] {
        let ours = btfkit(&["layout", flag, base, ko]);
        assert!(
            ours.status.success(),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        assert!(
            ours.stdout == theirs,
            "layout {flag} differs from pahole --btf_base"
        );
    }
    let theirs =
        testkit::run_ok(Command::new(&bpftool).args(["btf", "dump", "file", ko, "-B", base]));
    let ours = btfkit(&["dump", "--base", base, ko]);
    assert!(ours.stdout == theirs, "dump --base differs from bpftool -B");
    let same = btfkit(&["diff", "--base", base, ko, ko]);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&same.stdout)
    );

    // `funcs` and `resolve` find the module's FUNCs at bpftool's ids.
    let bpftool_funcs: Vec<(u64, String)> = String::from_utf8_lossy(&theirs)
        .lines()
        .filter_map(|l| {
            let (id, rest) = l.strip_prefix('[')?.split_once("] FUNC '")?;
            Some((id.parse().ok()?, rest.split('\'').next()?.to_owned()))
        })
        .collect();
    assert!(bpftool_funcs.len() > 50, "{}", bpftool_funcs.len());
    let json = |out: Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let funcs = json(btfkit(&["funcs", "--json", "--base", base, ko]));
    let ours: Vec<(u64, String)> = funcs
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["btf_id"].as_u64().expect("id"),
                r["name"].as_str().expect("name").to_owned(),
            )
        })
        .collect();
    let sorted = |mut v: Vec<(u64, String)>| {
        v.sort();
        v
    };
    assert_eq!(sorted(ours), sorted(bpftool_funcs.clone()), "funcs --base");
    let (id, name) = &bpftool_funcs[0];
    let r = json(btfkit(&[
        "resolve", "--json", "--elf", ko, "--base", base, name,
    ]));
    assert_eq!(r[0]["btf_id"].as_u64(), Some(*id), "resolve --base: {r}");
    // Without the base, the error names the option.
    let out = btfkit(&["funcs", ko, ko]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--base"));
}
