//! Booting kernels under QEMU for tests: a busybox initramfs whose `/init`
//! runs a test's shell script, a serial console read into a string, and a
//! QMP socket for memory dumps.
//!
//! A guest reports with lines `BTFKIT-RESULT key value` on the console
//! ([`Console::results`]). The generated `/init` installs busybox's applets,
//! mounts proc, sysfs, devtmpfs, debugfs, tracefs and bpffs (a kernel without
//! one of them just lacks it), prints `BTFKIT-GUEST-START`, runs the test's
//! script, prints `BTFKIT-GUEST-END` and ends the machine with `reboot -f`:
//! QEMU runs with `-no-reboot`, so a reboot (or a panic, with `panic=-1`) ends
//! QEMU even in a kernel without ACPI power-off.
//!
//! QEMU runs with TCG and `-nodefaults`: no network device, no display, only
//! the serial console (and the vmcoreinfo device when asked).

use std::collections::BTreeSet;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const BUSYBOX: &str = "/bin/busybox";
const QEMU: &str = "qemu-system-x86_64";

/// QEMU's path, or a skip naming the packages (QEMU and a static busybox,
/// whose applets are the guest's userland). Booting is the kernel tier's:
/// without `BTFKIT_KERNEL_TESTS=1` this skips as [`crate::kernel_tier`] does.
pub fn qemu_or_skip() -> Option<PathBuf> {
    crate::kernel_tier("boots a kernel under QEMU")?;
    let qemu = crate::tool_or_skip(QEMU, "qemu-system-x86")?;
    if !is_static_elf(Path::new(BUSYBOX)) {
        crate::skip(
            "a static /bin/busybox is needed in the guest (apt-get install busybox-static)",
        );
        return None;
    }
    Some(qemu)
}

/// Whether `path` is an ELF without a program interpreter (PT_INTERP).
fn is_static_elf(path: &Path) -> bool {
    let Ok(b) = std::fs::read(path) else {
        return false;
    };
    let u16_at = |o: usize| {
        b.get(o..o + 2)
            .map(|s| u16::from_le_bytes([s[0], s[1]]) as usize)
    };
    let u64_at = |o: usize| {
        b.get(o..o + 8)
            .and_then(|s| s.try_into().ok())
            .map(u64::from_le_bytes)
    };
    if !b.starts_with(b"\x7fELF\x02\x01") {
        return false;
    }
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return false;
    };
    const PT_INTERP: u32 = 3;
    !(0..phnum).any(|i| {
        let at = phoff as usize + i * phentsize;
        b.get(at..at + 4)
            .is_some_and(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) == PT_INTERP)
    })
}

#[derive(Clone)]
enum Entry {
    Dir,
    File { data: Vec<u8>, mode: u32 },
    CharDev { major: u32, minor: u32 },
}

/// An initramfs (newc cpio, uncompressed: every kernel reads it).
#[derive(Clone)]
pub struct Initramfs {
    entries: Vec<(String, Entry)>,
    script: String,
}

impl Default for Initramfs {
    fn default() -> Self {
        Initramfs::new()
    }
}

impl Initramfs {
    pub fn new() -> Initramfs {
        Initramfs {
            entries: Vec::new(),
            script: String::new(),
        }
    }

