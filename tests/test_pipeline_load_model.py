"""Load model: Cruise Control's window rules on tiny hand-computed samples."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from kafka_rebalance.errors import InputError
from kafka_rebalance.pipeline.load_model import LoadModelConfig, admit_windows, run_load_model

W = 60_000  # one-minute windows keep the numbers small
BASE = 1000 * W  # window index 1000 starts here


def sample(window, offset_s, broker, partition, leader, bytes_in, size=0.0, topic="t"):
    return {
        "ts": pd.Timestamp(BASE + (window - 1000) * W + offset_s * 1000, unit="ms"),
        "broker": broker,
        "topic": topic,
        "partition": partition,
        "is_leader": leader,
        "bytes_in": float(bytes_in),
        "bytes_out": 2.0 * bytes_in,
        "messages_in": bytes_in / 10.0,
        "size_bytes": float(size),
        "cpu": 0.5,
    }


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    rows = [
        # partition 0: led by broker 1 throughout; broker 2 follows (its samples never count).
        sample(1000, 5, 1, 0, True, 1000, 1),  # too old for a 3-window model
        sample(1002, 1, 1, 0, True, 10, 100),
        sample(1002, 30, 1, 0, True, 20, 110),
        sample(1003, 1, 1, 0, True, 30, 120),
        sample(1003, 20, 1, 0, True, 30, 130),
        sample(1003, 40, 1, 0, True, 30, 140),
        sample(1004, 1, 1, 0, True, 40, 150),
        sample(1004, 50, 1, 0, True, 60, 160),
        sample(1002, 2, 2, 0, False, 999, 5),
        sample(1004, 2, 2, 0, False, 999, 5),
        # partition 1: window 1004 has a single sample, so it is invalid there.
        sample(1002, 1, 2, 1, True, 100, 10),
        sample(1002, 9, 2, 1, True, 300, 20),
        sample(1003, 1, 2, 1, True, 500, 30),
        sample(1003, 9, 2, 1, True, 700, 40),
        sample(1004, 1, 2, 1, True, 7, 50),
        sample(1003, 1, 1, 1, False, 1, 1),
        # partition 2: only follower samples, never a leader sample: never valid.
        sample(1003, 1, 3, 2, False, 5, 5),
        sample(1003, 2, 3, 2, False, 5, 5),
    ]
    df = pd.DataFrame(rows)
    bad = df.iloc[[1]].copy()
    bad["ts"] = pd.NaT
    df = pd.concat([df, bad], ignore_index=True)
    path = tmp_path_factory.mktemp("samples") / "samples.parquet"
    df.to_parquet(path, index=False)
    return path


def load(out):
    return pd.read_parquet(out / "partition_load.parquet").set_index("partition")


def test_admit_windows_is_cruise_controls_greedy_newest_first():
    # bit 2 = newest window. Partition masks: A valid everywhere, B not in the newest.
    counts = {0b111: 1, 0b011: 1}
    assert admit_windows(counts, 3, 2, 1.0) == [1, 0]
    assert admit_windows(counts, 3, 2, 0.5) == [2, 1, 0]
    assert admit_windows({0b000: 2}, 3, 2, 0.1) == []


@pytest.fixture(scope="module")
def model_06(spark, samples, tmp_path_factory):
    """The model at min_valid_ratio 0.6 (shared by two tests: one Spark run)."""
    out = tmp_path_factory.mktemp("model06")
    cfg = LoadModelConfig(window_ms=W, windows=3, min_samples=2, min_valid_ratio=0.6)
    return run_load_model(spark, str(samples), str(out), cfg), out


def test_the_newest_window_is_dropped_when_it_would_disqualify_too_many(model_06):
    res, tmp_path = model_06
    s = res.summary
    assert (s["partitions"], s["valid_partitions"], s["windows"], s["ready"]) == (3, 2, 2, True)
    assert s["admitted_window_starts_ms"] == [BASE + 2 * W, BASE + 3 * W]
    assert res.not_ready == [("t", 2)]
    assert s["quarantined"] == 1
    t = load(tmp_path)
    # partition 0 over windows 1002 and 1003: means 15 and 30; size = last sample of 1003.
    assert t.loc[0, "bytes_in"] == pytest.approx(22.5)
    assert t.loc[0, "bytes_out"] == pytest.approx(45.0)
    assert t.loc[0, "size_bytes"] == 140.0
    assert t.loc[0, "valid_windows"] == 3 and t.loc[0, "windows_used"] == 2
    # partition 1: means 200 and 600 -> 400; the follower sample of broker 1 is ignored.
    assert t.loc[1, "bytes_in"] == pytest.approx(400.0)
    assert t.loc[1, "size_bytes"] == 40.0
    assert t.loc[1, "valid_windows"] == 2
    assert not t.loc[2, "valid"] and t.loc[2, "valid_windows"] == 0
    q = pd.read_parquet(tmp_path / "quarantine.parquet")
    assert list(q["reason"]) == ["null ts"]


def test_all_recent_windows_when_a_lower_ratio_allows_them(spark, samples, tmp_path):
    cfg = LoadModelConfig(window_ms=W, windows=3, min_samples=2, min_valid_ratio=0.3)
    res = run_load_model(spark, str(samples), str(tmp_path), cfg)
    assert (res.summary["windows"], res.summary["valid_partitions"]) == (3, 1)
    assert res.not_ready == [("t", 1), ("t", 2)]
    t = load(tmp_path)
    assert t.loc[0, "bytes_in"] == pytest.approx((15 + 30 + 50) / 3)
    assert t.loc[0, "size_bytes"] == 160.0
    # not-ready partition 1 still gets a best-effort load from its own valid windows
    assert t.loc[1, "bytes_in"] == pytest.approx(400.0) and t.loc[1, "windows_used"] == 2


def test_not_ready_lists_partitions_and_min_samples_counts(spark, samples, tmp_path):
    cfg = LoadModelConfig(window_ms=W, windows=3, min_samples=3, min_valid_ratio=0.995)
    res = run_load_model(spark, str(samples), str(tmp_path), cfg)
    # min 3 samples: only partition 0 window 1003 qualifies -> 1/3 < 99.5%: nothing admitted.
    assert res.summary["ready"] is False and res.summary["windows"] == 0
    assert res.not_ready == [("t", 0), ("t", 1), ("t", 2)]
    assert load(tmp_path).loc[0, "valid_windows"] == 1


def test_snapshot_is_inferred_with_load_and_broker_load_written(model_06):
    _, tmp_path = model_06
    snap = json.loads((tmp_path / "snapshot.json").read_text())
    assert [b["id"] for b in snap["brokers"]] == [1, 2, 3]
    p0 = next(p for p in snap["partitions"] if p["partition"] == 0)
    assert p0["leader"] == 1 and p0["replicas"] == [1, 2] and p0["isr"] == [1, 2]
    assert p0["load"]["bytes_in"] == pytest.approx(22.5) and p0["load"]["size_bytes"] == 140.0
    p2 = next(p for p in snap["partitions"] if p["partition"] == 2)
    assert p2["leader"] is None and "load" not in p2
    bl = pd.read_parquet(tmp_path / "broker_load.parquet")
    b1 = bl[(bl.broker == 1) & (bl.window_start_ms == BASE + 4 * W)].iloc[0]
    assert b1["bytes_in"] == pytest.approx(50.0) and b1["leaders"] == 1 and b1["replicas"] == 1
    b2 = bl[(bl.broker == 2) & (bl.window_start_ms == BASE + 4 * W)].iloc[0]
    assert b2["bytes_in"] == pytest.approx(7.0) and b2["replication_bytes_in"] == pytest.approx(
        999.0
    )
    assert b2["leaders"] == 1 and b2["replicas"] == 2


def test_a_file_uri_output_gets_the_plain_paths_outputs(model_06, spark, samples, tmp_path):
    """A file:// URI output gets the outputs a plain path gets (the URI goes through Hadoop's file system)."""
    _, plain = model_06
    cfg = LoadModelConfig(window_ms=W, windows=3, min_samples=2, min_valid_ratio=0.6)
    run_load_model(spark, str(samples), f"file://{tmp_path}/out", cfg)
    out = tmp_path / "out"
    for name in ("quarantine.parquet", "partition_load.parquet", "broker_load.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(out / name), pd.read_parquet(plain / name))
    assert (out / "snapshot.json").read_text() == (plain / "snapshot.json").read_text()


def test_given_snapshot_keeps_brokers_and_gets_load(spark, samples, tmp_path):
    snap_in = {
        "brokers": [{"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}, {"id": 3, "rack": "c"}],
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [2, 1], "leader": 1, "isr": [2, 1]},
            {"topic": "t", "partition": 9, "replicas": [3], "leader": 3, "isr": [3]},
        ],
    }
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap_in))
    cfg = LoadModelConfig(window_ms=W, windows=3, min_samples=2, min_valid_ratio=0.5)
    res = run_load_model(spark, str(samples), str(tmp_path / "out"), cfg, snapshot=str(path))
    snap = json.loads((tmp_path / "out" / "snapshot.json").read_text())
    assert snap["brokers"] == snap_in["brokers"]
    assert snap["partitions"][0]["replicas"] == [2, 1] and "load" in snap["partitions"][0]
    assert "load" not in snap["partitions"][1]
    assert res.summary["partitions"] == 4 and ("t", 9) in res.not_ready


