"""A declared model as a model folder: ``config.pbtxt``, ``1/model.py`` (the generic
adapter, ``model_py.py``), ``1/naiad_function.json`` (what it calls), and, for
``naiad export``, the user's files, so the folder is whole: Triton's Python
backend serves it as naiad does."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

from google.protobuf import text_format

from naiad.config import ModelConfig, model_config_pb2
from naiad.functions import live
from naiad.functions.spec import FunctionModel, Tensor

ADAPTER = Path(__file__).with_name("model_py.py")


def config_of(found: FunctionModel, thread: bool = False) -> ModelConfig:
    config = ModelConfig(name=found.name, backend="python", max_batch_size=found.max_batch_size)
    for tensor in found.inputs:
        _tensor(config.input.add(), tensor)
    for tensor in found.outputs:
        _tensor(config.output.add(), tensor)
    if found.decoupled:
        config.model_transaction_policy.decoupled = True
    if found.max_batch_size > 0:
        config.dynamic_batching.max_queue_delay_microseconds = found.max_queue_delay_us
    group = config.instance_group.add()
    group.count = found.instances
    group.kind = group.KIND_CPU
    parameters = dict(found.parameters)
    if thread:  # the server's own objects: run where they live (see live.py)
        parameters["NAIAD_EXECUTION_MODE"] = "thread"
    for key, value in parameters.items():
        config.parameters[key].string_value = value
    return config


def _tensor(out: object, tensor: Tensor) -> None:
    out.name = tensor.name  # type: ignore[attr-defined]
    out.data_type = model_config_pb2.DataType.Value("TYPE_" + _config_type(tensor.datatype))  # type: ignore[attr-defined]
    out.dims.extend(tensor.shape)  # type: ignore[attr-defined]


def _config_type(datatype: str) -> str:
    return "STRING" if datatype == "BYTES" else datatype


def write(found: FunctionModel, repository: Path, source: Path, module: str, copy: bool,
          token: str = "") -> Path:  # fmt: skip
    """The model's folder in ``repository``.  ``copy``: the user's file goes into the
    version folder (an export); else the folder points at it where it is (serving)."""
    folder = repository / found.name
    version = folder / "1"
    version.mkdir(parents=True, exist_ok=True)
    config = config_of(found, thread=bool(token))
    (folder / "config.pbtxt").write_text(text_format.MessageToString(config))
    shutil.copyfile(ADAPTER, version / "model.py")
    if copy:
        shutil.copyfile(source, version / source.name)
    spec = {
        "file": source.name if copy else str(source.resolve()),
        "module": module,
        "object": _attribute(found),
        "token": token,
        "inputs": [[t.name, t.datatype, t.scalar] for t in found.inputs],
        "outputs": [[t.name, t.datatype, t.scalar] for t in found.outputs],
        "batched": found.batched,
        "decoupled": found.decoupled,
        "async": found.is_async,
    }
    (version / "naiad_function.json").write_text(json.dumps(spec, indent=2) + "\n")
    return folder


def _attribute(found: FunctionModel) -> str:
    """The module-level name of the declared object (a model named otherwise than its
    function is still found by the function's name)."""
    import sys

    module = sys.modules.get(getattr(found.target, "__module__", ""))
    for key, value in vars(module).items() if module is not None else ():
        if value is found:
            return key
    return getattr(found.target, "__name__", found.name)


def repository_of(models: list[FunctionModel], repository: Path, in_process: bool) -> Path:
    """A repository of a program's own model objects.  ``in_process``: the server runs in
    this process and calls the objects themselves (see ``live``); else a server process
    of its own imports their files (a script's ``if __name__ == "__main__":`` block
    does not run there: the file is imported under its own name)."""
    import inspect

    for found in models:
        token = ""
        if in_process:
            token = uuid.uuid4().hex
            live.MODELS[token] = found
        source = Path(inspect.getfile(found.target)).resolve()
        module = getattr(found.target, "__module__", "") or source.stem
        write(found, repository, source, source.stem if module == "__main__" else module,
              copy=False, token=token)  # fmt: skip
    return repository


def temporary_folder() -> Path:
    """A folder for generated model folders, removed when the program exits."""
    import atexit
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="naiad-models-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def temporary_repository(models: list[FunctionModel], in_process: bool) -> Path:
    """:func:`repository_of` in a :func:`temporary_folder` (``naiad.Server(models=...)``,
    ``naiad.Runner(models=...)``)."""
    return repository_of(models, temporary_folder(), in_process)


def serve_apps(targets: list[str], repository: Path) -> Path:
    """A repository whose models call ``targets``' functions where they are."""
    from naiad.functions.discover import load

    for target in targets:
        app = load(target)
        for found in app.models:
            write(found, repository, app.source, app.module, copy=False)
    return repository


def export_apps(targets: list[str], repository: Path) -> list[Path]:
    """Whole model folders, the user's file in each: what Triton serves as naiad does."""
    from naiad.functions.discover import load

    folders = []
    for target in targets:
        app = load(target)
        for found in app.models:
            folders.append(write(found, repository, app.source, app.module, copy=True))
    return folders
