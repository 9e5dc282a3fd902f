"""A real Apache Kafka cluster for the tests: `$KAFKA_BOOTSTRAP`, else `../shared/kafka`, else none.

One cluster serves a whole test session (the `real_kafka` fixture in conftest.py). When neither
source is there, the tests that need it are skipped and the reason is printed once at the end of
the run. Clusters started here listen on 127.0.0.1 only and are stopped by PID.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KAFKA_HOME = Path(os.environ.get("KAFKA_HOME_DIR", REPO.parent / "shared" / "kafka"))


@dataclass
class RealKafka:
    """A running cluster: where to reach it, Kafka's own tools, and how to stop it (if we started it)."""

    bootstrap: str
    home: Path | None  # Kafka's distribution (bin/, libs/) or None when only a bootstrap is known
    state_dir: Path | None = None  # start-kafka.sh's --dir, with its pids file; None: external

    @property
    def bin(self) -> Path:
        if self.home is None:
            raise RuntimeError("Kafka's tools are not available (no ../shared/kafka)")
        return self.home / "bin"

    def tool(self, name: str, *args: str, timeout: float = 120, check: bool = True):
        """Run one of Kafka's own tools (`kafka-topics.sh` ...) and return the CompletedProcess."""
        return subprocess.run(
            [str(self.bin / name), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=check,
            env={**os.environ, **tool_env()},
        )

    def stop(self) -> None:
        if self.home is None or self.state_dir is None:
            return
        subprocess.run(
            [str(self.home / "stop-kafka.sh"), "--dir", str(self.state_dir)],
            capture_output=True,
            timeout=120,
            check=False,
        )


def tool_env() -> dict[str, str]:
    """Kafka's scripts find PySpark's jars through the project's venv."""
    venv = REPO / ".venv"
    return {"KAFKA_VENV": str(venv)} if venv.exists() else {}


def unavailable_reason() -> str | None:
    """Why no real cluster can be had here, or None when one can."""
    if os.environ.get("KAFKA_BOOTSTRAP"):
        return None
    if not (KAFKA_HOME / "start-kafka.sh").exists():
        return f"no real Kafka: $KAFKA_BOOTSTRAP is not set and {KAFKA_HOME} is absent"
    if shutil.which("java") is None:
        return "no real Kafka: java is not on PATH"
    return None


def start(
    brokers: int = 3,
    props: tuple[str, ...] = (),
    log_dirs: int = 1,
    state_dir: Path | None = None,
    timeout: float = 240,
    args: tuple[str, ...] = (),
) -> RealKafka:
    """Start a fresh cluster with `start-kafka.sh` (raises RuntimeError with its stderr on failure)."""
    cmd = [str(KAFKA_HOME / "start-kafka.sh"), "-q", "-n", str(brokers)]
    venv = REPO / ".venv"
    if venv.exists():
        cmd += ["--venv", str(venv)]
    if log_dirs != 1:
        cmd += ["--log-dirs", str(log_dirs)]
    # Tests write records with historical timestamps (2023): time-based retention, checked every
    # 5 minutes, would delete them while the session's cluster is still in use.
    for p in ("log.retention.ms=-1", *props):
        cmd += ["--prop", p]
    if state_dir is not None:
        cmd += ["--dir", str(state_dir)]
    cmd += list(args)  # e.g. --ports/--controller-port for listeners given with props
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"start-kafka.sh failed ({out.returncode}): {out.stderr[-2000:]}")
    env: dict[str, str] = {}
    for line in out.stdout.splitlines():
        line = line.strip()
        if line.startswith("export "):
            line = line[len("export ") :]
        if "=" in line:
            k, v = line.split("=", 1)
            env[k] = v.strip().strip("'\"")
    return RealKafka(
        bootstrap=env["KAFKA_BOOTSTRAP"],
        home=KAFKA_HOME,
        state_dir=Path(env["KAFKA_DIR"]),
    )


def external() -> RealKafka:
    """The cluster named by $KAFKA_BOOTSTRAP (never stopped by the tests)."""
    home = KAFKA_HOME if (KAFKA_HOME / "bin").exists() else None
    return RealKafka(bootstrap=os.environ["KAFKA_BOOTSTRAP"], home=home)
