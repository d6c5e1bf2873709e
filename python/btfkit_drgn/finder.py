"""drgn's type and object finders over a btfkit Kernel.

BTF types become drgn Types on first use and are kept by BTF id, so that a
type is one object however it is reached; struct and union members and
function parameters are lazy (drgn calls the thunk when a member's type is
first needed), so finding ``struct task_struct`` does not build the whole
kernel's types.
"""

from typing import Callable, Dict, List, Optional, Tuple, Union

from drgn import (
    FindObjectFlags,
    Object,
    ObjectNotFoundError,
    Program,
    Qualifiers,
    Type,
    TypeEnumerator,
    TypeKind,
    TypeKindSet,
    TypeMember,
    TypeParameter,
    filename_matches,
)

from ._native import BtfkitError, Kernel

_QUALIFIERS = {
    "const": Qualifiers.CONST,
    "volatile": Qualifiers.VOLATILE,
    "restrict": Qualifiers.RESTRICT,
}

# The C names of the integer type an enum of each size is compatible with.
_ENUM_INT = {
    (1, False): "unsigned char",
    (1, True): "signed char",
    (2, False): "unsigned short",
    (2, True): "short",
    (4, False): "unsigned int",
    (4, True): "int",
    (8, False): "unsigned long",
    (8, True): "long",
}

# The environment variable naming a BTF file to use instead of the kernel's own.
ENV_BTF = "BTFKIT_DRGN_BTF"

_TAGGED = {TypeKind.STRUCT: "struct", TypeKind.UNION: "union", TypeKind.ENUM: "enum"}


