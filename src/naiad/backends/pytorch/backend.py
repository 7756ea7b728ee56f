"""Triton's ``pytorch`` backend (platform ``pytorch_libtorch``): TorchScript ``model.pt``.

A TorchScript file declares neither tensor names nor shapes, so nothing
can be auto-completed: the config lists every input and output, and
:mod:`.binding` ties their names to ``forward()``.  Everything torch keeps
per process (thread pools, JIT modes) is set the way Triton sets it.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance
from naiad.backends.pytorch.instance import PyTorchInstance, bind_module
from naiad.backends.pytorch.parameters import TorchOptions, parse_options
from naiad.backends.pytorch.threads import apply_thread_counts
from naiad.config.model_config_pb2 import DataType
from naiad.core.errors import InvalidArgument, NaiadError, Unavailable, Unsupported

if TYPE_CHECKING:
    from naiad.config import ModelConfig

_NO_SHAPES = (
    "model '{name}': a TorchScript model declares no input/output shapes; add 'input' and "
    "'output' entries to config.pbtxt (inputs named INPUT__0, INPUT__1... by position or "
    "after forward()'s arguments, outputs OUTPUT__0, OUTPUT__1... by position in its result)"
)


def validate_config(config: ModelConfig) -> None:
    """What this backend refuses before it opens any file (``naiad check`` too)."""
    if config.platform == "torch_aoti" or config.default_model_filename.endswith(".pt2"):
        raise Unsupported(
            f"model '{config.name}': AOT Inductor archives (platform 'torch_aoti', model.pt2) "
            "are not supported by naiad's pytorch backend; serve a TorchScript model.pt "
            "(torch.jit.script or torch.jit.trace, then .save())"
        )
    if config.runtime == "model.py":
        raise Unsupported(
            f"model '{config.name}': the pytorch backend's Python runtime (runtime: "
            '"model.py") is not supported; serve a TorchScript model.pt'
        )
    if not config.input or not config.output:
        raise InvalidArgument(_NO_SHAPES.format(name=config.name))
    batching = 1 if config.max_batch_size > 0 else 0
    for kind, tensors in (("input", config.input), ("output", config.output)):
        for tensor in tensors:
            if tensor.data_type != DataType.TYPE_STRING:
                continue
            dims = tensor.reshape.shape if tensor.HasField("reshape") else tensor.dims
            if len(dims) + batching > 1:
                raise InvalidArgument(
                    f"model '{config.name}': {kind} '{tensor.name}' is a TYPE_STRING with "
                    f"{len(dims) + batching} dimensions (batch included); a List[str] "
                    "has one (with batching, give dims [1] and reshape { shape: [] })"
                )
    parse_options(config)


class PyTorchBackend(Backend):
    name = "pytorch"

    def __init__(self) -> None:
        #: Loaded modules of ENABLE_WEIGHT_SHARING models: (file, device) -> module.
        self._shared: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()

    def preferred_instance_kind(self) -> str:
        return "KIND_GPU" if torch.cuda.is_available() else "KIND_CPU"

    def validate(self, config: ModelConfig, model_dir: Path) -> None:
        validate_config(config)

    def check_version(
        self, config: ModelConfig, model_dir: Path, version: int, options: Mapping[str, str]
    ) -> None:
        """The file loads as TorchScript and the config's names bind to its ``forward()``."""
        path = model_dir / str(version) / config.default_model_filename
        module = _load(config.name, path, torch.device("cpu"), parse_options(config))
        bind_module(config, module)

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        config = ctx.config
        validate_config(config)
        options = parse_options(config)
        apply_thread_counts(ctx.name, options)
        location = _location(ctx, spec)
        module = self._module(ctx, location, options)
        device = location
        if spec.kind == "MODEL":  # the model's own placement; inputs go where it starts
            first = next(iter(module.parameters()), None)
            device = first.device if first is not None and first.device.type != "cpu" else None
        elif device is not None and device.type == "cpu":
            device = None
        return PyTorchInstance(ctx, module, options, device)

    def _module(self, ctx: LoadContext, location: Any, options: TorchOptions) -> Any:
        path = ctx.model_file
        if not options.weight_sharing:
            return _load(ctx.name, path, location, options)
        key = (str(path), str(location))
        with self._lock:
            module = self._shared.get(key)
            if module is None:
                module = self._shared[key] = _load(ctx.name, path, location, options)
            return module

    def unload(self, ctx: LoadContext) -> None:
        path = str(ctx.model_file)
        with self._lock:
            for key in [k for k in self._shared if k[0] == path]:
                del self._shared[key]


def _location(ctx: LoadContext, spec: InstanceSpec) -> Any:
    """Where the module's tensors are loaded: None leaves them where they were saved."""
    if spec.kind == "MODEL":
        return None
    if spec.kind != "GPU":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise Unavailable(
            f"instance group '{spec.group}' of model '{ctx.name}' is KIND_GPU but torch sees "
            f"no CUDA device (torch {torch.__version__}"
            f"{', a CPU-only build' if torch.version.cuda is None else ''}); use KIND_CPU"
        )
    count = torch.cuda.device_count()
    if spec.device_id >= count:
        raise Unavailable(
            f"instance '{spec.name}' of model '{ctx.name}' wants GPU {spec.device_id} but torch "
            f"sees {count} CUDA device{'s' if count != 1 else ''}"
        )
    return torch.device("cuda", spec.device_id)


def _load(name: str, path: Path, location: Any, options: TorchOptions) -> Any:
    if not path.is_file():
        raise Unavailable(f"unable to find '{path}' for model '{name}'")
    try:
        # As in Triton: tensors made while loading are inference tensors too.
        with _quiet_load, torch.inference_mode(options.inference_mode):
            return torch.jit.load(str(path), map_location=location)
    except NaiadError:
        raise
    except Exception as exc:
        reason = str(exc).split("\n", 1)[0]
        hint = ""
        if "constants.pkl" in reason or "data.pkl" in reason:
            hint = (
                " (this looks like a torch.save() of a Python module, not TorchScript: save "
                "torch.jit.script(model) or torch.jit.trace(model, example) with .save())"
            )
        raise InvalidArgument(
            f"failed to load model '{name}' from '{path}': {reason}{hint}"
        ) from None


class _QuietLoad:
    """Silences torch's "`torch.jit.load` is deprecated" warning during a load.

    Serving TorchScript is this backend's purpose, and the warning would make
    every load fail where warnings are errors.  torch has raised it as a
    DeprecationWarning (2.11 to 2.13), then a FutureWarning (2.14 on), and
    words it differently on Python 3.14, so the filter matches torch.jit's
    own warning about ``torch.jit.load`` by its opening words and module,
    whatever its category; any other warning still surfaces.
    ``warnings.catch_warnings`` swaps process-wide state, so loads take turns
    through it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._caught: Any = None

    def __enter__(self) -> None:
        self._lock.acquire()
        self._caught = warnings.catch_warnings()
        self._caught.__enter__()
        warnings.filterwarnings("ignore", r"`torch\.jit\.load` is ", Warning, r"torch\.jit\b")

    def __exit__(self, *exc: object) -> None:
        self._caught.__exit__(*exc)
        self._lock.release()


_quiet_load = _QuietLoad()
