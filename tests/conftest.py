"""Shared fixtures: one SparkSession and one real Kafka cluster for the whole run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

VECTORS = Path(__file__).resolve().parent / "vectors"


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    if not VECTORS.exists():
        pytest.fail(f"parity vectors not found at {VECTORS}")
    return VECTORS


@pytest.fixture(autouse=True)
def tables_read_by_people(monkeypatch):
    """Every result a command emits in a test: its table, at 60/80/120 columns, reads cleanly."""
    from kafka_rebalance import output
    from table_check import INPUT_TEXT, check_all_widths

    INPUT_TEXT.clear()

    emit = output.emit
    found: list[str] = []

    def checked(obj, fmt, table=None):
        if table is not None:
            found.extend(check_all_widths(table, obj))
        return emit(obj, fmt, table)

    monkeypatch.setattr(output, "emit", checked)
    # modules that imported `emit` by name (commands/*, imported lazily by cli.main)
    import kafka_rebalance.cli as cli

    cli.build_parser()
    for name, module in list(sys.modules.items()):
        if name.startswith("kafka_rebalance.") and getattr(module, "emit", None) is emit:
            monkeypatch.setattr(module, "emit", checked)
    yield
    assert not found, "table output a person cannot read:\n" + "\n".join(found[:20])


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for every Spark test, few shuffle partitions, loopback only."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    from kafka_rebalance.pipeline.session import get_spark

    session = get_spark(master="local[2]", shuffle_partitions=4, app_name="kafka-rebalance-tests")
    yield session
    session.stop()


# --- a real Kafka cluster (Apache Kafka 4.0, KRaft) --------------------------------------------

_REAL_KAFKA_SKIPS: list[str] = []


@pytest.fixture(scope="session")
def real_kafka():
    """One real 3-broker cluster per test session: $KAFKA_BOOTSTRAP, else ../shared/kafka, else skip.

    Tests that use it are marked `kafka`; the reason for a skip is printed once at the end.
    """
    import real_kafka as rk

    reason = rk.unavailable_reason()
    if reason is not None:
        if not _REAL_KAFKA_SKIPS:
            _REAL_KAFKA_SKIPS.append(reason)
        pytest.skip(reason)
    if os.environ.get("KAFKA_BOOTSTRAP"):
        yield rk.external()
        return
    cluster = rk.start(brokers=3)
    try:
        yield cluster
    finally:
        cluster.stop()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "real_kafka" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kafka)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for reason in _REAL_KAFKA_SKIPS:
        terminalreporter.write_line(f"real-broker tests skipped: {reason}")


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A standalone Spark master and one worker on 127.0.0.1 (tests/spark_cluster.py), stopped by PID."""
    import spark_cluster as sc

    reason = sc.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    cluster = sc.start(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop()
