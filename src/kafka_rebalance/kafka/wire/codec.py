"""Kafka's wire primitives and a schema-driven struct codec.

Mirrors how Kafka's message generator reads `clients/src/main/resources/common/message/*.json`:
a message is a list of fields, each present in a version range, optionally
nullable in a range; in *flexible* versions strings, bytes and arrays use the
compact encodings (unsigned varint length + 1, 0 meaning null) and every struct
ends with a tagged-field section (count, then tag/size/bytes per field).

Values are plain Python: a struct is a dict keyed by the field's snake_case
name, an array is a list, a null is None. Missing fields encode as the field's
default, so callers only write what they mean.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...fields import INT32_MAX, INT32_MIN

# ---------------------------------------------------------------------------
# Version ranges as the JSON specs write them: "0+", "1-4", "3", "none".


@dataclass(frozen=True, slots=True)
class Versions:
    low: int
    high: int  # inclusive; 32767 for "N+"

    @classmethod
    def parse(cls, text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), 0x7FFF)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        v = int(text)
        return cls(v, v)

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high


NONE = Versions(1, 0)

# ---------------------------------------------------------------------------
# Primitive reader and writer.


class DecodeError(ValueError):
    """The bytes do not match the schema (truncated, bad length, bad varint)."""


class Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes, pos: int = 0) -> None:
        self.buf = memoryview(buf)
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise DecodeError(
                f"need {n} bytes at offset {self.pos}, have {len(self.buf) - self.pos}"
            )
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    def _unpack(self, fmt: str, n: int):
        return struct.unpack(fmt, self.take(n))[0]

    def int8(self) -> int:
        return self._unpack(">b", 1)

    def int16(self) -> int:
        return self._unpack(">h", 2)

    def int32(self) -> int:
        return self._unpack(">i", 4)

    def int64(self) -> int:
        return self._unpack(">q", 8)

    def uint16(self) -> int:
        return self._unpack(">H", 2)

    def float64(self) -> float:
        return self._unpack(">d", 8)

    def boolean(self) -> bool:
        return self.take(1) != b"\x00"

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            if shift > 28:
                raise DecodeError("unsigned varint longer than 5 bytes")
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7

    def varint(self) -> int:
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)

    def uuid(self) -> str:
        return str(_uuid.UUID(bytes=self.take(16)))

    def remaining(self) -> int:
        return len(self.buf) - self.pos


class Writer:
    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts = bytearray()

    def raw(self, b: bytes) -> None:
        self.parts += b

    def int8(self, v: int) -> None:
        self.parts += struct.pack(">b", v)

    def int16(self, v: int) -> None:
        self.parts += struct.pack(">h", v)

    def int32(self, v: int) -> None:
        self.parts += struct.pack(">i", v)

    def int64(self, v: int) -> None:
        self.parts += struct.pack(">q", v)

    def uint16(self, v: int) -> None:
        self.parts += struct.pack(">H", v)

    def float64(self, v: float) -> None:
        self.parts += struct.pack(">d", v)

    def boolean(self, v: bool) -> None:
        self.parts += b"\x01" if v else b"\x00"

    def uvarint(self, v: int) -> None:
        if v < 0:
            raise ValueError(f"unsigned varint cannot hold {v}")
        while v >= 0x80:
            self.parts.append((v & 0x7F) | 0x80)
            v >>= 7
        self.parts.append(v)

    def varint(self, v: int) -> None:
        """Zig-zag signed int32 (Kafka's varint)."""
        if not INT32_MIN <= v <= INT32_MAX:
            raise ValueError(f"varint out of int32 range: {v}")
        self.uvarint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)

    def uuid(self, v: str | None) -> None:
        self.parts += _uuid.UUID(v).bytes if v else bytes(16)

    def getvalue(self) -> bytes:
        return bytes(self.parts)


# ---------------------------------------------------------------------------
# Schemas.

