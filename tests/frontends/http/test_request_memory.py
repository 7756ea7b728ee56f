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
from support.served import HealthWatch, Served, naiad_serve

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
