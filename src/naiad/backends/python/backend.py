"""Triton's Python backend (``backend: "python"``): ``model.py`` with ``TritonPythonModel``.

An instance runs in a stub process of its own (Triton's model: a model
cannot crash the server, and it may use its own interpreter) or in the
server's process (no hop, no copies).  ``auto``, the default, picks the
server's process only for models that reading their source shows to be
safe there (``placement``); ``process`` and ``thread`` force one:
``parameters { key: "NAIAD_EXECUTION_MODE" value: { string_value: "process" } }``
in the model config, or ``--backend-config=python,execution-mode=process``.

Backend options (``--backend-config=python,<key>=<value>``):
``shm-default-byte-size`` (first shared-memory segment per instance and
direction, default 1 MiB; more are added as needed), ``stub-timeout-seconds``
(how long ``finalize`` may take, default 30), ``execution-mode``.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from naiad.backends.base import Backend, InstanceSpec, LoadContext, ModelInstance, instance_specs
from naiad.backends.python import launcher, placement
from naiad.backends.python.process import ProcessInstance, StubSettings
from naiad.backends.python.services import Services
from naiad.backends.python.thread import CpuWatch, ThreadHost, ThreadInstance
from naiad.core.errors import Internal, InvalidArgument, Unavailable
from triton_python_backend_utils._runner import (
    ModelRunner,
    no_model_class,
    python_error_text,
)

if TYPE_CHECKING:
    from naiad.config import ModelConfig

log = logging.getLogger("naiad")

MODES = ("auto", "process", "thread")


def _parameter(config: ModelConfig, key: str) -> str:
    return config.parameters[key].string_value if key in config.parameters else ""


def _execution_mode(config: ModelConfig, options: Mapping[str, str]) -> str:
    """The model's parameter, else the backend's option (``validate`` checked the former)."""
    mode = _parameter(config, "NAIAD_EXECUTION_MODE") or options.get("execution-mode", "auto")
    if mode not in MODES:
        raise InvalidArgument(
            f"execution-mode of the python backend must be one of {', '.join(MODES)}, not '{mode}'"
        )
    return mode


def _decoupled(config: ModelConfig) -> bool:
    return bool(
        config.HasField("model_transaction_policy") and config.model_transaction_policy.decoupled
    )


def _placed(ctx: LoadContext, decoupled: bool) -> placement.Placement:
    """Where ``execution-mode=auto`` runs the model (placement.py)."""
    config = ctx.config
    return placement.place(
        _model_file(config, ctx.model_dir, ctx.version),
        decoupled,
        bool(_parameter(config, "EXECUTION_ENV_PATH")),
        len(instance_specs(config)),
    )


def _model_file(config: ModelConfig, model_dir: Path, version: int) -> Path:
    return model_dir / str(version) / (config.default_model_filename or "model.py")


def _may_auto_complete(model_dir: Path) -> bool:
    """Whether any Python file of the model mentions ``auto_complete_config``.

    Saves starting a process for the (many) models that do not define it.
    """
    for path in model_dir.rglob("*.py"):
        try:
            if "auto_complete_config" in path.read_text(encoding="utf-8", errors="replace"):
                return True
        except OSError:
            continue
    return False


#: What can bind ``TritonPythonModel`` in a module without the name in its text.
_DYNAMIC_NAMES = re.compile(
    r"import\s+\*|__getattr__|globals\(|setattr\(|exec\(|sys\.modules|vars\("
)


def _may_bind_model_class(source: str) -> bool:
    """Whether importing ``source`` may define ``TritonPythonModel``.

    Only a file that never names it, nor binds names another way (a star
    import, ``globals()``, ``exec``...), certainly does not: a misspelt
    class, or a ``model.py`` that is something else.  Nothing is run.
    """
    return "TritonPythonModel" in source or _DYNAMIC_NAMES.search(source) is not None


class PythonBackend(Backend):
    name = "python"

    def preferred_instance_kind(self) -> str:
        return "KIND_CPU"

    def validate(self, config: ModelConfig, model_dir: Path) -> None:
        filename = config.default_model_filename
        if filename and not filename.endswith(".py"):
            raise InvalidArgument(
                f"default_model_filename of Python model '{config.name}' must end in '.py'"
            )
        mode = _parameter(config, "NAIAD_EXECUTION_MODE")
        if mode and mode not in MODES:
            raise InvalidArgument(
                f"NAIAD_EXECUTION_MODE of model '{config.name}' must be one of {', '.join(MODES)}"
            )

    def check_version(
        self, config: ModelConfig, model_dir: Path, version: int, options: Mapping[str, str]
    ) -> None:
        """A ``model.py`` Python cannot parse fails its import at load; compiling it tells
        the same, in the words the import's error would have, and runs nothing."""
        _execution_mode(config, options)
        if _parameter(config, "EXECUTION_ENV_PATH"):
            return  # another interpreter, maybe another Python: its import will tell
        model_file = _model_file(config, model_dir, version)
        try:
            source = model_file.read_bytes()
        except OSError:
            return  # a missing file is reported as such
        with warnings.catch_warnings():  # a SyntaxWarning is no reason to refuse a model
            warnings.simplefilter("ignore")
            try:
                compile(source, str(model_file), "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as exc:  # ValueError: a null byte
                raise Internal(python_error_text(exc.with_traceback(None))) from None
        if not _may_bind_model_class(source.decode("utf-8", errors="replace")):
            raise Internal(python_error_text(no_model_class(str(model_file))))

    def auto_complete_config(self, config: ModelConfig, model_dir: Path, version: int) -> None:
        """Run the model's static ``auto_complete_config`` in a throw-away process."""
        from naiad.config import config_from_json, config_to_json

        model_file = _model_file(config, model_dir, version)
        if not model_file.is_file() or not _may_auto_complete(model_dir):
            return
        interpreter = launcher.interpreter_for(_parameter(config, "EXECUTION_ENV_PATH"), model_dir)
        completed = launcher.run_auto_complete(
            interpreter, model_file, version, config_to_json(config)
        )
        if completed is not None:
            config.CopyFrom(config_from_json(completed, str(model_file)))

    def runs_in_server(self, ctx: LoadContext) -> bool:
        mode = _execution_mode(ctx.config, ctx.options)
        if mode == "auto":
            return _placed(ctx, _decoupled(ctx.config)).mode == "thread"
        return mode == "thread"

    def create_instance(self, ctx: LoadContext, spec: InstanceSpec) -> ModelInstance:
        from naiad.config import config_to_json

        config = ctx.config
        model_file = _model_file(config, ctx.model_dir, ctx.version)
        if not model_file.is_file():
            raise Unavailable(
                f"Failed to load model '{ctx.name}': Python model file '{model_file}' not found"
            )
        decoupled = _decoupled(config)
        iterative = config.sequence_batching.iterative_sequence
        # Implicit-state outputs are produced by the model like any output; the
        # sequence batcher takes them out of the response.
        outputs = [o.name for o in config.output] + [
            s.output_name for s in config.sequence_batching.state
        ]
        args = {
            "model_config": config_to_json(config),
            "model_instance_kind": spec.kind,
            "model_instance_name": spec.name,
            "model_instance_device_id": str(spec.device_id),
            "model_repository": str(ctx.model_dir),
            "model_version": str(ctx.version),
            "model_name": ctx.name,
        }
        if ctx.services is None:
            raise Internal("a Python model is loaded only by a running server (it may call BLS)")
        services = Services(ctx.services)
        mode = _execution_mode(config, ctx.options)
        watch = None
        if mode == "auto":
            placed = _placed(ctx, decoupled)
            mode = placed.mode
            watch = CpuWatch() if mode == "thread" else None
            if spec.index == 0:
                where = "the server's process" if mode == "thread" else "stub processes"
                log.info(
                    "Python model '%s' runs in %s: %s (execution-mode=auto)",
                    ctx.name,
                    where,
                    placed.reason,
                )
        if mode == "thread":
            runner = ModelRunner(spec.name, decoupled, outputs, iterative)
            host = ThreadHost(runner, services)
            return ThreadInstance(runner, host, str(model_file), args, watch)
        segment_bytes = int(ctx.options.get("shm-default-byte-size", 1 << 20))
        init = {
            "instance": spec.name,
            "decoupled": decoupled,
            "iterative": iterative,
            "outputs": outputs,
            "model_file": str(model_file),
            "version": str(ctx.version),
            "args": args,
            "shm": segment_bytes,
        }
        settings = StubSettings(
            name=spec.name,
            init=init,
            interpreter=launcher.interpreter_for(
                _parameter(config, "EXECUTION_ENV_PATH"), ctx.model_dir
            ),
            services=services,
            decoupled=decoupled,
            output_names=outputs,
            segment_bytes=segment_bytes,
            finalize_timeout=float(ctx.options.get("stub-timeout-seconds", 30)),
        )
        return ProcessInstance(settings)
