"""Properties of the pass's per-task body (no Spark): PassDecoder against the wide per-record decoding.

For any batches (the fast-decode tests' generator: valid, damaged and foreign
records), PassDecoder yields exactly the offset commits of decode_batches, in
order; its side rows are exactly the other rows; its latest-offset candidates
reduce to the last record per key by log position; its counts add up; and
every commit falls in a segment of its group that no GroupMetadata record of
the same batch splits.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.pipeline.offsets_decode import decode_batches
from kafka_rebalance.pipeline.offsets_pass import (
    COMMIT_COLUMNS,
    PassDecoder,
    PassState,
    reduce_latest,
)
from test_pipeline_fast_decode import batch


def _wide_rows(batches):
    return [r for b in decode_batches(iter(batches)) for r in b.to_pylist()]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(batch(), min_size=1, max_size=3))
def test_pass_decoder_splits_the_wide_rows(drawn):
    batches = [b for x in drawn for b in (x if isinstance(x, list) else [x])]
    wide = _wide_rows(batches)
    dec = PassDecoder(7)
    commits = [r for b in dec.batches(iter(batches)) for r in b.to_pylist()]
    state = dec.state.finish()

    live = [r for r in wide if r["kind"] == "offset_commit" and not r["tombstone"]]
    assert commits == [{c: r[c] for c in COMMIT_COLUMNS} for r in live]

    side = pa.concat_tables(state.side).to_pylist() if state.side else []
    others = [r for r in wide if r["kind"] != "offset_commit"]
    assert [{k: v for k, v in r.items() if not k.startswith("_")} for r in side] == others
    assert all(r["_task"] == 7 for r in side) and [r["_seq"] for r in side] == sorted(
        r["_seq"] for r in side
    )

    last: dict = {}
    for r in wide:
        if r["kind"] == "offset_commit":
            key = (r["group"], r["topic"], r["partition"])
            pos = r["record_partition"] * (1 << 40) + r["record_offset"]
            if key not in last or pos >= last[key][0]:
                last[key] = (pos, r["tombstone"], r["offset"], r["metadata"], r["commit_timestamp"])
    got = (
        {}
        if state.latest is None
        else {
            (r["group"], r["topic"], r["partition"]): (
                r["pos"],
                r["tombstone"],
                r["offset"],
                r["metadata"],
                r["commit_timestamp"],
            )
            for r in state.latest.to_pylist()
        }
    )
    assert {k: v[0] for k, v in got.items()} == {k: v[0] for k, v in last.items()}
    assert all(
        got[k][1:] == last[k][1:]
        for k in got
        if sum(
            1
            for r in wide
            if r["kind"] == "offset_commit"
            and (r["group"], r["topic"], r["partition"]) == k
            and r["record_partition"] * (1 << 40) + r["record_offset"] == last[k][0]
        )
        == 1
    )  # ties: any of them

    kinds: dict = {}
    for (kind, _, _), n in state.counts.items():
        kinds[kind] = kinds.get(kind, 0) + n
    assert kinds == {k: sum(1 for r in wide if r["kind"] == k) for k in {r["kind"] for r in wide}}

    segs = pa.concat_tables(state.segments).to_pylist() if state.segments else []
    assert sum(1 for _ in live) == 0 or segs
    for r in live:
        assert any(
            s["group"] == r["group"] and s["c_lo"] <= r["record_offset"] <= s["c_hi"] for s in segs
        )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["g", "h", "é"]),
            st.sampled_from(["t", "u"]),
            st.integers(0, 2),
            st.integers(0, 50),
        ),
        max_size=60,
    ),
    st.integers(1, 20),
)
def test_reduce_latest_in_any_chunking_keeps_the_last_record_per_key(rows, chunk):
    table = pa.table(
        {
            "group": [r[0] for r in rows],
            "topic": [r[1] for r in rows],
            "partition": pa.array([r[2] for r in rows], pa.int32()),
            "pos": pa.array([r[3] for r in rows], pa.int64()),
            "row": pa.array(range(len(rows)), pa.int64()),
        }
    )
    state = PassState()
    for i in range(0, len(rows), chunk):
        state.add_latest(reduce_latest(table.slice(i, chunk)))
    state.finish()
    want: dict = {}
    for g, t, p, pos in rows:
        if (g, t, p) not in want or pos >= want[(g, t, p)]:
            want[(g, t, p)] = pos
    got = (
        {}
        if state.latest is None
        else {(r["group"], r["topic"], r["partition"]): r["pos"] for r in state.latest.to_pylist()}
    )
    assert got == want and (state.latest is None or state.latest.num_rows == len(want))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(batch(), min_size=1, max_size=2))
def test_a_task_update_applied_twice_counts_once(drawn):
    """Spark may deliver a task's accumulator update twice (a re-run stage): the merge keeps one."""
    import pickle

    batches = [b for x in drawn for b in (x if isinstance(x, list) else [x])]
    dec = PassDecoder(3)
    for _ in dec.batches(iter(batches)):
        pass
    update = pickle.dumps(dec.state.finish())  # what a task ships to the driver
    once = PassState().merge(pickle.loads(update)).finish()
    twice = PassState().merge(pickle.loads(update)).merge(pickle.loads(update)).finish()
    assert twice.counts == once.counts
    assert len(twice.side) == len(once.side) and len(twice.segments) == len(once.segments)
    other = PassDecoder(4)
    for _ in other.batches(iter(batches)):
        pass
    both = PassState().merge(pickle.loads(update)).merge(other.state.finish()).finish()
    assert both.tasks == {3, 4}
    assert all(both.counts[k] == 2 * v for k, v in once.counts.items())