class Finder:
    """The type and object finders of one program."""

    def __init__(self, prog: Program, kernel: Kernel) -> None:
        self.prog = prog
        self.kernel = kernel
        self._types: Dict[int, Type] = {}
        self._modules = set(kernel.modules())
        self._global_variables = kernel.global_variables()
        # drgn asks again and again (crash `ps` looks up the same
        # enumerators for each task): answers, found or not, by question.
        self._found_types: Dict[Tuple[TypeKindSet, str, Optional[str]], Optional[Type]] = {}
        self._found_objects: Dict[Tuple[str, FindObjectFlags, Optional[str]], Optional[Object]] = {}

    # Types.

    def type(self, type_id: int) -> Type:
        """The drgn Type of a BTF id."""
        t = self._types.get(type_id)
        if t is None:
            t = self._make(type_id)
            self._types[type_id] = t
        return t

    def _lazy(self, type_id: int, bit_field_size: int = 0) -> Callable[[], Union[Type, Object]]:
        if bit_field_size:
            return lambda: Object(
                self.prog, self.type(type_id), bit_field_size=bit_field_size
            )
        return lambda: self.type(type_id)

    def _not_last(self, type_id: int) -> Type:
        """The type of a member that is not its struct's last: a BTF array
        of length 0 there is C's `x[0]` (a flexible `x[]` must be last)."""
        t = self.type(type_id)
        if t.kind == TypeKind.ARRAY and t.length is None:
            return self.prog.array_type(t.type, 0, qualifiers=t.qualifiers)
        return t

    def _make(self, type_id: int) -> Type:
        prog = self.prog
        d = self.kernel.describe(type_id)
        kind = d[0]
        if kind == "void":
            return prog.void_type()
        if kind == "int":
            _, name, size, signed, is_bool = d
            if is_bool:
                return prog.bool_type(name, size)
            return prog.int_type(name, size, signed)
        if kind == "float":
            return prog.float_type(d[1], d[2])
        if kind == "pointer":
            return prog.pointer_type(self.type(d[1]))
        if kind == "array":
            # BTF says 0 for both `x[0]` and `x[]` (GCC's DWARF: no length);
            # `[]` unless a struct member shows it is not last (_not_last).
            return prog.array_type(self.type(d[1]), d[2] or None)
        if kind in ("struct", "union"):
            _, tag, size, members = d
            made = prog.struct_type if kind == "struct" else prog.union_type
            last = len(members) - 1 if kind == "struct" else -1
            return made(
                tag,
                size,
                [
                    TypeMember(
                        (lambda ty=ty: self._not_last(ty))
                        if i != last and not bits
                        else self._lazy(ty, bits),
                        name,
                        bit_offset,
                    )
                    for i, (name, ty, bit_offset, bits) in enumerate(members)
                ],
            )
        if kind == "enum":
            _, tag, size, signed, values = d
            if not values and not size:
                return prog.enum_type(tag)
            compatible = prog.int_type(_ENUM_INT.get((size, signed), "int"), size, signed)
            return prog.enum_type(
                tag, compatible, [TypeEnumerator(n, v) for n, v in values]
            )
        if kind == "fwd":
            made = prog.struct_type if d[1] == "struct" else prog.union_type
            return made(d[2])
        if kind == "typedef":
            return prog.typedef_type(d[1], self.type(d[2]))
        if kind in _QUALIFIERS:
            inner = self.type(d[1])
            return inner.qualified(inner.qualifiers | _QUALIFIERS[kind])
        if kind == "type_tag":
            return self.type(d[1])
        if kind == "func":
            return self.type(d[2])
        if kind == "function":
            _, ret, params, variadic = d
            return prog.function_type(
                self.type(ret),
                [TypeParameter(self._lazy(ty), name) for name, ty in params],
                variadic,
            )
        raise BtfkitError(f"BTF type {type_id}: {kind} is not a type")

    def _module(self, filename: Optional[str]) -> Optional[str]:
        """The module a filename names (`dummy`, `dummy.ko`, `.../dummy.ko`);
        "" for no filename. BTF has no source files: any other filename
        matches nothing."""
        if not filename:
            return ""
        for m in self._modules:
            if filename_matches(m + ".ko", filename) or filename == m:
                return m
        return None

    def find_type(
        self, prog: Program, kinds: TypeKindSet, name: str, filename: Optional[str]
    ) -> Optional[Type]:
        key = (kinds, name, filename)
        try:
            return self._found_types[key]
        except KeyError:
            t = self._found_types[key] = self._find_type(kinds, name, filename)
            return t

    def _find_type(self, kinds: TypeKindSet, name: str, filename: Optional[str]) -> Optional[Type]:
        module = self._module(filename)
        if module is None:
            return None
        for kind in kinds:
            prefix = _TAGGED.get(kind)
            key = f"{prefix} {name}" if prefix else name
            if module:
                key = f"{module}:{key}"
            type_id = self.kernel.find_type(key)
            if type_id is None:
                continue
            t = self.type(type_id)
            if t.kind == kind:
                return t
        return None

    # Objects.

    def find_object(
        self, prog: Program, name: str, flags: FindObjectFlags, filename: Optional[str]
    ) -> Optional[Object]:
        key = (name, flags, filename)
        try:
            return self._found_objects[key]
        except KeyError:
            # A refusal (ObjectNotFoundError) is raised each time, not kept.
            o = self._found_objects[key] = self._find_object(prog, name, flags, filename)
            return o

    def _find_object(
        self, prog: Program, name: str, flags: FindObjectFlags, filename: Optional[str]
    ) -> Optional[Object]:
        module = self._module(filename)
        if module is None:
            return None
        key = f"{module}:{name}" if module else name
        if flags & FindObjectFlags.VARIABLE:
            var = self.kernel.variable(key)
            if var is not None:
                type_id, address, _ = var
                return Object(prog, self.type(type_id), address=address)
            addresses = self.kernel.ambiguous(key)
            if addresses:
                listed = ", ".join(hex(a) for a in addresses)
                raise ObjectNotFoundError(
                    f"{name} names several static variables ({listed})", name=name
                )
        if flags & FindObjectFlags.CONSTANT:
            found = self.kernel.enumerator(name)
            if found is not None and not module:
                _, enum_id = found
                enum = self.type(enum_id)
                for e in enum.enumerators or ():
                    if e.name == name:
                        return Object(prog, enum, e.value)
        if flags & FindObjectFlags.FUNCTION and not module:
            func = self.kernel.function(name)
            if func is not None:
                proto, address, by_name_only = func
                if by_name_only:
                    # Debian's BTF has one FUNC for both wakeup_show
                    # functions: a prototype that may be the other's.
                    raise ObjectNotFoundError(
                        f"{name} at {address:#x}: several functions have this name and "
                        "this BTF cannot tell which prototype is this one's (no addr= "
                        f"tags): set {ENV_BTF} to a BTF made by `btfkit encode`",
                        name=name,
                    )
                return Object(prog, self.type(proto), address=address)
        if flags & FindObjectFlags.VARIABLE and not module and not self._global_variables:
            address = self.kernel.data_symbol(name)
            if address is not None:
                raise ObjectNotFoundError(
                    f"could not find '{name}': kallsyms has it at {address:#x}, "
                    "but this BTF has no variables but per-CPU ones: set "
                    f"{ENV_BTF} to a BTF made by `btfkit encode VMLINUX --vars all`",
                    name=name,
                )
        return None


def symbol_kind_binding(letter: str) -> Tuple[str, str]:
    """drgn's SymbolKind and SymbolBinding names of an nm type letter."""
    if letter in "tTwW":
        kind = "FUNC"
    elif letter in "dDbBrRgG":
        kind = "OBJECT"
    else:
        kind = "UNKNOWN"
    if letter in "wWvV":
        binding = "WEAK"
    elif letter.isupper():
        binding = "GLOBAL"
    else:
        binding = "LOCAL"
    return kind, binding


__all__: List[str] = ["Finder", "symbol_kind_binding"]
