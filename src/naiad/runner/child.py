"""A ``naiad serve`` child process for the runner's network modes.

The child binds free loopback ports (port 0) and says which through its ready
pipe (:mod:`naiad.ready`); the parent forwards what the child prints to the
``naiad.runner`` logger (the last lines go into error messages) and stops it
on close.  The child holds the read end of a pipe from its parent and stops
itself when that pipe closes, so it does not outlive a parent that was killed
without a chance to stop it.

Run as ``python -m naiad.runner.child <naiad serve flags>`` (the child side).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence

from naiad.core.errors import Unavailable
from naiad.ready import NotServing, Ports, ServeProcess

log = logging.getLogger("naiad.runner")

#: Triton's log line prefixes: I1121 02:25:39.123456 ...
_LEVELS = {"I": logging.INFO, "W": logging.WARNING, "E": logging.ERROR}
_PREFIX = re.compile(r"^([IWE])\d{4} ")


class ChildServer:
    """``naiad serve`` with ``args``, started at once."""

    def __init__(self, name: str, args: Sequence[str]) -> None:
        self.name = name
        #: The process, and the handshake that says it serves.
        self.serve = ServeProcess(
            [sys.executable, "-m", "naiad.runner.child", *args],
            on_line=self._forward,
            name=f"naiad-runner-{name}",
            stdin=subprocess.PIPE,  # closed by the parent, or with it: the child stops
            # The runner decides when the child stops: not a Ctrl-C meant for the parent.
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.serve.pid

    @property
    def returncode(self) -> int | None:
        return self.serve.returncode

    def _forward(self, line: str) -> None:
        match = _PREFIX.match(line)
        level = _LEVELS[match.group(1)] if match else logging.INFO
        log.log(level, "[%s] %s", self.name, line)

    def wait_ready(self, timeout: float) -> Ports:
        """The ports the child serves on, once it does; a failed start raises at once."""
        try:
            return self.serve.wait_ready(timeout)
        except NotServing as exc:
            if exc.code is None:
                raise self.timeout_error(timeout) from None
            raise self.exit_error(starting=True) from None

    def output(self) -> str:
        """The last lines the child printed."""
        return self.serve.output()

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
            f"the naiad server of runner '{self.name}' (pid {self.pid}) did not start serving "
            f"within {timeout:g} s, and was stopped (pass a larger startup_timeout= for models "
            f"that load slowly). Its last output:\n{self.output()}"
        )

    def stop(self, timeout: float) -> None:
        """Ask the child to drain and exit, kill it after ``timeout`` seconds, and kill
        whatever of its process group is left (its model stubs, should it not have)."""
        self.serve.stop(timeout)


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
