"""btfkit's view of a kernel: kallsyms and BTF (vmlinux and modules)."""

from typing import List, Optional, Tuple, Union

class BtfkitError(Exception):
    """A kernel, dump or BTF btfkit cannot use; the message names the file
    and the offset or address."""

# What Kernel.describe returns, by kind (the first item):
#   ("void",)
#   ("int", name, size, is_signed, is_bool)
#   ("float", name, size)
#   ("pointer", type_id)
#   ("array", element_type_id, length)
#   ("struct" | "union", tag | None, size,
#        [(member_name | None, type_id, bit_offset, bit_field_size or 0)])
#   ("enum", tag | None, size, is_signed, [(enumerator_name, value)])
#   ("fwd", "struct" | "union", tag)
#   ("typedef", name, type_id)
#   ("const" | "volatile" | "restrict" | "type_tag", type_id)
#   ("func", name, proto_type_id)
#   ("function", return_type_id, [(parameter_name | None, type_id)], is_variadic)
#   ("var", name, type_id)
Description = Tuple[Union[str, int, bool, None, list], ...]

class Kernel:
    @staticmethod
    def open(vmcore: Optional[str], btf: Optional[str] = None) -> Kernel:
        """Opens the kernel of a dump (None: the running kernel through
        /proc/kcore), with the BTF of file *btf* instead of the kernel's
        own (the dump's memory, or /sys/kernel/btf/vmlinux live).

        :raises BtfkitError: the dump, its kallsyms or the BTF do not read
        """
        ...
    def release(self) -> Optional[str]:
        """init_uts_ns's release, read with this BTF's struct layout."""
        ...
    def address_check(self) -> Tuple[int, List[Tuple[str, int, int]]]:
        """(variables with a kernel symbol, [(name, BTF address, kallsyms
        address)] of those whose addresses differ)."""
        ...
    def find_type(self, name: str) -> Optional[int]:
        """The BTF id of a C type name ("struct task_struct", "u64",
        "MODULE:struct foo" for a module's own type)."""
        ...
    def describe(self, id: int) -> Description:
        """One BTF type (see Description above).

        :raises BtfkitError: no such id, or not a C type (DATASEC...)
        """
        ...
    def variable(self, name: str) -> Optional[Tuple[int, int, bool]]:
        """(type id, address, is per-CPU); per-CPU: the offset."""
        ...
    def global_variables(self) -> int:
        """How many variables outside the per-CPU area the BTF has."""
        ...
    def ambiguous(self, name: str) -> Optional[List[int]]:
        """Addresses of the static variables sharing *name*, if several do."""
        ...
    def enumerator(self, name: str) -> Optional[Tuple[int, int]]:
        """(value as unsigned 64-bit, enum type id)."""
        ...
    def function(self, name: str) -> Optional[Tuple[int, int, bool]]:
        """(FUNC_PROTO id of that instance, address, by name only: several
        FUNCs or instances share the name and no addr= tag says which)."""
        ...
    def find_symbols(
        self, name: Optional[str], address: Optional[int], one: bool
    ) -> List[Tuple[str, int, int, str]]:
        """drgn's symbol finder as drgn's SymbolIndex of every symbol of
        vmlinux and the modules answers it: (name, address, size, nm type
        letter) of the symbols containing *address* (named *name*, if
        given), else named *name*, else all, in address order; *one*: the
        first only."""
        ...
    def symbol_address(self, name: str) -> Optional[int]:
        """The address of the one vmlinux symbol called *name*."""
        ...
    def data_symbol(self, name: str) -> Optional[int]:
        """The address of vmlinux's data symbol called *name*."""
        ...
    def modules(self) -> List[str]:
        """Names of the loaded modules."""
        ...
