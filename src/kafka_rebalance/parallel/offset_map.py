"""The completed-offsets map carried in a commit's metadata string.

A partition commits its lowest incomplete offset `base`; records above it
that already completed are listed in the metadata so a restarted consumer
skips them. Offsets are stored relative to `base` (`r = offset - base - 1`,
since `base` itself is incomplete by definition) in one of two encodings,
whichever is smaller:

- bitset: varint bit count, then bit r set (least significant bit first);
- run-length: varint run lengths alternating incomplete, complete, ...,
  starting with an incomplete run (possibly 0), ending with a complete run.

Bytes: magic b"KR", version 1, encoding id, payload; then base64 (commit
metadata is a string). An empty map is the empty string.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from enum import IntEnum

MAGIC = b"KR"
VERSION = 1
HEADER_LEN = len(MAGIC) + 2


class Encoding(IntEnum):
    BITSET = 1
    RUN_LENGTH = 2


class OffsetMapError(ValueError):
    """Metadata that is not a map of ours (other tool, newer version, corrupt)."""


def _varint(n: int, out: bytearray) -> None:
    if n < 0:
        raise ValueError(f"negative varint {n}")
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def varint_len(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = 0
    value = 0
    while True:
        if pos >= len(buf):
            raise OffsetMapError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise OffsetMapError("varint too long")


def _relative(base: int, completed: Iterable[int]) -> list[int]:
    rel = sorted({o - base - 1 for o in completed})
    if rel and rel[0] < 0:
        raise ValueError(
            f"completed offset {rel[0] + base + 1} is not above the committed offset {base}"
        )
    return rel


def _bitset_payload(rel: list[int]) -> bytes:
    nbits = rel[-1] + 1
    bits = bytearray((nbits + 7) // 8)
    for r in rel:
        bits[r >> 3] |= 1 << (r & 7)
    out = bytearray()
    _varint(nbits, out)
    return bytes(out + bits)


def _run_length_payload(rel: list[int]) -> bytes:
    out = bytearray()
    cursor = 0  # next relative offset not yet described
    i = 0
    while i < len(rel):
        start = rel[i]
        j = i
        while j + 1 < len(rel) and rel[j + 1] == rel[j] + 1:
            j += 1
        _varint(start - cursor, out)  # incomplete run
        _varint(rel[j] - start + 1, out)  # complete run
        cursor = rel[j] + 1
        i = j + 1
    return bytes(out)


def encode_raw(base: int, completed: Iterable[int], encoding: Encoding) -> bytes:
    """The unencoded bytes (header + payload) in one given encoding; b'' for an empty map."""
    rel = _relative(base, completed)
    if not rel:
        return b""
    payload = _bitset_payload(rel) if encoding is Encoding.BITSET else _run_length_payload(rel)
    return MAGIC + bytes((VERSION, int(encoding))) + payload


def encode_offset_map(base: int, completed: Iterable[int]) -> str:
    """Metadata string for offsets completed above `base`: the smaller encoding, base64."""
    rel = _relative(base, completed)
    if not rel:
        return ""
    bitset = _bitset_payload(rel)
    rle = _run_length_payload(rel)
    encoding, payload = (
        (Encoding.RUN_LENGTH, rle) if len(rle) < len(bitset) else (Encoding.BITSET, bitset)
    )
    return base64.b64encode(MAGIC + bytes((VERSION, int(encoding))) + payload).decode("ascii")


def b64_len(n: int) -> int:
    return 4 * ((n + 2) // 3)


def bitset_metadata_len(span: int) -> int:
    """Exact metadata length of the bitset encoding when the highest completed relative offset is span-1.

    An upper bound of the chosen encoding's length (the smaller one is chosen).
    """
    if span <= 0:
        return 0
    return b64_len(HEADER_LEN + varint_len(span) + (span + 7) // 8)


def decode_offset_map(base: int, metadata: str | None) -> frozenset[int]:
    """Absolute completed offsets above `base`; raises OffsetMapError for foreign or corrupt metadata."""
    if not metadata:
        return frozenset()
    try:
        raw = base64.b64decode(metadata.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise OffsetMapError(f"not base64: {exc}") from None
    if len(raw) < HEADER_LEN or raw[:2] != MAGIC:
        raise OffsetMapError("no offset-map magic")
    if raw[2] != VERSION:
        raise OffsetMapError(f"unsupported offset-map version {raw[2]}")
    try:
        encoding = Encoding(raw[3])
    except ValueError:
        raise OffsetMapError(f"unknown encoding {raw[3]}") from None
    pos = HEADER_LEN
    out: list[int] = []
    if encoding is Encoding.BITSET:
        nbits, pos = _read_varint(raw, pos)
        bits = raw[pos:]
        if len(bits) != (nbits + 7) // 8:
            raise OffsetMapError("bitset length does not match its bit count")
        for i, byte in enumerate(bits):
            while byte:
                low = byte & -byte
                r = i * 8 + low.bit_length() - 1
                if r >= nbits:
                    raise OffsetMapError("bit set past the bit count")
                out.append(base + 1 + r)
                byte ^= low
    else:
        cursor = 0
        while pos < len(raw):
            gap, pos = _read_varint(raw, pos)
            if pos >= len(raw):
                raise OffsetMapError("run-length map ends with an incomplete run")
            run, pos = _read_varint(raw, pos)
            if run == 0:
                raise OffsetMapError("empty complete run")
            cursor += gap
            out.extend(range(base + 1 + cursor, base + 1 + cursor + run))
            cursor += run
    return frozenset(out)
