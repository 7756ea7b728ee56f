"""A ``naiad serve`` child process for the runner's network modes.

The parent picks free loopback ports, forwards what the child prints to the
``naiad.runner`` logger (keeping the last lines for error messages) and
stops it on close.  The child holds the read end of a pipe from its parent
and stops itself when that pipe closes, so it does not outlive a parent
that was killed without a chance to stop it.

Run as ``python -m naiad.runner.child <naiad serve flags>`` (the child side).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence

from naiad.core.errors import Unavailable

log = logging.getLogger("naiad.runner")

#: Triton's log line prefixes: I1121 02:25:39.123456 ...
_LEVELS = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR}
_PREFIX = re.compile(r"^([IWE])\d{4} ")
_TAIL_LINES = 40


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChildServer:
    """``naiad serve`` with ``args``, started at once."""

    def __init__(self, name: str, args: Sequence[str]) -> None:
        self.name = name
        self._tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "naiad.runner.child", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            # The runner decides when the child stops: not a Ctrl-C meant for the parent.
            start_new_session=True,
        )
        self._reader = threading.Thread(
            target=self._forward, name=f"naiad-runner-{name}-output", daemon=True
        )
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.poll()

    def _forward(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.decode(errors="replace").rstrip()
            if not line:
                continue
            self._tail.append(line)
            match = _PREFIX.match(line)
            level = _LEVELS[match.group(1)] if match else logging.INFO
            log.log(level, "[%s] %s", self.name, line)

    def output(self) -> str:
        """The last lines the child printed."""
        self._reader.join(timeout=1 if self.returncode is not None else 0)
        return "\n".join(self._tail) or "(nothing)"

    def exit_error(self, starting: bool) -> Unavailable:
        when, then = (
            ("while starting", "fix the cause; the runner starts a new one on its next use")
            if starting
            else ("and stopped answering", "close this runner and create a new one")
        )
        return Unavailable(
            f"the naiad server of runner '{self.name}' (pid {self.pid}) exited with code "
            f"{self.returncode} {when}: {then}. Its last output:\n{self.output()}"
        )

    def timeout_error(self, timeout: float) -> Unavailable:
        self.stop(0)
        return Unavailable(
            f"the naiad server of runner '{self.name}' (pid {self.pid}) did not start listening within "
            f"{timeout:g} s, and was stopped (pass a larger startup_timeout= for models that "
            f"load slowly). Its last output:\n{self.output()}"
        )

    def stop(self, timeout: float) -> None:
        """Ask the child to drain and exit, kill it after ``timeout`` seconds, and kill
        whatever of its process group is left (its model stubs, should it not have)."""
        process = self.process
        if process.stdin is not None:
            process.stdin.close()
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        if hasattr(os, "killpg"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)  # its own group: start_new_session
        process.kill()
        process.wait()
        self._reader.join(timeout=5)
        if not self._reader.is_alive() and process.stdout is not None:
            process.stdout.close()


# -- the child side ----------------------------------------------------------------------


def _stop_with_parent() -> None:
    # os.read, not sys.stdin: a thread blocked in a buffered read would hold its
    # lock when the interpreter shuts down, which Python treats as fatal.
    try:
        while os.read(0, 4096):
            pass  # the parent writes nothing; end of file means it closed the pipe or died
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: Sequence[str] | None = None) -> int:
    """``naiad serve`` with ``argv``, as the command runs it, until the parent goes."""
    from naiad import foreground
    from naiad.options.flags import options_from_args, serve_parser

    threading.Thread(target=_stop_with_parent, name="naiad-parent-watch", daemon=True).start()
    args = serve_parser().parse_args(sys.argv[1:] if argv is None else argv)
    return foreground.run(options_from_args(args))


if __name__ == "__main__":
    sys.exit(main())
