"""Bad input reaches drgn as a clear BtfkitError (naming the file, the
offset or the address) and drgn goes on: no crash, no hang."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import skip


@pytest.fixture(scope="session")
def native(plugin_installed):
    from btfkit_drgn import _native

    return _native


def test_missing_dump_names_the_file(native, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-vmcore"
    with pytest.raises(native.BtfkitError, match=str(missing)):
        native.Kernel.open(str(missing))


def test_not_a_dump_is_refused(native, tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x00not a dump at all" * 100)
    with pytest.raises(native.BtfkitError, match="not a kernel dump"):
        native.Kernel.open(str(junk))


def test_corrupt_btf_file_names_the_file(native, elf_dump: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.btf"
    bad.write_bytes(b"\x9f\xeb\x01\x00" + b"\xff" * 60)
    with pytest.raises(native.BtfkitError, match=str(bad)):
        native.Kernel.open(str(elf_dump), str(bad))


DRGN_WITH_OTHER_BTF = """
import sys, drgn
prog = drgn.Program()
prog.set_core_dump(sys.argv[1])
for _ in range(2):
    try:
        prog.type("struct task_struct")
    except Exception as e:
        print(type(e).__name__, e)
    else:
        print("no error")
# drgn goes on with what it has: memory, VMCOREINFO.
print(prog["UTS_RELEASE"].string_().decode())
"""


def test_btf_of_another_kernel_is_refused_through_drgn(plugin_installed, elf_dump: Path) -> None:
    # The machine's own kernel is not Debian's 6.1 of the dump.
    other = Path("/sys/kernel/btf/vmlinux")
    if not other.is_file():
        skip("no /sys/kernel/btf/vmlinux on this machine to use as another kernel's BTF")
    r = subprocess.run(
        [sys.executable, "-c", DRGN_WITH_OTHER_BTF, elf_dump],
        env=dict(os.environ, BTFKIT_DRGN_BTF=str(other)),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    error, again, release = r.stdout.splitlines()
    assert error.startswith("BtfkitError btfkit: /sys/kernel/btf/vmlinux: BTF of another"), error
    # Said once; then btfkit has nothing, as drgn without it.
    assert again == "LookupError could not find 'struct task_struct'", again
    assert release.startswith("6.1.0-"), release
    # Logged once, where drgn logs plugin failures.
    assert "BTF of another" in r.stderr


def test_truncated_btf_file_names_the_file(native, elf_dump: Path, vars_btf: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.btf"
    data = vars_btf.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(native.BtfkitError, match=str(cut)):
        native.Kernel.open(str(elf_dump), str(cut))
