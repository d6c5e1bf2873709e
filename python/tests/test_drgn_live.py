"""drgn with only btfkit's plugin against drgn with Debian's DWARF vmlinux
(the oracle) on the LIVE kernel: Debian's 6.1 cloud kernel booted under
QEMU (TCG, 2 CPUs, 2 GiB), where drgn runs inside the guest on /proc/kcore.
The checks are the dump tests' (drgn_outputs.py: helpers and crash
commands), with the guest tasks and modules of the dumps' guest.

This interpreter, drgn and the installed plugin are copied into the
initramfs (guest.py) with the libraries they load, and the stdlib without
its tests and GUI (about 520 MB with the vmlinux). The guest runs, back to
back, each pinned to CPU 1: drgn+DWARF, drgn+btfkit with `btfkit encode
--vars all` (BTFKIT_DRGN_BTF), drgn+DWARF again; then the kernel's own BTF
(/sys/kernel/btf) against DWARF for types, functions, enumerators and
per-CPU variables (test_drgn_dwarf's KERNEL_BTF_SCRIPT).

A live system changes between two runs: drgn's own process and the shell
waiting for it, the tasks running while drgn reads them, times, timers and
memory counters. `live_unstable` leaves those lines out; the oracle's two
runs show that what is left is stable (in one run they agreed on 5575 of
5577 lines), and the plugin's run, between them, may differ from the
oracle only as much as the oracle differs from itself (a kernel thread
that last ran on the other CPU), beyond the dump tests' allowed classes.
DWARF-only content is left out as there (`dwarf_only`)."""

import base64
import difflib
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import zlib
from pathlib import Path
from typing import Dict, List, Set, Tuple

import guest
import pytest
from conftest import cache_dir, kernel_tier, skip
from test_drgn_dwarf import (
    CHECKS,
    KERNEL_BTF_SCRIPT,
    MIN_ALL,
    MIN_EQUAL,
    SCRIPT,
    assert_kernel_btf_equals_dwarf,
    dwarf_only,
    equal_lines,
    module_debug_files,
)

# What the guest runs, back to back, in this order: the plugin's run between
# the oracle's two. Each drgn runs on CPU 1 (`taskset`): which CPU runs drgn
# would change runqueues, `bt -a` and `ps` from run to run.
RUNS = {
    "dwarf": "DRGN_DISABLE_PLUGINS=btfkit {py} /drgn_outputs.py dwarf /proc/kcore /vmlinux",
    "btfkit": "BTFKIT_DRGN_BTF=/vmlinux.btf {py} /drgn_outputs.py btf /proc/kcore",
    "dwarf-again": "DRGN_DISABLE_PLUGINS=btfkit {py} /drgn_outputs.py dwarf /proc/kcore /vmlinux",
    # The kernel's own BTF (/sys/kernel/btf): types, functions, enumerators,
    # per-CPU variables; the oracle with the modules' debug files too.
    "kernel-btf-dwarf": "DRGN_DISABLE_PLUGINS=btfkit {py} /kernel_btf.py /proc/kcore /vmlinux /dbg/*.ko",
    "kernel-btf": "{py} /kernel_btf.py /proc/kcore",
}

# The guest of the dumps (crates/testkit/src/dumps.rs): two modules
# and three named processes, busybox scripts whose comm is their name.
GUEST_PROGRAMS = {
    "/bin/btfkit-sleeper": b"#!/bin/sh\nwhile true; do sleep 1000; done\n",
    "/bin/btfkit-reader": b"#!/bin/sh\nmkfifo /tmp/r\nexec 3<>/tmp/r\nread x <&3\n",
    "/bin/btfkit-opener": b"#!/bin/sh\nmkfifo /tmp/o\ncat /tmp/o\n",
}

# Each run's lines leave the guest as one console line: zlib, base64.
REPORT = (
    "import base64, sys, zlib; "
    "print('BTFKIT-RESULT', sys.argv[1], base64.b64encode(zlib.compress(sys.stdin.buffer.read(), 9)).decode())"
)