def test_missing_column_names_the_field(spark, tmp_path):
    path = tmp_path / "s.parquet"
    pd.DataFrame({"ts": [pd.Timestamp(0)], "broker": [1]}).to_parquet(path)
    with pytest.raises(InputError) as e:
        run_load_model(spark, str(path), str(tmp_path / "o"))
    assert e.value.field == "topic"


def _write(rows, path):
    """Through Arrow from Python values: pandas would turn NaN into null on the way to Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([dict(r, ts=r["ts"].to_pydatetime()) for r in rows]), path)


def _good_rows():
    return [sample(1003, s, 1, p, True, 10 * (p + 1), 100) for p in range(2) for s in (1, 2, 3)]


def test_non_finite_and_negative_metrics_are_quarantined_and_the_snapshot_stays_valid(
    spark, tmp_path
):
    from kafka_rebalance.cluster.snapshot import parse_snapshot

    rows = _good_rows()
    bad = [
        dict(rows[0], bytes_in=float("nan")),
        dict(rows[1], bytes_out=float("inf")),
        dict(rows[2], messages_in=-1.0),
        dict(rows[3], cpu=float("-inf")),
        dict(rows[4], size_bytes=float("nan")),
    ]
    path = tmp_path / "s.parquet"
    _write(rows + bad, path)  # footers: no nulls anywhere
    cfg = LoadModelConfig(window_ms=W, windows=1, min_samples=3, min_valid_ratio=1.0)
    res = run_load_model(spark, str(path), str(tmp_path / "o"), cfg)
    assert res.summary["quarantined"] == 5 and res.summary["ready"] is True
    q = pd.read_parquet(tmp_path / "o" / "quarantine.parquet")
    assert sorted(q["reason"]) == sorted(
        [
            "bytes_in is NaN",
            "bytes_out is infinite",
            "negative messages_in",
            "cpu is infinite",
            "size_bytes is NaN",
        ]
    )
    snap = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    parse_snapshot(snap)  # what `cluster skew --snapshot` reads
    assert [p["load"]["bytes_in"] for p in snap["partitions"]] == [10.0, 20.0]


def test_wrong_column_type_names_file_column_and_type_and_writes_nothing(spark, tmp_path):
    df = pd.DataFrame(_good_rows())
    df["bytes_in"] = "a"
    path = tmp_path / "s.parquet"
    df.to_parquet(path, index=False)
    with pytest.raises(InputError) as e:
        run_load_model(spark, str(path), str(tmp_path / "o"))
    assert (e.value.source, e.value.field) == (str(path), "bytes_in")
    assert "string" in e.value.message and "'a'" in e.value.message
    assert not (tmp_path / "o").exists()


def test_no_usable_samples_names_the_samples_file_and_writes_nothing(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "empty.parquet"
    pq.write_table(
        pa.Table.from_pylist([dict(r, ts=r["ts"].to_pydatetime()) for r in _good_rows()]).slice(
            0, 0
        ),
        path,
    )
    with pytest.raises(InputError) as e:
        run_load_model(spark, str(path), str(tmp_path / "o"))
    assert e.value.source == str(path) and "no rows" in e.value.message
    assert not (tmp_path / "o").exists()
    _write([dict(r, bytes_in=float("nan")) for r in _good_rows()], path)
    with pytest.raises(InputError) as e:
        run_load_model(spark, str(path), str(tmp_path / "o"))
    assert e.value.source == str(path) and "bytes_in is NaN: 6" in e.value.message
    assert not (tmp_path / "o").exists() and list(tmp_path.iterdir()) == [
        path
    ]  # no staging left behind


def test_outputs_replace_earlier_ones_in_an_existing_folder(spark, tmp_path):
    path = tmp_path / "s.parquet"
    pd.DataFrame(_good_rows()).to_parquet(path, index=False)
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    cfg = LoadModelConfig(window_ms=W, windows=1, min_samples=3, min_valid_ratio=1.0)
    for _ in range(2):
        run_load_model(spark, str(path), str(out), cfg)
    assert sorted(p.name for p in out.iterdir()) == [
        "broker_load.parquet",
        "keep.txt",
        "partition_load.parquet",
        "quarantine.parquet",
        "snapshot.json",
    ]
