"""What the tools print, and how it reaches a pipe as soon as a terminal.

Python buffers stdout in blocks when it is not a terminal, so a tool piped
into ``tee`` or a CI log showed nothing for its first minute of measuring.
:func:`line_buffered` (called by ``naiad``'s command for every tool) makes stdout flush at each line, which
costs nothing at a tool's output rate; progress goes to stderr (never
buffered) so that stdout stays the report a script can read.
"""

from __future__ import annotations

import sys


def line_buffered() -> None:
    """Flush stdout at every newline, whatever it is connected to."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:  # a replaced stdout (pytest's capture) may not have it
        reconfigure(line_buffering=True)


def progress(tool: str, text: str) -> None:
    """One progress line on stderr: the start or end of a long step."""
    print(f"{tool}: {text}", file=sys.stderr, flush=True)


def duration(us: float) -> str:
    """A latency for people: ``12.3 ms`` from 1 ms up, ``850 µs`` below."""
    if us >= 1000:
        return f"{us / 1000:.1f} ms" if us < 100_000 else f"{us / 1000:.0f} ms"
    return f"{us:.1f} µs" if us < 100 else f"{us:.0f} µs"
