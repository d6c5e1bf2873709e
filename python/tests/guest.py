"""A QEMU guest for the plugin's live tests, with the conventions of
crates/testkit/src/qemu.rs (whose Rust API the pytest tests cannot call): a
busybox initramfs (newc cpio, uncompressed) whose `/init` mounts proc and
sysfs, prints BTFKIT-GUEST-START, runs the test's script, prints
BTFKIT-GUEST-END and reboots; QEMU with TCG, -nodefaults, -no-reboot and
the serial console on stdout. The guest reports with `BTFKIT-RESULT key
value` lines."""

import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import BinaryIO, Dict, Iterable, Optional, Union

BUSYBOX = Path("/bin/busybox")
QEMU = "qemu-system-x86_64"

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
echo BTFKIT-GUEST-START
sh /btfkit-test.sh
echo BTFKIT-GUEST-END
sync
reboot -f
"""


def shared_libraries(binary: Path) -> Iterable[Path]:
    """The libraries `ldd` lists for *binary* (none for a static one)."""
    r = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        # "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or
        # "/lib64/ld-linux-x86-64.so.2 (0x...)"
        words = line.split("=>")[-1].split()
        if words and words[0].startswith("/"):
            yield Path(words[0])


class Initramfs:
    """Files at guest paths, written as a newc cpio archive."""

    def __init__(self) -> None:
        self.files: Dict[str, Union[Path, bytes]] = {}
        self.modes: Dict[str, int] = {}

    def file(self, guest: str, host: Path) -> "Initramfs":
        self.files[guest.lstrip("/")] = host
        return self

    def bytes(self, guest: str, data: bytes, mode: int = 0o644) -> "Initramfs":
        self.files[guest.lstrip("/")] = data
        self.modes[guest.lstrip("/")] = mode
        return self

    def binary(self, host: Path, guest: Optional[str] = None) -> "Initramfs":
        """*host* (at its own path unless *guest* is given) and the shared
        libraries it needs, each at its host path."""
        self.file(guest or str(host), host)
        for lib in shared_libraries(host):
            self.file(str(lib), lib.resolve())
        return self

    def write(self, out: Path, script: str) -> None:
        entries = dict(self.files)
        entries["bin/busybox"] = BUSYBOX
        entries["init"] = INIT.encode()
        entries["btfkit-test.sh"] = script.encode()
        modes = dict(self.modes, init=0o755)
        dirs = {"dev", "proc", "sys", "tmp", "bin", "sbin", "usr/bin", "usr/sbin"}
        for name in entries:
            parent = Path(name).parent
            while str(parent) != ".":
                dirs.add(str(parent))
                parent = parent.parent
        with open(out, "wb") as w:
            cpio = _Cpio(w)
            for d in sorted(dirs):
                cpio.entry(d, stat.S_IFDIR | 0o755, b"")
            # The kernel opens /dev/console for init before devtmpfs exists.
            cpio.entry("dev/console", stat.S_IFCHR | 0o600, b"", rdev=(5, 1))
            for name, src in entries.items():
                if isinstance(src, bytes):
                    cpio.entry(name, stat.S_IFREG | modes.get(name, 0o644), src)
                else:
                    mode = src.stat().st_mode & 0o7777
                    cpio.entry(name, stat.S_IFREG | mode, src)
            cpio.entry("TRAILER!!!", 0, b"")


class _Cpio:
    """newc ("070701"): a 110-byte ASCII header, the NUL-terminated name
    padded to 4 bytes, the data padded to 4 bytes."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.ino = 1

    def entry(self, name: str, mode: int, data: Union[bytes, Path], rdev=(0, 0)) -> None:
        size = len(data) if isinstance(data, bytes) else data.stat().st_size
        nlink = 2 if stat.S_ISDIR(mode) else 1
        fields = (self.ino, mode, 0, 0, nlink, 0, size, 0, 0, rdev[0], rdev[1], len(name) + 1, 0)
        self.ino += 1
        header = b"070701" + b"".join(b"%08x" % f for f in fields)
        self.out.write(header + name.encode() + b"\0")
        self._pad(110 + len(name) + 1)
        if isinstance(data, bytes):
            self.out.write(data)
        else:
            with open(data, "rb") as f:
                shutil.copyfileobj(f, self.out, 1 << 20)
        self._pad(size)

    def _pad(self, n: int) -> None:
        self.out.write(b"\0" * ((4 - n % 4) % 4))


def boot(kernel: Path, initrd: Path, console: Path, memory_mb: int, cpus: int, timeout: int) -> str:
    """Boots *kernel* with *initrd* to the end of its script; the console,
    also written to *console* as it comes. QEMU is killed after *timeout*
    seconds (a hung guest, not a slow test: nothing asserts on time)."""
    cmd = [
        QEMU, "-accel", "tcg", "-nodefaults", "-display", "none", "-no-reboot",
        "-serial", "stdio", "-m", str(memory_mb), "-smp", str(cpus),
        "-kernel", str(kernel), "-initrd", str(initrd),
        "-append", "console=ttyS0 panic=-1",
    ]  # fmt: skip
    with open(console, "wb") as out:
        try:
            subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            text = console.read_bytes().decode(errors="replace")
            raise AssertionError(f"QEMU killed after {timeout} s:\n{text[-20000:]}") from None
    return console.read_bytes().decode(errors="replace").replace("\r", "")


def results(console: str) -> Dict[str, str]:
    """The `BTFKIT-RESULT key value` lines, the first of each key."""
    out: Dict[str, str] = {}
    for line in console.splitlines():
        _, sep, rest = line.partition("BTFKIT-RESULT ")
        if sep:
            key, _, value = rest.partition(" ")
            out.setdefault(key, value.strip())
    return out


def tree(fs: Initramfs, host: Path, skip_dirs: Iterable[str] = ()) -> None:
    """Every file under *host* at its own path, but for the directories
    named in *skip_dirs* and optimized bytecode."""
    skip = set(skip_dirs)
    for root, dirs, files in os.walk(host):
        dirs[:] = [d for d in dirs if d not in skip]
        for f in files:
            if ".opt-" in f:
                continue
            p = Path(root) / f
            if p.is_file():
                fs.file(str(p), p)