PRIMITIVES = (
    "int8",
    "int16",
    "int32",
    "int64",
    "uint16",
    "float64",
    "bool",
    "string",
    "bytes",
    "uuid",
)
_DEFAULTS = {
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "uint16": 0,
    "float64": 0.0,
    "bool": False,
    "string": "",
    "bytes": b"",
    "uuid": None,
}


@dataclass(frozen=True, slots=True)
class Field:
    """One field: `type` is a primitive name, "[]<primitive>", or a tuple of Fields (array of structs)."""

    name: str
    type: str | tuple[Field, ...]
    versions: Versions
    nullable: Versions = NONE
    default: Any = None
    tag: int | None = None
    flexible: bool = (
        True  # False: keep the classic encoding even in flexible versions (header ClientId)
    )
    is_array: bool = False
    struct_single: bool = False  # a nested struct that is not an array

    @property
    def element(self) -> str | tuple[Field, ...]:
        if isinstance(self.type, str) and self.type.startswith("[]"):
            return self.type[2:]
        return self.type

    def default_value(self):
        if self.default is not None:
            return self.default
        if self.is_array:
            return []
        if isinstance(self.type, str):
            return _DEFAULTS[self.type]
        return {}


def F(
    name: str,
    type_: str | Sequence[Field],
    versions: str = "0+",
    *,
    nullable: str = "none",
    default: Any = None,
    tag: int | None = None,
    flexible: bool = True,
) -> Field:
    """Field constructor with the JSON spec's spelling: F("replicas", "[]int32", "0+", nullable="0+")."""
    if isinstance(type_, str):
        is_array = type_.startswith("[]")
        el = type_[2:] if is_array else type_
        if el not in PRIMITIVES:
            raise ValueError(f"unknown primitive {el!r} in field {name}")
        return Field(
            name,
            type_,
            Versions.parse(versions),
            Versions.parse(nullable),
            default,
            tag,
            flexible,
            is_array=is_array,
        )
    return Field(
        name,
        tuple(type_),
        Versions.parse(versions),
        Versions.parse(nullable),
        default,
        tag,
        flexible,
        is_array=True,
    )


def S(name: str, fields: Sequence[Field], versions: str = "0+") -> Field:
    """A single nested struct (not an array)."""
    return Field(
        name,
        tuple(fields),
        Versions.parse(versions),
        NONE,
        None,
        None,
        True,
        is_array=False,
        struct_single=True,
    )


@dataclass(frozen=True, slots=True)
class Message:
    name: str
    api_key: int
    valid: Versions
    flexible: Versions
    fields: tuple[Field, ...] = field(default_factory=tuple)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def encode(self, version: int, data: dict) -> bytes:
        if version not in self.valid:
            raise ValueError(f"{self.name} has no version {version}")
        w = Writer()
        _write_struct(w, self.fields, version, self.is_flexible(version), data or {})
        return w.getvalue()

    def decode(self, version: int, buf: bytes | Reader) -> dict:
        if version not in self.valid:
            raise DecodeError(f"{self.name} has no version {version}")
        r = buf if isinstance(buf, Reader) else Reader(buf)
        return _read_struct(r, self.fields, version, self.is_flexible(version))


def _write_primitive(w: Writer, t: str, v, compact: bool, nullable: bool, where: str) -> None:
    if t == "string" or t == "bytes":
        if v is None:
            if not nullable:
                raise ValueError(f"{where} is not nullable in this version")
            w.uvarint(0) if compact else (w.int16(-1) if t == "string" else w.int32(-1))
            return
        raw = v.encode("utf-8") if t == "string" else bytes(v)
        if compact:
            w.uvarint(len(raw) + 1)
        elif t == "string":
            if len(raw) > 0x7FFF:
                raise ValueError(f"{where}: string longer than 32767 bytes")
            w.int16(len(raw))
        else:
            w.int32(len(raw))
        w.raw(raw)
    elif t == "bool":
        w.boolean(bool(v))
    elif t == "uuid":
        w.uuid(v)
    else:
        getattr(w, t)(int(v) if t != "float64" else float(v))