# Who changes between two runs of drgn in one guest: drgn itself and the
# guest script's shell that waits for it (comm `sh`: the other shells are
# named btfkit-*, and init).
SHELL = "sh"


def drgn_comm() -> str:
    """drgn's comm in the guest: this interpreter's file name."""
    return Path(sys.executable).resolve().name[:15]


def guest_script(python: str, pythonpath: str) -> str:
    lines = [
        "insmod /lib/modules/qemu_fw_cfg.ko",
        "insmod /lib/modules/dummy.ko numdummies=2",
        "btfkit-sleeper &",
        "btfkit-reader &",
        "btfkit-opener &",
        "sleep 1",
        f"export PYTHONPATH={pythonpath}",
    ]
    for name, cmd in RUNS.items():
        lines += [
            "start=$(date +%s)",
            f"{cmd.format(py='taskset -c 1 ' + python)} > /tmp/out.json 2> /tmp/err.txt",
            f"echo BTFKIT-RESULT status-{name} $? $(($(date +%s) - start))",
            f'{python} -c "{REPORT}" out-{name} < /tmp/out.json',
            "cat /tmp/err.txt",
        ]
    return "\n".join(lines) + "\n"


def python_files(fs: guest.Initramfs) -> Tuple[str, str]:
    """This interpreter with its stdlib (no tests, no GUI, no site-packages)
    and of site-packages only drgn and the plugin; its guest path, and
    where drgn and the plugin are (PYTHONPATH)."""
    python = Path(sys.executable).resolve()
    fs.binary(python)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    # Tests, GUI, installers, the static libpython (config-*), other packages.
    config = f"config-{sysconfig.get_python_version()}-x86_64-linux-gnu"
    skipped = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data",
               "distutils", "unittest", "site-packages", config)  # fmt: skip
    guest.tree(fs, stdlib, skipped)
    for lib in (stdlib / "lib-dynload").glob("*.so"):
        fs.binary(lib)
    roots = []
    for name in ("drgn", "btfkit-drgn"):
        dist = importlib.metadata.distribution(name)
        roots.append(str(Path(dist.locate_file("")).resolve()))
        for f in dist.files or ():
            p = Path(dist.locate_file(f)).resolve()
            if not p.is_file() or ".opt-" in p.name:
                continue
            if p.suffix == ".so" or ".so." in p.name:
                fs.binary(p)
            else:
                fs.file(str(p), p)
    return str(python), ":".join(roots)


@pytest.fixture(scope="module")
def live_outputs(plugin_installed, vmlinux: Path, vars_btf: Path, tmp_path_factory) -> Dict[str, Dict[str, List[str]]]:
    """Each run's {check: lines}, from one boot."""
    kernel_tier("boots Debian's 6.1 kernel under QEMU")
    for tool, package in ((guest.QEMU, "qemu-system-x86"), ("objcopy", "binutils"), ("ldd", "libc-bin")):
        if not shutil.which(tool):
            skip(f"{tool} is not installed (apt-get install {package})")
    if not guest.BUSYBOX.is_file():
        skip("a static /bin/busybox is needed in the guest (apt-get install busybox-static)")
    kernel = cache_dir() / "vmlinuz"
    modules = cache_dir() / "image-modules" / "kernel" / "drivers"
    debug_modules = module_debug_files()
    if not kernel.is_file() or not (modules / "net" / "dummy.ko").is_file() or len(debug_modules) != 2:
        skip("Debian's kernel image and modules are not cached: run scripts/fetch-debian-kernel.sh")
    tmp = tmp_path_factory.mktemp("live")
    # Debian's vmlinux without its relocation sections (.rela.*, 310 MB of
    # its 590): drgn applies relocations to ET_REL files only, so the
    # oracle reads the same DWARF (on the cached ELF dump, drgn_outputs.py
    # says the same with either file but for `sys`'s KERNEL path), and the
    # initramfs fits a small guest.
    small = tmp / "vmlinux"
    subprocess.run(["objcopy", "--remove-section=.rela.*", vmlinux, small], check=True)
    fs = guest.Initramfs()
    python, pythonpath = python_files(fs)
    fs.file("/drgn_outputs.py", SCRIPT).bytes("/kernel_btf.py", KERNEL_BTF_SCRIPT.encode())
    fs.file("/vmlinux", small).file("/vmlinux.btf", vars_btf)
    for ko in debug_modules:
        fs.file(f"/dbg/{ko.name}", ko)
    fs.file("/lib/modules/qemu_fw_cfg.ko", modules / "firmware" / "qemu_fw_cfg.ko")
    fs.file("/lib/modules/dummy.ko", modules / "net" / "dummy.ko")
    for program, text in GUEST_PROGRAMS.items():
        fs.bytes(program, text, 0o755)
    initrd = tmp / "initrd.cpio"
    fs.write(initrd, guest_script(python, pythonpath))
    console = guest.boot(kernel, initrd, tmp / "console.txt", memory_mb=2048, cpus=2, timeout=3600)
    # 800 MB that pytest would keep with its last three runs' directories.
    initrd.unlink()
    small.unlink()
    assert "BTFKIT-GUEST-END" in console, console[-20000:]
    res = guest.results(console)
    outputs = {}
    for name in RUNS:
        status = res.get(f"status-{name}", "").split()
        assert status and status[0] == "0", f"drgn ({name}) failed in the guest:\n{console[-20000:]}"
        sys.stderr.write(f"live guest: drgn {name}: {status[1]} s\n")
        outputs[name] = json.loads(zlib.decompress(base64.b64decode(res[f"out-{name}"])))
    (tmp / "outputs.json").write_text(json.dumps(outputs))
    return outputs


