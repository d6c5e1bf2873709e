"""drgn without DWARF: btfkit gives drgn the kernel's types (BTF of vmlinux
and the loaded modules), its variables, functions and enumerators, and its
symbols (kallsyms read from memory).

Installed, this package is a drgn plugin (entry point group
``drgn.plugins``): drgn calls :func:`drgn_prog_set` when it opens a Linux
kernel, a dump or the live one. The finders registered there come after
drgn's own and step aside while vmlinux's DWARF is loaded, so DWARF-backed
drgn is unchanged. btfkit opens the kernel when a finder is first asked.

The BTF is the kernel's own (the dump's memory; /sys/kernel/btf/vmlinux
live) unless the environment variable ``BTFKIT_DRGN_BTF`` names a file,
such as one made by ``btfkit encode VMLINUX --vars all`` (the kernel's own
BTF has only per-CPU variables). That file is checked against the kernel.
"""

import logging
import os
from typing import Dict, List, Optional, Tuple

from drgn import (
    FindObjectFlags,
    Object,
    Program,
    ProgramFlags,
    Symbol,
    SymbolBinding,
    SymbolKind,
    Type,
    TypeKindSet,
)

from ._native import BtfkitError, Kernel
from .finder import ENV_BTF, Finder, symbol_kind_binding

FINDER_NAME = "btfkit"

# More than this share of variables placed elsewhere than kallsyms says: the
# BTF describes another build (the kernel's own has a few statics whose
# names other symbols share).
MAX_MISPLACED = 0.02

# drgn's logger for plugins: where drgn itself reports a plugin's failure.
logger = logging.getLogger("drgn.plugins")

__all__ = [
    "BtfkitError",
    "ENV_BTF",
    "Finder",
    "Kernel",
    "Plugin",
    "attach",
    "drgn_prog_set",
    "open_finder",
]


def _check(prog: Program, kernel: Kernel, btf: str) -> None:
    """Refuses a BTF file that does not describe the kernel of *prog*."""
    release = prog["UTS_RELEASE"].string_().decode(errors="replace")
    seen = kernel.release()
    if seen != release:
        raise BtfkitError(
            f"{btf}: BTF of another kernel: this kernel is {release} (VMCOREINFO), "
            f"init_uts_ns read with this BTF's types says {seen!r}"
        )
    checked, misplaced = kernel.address_check()
    if checked and len(misplaced) > MAX_MISPLACED * checked:
        name, at, sym = misplaced[0]
        raise BtfkitError(
            f"{btf}: BTF of another kernel than this {release}: {len(misplaced)} of {checked} "
            f"variables are not where kallsyms has them (first: {name} at {at:#x}, "
            f"kallsyms {sym:#x})"
        )


def open_finder(prog: Program, btf: Optional[str] = None) -> Finder:
    """Opens the kernel of *prog* (a Linux kernel program) with btfkit.
    *btf*: a BTF file to use instead of the kernel's own (default:
    ``$BTFKIT_DRGN_BTF``), checked against the kernel.

    :raises BtfkitError: the dump, its kallsyms or the BTF do not read, or
        the BTF file is of another kernel
    """
    if not prog.flags & ProgramFlags.IS_LINUX_KERNEL:
        raise BtfkitError("not a Linux kernel program")
    btf = btf or os.environ.get(ENV_BTF) or None
    if prog.flags & ProgramFlags.IS_LIVE:
        vmcore = None
    elif prog.core_dump_path:
        vmcore = prog.core_dump_path
    else:
        raise BtfkitError("the program has no core dump file and is not the live kernel")
    try:
        kernel = Kernel.open(vmcore, btf)
    except BtfkitError as e:
        if btf:
            raise
        # The kernel's own BTF (a build without CONFIG_DEBUG_INFO_BTF, or
        # memory that does not read): a file can stand in for it.
        raise BtfkitError(
            f"{e} (with the kernel's own BTF; ${ENV_BTF} names a BTF file to use instead: "
            "`btfkit encode VMLINUX --vars all -o FILE` makes one)"
        ) from None
    if btf:
        _check(prog, kernel, btf)
    return Finder(prog, kernel)


