//! `btfkit inspect`'s crash-style commands (`rd`, `struct TYPE.member
//! ADDR`, `p/x`, `p/d`), member selection on list walks, linker-script
//! aliases and enum names, against drgn 0.3 with Debian's DWARF on the
//! real dumps of Debian's 6.1 kernel (btfkit with `encode --vars all`
//! BTF); `rd`'s layout is crash's (memory.c's display_memory: the address,
//! two 64-bit words in hex, their bytes as ASCII).

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};

use serde_json::Value as Json;
use testkit::{drgn, dumps};

/// The dumps, drgn, and a BTF with every variable; else a skip.
fn setup() -> Option<(dumps::Dumps, tempfile::TempDir, PathBuf)> {
    let d = dumps::dumps_or_skip()?;
    if !drgn::drgn_or_skip() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let btf = dir.path().join("vars.btf");
    common::encode(&d.kernel.vmlinux, None, true, &btf);
    Some((d, dir, btf))
}

/// btfkit's reply to each line: text, or with `json` each line's "value".
fn inspect(dump: &Path, btf: &Path, json: bool, lines: &[&str]) -> Vec<String> {
    let out = common::inspect(&common::opts(dump, Some(btf)), lines, json);
    assert!(out.ok, "{lines:?}: {}", out.stderr);
    out.stdout.lines().map(str::to_owned).collect()
}

fn json_values(dump: &Path, btf: &Path, lines: &[&str]) -> Vec<Json> {
    let v: Vec<Json> = inspect(dump, btf, true, lines)
        .iter()
        .map(|l| serde_json::from_str::<Json>(l).unwrap()["value"].clone())
        .collect();
    assert_eq!(v.len(), lines.len());
    v
}

/// drgn's answer: one JSON line per line of Python (with `prog`, the
/// helpers and `json` in scope) on stdin.
fn drgn_json(d: &dumps::Dumps, exprs: &[&str]) -> Vec<Json> {
    let script = "import json\n\
        from drgn import Object\n\
        from drgn.helpers.linux.list import list_for_each_entry\n\
        for line in sys.stdin:\n    print(json.dumps(eval(line)))\n";
    let input: String = exprs.iter().map(|e| format!("{e}\n")).collect();
    drgn::run(&d.elf, &d.kernel.vmlinux, &[], script, &input)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// crash's rd layout of `bytes` read at `addr` (see the module documentation).
fn crash_rd(addr: u64, bytes: &[u8]) -> Vec<String> {
    bytes
        .chunks(16)
        .enumerate()
        .map(|(i, line)| {
            let words: Vec<String> = line
                .chunks(8)
                .map(|w| format!("{:016x} ", u64::from_le_bytes(w.try_into().unwrap())))
                .collect();
            let ascii: String = line
                .iter()
                .map(|&b| {
                    if (0x20..0x7f).contains(&b) {
                        b as char
                    } else {
                        '.'
                    }
                })
                .collect();
            format!(
                "{:016x}:  {:<34}  {ascii}",
                addr + i as u64 * 16,
                words.concat()
            )
        })
        .collect()
}

#[test]
fn rd_equals_crash_layout_of_drgn_read() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some((d, _dir, btf)) = setup() else {
        return;
    };
    // (btfkit's rd line, drgn's address, words)
    let cases = [
        ("rd jiffies", "prog.symbol('jiffies').address", 1),
        ("rd jiffies 3", "prog.symbol('jiffies').address", 3),
        ("rd init_task.comm 2", "prog['init_task'].comm.address_", 2),
        ("rd &init_task 5", "prog['init_task'].address_", 5),
        (
            "rd init_task.tasks.next 4",
            "prog['init_task'].tasks.next.value_()",
            4,
        ),
    ];
    let exprs: Vec<String> = cases
        .iter()
        .map(|(_, a, n)| format!("[{a}, list(prog.read({a}, {n} * 8))]"))
        .collect();
    let theirs = drgn_json(&d, &exprs.iter().map(String::as_str).collect::<Vec<_>>());
    for (format, dump) in d.all() {
        for ((line, _, _), want) in cases.iter().zip(&theirs) {
            let addr = want[0].as_u64().unwrap();
            let bytes: Vec<u8> = want[1]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap() as u8)
                .collect();
            let ours = inspect(dump, &btf, false, &[line]);
            assert_eq!(ours, crash_rd(addr, &bytes), "{format}: {line}");
        }
        // Its address with or without 0x, and the JSON's words as strings.
        let j = json_values(dump, &btf, &["rd jiffies 2"]);
        let a = j[0]["address"].as_str().unwrap();
        let bare = inspect(dump, &btf, false, &[&format!("rd {} 2", &a[2..])]);
        assert_eq!(
            bare,
            inspect(dump, &btf, false, &["rd jiffies 2"]),
            "{format}"
        );
        assert_eq!(j[0]["words"].as_array().unwrap().len(), 2, "{format}");
    }
}

