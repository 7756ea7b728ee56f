"""Holding Ctrl-C back while a step that must not stop half-way runs.

Python raises KeyboardInterrupt in the main thread wherever that thread is.
Some steps must not be cut in two: the loop's callbacks a caller runs on the
main thread while it borrows the loop (a request counted in flight and never
queued would keep stopping the server waiting for ever), or ``asyncio.run``
building its loop (a half-built one prints a traceback from ``__del__``).
While such a step runs, SIGINT is counted, and KeyboardInterrupt is raised
once it is over.  Only Python's default handler, on the main thread, is
replaced: one the program installed is its own business.

:func:`hold` and :func:`release` are for the request path, through the C
module ``_signal``: ``signal.signal``'s enum conversions cost ~4 µs a call,
``_signal``'s 0.2 µs.
"""

from __future__ import annotations

import _signal
import contextlib
import signal
import threading
from collections.abc import Iterator

_SIGINT = int(signal.SIGINT)
_MAIN_THREAD = threading.main_thread().ident


class _Presses:
    count = 0

    def __call__(self, signum: int, frame: object) -> None:
        self.count += 1


_PRESSES = _Presses()


def hold() -> bool:
    """Start counting Ctrl-C instead of raising it; False where nothing was replaced
    (not the main thread, a handler of the program's, or already held)."""
    if (
        threading.get_ident() != _MAIN_THREAD
        or _signal.getsignal(_SIGINT) is not signal.default_int_handler
    ):
        return False
    _PRESSES.count = 0
    _signal.signal(_SIGINT, _PRESSES)
    return True


def release() -> None:
    """Put Python's handler back (after :func:`hold` returned True); raise a press held."""
    _signal.signal(_SIGINT, signal.default_int_handler)
    if _PRESSES.count:
        raise KeyboardInterrupt


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Ctrl-C during the block is raised after it, not inside it."""
    holding = hold()
    try:
        yield
    finally:
        if holding:
            release()
