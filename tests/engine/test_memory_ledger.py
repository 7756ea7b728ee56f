"""How the server's memory growth is shared out among model creations (engine/memory.py):
a creation alone gets exactly what the process gained, creations side by side share
what it gained while they overlapped, and memory given back counts as no growth."""

from __future__ import annotations

import pytest

from naiad.engine.memory import Ledger

pytestmark = pytest.mark.unit


class _Process:
    """A resident size the test sets (None: it cannot be read, as off Linux)."""

    def __init__(self) -> None:
        self.rss: int | None = 1000

    def read(self) -> int | None:
        return self.rss


def test_a_creation_alone_gets_what_the_process_gained() -> None:
    process = _Process()
    ledger = Ledger(process.read)
    token = ledger.begin()
    process.rss = 1800
    assert ledger.end(token) == 800
    process.rss = 5000  # after every creation ended: nobody's
    token = ledger.begin()
    process.rss = 5100
    assert ledger.end(token) == 100


def test_overlapping_creations_split_the_overlap_evenly() -> None:
    process = _Process()
    ledger = Ledger(process.read)
    a = ledger.begin()
    process.rss = 1600  # a alone: 600
    b = ledger.begin()
    process.rss = 2000  # both: 200 each
    assert ledger.end(b) == 200
    process.rss = 2300  # a alone again: 300
    assert ledger.end(a) == 600 + 200 + 300


def test_memory_given_back_is_no_growth() -> None:
    process = _Process()
    ledger = Ledger(process.read)
    a = ledger.begin()
    process.rss = 700  # another model unloaded meanwhile
    b = ledger.begin()
    process.rss = 900
    assert ledger.end(b) == 100
    assert ledger.end(a) == 100


def test_nothing_is_measured_where_memory_cannot_be_read() -> None:
    process = _Process()
    process.rss = None
    ledger = Ledger(process.read)
    token = ledger.begin()
    assert token is None
    assert ledger.end(token) is None
