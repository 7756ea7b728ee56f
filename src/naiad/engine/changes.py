"""The changes to a server's state, each a value that knows how to apply itself.

A model load or unload, a shared-memory registration, a trace or log
settings update: each is one frozen dataclass here, with

- ``apply(state)``: make the change to one process's :class:`State` (the
  data plane); its error is the client's;
- ``record(journal)``: keep what a process that starts later must replay,
  in a :data:`JournalEntries` (an ordered dict, oldest first).  A model's newer load
  or unload replaces the older, an unregistration drops the registrations
  it covers, and settings updates fold into one, as applying them in turn
  would.

Without ``--workers`` the data plane applies a change where it is made;
with them the supervisor has every worker apply it in one order and keeps
the journal (:mod:`naiad.cluster.coordinator`).  The values cross between
the processes of one server as pickles (:mod:`naiad.cluster.link`), so they
hold plain data only.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Union

from naiad.config import ConfigError, config_from_json
from naiad.core.errors import Internal

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.core.shm import SharedMemoryManager
    from naiad.engine.log_settings import LogSettings
    from naiad.engine.model_control import ModelControl
    from naiad.tracing.settings import TraceSettings


class State(Protocol):
    """The parts of one process that the changes change (``DataPlane`` has them)."""

    control: ModelControl
    shm: SharedMemoryManager
    log_settings: LogSettings
    trace_settings: TraceSettings


@dataclass(frozen=True)
class LoadModel:
    """(Re)load ``name``, with a JSON config and ``file:`` contents when given."""

    name: str
    config_json: str | None = None
    files: dict[str, bytes] | None = None

    async def apply(self, state: State) -> None:
        override = None if self.config_json is None else _override(self.name, self.config_json)
        await state.control.load(self.name, override, self.files)

    def record(self, journal: JournalEntries) -> None:
        _replace(journal, ("model", self.name), self)


@dataclass(frozen=True)
class UnloadModel:
    name: str
    unload_dependents: bool = False

    async def apply(self, state: State) -> None:
        await state.control.unload(self.name, self.unload_dependents)

    def record(self, journal: JournalEntries) -> None:
        _replace(journal, ("model", self.name), self)


@dataclass(frozen=True)
class RegisterSystemRegion:
    """A system shared-memory region: ``byte_size`` bytes at ``offset`` of ``key``."""

    name: str
    key: str
    offset: int
    byte_size: int

    async def apply(self, state: State) -> None:
        state.shm.register_system(self.name, self.key, self.offset, self.byte_size)

    def record(self, journal: JournalEntries) -> None:
        _replace(journal, ("shm", "system", self.name), self)


@dataclass(frozen=True)
class RegisterCudaRegion:
    """A CUDA shared-memory region: ``raw_handle`` is the 64 bytes of cudaIpcMemHandle_t."""

    name: str
    raw_handle: bytes
    device_id: int
    byte_size: int

    async def apply(self, state: State) -> None:
        state.shm.register_cuda(self.name, self.raw_handle, self.device_id, self.byte_size)

    def record(self, journal: JournalEntries) -> None:
        _replace(journal, ("shm", "cuda", self.name), self)


@dataclass(frozen=True)
class UnregisterRegions:
    """Region ``name`` of ``kind`` ("system" or "cuda"), or every one of them when empty."""

    kind: str
    name: str = ""

    async def apply(self, state: State) -> None:
        state.shm.unregister(self.kind, self.name)

    def record(self, journal: JournalEntries) -> None:
        # A process that starts later holds no region: forgetting the registration is enough.
        for key in [k for k in journal if k[:2] == ("shm", self.kind)]:
            if not self.name or key[2] == self.name:
                del journal[key]


@dataclass(frozen=True)
class UpdateTraceSettings:
    """The global (``model`` empty) or one model's trace settings; None values clear."""

    model: str
    changes: Mapping[str, Any] = field(default_factory=dict)

    async def apply(self, state: State) -> None:
        state.trace_settings.update(self.changes, self.model)

    def record(self, journal: JournalEntries) -> None:
        key = ("trace", self.model)
        older = journal.pop(key, None)
        before = older.changes if isinstance(older, UpdateTraceSettings) else {}
        journal[key] = UpdateTraceSettings(self.model, {**before, **self.changes})


@dataclass(frozen=True)
class UpdateLogSettings:
    changes: Mapping[str, Any] = field(default_factory=dict)

    async def apply(self, state: State) -> None:
        state.log_settings.update(self.changes)

    def record(self, journal: JournalEntries) -> None:
        older = journal.pop(("log",), None)
        before = older.changes if isinstance(older, UpdateLogSettings) else {}
        journal[("log",)] = UpdateLogSettings({**before, **self.changes})


Change = Union[
    LoadModel,
    UnloadModel,
    RegisterSystemRegion,
    RegisterCudaRegion,
    UnregisterRegions,
    UpdateTraceSettings,
    UpdateLogSettings,
]

#: What a process that starts later replays, oldest first, one entry per key.
JournalEntries = dict[tuple[Hashable, ...], Change]


def _replace(journal: JournalEntries, key: tuple[Hashable, ...], change: Change) -> None:
    """``change`` as the newest entry for ``key``, after every other."""
    journal.pop(key, None)
    journal[key] = change


def _override(name: str, config_json: str) -> ModelConfig:
    """The ``config`` parameter of a load request as a config.

    One that does not parse fails the load as in Triton, which cannot "poll" the
    model with it: INTERNAL, "failed to load '<model>', failed to poll from model
    repository".  naiad adds the reason, which Triton only logs.
    """
    try:
        return config_from_json(config_json)
    except ConfigError as exc:
        raise Internal(
            f"failed to load '{name}', failed to poll from model repository: "
            f"invalid config override: {exc.message}"
        ) from None
