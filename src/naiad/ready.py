"""How a process that starts ``naiad serve`` learns that it serves, and on which ports.

The parent hands the child the write end of a pipe (its descriptor number in
``NAIAD_READY_FD``).  Once its frontends listen, the child writes one line on
it, a JSON object of the ports it bound (``{"http": 8000, "grpc": 8001,
"metrics": 8002}``, the endpoints it serves), and closes it.  A child that
fails to start exits, which closes the pipe with nothing written.  So a parent
waits on one descriptor: it polls no port, sends no health request, matches no
log line, learns at once that a start failed, and learns the port that
``--http-port 0`` bound.

Every parent of a ``naiad serve`` uses this: the ``--workers`` supervisor (it
writes its own line, with the public ports, once every worker wrote theirs),
the runner's network modes, ``naiad analyze``, the tests and the benchmarks.
The child takes the descriptor out of its environment at its edge
(:mod:`naiad.foreground`, the supervisor), so nothing it starts inherits it.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: The child writes its line to the inherited descriptor of this number.
READY_FD = "NAIAD_READY_FD"

#: The ports a server bound, by endpoint: "http", "grpc", "metrics".
Ports = dict[str, int]

_TAIL_LINES = 40


# -- the child's side ------------------------------------------------------------------


class Announcement:
    """The child's end of the pipe, taken from the environment once, at start-up."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    @classmethod
    def from_environment(cls) -> Announcement:
        """The pipe the parent handed over (none when nobody asked), out of the
        environment and not inheritable, so model processes never hold it open."""
        value = os.environ.pop(READY_FD, None)
        if value is None or not value.isdigit():
            return cls(None)
        fd = int(value)
        try:
            os.set_inheritable(fd, False)
        except OSError:  # not open here: nobody handed us a pipe after all
            return cls(None)
        return cls(fd)

    def serving(self, ports: Mapping[str, int]) -> None:
        """Tell the parent the server serves on ``ports`` (once; then the pipe closes)."""
        if self.fd is not None:
            line = json.dumps(dict(ports), sort_keys=True) + "\n"
            with contextlib.suppress(OSError):  # a parent gone has nothing to hear
                os.write(self.fd, line.encode())
        self.close()

    def close(self) -> None:
        """Close the pipe unwritten: the parent learns that this server will not serve."""
        fd, self.fd = self.fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


# -- the parent's side -----------------------------------------------------------------


class ReadyPipe:
    """The parent's end: made before the child starts, read once it wrote or exited.

    Start the child with :attr:`env` in its environment and :attr:`pass_fds`,
    then call :meth:`started`.  An event loop may wait on :meth:`fileno`.
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()

    @property
    def env(self) -> dict[str, str]:
        return {READY_FD: str(self._write)}

    @property
    def pass_fds(self) -> tuple[int]:
        return (self._write,)

    def started(self) -> None:
        """The child holds the write end now: ours must go, or EOF never comes."""
        self._close_write()

    def fileno(self) -> int:
        return self._read

    def read(self) -> Ports | None:
        """The ports the child wrote, or None when it closed the pipe unwritten (it
        exited, or failed to start); call once the pipe is readable.  Closes it."""
        try:
            data = os.read(self._read, 4096)  # one short write: atomic on a pipe
        finally:
            self.close()
        if not data:
            return None
        ports = json.loads(data)
        return {str(name): int(port) for name, port in ports.items()}

    def close(self) -> None:
        self._close_write()
        fd, self._read = self._read, -1
        if fd >= 0:
            os.close(fd)

    def _close_write(self) -> None:
        # Once only: the number may belong to another file after the first close.
        fd, self._write = self._write, -1
        if fd >= 0:
            os.close(fd)


class NotServing(Exception):
    """A ``naiad serve`` child exited before it served (``code``), or did not serve
    within ``timeout`` seconds (``code`` None); ``output`` is its last lines."""

    def __init__(self, pid: int, code: int | None, timeout: float, output: str) -> None:
        self.pid, self.code, self.timeout, self.output = pid, code, timeout, output
        if code is None:
            what = f"did not start serving within {timeout:g} s"
        else:
            what = f"exited with code {code} before it served"
        super().__init__(f"naiad serve (pid {pid}) {what}; its last output:\n{output}")


def serve_command(args: Sequence[str]) -> list[str]:
    """``naiad serve args`` with this interpreter (and so this ``naiad``)."""
    return [sys.executable, "-m", "naiad", "serve", *args]


class ServeProcess:
    """A ``naiad serve`` child (``command`` runs one) whose readiness comes down its pipe.

    Its stdout and stderr, together, are read on a thread: each line goes to
    ``on_line`` (a logger, a list, a log file) and the last ones are kept for
    error messages.  ``popen`` are further :class:`subprocess.Popen` arguments
    (``stdin``, ``start_new_session``).
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        on_line: Callable[[str], None] | None = None,
        name: str = "naiad-serve",
        **popen: Any,
    ) -> None:
        self._pipe = ReadyPipe()
        self._on_line = on_line
        self._tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._group = bool(popen.get("start_new_session"))
        self.ports: Ports | None = None
        environment = {**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"}
        try:
            self.process = subprocess.Popen(
                list(command),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env={**environment, **self._pipe.env},
                pass_fds=self._pipe.pass_fds,
                **popen,
            )
        except BaseException:
            self._pipe.close()
            raise
        self._pipe.started()
        self._reader = threading.Thread(target=self._read, name=f"{name}-output", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.poll()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.decode(errors="replace").rstrip()
            if not line:
                continue
            self._tail.append(line)
            if self._on_line is not None:
                self._on_line(line)

    def output(self) -> str:
        """The last lines the child printed (all of them, once it has exited)."""
        if self.returncode is not None:
            self._reader.join(timeout=2)  # what it printed before it exited
        return "\n".join(self._tail) or "(nothing)"

    def wait_ready(self, timeout: float) -> Ports:
        """The ports the child serves on, once it says it serves; raises
        :class:`NotServing` as soon as it exits first, or after ``timeout`` seconds
        (then the child is stopped)."""
        if self.ports is not None:
            return self.ports
        if self._pipe.fileno() < 0:  # asked before, and it did not serve
            raise NotServing(self.pid, self.returncode, timeout, self.output())
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            # EOF comes when the child exits; the second look at the process is for a
            # child that handed the descriptor on to something that outlives it.
            readable, _, _ = select.select([self._pipe], [], [], max(0.0, min(left, 1.0)))
            if readable:
                ports = self._pipe.read()
                if ports is not None:
                    self.ports = ports
                    return ports
                try:
                    code = self.process.wait(10)  # it closed the pipe on its way out
                except subprocess.TimeoutExpired:  # it closed it and lives on: not serving
                    code = self.stop(0)
                raise NotServing(self.pid, code, timeout, self.output())
            if self.returncode is not None:
                self._pipe.close()
                raise NotServing(self.pid, self.returncode, timeout, self.output())
            if left <= 0:
                self._pipe.close()
                self.stop(0)
                raise NotServing(self.pid, None, timeout, self.output())

    def stop(self, timeout: float) -> int:
        """SIGTERM (a server drains on it), SIGKILL after ``timeout`` seconds, and of its
        process group too when it has its own (its model processes, should it not have
        stopped them); its exit code."""
        process = self.process
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        if process.poll() is None:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout)
        if self._group and hasattr(os, "killpg"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
        process.kill()
        code = process.wait()
        self._pipe.close()
        self._reader.join(timeout=5)
        if not self._reader.is_alive() and process.stdout is not None:
            process.stdout.close()
        return code
