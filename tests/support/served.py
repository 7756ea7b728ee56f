"""``naiad serve`` in a subprocess on free loopback ports, as attack and soak tests need it:
its own process, so its memory (RSS) is measured apart from the test's."""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from naiad.ready import NotServing, ServeProcess, serve_command


@dataclass
class Served:
    proc: subprocess.Popen[bytes]
    ports: dict[str, int]
    lines: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def http_port(self) -> int:
        return self.ports["http"]

    @property
    def grpc_port(self) -> int:
        return self.ports["grpc"]

    @property
    def metrics_port(self) -> int:
        return self.ports["metrics"]

    def rss_mb(self) -> float:
        """The server's resident memory now, in MiB (Linux /proc)."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        kib = int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))  # type: ignore[union-attr]
        return kib / 1024

    def peak_mb(self) -> float:
        """The most resident memory the server has had so far, in MiB (VmHWM): catches
        what a request allocated and freed before the test could look."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        kib = int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1))  # type: ignore[union-attr]
        return kib / 1024

    def output(self) -> str:
        return "\n".join(self.lines)


@contextlib.contextmanager
def naiad_serve(repo: Path, *flags: str, timeout: float = 120) -> Iterator[Served]:
    """Serve ``repo`` with ``flags`` (every port 0 unless a flag says otherwise) until
    it says it serves, which also says the ports (its ready pipe, naiad.ready); stop
    it with SIGTERM afterwards."""
    ports = [f"--{name}-port" for name in ("http", "grpc", "metrics")]
    defaults = [arg for flag in ports if flag not in flags for arg in (flag, "0")]
    args = [
        "--model-repository", str(repo), "--http-address", "127.0.0.1",
        "--grpc-address", "127.0.0.1", *defaults, *flags,
    ]  # fmt: skip
    lines: list[str] = []
    with started(args, timeout=timeout, on_line=lines.append) as child:
        assert child.ports is not None
        yield Served(child.process, child.ports, lines)


@contextlib.contextmanager
def started(
    args: Sequence[str],
    log: Path | None = None,
    timeout: float = 120,
    on_line: Callable[[str], None] | None = None,
) -> Iterator[ServeProcess]:
    """``naiad serve args`` once it says it serves (``.ports`` says where); what it
    prints goes to ``on_line`` and to the file ``log``; SIGTERM afterwards."""
    with contextlib.ExitStack() as stack:
        out = None if log is None else stack.enter_context(log.open("w"))

        def line(text: str) -> None:
            if out is not None:
                out.write(text + "\n")
                out.flush()
            if on_line is not None:
                on_line(text)

        child = ServeProcess(serve_command(args), on_line=line)
        stack.callback(child.stop, 60)
        try:
            child.wait_ready(timeout)
        except NotServing as exc:
            raise AssertionError(str(exc)) from None
        yield child


class HealthWatch:
    """Asks /v2/health/ready on a fresh connection every 50 ms while an attack runs."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.answers = 0
        self.failures: list[str] = []
        self.slowest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            start = time.monotonic()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/v2/health/ready")
                status = conn.getresponse().status
                conn.close()
                if status != 200:
                    self.failures.append(f"status {status}")
            except OSError as exc:
                self.failures.append(repr(exc))
            self.answers += 1
            self.slowest = max(self.slowest, time.monotonic() - start)
            self._stop.wait(0.05)

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        # The attack starts once the watch has answered once: a loaded machine may be
        # slow to run a new thread, and a short attack could otherwise end unwatched.
        deadline = time.monotonic() + 30
        while not (self.answers or self.failures) and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        assert self.answers > 0
        assert not self.failures, self.failures[:5]
        # A check takes milliseconds (a few hundred on a loaded machine); one that an
        # attack holds up waits as long as the attack holds the server's loop.
        assert self.slowest < 2.0, f"a health check took {self.slowest:.2f}s"


def closed_by_peer(sock: socket.socket, within: float = 10.0) -> bool:
    """Whether the server closed the connection (reads what it still sends)."""
    sock.settimeout(within)
    try:
        while sock.recv(65536):
            pass
    except (ConnectionResetError, TimeoutError):
        return False
    return True
