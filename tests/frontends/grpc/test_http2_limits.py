"""What one client can make naiad's gRPC transport hold or do, attack by attack.

Each attack runs over loopback against ``naiad serve`` in a subprocess (so
its memory is the server's own, read from ``/proc/<pid>/status``), sends a
bounded number of bytes, and checks three things: the answer (GOAWAY or
RST_STREAM code, or the rpc's status), that the server's RSS grew less than
a stated bound, and that a health check on another connection kept
answering throughout.  Limits and defaults: ``docs/security.md``.
"""

from __future__ import annotations

import gzip
import re
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from support import onnx_models
from tritonclient.utils import InferenceServerException

from frontends.grpc.h2client import (
    CANCEL,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    ENHANCE_YOUR_CALM,
    FLOW_CONTROL_ERROR,
    FRAME_SIZE_ERROR,
    GOAWAY,
    HEADERS,
    NO_ERROR,
    REFUSED_STREAM,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    RawClient,
    frame,
    settings,
)
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.ready import ServeProcess, serve_command

pytestmark = pytest.mark.e2e

MiB = 1 << 20
STREAM_WINDOW = 256 * 1024  # naiad's advertised SETTINGS_INITIAL_WINDOW_SIZE

SLEEPY_MODEL = """
import time
import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        time.sleep(2)
        return [pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.zeros(1, np.float32))])
                for r in requests]
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("limits") / "models"
    identity = root / "identity"
    onnx_models.identity(identity / "1" / "model.onnx", shape=("n",))
    onnx_models.write_config(identity, """name: "identity"
backend: "onnxruntime"
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [-1] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [-1] }]
""")  # fmt: skip
    sleepy = root / "sleepy"
    (sleepy / "1").mkdir(parents=True)
    (sleepy / "1" / "model.py").write_text(SLEEPY_MODEL)
    onnx_models.write_config(sleepy, """name: "sleepy"
backend: "python"
input [{ name: "IN" data_type: TYPE_FP32 dims: [-1] }]
output [{ name: "OUT" data_type: TYPE_FP32 dims: [1] }]
""")  # fmt: skip
    return root


class Served:
    """``naiad serve`` in a subprocess, gRPC only, on a free loopback port."""

    def __init__(self, repo: Path, *flags: str) -> None:
        self._child = ServeProcess(serve_command([
            "--model-repository", str(repo), "--allow-http", "false", "--allow-metrics", "false",
            "--grpc-address", "127.0.0.1", "--grpc-port", "0", *flags,
        ]))  # fmt: skip
        self.proc = self._child.process
        self.port = self._child.wait_ready(120)["grpc"]  # it says so once it serves

    @property
    def url(self) -> str:
        return f"127.0.0.1:{self.port}"

    def rss(self) -> int:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024  # type: ignore[union-attr]

    def stop(self) -> None:
        self._child.stop(30)


@pytest.fixture(scope="module")
def server(repo: Path) -> Iterator[Served]:
    """naiad's defaults."""
    served = Served(repo)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def tight(repo: Path) -> Iterator[Served]:
    """Small limits, so an attack that respects them is small too: 4 MiB messages, a
    receive buffer of one such message, 8 streams a connection."""
    served = Served(repo, "--grpc-max-receive-message-size", str(4 * MiB),
                    "--grpc-max-receive-buffer-size", "0",  # raised to one message
                    "--grpc-max-concurrent-streams", "8")  # fmt: skip
    yield served
    served.stop()


@contextmanager
def answering(served: Served, rss_bound: int) -> Iterator[None]:
    """Assert that a health check on its own connection answers throughout the block, and
    that the server's RSS stays within ``rss_bound`` bytes of what it was before."""
    base = served.rss()
    peak = [base]
    failures: list[BaseException] = []
    answers = [0]
    stop = threading.Event()

    def watch() -> None:
        with grpcclient.InferenceServerClient(served.url) as client:
            while not stop.is_set():
                try:
                    assert client.is_server_live(client_timeout=5)
                    answers[0] += 1
                except BaseException as exc:  # noqa: BLE001 - reported below
                    failures.append(exc)
                peak[0] = max(peak[0], served.rss())
                stop.wait(0.02)

    thread = threading.Thread(target=watch)
    thread.start()
    try:
        yield
        # One more answer after the attack, and two at least: waited for, not slept on,
        # as the watcher may not have had its first answer yet on a loaded machine.
        wanted = max(answers[0] + 1, 2)
        deadline = time.monotonic() + 30
        while answers[0] < wanted and not failures and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join()
    peak[0] = max(peak[0], served.rss())
    assert not failures, failures[:3]
    assert answers[0] >= 2
    grown = peak[0] - base
    assert grown < rss_bound, f"RSS grew {grown / MiB:.0f} MiB (bound {rss_bound / MiB:.0f})"


