"""What HTTP clients can make the server hold: compression bombs, bodies that never end,
the server-wide request buffer and a fair share of the connection cap.

Each attack runs against ``naiad serve`` in its own process (its memory is measured
apart from the test's) or an in-process server where the test reads its counters.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import onnx_models
from support.bombs import gzip_bomb
from support.onnx_models import write_config
from support.served import HealthWatch, Served, closed_by_peer, naiad_serve
from support.waiting import until

from frontends.http.wire import error_of, read_response

pytestmark = pytest.mark.e2e

TIMEOUT = 2.0  # the body timeout here (seconds)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("memory") / "models"
    onnx_models.identity(repo / "identity" / "1" / "model.onnx", shape=[-1, 4])
    write_config(repo / "identity", 'backend: "onnxruntime"\nmax_batch_size: 8\n')
    return repo


@pytest.fixture(scope="module")
def server(repo: Path) -> Iterator[Served]:
    with naiad_serve(repo, f"--http-body-timeout-secs={TIMEOUT}") as served:
        yield served


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30, source_address=(source, 0))


def post(path: str, body: bytes, *headers: bytes) -> bytes:
    head = b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" % (path.encode(), len(body))
    return head + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body


def test_a_gzip_bomb_is_refused_at_the_limit(server: Served) -> None:
    """1 MB of gzip that inflates to 1 GiB (before: all of it was inflated, the server
    grew by gigabytes and stalled): inflating stops past --http-max-input-size."""
    bomb = gzip_bomb()
    assert len(bomb) < 1_100_000
    before = server.rss_mb()
    with HealthWatch(server.http_port), connect(server.http_port) as sock:
        start = time.monotonic()
        sock.sendall(post("/v2/models/identity/infer", bomb, b"Content-Encoding: gzip"))
        status, _, body = read_response(sock, bytearray())
        elapsed = time.monotonic() - start
    assert status == 400
    assert error_of(body) == (
        "decompressed request body exceeds the maximum allowed size of 67108864 bytes. "
        "Use --http-max-input-size to increase the limit."
    )
    assert elapsed < 10
    # One body's worth (64 MiB) inflated at most, never the whole gigabyte.
    assert server.peak_mb() - before < 300


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            gzip_bomb(1 << 20)[:-100],
            "failed to decompress the request body: it ends before its stream",
        ),
        (b"\x1f\x8b\x08\x00garbage", "failed to decompress the request body: "),
    ],
    ids=["truncated", "corrupt"],
)
def test_a_broken_gzip_body_is_a_400(server: Served, body: bytes, error: str) -> None:
    with connect(server.http_port) as sock:
        sock.sendall(post("/v2/models/identity/infer", body, b"Content-Encoding: gzip"))
        status, _, answer = read_response(sock, bytearray())
    assert status == 400
    assert error_of(answer).startswith(error)


# -- in-process servers, whose request budget the test reads ------------------------------

INFER = post(
    "/v2/models/identity/infer",
    b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]}',
)


def test_a_trickled_body_is_cut_off_and_its_memory_given_back(serve: object, repo: Path) -> None:
    """512 KiB at once, then a byte every 0.2 s: each byte used to restart the body
    timeout, so the body was held forever; now it must bring --http-body-min-rate's worth
    in every --http-body-timeout-secs."""
    server = serve(repo, http=True, http_body_timeout_secs=TIMEOUT)  # type: ignore[operator]
    with connect(server.http_port) as sock:
        sock.sendall(post("/v2/models/identity/infer", bytes(1 << 20))[: -(1 << 20)])
        sock.sendall(bytes(512 << 10))
        until(lambda: server.budget.held == 512 << 10, "holding the body")
        start = time.monotonic()
        sock.settimeout(0.2)
        reply = b""
        while not reply and time.monotonic() - start < 6 * TIMEOUT:
            try:
                sock.sendall(b"0")
                reply = sock.recv(65536, socket.MSG_PEEK)
            except TimeoutError:
                continue
            except OSError:
                break
        sock.settimeout(30)
        status, _, body = read_response(sock, bytearray())
        elapsed = time.monotonic() - start
    assert status == 408
    assert error_of(body) == (
        f"request body brought less than {int(1024 * TIMEOUT)} bytes in {TIMEOUT:g}s "
        "(--http-body-timeout-secs, --http-body-min-rate)"
    )
    assert elapsed < 3 * TIMEOUT
    until(lambda: server.budget.held == 0, "giving the body back")


def test_a_slow_body_that_keeps_its_rate_is_served(serve: object, repo: Path) -> None:
    """4 KiB every 0.25 s (16 KiB/s, over the 1 KiB/s minimum) for three timeouts."""
    server = serve(repo, http=True, http_body_timeout_secs=1.0)  # type: ignore[operator]
    body = (
        b'{"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"data":[1,2,3,4]}]'
        + b" " * (48 << 10)
        + b"}"
    )
    request = post("/v2/models/identity/infer", body)
    with connect(server.http_port) as sock:
        for i in range(0, len(request), 4096):
            sock.sendall(request[i : i + 4096])
            time.sleep(0.25 / 4 if i > len(request) // 2 else 0.25)
        status, _, answer = read_response(sock, bytearray())
    assert status == 200, answer


def test_past_the_request_buffer_new_bodies_get_503(serve: object, repo: Path) -> None:
    """Two half-sent bodies hold 3 of a 4 MiB budget: a request that announces 2 MiB is
    refused at once, one that sends 2 MiB in chunks when it passes the budget; small
    requests and requests without a body are served; closing the two gives it all back."""
    MiB = 1 << 20
    server = serve(repo, http=True, max_request_buffer_size=4 * MiB)  # type: ignore[operator]
    port = server.http_port
    holders = [connect(port) for _ in range(2)]
    try:
        for sock in holders:
            sock.sendall(post("/v2/models/identity/infer", bytes(2 * MiB))[: -MiB // 2])
        until(lambda: server.budget.held >= 3 * MiB - 1024, "holding both bodies")
        with connect(port) as sock:
            sock.sendall(post("/v2/models/identity/infer", bytes(2 * MiB))[:200])
            status, headers, body = read_response(sock, bytearray())
        assert status == 503
        assert headers["connection"] == "close"
        assert "--max-request-buffer-size" in error_of(body)
        with connect(port) as sock:
            sock.sendall(b"POST /v2/models/identity/infer HTTP/1.1\r\nHost: x\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")  # fmt: skip
            try:
                for _ in range(32):
                    sock.sendall(b"10000\r\n" + bytes(0x10000) + b"\r\n")
            except OSError:
                pass
            status, _, body = read_response(sock, bytearray())
        assert status == 503
        assert "--max-request-buffer-size" in error_of(body)
        with connect(port) as sock:
            sock.sendall(INFER + b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n")
            buffer = bytearray()
            assert read_response(sock, buffer)[0] == 200
            assert read_response(sock, buffer)[0] == 200
    finally:
        for sock in holders:
            sock.close()
    until(lambda: server.budget.held == 0, "giving every body back")
    with connect(port) as sock:
        sock.sendall(post("/v2/models/identity/infer", bytes(2 * MiB)))
        status, _, body = read_response(sock, bytearray())
    assert status == 400  # taken in, then found not to be JSON
    assert "--max-request-buffer-size" not in error_of(body)
    until(lambda: server.budget.held == 0, "giving the answered body back")


# -- a fair share of the connection cap -----------------------------------------------------


def held(server: object, count: int, *, waiting: bool) -> None:
    listener = server.frontends["http"]  # type: ignore[attr-defined]
    until(
        lambda: (
            len(listener.connections) == count
            and all(c.waiting is waiting for c in listener.connections)
        ),
        f"holding {count} connections",
    )


def test_one_client_at_the_cap_cannot_lock_out_another(serve: object, repo: Path) -> None:
    """Eight unfinished heads from 127.0.0.1 fill the cap: a newcomer from 127.0.0.2 is
    served and the oldest of them is answered 503; another from 127.0.0.1 is refused."""
    server = serve(repo, http=True, http_max_connections=8)  # type: ignore[operator]
    port = server.http_port
    heavy = [connect(port) for _ in range(8)]
    try:
        for sock in heavy:
            sock.sendall(b"GET /v2/health/ready HTTP/1.1\r\n")
        held(server, 8, waiting=True)
        with connect(port, source="127.0.0.2") as sock:
            sock.sendall(b"GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n")
            assert read_response(sock, bytearray())[0] == 200
        status, _, body = read_response(heavy[0], bytearray())
        assert status == 503
        assert error_of(body) == "too many open connections from your address; try again later"
        assert closed_by_peer(heavy[0])
        held(server, 7, waiting=True)
        heavy.append(connect(port))
        heavy[-1].sendall(b"GET /v2/health/ready HTTP/1.1\r\n")
        held(server, 8, waiting=True)
        with connect(port) as sock:  # the heavy client itself: no room is made for it
            status, _, body = read_response(sock, bytearray())
        assert status == 503
        assert error_of(body) == "too many open connections; try again later"
    finally:
        for sock in heavy:
            sock.close()


def test_connections_with_a_request_in_flight_are_never_displaced(
    serve: object, repo: Path
) -> None:
    server = serve(repo, http=True, http_max_connections=4)  # type: ignore[operator]
    port = server.http_port
    heavy = [connect(port) for _ in range(4)]
    try:
        for sock in heavy:
            sock.sendall(post("/v2/models/identity/infer", bytes(100))[:-50])  # bodies half-sent
        held(server, 4, waiting=False)
        with connect(port, source="127.0.0.2") as sock:
            status, _, body = read_response(sock, bytearray())
        assert status == 503
        assert error_of(body) == "too many open connections; try again later"
    finally:
        for sock in heavy:
            sock.close()
