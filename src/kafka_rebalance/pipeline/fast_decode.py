"""Vectorised decoding of the common `__consumer_offsets` record shapes (issue 5).

Nearly every record in `__consumer_offsets` is an OffsetCommitKey v0/v1 with an
OffsetCommitValue v1 or v3, or a tombstone. Decoding those one Python object
at a time (offsets_decode.decode_batches' exact path) costs ~5-10 us a record; here
they are decoded over the Arrow buffers with numpy: the big-endian integers are
gathered by fancy indexing, the strings copied into fresh Arrow string buffers.

`split_fast(batch)` returns the decoded columns for the rows it can prove are
one of those shapes (in bounds, non-negative string lengths, valid UTF-8,
non-null key, partition, offset and timestamp) and the indices of every other
row, which the caller decodes with the exact slow path (group.records), so
outputs and quarantine reasons never depend on which path a row took.
Trailing bytes after a key or value are ignored, as group.records ignores them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..fields import INT32_MAX


def _buffers(arr) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(start, length, data bytes) of a binary/large_binary Arrow array, or None for other layouts."""
    import pyarrow as pa

    otype: type[np.signedinteger[Any]]
    if pa.types.is_binary(arr.type):
        otype = np.int32
    elif pa.types.is_large_binary(arr.type):
        otype = np.int64
    else:
        return None
    bufs = arr.buffers()
    n = len(arr)
    offsets = np.frombuffer(bufs[1], dtype=otype, count=arr.offset + n + 1)[arr.offset :].astype(
        np.int64
    )
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return offsets[:-1], np.diff(offsets), data


