"""A small simulated Kafka cluster that speaks the wire protocol on 127.0.0.1.

Why: no broker installable here supports ElectLeaders or
AlterPartitionReassignments, yet `cluster execute` must be exercised through a
real Kafka client. Each live broker of a snapshot gets its own listening port
(so requests a client sends to "broker 3" reach broker 3: DescribeLogDirs and
broker configs are per broker); all share one `ClusterState` (sim_state.py).

APIs: ApiVersions, Metadata, DescribeCluster, DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs, DescribeLogDirs, ElectLeaders,
AlterPartitionReassignments, ListPartitionReassignments. Time runs at
`speedup` times the wall clock so a copy of gigabytes at a throttled rate
finishes in a test's seconds.

Launcher for the demo: `python -m kafka_rebalance.kafka.sim_cluster --snapshot FILE
--port N` (broker k of the snapshot on port N+k, or free ports with N=0); it
prints one JSON line with the bootstrap address and runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import signal
import sys
import threading
import time
from collections.abc import Callable

from ..model import ClusterSnapshot
from .sim_state import (
    ELECTION_NOT_NEEDED,
    INVALID_REQUEST,
    LEADER_NOT_AVAILABLE,
    NONE,
    UNKNOWN_TOPIC_OR_PARTITION,
    ClusterState,
    ConfigError,
)
from .wire import messages as M
from .wire.codec import DecodeError
from .wire.protocol import RequestHeader, decode_request, encode_response, frame_size

UNSUPPORTED_VERSION = 35
LOOPBACK = ("127.0.0.1", "::1", "localhost")
# ConfigSource values of DescribeConfigsResponse
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 2, 5


class SimCluster:
    """Start with `start()` (or `with SimCluster(...) as sim:`), stop with `stop()`."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        *,
        host: str = "127.0.0.1",
        base_port: int = 0,
        speedup: float = 1.0,
        broker_bandwidth: float = 100e6,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if host not in LOOPBACK:
            raise ValueError(f"the simulated cluster listens on loopback only, not {host}")
        self.host = "127.0.0.1" if host == "localhost" else host
        self.base_port = base_port
        self.speedup = float(speedup)
        self.state = ClusterState(snapshot, broker_bandwidth=broker_bandwidth)
        self.lock = threading.RLock()
        self.ports: dict[int, int] = {}
        self.requests: list[tuple[int, int, int]] = []  # (broker, api_key, api_version) seen
        self._clock = clock
        self._t0 = clock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._servers: list[asyncio.base_events.Server] = []
        self._ready = threading.Event()
        self._error: BaseException | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> SimCluster:
        self._thread = threading.Thread(target=self._run, name="sim-kafka", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise self._error
        if not self._ready.is_set():
            raise RuntimeError("simulated cluster did not start within 10 s")
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._listen())
        except BaseException as exc:  # noqa: BLE001 - reported to start()
            self._error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            for s in self._servers:
                s.close()
            loop.run_until_complete(
                asyncio.gather(*(s.wait_closed() for s in self._servers), return_exceptions=True)
            )
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in pending:
                t.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    async def _listen(self) -> None:
        for i, b in enumerate(self.state.live_brokers()):
            port = self.base_port + i if self.base_port else 0
            server = await asyncio.start_server(
                functools.partial(self._serve, b.id), self.host, port
            )
            self._servers.append(server)
            self.ports[b.id] = server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        loop = self._loop
        if loop is not None and self._thread is not None and self._thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(10)

    def __enter__(self) -> SimCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{p}" for _, p in sorted(self.ports.items())[:1])

    def virtual_now(self) -> float:
        return (self._clock() - self._t0) * self.speedup

    def snapshot(self) -> ClusterSnapshot:
        """The cluster as it is now (copies advanced to the current virtual time)."""
        with self.lock:
            self.state.advance(self.virtual_now())
            return self.state.snapshot()

    # -- connections --------------------------------------------------------------------------

    async def _serve(
        self, broker_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            while True:
                try:
                    size = frame_size(await reader.readexactly(4))
                    payload = await reader.readexactly(size)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                try:
                    header, body = decode_request(payload)
                except DecodeError:
                    return  # Kafka closes the connection on a request it cannot parse
                out = self.respond(broker_id, header, body)
                if out is None:
                    return
                writer.write(out)
                await writer.drain()
        except (ConnectionError, DecodeError):
            return
        finally:
            writer.close()

    def respond(self, broker_id: int, header: RequestHeader, body: dict | None) -> bytes | None:
        """The framed response to one request, or None to close the connection."""
        if body is None:
            if header.api_key == M.API_VERSIONS:
                # Unknown ApiVersions version: answer v0 with UNSUPPORTED_VERSION so the client retries lower.
                return encode_response(
                    header, self._api_versions(UNSUPPORTED_VERSION), api_version=0
                )
            return None
        lo_hi = M.SUPPORTED.get(header.api_key)
        if lo_hi is None or not lo_hi[0] <= header.api_version <= lo_hi[1]:
            if header.api_key == M.API_VERSIONS:
                return encode_response(
                    header, self._api_versions(UNSUPPORTED_VERSION), api_version=0
                )
            return None
        with self.lock:
            self.requests.append((broker_id, header.api_key, header.api_version))
            self.state.advance(self.virtual_now())
            handler = self._HANDLERS[header.api_key]
            resp = handler(self, broker_id, header.api_version, body)
        return encode_response(header, resp)

    # -- handlers (request dict -> response dict) ----------------------------------------------

    def _api_versions(self, error: int = NONE) -> dict:
        return {
            "error_code": error,
            "throttle_time_ms": 0,
            "api_keys": [
                {"api_key": k, "min_version": lo, "max_version": hi}
                for k, (lo, hi) in sorted(M.SUPPORTED.items())
            ],
        }

    def _h_api_versions(self, broker_id: int, version: int, body: dict) -> dict:
        return self._api_versions()

    def _h_metadata(self, broker_id: int, version: int, body: dict) -> dict:
        st = self.state
        requested = body.get("topics")
        if requested is None or (version == 0 and not requested):
            names = st.topics()
        else:
            names = [t["name"] for t in requested]
        topics = []
        for name in names:
            keys = st.by_topic.get(name, [])
            if not keys:
                topics.append(
                    {"error_code": UNKNOWN_TOPIC_OR_PARTITION, "name": name, "partitions": []}
                )
                continue
            parts = []
            for key in keys:
                p = st.partitions[key]
                replicas = st.replicas_of(key)
                leader = p.leader if p.leader is not None and st.alive(p.leader) else -1
                parts.append(
                    {
                        "error_code": LEADER_NOT_AVAILABLE if leader == -1 else NONE,
                        "partition_index": key[1],
                        "leader_id": leader,
                        "leader_epoch": p.leader_epoch,
                        "replica_nodes": replicas,
                        "isr_nodes": list(p.isr),
                        "offline_replicas": [b for b in replicas if not st.alive(b)],
                    }
                )
            topics.append(
                {
                    "error_code": NONE,
                    "name": name,
                    "is_internal": name.startswith("__"),
                    "partitions": parts,
                }
            )
        return {
            "throttle_time_ms": 0,
            "brokers": self._broker_list("node_id"),
            "cluster_id": st.cluster_id,
            "controller_id": st.controller_id(),
            "topics": topics,
        }

    def _broker_list(self, id_field: str) -> list[dict]:
        return [
            {id_field: b.id, "host": self.host, "port": self.ports[b.id], "rack": b.rack}
            for b in self.state.live_brokers()
            if b.id in self.ports
        ]

    def _h_describe_cluster(self, broker_id: int, version: int, body: dict) -> dict:
        return {
            "throttle_time_ms": 0,
            "error_code": NONE,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": self.state.cluster_id,
            "controller_id": self.state.controller_id(),
            "brokers": self._broker_list("broker_id"),
        }

    def _h_describe_configs(self, broker_id: int, version: int, body: dict) -> dict:
        results = []
        for res in body.get("resources") or []:
            rtype, name = res["resource_type"], res["resource_name"]
            try:
                entries = self.state.describe_configs(rtype, name, res.get("configuration_keys"))
            except ConfigError as exc:
                results.append(
                    {
                        "error_code": exc.code,
                        "error_message": str(exc),
                        "resource_type": rtype,
                        "resource_name": name,
                        "configs": [],
                    }
                )
                continue
            dynamic = TOPIC_CONFIG if rtype == 2 else DYNAMIC_BROKER_CONFIG
            configs = []
            for cname, value, is_default in entries:
                source = DEFAULT_CONFIG if is_default else dynamic
                configs.append(
                    {
                        "name": cname,
                        "value": value,
                        "read_only": False,
                        "is_default": is_default,
                        "config_source": source,
                        "is_sensitive": False,
                        "synonyms": (
                            [{"name": cname, "value": value, "source": source}]
                            if body.get("include_synonyms")
                            else []
                        ),
                    }
                )
            results.append(
                {
                    "error_code": NONE,
                    "error_message": None,
                    "resource_type": rtype,
                    "resource_name": name,
                    "configs": configs,
                }
            )
        return {"throttle_time_ms": 0, "results": results}

    def _alter_each(self, resources: list[dict], apply) -> dict:
        responses = []
        for res in resources or []:
            rtype, name = res["resource_type"], res["resource_name"]
            try:
                apply(res)
                code, msg = NONE, None
            except ConfigError as exc:
                code, msg = exc.code, str(exc)
            responses.append(
                {
                    "error_code": code,
                    "error_message": msg,
                    "resource_type": rtype,
                    "resource_name": name,
                }
            )
        return {"throttle_time_ms": 0, "responses": responses}

    def _h_alter_configs(self, broker_id: int, version: int, body: dict) -> dict:
        validate = bool(body.get("validate_only"))
        return self._alter_each(
            body.get("resources") or [],
            lambda res: self.state.alter(
                res["resource_type"],
                res["resource_name"],
                [(c["name"], c["value"]) for c in res.get("configs") or []],
                validate,
            ),
        )

    def _h_incremental_alter_configs(self, broker_id: int, version: int, body: dict) -> dict:
        validate = bool(body.get("validate_only"))
        return self._alter_each(
            body.get("resources") or [],
            lambda res: self.state.incremental_alter(
                res["resource_type"],
                res["resource_name"],
                [(c["name"], c["config_operation"], c["value"]) for c in res.get("configs") or []],
                validate,
            ),
        )

    def _h_describe_log_dirs(self, broker_id: int, version: int, body: dict) -> dict:
        st = self.state
        wanted = body.get("topics")
        filt = (
            None
            if wanted is None
            else {(t["topic"], p) for t in wanted for p in t.get("partitions") or []}
        )
        by_topic: dict[str, list[dict]] = {}
        for key in sorted(st.partitions):
            if filt is not None and key not in filt:
                continue
            if broker_id not in st.replicas_of(key):
                continue
            by_topic.setdefault(key[0], []).append(
                {
                    "partition_index": key[1],
                    "partition_size": int(st.replica_size(key, broker_id)),
                    "offset_lag": 0,
                    "is_future_key": False,
                }
            )
        topics = [{"name": t, "partitions": ps} for t, ps in sorted(by_topic.items())]
        return {
            "throttle_time_ms": 0,
            "error_code": NONE,
            "results": [
                {
                    "error_code": NONE,
                    "log_dir": f"/var/lib/kafka/data-{broker_id}",
                    "topics": topics,
                }
            ],
        }

    def _h_elect_leaders(self, broker_id: int, version: int, body: dict) -> dict:
        st = self.state
        etype = body.get("election_type", 0) if version >= 1 else 0
        requested = body.get("topic_partitions")
        elect_all = requested is None
        keys = (
            sorted(st.partitions)
            if elect_all
            else [(t["topic"], p) for t in requested or () for p in t.get("partitions") or []]
        )
        if etype not in (0, 1):
            return {
                "throttle_time_ms": 0,
                "error_code": INVALID_REQUEST,
                "replica_election_results": [],
            }
        by_topic: dict[str, list[dict]] = {}
        for key in keys:
            code, msg = st.elect(key, etype)
            if elect_all and code == ELECTION_NOT_NEEDED:
                continue  # Kafka leaves out partitions that need nothing when asked for all
            by_topic.setdefault(key[0], []).append(
                {"partition_id": key[1], "error_code": code, "error_message": msg}
            )
        return {
            "throttle_time_ms": 0,
            "error_code": NONE,
            "replica_election_results": [
                {"topic": t, "partition_result": r} for t, r in by_topic.items()
            ],
        }

    def _h_alter_partition_reassignments(self, broker_id: int, version: int, body: dict) -> dict:
        responses = []
        for t in body.get("topics") or []:
            parts = []
            for p in t.get("partitions") or []:
                code, msg = self.state.alter_reassignment(
                    (t["name"], p["partition_index"]), p.get("replicas")
                )
                parts.append(
                    {
                        "partition_index": p["partition_index"],
                        "error_code": code,
                        "error_message": msg,
                    }
                )
            responses.append({"name": t["name"], "partitions": parts})
        return {
            "throttle_time_ms": 0,
            "error_code": NONE,
            "error_message": None,
            "responses": responses,
        }

    def _h_list_partition_reassignments(self, broker_id: int, version: int, body: dict) -> dict:
        st = self.state
        wanted = body.get("topics")
        keys = (
            sorted(st.reassignments)
            if wanted is None
            else sorted(
                (t["name"], p)
                for t in wanted
                for p in t.get("partition_indexes") or []
                if (t["name"], p) in st.reassignments
            )
        )
        by_topic: dict[str, list[dict]] = {}
        for key in keys:
            r = st.reassignments[key]
            by_topic.setdefault(key[0], []).append(
                {
                    "partition_index": key[1],
                    "replicas": r.replicas,
                    "adding_replicas": r.adding,
                    "removing_replicas": r.removing,
                }
            )
        return {
            "throttle_time_ms": 0,
            "error_code": NONE,
            "error_message": None,
            "topics": [{"name": t, "partitions": ps} for t, ps in sorted(by_topic.items())],
        }

    _HANDLERS = {
        M.API_VERSIONS: _h_api_versions,
        M.METADATA: _h_metadata,
        M.DESCRIBE_CLUSTER: _h_describe_cluster,
        M.DESCRIBE_CONFIGS: _h_describe_configs,
        M.ALTER_CONFIGS: _h_alter_configs,
        M.INCREMENTAL_ALTER_CONFIGS: _h_incremental_alter_configs,
        M.DESCRIBE_LOG_DIRS: _h_describe_log_dirs,
        M.ELECT_LEADERS: _h_elect_leaders,
        M.ALTER_PARTITION_REASSIGNMENTS: _h_alter_partition_reassignments,
        M.LIST_PARTITION_REASSIGNMENTS: _h_list_partition_reassignments,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kafka_rebalance.kafka.sim_cluster",
        description="Serve a cluster snapshot as a simulated Kafka cluster on 127.0.0.1.",
    )
    parser.add_argument(
        "--snapshot", required=True, help="cluster snapshot JSON (or kafka-topics --describe text)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=0,
        help="port of the first broker; broker k on PORT+k (0: free ports)",
    )
    parser.add_argument(
        "--speedup", type=float, default=1.0, help="virtual seconds per wall second"
    )
    parser.add_argument(
        "--bandwidth", type=float, default=100e6, help="unthrottled replication bytes/s per broker"
    )
    args = parser.parse_args(argv)
    from ..cluster.snapshot import parse_snapshot_text
    from ..errors import InputError

    try:
        with open(args.snapshot, encoding="utf-8") as fh:
            snapshot = parse_snapshot_text(fh.read())
    except (OSError, InputError) as exc:
        print(f"sim_cluster: error: {args.snapshot}: {exc}", file=sys.stderr)
        return 2
    sim = SimCluster(
        snapshot, base_port=args.port, speedup=args.speedup, broker_bandwidth=args.bandwidth
    ).start()
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    print(
        json.dumps(
            {
                "bootstrap": sim.bootstrap,
                "brokers": {str(k): v for k, v in sorted(sim.ports.items())},
            }
        ),
        flush=True,
    )
    while not done.wait(0.5):
        pass
    sim.stop()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
