"""The reference Triton (installed by ``scripts/setup-reference.sh``) on free
loopback ports, for the tests that ask it what Triton answers or measure it."""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from support.processes import free_port
from support.reference import TRITONSERVER


@contextlib.contextmanager
def triton_serve(repo: Path) -> Iterator[tuple[int, int]]:
    """Serve ``repo`` until ready; (HTTP port, gRPC port).  Its log is beside ``repo``."""
    http, grpc = free_port(), free_port()
    log = repo.parent / "triton.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [str(TRITONSERVER), "--model-repository", str(repo), "--http-address", "127.0.0.1",
             "--http-port", str(http), "--grpc-address", "127.0.0.1", "--grpc-port", str(grpc),
             "--allow-metrics", "false"],
            stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _ready(http):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield http, grpc
    finally:
        proc.terminate()
        proc.wait(60)


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready", timeout=5) as r:
            return bool(r.status == 200)
    except OSError:
        return False
