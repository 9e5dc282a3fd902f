"""The SparkSession every job uses: local by default, any master by flag, environment or spark-submit.

Which master: `--master`, else `--conf spark.master=...`, else the one
spark-submit started the driver with, else SPARK_MASTER, else `local[*]`
(bound to 127.0.0.1). Only a local master gets this interpreter as
PYSPARK_PYTHON: on a cluster the executors' Python is the user's to choose.
When the executors cannot import the package, it is shipped to them as a zip
through `addPyFile` (its dependencies, pyarrow and numpy, must be there).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import zipfile
from pathlib import Path

from ..errors import InputError

# local, local[N|*], local[N|*,F], local-cluster[N,C,M], spark://H:P[,H:P...], yarn, k8s://URL
_MASTER = re.compile(
    r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?"
    r"|local-cluster\[[1-9]\d*,[1-9]\d*,[1-9]\d*\]"
    r"|spark://[A-Za-z0-9.\-_\[\]:]+:\d{1,5}(,[A-Za-z0-9.\-_\[\]:]+:\d{1,5})*"
    r"|yarn|k8s://\S+"
)


def check_master(master: str, field: str) -> None:
    """A master Spark cannot parse fails only after the JVM starts, with an error naming no flag."""
    if not _MASTER.fullmatch(master):
        raise InputError(
            f"not a Spark master URL: {master!r} (local, local[N], local[*], local[N,F], "
            "local-cluster[N,C,M], spark://HOST:PORT, yarn, k8s://URL)",
            field=field,
        )


def check_chosen_master(master: str | None, conf: dict[str, str] | None = None) -> None:
    """Check the master resolve_master would pick, naming where it came from; before Spark starts."""
    if master:
        check_master(master, "--master")
    elif conf and conf.get("spark.master"):
        check_master(conf["spark.master"], "--conf spark.master")
    elif os.environ.get("SPARK_MASTER") and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        check_master(os.environ["SPARK_MASTER"], "SPARK_MASTER")


def resolve_master(master: str | None, conf: dict[str, str] | None = None) -> str | None:
    """The master to set on the builder, or None to keep the one spark-submit gave the driver."""
    if master:
        return master
    if conf and conf.get("spark.master"):
        return conf["spark.master"]
    if os.environ.get("PYSPARK_GATEWAY_PORT"):  # under spark-submit: its --master / spark.master
        return None
    return os.environ.get("SPARK_MASTER") or "local[*]"


def get_spark(
    master: str | None = None,
    shuffle_partitions: int = 8,
    app_name: str = "kafka-rebalance",
    conf: dict[str, str] | None = None,
    log_level: str = "ERROR",
):
    """A SparkSession for the pipeline jobs (see the module docstring for which master)."""
    conf = dict(conf or {})
    chosen = resolve_master(master, conf)
    local = chosen is not None and chosen.startswith("local")  # under spark-submit: its settings
    if local:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if chosen is not None:
        builder = builder.master(chosen)
    defaults = {
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": os.environ.get("KR_SPARK_DRIVER_MEMORY", "4g"),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }
    if local:
        defaults["spark.driver.host"] = "127.0.0.1"
        defaults["spark.driver.bindAddress"] = "127.0.0.1"
    for key, value in {**defaults, **conf}.items():
        if key != "spark.master":
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    if not (spark.sparkContext.master or "").startswith("local"):
        ship_package_if_missing(spark)
    return spark


def ship_package_if_missing(spark) -> bool:
    """Ship kafka_rebalance to the executors as a zip when one of them cannot import it; True if shipped."""
    sc = spark.sparkContext
    n = max(1, sc.defaultParallelism)
    probe = sc.parallelize(range(n), n).map(
        lambda _: __import__("importlib.util").util.find_spec("kafka_rebalance") is not None
    )
    if all(probe.collect()):
        return False
    sc.addPyFile(str(package_zip()))
    return True


def package_zip() -> Path:
    """kafka_rebalance's files in a zip (built once per driver process), for addPyFile."""
    root = Path(__file__).resolve().parents[1]
    target = Path(tempfile.gettempdir()) / f"kafka_rebalance-{os.getpid()}.zip"
    if not target.exists():
        tmp = target.with_suffix(".tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(root.rglob("*")):
                if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                    z.write(f, Path("kafka_rebalance") / f.relative_to(root))
        os.replace(tmp, target)
    return target