def _read_primitive(r: Reader, t: str, compact: bool):
    if t == "string" or t == "bytes":
        if compact:
            n = r.uvarint() - 1
        else:
            n = r.int16() if t == "string" else r.int32()
        if n < 0:
            return None
        raw = r.take(n)
        return raw.decode("utf-8") if t == "string" else raw
    if t == "bool":
        return r.boolean()
    if t == "uuid":
        return r.uuid()
    return getattr(r, t)()


def _write_value(w: Writer, f: Field, v, version: int, flexible: bool) -> None:
    compact = flexible and f.flexible
    nullable = version in f.nullable
    where = f.name
    if f.struct_single:
        assert isinstance(f.type, tuple)  # a struct field's type is its fields
        _write_struct(w, f.type, version, flexible, v or {})
        return
    if not f.is_array:
        assert isinstance(f.type, str)  # a scalar field's type is a primitive name
        _write_primitive(w, f.type, v, compact, nullable, where)
        return
    if v is None:
        if not nullable:
            raise ValueError(f"array {where} is not nullable in version {version}")
        w.uvarint(0) if compact else w.int32(-1)
        return
    items = list(v)
    w.uvarint(len(items) + 1) if compact else w.int32(len(items))
    el = f.element
    for item in items:
        if isinstance(el, tuple):
            _write_struct(w, el, version, flexible, item)
        else:
            _write_primitive(w, el, item, compact, False, where + "[]")


def _read_value(r: Reader, f: Field, version: int, flexible: bool):
    compact = flexible and f.flexible
    if f.struct_single:
        assert isinstance(f.type, tuple)
        return _read_struct(r, f.type, version, flexible)
    if not f.is_array:
        assert isinstance(f.type, str)
        return _read_primitive(r, f.type, compact)
    n = r.uvarint() - 1 if compact else r.int32()
    if n < 0:
        return None
    if n > r.remaining():
        raise DecodeError(f"array {f.name} claims {n} elements with {r.remaining()} bytes left")
    el = f.element
    if isinstance(el, tuple):
        return [_read_struct(r, el, version, flexible) for _ in range(n)]
    return [_read_primitive(r, el, compact) for _ in range(n)]


def _write_struct(w: Writer, fields: Sequence[Field], version: int, flexible: bool, data) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"expected a dict for a struct, got {type(data).__name__}")
    tagged: list[tuple[int, bytes]] = []
    for f in fields:
        if version not in f.versions:
            continue
        v = data.get(f.name, f.default_value())
        if f.tag is not None:
            if not flexible or v == f.default_value():
                continue
            tw = Writer()
            _write_value(tw, f, v, version, flexible)
            tagged.append((f.tag, tw.getvalue()))
            continue
        _write_value(w, f, v, version, flexible)
    if flexible:
        w.uvarint(len(tagged))
        for tag, raw in sorted(tagged):
            w.uvarint(tag)
            w.uvarint(len(raw))
            w.raw(raw)


def _read_struct(r: Reader, fields: Sequence[Field], version: int, flexible: bool) -> dict:
    out: dict = {}
    by_tag = {f.tag: f for f in fields if f.tag is not None and version in f.versions}
    for f in fields:
        if version not in f.versions:
            continue
        if f.tag is not None:
            out[f.name] = f.default_value()
            continue
        out[f.name] = _read_value(r, f, version, flexible)
    if flexible:
        for _ in range(r.uvarint()):
            tag = r.uvarint()
            size = r.uvarint()
            raw = r.take(size)
            if tag in by_tag:
                out[by_tag[tag].name] = _read_value(Reader(raw), by_tag[tag], version, flexible)
            else:
                out.setdefault("_unknown_tagged_fields", {})[tag] = raw
    return out