    /// Adds the host file `host` as `guest_path`, keeping its mode.
    pub fn file(&mut self, guest_path: &str, host: &Path) -> &mut Self {
        let data = std::fs::read(host).unwrap_or_else(|e| panic!("read {}: {e}", host.display()));
        let mode = std::fs::metadata(host)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o644);
        self.bytes(guest_path, &data, mode)
    }

    pub fn bytes(&mut self, guest_path: &str, data: &[u8], mode: u32) -> &mut Self {
        self.entries.push((
            guest_path.trim_start_matches('/').to_string(),
            Entry::File {
                data: data.to_vec(),
                mode,
            },
        ));
        self
    }

    /// Adds an executable and the shared libraries `ldd` lists for it, each
    /// at its host path (a static binary has none).
    pub fn binary(&mut self, guest_path: &str, host: &Path) -> &mut Self {
        self.file(guest_path, host);
        for lib in shared_libraries(host) {
            if !self.has(&lib) {
                self.file(&lib, Path::new(&lib));
            }
        }
        self
    }

    /// Appends to the test's part of `/init` (busybox sh).
    pub fn script(&mut self, sh: &str) -> &mut Self {
        self.script.push_str(sh);
        if !sh.ends_with('\n') {
            self.script.push('\n');
        }
        self
    }

    fn has(&self, guest_path: &str) -> bool {
        let p = guest_path.trim_start_matches('/');
        self.entries.iter().any(|(n, _)| n == p)
    }

    /// Writes the archive: directories first, then `/dev/console` (the kernel
    /// opens it for init before any devtmpfs exists), busybox, `/init`, the
    /// test script and the added files.
    pub fn write(&self, out: &Path) -> io::Result<()> {
        let busybox = std::fs::read(BUSYBOX)?;
        let init = format!(
            "#!/bin/busybox sh\n{}\nsh /btfkit-test.sh\necho BTFKIT-GUEST-END\nsync\nreboot -f\n",
            INIT_SETUP.trim_end()
        );
        let mut files: Vec<(&str, &Entry)> = Vec::new();
        let fixed = [
            (
                "bin/busybox",
                Entry::File {
                    data: busybox,
                    mode: 0o755,
                },
            ),
            (
                "init",
                Entry::File {
                    data: init.into_bytes(),
                    mode: 0o755,
                },
            ),
            (
                "btfkit-test.sh",
                Entry::File {
                    data: self.script.clone().into_bytes(),
                    mode: 0o755,
                },
            ),
            ("dev/console", Entry::CharDev { major: 5, minor: 1 }),
        ];
        for (n, e) in &fixed {
            files.push((n, e));
        }
        for (n, e) in &self.entries {
            files.push((n.as_str(), e));
        }
        let mut dirs = BTreeSet::new();
        for d in [
            "dev", "proc", "sys", "tmp", "run", "bin", "sbin", "usr/bin", "usr/sbin", "mnt",
        ] {
            dirs.insert(d.to_string());
        }
        for (n, _) in &files {
            let mut p = Path::new(n).parent();
            while let Some(d) = p.filter(|d| !d.as_os_str().is_empty()) {
                dirs.insert(d.to_string_lossy().into_owned());
                p = d.parent();
            }
        }
        let mut w = CpioWriter::new(io::BufWriter::new(std::fs::File::create(out)?));
        for d in &dirs {
            w.entry(d, &Entry::Dir)?;
        }
        for (n, e) in files {
            w.entry(n, e)?;
        }
        w.finish()
    }
}

/// What `/init` does before the test's script.
const INIT_SETUP: &str = r#"
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
echo BTFKIT-GUEST-START
"#;

/// The libraries `ldd` lists for `bin` (none for a static binary).
fn shared_libraries(bin: &Path) -> Vec<String> {
    let Ok(out) = Command::new("ldd").arg(bin).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
            // "/lib64/ld-linux-x86-64.so.2 (0x...)"
            let path = match l.split_once("=>") {
                Some((_, rest)) => rest.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| path.to_string())
        })
        .collect()
}

/// newc ("070701") cpio: a 110-byte ASCII header, the NUL-terminated name
/// padded to 4 bytes, the data padded to 4 bytes; "TRAILER!!!" ends it.
struct CpioWriter<W: Write> {
    out: W,
    ino: u32,
}

impl<W: Write> CpioWriter<W> {
    fn new(out: W) -> Self {
        CpioWriter { out, ino: 1 }
    }

    fn entry(&mut self, name: &str, e: &Entry) -> io::Result<()> {
        let (mode, data, rdev): (u32, &[u8], (u32, u32)) = match e {
            Entry::Dir => (0o040755, &[], (0, 0)),
            Entry::File { data, mode } => (0o100000 | mode, data, (0, 0)),
            Entry::CharDev { major, minor } => (0o020600, &[], (*major, *minor)),
        };
        self.record(name, mode, data, rdev)
    }

    fn record(&mut self, name: &str, mode: u32, data: &[u8], rdev: (u32, u32)) -> io::Result<()> {
        let nlink = if mode & 0o170000 == 0o040000 { 2 } else { 1 };
        let header = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino,
            mode,
            0,
            0,
            nlink,
            0,
            data.len(),
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() + 1,
            0
        );
        self.ino += 1;
        self.out.write_all(header.as_bytes())?;
        self.out.write_all(name.as_bytes())?;
        self.out.write_all(&[0])?;
        self.pad(110 + name.len() + 1)?;
        self.out.write_all(data)?;
        self.pad(data.len())
    }

    fn pad(&mut self, len: usize) -> io::Result<()> {
        let n = (4 - len % 4) % 4;
        self.out.write_all(&[0; 3][..n])
    }

    fn finish(mut self) -> io::Result<()> {
        self.record("TRAILER!!!", 0, &[], (0, 0))?;
        self.out.flush()
    }
}

