"""A ``naiad serve --workers 2`` process for the tests, and what its log says."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

#: Generous: two servers start on a busy two-core machine.
DEADLINE_S = 120


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """A ``naiad serve --workers 2`` process and what its log says."""

    def __init__(self, repo: Path, *extra: str) -> None:
        self.http, self.grpc, self.metrics = free_port(), free_port(), free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "naiad.cli", "serve", "--model-repository", str(repo),
             "--workers", "2", f"--http-port={self.http}", f"--grpc-port={self.grpc}",
             f"--metrics-port={self.metrics}", "--http-address=127.0.0.1",
             "--grpc-address=127.0.0.1", *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True,  # its workers share its process group (see stop)
        )  # fmt: skip
        self.log: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line.rstrip())

    def wait_for(self, pattern: str, count: int = 1) -> list[re.Match[str]]:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            found = [m for line in list(self.log) if (m := re.search(pattern, line))]
            if len(found) >= count:
                return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no {pattern!r} in the log:\n" + "\n".join(self.log))

    def workers(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(DEADLINE_S)
        # Whatever a failed test left running goes too, or the log pipe never closes.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self._reader.join(10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        return code


def gone(process: psutil.Process) -> bool:
    """Exited: an orphan's zombie waits for whoever reaps orphans here, which may be slow."""
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def infer(port: int, a: list[float]) -> list[float]:
    """One request on a connection of its own, so the kernel may pick either worker."""
    body = json.dumps({"inputs": [
        {"name": "INPUT0", "shape": [1, 4], "datatype": "FP32", "data": a},
        {"name": "INPUT1", "shape": [1, 4], "datatype": "FP32", "data": [1.0] * 4},
    ]})  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", "/v2/models/add_sub/infer", body)
        reply = conn.getresponse()
        assert reply.status == 200, reply.read()
        outputs = {o["name"]: o["data"] for o in json.loads(reply.read())["outputs"]}
        return outputs["OUTPUT0"]
    finally:
        conn.close()
