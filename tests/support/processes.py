"""Processes and ports, as tests look at them (process tables from Linux /proc)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _state(pid: int) -> str | None:
    """The process's state letter; None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    return _state(pid) not in (None, "Z")


def gone(pid: int, within: float = 20.0) -> bool:
    """Whether process ``pid`` has exited (a zombie counts) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def children(pid: int) -> set[int]:
    """The live child processes of ``pid``."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def stop(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM (a server drains on it) and a wait; SIGKILL when it takes over a minute."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
