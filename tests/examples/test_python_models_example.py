"""examples/python_models as its README runs it: ``naiad serve app.py``, then client.py, the
streaming curl, and ``naiad export``'s folder served again."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from support.served import naiad_serve, started

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python_models"
PORTS = ["--http-address", "127.0.0.1", "--grpc-address", "127.0.0.1", "--http-port", "0",
         "--grpc-port", "0", "--metrics-port", "0"]  # fmt: skip
CLIENT_OUTPUT = "[b'hello naiad']\n[[0.6 0.8]]\n[[4.5]]\n"


def _client(port: int) -> str:
    done = subprocess.run([sys.executable, str(EXAMPLE / "client.py"), f"127.0.0.1:{port}"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_serve_the_app_and_its_export(tmp_path: Path) -> None:
    with started([str(EXAMPLE / "app.py"), *PORTS]) as child:
        assert child.ports is not None
        assert _client(child.ports["http"]) == CLIENT_OUTPUT
        url = f"http://127.0.0.1:{child.ports['http']}/v2/models/countdown/generate_stream"
        with urllib.request.urlopen(url, data=b'{"start": 2}', timeout=30) as answer:
            events = [json.loads(e[6:]) for e in answer.read().decode().split("\n\n") if e]
        assert [e["output"] for e in events] == [2, 1, 0]
    repo = tmp_path / "exported"
    done = subprocess.run([sys.executable, "-m", "naiad", "export", str(EXAMPLE / "app.py"),
                           "-o", str(repo)], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with naiad_serve(repo) as served:
        assert _client(served.http_port) == CLIENT_OUTPUT
