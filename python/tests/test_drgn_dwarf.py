"""drgn with only btfkit's plugin (no DWARF at all) against drgn with
Debian's DWARF vmlinux (the oracle), on the cached QEMU ELF dump of
Debian's 6.1 cloud kernel: the same helpers and crash commands, compared
line by line (python/tests/drgn_outputs.py makes the lines).

The plugin reads the BTF of `btfkit encode --vars all` (BTFKIT_DRGN_BTF):
Debian's own BTF has no variables but the per-CPU ones.
"""

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "drgn_outputs.py"

# Share of equal lines each check reaches at least (measured; README's
# table has the figures and what differs).
MIN_EQUAL = {
    "init_task.comm": 1.0,
    "for_each_task": 1.0,
    "get_dmesg": 1.0,
    "for_each_module": 1.0,
    "stack_trace names": 1.0,
    "stack_trace pcs": 1.0,
}

# Filled by the comparison, printed by conftest's terminal summary.
FRACTIONS: Dict[str, Tuple[int, int, float]] = {}


def equal_lines(a: List[str], b: List[str]) -> Tuple[int, int]:
    """Lines of *a* and *b* that match in order, and the longer length."""
    m = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return sum(block.size for block in m.get_matching_blocks()), max(len(a), len(b))


def run_outputs(mode: str, dump: Path, env: Dict[str, str], *files: Path) -> Dict[str, List[str]]:
    full_env = dict(os.environ, **env)
    r = subprocess.run(
        [sys.executable, SCRIPT, mode, dump, *files],
        env=full_env,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, f"drgn ({mode}) failed:\n{r.stderr}"
    return json.loads(r.stdout)


@pytest.fixture(scope="session")
def outputs(plugin_installed, elf_dump: Path, vmlinux: Path, vars_btf: Path):
    dwarf = run_outputs("dwarf", elf_dump, {"DRGN_DISABLE_PLUGINS": "btfkit"}, vmlinux)
    btf = run_outputs("btf", elf_dump, {"BTFKIT_DRGN_BTF": str(vars_btf)})
    return dwarf, btf


def check_names() -> List[str]:
    sys.path.insert(0, str(HERE))
    try:
        import drgn_outputs
    except ImportError:
        return list(MIN_EQUAL)
    finally:
        sys.path.pop(0)
    return list(drgn_outputs.CHECKS)


@pytest.mark.parametrize("check", check_names())
def test_drgn_plugin_equals_drgn_dwarf(outputs, check: str) -> None:
    dwarf, btf = outputs[0][check], outputs[1][check]
    assert not dwarf[0].startswith("ERROR") if dwarf else True, (
        f"the oracle fails {check}: {dwarf}"
    )
    same, total = equal_lines(dwarf, btf)
    fraction = same / total if total else 1.0
    FRACTIONS[check] = (same, total, fraction)
    want = MIN_EQUAL.get(check, 0.0)
    if fraction < want:
        diff = "\n".join(
            list(difflib.unified_diff(dwarf, btf, "drgn+DWARF", "drgn+btfkit", lineterm=""))[:80]
        )
        pytest.fail(f"{check}: {same} of {total} lines equal ({fraction:.1%}, want {want:.0%})\n{diff}")
