//! The QEMU harness itself, on Debian's cloud kernel: the initramfs boots,
//! the script's results reach the console, and QMP answers.

use std::time::Duration;

use testkit::qemu::{qemu_or_skip, Initramfs, Qemu};

#[test]
fn debian_kernel_boots_runs_script_and_answers_qmp() {
    let Some(()) = testkit::kernel_tier("boots Debian's 6.1 kernel under QEMU") else {
        return;
    };
    let Some(_) = qemu_or_skip() else { return };
    let Some(k) = testkit::debian_vmlinuz_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let initrd = dir.path().join("initrd.cpio");
    let mut fs = Initramfs::new();
    fs.bytes("/etc/greeting", b"hello from the host\n", 0o644)
        .script("echo \"BTFKIT-RESULT release $(uname -r)\"")
        .script("echo \"BTFKIT-RESULT greeting $(cat /etc/greeting)\"")
        .script("test -d /proc/self && echo BTFKIT-RESULT proc mounted");
    fs.write(&initrd).unwrap();

    let mut q = Qemu::new(&k.vmlinuz, &initrd);
    q.timeout = Duration::from_secs(180);
    let console = q.run().unwrap();
    assert!(console.completed(), "{}", console.text);
    let version = std::fs::read_to_string(k.dir.join("VERSION")).unwrap();
    let release = console.result("release").unwrap();
    assert!(
        version.contains(release),
        "guest runs {release}, the cache holds {version}"
    );
    assert_eq!(console.result("greeting"), Some("hello from the host"));
    assert_eq!(console.result("proc"), Some("mounted"));

    // The same machine under QMP: it is running, and `quit` ends it.
    let mut fs = Initramfs::new();
    fs.script("echo BTFKIT-RESULT ready yes; sleep 600");
    fs.write(&initrd).unwrap();
    let mut vm = q.spawn().unwrap();
    // The whole line: `quit` right after a prefix could cut the rest off.
    vm.wait_for("BTFKIT-RESULT ready yes", Duration::from_secs(180))
        .unwrap();
    let status = vm
        .qmp(serde_json::json!({ "execute": "query-status" }))
        .unwrap();
    assert_eq!(status["status"], "running", "{status}");
    let console = vm.quit().unwrap();
    assert_eq!(console.result("ready"), Some("yes"));
}