def infer_request(model: str, values: int = 1) -> bytes:
    request = pb.ModelInferRequest(model_name=model)
    name = "IN" if model == "sleepy" else "INPUT0"
    request.inputs.add(name=name, datatype="FP32", shape=[values])
    request.raw_input_contents.append(bytes(4 * values))
    return request.SerializeToString()


def sendall_until_stopped(sock: socket.socket, data: bytes, limit: int) -> int:
    """Send ``data`` repeatedly, up to ``limit`` bytes, until the server stops taking it."""
    sent = 0
    sock.settimeout(1.0)
    try:
        while sent < limit:
            sock.sendall(data)
            sent += len(data)
    except (TimeoutError, OSError):
        pass
    sock.settimeout(10)
    return sent


# -- what the server advertises ------------------------------------------------------------


def test_settings_advertise_the_limits(server: Served) -> None:
    client = RawClient(server.port)
    try:
        advertised = client.server_settings()
    finally:
        client.close()
    assert advertised[0x3] == 100  # MAX_CONCURRENT_STREAMS (Envoy's default)
    assert advertised[0x4] == STREAM_WINDOW  # INITIAL_WINDOW_SIZE
    assert advertised[0x6] == 16 * 1024  # MAX_HEADER_LIST_SIZE (grpc core's hard limit)
    assert advertised.get(0x5, 16384) == 16384  # MAX_FRAME_SIZE: the RFC default


# -- header blocks ---------------------------------------------------------------------------


def test_continuation_flood_gets_goaway(server: Served) -> None:
    # CVE-2024-27316: HEADERS without END_HEADERS, then CONTINUATION frames without end.
    client = RawClient(server.port)
    try:
        with answering(server, rss_bound=32 * MiB):
            client.sock.sendall(frame(HEADERS, 0, 1, client.block("ServerLive")))
            continuations = frame(CONTINUATION, 0, 1, b"x" * 16384) * 64
            sendall_until_stopped(client.sock, continuations, limit=64 * MiB)
            assert client.goaway() == (ENHANCE_YOUR_CALM, b"header block over 65536 octets")
    finally:
        client.close()


def test_hpack_bomb_gets_goaway(server: Served) -> None:
    # One 4 KB header put in the dynamic table, then 16000 one-octet references to it:
    # 20 KB on the wire, 64 MB decoded.
    client = RawClient(server.port)
    try:
        with answering(server, rss_bound=32 * MiB):
            block = client.block("ServerLive") + client.encoder.encode([("x-bomb", "a" * 4000)])
            block += b"\xbe" * 16000  # index 62: the newest entry of the dynamic table
            client.sock.sendall(
                frame(HEADERS, 0, 1, block[:16384])
                + frame(CONTINUATION, END_HEADERS | END_STREAM, 1, block[16384:])
            )
            code, debug = client.goaway()
        assert code == ENHANCE_YOUR_CALM and debug.startswith(b"header list over")
    finally:
        client.close()


def test_metadata_over_the_limit_fails_its_call_only(server: Served) -> None:
    with grpcclient.InferenceServerClient(server.url) as client:
        with pytest.raises(InferenceServerException) as exc:
            client.is_server_live(headers={"x-big": "a" * 20000})
        assert exc.value.status() == "StatusCode.RESOURCE_EXHAUSTED"
        assert "received metadata size exceeds hard limit" in exc.value.message()
        assert client.is_server_live()  # the same connection serves on


# -- frames and messages ---------------------------------------------------------------------


def test_a_frame_over_the_max_frame_size_is_refused_before_its_payload(server: Served) -> None:
    client = RawClient(server.port)
    try:
        # Only the 9-octet header of a 16 MB frame: nothing more needs to arrive.
        client.sock.sendall(struct.pack(">I B I", ((16 * MiB - 1) << 8) | DATA, 0, 1))
        code, _ = client.goaway()
        assert code == FRAME_SIZE_ERROR
    finally:
        client.close()


