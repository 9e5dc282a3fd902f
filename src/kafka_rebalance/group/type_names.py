"""How a mypyc build names a value's type in its TypeError ("int object expected; got float"), for
the sources to refuse a value with the same message as the build: `classic_member.ints` and the
KIP-848 values' `slot_init` (`consumer_group_values`).

Plain Python, outside the group's compiled set (only a refusal calls it): the classic modules and
the KIP-848 ones both import it without importing each other.
"""

from __future__ import annotations


def type_name(value: object) -> str:
    """mypyc's name of a value's type in its TypeError (lib-rt CPy_FormatTypeName): a tuple's
    items' types (an empty tuple is "tuple[", as mypyc writes it), `None`, builtins bare, other
    types as module.qualname."""
    if value is None:
        return "None"
    if type(value) is tuple:
        if len(value) > 10:
            return f"tuple[<{len(value)} items>]"
        return "tuple[" + ", ".join(type_name(v) for v in value) + ("]" if value else "")
    t = type(value)
    module, name = getattr(t, "__module__", None), getattr(t, "__qualname__", None)
    return str(name) if module == "builtins" else f"{module}.{name}"
