"""The backend interface: load a model version into instances, execute batches.

A backend knows nothing of queues, protocols or other models.  The scheduler
hands an instance a list of requests (one batch) and gets back one response
per request.  Framework backends run ``execute`` on a worker thread and
release the GIL inside the framework; a backend whose instances live
elsewhere (the Python backend's processes) may instead implement
``execute_async`` and set ``is_async``.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol

from naiad.config import model_config_pb2 as pb

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.config.model_signature import ModelSignature
    from naiad.core.types import InferenceRequest, InferenceResponse
    from naiad.metrics import MetricsRegistry


class ServerCalls(Protocol):
    """What a model may ask of the server it is loaded in.

    BLS requests from a Python model and the steps of an ensemble go through
    these calls exactly as a frontend's requests do, so the callee's
    scheduler, batcher and statistics apply.  The engine's data plane is the
    implementation; this interface lets backends and schedulers, which sit
    below the engine, call it without importing it.
    """

    #: The loop the server's schedulers run on (None before it starts).
    event_loop: asyncio.AbstractEventLoop | None
    #: Where a model's custom metrics (``pb_utils.MetricFamily``) live.
    metrics: MetricsRegistry

    def infer_stream(
        self, request: InferenceRequest
    ) -> AsyncGenerator[InferenceResponse, None]: ...

    def is_decoupled(self, name: str, version: str = "") -> bool: ...

    async def resident(self, name: str) -> None:
        """Make a model that residency will load known (its config), so questions such as
        :meth:`is_decoupled` have an answer before it loads."""

    def model_ready(self, name: str, version: str = "") -> bool: ...

    async def load_model(
        self, name: str, config_json: str | None = None, files: dict[str, bytes] | None = None
    ) -> None: ...

    async def unload_model(self, name: str, unload_dependents: bool = False) -> None: ...


@dataclass(frozen=True)
class InstanceSpec:
    """One execution instance of an instance group (``<group>_<index>``)."""

    name: str
    group: str
    kind: str  # "CPU", "GPU" or "MODEL", as Python models see it
    device_id: int
    passive: bool = False
    index: int = 0


_KIND_NAMES = {"KIND_CPU": "CPU", "KIND_GPU": "GPU", "KIND_MODEL": "MODEL", "KIND_AUTO": "CPU"}


def instance_specs(config: ModelConfig) -> list[InstanceSpec]:
    """One spec per instance: ``count`` per listed GPU for GPU groups, else ``count``."""
    specs: list[InstanceSpec] = []
    for group in config.instance_group:
        kind = pb.ModelInstanceGroup.Kind.Name(group.kind)
        devices = list(group.gpus) if kind == "KIND_GPU" else [0]
        index = 0
        for device in devices:
            for _ in range(max(group.count, 1)):
                specs.append(
                    InstanceSpec(
                        name=f"{group.name}_{index}",
                        group=group.name,
                        kind=_KIND_NAMES[kind],
                        device_id=device,
                        passive=group.passive,
                        index=index,
                    )
                )
                index += 1
    return specs


@dataclass
class LoadContext:
    """Everything a backend may look at when loading one model version."""

    name: str
    version: int
    model_dir: Path
    config: ModelConfig
    #: The server, for backends whose models call back into it (BLS, model control).
    services: ServerCalls | None = None
    options: dict[str, str] = field(default_factory=dict)

    @property
    def version_dir(self) -> Path:
        return self.model_dir / str(self.version)

    @property
    def model_file(self) -> Path:
        return self.version_dir / self.config.default_model_filename


class RunOnThread(BaseException):  # noqa: N818 (a signal to the scheduler, not an error)
    """Raised by an inline execution that has to wait for the event loop itself
    (a Python model's BLS call): the scheduler runs the batch again on the
    instance's thread.  A BaseException, so a model's ``except Exception``
    cannot swallow it."""


class ModelInstance(abc.ABC):
    """One loaded copy of a model that executes one batch at a time."""

    is_async: ClassVar[bool] = False

    #: Whether ``execute`` may run on the event loop when it is fast enough
    #: (it must not block on anything but its own computation, or it raises
    #: :class:`RunOnThread`).  An instance may decide it once loaded.
    inline_ok: bool = False

    #: Whether ``execute`` may wait without using the CPU (I/O, sleeps, as
    #: Python models may): its time on its thread then counts in wall time,
    #: so such waits never look fast enough for the event loop.
    may_wait: bool = False

    #: How long its batches may take (moving average, ns) and still run on the
    #: event loop.  Short by default: a backend that leaves the GIL while it
    #: computes overlaps the loop from its thread, so only a batch shorter than
    #: the hand-off to that thread is better run inline.
    inline_max_ns: int = 200_000

    #: The same, for a batch that nothing else in the server could run beside
    #: (the scheduler's ``_alone``): then the thread overlaps nothing, and its two
    #: hand-offs cost more than most models' batch-1 call.  Still bounded, as a
    #: request of another model that arrives meanwhile waits for the loop; 0 for
    #: a backend whose waits have no bound (a model.py may sleep or do I/O).
    alone_max_ns: int = 2_000_000

    #: How many batches the instance accepts at once, at most.  Above 1 for a
    #: backend that queues them itself and still runs them one after another (a
    #: Python stub process): the next batch is already there when one ends, which
    #: saves a process wake-up per batch.  The default scheduler uses it, and
    #: asks ``takes_another`` before it hands a busy instance one more.
    pipeline_depth: ClassVar[int] = 1

    #: (compute_input, compute_infer, compute_output) in ns for the last batch;
    #: a backend that measures its phases sets it inside ``execute``.
    compute_ns: tuple[int, int, int] | None = None

    @property
    def pid(self) -> int | None:
        """The process the instance computes in, when it is not the server's own."""
        return None

    def takes_another(self) -> bool:
        """Whether a busy instance with ``pipeline_depth`` above 1 takes one more batch now."""
        return True

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse] | None:
        """Run one batch; return one response (possibly an error one) per request.

        A decoupled model returns None: its responses go through each request's sender.
        """
        raise NotImplementedError

    async def execute_async(
        self, requests: list[InferenceRequest]
    ) -> list[InferenceResponse] | None:
        """``execute`` for ``is_async`` instances; an override may return a plain future instead."""
        raise NotImplementedError

    def is_ready(self) -> bool:
        return True

    def close(self) -> None:
        """Release the instance's resources (called once, off the event loop)."""