def test_messages_over_the_max_are_refused_as_their_length_arrives(server: Served) -> None:
    # The attack: 4 streams x 300 MB on one connection.  Each gets grpc core's
    # RESOURCE_EXHAUSTED once its first DATA frame says how long it is.
    client = RawClient(server.port)
    try:
        with answering(server, rss_bound=32 * MiB):
            prefix = b"\x00" + (300 * 1000 * 1000).to_bytes(4, "big")
            for stream in (1, 3, 5, 7):
                client.sock.sendall(
                    client.open(stream, "ModelInfer")
                    + frame(DATA, 0, stream, prefix + bytes(16379))
                )
            for stream in (1, 3, 5, 7):
                _, _, trailers = client.response(stream)
                assert trailers["grpc-status"] == "8"  # RESOURCE_EXHAUSTED
                assert trailers["grpc-message"] == (
                    "Received message larger than max (300000000 vs. 67108864)"
                )
                kind, _, _, payload = client.until(RST_STREAM, stream)  # stop sending
                assert int.from_bytes(payload, "big") == NO_ERROR
    finally:
        client.close()


def test_message_size_limit_through_tritonclient(tight: Served) -> None:
    with grpcclient.InferenceServerClient(tight.url) as client:
        tensor = grpcclient.InferInput("INPUT0", [MiB + 1], "FP32")  # 4 MiB + 4 bytes of data
        tensor.set_data_from_numpy(np.zeros(MiB + 1, np.float32))
        with pytest.raises(InferenceServerException) as exc:
            client.infer("identity", [tensor])
        assert exc.value.status() == "StatusCode.RESOURCE_EXHAUSTED"
        assert "Received message larger than max" in exc.value.message()
        tensor = grpcclient.InferInput("INPUT0", [MiB - 64], "FP32")  # fits
        data = np.arange(MiB - 64, dtype=np.float32)
        tensor.set_data_from_numpy(data)
        np.testing.assert_array_equal(client.infer("identity", [tensor]).as_numpy("OUTPUT0"), data)


def test_a_compressed_message_may_not_inflate_past_the_max(tight: Served) -> None:
    bomb = gzip.compress(bytes(64 * MiB))  # 64 KB that inflate to 64 MiB
    client = RawClient(tight.port)
    try:
        with answering(tight, rss_bound=32 * MiB):
            block = client.block("ModelInfer", [("grpc-encoding", "gzip")])
            body = b"\x01" + len(bomb).to_bytes(4, "big") + bomb
            client.sock.sendall(frame(HEADERS, END_HEADERS, 1, block))
            for start in range(0, len(body), 16384):
                last = start + 16384 >= len(body)
                client.sock.sendall(
                    frame(DATA, END_STREAM if last else 0, 1, body[start : start + 16384])
                )
            _, _, trailers = client.response(1)
        assert trailers["grpc-status"] == "8"
        assert "Received message larger than max" in trailers["grpc-message"]
    finally:
        client.close()


# -- flow control ----------------------------------------------------------------------------