class Plugin:
    """btfkit's finders on one program: opened on first use; silent while
    vmlinux's DWARF is loaded. A kernel that does not open makes the lookup
    that opened it raise BtfkitError (also logged on ``drgn.plugins``);
    later lookups find nothing here, and drgn goes on with what it has."""

    def __init__(self, prog: Program, btf: Optional[str] = None) -> None:
        self.prog = prog
        self.btf = btf
        self._finder: Optional[Finder] = None
        # drgn's (SymbolBinding, SymbolKind) of each nm type letter.
        self._kinds: Dict[str, Tuple[SymbolBinding, SymbolKind]] = {}
        self._error: Optional[str] = None
        self._opening = False

    def _has_dwarf(self) -> bool:
        try:
            return self.prog.main_module().debug_file_path is not None
        except LookupError:
            return False

    def finder(self) -> Optional[Finder]:
        """The finder, opened now if need be; None while opening (drgn
        looks up names of its own then) or while DWARF is loaded."""
        if self._finder is not None:
            return None if self._has_dwarf() else self._finder
        if self._opening or self._error is not None or self._has_dwarf():
            return None
        self._opening = True
        try:
            self._finder = open_finder(self.prog, self.btf)
            self._place_kernel(self._finder.kernel)
        except Exception as e:
            self._finder = None
            self._error = f"btfkit: {e}"
            logger.warning("%s", self._error)
            raise BtfkitError(self._error) from e
        finally:
            self._opening = False
        self._create_modules()
        return self._finder

    def _create_modules(self) -> None:
        """Has drgn make its modules of the loaded kernel modules (which
        it does itself only when loading debugging information): with them
        it finds the module of a pc and unwinds with the module's ORC."""
        try:
            for _ in self.prog.loaded_modules():
                pass
        except Exception as e:
            logger.warning("btfkit: kernel modules: %s", e)

    def _place_kernel(self, kernel: Kernel) -> None:
        """Gives drgn's main module ("kernel") the image's addresses, which
        drgn otherwise takes from the vmlinux file: with them drgn finds
        which module a pc is in, and unwinds with the ORC in memory."""
        text = kernel.symbol_address("_text")
        end = kernel.symbol_address("_end")
        if text is None or end is None or end <= text:
            return
        module = self.prog.main_module("kernel", create=True)
        if module.address_range is None:
            module.address_range = (text, end)

    def find_type(
        self, prog: Program, kinds: TypeKindSet, name: str, filename: Optional[str]
    ) -> Optional[Type]:
        f = self.finder()
        return f.find_type(prog, kinds, name, filename) if f else None

    def find_object(
        self, prog: Program, name: str, flags: FindObjectFlags, filename: Optional[str]
    ) -> Optional[Object]:
        f = self.finder()
        return f.find_object(prog, name, flags, filename) if f else None

    def find_symbols(
        self, prog: Program, name: Optional[str], address: Optional[int], one: bool
    ) -> List[Symbol]:
        f = self.finder()
        if f is None:
            return []
        # Found in btfkit's table: no drgn SymbolIndex of every symbol
        # (87,000 Python Symbols for Debian's kernel, 0.4 s and 20 MB).
        found = []
        for sym_name, sym_address, size, letter in f.kernel.find_symbols(name, address, one):
            kb = self._kinds.get(letter)
            if kb is None:
                kind, binding = symbol_kind_binding(letter)
                kb = self._kinds[letter] = (SymbolBinding[binding], SymbolKind[kind])
            found.append(Symbol(sym_name, sym_address, size, *kb))
        return found


def attach(prog: Program, btf: Optional[str] = None) -> Plugin:
    """Registers btfkit's type, object and symbol finders on *prog*, after
    drgn's own. *btf*: as for :func:`open_finder`."""
    plugin = Plugin(prog, btf)
    prog.register_type_finder(FINDER_NAME, plugin.find_type, enable_index=-1)
    prog.register_object_finder(FINDER_NAME, plugin.find_object, enable_index=-1)
    prog.register_symbol_finder(FINDER_NAME, plugin.find_symbols, enable_index=-1)
    return plugin


def drgn_prog_set(prog: Program) -> None:
    """drgn's plugin hook: attach to every Linux kernel program."""
    if prog.flags & ProgramFlags.IS_LINUX_KERNEL:
        attach(prog)
