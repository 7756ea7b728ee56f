"""Shadow traffic: a share of a model's requests also goes to a candidate, whose answers
are compared with the served ones and never returned.

A model's config asks for it in its parameters::

    parameters { key: "naiad.shadow_version"  value: { string_value: "2" } }
    parameters { key: "naiad.shadow_fraction" value: { string_value: "0.25" } }

and ``naiad.shadow_model`` names another model with the same inputs and
outputs instead of a version of this one (its ``naiad.shadow_version``, or
its latest version without one).  Every fourth request then runs again on
the candidate (the share is kept exactly, not drawn by chance), after its
own answer has been handed to its client: the client waits for nothing and
gets the served version's answer whatever the candidate does.  A shadow
request goes once the model has stayed idle for :data:`SETTLE_S` (no
request of it came meanwhile, none is queued or running: a batch's answers
leave a busy model idle for an instant, before its clients send again),
looking again while it is not, for about a second; one shadow request waits
so at a time, and the requests that fall due meanwhile (or that waited in
vain) are skipped and counted.  The shadow thus runs in the model's idle
time: a busy model spends its time on its clients, whose latency does not
grow with the share (the skipped count grows instead), and a quiet one
skips nothing.  Per shadow
the server records how many requests went to both, how many failed on the
candidate, both sides' latency, how far the candidate's outputs drift from
the served ones (largest absolute and relative difference) and, for outputs
with a class axis, how often both pick the same class.

Not shadowed: requests of a sequence (the candidate would see only some of
its steps), requests whose tensors are in shared memory (the client may
write the region again once answered), decoupled models, and requests that
name the candidate version itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from naiad.config import ModelConfig
from naiad.core.errors import InvalidArgument
from naiad.core.types import InferenceRequest, InferenceResponse, InferInput, RequestedOutput

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable, Collection

    from naiad.engine.registry import ModelRegistry, ModelVersion

MODEL = "naiad.shadow_model"
VERSION = "naiad.shadow_version"
FRACTION = "naiad.shadow_fraction"

#: How long a model must stay idle after an answer before its shadow request goes, and
#: how many such waits a due shadow request gets (about a second) before it is skipped.
SETTLE_S = 0.001
SHADOW_TRIES = 1000

#: ``InferenceRequest.context`` of a shadow's copy: a copy is never shadowed again.
COPY = object()


@dataclass
class ShadowStats:
    """What one shadow has seen so far (the event loop's; read on scrape)."""

    requests: int = 0
    failures: int = 0
    skipped: int = 0  # due while the previous one still ran: not sent
    served_ns: int = 0  # summed over the requests both answered
    shadow_ns: int = 0
    max_abs_diff: float = 0.0
    max_rel_diff: float = 0.0
    rows: int = 0  # rows of class-axis outputs compared
    agreeing: int = 0  # ... of which both picked the same class


class Shadow:
    """One model's shadow: which requests go, and what they showed."""

    def __init__(self, model: str, version: int | None, fraction: float) -> None:
        self.model = model
        self.version = version
        self.fraction = fraction
        self.stats = ShadowStats()
        self.running = False  # one shadow request at a time (see wants)
        self._credit = 0.0

    @property
    def label(self) -> str:
        """``model`` or ``model:version``, as metrics and the dashboard name it."""
        return self.model if self.version is None else f"{self.model}:{self.version}"

    def wants(self, request: InferenceRequest, served_version: int, busy: bool) -> bool:
        """Whether ``request`` (answered by ``served_version``) also goes to the shadow;
        ``busy``: other requests of the model are queued or running."""
        if (
            request.context is COPY
            or request.correlation_id
            or (request.model_name == self.model and served_version == self.version)
            or any(i.shm is not None for i in request.inputs)
            or any(o.shm is not None for o in request.outputs)
        ):
            return False
        self._credit += self.fraction
        if self._credit < 1.0:
            return False
        self._credit -= 1.0
        if self.running or busy:  # the candidate or the model is busy: this one is skipped
            self.stats.skipped += 1
            return False
        return True

    def when_idle(
        self, loop: asyncio.AbstractEventLoop, mv: ModelVersion, go: Callable[[], None]
    ) -> None:
        """Call ``go`` once ``mv`` has stayed idle for :data:`SETTLE_S` (no request of it
        came, none is queued or running), looking again while it is not, up to
        :data:`SHADOW_TRIES` times; then the request is skipped.  The shadow is taken
        meanwhile: requests that fall due are skipped (see :meth:`wants`)."""
        self.running = True
        loop.call_later(SETTLE_S, self._look, loop, mv, go, _answered(mv), 1)

    def _look(
        self,
        loop: asyncio.AbstractEventLoop,
        mv: ModelVersion,
        go: Callable[[], None],
        answered: int,
        tries: int,
    ) -> None:
        scheduler = mv.scheduler
        busy = mv.stats.pending or (scheduler is not None and scheduler.in_flight)
        if not busy and _answered(mv) == answered:
            go()
        elif tries >= SHADOW_TRIES:
            self.running = False
            self.stats.skipped += 1  # the clients kept the model busy: their time
        else:
            loop.call_later(SETTLE_S, self._look, loop, mv, go, _answered(mv), tries + 1)

    def copy(self, request: InferenceRequest) -> InferenceRequest:
        """The request as the shadow gets it: same tensors (read only), same outputs."""
        copy = InferenceRequest(
            self.model,
            [InferInput(i.name, i.datatype, i.shape, i.data) for i in request.inputs],
            model_version=self.version,
            id=request.id,
            outputs=[RequestedOutput(o.name, o.classification) for o in request.outputs],
            parameters=dict(request.parameters),
            priority=request.priority,
            timeout_us=request.timeout_us,
        )
        copy.context = COPY
        return copy

    def record(
        self,
        served: InferenceResponse,
        served_ns: int,
        shadow: InferenceResponse | None,
        shadow_ns: int,
    ) -> None:
        stats = self.stats
        stats.requests += 1
        if shadow is None or shadow.error is not None:
            stats.failures += 1
            return
        stats.served_ns += served_ns
        stats.shadow_ns += shadow_ns
        theirs = {t.name: t.data for t in shadow.outputs}
        for tensor in served.outputs:
            mine, other = tensor.data, theirs.get(tensor.name)
            if mine is None or other is None:
                continue
            _compare(stats, np.asarray(mine), np.asarray(other))


def _compare(stats: ShadowStats, mine: np.ndarray, other: np.ndarray) -> None:
    if mine.shape != other.shape:
        stats.max_abs_diff = stats.max_rel_diff = float("inf")
        return
    if mine.dtype.kind in "fiub" and other.dtype.kind in "fiub" and mine.size:
        a, b = mine.astype(np.float64), other.astype(np.float64)
        diff = np.abs(a - b)
        stats.max_abs_diff = max(stats.max_abs_diff, float(diff.max()))
        scale = np.maximum(np.abs(a), np.finfo(np.float64).tiny)
        stats.max_rel_diff = max(stats.max_rel_diff, float((diff / scale).max()))
        if mine.ndim >= 1 and mine.shape[-1] > 1 and mine.dtype.kind == "f":
            rows = mine.reshape(-1, mine.shape[-1])
            theirs = other.reshape(-1, other.shape[-1])
            stats.rows += len(rows)
            stats.agreeing += int((rows.argmax(axis=1) == theirs.argmax(axis=1)).sum())
    elif mine.size:  # strings (classification results among them): equal or not
        stats.rows += mine.size
        stats.agreeing += int((mine == other).sum())


def _answered(mv: ModelVersion) -> int:
    """Requests ``mv`` has answered so far: a change says one came and went."""
    return mv.stats.success.count + mv.stats.fail.count


def loaded_shadows(registry: ModelRegistry) -> list[tuple[str, Shadow]]:
    """(model, shadow) for every model whose latest ready version has one, by name."""
    out = []
    for name in sorted(registry.models):
        ready = registry.models[name].ready_versions()
        if ready and ready[-1].shadow is not None:
            out.append((name, ready[-1].shadow))
    return out


def shadow_of(config: ModelConfig, name: str, versions: Collection[int]) -> Shadow | None:
    """The shadow ``config`` asks for (model ``name``, whose policy loads ``versions``)."""
    model = _parameter(config, MODEL)
    version_text = _parameter(config, VERSION)
    fraction_text = _parameter(config, FRACTION)
    if not (model or version_text):
        if fraction_text:
            raise InvalidArgument(f"model '{name}': {FRACTION} needs {VERSION} or {MODEL}")
        return None
    if version_text and not version_text.isdigit():
        raise InvalidArgument(f"model '{name}': {VERSION} must be a version number, not "
                              f"'{version_text}'")  # fmt: skip
    version = int(version_text) if version_text else None
    try:
        fraction = float(fraction_text) if fraction_text else 1.0
    except ValueError:
        fraction = -1.0
    if not 0.0 < fraction <= 1.0:
        raise InvalidArgument(
            f"model '{name}': {FRACTION} must be a number above 0 and at most 1, "
            f"not '{fraction_text}'"
        )
    if not model or model == name:
        if version is None or version not in versions:
            raise InvalidArgument(
                f"model '{name}': {VERSION} must name a version its version policy loads "
                f"({sorted(versions)}), not '{version_text}'"
            )
        model = name
    return Shadow(model, version, fraction)


def _parameter(config: ModelConfig, key: str) -> str:
    value = config.parameters.get(key)
    return value.string_value.strip() if value is not None else ""
