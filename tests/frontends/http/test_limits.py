"""What one HTTP/1.1 client may cost: head sizes, timeouts, the connection cap.

Each attack runs against ``naiad serve`` in its own process, bounded in bytes
and seconds, and checks the answer (414/431/408/503), that the server's
memory stays under a stated bound and that a health check on another
connection keeps answering while it runs.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import onnx_models
from support.onnx_models import write_config
from support.served import HealthWatch, Served, closed_by_peer, naiad_serve

from frontends.http.wire import error_of, read_response

pytestmark = pytest.mark.e2e

TIMEOUT = 2.0  # the server's header, body and keep-alive timeouts here (seconds)


@pytest.fixture(scope="module")
def limits_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("limits") / "models"
    onnx_models.identity(repo / "identity" / "1" / "model.onnx", shape=[-1, 4])
    write_config(repo / "identity", 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    return repo


@pytest.fixture(scope="module")
def server(limits_repo: Path) -> Iterator[Served]:
    timeouts = [f"--http-{name}-timeout-secs={TIMEOUT}" for name in ("header", "body", "keepalive")]
    with naiad_serve(limits_repo, *timeouts) as served:
        yield served


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    return read_response(sock, bytearray())


def test_a_long_url_is_refused_with_414(server: Served) -> None:
    with connect(server.http_port) as sock:
        sock.sendall(b"GET /v2/" + b"a" * (1 << 20) + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        status, headers, body = answer(sock)
    assert status == 414
    assert headers["connection"] == "close"
    assert "--http-max-url-size" in error_of(body)


def test_a_huge_header_is_refused_with_431(server: Served) -> None:
    with connect(server.http_port) as sock:
        sock.sendall(b"GET /v2 HTTP/1.1\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
        status, _, body = answer(sock)
    assert status == 431
    assert "--http-max-head" in error_of(body) or "--http-max-header-size" in error_of(body)


def test_one_header_over_its_limit_is_named(server: Served) -> None:
    with connect(server.http_port) as sock:
        sock.sendall(b"GET /v2 HTTP/1.1\r\nX-Big: " + b"a" * 10_000 + b"\r\n\r\n")
        status, _, body = answer(sock)
    assert status == 431
    assert (
        error_of(body) == "header 'X-Big' is 10005 bytes, more than 8192 (--http-max-header-size)"
    )


def test_ten_thousand_headers_are_refused_with_431(server: Served) -> None:
    headers = b"".join(b"X-%d: y\r\n" % i for i in range(10_000))
    with connect(server.http_port) as sock:
        sock.sendall(b"GET /v2 HTTP/1.1\r\n" + headers + b"\r\n")
        status, _, body = answer(sock)
    assert status == 431
    assert "--http-max-head" in error_of(body)  # ~90 KB: the head's size limit comes first


@pytest.mark.parametrize("name", [b"X-%d", b"X-Same"])  # repeated names count one by one
def test_more_header_fields_than_allowed_are_refused_with_431(server: Served, name: bytes) -> None:
    headers = b"".join((name % i if b"%" in name else name) + b": y\r\n" for i in range(101))
    with connect(server.http_port) as sock:
        sock.sendall(b"GET /v2/health/ready HTTP/1.1\r\n" + headers + b"\r\n")
        status, _, body = answer(sock)
    assert status == 431
    assert error_of(body) == "more than 100 header fields (--http-max-header-count)"


def test_headers_within_the_limits_are_served(server: Served) -> None:
    headers = b"".join(b"X-%d: %s\r\n" % (i, b"v" * 200) for i in range(90))
    with connect(server.http_port) as sock:
        sock.sendall(b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
        status, _, _ = answer(sock)
    assert status == 200


def _endless_header(port: int, budget: int, result: list[str]) -> None:
    """Send one header line that never ends, up to ``budget`` bytes or until cut off."""
    with connect(port) as sock:
        sock.sendall(b"GET /v2 HTTP/1.1\r\nX-Endless: ")
        chunk = b"a" * 65536
        sent = 0
        try:
            while sent < budget:
                sock.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            status, _, _ = answer(sock)
            result.append(f"{status} after {sent}")
        except (AssertionError, OSError) as exc:
            result.append(f"cut after {sent}: {exc!r}")


def test_headers_that_never_end_cost_little_memory(server: Served) -> None:
    """Six connections each sending an unterminated header (today: 128 MB each grew the
    server by gigabytes and stalled its loop): each is refused after ~48 KiB, and what
    the client goes on sending is read and dropped (lingering close)."""
    before = server.rss_mb()
    results: list[str] = []
    with HealthWatch(server.http_port):
        threads = [
            threading.Thread(target=_endless_header, args=(server.http_port, 16 << 20, results))
            for _ in range(6)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert len(results) == 6
    assert all(r.startswith("431") for r in results), results
    assert server.rss_mb() - before < 30


def test_slowloris_connections_are_closed_at_the_header_timeout(server: Served) -> None:
    """200 connections trickling a request head a byte at a time are answered 408 and
    closed once the head is TIMEOUT seconds old, while the server keeps serving."""
    socks = [connect(server.http_port) for _ in range(200)]
    with HealthWatch(server.http_port):
        for sock in socks:
            sock.sendall(b"GET /v2/health/ready HTTP/1.1\r\n")
        start = time.monotonic()
        cut: set[int] = set()
        while len(cut) < len(socks) and time.monotonic() - start < 4 * TIMEOUT:
            for i, sock in enumerate(socks):
                if i not in cut:
                    try:
                        sock.sendall(b"X")
                    except OSError:
                        cut.add(i)
            time.sleep(0.2)
    elapsed = time.monotonic() - start
    statuses = set()
    for sock in socks:
        with contextlib.suppress(OSError, AssertionError), sock:
            sock.settimeout(1)
            statuses.add(answer(sock)[0])
    assert len(cut) == len(socks), f"{len(cut)} of {len(socks)} cut after {elapsed:.1f}s"
    assert elapsed < 3 * TIMEOUT
    assert statuses <= {408}


def test_a_body_that_never_arrives_times_out(server: Served) -> None:
    with connect(server.http_port) as sock:
        start = time.monotonic()
        sock.sendall(b"POST /v2/models/identity/infer HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
        status, _, body = answer(sock)
        assert status == 408
        assert "--http-body-timeout-secs" in error_of(body)
        assert TIMEOUT - 0.5 < time.monotonic() - start < 3 * TIMEOUT
        assert closed_by_peer(sock)


def test_an_idle_keepalive_connection_is_closed(server: Served) -> None:
    with connect(server.http_port) as sock:
        sock.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answer(sock)[0] == 200
        start = time.monotonic()
        assert closed_by_peer(sock, within=4 * TIMEOUT)
        assert time.monotonic() - start > TIMEOUT - 0.5


def test_a_busy_keepalive_connection_stays_open(server: Served) -> None:
    # Requests TIMEOUT / 4 apart keep one connection open for 1.5 * TIMEOUT, past the
    # keep-alive timeout, so each request must restart it.  A pause of TIMEOUT / 4
    # leaves 3/4 of the timeout (1.5 s) for a loaded machine to send the next one.
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=10)
    for _ in range(6):
        conn.request("GET", "/v2/health/live")
        assert conn.getresponse().read() == b""
        time.sleep(TIMEOUT / 4)
    conn.close()


def test_a_declared_body_far_over_the_limit_is_answered_at_once(server: Served) -> None:
    """Content-Length 1e12: answered 400 before any body is read, the connection then
    closed after the client stops sending (lingering close)."""
    with connect(server.http_port) as sock:
        sock.sendall(
            b"POST /v2/models/identity/infer HTTP/1.1\r\nContent-Length: 1000000000000\r\n\r\n"
        )
        status, headers, body = answer(sock)
        assert status == 400
        assert headers["connection"] == "close"
        assert "--http-max-input-size" in error_of(body)
        sock.sendall(b"x" * 100_000)  # what the client still sends is read and dropped
        sock.shutdown(socket.SHUT_WR)
        assert closed_by_peer(sock)


INFER = (
    b"POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
    % (len(BODY := b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],'
                   b'"data":[1,2,3,4]}]}'), BODY)
)  # fmt: skip


@pytest.mark.parametrize("request_bytes", [b"GET /v2/health/ready HTTP/1.1\r\n\r\n", INFER])
def test_a_half_closed_client_gets_its_answer(server: Served, request_bytes: bytes) -> None:
    """The client sends a whole request, then shuts its writing half (as nginx and
    Triton allow): the answer still arrives, then the server closes."""
    with connect(server.http_port) as sock:
        sock.sendall(request_bytes)
        sock.shutdown(socket.SHUT_WR)
        status, _, body = answer(sock)
        assert status == 200, body
        assert closed_by_peer(sock)


def test_a_half_closed_client_gets_every_pipelined_answer(server: Served) -> None:
    with connect(server.http_port) as sock:
        sock.sendall(INFER * 3)
        sock.shutdown(socket.SHUT_WR)
        buffer = bytearray()
        statuses = [read_response(sock, buffer)[0] for _ in range(3)]
        assert statuses == [200, 200, 200]
        assert closed_by_peer(sock)


@pytest.fixture
def capped(serve: object, limits_repo: Path) -> object:
    return serve(limits_repo, http=True, http_max_connections=8)  # type: ignore[operator]


def until_held(server: object, count: int, *, idle: bool) -> None:
    """Wait until the server holds ``count`` connections, all idle or all reading a head
    (a fixed sleep would only hope the server got that far on a loaded machine)."""
    listener = server.frontends["http"]  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        held = list(listener.connections)
        if len(held) == count and all(c.idle is idle for c in held):
            return
        time.sleep(0.01)
    raise AssertionError(f"the server holds {len(held)} connections, not {count}")


def test_at_the_connection_cap_the_longest_idle_connection_makes_room(capped: object) -> None:
    port = capped.http_port  # type: ignore[attr-defined]
    idle = [connect(port) for _ in range(8)]
    try:
        until_held(capped, 8, idle=True)
        with connect(port) as sock:
            sock.sendall(b"GET /v2/health/ready HTTP/1.1\r\n\r\n")
            assert answer(sock)[0] == 200
        assert closed_by_peer(idle[0], within=5)
    finally:
        for sock in idle:
            sock.close()


def test_at_the_connection_cap_with_none_idle_a_newcomer_gets_503(capped: object) -> None:
    port = capped.http_port  # type: ignore[attr-defined]
    busy = [connect(port) for _ in range(8)]
    try:
        for sock in busy:
            sock.sendall(b"GET /v2/health/ready HTTP/1.1\r\n")  # heads not finished
        until_held(capped, 8, idle=False)
        with connect(port) as sock:
            status, _, body = answer(sock)
            assert status == 503
            assert "too many open connections" in error_of(body)
        busy[0].sendall(b"\r\n")  # one head finishes: it is answered as usual
        assert answer(busy[0])[0] == 200
    finally:
        for sock in busy:
            sock.close()


def test_a_request_cut_short_by_the_client_is_a_400(server: Served) -> None:
    with connect(server.http_port) as sock:
        sock.sendall(INFER[:-10])  # the body is 10 bytes short of its Content-Length
        sock.shutdown(socket.SHUT_WR)
        status, _, body = answer(sock)
        assert status == 400
        assert error_of(body) == "request ended before it was complete"
