"""One status line on a terminal, rewritten as the windows of a step complete."""

from __future__ import annotations

import sys


class ProgressLine:
    def __init__(self) -> None:
        self.live = sys.stderr.isatty()
        self.width = 0

    def show(self, text: str) -> None:
        if not self.live:
            return
        sys.stderr.write("\r" + text.ljust(self.width))
        sys.stderr.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.live and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()
            self.width = 0