/// How to boot: TCG, `-nodefaults`, serial console on ttyS0.
pub struct Qemu {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    /// Appended to `console=ttyS0 panic=-1`.
    pub append: String,
    pub memory_mb: u32,
    pub cpus: u32,
    /// How long the guest may run before QEMU is killed.
    pub timeout: Duration,
    /// Adds `-device vmcoreinfo` (the guest loads qemu_fw_cfg to fill it).
    pub vmcoreinfo: bool,
    /// More QEMU arguments.
    pub extra: Vec<String>,
}

impl Qemu {
    pub fn new(kernel: &Path, initrd: &Path) -> Qemu {
        Qemu {
            kernel: kernel.to_path_buf(),
            initrd: initrd.to_path_buf(),
            append: String::new(),
            memory_mb: 512,
            cpus: 1,
            timeout: Duration::from_secs(120),
            vmcoreinfo: false,
            extra: Vec::new(),
        }
    }

    fn command(&self) -> Command {
        let mut c = Command::new(QEMU);
        c.args([
            "-accel",
            "tcg",
            "-nodefaults",
            "-display",
            "none",
            "-no-reboot",
        ])
        .args(["-serial", "stdio", "-m", &self.memory_mb.to_string()])
        .args(["-smp", &self.cpus.to_string()])
        .arg("-kernel")
        .arg(&self.kernel)
        .arg("-initrd")
        .arg(&self.initrd)
        .arg("-append")
        .arg(format!("console=ttyS0 panic=-1 {}", self.append).trim_end());
        if self.vmcoreinfo {
            c.args(["-device", "vmcoreinfo"]);
        }
        c.args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Boots to the end of the guest's script and returns the console.
    pub fn run(&self) -> io::Result<Console> {
        let vm = Vm::start(self.command(), None, self.timeout)?;
        vm.finish(self.timeout)
    }

    /// Starts the machine with a QMP socket and returns at once.
    pub fn spawn(&self) -> io::Result<Vm> {
        let dir = tempfile::tempdir()?;
        let sock = dir.path().join("qmp.sock");
        let mut cmd = self.command();
        cmd.arg("-qmp")
            .arg(format!("unix:{},server=on,wait=off", sock.display()));
        let mut vm = Vm::start(cmd, Some(dir), self.timeout)?;
        vm.connect_qmp(&sock)?;
        Ok(vm)
    }
}

/// The serial console's text (`\r` removed).
#[derive(Clone, Debug)]
pub struct Console {
    pub text: String,
}

impl Console {
    /// Every `BTFKIT-RESULT key value` line, in order.
    pub fn results(&self) -> Vec<(String, String)> {
        self.text
            .lines()
            .filter_map(|l| {
                let rest = l.split("BTFKIT-RESULT ").nth(1)?;
                let (k, v) = rest.split_once(' ').unwrap_or((rest, ""));
                Some((k.to_string(), v.trim().to_string()))
            })
            .collect()
    }

    /// The value of the first result named `key`.
    pub fn result(&self, key: &str) -> Option<&str> {
        self.text.lines().find_map(|l| {
            let rest = l.split("BTFKIT-RESULT ").nth(1)?;
            let (k, v) = rest.split_once(' ').unwrap_or((rest, ""));
            (k == key).then_some(v.trim())
        })
    }

    /// Whether the guest's script ran to its end.
    pub fn completed(&self) -> bool {
        self.text.contains("BTFKIT-GUEST-END")
    }
}

/// Text read so far from a child's pipe, and whether the pipe closed.
#[derive(Default)]
struct Sink {
    text: Mutex<(String, bool)>,
    grew: Condvar,
}

fn drain(mut r: impl Read + Send + 'static, sink: Arc<Sink>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            let n = r.read(&mut buf).unwrap_or(0);
            let mut g = sink.text.lock().unwrap_or_else(|e| e.into_inner());
            if n == 0 {
                g.1 = true;
                sink.grew.notify_all();
                return;
            }
            g.0.push_str(&String::from_utf8_lossy(&buf[..n]).replace('\r', ""));
            sink.grew.notify_all();
        }
    });
}

/// A running machine.
pub struct Vm {
    child: Child,
    console: Arc<Sink>,
    stderr: Arc<Sink>,
    qmp: Option<BufReader<UnixStream>>,
    started: Instant,
    timeout: Duration,
    _dir: Option<tempfile::TempDir>,
}

impl Vm {
    fn start(
        mut cmd: Command,
        dir: Option<tempfile::TempDir>,
        timeout: Duration,
    ) -> io::Result<Vm> {
        let mut child = cmd.spawn()?;
        let console = Arc::new(Sink::default());
        let stderr = Arc::new(Sink::default());
        if let Some(out) = child.stdout.take() {
            drain(out, console.clone());
        }
        if let Some(err) = child.stderr.take() {
            drain(err, stderr.clone());
        }
        Ok(Vm {
            child,
            console,
            stderr,
            qmp: None,
            started: Instant::now(),
            timeout,
            _dir: dir,
        })
    }