#[test]
fn struct_members_at_bare_hex_addresses_equal_drgn() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some((d, _dir, btf)) = setup() else {
        return;
    };
    let want = drgn_json(
        &d,
        &["[[hex(t.value_()), t.pid.value_(), t.comm.string_().decode(), t.prio.value_()] \
           for t in list_for_each_entry('struct task_struct', prog['init_task'].tasks.address_of_(), 'tasks')]"],
    )
    .remove(0);
    let tasks = want.as_array().unwrap();
    assert!(tasks.len() > 40, "{want}");
    for (format, dump) in d.all() {
        let lines: Vec<String> = tasks
            .iter()
            .map(|t| {
                let hex = t[0].as_str().unwrap().trim_start_matches("0x").to_owned();
                format!("struct task_struct.pid,comm,prio {hex}")
            })
            .collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let ours = json_values(dump, &btf, &refs);
        for (o, t) in ours.iter().zip(tasks) {
            assert_eq!(
                (&o["pid"], &o["comm"], &o["prio"]),
                (&t[1], &t[2], &t[3]),
                "{format}: {t}"
            );
        }
        let text = inspect(dump, &btf, false, &[&lines[0]]);
        assert_eq!(
            text,
            [
                format!(".pid = (pid_t){}", tasks[0][1]),
                format!(".comm = (char [16]){}", tasks[0][2]),
                format!(".prio = (int){}", tasks[0][3]),
            ],
            "{format}"
        );
        // A bare hex address is the same as with 0x.
        let hex = tasks[1][0].as_str().unwrap();
        let both = json_values(
            dump,
            &btf,
            &[
                &format!("struct task_struct {}", &hex[2..]),
                &format!("struct task_struct {hex}"),
            ],
        );
        assert_eq!(both[0], both[1], "{format}");
        assert_eq!(both[0]["pid"], tasks[1][1], "{format}");
    }
}

#[test]
fn walk_member_selection_equals_drgn_list_for_each_entry() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some((d, _dir, btf)) = setup() else {
        return;
    };
    let walk = "list_for_each_entry(struct task_struct, &init_task.tasks, tasks)";
    let want = drgn_json(
        &d,
        &[
            "[t.comm.string_().decode() for t in list_for_each_entry('struct task_struct', prog['init_task'].tasks.address_of_(), 'tasks')]",
            "[t.se.load.weight.value_() for t in list_for_each_entry('struct task_struct', prog['init_task'].tasks.address_of_(), 'tasks')]",
        ],
    );
    for (format, dump) in d.all() {
        let ours = json_values(
            dump,
            &btf,
            &[&format!("{walk}->comm"), &format!("{walk}->se.load.weight")],
        );
        assert_eq!(ours, want, "{format}");
        let text = inspect(dump, &btf, false, &[&format!("{walk}->comm")]);
        let comms: Vec<String> = want[0]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| format!("(char [16]){c}"))
            .collect();
        assert_eq!(text, comms, "{format}: one line per task");
    }
}

/// `jiffies` (a linker-script alias of `jiffies_64`: a symbol without a
/// BTF VAR) reads as its variable; enums print their enumerator's name in
/// text and JSON, as drgn's `str()` and `Object` do.
#[test]
fn jiffies_alias_and_enum_names_equal_drgn() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some((d, _dir, btf)) = setup() else {
        return;
    };
    let want = drgn_json(
        &d,
        &[
            "prog['jiffies'].value_()",
            "hex(prog['jiffies'].address_)",
            "str(prog['system_state'])",
            "next(e.name for e in prog['system_state'].type_.enumerators if e.value == prog['system_state'].value_())",
        ],
    );
    assert_eq!(want[3], "SYSTEM_RUNNING");
    for (format, dump) in d.all() {
        let j = json_values(dump, &btf, &["jiffies", "&jiffies", "system_state"]);
        assert_eq!(j[0], want[0], "{format}: jiffies");
        assert_eq!(j[1], want[1], "{format}: &jiffies");
        assert_eq!(j[2], want[3], "{format}: system_state");
        let t = inspect(dump, &btf, false, &["system_state"]);
        assert_eq!(t[0], want[2].as_str().unwrap(), "{format}");
    }
}

