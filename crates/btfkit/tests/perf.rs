//! `btfkit perf` and `btfkit watch` against the real thing: a BPF socket
//! filter loaded and unloaded through bpf(2) by a small C program while
//! Debian's `perf record -a` runs. The oracles are `perf report -D` (every
//! KSYMBOL and BPF_EVENT record with its time and file offset), the
//! program's own bpf_prog_info (id, tag, address, length) and
//! `perf report --sort sym` (samples per symbol).

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;
use testkit::Fixture;

const BTFKIT: &str = env!("CARGO_BIN_EXE_btfkit");

/// Loads a socket filter named argv[1] (a counting loop, so that samples
/// land in it), runs it argv[2] x 1000 times with BPF_PROG_TEST_RUN, writes
/// what the kernel says about it to argv[3], then closes it, which unloads
/// it before close() returns.
const LOADER_C: &str = r#"
#include <linux/bpf.h>
#include <linux/btf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static long sys_bpf(int cmd, union bpf_attr *a) { return syscall(__NR_bpf, cmd, a, sizeof(*a)); }
int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) { fprintf(stderr, "usage: loader NAME RUNS OUT [btf]\n"); return 2; }
    const char *name = argv[1];
    int runs = atoi(argv[2]);
    struct bpf_insn insns[] = {
        { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
        { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 1, .imm = 0 },
        { .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = 1, .imm = 1 },
        { .code = BPF_JMP | BPF_JLT | BPF_K, .dst_reg = 1, .off = -2, .imm = 20000 },
        { .code = BPF_JMP | BPF_EXIT },
    };
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    a.insns = (unsigned long)insns;
    a.insn_cnt = sizeof(insns) / sizeof(insns[0]);
    a.license = (unsigned long)"GPL";
    strncpy(a.prog_name, name, sizeof(a.prog_name) - 1);
    /* With "btf": BTF saying the program is `int btfkit_f(void)`. */
    static const char strs[] = "\0int\0btfkit_f";
    unsigned int types[] = {
        1, BTF_KIND_INT << 24, 4, (BTF_INT_SIGNED << 24) | 32,
        0, BTF_KIND_FUNC_PROTO << 24, 1,
        5, (BTF_KIND_FUNC << 24) | BTF_FUNC_GLOBAL, 2,
    };
    unsigned int func_info[2] = { 0, 3 };
    if (argc == 5) {
        struct btf_header h = { .magic = BTF_MAGIC, .version = BTF_VERSION, .hdr_len = sizeof(h),
            .type_len = sizeof(types), .str_off = sizeof(types), .str_len = sizeof(strs) };
        unsigned char blob[sizeof(h) + sizeof(types) + sizeof(strs)];
        memcpy(blob, &h, sizeof(h));
        memcpy(blob + sizeof(h), types, sizeof(types));
        memcpy(blob + sizeof(h) + sizeof(types), strs, sizeof(strs));
        union bpf_attr b;
        memset(&b, 0, sizeof(b));
        b.btf = (unsigned long)blob; b.btf_size = sizeof(blob);
        int btf_fd = sys_bpf(BPF_BTF_LOAD, &b);
        if (btf_fd < 0) { perror("BPF_BTF_LOAD"); return 1; }
        a.prog_btf_fd = btf_fd;
        a.func_info = (unsigned long)func_info;
        a.func_info_rec_size = sizeof(func_info);
        a.func_info_cnt = 1;
    }
    int fd = sys_bpf(BPF_PROG_LOAD, &a);
    if (fd < 0) { perror("BPF_PROG_LOAD"); return 1; }
    struct bpf_prog_info info;
    memset(&info, 0, sizeof(info));
    unsigned long long ksym = 0;
    unsigned int len = 0;
    info.nr_jited_ksyms = 1; info.jited_ksyms = (unsigned long)&ksym;
    info.nr_jited_func_lens = 1; info.jited_func_lens = (unsigned long)&len;
    memset(&a, 0, sizeof(a));
    a.info.bpf_fd = fd; a.info.info_len = sizeof(info); a.info.info = (unsigned long)&info;
    if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) < 0) { perror("BPF_OBJ_GET_INFO_BY_FD"); return 1; }
    FILE *out = fopen(argv[3], "w");
    if (!out) { perror(argv[3]); return 1; }
    fprintf(out, "%u ", info.id);
    for (int i = 0; i < 8; i++) fprintf(out, "%02x", info.tag[i]);
    fprintf(out, " %llx %u\n", ksym, len);
    fclose(out);
    unsigned char pkt[64] = {0};
    for (int i = 0; i < runs; i++) {
        memset(&a, 0, sizeof(a));
        a.test.prog_fd = fd; a.test.data_in = (unsigned long)pkt;
        a.test.data_size_in = sizeof(pkt); a.test.repeat = 1000;
        if (sys_bpf(BPF_PROG_TEST_RUN, &a) < 0) { perror("BPF_PROG_TEST_RUN"); return 1; }
    }
    close(fd);
    return 0;
}
"#;

