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


def elf_section(path: Path, name: str) -> bytes:
    """The bytes of section *name* of the ELF64 file *path*."""
    import struct

    with open(path, "rb") as f:
        eh = f.read(64)
        shoff, = struct.unpack_from("<Q", eh, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", eh, 0x3A)
        f.seek(shoff)
        table = f.read(shentsize * shnum)

        def header(i: int):
            # sh_name, sh_offset, sh_size
            return (
                struct.unpack_from("<I", table, i * shentsize)[0],
                *struct.unpack_from("<QQ", table, i * shentsize + 0x18),
            )

        _, stroff, strsize = header(shstrndx)
        f.seek(stroff)
        names = f.read(strsize)
        for i in range(shnum):
            at, offset, size = header(i)
            if names[at : names.index(b"\0", at)] == name.encode():
                f.seek(offset)
                return f.read(size)
    raise AssertionError(f"{path}: no section {name}")


def dump_without(src: Path, dst: Path, btf: bytes) -> int:
    """Copies the dump *src* to *dst* with the magic of every copy of the
    BTF *btf* in its memory (found by its header and first types) zeroed:
    BTF that does not read. Returns how many copies it spoiled."""
    import mmap
    import shutil

    shutil.copyfile(src, dst)
    needle = btf[:64]
    spoiled = 0
    with open(dst, "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        at = m.find(needle)
        while at >= 0:
            m[at : at + 4] = bytes(4)
            spoiled += 1
            at = m.find(needle, at + 1)
    return spoiled


DRGN_ON_DUMP = """
import sys, drgn
prog = drgn.Program()
prog.set_core_dump(sys.argv[1])
for name in sys.argv[2:]:
    for _ in range(2):
        try:
            print(name, "=", prog.type(name).type_name())
        except Exception as e:
            print(name, "!", type(e).__name__, e)
# drgn goes on with what it has: memory, VMCOREINFO.
print(prog["UTS_RELEASE"].string_().decode())
"""


def run_drgn(dump: Path, *types: str, **env: str) -> subprocess.CompletedProcess:
    """drgn with only the plugin (no BTF file unless *env* gives one) on
    *dump*, looking up *types* twice each; a hang fails (timeout)."""
    environ = {k: v for k, v in os.environ.items() if k != "BTFKIT_DRGN_BTF"}
    r = subprocess.run(
        [sys.executable, "-c", DRGN_ON_DUMP, dump, *types],
        env=dict(environ, **env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, f"drgn on {dump} failed ({r.returncode}):\n{r.stderr}"
    return r


def test_dump_without_btf_names_the_variable_through_drgn(
    plugin_installed, elf_dump: Path, vmlinux: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "vmcore-no-btf"
    assert dump_without(elf_dump, dump, elf_section(vmlinux, ".BTF")) == 1
    r = run_drgn(dump, "struct task_struct")
    error, again, release = r.stdout.splitlines()
    assert error.startswith("struct task_struct ! BtfkitError btfkit: "), error
    assert "BTFKIT_DRGN_BTF" in error and "btfkit encode" in error, error
    # Said once; then btfkit has nothing, as drgn without it.
    assert again == "struct task_struct ! LookupError could not find 'struct task_struct'", again
    assert release.startswith("6.1.0-"), release
    assert "BTFKIT_DRGN_BTF" in r.stderr, "not logged on drgn.plugins"


def test_missing_module_btf_leaves_vmlinux_types_through_drgn(
    plugin_installed, elf_dump: Path, tmp_path: Path
) -> None:
    from conftest import cache_dir

    ko = cache_dir() / "image-modules" / "kernel" / "drivers" / "firmware" / "qemu_fw_cfg.ko"
    if not ko.is_file():
        skip(f"no {ko}: run scripts/fetch-debian-kernel.sh")
    dump = tmp_path / "vmcore-no-module-btf"
    assert dump_without(elf_dump, dump, elf_section(ko, ".BTF")) >= 1
    module_type = "struct fw_cfg_sysfs_entry"
    r = run_drgn(dump, "struct task_struct", module_type)
    lines = r.stdout.splitlines()
    assert lines[:2] == ["struct task_struct = struct task_struct"] * 2, lines
    # Not found, as drgn says when no finder has a type: no error.
    assert lines[2:4] == [f"{module_type} ! LookupError could not find '{module_type}'"] * 2, lines
    assert lines[4].startswith("6.1.0-"), lines
    # The same type with the module's BTF in memory.
    r = run_drgn(elf_dump, module_type)
    assert r.stdout.splitlines()[0] == f"{module_type} = {module_type}", r.stdout


def test_corrupt_btf_file_is_refused_through_drgn(plugin_installed, elf_dump: Path, vars_btf: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.btf"
    data = bytearray(vars_btf.read_bytes())
    # A type section that runs past the file's end.
    data[12:16] = (len(data) * 2).to_bytes(4, "little")
    bad.write_bytes(bytes(data))
    r = run_drgn(elf_dump, "struct task_struct", BTFKIT_DRGN_BTF=str(bad))
    error, again, release = r.stdout.splitlines()
    assert error.startswith(f"struct task_struct ! BtfkitError btfkit: {bad}"), error
    assert again == "struct task_struct ! LookupError could not find 'struct task_struct'", again
    assert release.startswith("6.1.0-"), release