class Backend(abc.ABC):
    """A backend, registered under its Triton backend name."""

    name: ClassVar[str]

    def auto_complete_config(self, config: ModelConfig, model_dir: Path, version: int) -> None:
        """Fill what the model file tells (inputs, outputs, max_batch_size...).

        Called before normalisation unless auto-complete is disabled; mutate
        ``config`` in place.  The default completes nothing.
        """

    def auto_complete_with_options(
        self, config: ModelConfig, model_dir: Path, version: int, options: Mapping[str, str]
    ) -> None:
        """``auto_complete_config`` given the backend's ``--backend-config`` settings.

        What the loader calls.  A backend whose model file may only be opened
        with the operator's consent (a pickle) reads that consent here; the
        default ignores the settings.
        """
        self.auto_complete_config(config, model_dir, version)

    def runs_in_server(self, ctx: LoadContext) -> bool:
        """Whether the model's instances hold their memory in the server's process (the
        loader measures those creations one at a time, see engine/memory.py)."""
        return True

    def preferred_instance_kind(self) -> str:
        """``KIND_CPU`` or ``KIND_GPU`` for models without an instance group."""
        return "KIND_GPU"

    def default_cpu_instance_count(self) -> int:
        """Instances of a CPU group whose count was not given."""
        return 1

    def validate(self, config: ModelConfig, model_dir: Path) -> None:
        """Raise a NaiadError for a config this backend cannot serve."""

    def model_file(self, config: ModelConfig, model_dir: Path, version: int) -> Path | None:
        """The file (or folder) a version folder must hold; None when the backend needs none.

        ``naiad check`` reports a version without it before anything is loaded.
        """
        name = config.default_model_filename
        return model_dir / str(version) / name if name else None

    def model_signature(
        self, config: ModelConfig, model_dir: Path, version: int
    ) -> ModelSignature | None:
        """The inputs and outputs a version's model file declares; None if it declares none.

        ``naiad check`` compares them with the config (``validate_signature``).
        A backend that returns them applies the same rules when it loads the
        model (``check_signature``), with whatever it has opened anyway.
        """
        return None

    def check_version(
        self, config: ModelConfig, model_dir: Path, version: int, options: Mapping[str, str]
    ) -> None:
        """Raise a NaiadError for a version's model file this backend would refuse to load.

        For what a :class:`ModelSignature` cannot say: a TorchScript
        ``forward()`` the config's names do not bind to, a tree model with
        another number of features.  ``naiad check`` calls it for each version
        the server would load; the backend's load path runs the same function
        on the model it opened anyway, so both refuse a file with the same
        message.  Reading the file is fine here; executing the model is not.
        ``options`` are the backend's ``--backend-config`` settings, as a load gets them.
        """

    @abc.abstractmethod
    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        """Load one instance (called off the event loop; may be slow)."""

    def unload(self, ctx: LoadContext) -> None:
        """Called once after every instance of the version was closed."""


BackendFactory = Callable[[], Backend]
