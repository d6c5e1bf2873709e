//! `btfkit inspect` on a live kernel: Debian's 6.1 cloud kernel booted
//! under QEMU reads its own /proc/kcore (btfkit and its shared libraries
//! copied into the initramfs). The oracle is the running kernel itself:
//! `uname -r`, `nproc`, /proc/<pid>/comm and /proc/modules in the same guest.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use testkit::qemu::{qemu_or_skip, Initramfs, Qemu};

/// Processes that come and go while the guest script runs.
const TRANSIENT: &[&str] = &[
    "btfkit", "cat", "sort", "tr", "sed", "sh", "ls", "xargs", "echo", "sleep",
];

/// Task names as `task_struct.comm` holds them: /proc/PID/comm adds a
/// kworker's current work ("kworker/0:1-events") and shows kernel threads'
/// full names, where comm keeps 15 bytes.
fn set(s: &str) -> BTreeSet<String> {
    s.split(',')
        .map(str::trim)
        .map(|x| match x.strip_prefix("kworker/") {
            Some(rest) => format!("kworker/{}", rest.split('-').next().unwrap_or(rest)),
            None => x.to_owned(),
        })
        .map(|x| x.chars().take(15).collect::<String>())
        .filter(|x| !x.is_empty() && !TRANSIENT.contains(&x.as_str()))
        .collect()
}