def _blocks(lines: List[str]) -> List[List[str]]:
    """crash's per-task blocks: each from a `PID:` line to the next."""
    blocks: List[List[str]] = [[]]
    for line in lines:
        if line.startswith("PID:"):
            blocks.append([])
        blocks[-1].append(line)
    return blocks


_COMMAND = re.compile(r'COMMAND: "([^"]*)"')
_TASK = re.compile(r"\b[0-9a-f]{16}\b")

# The runs compared, each with the others (the plugin's between the oracle's).
COMPARED = ("dwarf", "btfkit", "dwarf-again")


def momentary(check: str, runs: List[List[str]]) -> Set[str]:
    """The tasks (their addresses) that a CPU runs while drgn reads them in
    any of *runs* of *check*: crash's `>` in `ps`, `(active)` in a
    backtrace. Another run shows the same task asleep."""
    tasks: Set[str] = set()
    for lines in runs:
        if check == "crash ps":
            tasks.update(m.group(0) for l in lines if l.startswith(">") for m in [_TASK.search(l)] if m)
        elif check in ("crash bt -a", "crash foreach bt"):
            tasks.update(m.group(0) for b in _blocks(lines) if "(active)" in b for m in [_TASK.search(b[0])] if m)
    return tasks


def live_unstable(check: str, lines: List[str], own_pids: List[str], running: Set[str]) -> List[str]:
    """*lines* without what changes from one run of drgn to the next in
    one live guest (the two oracle runs show it): drgn's own process
    (*own_pids*: its threads) and the shell waiting for it, the tasks that
    run while drgn reads them (*running*, see `momentary`), counters of
    time and of free memory."""
    comm = drgn_comm()
    moving = (comm, SHELL)

    def steady(line: str) -> bool:
        m, task = _COMMAND.search(line), _TASK.search(line)
        return not (m and m.group(1) in moving) and not (task and task.group(0) in running)

    if check in ("for_each_task", "cgroup_path"):
        return [l for l in lines if l.split(" ", 1)[0] not in own_pids]
    if check == "slab objects":
        return [l for l in lines if l != comm]
    if check == "per_cpu":
        # Each CPU's current task and the length of its runqueue.
        return []
    if check == "crash ps":
        # Columns are as wide as their widest value: drgn's own VSZ and RSS.
        return [" ".join(l.split()) for l in lines if l.split()[-1:] and l.split()[-1] not in moving and steady(l)]
    if check in ("crash bt -a", "crash foreach bt"):
        return [l for b in _blocks(lines) if not b or steady(b[0]) for l in b]
    if check == "crash runq":
        # Which tasks run and wait to run: the runqueues stay.
        return [l for l in lines if "PID:" not in l and "no tasks queued" not in l]
    if check == "crash sys":
        return [l for l in lines if l.split(":")[0].strip() not in ("DATE", "UPTIME", "LOAD AVERAGE")]
    if check == "crash p jiffies":
        return [re.sub(r"\d+$", "N", l) for l in lines]
    if check == "crash timer":
        # The pending timers and their expiry in jiffies: only the bases stay.
        return [l for l in lines if l.startswith("TIMER_BASES") or l.strip().startswith("EXPIRES")]
    if check == "crash kmem -i":
        counters = ("FREE", "USED", "BUFFERS", "CACHED", "SLAB", "COMMITTED")
        return [l for l in lines if l.split()[:1] and l.split()[0] not in counters]
    return lines


