//! `bt`, `ps` on a real dump with chosen bytes corrupted (a wrapper in
//! front of the dump's memory): corrupt ORC entries, a saved stack pointer
//! into unmapped memory, a bad return address, a task list that loops.
//! The oracle is the same dump uncorrupted: every task the corruption does
//! not touch unwinds as before; the ones it touches say what went wrong
//! and where; nothing panics or hangs. And a CPU's registers set at a
//! function's first instruction: `bt` shows the argument registers by the
//! names of the function's BTF prototype.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use inspect::open::Options;
use inspect::Program;
use kmem::{Memory, Note};
use serde_json::Value as Json;
use testkit::dumps;

/// A dump's memory with some bytes replaced.
struct Patched {
    inner: Box<dyn Memory>,
    patches: Vec<(u64, Vec<u8>)>,
    /// Notes in place of the dump's, when set.
    notes: Option<Vec<Note>>,
}

impl Memory for Patched {
    fn read_phys(&self, addr: u64, buf: &mut [u8]) -> kmem::Result<()> {
        self.inner.read_phys(addr, buf)
    }
    fn read_virt(&self, addr: u64, buf: &mut [u8]) -> kmem::Result<()> {
        self.inner.read_virt(addr, buf)?;
        let end = addr + buf.len() as u64;
        for (at, bytes) in &self.patches {
            for (i, b) in bytes.iter().enumerate() {
                let a = at + i as u64;
                if a >= addr && a < end {
                    buf[(a - addr) as usize] = *b;
                }
            }
        }
        Ok(())
    }
    fn notes(&self) -> &[Note] {
        self.notes.as_deref().unwrap_or(self.inner.notes())
    }
}

fn open(dump: &Path, patches: Vec<(u64, Vec<u8>)>) -> Program {
    open_with_notes(dump, patches, None)
}

fn open_with_notes(dump: &Path, patches: Vec<(u64, Vec<u8>)>, notes: Option<Vec<Note>>) -> Program {
    let opts = Options {
        vmcore: Some(dump.to_owned()),
        ..Options::default()
    };
    let mut prog = inspect::open::open(&opts).unwrap();
    prog.map_memory(|inner| {
        Box::new(Patched {
            inner,
            patches,
            notes,
        })
    });
    prog
}

fn run(prog: &mut Program, line: &str) -> Json {
    inspect::commands::run_line(prog, line).unwrap().json
}

fn tasks(bt: &Json) -> Vec<Json> {
    bt["tasks"].as_array().unwrap().clone()
}

/// An address in btfkit's JSON: a "0x..." string.
fn addr(j: &Json) -> u64 {
    let s = j.as_str().unwrap_or_else(|| panic!("not an address: {j}"));
    u64::from_str_radix(s.strip_prefix("0x").unwrap(), 16).unwrap()
}

fn task_by_comm<'a>(ts: &'a [Json], comm: &str) -> &'a Json {
    ts.iter().find(|t| t["comm"] == comm).unwrap()
}

#[test]
fn bt_with_corrupt_orc_entries_stops_those_frames_and_goes_on() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let mut clean = open(&d.elf, Vec::new());
    let before = tasks(&run(&mut clean, "foreach bt"));
    // Every ORC entry of do_nanosleep gets type 3, which 6.1 does not have:
    // the guest's `sleep`s sleep there; no other task passes through it.
    let sym = |n: &str| clean.symbol(n).unwrap();
    let func = clean.symbols().by_name("do_nanosleep").next().unwrap();
    let (lo, hi) = (func.addr, func.addr + func.size.unwrap());
    let (ip, stop, entries) = (
        sym("__start_orc_unwind_ip"),
        sym("__stop_orc_unwind_ip"),
        sym("__start_orc_unwind"),
    );
    let table = clean.memory().read_vec(ip, (stop - ip) as usize).unwrap();
    let mut patches = Vec::new();
    for (i, rel) in table.chunks_exact(4).enumerate() {
        let at = ip + i as u64 * 4;
        let rel = i32::from_le_bytes(rel.try_into().unwrap());
        let target = at.wrapping_add_signed(i64::from(rel));
        if target >= lo && target < hi {
            patches.push((entries + i as u64 * 6, vec![8, 0, 0, 0, 0x05, 0x03]));
        }
    }
    assert!(!patches.is_empty());
    let mut bad = open(&d.elf, patches);
    let after = tasks(&run(&mut bad, "foreach bt"));
    assert_eq!(after.len(), before.len());
    let mut stopped = 0;
    for (b, a) in before.iter().zip(&after) {
        let frames = b["frames"].as_array().unwrap();
        match frames.iter().position(|f| f["symbol"] == "do_nanosleep") {
            // The frames up to do_nanosleep's stay; the trace ends there.
            Some(i) => {
                assert_eq!(a["frames"].as_array().unwrap()[..], frames[..=i], "{a}");
                assert_eq!(a["end"]["ok"], false);
                let why = a["end"]["why"].as_str().unwrap();
                assert!(why.contains("ORC entry of unknown type 3"), "{why}");
                stopped += 1;
            }
            None => assert_eq!(a["frames"], b["frames"], "a task not in do_nanosleep"),
        }
    }
    // btfkit-sleeper's `sleep 1000` (and the init script's `sleep 100000`
    // when it already runs at the moment of the dump).
    assert!(stopped >= 1, "{stopped}");
    // The reader, asleep in a FIFO read, keeps its whole trace.
    let reader = task_by_comm(&after, "btfkit-reader");
    assert_eq!(reader["end"]["ok"], true, "{reader}");
    assert!(reader["frames"].as_array().unwrap().len() > 3, "{reader}");
}

