"""A minimal Kafka wire-protocol codec: primitives, flexible versions, tagged fields, admin API schemas."""

from .codec import DecodeError, Field, Message, Reader, Versions, Writer
from .protocol import (
    RequestHeader,
    WireClient,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    frame,
)

__all__ = [
    "DecodeError",
    "Field",
    "Message",
    "Reader",
    "Versions",
    "Writer",
    "RequestHeader",
    "WireClient",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "frame",
]
