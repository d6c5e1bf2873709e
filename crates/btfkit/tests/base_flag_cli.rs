//! One name for a split BTF's base in every command: `--base`. `layout`
//! also keeps pahole's `--btf_base`. Oracles: pahole 1.32's layout view (the
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
}