#[test]
fn bt_with_stack_pointer_into_unmapped_memory_says_so() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let mut clean = open(&d.elf, Vec::new());
    let before = tasks(&run(&mut clean, "foreach bt"));
    let sleeper = task_by_comm(&before, "btfkit-sleeper");
    let addr = addr(&sleeper["task"]);
    let (sp_off, _) = clean
        .member_offset("struct task_struct", "thread.sp")
        .unwrap();
    let unmapped = 0xffff_ffff_ff00_0000u64;
    assert!(clean.memory().read_u64(unmapped).is_err(), "not unmapped");
    // And a return address with no ORC and no symbol in the reader's stack.
    let reader = task_by_comm(&before, "btfkit-reader");
    let ret_slot = self::addr(&reader["frames"][1]["sp"]) - 8;
    let patches = vec![
        (addr + sp_off, unmapped.to_le_bytes().to_vec()),
        (ret_slot, 0xffff_ffff_0000_1234u64.to_le_bytes().to_vec()),
    ];
    let mut bad = open(&d.elf, patches);
    let after = tasks(&run(&mut bad, "foreach bt"));
    assert_eq!(after.len(), before.len());
    let s = task_by_comm(&after, "btfkit-sleeper");
    assert_eq!(s["frames"], Json::Array(vec![]));
    let why = s["end"]["why"].as_str().unwrap();
    assert!(
        why.contains("thread.sp") && why.contains("ffffffffff000000"),
        "{why}"
    );
    let r = task_by_comm(&after, "btfkit-reader");
    let frames = r["frames"].as_array().unwrap();
    assert_eq!(frames[0], reader["frames"][0]);
    assert_eq!(frames[1]["pc"], "0xffffffff00001234");
    // From there the frame-pointer guess, marked, or a stop that says why.
    assert!(
        frames.len() <= inspect::unwind::MAX_FRAMES
            && (frames.iter().any(|f| f["guessed"] == true) || r["end"]["ok"] == false),
        "{r}"
    );
    for (b, a) in before.iter().zip(&after) {
        if !["btfkit-sleeper", "btfkit-reader"].contains(&b["comm"].as_str().unwrap()) {
            assert_eq!(a, b);
        }
    }
    let text = inspect::commands::run_line(&mut bad, "foreach bt")
        .unwrap()
        .text;
    assert!(
        text.contains("unwinding stopped: saved registers at thread.sp"),
        "{text}"
    );
}

#[test]
fn ps_and_bt_with_a_task_list_that_loops_stop_and_say_where() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let mut clean = open(&d.elf, Vec::new());
    let ps = run(&mut clean, "ps");
    let all = ps["tasks"].as_array().unwrap();
    // Each CPU's idle task comes first; the list of processes after them.
    let idle = all.iter().take_while(|t| t["pid"] == 0).count();
    assert!(idle >= 1, "{ps}");
    let (tasks_off, _) = clean.member_offset("struct task_struct", "tasks").unwrap();
    // The tenth process's `tasks.next` points back at the third's.
    let (third, tenth) = (addr(&all[idle + 2]["task"]), addr(&all[idle + 9]["task"]));
    let patches = vec![(
        tenth + tasks_off,
        (third + tasks_off).to_le_bytes().to_vec(),
    )];
    let mut bad = open(&d.elf, patches);
    let ps = run(&mut bad, "ps");
    let problems = ps["problems"].to_string();
    assert!(
        problems.contains(&format!("task list loops at {:#x}", third + tasks_off)),
        "{problems}"
    );
    assert_eq!(ps["tasks"].as_array().unwrap().len(), idle + 10);
    let bt = run(&mut bad, "foreach bt");
    assert_eq!(bt["tasks"].as_array().unwrap().len(), idle + 10);
    assert!(bt["problems"].to_string().contains("task list loops"));
}

#[test]
fn bt_at_a_function_entry_shows_argument_registers_by_btf_prototype() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let clean = open(&d.elf, Vec::new());
    let entry = clean.symbol("do_nanosleep").unwrap();
    // CPU 1's note, its rip at do_nanosleep's first instruction and its
    // first two argument registers (rdi, rsi) set.
    let mut notes = clean.memory().notes().to_vec();
    let cpu1 = notes
        .iter_mut()
        .filter(|n| n.name == "CORE" && n.ntype == kmem::prstatus::NT_PRSTATUS)
        .nth(1)
        .unwrap();
    let mut set = |word: usize, v: u64| {
        cpu1.desc[112 + word * 8..120 + word * 8].copy_from_slice(&v.to_le_bytes())
    };
    // Kernel mode (cs): the task CPU 1 ran may have been in user mode.
    set(16, entry);
    set(17, 0x10);
    set(14, 0xffff_8880_1234_5678);
    set(13, 1);
    let mut prog = open_with_notes(&d.elf, Vec::new(), Some(notes));
    let bt = run(&mut prog, "bt -c 1");
    let f0 = &bt["tasks"][0]["frames"][0];
    assert_eq!(f0["symbol"], "do_nanosleep", "{bt}");
    assert_eq!(f0["offset"], 0);
    let proto = f0["prototype"].as_str().unwrap();
    assert!(
        proto.contains("do_nanosleep(struct hrtimer_sleeper *t, enum hrtimer_mode mode)"),
        "{proto}"
    );
    assert_eq!(
        f0["arguments"],
        serde_json::json!({ "t": "0xffff888012345678", "mode": "0x1" })
    );
    let text = inspect::commands::run_line(&mut prog, "bt -c 1")
        .unwrap()
        .text;
    assert!(text.contains("(t=0xffff888012345678, mode=0x1)"), "{text}");
}
