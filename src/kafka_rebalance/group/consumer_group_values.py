"""How the KIP-848 values are built and rebuilt: `replace` without per-call introspection,
`slot_init` (a faster `__init__` for an interpreted frozen slots dataclass) and `value_reduce` (their
pickling, the same whether a class is interpreted or a mypyc build's native class).

Split out of consumer_group_model (which re-exports these names) to keep that module to the values.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from operator import attrgetter
from types import MemberDescriptorType
from typing import Any, TypeVar

_T = TypeVar("_T")
_LAYOUT: dict[type, tuple[Any, dict[str, int]]] = {}


def replace(obj: _T, **changes: Any) -> _T:
    """dataclasses.replace for this package's frozen dataclasses (all fields in __init__), without
    its per-call field introspection: a heartbeat replaces a member or the group several times."""
    cls = type(obj)
    layout = _LAYOUT.get(cls)
    if layout is None:
        names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        get = attrgetter(*names) if len(names) > 1 else (lambda o, n=names[0]: (getattr(o, n),))
        layout = _LAYOUT[cls] = (get, {n: i for i, n in enumerate(names)})
    values = layout[0](obj)
    if changes:
        values = list(values)
        at = layout[1]
        for k, v in changes.items():
            values[at[k]] = v
    return cls(*values)


_C = TypeVar("_C", bound=type)


class _Factory:
    """A default_factory field's parameter left out (shown as dataclasses shows it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_NOT_GIVEN: Any = _Factory()


def slot_init(cls: _C) -> _C:
    """Give a frozen slots dataclass an `__init__` that stores each field through its slot's own
    setter (bound once) instead of `object.__setattr__`: the same parameters, defaults and
    default factories, the same values, about half the cost (a heartbeat builds several of these
    values). Everything else stays the dataclass's (eq, hash, repr, frozen, replace, pickling)."""
    if hasattr(cls, "__post_init__"):  # the generated __init__ would not call it
        raise TypeError(f"{cls.__name__}: slot_init does not run __post_init__")
    params, body, ns = [], [], {"_NOT_GIVEN": _NOT_GIVEN}
    for i, f in enumerate(fields(cls)):
        slot = cls.__dict__[f.name]
        if not f.init or not isinstance(slot, MemberDescriptorType):
            raise TypeError(f"{cls.__name__}.{f.name}: not a slot set by __init__")
        ns[f"_set{i}"] = slot.__set__
        if f.default is not MISSING:
            ns[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
        elif f.default_factory is not MISSING:
            ns[f"_factory{i}"] = f.default_factory
            params.append(f"{f.name}=_NOT_GIVEN")
            body.append(f"    if {f.name} is _NOT_GIVEN:\n        {f.name} = _factory{i}()")
        else:
            params.append(f.name)
        body.append(f"    _set{i}(self, {f.name})")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n", ns)  # noqa: S102
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    # the dataclass's own (each field's type), whatever `__init__` the class body wrote
    init.__annotations__ = {**{f.name: f.type for f in fields(cls)}, "return": None}
    setattr(cls, "__init__", init)  # noqa: B010
    return cls


def value_reduce(value: Any) -> tuple:
    """`__reduce__` of this package's frozen dataclasses: rebuilt through the constructor from the
    fields in order. Pickling, `copy` and `deepcopy` then give an equal value whether the class is
    interpreted or a native class of a mypyc build (whose own `__setstate__` would set a frozen
    field and raise FrozenInstanceError)."""
    cls = type(value)
    return cls, tuple([getattr(value, f.name) for f in fields(cls)])


def fast_inits(*classes: type) -> None:
    """`slot_init` for each of `classes` that is interpreted (the sources); the native classes of a
    mypyc build store their fields directly already (and their type is immutable)."""
    for cls in classes:
        if all(isinstance(vars(cls).get(f.name), MemberDescriptorType) for f in fields(cls)):
            slot_init(cls)
