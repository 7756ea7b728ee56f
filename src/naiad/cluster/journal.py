"""The server's state changes so far, for a worker that starts after them.

Every worker of a ``--workers`` server applies the same changes (model loads
and unloads, shared-memory registrations, trace and log settings) in the same
order.  A worker that restarts has lost them, so it replays a peer's journal
before it serves.  The journal keeps only what still matters: the last load
or unload of each model, the regions still registered, and the sum of the
settings changes.
"""

from __future__ import annotations

from typing import Any

#: A change to the server's state: a :class:`~naiad.engine.dataplane.DataPlane`
#: operation and its arguments (see ``DataPlane.apply_here``).
Change = tuple[str, tuple[Any, ...]]


class Journal:
    def __init__(self) -> None:
        # Insertion order is the order to replay in; a key's newer change replaces
        # its older one and moves to the end.
        self._changes: dict[tuple[Any, ...], Change] = {}

    def record(self, change: Change) -> None:
        method, args = change
        if method in ("load_model", "unload_model"):
            self._replace(("model", args[0]), change)
        elif method == "shm_register":
            self._replace(("shm", args[0], args[1]), change)
        elif method == "shm_unregister":
            # A restarted worker holds no region: forgetting the registration is enough.
            kind, name = args
            for key in [k for k in self._changes if k[0] == "shm" and k[1] == kind]:
                if not name or key[2] == name:
                    del self._changes[key]
        elif method in ("trace_setting", "log_setting"):
            # Partial updates: the later value of a setting wins, as when applied in turn.
            key = (method, *args[:-1])
            old = self._changes.pop(key, (method, (*args[:-1], {})))[1][-1]
            self._changes[key] = (method, (*args[:-1], {**old, **args[-1]}))
        else:
            raise ValueError(f"not a state change: {method}")

    def changes(self) -> list[Change]:
        return list(self._changes.values())

    def _replace(self, key: tuple[Any, ...], change: Change) -> None:
        self._changes.pop(key, None)
        self._changes[key] = change
