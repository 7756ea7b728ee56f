"""examples/content_types as its README runs it: `naiad serve` on the example's repository
and `client.py` against it, in subprocesses."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).parents[3] / "examples" / "content_types"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_example_client_runs_as_documented(tmp_path: Path) -> None:
    port = _free_port()
    log = (tmp_path / "naiad.log").open("wb")
    naiad = Path(sys.executable).with_name("naiad")
    server = subprocess.Popen(
        [str(naiad), "serve", "--model-repository", str(EXAMPLE / "repository"),
         "--http-address", "127.0.0.1", "--http-port", str(port), "--allow-grpc", "false",
         "--allow-metrics", "false"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/ready") as r:
                    if r.status == 200:
                        break
            except OSError:
                assert server.poll() is None, (tmp_path / "naiad.log").read_text()
                assert time.monotonic() < deadline, "naiad did not become ready"
                time.sleep(0.1)
        out = subprocess.run(
            [sys.executable, str(EXAMPLE / "client.py"), "--url", f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        lines = dict(line.split(": ", 1) for line in out.strip().splitlines())
        assert lines["frame_sum"] == "[10.0, 10.0, 12.0]"
        assert "'brightest': 'blue'" in lines["image_stats (JSON)"]
        assert "'brightest': 'blue'" in lines["image_stats (tritonclient)"]
        # a picture that is not one: a 400 naming the input
        doc = {"inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [1],
                           "data": ["bm90IGFuIGltYWdl"]}]}  # fmt: skip
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v2/models/image_stats/infer", json.dumps(doc).encode()
        )
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req)
        with err.value:
            assert err.value.code == 400
            assert json.loads(err.value.read())["error"].startswith("input 'IMAGE': element 0")
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