def test_data_past_the_stream_window_resets_the_stream(server: Served) -> None:
    client = RawClient(server.port)
    try:
        # A unary call with its message (the model takes 2 s), then more than the stream's
        # window of bytes the call never consumes.
        client.request(1, "ModelInfer", infer_request("sleepy"), end=False)
        junk = frame(DATA, 0, 1, bytes(16384))
        client.sock.sendall(junk * (STREAM_WINDOW // 16384 + 1))
        _, _, _, payload = client.until(RST_STREAM, 1)
        assert int.from_bytes(payload, "big") == FLOW_CONTROL_ERROR
        client.request(3, "ServerLive", b"")  # the connection serves on
        assert client.response(3)[2]["grpc-status"] == "0"
    finally:
        client.close()


def test_window_is_lent_to_one_large_message_at_a_time(tight: Served) -> None:
    # A client that honours flow control and starts 8 messages of 4 MiB at once: each
    # stream may send its window; the receive buffer (one message) lends the rest to one
    # stream at a time, in order, and lends again when that call is done with it.
    size = 4 * MiB - 64
    body = b"\x00" + size.to_bytes(4, "big") + bytes(size)
    streams = list(range(1, 17, 2))
    client = RawClient(tight.port)
    try:
        with answering(tight, rss_bound=24 * MiB):
            sent = dict.fromkeys(streams, 0)
            window = dict.fromkeys(streams, STREAM_WINDOW)
            for stream in streams:
                client.sock.sendall(client.open(stream, "ModelInfer"))
            loans: list[int] = []
            done: list[int] = []

            def send_what_windows_allow() -> None:
                for stream in streams:
                    while sent[stream] < len(body) and window[stream] > 0:
                        n = min(16384, window[stream], len(body) - sent[stream])
                        end = END_STREAM if sent[stream] + n == len(body) else 0
                        client.sock.sendall(
                            frame(DATA, end, stream, body[sent[stream] : sent[stream] + n])
                        )
                        sent[stream] += n
                        window[stream] -= n

            send_what_windows_allow()
            while len(done) < len(streams):
                kind, flags, stream, payload = client.next_frame() or (None, 0, 0, b"")
                assert kind is not None, "connection closed"
                if kind == WINDOW_UPDATE and stream:
                    loans.append(stream)
                    # Only the stream that holds the loan is still receiving.
                    assert sum(sent[s] < len(body) for s in streams if s in loans) == 1
                    window[stream] += int.from_bytes(payload, "big")
                    send_what_windows_allow()
                elif kind == HEADERS:
                    client.decoder.decode(payload)
                    if flags & END_STREAM:
                        done.append(stream)  # zeros do not parse as a request: answered
        assert loans == streams  # one loan each, in the order the streams asked
        assert done == streams
    finally:
        client.close()


# -- streams -----------------------------------------------------------------------------------


def test_streams_past_the_limit_are_refused(tight: Served) -> None:
    client = RawClient(tight.port)
    try:
        opened = b"".join(client.open(stream, "ModelInfer") for stream in range(1, 19, 2))
        client.sock.sendall(opened)  # 9 calls that wait for their message; the limit is 8
        _, _, stream, payload = client.until(RST_STREAM)
        assert (stream, int.from_bytes(payload, "big")) == (17, REFUSED_STREAM)
    finally:
        client.close()
    # grpc clients keep to the limit by queueing: 40 calls on one channel all complete.
    with grpcclient.InferenceServerClient(tight.url) as grpc_client:
        results: list[Any] = []
        tensor = grpcclient.InferInput("INPUT0", [4], "FP32")
        tensor.set_data_from_numpy(np.ones(4, np.float32))
        for _ in range(40):
            grpc_client.async_infer(
                "identity", [tensor], lambda result, error: results.append(error or result)
            )
        deadline = time.monotonic() + 30
        while len(results) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(results) == 40 and not any(isinstance(r, Exception) for r in results)


def test_rapid_reset_gets_goaway(server: Served) -> None:
    # CVE-2023-44487: open a call and cancel it at once, over and over.
    client = RawClient(server.port)
    try:
        with answering(server, rss_bound=32 * MiB):
            burst = b"".join(
                client.open(stream, "ModelInfer")
                + frame(RST_STREAM, 0, stream, CANCEL.to_bytes(4, "big"))
                for stream in range(1, 2 * 1200, 2)
            )
            client.sock.sendall(burst)
            code, debug = client.goaway()
        assert (code, debug) == (ENHANCE_YOUR_CALM, b"too many stream resets")
    finally:
        client.close()


def test_settings_flood_without_reading_gets_goaway(server: Served) -> None:
    # The client sends SETTINGS (each needs an acknowledgement) and reads nothing.
    client = RawClient(server.port, rcvbuf=4096)
    try:
        with answering(server, rss_bound=32 * MiB):
            sendall_until_stopped(client.sock, frame(SETTINGS, 0, 0) * 10000, limit=32 * MiB)
            code, debug = client.goaway()
        assert (code, debug) == (ENHANCE_YOUR_CALM, b"flood: the peer reads none of its answers")
    finally:
        client.close()


# -- timeouts (in-process servers: nothing here needs RSS) -------------------------------------


def test_a_response_the_client_takes_nothing_of_is_reset(grpc_case_repo: Path, serve: Any) -> None:
    started = serve(grpc_case_repo, grpc=True, grpc_send_timeout_ms=300)
    client = RawClient(started.grpc_port, settings(INITIAL_WINDOW_SIZE=0))
    try:
        client.request(1, "ServerMetadata", b"")
        start = time.monotonic()
        client.until(HEADERS, 1)  # the response starts; its DATA waits for window forever
        _, _, _, payload = client.until(RST_STREAM, 1)
        assert int.from_bytes(payload, "big") == CANCEL
        assert 0.2 < time.monotonic() - start < 5
    finally:
        client.close()
    with grpcclient.InferenceServerClient(f"127.0.0.1:{started.grpc_port}") as grpc_client:
        assert grpc_client.is_server_live()


def test_a_connection_without_a_preface_is_closed(grpc_case_repo: Path, serve: Any) -> None:
    started = serve(grpc_case_repo, grpc=True, grpc_handshake_timeout_ms=300)
    for opening in (b"", b"PRI * HTTP/2.0\r\n"):  # nothing, half a preface
        sock = socket.create_connection(("127.0.0.1", started.grpc_port), timeout=10)
        try:
            start = time.monotonic()
            sock.sendall(opening)
            while sock.recv(65536):
                pass
            assert 0.2 < time.monotonic() - start < 5
        finally:
            sock.close()
    with grpcclient.InferenceServerClient(f"127.0.0.1:{started.grpc_port}") as grpc_client:
        assert grpc_client.is_server_live()  # a client that sends its preface is unaffected


def test_an_idle_connection_gets_goaway_when_asked(grpc_case_repo: Path, serve: Any) -> None:
    started = serve(grpc_case_repo, grpc=True, grpc_max_connection_idle_ms=300)
    client = RawClient(started.grpc_port)
    try:
        client.request(1, "ServerLive", b"")
        assert client.response(1)[2]["grpc-status"] == "0"
        start = time.monotonic()
        _, _, _, payload = client.until(GOAWAY)
        assert int.from_bytes(payload[4:8], "big") == NO_ERROR and payload[8:] == b"max_idle"
        assert 0.2 < time.monotonic() - start < 5
    finally:
        client.close()
    with grpcclient.InferenceServerClient(f"127.0.0.1:{started.grpc_port}") as grpc_client:
        assert grpc_client.is_server_live()
        time.sleep(0.8)  # its connection went away; the channel reconnects
        assert grpc_client.is_server_live()


def test_no_connection_timeouts_by_default(server: Served) -> None:
    # Long-lived idle channels (tritonclient keeps one) are kept, as grpc core keeps them.
    with grpcclient.InferenceServerClient(server.url) as client:
        assert client.is_server_live()
        client2 = RawClient(server.port)
        try:
            client2.sock.settimeout(1.5)
            with pytest.raises(TimeoutError):
                while True:
                    got = client2.next_frame()
                    assert got is not None and got[0] != GOAWAY
        finally:
            client2.close()
        assert client.is_server_live()


# -- the ordinary path -----------------------------------------------------------------------


def test_a_32_mb_tensor_still_works(server: Served) -> None:
    data = np.random.default_rng(0).random(8 * MiB, dtype=np.float32)  # 32 MiB
    tensor = grpcclient.InferInput("INPUT0", [data.size], "FP32")
    tensor.set_data_from_numpy(data)
    with grpcclient.InferenceServerClient(server.url) as client:
        for _ in range(2):
            np.testing.assert_array_equal(
                client.infer("identity", [tensor]).as_numpy("OUTPUT0"), data
            )


# -- the grpcio transport ---------------------------------------------------------------------


def test_grpcio_transport_keeps_the_same_limits(grpc_case_repo: Path, serve: Any) -> None:
    started = serve(grpc_case_repo, grpc=True, grpc_transport="grpcio",
                    grpc_max_receive_message_size=MiB, grpc_max_concurrent_streams=4)  # fmt: skip
    url = f"127.0.0.1:{started.grpc_port}"
    with grpcclient.InferenceServerClient(url) as client:
        tensor = grpcclient.InferInput("INPUT0", [1, MiB // 4 + 16], "FP32")  # 1 MiB + 64 B
        tensor.set_data_from_numpy(np.zeros((1, MiB // 4 + 16), np.float32))
        with pytest.raises(InferenceServerException) as exc:
            client.infer("identity_fp32", [tensor])
        assert exc.value.status() == "StatusCode.RESOURCE_EXHAUSTED"
        with pytest.raises(InferenceServerException) as exc:
            client.is_server_live(headers={"x-big": "a" * 20000})
        assert exc.value.status() == "StatusCode.RESOURCE_EXHAUSTED"
        assert client.is_server_live()
    raw = RawClient(started.grpc_port)
    try:
        assert raw.server_settings()[0x3] == 4  # MAX_CONCURRENT_STREAMS
    finally:
        raw.close()
