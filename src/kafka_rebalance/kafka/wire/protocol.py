"""Framing and headers: size-prefixed frames, request header v0-v2, response header v0-v1.

Header versions follow Kafka's ApiMessageType: a request in a flexible version
uses header v2 (v1 otherwise); its response uses header v1 (v0 otherwise) —
except ApiVersions, whose response header is always v0 so a client can read
it before knowing what the broker speaks.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

from .codec import DecodeError, Reader, Writer
from .messages import API_VERSIONS, REQUEST_HEADER, REQUESTS, RESPONSE_HEADER, RESPONSES

MAX_FRAME = 100 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def request_header_version(api_key: int, api_version: int) -> int:
    msg = REQUESTS.get(api_key)
    return 2 if msg is not None and msg.is_flexible(api_version) else 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == API_VERSIONS:
        return 0
    msg = RESPONSES.get(api_key)
    return 1 if msg is not None and msg.is_flexible(api_version) else 0


def read_request_header(r: Reader) -> RequestHeader:
    """Read the header; the version of the header depends on the api key and version in it."""
    start = r.pos
    api_key, api_version = r.int16(), r.int16()
    r.pos = start
    hv = request_header_version(api_key, api_version)
    h = REQUEST_HEADER.decode(hv, r)
    return RequestHeader(
        h["request_api_key"], h["request_api_version"], h["correlation_id"], h.get("client_id")
    )


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    body: dict,
    client_id: str | None = "kafka-rebalance",
) -> bytes:
    hv = request_header_version(api_key, api_version)
    head = REQUEST_HEADER.encode(
        hv,
        {
            "request_api_key": api_key,
            "request_api_version": api_version,
            "correlation_id": correlation_id,
            "client_id": client_id,
        },
    )
    return frame(head + REQUESTS[api_key].encode(api_version, body))


def decode_request(payload: bytes) -> tuple[RequestHeader, dict | None]:
    """Header and body of one request (body None when the api key is not one we know)."""
    r = Reader(payload)
    header = read_request_header(r)
    msg = REQUESTS.get(header.api_key)
    if msg is None or header.api_version not in msg.valid:
        return header, None
    return header, msg.decode(header.api_version, r)


def encode_response(header: RequestHeader, body: dict, api_version: int | None = None) -> bytes:
    version = header.api_version if api_version is None else api_version
    hv = response_header_version(header.api_key, version)
    head = RESPONSE_HEADER.encode(hv, {"correlation_id": header.correlation_id})
    return frame(head + RESPONSES[header.api_key].encode(version, body))


def decode_response(api_key: int, api_version: int, payload: bytes) -> tuple[int, dict]:
    r = Reader(payload)
    hv = response_header_version(api_key, api_version)
    h = RESPONSE_HEADER.decode(hv, r)
    return h["correlation_id"], RESPONSES[api_key].decode(api_version, r)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def frame_size(prefix: bytes) -> int:
    (n,) = struct.unpack(">i", prefix)
    if n < 0 or n > MAX_FRAME:
        raise DecodeError(f"frame size {n} out of range")
    return n


class WireClient:
    """A blocking one-connection client for tests and for APIs kafka-python does not send."""

    def __init__(
        self, host: str, port: int, timeout: float = 10.0, client_id: str = "kafka-rebalance"
    ) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.client_id = client_id
        self._cid = 0

    def call(self, api_key: int, api_version: int, body: dict) -> dict:
        self._cid += 1
        self.sock.sendall(encode_request(api_key, api_version, self._cid, body, self.client_id))
        size = frame_size(self._recv(4))
        cid, resp = decode_response(api_key, api_version, self._recv(size))
        if cid != self._cid:
            raise DecodeError(f"correlation id {cid}, expected {self._cid}")
        return resp

    def _recv(self, n: int) -> bytes:
        w = Writer()
        got = 0
        while got < n:
            chunk = self.sock.recv(n - got)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            w.raw(chunk)
            got += len(chunk)
        return w.getvalue()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
