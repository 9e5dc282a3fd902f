"""KIP-848 episodes from records a real Kafka 4.0 broker wrote (tests/data/consumer_offsets_corpus.jsonl).

The coordinator writes a join's subscription record and a leave's tombstones
(current and target assignment, subscription, partition metadata) *before*
the group epoch record of the same batch. Read one by one they emptied the
previous episode's target: every episode of a real group showed 0 members
and 0 partitions assigned. Decoded through the job's own batch decoder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from kafka_rebalance.pipeline.consumer_rebalances import consumer_episodes
from kafka_rebalance.pipeline.offsets_decode import arrow_schema, decode_slow

CORPUS = Path(__file__).parent / "data" / "consumer_offsets_corpus.jsonl"


def corpus_rows(made_by: str) -> list[dict]:
    """The corpus records of one capture, decoded by the offsets job, as consumer_episodes reads them."""
    recs = [json.loads(ln) for ln in CORPUS.read_text().splitlines() if ln.strip()]
    recs = [r for r in recs if r["made_by"] == made_by]
    ts_type = pa.timestamp("ms")
    batch = pa.RecordBatch.from_pydict(
        {
            "key": [bytes.fromhex(r["key"]) for r in recs],
            "value": [None if r["value"] is None else bytes.fromhex(r["value"]) for r in recs],
            "topic": ["__consumer_offsets"] * len(recs),
            "partition": pa.array([r["partition"] for r in recs], pa.int32()),
            "offset": pa.array([r["offset"] for r in recs], pa.int64()),
            "timestamp": pa.array([1_000 * r["offset"] for r in recs], ts_type),
        }
    )
    out = decode_slow(batch, arrow_schema(ts_type), {})
    out = out.filter(pc.equal(out.column("kind"), "consumer_group"))
    rows = out.select(["group", "key_version", "member_id", "tombstone", "epoch", "partitions"])
    offsets = out.column("record_offset").to_pylist()
    return [dict(r, ts_ms=1_000 * o) for r, o in zip(rows.to_pylist(), offsets)]


def brief(ep: dict) -> tuple:
    return (
        ep["generation_from"],
        ep["generation_to"],
        ep["members_before"],
        ep["members_after"],
        len(ep["joined"]),
        len(ep["left"]),
        ep["partitions_assigned"],
        ep["partitions_moved"],
        ep["partitions_unassigned"],
        ep["end_ms"] is not None,
    )


def test_real_broker_join_and_leave_episodes_keep_their_members_and_partitions():
    """Uniform assignor, 12 partitions: m1 joins (all 12), m2 joins (6 move), m2 leaves, m1 leaves."""
    rows = corpus_rows("java consumer protocol (KIP-848), uniform, rack")
    assert len(rows) == 25  # of 43 records: the rest are offset commits
    eps = consumer_episodes(rows)
    assert [brief(e) for e in eps] == [
        (None, 1, 0, 1, 1, 0, 12, 0, 0, True),
        (1, 2, 1, 2, 1, 0, 12, 6, 0, True),  # 6 of m1's 12 move to m2; both reach epoch 2
        (2, 3, 2, 1, 0, 1, 6, 0, 6, False),  # m2 leaves: its 6 are unassigned (m1 closes first)
        (3, 4, 1, 0, 0, 1, 0, 0, 6, False),  # m1 leaves: the group is empty
    ]
    assert eps[1]["joined"] != eps[0]["joined"] and eps[2]["left"] == eps[1]["joined"]


def test_group_deletion_after_the_last_leave_ends_the_replay():
    rows = corpus_rows("java consumer protocol (KIP-848), range, non-ASCII group; group deleted")
    eps = consumer_episodes(rows)
    assert [e["generation_to"] for e in eps] == [1, 2, 3, 4]
    assert [e["partitions_assigned"] for e in eps] == [12, 12, 6, 0]
    assert rows[-1]["key_version"] == 3 and rows[-1]["tombstone"]  # the group tombstone is last


def test_records_read_one_by_one_would_empty_the_target_before_the_epoch_bump():
    """The leave's tombstones precede its type-3 record in the log (the cause of the old bug)."""
    rows = corpus_rows("java consumer protocol (KIP-848), uniform, rack")
    types = [(r["key_version"], r["tombstone"]) for r in rows]
    leave = types.index((8, True))
    assert types[leave : leave + 4] == [(8, True), (7, True), (5, True), (3, False)]
