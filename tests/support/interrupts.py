"""Children that a test presses Ctrl-C on start as a terminal starts them.

A suite started in the background (``cmd &`` in a script, as some CI runners
do) has SIGINT ignored, and every process it starts inherits that: Python
then installs no KeyboardInterrupt handler, and a test's Ctrl-C would test
nothing.  Pass :func:`as_at_a_terminal` as ``preexec_fn``.
"""

from __future__ import annotations

import signal


def as_at_a_terminal() -> None:
    """In the child, before it runs: SIGINT's default action, as under a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
