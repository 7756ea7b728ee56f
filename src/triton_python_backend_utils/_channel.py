"""The stub's side of the socket: whoever waits for a message reads it.

There is no reader thread to hand messages over: the thread that needs a
message next (the main thread between batches, a thread blocked in a BLS
call) takes the *reader role*, reads and dispatches frames until what it
waits for has arrived, then passes the role on.  A batch therefore goes
from the socket to ``execute`` on the main thread without a thread switch.
Awaiting coroutines cannot read, so while any wait, a backup thread reads.
"""

from __future__ import annotations

import array
import fcntl
import os
import termios
import threading
from collections.abc import Callable
from typing import Any

from triton_python_backend_utils import _wire
from triton_python_backend_utils._link import Link

Handler = Callable[[Any], None]


class Channel:
    def __init__(self, link: Link) -> None:
        self.link = link
        self.handlers: dict[int, Handler] = {}
        # ``with self._lock`` runs in C, ``with self._cv`` in Python: between
        # batches nobody else waits, so the lock alone guards the state and the
        # condition is only notified while some thread sleeps on it.
        self._lock = threading.RLock()
        self._cv = threading.Condition(self._lock)
        self._sleepers = 0
        self._reader: int | None = None
        self._async_waiting = 0
        self._backup: threading.Thread | None = None
        self._count = array.array("i", [0])

    def pump_until(self, done: Callable[[], bool]) -> None:
        """Return once ``done()``; read and dispatch frames meanwhile if nobody else does."""
        with self._lock:
            while True:
                if done():
                    return
                if self._reader is None:
                    self._reader = threading.get_ident()
                    break
                self._sleep()
        try:
            while not done():
                self._dispatch(wait=True)
        finally:
            self._pass_on()

    def waiting(self) -> bool:
        """Whether a frame waits in the socket (FIONREAD: a system call, but no failed
        read and no exception, a fifth of what :meth:`poll` costs on an empty socket)."""
        fcntl.ioctl(self.link.sock.fileno(), termios.FIONREAD, self._count, True)
        return self._count[0] > 0

    def poll(self) -> None:
        """Dispatch the frames already here, without waiting; nothing when another thread
        reads (it dispatches them as they come)."""
        with self._lock:
            if self._reader is not None:
                return
            self._reader = threading.get_ident()
        try:
            while self._dispatch(wait=False):
                pass
        finally:
            self._pass_on()

    def _dispatch(self, wait: bool) -> bool:
        """Read one frame and hand it to its handler; False when none was there."""
        link = self.link
        try:
            data, fds = _wire.recv_frame(link.sock, wait)
        except BlockingIOError:  # only without ``wait``
            return False
        if not data:
            os._exit(0)  # the server went away: nothing left to serve
        mtype, seq, body = link.decode(data, fds)
        if mtype != _wire.SEGMENT:
            self.handlers[mtype](body)
            link.consumed(seq)
        return True

    def _pass_on(self) -> None:
        """Give up the reader role to whoever sleeps waiting for it."""
        with self._lock:
            self._reader = None
            if self._sleepers:
                self._cv.notify_all()

    def _sleep(self) -> None:
        """``_cv.wait()``, counted; call with the lock held."""
        self._sleepers += 1
        try:
            self._cv.wait()
        finally:
            self._sleepers -= 1

    def notify(self) -> None:
        """Wake waiters after changing what their ``done()`` looks at."""
        with self._lock:
            if self._sleepers:
                self._cv.notify_all()

    # -- coroutines waiting for messages ----------------------------------------

    def async_wait_begin(self) -> None:
        with self._lock:
            self._async_waiting += 1
            if self._backup is None:
                self._backup = threading.Thread(
                    target=self._backup_loop, name="naiad-stub-reader", daemon=True
                )
                self._backup.start()
            self.notify()

    def async_wait_end(self) -> None:
        with self._lock:
            self._async_waiting -= 1

    def _backup_loop(self) -> None:
        while True:
            with self._lock:
                while not self._async_waiting:
                    self._sleep()
            self.pump_until(lambda: not self._async_waiting)
