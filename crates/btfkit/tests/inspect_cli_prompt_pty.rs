//! `btfkit inspect`'s interactive prompt under a real terminal: btfkit runs
//! on the slave side of a pseudo-terminal (libc `openpty`), the test types
//! on the master side like a person would (Tab, the up arrow, Ctrl-D) on a
//! cached dump of Debian's 6.1 kernel. The oracle for every value is
//! btfkit's own non-interactive output for the same expressions (compared
//! with drgn in crates/inspect/tests/values_drgn.rs): what the prompt adds
//! is the terminal, and that is what this test checks.

#![allow(clippy::unwrap_used)]

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use testkit::dumps;

fn btfkit() -> &'static str {
    env!("CARGO_BIN_EXE_btfkit")
}

/// Everything btfkit wrote to the terminal so far, and whether it closed.
#[derive(Default)]
struct Screen {
    text: Mutex<(String, bool)>,
    grew: Condvar,
}

/// btfkit on a pseudo-terminal.
struct Session {
    child: Child,
    master: File,
    screen: Arc<Screen>,
    /// Where in the output the next `expect` starts looking.
    seen: usize,
}

impl Session {
    /// btfkit with these environment variables set.
    fn start_with(args: &[&std::ffi::OsStr], env: &[(&str, &std::ffi::OsStr)]) -> Session {
        let (mut master, mut slave) = (0, 0);
        let size = libc::winsize {
            ws_row: 40,
            ws_col: 200,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two descriptors we then own.
        let r = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: fresh descriptors from openpty, owned from here on.
        let (master, slave) = unsafe { (File::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut cmd = Command::new(btfkit());
        cmd.args(args)
            .envs(env.iter().copied())
            .env("TERM", "xterm")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec: a new
        // session whose controlling terminal is the pty (stdin).
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let screen = Arc::new(Screen::default());
        let mut reader = master.try_clone().unwrap();
        let s = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                // EIO once the child has closed the terminal.
                let n = reader.read(&mut buf).unwrap_or(0);
                let mut g = s.text.lock().unwrap();
                if n == 0 {
                    g.1 = true;
                } else {
                    g.0.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
                s.grew.notify_all();
                if n == 0 {
                    return;
                }
            }
        });
        Session {
            child,
            master,
            screen,
            seen: 0,
        }
    }

    fn send(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).unwrap();
    }

    /// Waits for `needle` after what was already matched; the wait is a
    /// guard against a hang, not a measure (a failure shows the screen).
    fn expect(&mut self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut g = self.screen.text.lock().unwrap();
        loop {
            if let Some(i) = g.0[self.seen..].find(needle) {
                self.seen += i + needle.len();
                return;
            }
            let now = Instant::now();
            assert!(
                !g.1 && now < deadline,
                "never saw {needle:?} on the terminal; after the last match it shows:\n{:?}",
                &g.0[self.seen..]
            );
            g = self.screen.grew.wait_timeout(g, deadline - now).unwrap().0;
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The values btfkit prints for `exprs` without a terminal.
fn batch(dump: &Path, btf: &Path, exprs: &[&str]) -> Vec<String> {
    let out = testkit::run_ok(
        Command::new(btfkit())
            .arg("inspect")
            .arg(dump)
            .arg("--btf")
            .arg(btf)
            .args(exprs),
    );
    let lines: Vec<String> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), exprs.len(), "{lines:?}");
    lines
}

#[test]
fn inspect_prompt_on_a_pty_completes_recalls_history_survives_errors_and_ends_on_ctrl_d() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let btf = dir.path().join("vmlinux.btf");
    testkit::run_ok(
        Command::new(btfkit())
            .arg("encode")
            .arg(&d.kernel.vmlinux)
            .args(["--vars", "all", "-o"])
            .arg(&btf),
    );
    let want = batch(
        &d.elf,
        &btf,
        &[
            "init_task.comm",
            "init_uts_ns.name.sysname",
            "sizeof(struct mm_struct)",
        ],
    );
    // History goes to a folder of the test's, not the user's.
    let state = dir.path().join("state");
    let mut s = Session::start_with(
        &[
            "inspect".as_ref(),
            d.elf.as_os_str(),
            "--btf".as_ref(),
            btf.as_os_str(),
        ],
        &[("XDG_STATE_HOME", state.as_os_str())],
    );
    s.expect("btfkit> ");

    // An expression typed in full prints its value.
    s.send("init_task.comm\r");
    s.expect(&want[0]);
    s.expect("btfkit> ");

    // Tab completes a variable name, then a member name after '.'.
    s.send("init_uts_n\t");
    s.expect("init_uts_ns");
    s.send(".name.sysn\t");
    s.expect("sysname");
    s.send("\r");
    s.expect(&want[1]);
    s.expect("btfkit> ");

