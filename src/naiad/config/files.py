"""File names in a config stay inside their model's folder.

A config names files the server opens or runs: the model file of each
version, label files, warmup data, initial sequence state.  The load API
accepts a whole config from the network, so a name like
``../../../evil/1/model.py`` or ``/etc/passwd`` would make the server import
or open anything it can read.  Every such name must be relative and, once
``..`` is resolved, stay inside the folder it is looked up in.  The check is
on the name alone (no file system): a repository's own symbolic links stay
the operator's choice.

A config given to the load API may also not point the Python backend at an
interpreter outside the model's folder (``EXECUTION_ENV_PATH``): a
repository's own config may name a shared environment anywhere, a client's
may not.
"""

from __future__ import annotations

import posixpath

from naiad.config.errors import ConfigError
from naiad.config.model_config_pb2 import ModelConfig
from naiad.config.problems import Problems


def escapes(name: str) -> bool:
    """Whether ``name`` is absolute or leaves its folder once ``..`` is resolved."""
    if name.startswith(("/", "\\")) or "\\" in name or "\0" in name or (name[1:2] == ":"):
        return True
    return posixpath.normpath(name).split("/", 1)[0] == ".."


def check_file_names(config: ModelConfig, problems: Problems) -> None:
    """Every file name of ``config`` against :func:`escapes`, named by its field."""

    def check(field: str, name: str, folder: str) -> None:
        if name and escapes(name):
            problems.add(field, f"file name '{name}' must be a relative path inside {folder}")

    check("default_model_filename", config.default_model_filename, "the version folder")
    for key, name in sorted(config.cc_model_filenames.items()):
        check(f'cc_model_filenames["{key}"]', name, "the version folder")
    for i, output in enumerate(config.output):
        check(f"output[{i}].label_filename", output.label_filename, "the model folder")
    for i, warmup in enumerate(config.model_warmup):
        for key, spec in sorted(warmup.inputs.items()):
            if spec.WhichOneof("input_data_type") == "input_data_file":
                check(
                    f'model_warmup[{i}].inputs["{key}"].input_data_file',
                    spec.input_data_file,
                    "the model's warmup folder",
                )
    for i, state in enumerate(config.sequence_batching.state):
        for j, initial in enumerate(state.initial_state):
            if initial.WhichOneof("state_data") == "data_file":
                check(
                    f"sequence_batching.state[{i}].initial_state[{j}].data_file",
                    initial.data_file,
                    "the model's initial_state folder",
                )


def check_file_names_first(config: ModelConfig, *, path: str = "", text: str | None = None) -> None:
    """Raise the first escaping file name, before anything opens a file of the config."""
    problems = Problems()
    check_file_names(config, problems)
    errors = problems.errors(path, text)
    if errors:
        raise errors[0]


MODEL_DIRECTORY = "$$TRITON_MODEL_DIRECTORY/"


def check_override(config: ModelConfig) -> None:
    """The stricter rules for a config that came with a load request."""
    check_file_names_first(config, path="the load request's config")
    if "EXECUTION_ENV_PATH" in config.parameters:
        env = config.parameters["EXECUTION_ENV_PATH"].string_value
        inside = env.startswith(MODEL_DIRECTORY) and not escapes(env[len(MODEL_DIRECTORY) :])
        if env and not inside:
            raise ConfigError(
                f"EXECUTION_ENV_PATH '{env}' must be inside the model folder "
                f"('{MODEL_DIRECTORY}...') in a config given to the load API",
                path="the load request's config",
                field='parameters["EXECUTION_ENV_PATH"]',
            )