/// What the kernel said about the loaded program.
#[derive(Debug)]
struct Loaded {
    id: u64,
    tag: String,
    addr: u64,
    len: u64,
    /// `bpf_prog_<tag>_<name>`, its kallsyms name.
    symbol: String,
}

/// Every test here records or listens system-wide. With several listeners,
/// Linux 6.18 inflates the size of KSYMBOL records and Debian's perf then
/// misreads their timestamps, which breaks it as an oracle (the one test that
/// wants that situation makes it itself). So the tests run one at a time.
fn one_listener_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn build_loader(fx: &Fixture) -> PathBuf {
    fx.write("loader.c", LOADER_C);
    fx.cc("loader", &["loader.c"], &["-O2"])
}

fn read_loaded(path: &Path, name: &str) -> Loaded {
    let text = std::fs::read_to_string(path).unwrap();
    let f: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(f.len(), 4, "loader output {text:?}");
    Loaded {
        id: f[0].parse().unwrap(),
        tag: f[1].to_owned(),
        addr: u64::from_str_radix(f[2], 16).unwrap(),
        len: f[3].parse().unwrap(),
        symbol: format!("bpf_prog_{}_{name}", f[1]),
    }
}

/// Root and perf, or a skip.
fn perf_or_skip() -> Option<PathBuf> {
    if !testkit::is_root() {
        testkit::skip("needs root: perf record -a and bpf(BPF_PROG_LOAD)");
        return None;
    }
    testkit::tool_or_skip("perf", "linux-perf")
}

