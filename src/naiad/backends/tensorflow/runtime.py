"""TensorFlow itself, imported once, quietly, and its process-wide settings.

Every module of this backend takes ``tf`` from here, so the environment is
set before TensorFlow is first imported: its C++ logging reads
``TF_CPP_MIN_LOG_LEVEL`` only then, and without it a server's log opens
with TensorFlow's CPU-feature and device notices.  A value the user set wins.

TensorFlow 2 has one intra-op and one inter-op thread pool per process
(there are no per-session pools in eager mode), sized when its runtime
starts: the first model that runs decides them, later models cannot.
"""

from __future__ import annotations

import logging
import os

from naiad.backends.parameters import ModelParameters

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

log = logging.getLogger("naiad")

#: Model parameters (Triton's names) of the thread pools -> tf.config.threading's setter.
THREAD_PARAMETERS = {
    "TF_NUM_INTRA_THREADS": "intra_op_parallelism_threads",
    "TF_NUM_INTER_THREADS": "inter_op_parallelism_threads",
}


def thread_settings(params: ModelParameters) -> dict[str, int]:
    """The thread counts a model's parameters ask for (checked, not applied)."""
    params.flag("TF_USE_PER_SESSION_THREADS")  # accepted; no effect (docs/backends)
    return {key: count for key in THREAD_PARAMETERS if (count := params.count(key)) is not None}


def apply_threads(model: str, wanted: dict[str, int]) -> None:
    """Size TensorFlow's thread pools, if its runtime has not started yet.

    Once it has (another model ran first), a different size cannot be had
    any more: the model still loads, on the pools as they are, and the log
    says so rather than failing a load for a tuning knob.
    """
    threading = tf.config.threading
    for key, value in wanted.items():
        attr = THREAD_PARAMETERS[key]
        try:
            getattr(threading, f"set_{attr}")(value)
        except RuntimeError:
            current = getattr(threading, f"get_{attr}")()
            if current != value:
                log.warning(
                    "model '%s': %s=%d not applied: TensorFlow's thread pools are "
                    "process-wide and already started with %d (0: TensorFlow's choice)",
                    model,
                    key,
                    value,
                    current,
                )


def visible_gpus() -> int:
    """GPUs this TensorFlow can use (none with tensorflow-cpu); does not start the runtime."""
    return len(tf.config.list_physical_devices("GPU"))