/// `p/x` and `p/d` against drgn's `format_(integer_base=16 | 10)`, without
/// symbols or dereferencing (gdb's and crash's p/x print a pointer's value).
#[test]
fn p_x_and_p_d_equal_drgn_format_integer_base() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some((d, _dir, btf)) = setup() else {
        return;
    };
    let cases = [
        ("p/x jiffies_64", "prog['jiffies_64']", 16),
        (
            "p/x init_task.thread_info",
            "prog['init_task'].thread_info",
            16,
        ),
        ("p/x init_task.tasks", "prog['init_task'].tasks", 16),
        ("p/x init_task.prio", "prog['init_task'].prio", 16),
        (
            "p/d init_task.thread_info",
            "prog['init_task'].thread_info",
            10,
        ),
        ("p/d init_task.prio", "prog['init_task'].prio", 10),
    ];
    let exprs: Vec<String> = cases
        .iter()
        .map(|(_, o, base)| {
            format!("{o}.format_(integer_base={base}, symbolize=False, dereference=False)")
        })
        .collect();
    let want = drgn_json(&d, &exprs.iter().map(String::as_str).collect::<Vec<_>>());
    for (format, dump) in d.all() {
        for ((line, _, _), w) in cases.iter().zip(&want) {
            let ours = inspect(dump, &btf, false, &[line]).join("\n");
            assert_eq!(ours, w.as_str().unwrap(), "{format}: {line}");
        }
    }
}

/// jq 1.6 reads JSON numbers as doubles and rounds integers above 2^53,
/// which kernel addresses are: every address in `inspect --json` is a
/// "0x..." string, and no reply of these commands holds a number jq
/// would round.
#[test]
fn inspect_json_addresses_are_hex_strings_jq_cannot_round() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some((d, _dir, btf)) = setup() else {
        return;
    };
    const ADDRESS_KEYS: &[&str] = &[
        "task", "address", "base", "module", "sp", "pc", "at", "btf", "data",
    ];
    fn walk(v: &Json, key: &str, path: &str, found: &mut usize) {
        match v {
            Json::Object(m) => {
                for (k, x) in m {
                    walk(x, k, &format!("{path}.{k}"), found);
                }
            }
            Json::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(x, key, &format!("{path}[{i}]"), found);
                }
            }
            Json::Number(n) => {
                assert!(
                    n.as_u64().is_none_or(|x| x <= 1 << 53)
                        && n.as_i64().is_none_or(|x| x.unsigned_abs() <= 1 << 53),
                    "{path}: {n} is rounded by jq 1.6"
                );
                assert!(
                    !ADDRESS_KEYS.contains(&key) || n.as_u64().is_some_and(|x| x < 1 << 32),
                    "{path}: an address as a number"
                );
            }
            Json::String(s) if ADDRESS_KEYS.contains(&key) && s.starts_with("0x") => {
                assert!(u64::from_str_radix(&s[2..], 16).is_ok(), "{path}: {s}");
                *found += 1;
            }
            _ => {}
        }
    }
    let lines = [
        "ps",
        "bt -a",
        "mod",
        "sym do_nanosleep",
        "struct -o task_struct &init_task",
        "rd jiffies 4",
        "&init_task",
        "init_task.tasks",
        "list_for_each_entry(struct task_struct, &init_task.tasks, tasks)",
    ];
    let values = json_values(&d.elf, &btf, &lines);
    let mut found = 0;
    for (line, v) in lines.iter().zip(&values) {
        walk(v, "", line, &mut found);
    }
    assert!(found > 100, "{found} addresses");
    // Pointer values are addresses too.
    assert!(
        values[6].as_str().is_some_and(|s| s.starts_with("0xffff")),
        "{}",
        values[6]
    );
    assert!(
        values[7]["next"]
            .as_str()
            .is_some_and(|s| s.starts_with("0xffff")),
        "{}",
        values[7]
    );
}