#[test]
fn inspect_live_kcore_in_guest_equals_proc_and_uname() {
    let Some(()) = testkit::kernel_tier("boots Debian's 6.1 kernel under QEMU") else {
        return;
    };
    let Some(_) = qemu_or_skip() else { return };
    let Some(k) = testkit::debian_vmlinuz_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let btf = dir.path().join("vmlinux.btf");
    testkit::run_ok(
        Command::new(env!("CARGO_BIN_EXE_btfkit"))
            .arg("encode")
            .arg(&k.vmlinux)
            .args(["--vars", "all", "-o"])
            .arg(&btf),
    );
    // The same BTF with struct zone 64 bytes larger: another build's.
    let mut other = btf::load_file(&btf, None).unwrap();
    let zone = other
        .iter()
        .find(|(_, t)| {
            matches!(t.data, btf::TypeData::Struct { .. }) && other.name_of(t).ok() == Some("zone")
        })
        .map(|(id, _)| id)
        .unwrap();
    if let btf::TypeData::Struct { size, .. } = &mut other.type_by_id_mut(zone).unwrap().data {
        *size += 64;
    }
    let other_btf = dir.path().join("other.btf");
    std::fs::write(&other_btf, other.to_bytes()).unwrap();
    let initrd = dir.path().join("initrd.cpio");
    let mut fs = Initramfs::new();
    fs.binary("/bin/btfkit", std::path::Path::new(env!("CARGO_BIN_EXE_btfkit")))
        .file("/vmlinux.btf", &btf)
        .file("/other.btf", &other_btf)
        .file(
            "/lib/modules/dummy.ko",
            &k.image_modules.join("kernel/drivers/net/dummy.ko"),
        )
        .bytes(
            "/bin/btfkit-sleeper",
            b"#!/bin/sh\nwhile true; do sleep 1000; done\n",
            0o755,
        )
        .script(
            r#"insmod /lib/modules/dummy.ko
btfkit-sleeper &
sleep 1
I="btfkit inspect --btf /vmlinux.btf"
echo "BTFKIT-RESULT uname $(uname -r)"
echo "BTFKIT-RESULT nproc $(nproc)"
echo "BTFKIT-RESULT proc-comms $(cat /proc/[0-9]*/comm | sort -u | tr '\n' ',')"
echo "BTFKIT-RESULT proc-modules $(sed 's/ .*//' /proc/modules | sort | tr '\n' ',')"
echo "BTFKIT-RESULT release $($I 'init_uts_ns.name.release' | sed 's/.*"\(.*\)"/\1/')"
echo "BTFKIT-RESULT cpus $($I 'nr_cpu_ids' | sed 's/.*)//')"
# Pointers in JSON are "0x..." strings.
tasks=$($I --json 'list_for_each_entry(struct task_struct, &init_task.tasks, tasks)' | sed 's/.*\[//; s/\].*//; s/"//g' | tr ',' ' ')
comms=$(for t in $tasks; do echo "((struct task_struct *)$t)->comm"; done | $I --json | sed 's/.*"value":"\(.*\)"}/\1/' | sort -u | tr '\n' ',')
echo "BTFKIT-RESULT inspect-comms $comms"
mods=$($I --json 'list_for_each_entry(struct module, &modules, list)' | sed 's/.*\[//; s/\].*//; s/"//g' | tr ',' ' ')
names=$(for m in $mods; do echo "((struct module *)$m)->name"; done | $I --json | sed 's/.*"value":"\(.*\)"}/\1/' | sort | tr '\n' ',')
echo "BTFKIT-RESULT inspect-modules $names"
$I 'no_such_variable' 2>&1 | sed 's/^/BTFKIT-RESULT error /'
# Another build's BTF is refused, as for a dump.
btfkit inspect --btf /other.btf 'sizeof(struct zone)' > /tmp/other.txt 2>&1
echo "BTFKIT-RESULT other-btf-rc $?"
sed 's/^/BTFKIT-RESULT other-btf /' /tmp/other.txt
# kstate (mod, log): `mod` lists /proc/modules' names; `log` ends as dmesg does.
echo "BTFKIT-RESULT kstate-mod $($I mod | tail -n +2 | awk '{print $2}' | sort | tr '\n' ',')"
$I log > /tmp/log.txt
dmesg > /tmp/dmesg.txt
echo "BTFKIT-RESULT kstate-log-tail $(tail -n 10 /tmp/log.txt | md5sum)"
echo "BTFKIT-RESULT kstate-dmesg-tail $(tail -n 10 /tmp/dmesg.txt | md5sum)"
echo "BTFKIT-RESULT kstate-log-lines $(wc -l < /tmp/log.txt)"
echo "BTFKIT-RESULT kstate-log-last $(tail -n 1 /tmp/log.txt)"
echo "BTFKIT-RESULT kstate-dmesg-last $(tail -n 1 /tmp/dmesg.txt)"
# orc's part (ps, bt, sym): processes by /proc before and after ps, the sleeper's backtraces.
pp() { for d in /proc/[0-9]*; do echo "${d#/proc/}:$(sed -n 's/^PPid:\t*//p' $d/status)"; done | sort; }
pp > /before
$I ps | sed '1d; s/^>//' | awk '{print $1":"$2}' | sort > /ours
pp > /after
echo "BTFKIT-RESULT ps-stable $(grep -Fxf /before /after | tr '\n' ',')"
echo "BTFKIT-RESULT ps-ours $(tr '\n' ',' < /ours)"
echo "BTFKIT-RESULT bt-sleep $($I "bt $(pidof sleep)" | tr '\n' '|')"
echo "BTFKIT-RESULT bt-shell $($I "bt $(pidof btfkit-sleeper)" | tr '\n' '|')"
echo "BTFKIT-RESULT bt-all-tasks $($I 'foreach bt' | grep -c '^PID:')"
echo "BTFKIT-RESULT bt-all-stopped $($I 'foreach bt' | grep 'unwinding stopped' | grep -v 'running on CPU' | tr '\n' '|')"
echo "BTFKIT-RESULT sym $($I 'sym do_nanosleep' | tr '\n' '|')"
"#,
        );
    fs.write(&initrd).unwrap();
    let mut q = Qemu::new(&k.vmlinuz, &initrd);
    q.cpus = 2;
    q.timeout = Duration::from_secs(300);
    let console = q.run().unwrap();
    assert!(console.completed(), "{}", console.text);
    let r = |key: &str| {
        console
            .result(key)
            .unwrap_or_else(|| panic!("no {key} in:\n{}", console.text))
            .to_owned()
    };
    assert_eq!(r("release"), r("uname"), "{}", console.text);
    assert_eq!(r("cpus"), r("nproc"), "{}", console.text);
    let (proc_comms, ours) = (set(&r("proc-comms")), set(&r("inspect-comms")));
    assert!(
        proc_comms.len() > 20 && proc_comms.contains("btfkit-sleeper"),
        "{proc_comms:?}"
    );
    assert_eq!(ours, proc_comms);
    assert_eq!(r("inspect-modules"), r("proc-modules"));
    assert!(r("proc-modules").contains("dummy"));
    let e = r("error");
    assert!(
        e.contains("column 1") && e.contains("no_such_variable"),
        "{e}"
    );
    // A BTF of another build than the running kernel: refused, naming it
    // and what differs from VMCOREINFO (/sys/kernel/vmcoreinfo's note).
    assert_eq!(r("other-btf-rc"), "1", "{}", console.text);
    let o = r("other-btf");
    assert!(
        o.starts_with(
            "btfkit: error: /other.btf: BTF of another kernel than the running kernel (6.1.0-"
        ) && o.ends_with("): sizeof(struct zone) is 1600 in the BTF, 1536 in VMCOREINFO"),
        "{o}"
    );
    // kstate (mod, log): the guest's /proc/modules and dmesg are the oracle.
    assert_eq!(r("kstate-mod"), r("proc-modules"), "{}", console.text);
    assert_eq!(
        r("kstate-log-last"),
        r("kstate-dmesg-last"),
        "{}",
        console.text
    );
    assert_eq!(
        r("kstate-log-tail"),
        r("kstate-dmesg-tail"),
        "{}",
        console.text
    );
    assert!(r("kstate-log-lines").parse::<usize>().unwrap() > 100);
    // orc's part: ps, bt and sym against the guest's /proc and its sleeping tasks.
    let pairs = |key: &str| -> BTreeSet<String> {
        r(key)
            .split(',')
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let (stable, ps) = (pairs("ps-stable"), pairs("ps-ours"));
    assert!(stable.len() > 20, "{stable:?} in\n{}", console.text);
    let missing: Vec<_> = stable.difference(&ps).collect();
    assert!(
        missing.is_empty(),
        "pid:ppid in /proc, not in ps: {missing:?}"
    );
    let sleep = r("bt-sleep");
    assert!(
        sleep.contains("do_nanosleep") && sleep.contains("entry_SYSCALL_64"),
        "{sleep}"
    );
    let shell = r("bt-shell");
    assert!(
        shell.contains("do_wait") && shell.contains("__schedule"),
        "{shell}"
    );
    assert!(r("bt-all-tasks").parse::<usize>().unwrap() > 20);
    // A task that runs while it is read may fail to unwind; a quiet guest has few.
    let stopped = r("bt-all-stopped");
    assert!(
        stopped.matches("unwinding stopped").count() <= 2,
        "{stopped}"
    );
    assert!(r("sym").contains("do_nanosleep("), "{}", r("sym"));
    eprintln!(
        "live guest: release, nproc, {} task names and modules {} equal the guest's own",
        ours.len(),
        r("proc-modules")
    );
}