    fn connect_qmp(&mut self, sock: &Path) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let stream = loop {
            match UnixStream::connect(sock) {
                Ok(s) => break s,
                Err(e) if Instant::now() > deadline => return Err(self.failure(&e.to_string())),
                Err(_) => {
                    if let Ok(Some(status)) = self.child.try_wait() {
                        return Err(self.failure(&format!("QEMU exited: {status}")));
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        };
        let mut r = BufReader::new(stream);
        let mut greeting = String::new();
        r.read_line(&mut greeting)?;
        self.qmp = Some(r);
        self.qmp(serde_json::json!({ "execute": "qmp_capabilities" }))?;
        Ok(())
    }

    /// The console so far.
    pub fn console(&self) -> String {
        self.console
            .text
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// An error carrying what the machine printed, for a test's message.
    fn failure(&self, what: &str) -> io::Error {
        let err = self
            .stderr
            .text
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone();
        io::Error::other(format!(
            "{what}\n--- QEMU stderr ---\n{err}\n--- console ---\n{}",
            self.console()
        ))
    }

    /// Waits until the console shows `needle`.
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        let mut g = self.console.text.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if g.0.contains(needle) {
                return Ok(());
            }
            let now = Instant::now();
            if g.1 || now >= deadline {
                let why = if g.1 { "QEMU exited" } else { "timed out" };
                drop(g);
                return Err(self.failure(&format!("{why} waiting for {needle:?}")));
            }
            g = self
                .console
                .grew
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Sends one QMP command and returns its `return` value (events skipped).
    pub fn qmp(&mut self, cmd: serde_json::Value) -> io::Result<serde_json::Value> {
        let Some(r) = self.qmp.as_mut() else {
            return Err(io::Error::other(
                "this machine has no QMP socket (use Qemu::spawn)",
            ));
        };
        let mut line = cmd.to_string();
        line.push('\n');
        r.get_mut().write_all(line.as_bytes())?;
        loop {
            let mut reply = String::new();
            if r.read_line(&mut reply)? == 0 {
                return Err(self.failure("QMP socket closed"));
            }
            let v: serde_json::Value = serde_json::from_str(&reply)
                .map_err(|e| io::Error::other(format!("QMP reply {reply:?}: {e}")))?;
            if let Some(ret) = v.get("return") {
                return Ok(ret.clone());
            }
            if let Some(err) = v.get("error") {
                return Err(io::Error::other(format!("QMP {cmd}: {err}")));
            }
        }
    }

    /// `dump-guest-memory` (paging off) into `out`: ELF when `format` is
    /// None, else QEMU's format name (`kdump-zlib`, ...). Synchronous.
    pub fn dump(&mut self, out: &Path, format: Option<&str>) -> io::Result<()> {
        let mut args = serde_json::json!({
            "paging": false,
            "protocol": format!("file:{}", out.display()),
        });
        if let Some(f) = format {
            args["format"] = serde_json::Value::from(f);
        }
        self.qmp(serde_json::json!({ "execute": "dump-guest-memory", "arguments": args }))?;
        Ok(())
    }

    /// Waits for the machine to end (the script finished, or a QMP `quit`);
    /// kills it at `timeout` (counted from now) or at the boot's own timeout.
    pub fn finish(mut self, timeout: Duration) -> io::Result<Console> {
        let deadline = (Instant::now() + timeout).min(self.started + self.timeout);
        loop {
            if self.child.try_wait()?.is_some() {
                break;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(self.failure("timed out: QEMU killed"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // The reader threads end with the pipe; wait for the last bytes.
        let mut g = self.console.text.lock().unwrap_or_else(|e| e.into_inner());
        while !g.1 {
            let (ng, t) = self
                .console
                .grew
                .wait_timeout(g, Duration::from_secs(5))
                .unwrap_or_else(|e| e.into_inner());
            g = ng;
            if t.timed_out() {
                break;
            }
        }
        Ok(Console { text: g.0.clone() })
    }

    /// Ends the machine at once (QMP `quit`, else kill).
    pub fn quit(mut self) -> io::Result<Console> {
        if self.qmp(serde_json::json!({ "execute": "quit" })).is_err() {
            let _ = self.child.kill();
        }
        self.finish(Duration::from_secs(10))
    }
}

impl Drop for Vm {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
