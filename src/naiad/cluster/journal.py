"""The server's state changes so far, for a worker that starts after them.

Every worker of a ``--workers`` server applies the same changes (model loads
and unloads, shared-memory registrations, trace and log settings) in the same
order.  A worker that restarts has lost them, so it replays the journal,
which the supervisor keeps, before it serves.  The journal keeps only what
still matters: each change says what of it to keep (``record``, in
:mod:`naiad.engine.changes`).
"""

from __future__ import annotations

from naiad.engine.changes import Change, JournalEntries


class Journal:
    def __init__(self) -> None:
        # Insertion order is the order to replay in; a key's newer change replaces
        # its older one and moves to the end.
        self._entries: JournalEntries = {}

    def record(self, change: Change) -> None:
        change.record(self._entries)

    def changes(self) -> list[Change]:
        return list(self._entries.values())
