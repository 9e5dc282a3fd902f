"""A real Apache Kafka cluster for the tests: `$KAFKA_BOOTSTRAP`, else `../shared/kafka`, else none.

One cluster serves a whole test session (the `real_kafka` fixture in conftest.py). When neither
source is there, the tests that need it are skipped and the reason is printed once at the end of
the run. Clusters started here listen on 127.0.0.1 only and are stopped by PID.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
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
    timeout: float = 300,
    args: tuple[str, ...] = (),
    attempts: int = 2,
) -> RealKafka:
    """Start a fresh cluster with `start-kafka.sh` and wait until it serves (see `_start_once`).

    On a busy machine a start can fail for reasons that do not come back: a free port taken by
    another process between start-kafka.sh picking it and the broker binding it, or a node slower
    than the wait. A failed attempt's nodes are stopped by PID and the start is tried again, once
    by default; the RuntimeError then names every attempt, what failed and the log tail.
    """
    failures: list[str] = []
    for attempt in range(1, attempts + 1):
        d = Path(state_dir) if state_dir is not None else Path(tempfile.mkdtemp(prefix="kafka-"))
        try:
            return _start_once(brokers, props, log_dirs, d, timeout, args)
        except _StartFailed as exc:
            failures.append(f"attempt {attempt}/{attempts}: {exc}")
            stop_dir(d)
        except BaseException:  # an interrupt or a bug here: no node outlives the session
            stop_dir(d)
            raise
    raise RuntimeError(
        f"could not start a {brokers}-broker Kafka cluster from {KAFKA_HOME}:\n"
        + "\n".join(failures)
    )


class _StartFailed(Exception):
    """One attempt failed; its message says which step and how."""


def _start_once(
    brokers: int,
    props: tuple[str, ...],
    log_dirs: int,
    state_dir: Path,
    timeout: float,
    args: tuple[str, ...],
) -> RealKafka:
    """start-kafka.sh into `state_dir` (its pids file there, so a killed script leaks no node),
    then, for the default listeners, `wait_ready`."""
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
    cmd += ["--dir", str(state_dir), "--timeout", str(int(timeout))]
    cmd += list(args)  # e.g. --ports/--controller-port for listeners given with props
    t0 = time.monotonic()
    try:
        # the script's own wait is `timeout` after formatting; leave it room to print its log tail
        out = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout + 120, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise _StartFailed(
            f"start-kafka.sh did not return within {timeout + 120:.0f}s; "
            f"stderr: {_tail(exc.stderr)}{_log_tails(state_dir)}"
        ) from None
    if out.returncode != 0:
        raise _StartFailed(
            f"start-kafka.sh exited {out.returncode} after {time.monotonic() - t0:.0f}s: "
            f"{_tail(out.stderr)}"
        )
    env: dict[str, str] = {}
    for line in out.stdout.splitlines():
        line = line.strip()
        if line.startswith("export "):
            line = line[len("export ") :]
        if "=" in line:
            k, v = line.split("=", 1)
            env[k] = v.strip().strip("'\"")
    if "KAFKA_BOOTSTRAP" not in env:
        raise _StartFailed(f"start-kafka.sh printed no KAFKA_BOOTSTRAP: {_tail(out.stdout)}")
    cluster = RealKafka(bootstrap=env["KAFKA_BOOTSTRAP"], home=KAFKA_HOME, state_dir=state_dir)
    if not args:  # listeners of its own (--ports with props): the caller knows how to reach it
        left = max(60.0, timeout - (time.monotonic() - t0))
        problem = wait_ready(cluster.bootstrap, brokers, left)
        if problem is not None:
            raise _StartFailed(f"{problem}{_log_tails(state_dir)}")
    return cluster


def wait_ready(bootstrap: str, brokers: int, timeout: float) -> str | None:
    """Wait until the metadata lists `brokers` brokers and `__consumer_offsets` exists with a
    leader for every partition (a group lookup creates it); None, or what was still missing.

    "Kafka Server started" in each log, which start-kafka.sh waits for, comes before the
    controller has every broker registered and unfenced: under load the first test's group then
    met COORDINATOR_NOT_AVAILABLE or a topic creation too few brokers.
    """
    try:
        from confluent_kafka.admin import AdminClient
    except ImportError:  # no client to ask with: start-kafka.sh's own wait is all there is
        return None
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000})
    deadline = time.monotonic() + timeout
    missing = "no answer yet"
    group = f"real-kafka-ready-{os.getpid()}"
    while (left := deadline - time.monotonic()) > 0:
        t = max(1.0, min(10.0, left))  # no call outlasts the deadline by more than a second
        try:
            md = admin.list_topics(timeout=t)
            if len(md.brokers) < brokers:
                missing = f"metadata lists {len(md.brokers)} of {brokers} brokers"
            else:
                # FindCoordinator for a group makes the broker create __consumer_offsets
                admin.describe_consumer_groups([group], request_timeout=t)[group].result(
                    timeout=t + 5
                )
                md = admin.list_topics("__consumer_offsets", timeout=t)
                parts = md.topics["__consumer_offsets"].partitions
                leaderless = [p for p, m in parts.items() if m.leader < 0]
                if parts and not leaderless:
                    return None
                missing = f"__consumer_offsets: {len(leaderless)} of {len(parts)} partitions lack a leader"
        except Exception as exc:  # KafkaException, timeouts: not ready yet
            missing = f"{type(exc).__name__}: {exc}"
        time.sleep(0.5)
    return f"cluster at {bootstrap} not ready after {timeout:.0f}s: {missing}"


def stop_dir(state_dir: Path) -> None:
    """Stop the nodes listed in `state_dir/pids` by PID (then the folder goes); nothing if none."""
    if (state_dir / "pids").exists():
        subprocess.run(
            [str(KAFKA_HOME / "stop-kafka.sh"), "--dir", str(state_dir)],
            capture_output=True,
            timeout=180,
            check=False,
        )
    shutil.rmtree(state_dir, ignore_errors=True)


def _tail(text: str | bytes | None, n: int = 2000) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return (text or "").strip()[-n:] or "(nothing)"


def _log_tails(state_dir: Path, lines: int = 15) -> str:
    out = []
    for log in sorted(state_dir.glob("node-*/logs/server.log")):
        tail = log.read_text(errors="replace").splitlines()[-lines:]
        out.append(f"\n--- {log.relative_to(state_dir)}:\n" + "\n".join(tail))
    return "".join(out)


def external() -> RealKafka:
    """The cluster named by $KAFKA_BOOTSTRAP (never stopped by the tests)."""
    home = KAFKA_HOME if (KAFKA_HOME / "bin").exists() else None
    return RealKafka(bootstrap=os.environ["KAFKA_BOOTSTRAP"], home=home)
