"""A ``naiad serve --workers 2`` process for the tests, and what its log says."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import time
from pathlib import Path

import psutil

from naiad.ready import NotServing, ServeProcess, serve_command

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
        self.log: list[str] = []
        self._child = ServeProcess(
            serve_command([
                "--model-repository", str(repo), "--workers", "2", f"--http-port={self.http}",
                f"--grpc-port={self.grpc}", f"--metrics-port={self.metrics}",
                "--http-address=127.0.0.1", "--grpc-address=127.0.0.1", *extra,
            ]),
            on_line=self.log.append,
            start_new_session=True,  # its workers share its process group (see stop)
        )  # fmt: skip
        self.proc = self._child.process

    def wait_ready(self) -> dict[str, int]:
        """The ports it serves on, once every worker serves (its ready pipe, naiad.ready)."""
        try:
            return self._child.wait_ready(DEADLINE_S)
        except NotServing as exc:
            raise AssertionError(str(exc)) from None

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

    def wait_replaced(self, before: list[psutil.Process]) -> psutil.Process:
        """The worker started in place of one of ``before`` (the workers as they were),
        once it serves: it listens on the HTTP port, which a worker opens once its
        models are loaded, just before it writes its ready line to the supervisor."""
        known = {w.pid for w in before}
        deadline = time.monotonic() + DEADLINE_S
        while True:
            assert self.proc.poll() is None, "the supervisor exited:\n" + "\n".join(self.log)
            workers = self.workers()
            new = [w for w in workers if w.pid not in known]
            if len(workers) == 2 and new:
                with contextlib.suppress(psutil.Error):
                    if any(c.laddr.port == self.http and c.status == psutil.CONN_LISTEN
                           for c in new[0].net_connections("tcp")):  # fmt: skip
                        return new[0]
            assert time.monotonic() < deadline, "no worker replaced it:\n" + "\n".join(self.log)
            time.sleep(0.1)

    def stop(self) -> int:
        """SIGTERM, then its exit code; whatever a failed test left running in its
        process group goes too, or the log pipe never closes."""
        return self._child.stop(DEADLINE_S)


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