    // Tab completes a type name.
    s.send("sizeof(struct mm_stru\t");
    s.expect("mm_struct");
    s.send(")\r");
    s.expect(&want[2]);
    s.expect("btfkit> ");

    // An error is reported and the session goes on.
    s.send("no_such_variable_here\r");
    s.expect("error: ");
    s.expect("no_such_variable_here");
    s.expect("btfkit> ");

    // The up arrow walks back through history: two steps back from the
    // error is the sizeof line.
    s.send("\x1b[A\x1b[A");
    s.expect("sizeof(struct mm_struct)");
    s.send("\r");
    s.expect(&want[2]);
    s.expect("btfkit> ");

    // Ctrl-D on an empty line ends the session with status 0.
    s.send("\x04");
    let status = s.child.wait().unwrap();
    assert!(status.success(), "btfkit inspect ended with {status}");
}

/// The vars BTF for a dump.
fn vars_btf(d: &dumps::Dumps, dir: &Path) -> std::path::PathBuf {
    let btf = dir.join("vmlinux.btf");
    testkit::run_ok(
        Command::new(btfkit())
            .arg("encode")
            .arg(&d.kernel.vmlinux)
            .args(["--vars", "all", "-o"])
            .arg(&btf),
    );
    btf
}

/// crash's habits at the prompt: `q`, `quit` and `exit` end it (status
/// 0); history survives to the next session (in `$XDG_STATE_HOME`);
/// `struct task_st<Tab>` completes to `task_struct` and a second Tab lists
/// the candidates in order; a command btfkit lacks says "unknown command";
/// a reply longer than the terminal (40 rows) goes through `$PAGER`.
#[test]
fn inspect_prompt_quits_keeps_history_lists_completions_and_pages() {
    let Some(()) = testkit::kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel") else {
        return;
    };
    let Some(d) = dumps::dumps_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let btf = vars_btf(&d, dir.path());
    let state = dir.path().join("state");
    let paged = dir.path().join("paged.txt");
    // A pager that marks what it got, so the test sees it went through one.
    let pager = format!("sed 's/^/paged: /' | tee {}", paged.display());
    let env: [(&str, &std::ffi::OsStr); 2] = [
        ("XDG_STATE_HOME", state.as_os_str()),
        ("PAGER", pager.as_ref()),
    ];
    let args: [&std::ffi::OsStr; 4] = [
        "inspect".as_ref(),
        d.elf.as_os_str(),
        "--btf".as_ref(),
        btf.as_os_str(),
    ];
    let want = batch(
        &d.elf,
        &btf,
        &["init_task.pid", "sizeof(struct task_struct)"],
    );

    for quit in ["q", "quit", "exit"] {
        let mut s = Session::start_with(&args, &env);
        s.expect("btfkit> ");
        // Tab completes a struct tag after `struct`.
        s.send("sizeof(struct task_st\t");
        s.expect("task_struct");
        s.send(")\r");
        s.expect(&want[1]);
        s.expect("btfkit> ");
        s.send(&format!("{quit}\r"));
        let status = s.child.wait().unwrap();
        assert!(status.success(), "{quit}: ended with {status}");
    }
    let history = std::fs::read_to_string(state.join("btfkit/inspect_history")).unwrap();
    assert!(
        history.contains("sizeof(struct task_struct)\nq\n"),
        "{history}"
    );

    let mut s = Session::start_with(&args, &env);
    s.expect("btfkit> ");
    // The last session's lines: up twice is its sizeof line (once: exit).
    s.send("\x1b[A\x1b[A");
    s.expect("sizeof(struct task_struct)");
    s.send("\r");
    s.expect(&want[1]);
    s.expect("btfkit> ");

    // Two Tabs list every candidate, sorted.
    s.send("sizeof(struct task_\t\t");
    s.expect("task_group");
    s.expect("task_struct");
    // Ctrl-U drops the line; the next one is typed in its place (not
    // after Enter: keys typed before the next prompt are flushed).
    s.send("\x15vm 1\r");
    s.expect("unknown command \"vm\"");
    s.expect("btfkit> ");

    // `ps` (60 tasks and more) is longer than the 40 rows of the terminal.
    s.send("ps\r");
    s.expect("paged:    PID    PPID  CPU");
    s.expect("btfkit> ");
    s.send("init_task.pid\r");
    s.expect(&want[0]);
    s.expect("btfkit> ");
    s.send("exit\r");
    assert!(s.child.wait().unwrap().success());
    let paged = std::fs::read_to_string(&paged).unwrap();
    assert!(
        paged.contains("swapper/0") && !paged.contains(&want[0]),
        "{paged}"
    );
}