/// Records the whole system while the loader runs; with `pipe`, as
/// `perf record -o -` writes to a pipe.
/// With `btf`, the program is loaded with BTF for its function.
fn record(
    perf: &Path,
    fx: &Fixture,
    name: &str,
    runs: u32,
    pipe: bool,
    btf: bool,
) -> (PathBuf, Loaded) {
    let loader = build_loader(fx);
    let data = fx.path(if pipe { "pipe.data" } else { "perf.data" });
    let info = fx.path("loaded.txt");
    let mut cmd = Command::new(perf);
    cmd.args(["record", "-q", "-e", "cpu-clock", "-a", "-o"]);
    if pipe {
        cmd.arg("-").stdout(std::fs::File::create(&data).unwrap());
    } else {
        cmd.arg(&data);
    }
    cmd.arg("--")
        .arg(&loader)
        .arg(name)
        .arg(runs.to_string())
        .arg(&info);
    if btf {
        cmd.arg("btf");
    }
    let out = cmd.stderr(Stdio::piped()).output().unwrap();
    assert!(
        out.status.success(),
        "perf record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (data, read_loaded(&info, name))
}

fn btfkit_perf_json(file: &Path, extra: &[&str]) -> Value {
    let out = Command::new(BTFKIT)
        .arg("perf")
        .arg(file)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "btfkit perf failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A PERF_RECORD_KSYMBOL line of `perf report -D`:
/// `CPU TIME OFFSET [SIZE]: PERF_RECORD_KSYMBOL addr A len L type T flags F name N`.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct DumpKsym {
    time: u64,
    offset: u64,
    addr: u64,
    len: u64,
    unregister: bool,
    name: String,
}

/// A PERF_RECORD_BPF_EVENT line: `... PERF_RECORD_BPF_EVENT type 1, flags 0, id 100`.
#[derive(Debug)]
struct DumpBpf {
    time: u64,
    kind: u64,
    id: u64,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

fn perf_dump(perf: &Path, file: &Path) -> (Vec<DumpKsym>, Vec<DumpBpf>) {
    let out = testkit::run_ok(
        Command::new(perf)
            .arg("report")
            .arg("-D")
            .arg("-i")
            .arg(file),
    );
    let text = String::from_utf8_lossy(&out);
    let mut ksyms = Vec::new();
    let mut bpf = Vec::new();
    for line in text.lines() {
        let Some((prefix, rest)) = line.split_once(": PERF_RECORD_") else {
            continue;
        };
        if !rest.starts_with("KSYMBOL ") && !rest.starts_with("BPF_EVENT ") {
            continue;
        }
        let p: Vec<&str> = prefix.split_whitespace().collect();
        assert!(p.len() >= 3, "no CPU, time and offset: {line}");
        let (time, offset) = (p[1].parse::<u64>().unwrap(), hex(p[2]));
        let f: Vec<&str> = rest.split_whitespace().collect();
        if let Some(kv) = rest.strip_prefix("KSYMBOL ") {
            let v: Vec<&str> = kv.split_whitespace().collect();
            assert_eq!(v[0], "addr", "{line}");
            ksyms.push(DumpKsym {
                time,
                offset,
                addr: hex(v[1]),
                len: v[3].parse().unwrap(),
                unregister: hex(v[7]) & 1 != 0,
                name: v[9].to_owned(),
            });
        } else if f.first() == Some(&"BPF_EVENT") {
            bpf.push(DumpBpf {
                time,
                kind: f[2].trim_end_matches(',').parse().unwrap(),
                id: f[6].parse().unwrap(),
            });
        }
    }
    (ksyms, bpf)
}

fn u(v: &Value) -> Option<u64> {
    v.as_u64()
}

/// btfkit's lifetimes give exactly perf's KSYMBOL records: each register
/// and unregister, at the same time and file offset; and our program's
/// lifetime is where the kernel put it, with its id from BPF_EVENT.
fn check_against_dump(perf: &Path, file: &Path, loaded: &Loaded, format: &str) {
    let doc = btfkit_perf_json(file, &[]);
    assert_eq!(doc["format"], format);
    let (dump, bpf) = perf_dump(perf, file);

    let ours: Vec<&DumpKsym> = dump.iter().filter(|k| k.name == loaded.symbol).collect();
    assert_eq!(ours.len(), 2, "perf report -D: {ours:?}");
    assert!(!ours[0].unregister && ours[1].unregister, "{ours:?}");
    for k in &ours {
        assert_eq!(
            (k.addr, k.len),
            (loaded.addr, loaded.len),
            "perf vs bpf_prog_info"
        );
    }

    let symbols = doc["symbols"].as_array().unwrap();
    let sym = symbols
        .iter()
        .find(|s| s["name"] == loaded.symbol.as_str())
        .unwrap_or_else(|| panic!("{} not in {symbols:#?}", loaded.symbol));
    assert_eq!(sym["addr"], format!("{:#x}", loaded.addr));
    assert_eq!(u(&sym["len"]), Some(loaded.len));
    assert_eq!(sym["type"], "bpf");
    assert_eq!(sym["end"], "unregistered");
    assert_eq!(u(&sym["bpf_prog_id"]), Some(loaded.id));
    assert_eq!(sym["bpf_tag"], loaded.tag.as_str());

    // Every KSYMBOL record, both ways, matched by file offset.
    let mut ours_all: Vec<DumpKsym> = Vec::new();
    for s in symbols {
        let addr = hex(s["addr"].as_str().unwrap());
        let name = s["name"].as_str().unwrap().to_owned();
        let len = u(&s["len"]).unwrap();
        for (offset_key, time_key, unregister) in [
            ("register_offset", "registered", false),
            ("unregister_offset", "unregistered", true),
        ] {
            if let Some(off) = s[offset_key].as_str() {
                ours_all.push(DumpKsym {
                    time: u(&s[time_key]).unwrap(),
                    offset: hex(off),
                    addr,
                    len,
                    unregister,
                    name: name.clone(),
                });
            }
        }
    }
    // For a stream, perf counts offsets after its 16-byte pipe header;
    // btfkit gives the position in the file.
    let header = if format == "pipe" { 16 } else { 0 };
    assert_eq!(
        ours_all.len(),
        dump.len(),
        "{ours_all:#?}\nvs perf report -D\n{dump:#?}"
    );
    for theirs in &dump {
        let ours = ours_all
            .iter()
            .find(|o| o.offset == theirs.offset + header)
            .unwrap_or_else(|| panic!("perf's {theirs:?} not in btfkit's {ours_all:#?}"));
        assert_eq!(
            (&ours.name, ours.addr, ours.len, ours.unregister),
            (&theirs.name, theirs.addr, theirs.len, theirs.unregister)
        );
        if theirs.time == 0 {
            // perf read the trailer backward from an inflated header.size
            // (another listener was open, see
            // perf_reads_sample_id_forward_when_size_is_inflated).
            assert_ne!(ours.time, 0, "{ours:?}");
        } else {
            assert_eq!(ours.time, theirs.time, "{theirs:?}");
        }
    }

    let prog = doc["bpf_programs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| u(&p["id"]) == Some(loaded.id))
        .expect("our program in bpf_programs");
    assert_eq!(prog["tag"], loaded.tag.as_str());
    let ev = |kind| {
        bpf.iter()
            .find(|b| b.id == loaded.id && b.kind == kind)
            .unwrap_or_else(|| panic!("no BPF_EVENT type {kind} for id {}", loaded.id))
            .time
    };
    for (key, kind) in [("loaded", 1), ("unloaded", 2)] {
        let theirs = ev(kind);
        if theirs != 0 {
            assert_eq!(u(&prog[key]), Some(theirs), "{key}");
        }
    }
}

#[test]
fn perf_ksymbol_matches_perf_report_dump() {
    let _serial = one_listener_at_a_time();
    let Some(()) = testkit::kernel_tier("perf events and BPF on the running kernel (root)") else {
        return;
    };
    let Some(perf) = perf_or_skip() else { return };
    let fx = Fixture::new();
    let (file, loaded) = record(&perf, &fx, "btfkit_file", 0, false, false);
    check_against_dump(&perf, &file, &loaded, "file");
}

#[test]
fn perf_pipe_format_matches_perf_report_dump() {
    let _serial = one_listener_at_a_time();
    let Some(()) = testkit::kernel_tier("perf events and BPF on the running kernel (root)") else {
        return;
    };
    let Some(perf) = perf_or_skip() else { return };
    let fx = Fixture::new();
    let (file, loaded) = record(&perf, &fx, "btfkit_pipe", 0, true, false);
    check_against_dump(&perf, &file, &loaded, "pipe");
}

/// Samples that ran in the BPF program resolve to it through the dynamic
/// symbols, as many as perf report counts; all kernel samples are counted
/// as perf counts them.
#[test]
fn symbolize_bpf_samples_match_perf_report() {
    let _serial = one_listener_at_a_time();
    let Some(()) = testkit::kernel_tier("perf events and BPF on the running kernel (root)") else {
        return;
    };
    let Some(perf) = perf_or_skip() else { return };
    let fx = Fixture::new();
    // ~1 s of the program's loop, so that cpu-clock samples land in it.
    let (file, mut loaded) = record(&perf, &fx, "btfkit_hot", 50, false, true);
    // With BTF, kallsyms names the program after its BTF function.
    loaded.symbol = format!("bpf_prog_{}_btfkit_f", loaded.tag);
    let doc = btfkit_perf_json(&file, &["--symbolize"]);
    // perf saved the program's info and BTF while it ran: its function's
    // prototype comes from them.
    let sym = doc["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == loaded.symbol.as_str())
        .expect("our program in btfkit perf");
    if doc["bpf_btf"].as_array().is_some_and(|b| !b.is_empty()) {
        assert_eq!(sym["btf_prototype"], "int btfkit_f(void)");
    }
    let s = &doc["symbolized"];
    // The program is named after its BTF function or after its prog name,
    // depending on what the kernel had when perf saw it: both carry its tag.
    let prefix = format!("bpf_prog_{}_", loaded.tag);
    let dynamic: u64 = s["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["symbol"].as_str().is_some_and(|n| n.starts_with(&prefix)) && r["source"] == "dynamic"
        })
        .map(|r| u(&r["samples"]).unwrap())
        .sum();

    let out = testkit::run_ok(
        Command::new(&perf)
            .args([
                "report",
                "--stdio",
                "-q",
                "--sort",
                "sym",
                "-F",
                "sample,sym",
                "-i",
            ])
            .arg(&file),
    );
    let text = String::from_utf8_lossy(&out);
    let mut kernel = 0;
    let mut in_prog = 0;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 3 && f[1] == "[k]" {
            let n: u64 = f[0].parse().unwrap();
            kernel += n;
            if f[2].starts_with(&prefix) {
                in_prog += n;
            }
        }
    }
    if in_prog == 0 {
        return testkit::skip("perf report counted no sample inside the BPF program");
    }
    assert_eq!(dynamic, in_prog, "samples in {}", loaded.symbol);
    assert_eq!(u(&s["kernel_samples"]), Some(kernel));
}

#[test]
fn watch_sees_bpf_prog_load_live() {
    let _serial = one_listener_at_a_time();
    let Some(()) = testkit::kernel_tier("perf events and BPF on the running kernel (root)") else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("needs root: CPU-wide perf events and bpf(BPF_PROG_LOAD)");
    }
    let fx = Fixture::new();
    let loader = build_loader(&fx);
    // The duration only bounds the test if the events never come.
    let mut child = Command::new(BTFKIT)
        .args(["watch", "--json", "--duration", "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("watching kernel symbols"), "{line}");

    let info = fx.path("loaded.txt");
    testkit::run_ok(Command::new(&loader).args(["btfkit_watch", "0"]).arg(&info));
    let loaded = read_loaded(&info, "btfkit_watch");

    let mut seen = Vec::new();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let ours = v["name"] == loaded.symbol.as_str()
            || (v["event"]
                .as_str()
                .is_some_and(|e| e.starts_with("bpf_prog_"))
                && u(&v["id"]) == Some(loaded.id));
        if ours {
            seen.push(v);
        }
        if seen.len() == 4 {
            break;
        }
    }
    child.kill().ok();
    child.wait().ok();
    let events: Vec<&str> = seen.iter().map(|v| v["event"].as_str().unwrap()).collect();
    assert_eq!(
        events,
        ["register", "bpf_prog_load", "unregister", "bpf_prog_unload"],
        "{seen:#?}"
    );
    for v in &seen[..1] {
        assert_eq!(v["addr"], format!("{:#x}", loaded.addr));
        assert_eq!(u(&v["len"]), Some(loaded.len));
        assert_eq!(v["type"], "bpf");
    }
    assert_eq!(seen[2]["addr"], format!("{:#x}", loaded.addr));
    assert_eq!(seen[1]["tag"], loaded.tag.as_str());
    let times: Vec<u64> = seen.iter().map(|v| u(&v["time"]).unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
}

#[test]
fn watch_without_privilege_names_perf_event_paranoid() {
    let _serial = one_listener_at_a_time();
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    if paranoid <= 0 {
        return testkit::skip("perf_event_paranoid allows CPU-wide events to everyone");
    }
    if !testkit::is_root() {
        let out = Command::new(BTFKIT)
            .args(["watch", "--duration", "0"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(err.contains("perf_event_paranoid"), "{err}");
        return;
    }
    let Some(setpriv) = testkit::tool_or_skip("setpriv", "util-linux") else {
        return;
    };
    let out = Command::new(setpriv)
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .args([BTFKIT, "watch", "--duration", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("perf_event_paranoid"), "{err}");
}

/// Linux 6.18 grows header.size of KSYMBOL and BPF_EVENT records by the
/// sample_id length of every listener served before (the size is not reset
/// between listeners). perf then reads the trailer backward from the
/// inflated size and gets zeros; btfkit reads it forward from the end of the
/// body. With `btfkit watch` listening during `perf record`, the kernel
/// writes perf's record after the watcher's register record and before the
/// watcher's BPF_EVENT, so that is where perf.data's time must lie.
#[test]
fn perf_reads_sample_id_forward_when_size_is_inflated() {
    let _serial = one_listener_at_a_time();
    let Some(()) = testkit::kernel_tier("perf events and BPF on the running kernel (root)") else {
        return;
    };
    let Some(perf) = perf_or_skip() else { return };
    let fx = Fixture::new();
    let loader = build_loader(&fx);
    let (ready, go, info) = (fx.path("ready"), fx.path("go"), fx.path("loaded.txt"));
    let data = fx.path("perf.data");
    // The workload runs once perf's events are open: it says so, then
    // waits for the watcher before loading the program.
    let script = format!(
        "touch '{}'; while [ ! -e '{}' ]; do sleep 0.05; done; exec '{}' btfkit_infl 0 '{}'",
        ready.display(),
        go.display(),
        loader.display(),
        info.display()
    );
    let mut recorder = Command::new(&perf)
        .args(["record", "-q", "-e", "cpu-clock", "-a", "-o"])
        .arg(&data)
        .args(["--", "sh", "-c", &script])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while !ready.exists() {
        assert!(
            recorder.try_wait().unwrap().is_none(),
            "perf record ended early"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut watch = Command::new(BTFKIT)
        .args(["watch", "--json", "--duration", "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(watch.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("watching"), "{line}");
    std::fs::write(&go, "").unwrap();
    assert!(recorder.wait().unwrap().success());
    let loaded = read_loaded(&info, "btfkit_infl");

    let mut watched = std::collections::HashMap::new();
    for line in BufReader::new(watch.stdout.take().unwrap()).lines() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let ours = v["name"] == loaded.symbol.as_str() || u(&v["id"]) == Some(loaded.id);
        if ours {
            watched.insert(
                v["event"].as_str().unwrap().to_owned(),
                u(&v["time"]).unwrap(),
            );
        }
        if watched.len() == 4 {
            break;
        }
    }
    watch.kill().ok();
    watch.wait().ok();

    let doc = btfkit_perf_json(&data, &[]);
    let sym = doc["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == loaded.symbol.as_str())
        .expect("our program in btfkit perf");
    let (registered, unregistered) = (
        u(&sym["registered"]).unwrap(),
        u(&sym["unregistered"]).unwrap(),
    );
    let (dump, _) = perf_dump(&perf, &data);
    let perf_times: Vec<u64> = dump
        .iter()
        .filter(|k| k.name == loaded.symbol)
        .map(|k| k.time)
        .collect();
    if perf_times.iter().all(|&t| t != 0) {
        // Not inflated (perf's events were served first): perf is right too.
        assert_eq!(perf_times, [registered, unregistered]);
        return;
    }
    assert!(
        watched["register"] <= registered && registered <= watched["bpf_prog_load"],
        "{registered} outside {watched:?}"
    );
    assert!(
        watched["unregister"] <= unregistered && unregistered <= watched["bpf_prog_unload"],
        "{unregistered} outside {watched:?}"
    );
}

#[test]
fn watch_stops_cleanly_on_sigint() {
    let _serial = one_listener_at_a_time();
    let Some(()) = testkit::kernel_tier("perf events and BPF on the running kernel (root)") else {
        return;
    };
    if !testkit::is_root() {
        return testkit::skip("needs root: CPU-wide perf events");
    }
    let mut child = Command::new(BTFKIT)
        .args(["watch", "--duration", "120"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("watching"), "{line}");
    testkit::run_ok(Command::new("kill").args(["-INT", &child.id().to_string()]));
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
}