def stable(live_outputs: Dict[str, Dict[str, List[str]]], check: str) -> List[List[str]]:
    """The lines of *check* in the COMPARED runs that are stable in a live
    guest, without what only DWARF has."""
    running = momentary(check, [live_outputs[run][check] for run in COMPARED])
    out = []
    for run in COMPARED:
        outputs = live_outputs[run]
        own = [l.split(" ", 1)[0] for l in outputs["for_each_task"] if l.endswith(" " + drgn_comm())]
        out.append(dwarf_only(live_unstable(check, outputs[check], own, running)))
    return out


# (check) -> (oracle vs itself, plugin vs oracle): (equal lines, lines); the
# summary prints them.
LIVE_FRACTIONS: Dict[str, Tuple[Tuple[int, int], Tuple[int, int]]] = {}


@pytest.mark.parametrize("check", list(CHECKS))
def test_drgn_plugin_live_equals_drgn_dwarf(live_outputs, check: str) -> None:
    dwarf, btf, again = stable(live_outputs, check)
    assert not (dwarf and dwarf[0].startswith("ERROR")), f"the oracle fails {check}: {dwarf}"
    self_same, self_total = equal_lines(dwarf, again)
    # The plugin ran between the oracle's two runs: a line of either counts.
    same, total = max(equal_lines(dwarf, btf), equal_lines(again, btf))
    LIVE_FRACTIONS[check] = ((self_same, self_total), (same, total))
    self_share = self_same / self_total if self_total else 1.0
    share = same / total if total else 1.0

    def diff(a: List[str], b: List[str], names: Tuple[str, str]) -> str:
        return "\n".join(list(difflib.unified_diff(a, b, *names, lineterm=""))[:80])

    # What live_unstable leaves is stable: the oracle agrees with itself
    # but for a line or so (a kernel thread that last ran on the other CPU,
    # a worker that its pool starts or ends between the runs).
    moved = self_total - self_same
    assert moved <= max(1, 0.05 * self_total), f"{check}: drgn+DWARF twice: {self_same} of {self_total}\n" + diff(
        dwarf, again, ("drgn+DWARF", "drgn+DWARF again")
    )
    want = MIN_EQUAL.get(check, 1.0) - (1 - self_share)
    assert share >= want, f"{check}: {same} of {total} lines equal ({share:.1%}, want {want:.0%})\n" + diff(
        dwarf, btf, ("drgn+DWARF", "drgn+btfkit")
    )


def test_drgn_plugin_live_equals_drgn_dwarf_overall(live_outputs) -> None:
    same = total = 0
    for check in CHECKS:
        dwarf, btf, again = stable(live_outputs, check)
        s, t = max(equal_lines(dwarf, btf), equal_lines(again, btf))
        same, total = same + s, total + t
    assert total > 5000 and same / total >= MIN_ALL, f"{same} of {total} lines equal"


def test_kernel_btf_live_equals_drgn_dwarf(live_outputs) -> None:
    """The kernel's own BTF, /sys/kernel/btf/vmlinux and qemu_fw_cfg's."""
    assert_kernel_btf_equals_dwarf(live_outputs["kernel-btf-dwarf"], live_outputs["kernel-btf"])
