"""drgn with only btfkit's plugin (no DWARF at all) against drgn with
Debian's DWARF vmlinux (the oracle), on the cached QEMU dumps of Debian's
6.1 cloud kernel: the same helpers and crash commands, compared line by
line (python/tests/drgn_outputs.py makes the lines).

The plugin reads the BTF of `btfkit encode --vars all` (BTFKIT_DRGN_BTF):
Debian's own BTF has no variables but the per-CPU ones.

Lines compare after what only DWARF has is taken out of the oracle's
(`dwarf_only`): inline frames (and so the frame numbers after them), source
file and line, the vmlinux file's name. Every other difference counts.
"""

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from conftest import skip

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "drgn_outputs.py"
sys.path.insert(0, str(HERE))
try:
    from drgn_outputs import CHECKS
except ImportError:
    # No drgn: the tests below skip (or fail under BTFKIT_STRICT=1) through
    # their fixtures, which say so.
    CHECKS = {"drgn_outputs": lambda prog: []}

# drgn 0.3 (libkdumpfile) does not open QEMU's kdump-compressed dumps
# ("KDUMP_ATTR_ARCH_NAME: Key has no value": QEMU's header has no utsname
# but the machine, and libkdumpfile takes the architecture from a whole
# one); makedumpfile's, made from the ELF dump, it does: every page (-c),
# and a kdump's usual filter (-c -d 31: zero, cache, user and free pages
# left out).
DUMPS = ("vmcore.elf", "vmcore.mdf-zlib", "vmcore.mdf-zlib-d31")
# makedumpfile's dumps have their own done-marker (MAKEDUMPFILE_GENERATOR
# in crates/testkit/src/dumps.rs).
MAKEDUMPFILE_GENERATOR = "makedumpfile-1"

# Share of equal lines each check reaches at least, measured on these
# dumps; the table in docs/inspect-and-drgn.md ("How close to drgn with
# DWARF") says what the other lines are.
MIN_EQUAL = {
    # kallsyms names: clones keep their suffix (file_tty_write.constprop.0,
    # DWARF says file_tty_write) and assembly labels inside a function
    # name the pc (entry_SYSCALL_64_after_hwframe in entry_SYSCALL_64).
    "stack_trace names": 0.85,
    "crash bt 1": 0.90,
    "crash bt -a": 0.90,
    "crash foreach bt": 0.95,
    # BTF (pahole's, btfkit's) has one dimension: struct kvm's
    # `__memslots[2][2]` is `[4]`.
    "types": 0.99,
    # BTF has one length for `u8 x[0]` and `u8 x[]`; btfkit says `[]`.
    "crash task 1": 0.99,

}
MIN_ALL = 0.95

# (dump, check) -> (equal lines, lines, raw equal lines); conftest prints them.
FRACTIONS: Dict[Tuple[str, str], Tuple[int, int, int]] = {}

_INLINE_FRAME = re.compile(r"^\s*#\s*\d+ \(inline\)")
_FRAME_NUMBER = re.compile(r"^\s*#\s*\d+ ")
_SOURCE_LINE = re.compile(r" \S+\.[chS]: \d+$")


def dwarf_only(lines: List[str]) -> List[str]:
    """*lines* without what only DWARF knows, frame numbers dropped."""
    out = []
    for line in lines:
        if _INLINE_FRAME.match(line) or line.startswith("      KERNEL: "):
            continue
        line = _FRAME_NUMBER.sub("# ", line)
        out.append(_SOURCE_LINE.sub("", line))
    return out


def equal_lines(a: List[str], b: List[str]) -> Tuple[int, int]:
    """Lines of *a* and *b* that match in order, and the longer length."""
    m = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sum(block.size for block in m.get_matching_blocks()), max(len(a), len(b))


