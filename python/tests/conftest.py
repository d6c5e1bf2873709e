"""Real inputs of the plugin's tests, found as the Rust tests find them
(crates/testkit, its dumps.rs for the QEMU dumps); missing ones skip
with a message, or fail under BTFKIT_STRICT=1 (CI), as testkit::skip does."""

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[2]

# The generator of the cached dumps (GENERATOR in
# crates/testkit/src/dumps.rs): dumps of another guest are elsewhere.
DUMPS_GENERATOR = "qemu-busybox-1"


def skip(reason: str) -> NoReturn:
    if os.environ.get("BTFKIT_STRICT") == "1":
        pytest.fail(f"BTFKIT_STRICT=1 and this test would skip: {reason}")
    sys.stderr.write(f"SKIP: {reason}\n")
    pytest.skip(reason)


def kernel_tier(what: str) -> None:
    """The kernel tier's gate, as testkit::kernel_tier: the QEMU dumps and
    boots run only with BTFKIT_KERNEL_TESTS=1 (scripts/python-test.sh sets it)."""
    if os.environ.get("BTFKIT_KERNEL_TESTS") != "1":
        skip(f"kernel tier (set BTFKIT_KERNEL_TESTS=1): {what}")


def cache_dir() -> Path:
    if os.environ.get("BTFKIT_CACHE"):
        return Path(os.environ["BTFKIT_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.environ["HOME"], ".cache")
    return Path(base) / "btfkit"


@pytest.fixture(scope="session")
def drgn_module():
    try:
        import drgn
    except ImportError:
        skip("drgn is not installed (pip install drgn, listed in .ci/pip.d/inspect)")
    return drgn


@pytest.fixture(scope="session")
def plugin_installed(drgn_module):
    from importlib.metadata import entry_points

    if not any(e.name == "btfkit" for e in entry_points(group="drgn.plugins")):
        skip("btfkit-drgn is not installed: run scripts/python-test.sh")


@pytest.fixture(scope="session")
def vmlinux() -> Path:
    p = cache_dir() / "vmlinux"
    if not p.is_file():
        skip("Debian's debug kernel is not cached: run scripts/fetch-debian-kernel.sh")
    return p


@pytest.fixture(scope="session")
def dumps_dir() -> Path:
    kernel_tier("reads the QEMU dumps of Debian's 6.1 kernel")
    version_file = cache_dir() / "VERSION"
    version = version_file.read_text().strip() if version_file.is_file() else ""
    d = cache_dir() / "dumps" / f"{version}-{DUMPS_GENERATOR}"
    if not (d / "done").is_file():
        make = "BTFKIT_KERNEL_TESTS=1 cargo test --release -p btfkit-kmem --test dumps"
        skip(f"no QEMU dumps in {d}: `{make}` makes them")
    return d


@pytest.fixture(scope="session")
def elf_dump(dumps_dir: Path) -> Path:
    return dumps_dir / "vmcore.elf"


@pytest.fixture(scope="session")
def btfkit_bin() -> Path:
    found = os.environ.get("BTFKIT_BIN") or shutil.which("btfkit")
    p = Path(found) if found else REPO / "target" / "release" / "btfkit"
    if not p.is_file():
        skip(f"no btfkit binary at {p}: cargo build --release -p btfkit")
    return p


@pytest.fixture(scope="session")
def vars_btf(tmp_path_factory, btfkit_bin: Path, vmlinux: Path) -> Path:
    """BTF with every variable of Debian's vmlinux (`encode --vars all`)."""
    out = tmp_path_factory.mktemp("btf") / "vmlinux-vars.btf"
    subprocess.run(
        [btfkit_bin, "encode", vmlinux, "--vars", "all", "-o", out],
        check=True,
        capture_output=True,
    )
    return out


def pytest_terminal_summary(terminalreporter) -> None:
    """The share of equal lines per dump and check (drgn+btfkit vs
    drgn+DWARF), after DWARF-only content is left out, and before."""
    from test_drgn_dwarf import FRACTIONS

    tr = terminalreporter
    live = sys.modules.get("test_drgn_live")
    if live is not None and live.LIVE_FRACTIONS:
        tr.section("live guest: drgn+DWARF twice, and drgn+btfkit vs drgn+DWARF: equal stable lines")
        sums = [0, 0, 0, 0]
        for check, ((ss, st), (s, t)) in live.LIVE_FRACTIONS.items():
            share = f"{s / t:7.1%}" if t else "      -"
            tr.write_line(f"{check:26} {ss:6} / {st:<6}  {s:6} / {t:<6} {share}")
            sums = [a + b for a, b in zip(sums, (ss, st, s, t))]
        tr.write_line(f"{'all':26} {sums[0]:6} / {sums[1]:<6}  {sums[2]:6} / {sums[3]:<6} {sums[2] / max(sums[3], 1):7.1%}")
    if not FRACTIONS:
        return
    tr.section("drgn+btfkit vs drgn+DWARF: equal lines")
    tr.write_line(f"{'dump':18} {'check':26} {'equal':>6} / {'lines':<6} {'share':>7}   raw")
    totals: dict = {}
    for (dump, check), (same, total, raw) in FRACTIONS.items():
        share = same / total if total else 1.0
        tr.write_line(f"{dump:18} {check:26} {same:6} / {total:<6} {share:7.1%}   {raw}")
        t = totals.setdefault(dump, [0, 0])
        t[0] += same
        t[1] += total
    for dump, (same, total) in totals.items():
        tr.write_line(f"{dump:18} {'all':26} {same:6} / {total:<6} {same / max(total, 1):7.1%}")
