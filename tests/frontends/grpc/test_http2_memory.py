"""What gRPC clients together can make naiad's HTTP/2 transport hold: the server's request
budget (--max-request-buffer-size), messages that stop short of their last byte
(--grpc-receive-timeout) and the connection cap (--grpc-max-connections)."""

from __future__ import annotations

import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import tritonclient.grpc as grpcclient
from support.waiting import until

from frontends.grpc.h2client import (
    DATA,
    ENHANCE_YOUR_CALM,
    GOAWAY,
    NO_ERROR,
    SETTINGS,
    WINDOW_UPDATE,
    RawClient,
    frame,
    message,
)

pytestmark = pytest.mark.e2e

MiB = 1 << 20
STREAM_WINDOW = 256 * 1024
FRAME = 16384


def send(client: RawClient, stream: int, data: bytes) -> None:
    for i in range(0, len(data), FRAME):
        client.sock.sendall(frame(DATA, 0, stream, data[i : i + FRAME]))


def all_but_the_last_byte(client: RawClient, stream: int, size: int) -> None:
    """Open ``stream`` and send a ``size``-byte message short of its last byte, keeping to
    flow control: the stream's window first, the rest once the server lends it."""
    body = message(bytes(size))
    client.sock.sendall(client.open(stream, "ModelInfer"))
    send(client, stream, body[:STREAM_WINDOW])
    while True:
        kind, _, sid, payload = client.next_frame() or (None, 0, 0, b"")
        assert kind is not None, "connection closed"
        if kind == WINDOW_UPDATE and sid == stream:
            assert STREAM_WINDOW + int.from_bytes(payload, "big") >= len(body)
            break
    send(client, stream, body[STREAM_WINDOW:-1])


def status_of(client: RawClient, stream: int) -> tuple[str, str]:
    trailers = client.response(stream)[2]
    return trailers["grpc-status"], urllib.parse.unquote(trailers.get("grpc-message", ""))


def test_messages_past_the_budget_are_refused_and_stalled_ones_reset(
    grpc_case_repo: Path, serve: Any
) -> None:
    """Two connections each hold a 4 MiB message short of its last byte (a client that
    honours flow control; before, nothing bounded how many did, nor for how long): a
    third message that would pass the 9 MiB budget is answered RESOURCE_EXHAUSTED as its
    length arrives; the two are ended once they stop bringing bytes, and every byte
    they held is given back."""
    server = serve(grpc_case_repo, grpc=True, max_request_buffer_size=9 * MiB,
                   grpc_receive_timeout_ms=1500)  # fmt: skip
    port = server.grpc_port
    holders = [RawClient(port) for _ in range(2)]
    try:
        for client in holders:
            all_but_the_last_byte(client, 1, 4 * MiB)
        until(lambda: server.budget.held == 2 * (4 * MiB + 4), "holding both messages")
        started = time.monotonic()
        late = RawClient(port)
        try:
            late.sock.sendall(late.open(1, "ModelInfer"))
            send(late, 1, message(bytes(4 * MiB))[:FRAME])
            code, details = status_of(late, 1)
            assert code == "8"  # RESOURCE_EXHAUSTED
            assert "--max-request-buffer-size" in details
            # Small requests go on (a whole message in one frame is never held).
            with grpcclient.InferenceServerClient(f"127.0.0.1:{port}") as grpc_client:
                assert grpc_client.is_server_ready()
        finally:
            late.close()
        for client in holders:
            code, details = status_of(client, 1)
            assert code == "1", details  # CANCELLED
            assert "--grpc-receive-timeout" in details
        assert 1.4 < time.monotonic() - started < 15
        until(lambda: server.budget.held == 0, "giving every byte back")
    finally:
        for client in holders:
            client.close()


def test_a_slow_message_that_keeps_its_rate_is_taken(grpc_case_repo: Path, serve: Any) -> None:
    server = serve(grpc_case_repo, grpc=True, grpc_receive_timeout_ms=500)
    client = RawClient(server.grpc_port)
    try:
        body = message(bytes(64 * 1024))
        client.sock.sendall(client.open(1, "ModelInfer"))
        for i in range(0, len(body), 4096):  # 4 KiB every 0.1 s for 1.6 s, 40 KiB/s
            end = 0x1 if i + 4096 >= len(body) else 0
            client.sock.sendall(frame(DATA, end, 1, body[i : i + 4096]))
            time.sleep(0.1)
        code, details = status_of(client, 1)
        assert code != "1", details  # (zeros are not a valid request: an error, not a reset)
        assert "--grpc-receive-timeout" not in details
    finally:
        client.close()
    until(lambda: server.budget.held == 0, "giving the message back")


def goaway_on_connect(port: int, source: str = "") -> tuple[int, bytes]:
    client = RawClient(port, source=source)
    try:
        kind = client.next_frame()
        assert kind is not None and kind[0] == SETTINGS
        return client.goaway()
    finally:
        client.close()


def test_past_the_connection_cap_a_newcomer_gets_goaway(grpc_case_repo: Path, serve: Any) -> None:
    server = serve(grpc_case_repo, grpc=True, grpc_max_connections=3)
    port = server.grpc_port
    listener = server.frontends["grpc"].server
    busy = [RawClient(port) for _ in range(3)]
    try:
        for client in busy:  # a call each, waiting for its message: none is idle
            client.sock.sendall(client.open(1, "ModelInfer"))
        until(lambda: sum(bool(c.streams) for c in listener.connections) == 3, "3 calls")
        for source in ("", "127.0.0.2"):  # no call in flight is ever cut for a newcomer
            assert goaway_on_connect(port, source) == (
                ENHANCE_YOUR_CALM,
                b"too many open connections",
            )
        busy.pop().close()
        idle = RawClient(port)
        until(lambda: len(listener.connections) == 3 and any(
            not c.streams for c in listener.connections), "an idle connection")  # fmt: skip
        with grpcclient.InferenceServerClient(f"127.0.0.1:{port}") as grpc_client:
            assert grpc_client.is_server_live()  # the idle one made room
        assert idle.goaway() == (NO_ERROR, b"too many open connections")
        idle.close()
    finally:
        for client in busy:
            client.close()


def test_grpcio_transport_caps_connections(grpc_case_repo: Path, serve: Any) -> None:
    server = serve(grpc_case_repo, grpc=True, grpc_transport="grpcio", grpc_max_connections=2)
    port = server.grpc_port
    held = [RawClient(port) for _ in range(2)]
    try:
        for client in held:
            assert client.server_settings()
        late = RawClient(port)
        try:
            got = late.next_frame()
            assert got is None or got[0] == GOAWAY, got  # grpc core closes it at once
        finally:
            late.close()
    finally:
        for client in held:
            client.close()