def run_outputs(mode: str, dump: Path, env: Dict[str, str], *files: Path) -> Dict[str, List[str]]:
    r = subprocess.run(
        [sys.executable, SCRIPT, mode, dump, *files],
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, f"drgn ({mode}) on {dump} failed:\n{r.stderr}"
    return json.loads(r.stdout)


def module_debug_files() -> List[Path]:
    """The debug files of the modules the test guest loads (the oracle's
    module types)."""
    from conftest import cache_dir

    base = cache_dir() / "dbg-modules" / "kernel" / "drivers"
    files = [base / "firmware" / "qemu_fw_cfg.ko", base / "net" / "dummy.ko"]
    return [f for f in files if f.is_file()]


_OUTPUTS: Dict[str, Tuple[Dict[str, List[str]], Dict[str, List[str]]]] = {}


@pytest.fixture(params=DUMPS)
def outputs(request, plugin_installed, dumps_dir: Path, vmlinux: Path, vars_btf: Path):
    """(oracle's lines, plugin's lines) of one dump, made once."""
    name = request.param
    if name.startswith("vmcore.mdf-"):
        done = dumps_dir / "makedumpfile-done"
        if not done.is_file() or done.read_text() != MAKEDUMPFILE_GENERATOR:
            skip(
                f"no makedumpfile dumps in {dumps_dir}: `BTFKIT_KERNEL_TESTS=1 cargo test --release "
                "-p btfkit-inspect --test values_drgn` makes them (needs makedumpfile)"
            )
    if name not in _OUTPUTS:
        dump = dumps_dir / name
        dwarf = run_outputs("dwarf", dump, {"DRGN_DISABLE_PLUGINS": "btfkit"}, vmlinux)
        btf = run_outputs("btf", dump, {"BTFKIT_DRGN_BTF": str(vars_btf)})
        _OUTPUTS[name] = (dwarf, btf)
    return name, _OUTPUTS[name]


@pytest.mark.parametrize("check", list(CHECKS))
def test_drgn_plugin_equals_drgn_dwarf(outputs, check: str) -> None:
    dump, (dwarf_all, btf_all) = outputs
    dwarf, btf = dwarf_all[check], btf_all[check]
    assert not (dwarf and dwarf[0].startswith("ERROR")), f"the oracle fails {check}: {dwarf}"
    raw, _ = equal_lines(dwarf, btf)
    dwarf, btf = dwarf_only(dwarf), dwarf_only(btf)
    same, total = equal_lines(dwarf, btf)
    FRACTIONS[(dump, check)] = (same, total, raw)
    fraction = same / total if total else 1.0
    want = MIN_EQUAL.get(check, 1.0)
    if fraction < want:
        diff = "\n".join(
            list(difflib.unified_diff(dwarf, btf, "drgn+DWARF", "drgn+btfkit", lineterm=""))[:80]
        )
        pytest.fail(f"{dump}, {check}: {same} of {total} lines equal ({fraction:.1%}, want {want:.0%})\n{diff}")


def test_drgn_plugin_equals_drgn_dwarf_overall(outputs) -> None:
    dump, (dwarf_all, btf_all) = outputs
    same = total = 0
    for check in CHECKS:
        s, t = equal_lines(dwarf_only(dwarf_all[check]), dwarf_only(btf_all[check]))
        same, total = same + s, total + t
    assert total and same / total >= MIN_ALL, f"{dump}: {same} of {total} lines equal"


# The kernel's own BTF (in the dump's memory: no BTFKIT_DRGN_BTF) has types,
# functions, enumerators and per-CPU variables, but no other variable.
KERNEL_BTF_SCRIPT = """
import json, sys, drgn
prog = drgn.Program()
if sys.argv[1] == "/proc/kcore":
    prog.set_kernel()
else:
    prog.set_core_dump(sys.argv[1])
if sys.argv[2:]:
    prog.load_debug_info(sys.argv[2:])
out = {}
for name in ("struct task_struct", "struct rq", "union bpf_attr", "enum pid_type",
             "struct list_head", "u64", "atomic_t", "struct module",
             # qemu_fw_cfg's own (module BTF in memory; DWARF: its debug file)
             "struct fw_cfg_sysfs_entry"):
    out[name] = str(prog.type(name)).splitlines()
if not sys.argv[2:]:
    # btfkit takes a module's name as the filename of its types.
    in_module = prog.type("struct fw_cfg_sysfs_entry", "qemu_fw_cfg.ko")
    assert str(in_module) == str(prog.type("struct fw_cfg_sysfs_entry")), in_module
for name in ("schedule", "PIDTYPE_TGID", "runqueues"):
    o = prog[name]
    out[name] = [str(o.type_), hex(o.address_) if o.address_ is not None else str(o.value_())]
for name in ("init_task", "wakeup_show"):
    try:
        prog[name]
        out[name] = ["found"]
    except KeyError as e:
        out[name] = [str(e)]
json.dump(out, sys.stdout)
"""


def test_kernel_btf_types_equal_drgn_dwarf(plugin_installed, dumps_dir: Path, vmlinux: Path) -> None:
    dump = dumps_dir / DUMPS[0]

    def run(env: Dict[str, str], *files: Path) -> Dict[str, List[str]]:
        env = {k: v for k, v in dict(os.environ, **env).items() if k != "BTFKIT_DRGN_BTF"}
        r = subprocess.run(
            [sys.executable, "-c", KERNEL_BTF_SCRIPT, dump, *files],
            env=env,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    dwarf = run({"DRGN_DISABLE_PLUGINS": "btfkit"}, vmlinux, *module_debug_files())
    assert_kernel_btf_equals_dwarf(dwarf, run({}))


def assert_kernel_btf_equals_dwarf(dwarf: Dict[str, List[str]], btf: Dict[str, List[str]]) -> None:
    """KERNEL_BTF_SCRIPT's output with DWARF and with the kernel's own BTF."""
    init_task = btf.pop("init_task")[0]
    assert "BTFKIT_DRGN_BTF" in init_task and "kallsyms has it" in init_task, init_task
    dwarf.pop("init_task")
    # Two functions of that name, one FUNC in Debian's BTF, no addr= tags.
    wakeup_show = btf.pop("wakeup_show")[0]
    assert "cannot tell which prototype" in wakeup_show, wakeup_show
    dwarf.pop("wakeup_show")
    for name in dwarf:
        assert btf[name] == dwarf[name], "\n".join(
            difflib.unified_diff(dwarf[name], btf[name], "drgn+DWARF", "drgn+btfkit", lineterm="")
        )


def test_plugin_steps_aside_for_drgn_dwarf(plugin_installed, dumps_dir: Path, vmlinux: Path) -> None:
    """Installed and enabled, the plugin changes nothing drgn with DWARF
    says (it answers nothing while vmlinux's DWARF is loaded)."""
    dump = dumps_dir / DUMPS[0]
    without = run_outputs("dwarf", dump, {"DRGN_DISABLE_PLUGINS": "btfkit"}, vmlinux)
    with_plugin = run_outputs("dwarf", dump, {"DRGN_DISABLE_PLUGINS": ""}, vmlinux)
    assert with_plugin == without