def _be(data: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Big-endian signed integers of `width` bytes at byte positions `pos` (all in bounds)."""
    if len(pos) == 0:
        return np.zeros(0, np.int64)
    raw = data[pos[:, None] + np.arange(width)]
    return np.ascontiguousarray(raw).view(f">i{width}").ravel().astype(np.int64)


def _strings(
    data: np.ndarray, start: np.ndarray, length: np.ndarray, null: np.ndarray | None = None
):
    """(Arrow string array of the byte ranges, null where `null`; mask of rows that are valid UTF-8)."""
    import pyarrow as pa

    n = len(start)
    out_off = np.zeros(n + 1, np.int64)
    np.cumsum(length, out=out_off[1:])
    total = int(out_off[-1])
    if total:
        idx = np.repeat(start - out_off[:-1], length) + np.arange(total, dtype=np.int64)
        chars = data[idx]
    else:
        chars = np.zeros(0, np.uint8)
    ok = np.ones(n, bool)
    nonascii = chars >= 0x80
    if (
        nonascii.any()
    ):  # rows with non-ASCII bytes: check exactly, as Python's strict UTF-8 decoder does
        high = np.zeros(total + 1, np.int64)
        np.cumsum(nonascii, out=high[1:])
        for i in np.flatnonzero(high[out_off[1:]] - high[out_off[:-1]]):
            try:
                chars[out_off[i] : out_off[i + 1]].tobytes().decode("utf-8")
            except UnicodeDecodeError:
                ok[i] = False
    otype, atype = (np.int32, pa.string()) if total <= INT32_MAX else (np.int64, pa.large_string())
    validity = None
    if null is not None and null.any():
        validity = pa.py_buffer(np.packbits(~null, bitorder="little").tobytes())
    arr = pa.Array.from_buffers(
        atype,
        n,
        [validity, pa.py_buffer(out_off.astype(otype).tobytes()), pa.py_buffer(chars.tobytes())],
    )
    if atype != pa.string():
        arr = arr.cast(pa.string())
    return arr, ok


def constant_strings(text: str, n: int):
    """An Arrow string array of `n` copies of `text`, built straight from buffers."""
    import pyarrow as pa

    raw = text.encode("utf-8")
    offsets = np.arange(0, len(raw) * (n + 1), len(raw), dtype=np.int64)
    otype, atype = (
        (np.int32, pa.string()) if offsets[-1] <= INT32_MAX else (np.int64, pa.large_string())
    )
    arr = pa.Array.from_buffers(
        atype, n, [None, pa.py_buffer(offsets.astype(otype).tobytes()), pa.py_buffer(raw * n)]
    )
    return arr if atype == pa.string() else arr.cast(pa.string())


def split_fast(batch) -> tuple[np.ndarray, dict[str, Any], np.ndarray]:
    """(fast row indices, their decoded columns, slow row indices) of a Kafka-source Arrow batch.

    Columns are keyed by offsets_decode.DECODED_SCHEMA field names; numeric ones are
    (numpy values, numpy null mask or None) pairs, string ones Arrow arrays,
    `record_ts` the Arrow timestamp column taken at the fast rows.
    """
    import pyarrow as pa

    n = batch.num_rows
    everything = np.arange(n, dtype=np.int64)
    keys, values = batch.column("key"), batch.column("value")
    kb, vb = _buffers(keys), _buffers(values)
    if kb is None or vb is None or n == 0:
        return np.zeros(0, np.int64), {}, everything
    kstart, klen, kdata = kb
    vstart, vlen, vdata = vb

    def valid(col) -> np.ndarray:
        if col.null_count == 0:
            return np.ones(n, bool)
        return np.asarray(col.is_valid().to_numpy(zero_copy_only=False), bool)

    ts = batch.column("timestamp")
    cand = (
        valid(keys) & valid(ts) & valid(batch.column("partition")) & valid(batch.column("offset"))
    )
    # Key: int16 version (0/1), int16 group length, group, int16 topic length, topic, int32 partition.
    cand &= klen >= 4
    rows = np.flatnonzero(cand)
    kver = _be(kdata, kstart[rows], 2)
    glen = _be(kdata, kstart[rows] + 2, 2)
    ok = ((kver == 0) | (kver == 1)) & (glen >= 0) & (klen[rows] >= 6 + glen)
    rows, kver, glen = rows[ok], kver[ok], glen[ok]
    tlen = _be(kdata, kstart[rows] + 4 + glen, 2)
    ok = (tlen >= 0) & (klen[rows] >= 10 + glen + tlen)
    rows, kver, glen, tlen = rows[ok], kver[ok], glen[ok], tlen[ok]
    # Value: null (tombstone), or int16 version 1 or 3 with every field in bounds.
    vnull = ~valid(values)[rows]
    vl = np.where(vnull, 0, vlen[rows])
    vs = vstart[rows]
    vver = np.full(len(rows), -1, np.int64)
    has2 = ~vnull & (vl >= 2)
    vver[has2] = _be(vdata, vs[has2], 2)
    mstart = np.where(vver == 3, 14, 10)  # metadata length position within the value
    shaped = ~vnull & ((vver == 3) & (vl >= 16) | (vver == 1) & (vl >= 12))
    mlen = np.full(len(rows), -1, np.int64)
    mlen[shaped] = _be(vdata, vs[shaped] + mstart[shaped], 2)
    tail = np.where(vver == 3, 8, 16)  # commitTimestamp (+ expireTimestamp for v1)
    shaped &= (mlen >= 0) & (vl >= mstart + 2 + mlen + tail)
    keep = vnull | shaped
    rows, kver, glen, tlen = rows[keep], kver[keep], glen[keep], tlen[keep]
    vnull, vs, vver, mlen, mstart = vnull[keep], vs[keep], vver[keep], mlen[keep], mstart[keep]

    ks = kstart[rows]
    group, gok = _strings(kdata, ks + 4, glen)
    topic, tok = _strings(kdata, ks + 6 + glen, tlen)
    live = ~vnull
    meta_start = np.where(live, vs + mstart + 2, 0)
    meta, mok = _strings(vdata, meta_start, np.where(live, mlen, 0), vnull)
    utf8 = gok & tok & mok
    if not utf8.all():
        rows = rows[utf8]
        group, topic, meta = (
            group.filter(pa.array(utf8)),
            topic.filter(pa.array(utf8)),
            meta.filter(pa.array(utf8)),
        )
        kver, glen, tlen, vnull, vs, vver, mlen, mstart, ks, live = (
            a[utf8] for a in (kver, glen, tlen, vnull, vs, vver, mlen, mstart, ks, live)
        )
    m = len(rows)

    partition = _be(kdata, ks + 6 + glen + tlen, 4)
    offset = np.zeros(m, np.int64)
    epoch = np.full(m, -1, np.int64)
    cts = np.zeros(m, np.int64)
    ets = np.full(m, -1, np.int64)
    offset[live] = _be(vdata, vs[live] + 2, 8)
    v3 = live & (vver == 3)
    epoch[v3] = _be(vdata, vs[v3] + 10, 4)
    after = vs + mstart + 2 + mlen  # commitTimestamp position
    cts[live] = _be(vdata, after[live], 8)
    v1 = live & (vver == 1)
    ets[v1] = _be(vdata, after[v1] + 8, 8)
    take = pa.array(rows)
    cols: dict[str, Any] = {
        "record_partition": (batch.column("partition").take(take)),
        "record_offset": (batch.column("offset").take(take)),
        "record_ts": ts.take(take),
        "key_version": (kver, None),
        "value_version": (vver, vnull),
        "tombstone": (vnull, None),
        "group": group,
        "topic": topic,
        "partition": (partition, None),
        "offset": (offset, vnull),
        "leader_epoch": (epoch, vnull),
        "metadata": meta,
        "commit_timestamp": (cts, vnull),
        "expire_timestamp": (ets, vnull),
    }
    slow = np.ones(n, bool)
    slow[rows] = False
    return rows, cols, np.flatnonzero(slow)
