"""Progress while a step is measured: the window just finished.

On a terminal it is one status line on stderr, rewritten window after window
and cleared before the step's report.  Anywhere else (a pipe, a CI log)
there is no line to rewrite, so each window gets a line of its own: a
step takes at least three windows, and a user watching a log should not
see nothing for the tens of seconds that takes.
"""

from __future__ import annotations

import sys


class ProgressLine:
    def __init__(self) -> None:
        self.live = sys.stderr.isatty()
        self.width = 0

    def show(self, text: str) -> None:
        if not self.live:
            print(f"  {text}", file=sys.stderr, flush=True)
            return
        sys.stderr.write("\r" + text.ljust(self.width))
        sys.stderr.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.live and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()
            self.width = 0
