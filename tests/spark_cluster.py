"""A standalone Spark cluster for tests: one master and one worker on 127.0.0.1, from PySpark's sbin/.

PySpark's wheel ships `sbin/spark-daemon.sh` (what start-master.sh and
start-worker.sh call) but not those two wrappers, so the daemons are started
with it directly, with their PID files in a temporary folder, and stopped by
those PIDs. When the system allows unprivileged mount namespaces (`unshare
-rm`), the worker runs in one with a private tmpfs over `executor_only`: a
folder the executors write to and the driver never sees, to stand for a
cluster without a shared file system.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent


@dataclass
class SparkCluster:
    url: str
    home: Path
    executor_only: Path | None  # a folder only the executors see (None: no mount namespaces here)
    pids: list[int]

    def env(self) -> dict[str, str]:
        """Environment for a driver on this cluster: loopback, this interpreter on the executors."""
        return {
            **os.environ,
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
        }

    def stop(self) -> None:
        for pid in reversed(self.pids):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + 20
        for pid in self.pids:
            while time.monotonic() < deadline and _alive(pid):
                time.sleep(0.2)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not reaped) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs none /tmp 2>/dev/null && echo ok"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    return probe.stdout.strip() == "ok"


def unavailable_reason() -> str | None:
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime for a Spark cluster"
    if not (SPARK_HOME / "sbin" / "spark-daemon.sh").exists():
        return f"{SPARK_HOME}/sbin/spark-daemon.sh not found"
    return None


def start(home: Path, cores: int = 2, memory: str = "2g", workers: int = 1) -> SparkCluster:
    """A master and `workers` workers of `cores` cores each (instances 1..workers of spark-daemon)."""
    home.mkdir(parents=True, exist_ok=True)
    daemon = str(SPARK_HOME / "sbin" / "spark-daemon.sh")
    port = _free_port()
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_PID_DIR": str(home / "pids"),
        "SPARK_LOG_DIR": str(home / "logs"),
        "SPARK_IDENT_STRING": f"kr-tests-{os.getpid()}",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": str(home / "work"),
        "PYSPARK_PYTHON": sys.executable,
    }
    master_cls = "org.apache.spark.deploy.master.Master"
    worker_cls = "org.apache.spark.deploy.worker.Worker"
    ident = env["SPARK_IDENT_STRING"]
    subprocess.run(
        [daemon, "start", master_cls, "1", "--host", "127.0.0.1", "--port", str(port)]
        + ["--webui-port", str(_free_port())],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    url = f"spark://127.0.0.1:{port}"
    executor_only = None
    if _can_unshare():
        executor_only = home / "executor-only"
        executor_only.mkdir()
    pid_file = home / "pids" / f"spark-{ident}-{master_cls}-1.pid"
    pids = [int(pid_file.read_text())]
    try:
        for n in range(1, workers + 1):
            worker = [daemon, "start", worker_cls, str(n), "--host", "127.0.0.1"]
            worker += ["--cores", str(cores), "--memory", memory]
            worker += ["--webui-port", str(_free_port()), url]
            if executor_only is not None:  # each worker its own namespace: its own private tmpfs
                script = f'mount -t tmpfs none "{executor_only}" && exec "$@"'
                worker = ["unshare", "-rm", "sh", "-c", script, "sh", *worker]
            subprocess.run(worker, env=env, check=True, capture_output=True, timeout=60)
            pid_file = home / "pids" / f"spark-{ident}-{worker_cls}-{n}.pid"
            pids.append(int(pid_file.read_text()))
    except BaseException:  # nothing left running: stop what did start
        SparkCluster(url, home, executor_only, pids).stop()
        raise
    cluster = SparkCluster(url, home, executor_only, pids)
    log = home / "logs"
    deadline = time.monotonic() + 300  # minutes on a machine that is busy
    while time.monotonic() < deadline:  # the worker says so in its log once the master took it
        registered = sum(
            "Successfully registered with master" in f.read_text() for f in log.glob("*Worker*.out")
        )
        if registered >= workers:
            return cluster
        if not all(_alive(p) for p in pids):
            break
        time.sleep(0.5)
    cluster.stop()
    logs = "\n".join(f.read_text()[-2000:] for f in log.glob("*.out"))
    raise RuntimeError(f"standalone Spark cluster did not come up:\n{logs}")
