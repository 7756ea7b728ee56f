"""The metrics port takes no request bodies and answers malformed requests with 400.

Against ``naiad serve`` in its own process: a huge body is never read into
memory, and a bad Content-Length costs one log line, not a traceback.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from frontends.http.wire import read_response
from support import onnx_models
from support.onnx_models import write_config
from support.served import HealthWatch, Served, closed_by_peer, naiad_serve

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    repo = tmp_path_factory.mktemp("metrics-limits") / "models"
    onnx_models.identity(repo / "identity" / "1" / "model.onnx", shape=[-1, 4])
    write_config(repo / "identity", 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    with naiad_serve(repo, "--http-header-timeout-secs=2") as served:
        yield served


def _ask(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes, socket.socket]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(raw)
    status, headers, body = read_response(sock, bytearray())
    return status, headers, body, sock


def test_a_huge_body_is_refused_unread(server: Served) -> None:
    """Content-Length 1e12 (today: the body was read, 500 MB of it added 500 MB)."""
    before = server.rss_mb()
    with HealthWatch(server.http_port):
        status, headers, _, sock = _ask(
            server.metrics_port, b"GET /metrics HTTP/1.1\r\nContent-Length: 1000000000000\r\n\r\n"
        )
        with sock:
            assert status == 400
            assert headers["connection"] == "close"
            sent = 0
            try:
                for _ in range(1024):  # up to 64 MiB
                    sock.sendall(b"x" * 65536)
                    sent += 65536
            except OSError:
                pass
            assert closed_by_peer(sock)
    assert server.rss_mb() - before < 20, f"grew after {sent} bytes"
    status, _, body, sock = _ask(server.metrics_port, b"GET /metrics HTTP/1.1\r\n\r\n")
    sock.close()
    assert status == 200 and b"nv_inference_count" in body


@pytest.mark.parametrize("length", [b"abc", b"-5", b"1e3"])
def test_a_bad_content_length_is_a_400_and_one_log_line(server: Served, length: bytes) -> None:
    status, headers, _, sock = _ask(
        server.metrics_port, b"GET /metrics HTTP/1.1\r\nContent-Length: " + length + b"\r\n\r\n"
    )
    # the server logs the client's address; earlier tests' lines may still arrive
    peer = repr(sock.getsockname())
    sock.close()
    assert status == 400
    assert headers["connection"] == "close"

    def ours() -> list[str]:
        return [line for line in server.lines if peer in line]

    deadline = time.monotonic() + 30  # ends at the first line; long for a loaded machine
    while not ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # a second line, if one were coming, would follow at once
    new = ours()
    assert len(new) == 1, new
    assert "invalid Content-Length" in new[0]
    assert "Traceback" not in server.output()


def test_a_malformed_request_line_is_a_400(server: Served) -> None:
    status, _, _, sock = _ask(server.metrics_port, b"GARBAGE\r\n\r\n")
    sock.close()
    assert status == 400


def test_a_head_that_never_ends_is_refused(server: Served) -> None:
    status, _, _, sock = _ask(
        server.metrics_port, b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * (1 << 20)
    )
    sock.close()
    assert status == 431


def test_a_silent_connection_is_closed_at_the_header_timeout(server: Served) -> None:
    with socket.create_connection(("127.0.0.1", server.metrics_port), timeout=10) as sock:
        start = time.monotonic()
        assert closed_by_peer(sock)
        # The header timeout is 2 s: closed no earlier (less the sweep's slack), and well
        # before the 10 s socket timeout above, which a server that never closes would hit.
        assert 1.5 < time.monotonic() - start < 8


def test_post_with_a_body_is_405_and_closes(server: Served) -> None:
    status, headers, body, sock = _ask(
        server.metrics_port, b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
    )
    with sock:
        assert (status, body) == (405, b'{"error":"Method Not Allowed"}')
        assert headers["connection"] == "close"
        assert closed_by_peer(sock)


def test_the_metrics_port_keeps_serving(server: Served) -> None:
    for _ in range(3):
        status, _, body, sock = _ask(server.metrics_port, b"GET /metrics HTTP/1.1\r\n\r\n")
        sock.close()
        assert status == 200 and body
