"""The config ``parameters`` Triton's pytorch backend reads, parsed once per model.

Values are checked when the config is validated, so ``naiad check`` and a
load report a bad one alike, naming the parameter.  Booleans take Triton's
spellings (true/false, on/off, 1/0, any case).  Parameters this backend
does not know are ignored, as Triton ignores them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from naiad.backends.parameters import ModelParameters

if TYPE_CHECKING:
    from naiad.config import ModelConfig


@dataclass(frozen=True)
class TorchOptions:
    """What a model's parameters ask of torch; None leaves torch's own setting."""

    optimized_execution: bool = True
    inference_mode: bool = True
    cache_cleaning: bool = False
    weight_sharing: bool = False
    cudnn: bool | None = None
    jit_profiling: bool | None = None
    jit_executor: bool | None = None
    tensor_fuser: bool | None = None
    #: 0: torch's default (the number of cores).
    intra_op_threads: int = 0
    inter_op_threads: int = 0

    @property
    def jit_settings(self) -> bool:
        """Whether any process-wide JIT setting must be applied before each execution."""
        return any(
            v is not None
            for v in (self.cudnn, self.jit_profiling, self.jit_executor, self.tensor_fuser)
        )


def parse_options(config: ModelConfig) -> TorchOptions:
    """The model's options; InvalidArgument naming the parameter for a bad value."""
    params = ModelParameters(config)
    flag = params.flag

    def count(key: str) -> int:
        return params.count(key) or 0  # 0: torch's default

    disable_optimized = flag("DISABLE_OPTIMIZED_EXECUTION")
    disable_cudnn = flag("DISABLE_CUDNN")
    flag("ENABLE_NVFUSER")  # checked, then ignored: torch no longer has nvfuser
    return TorchOptions(
        optimized_execution=not disable_optimized,
        inference_mode=_default(flag("INFERENCE_MODE"), True),
        cache_cleaning=_default(flag("ENABLE_CACHE_CLEANING"), False),
        weight_sharing=_default(flag("ENABLE_WEIGHT_SHARING"), False),
        cudnn=None if disable_cudnn is None else not disable_cudnn,
        jit_profiling=flag("ENABLE_JIT_PROFILING"),
        jit_executor=flag("ENABLE_JIT_EXECUTOR"),
        tensor_fuser=flag("ENABLE_TENSOR_FUSER"),
        intra_op_threads=count("INTRA_OP_THREAD_COUNT"),
        inter_op_threads=count("INTER_OP_THREAD_COUNT"),
    )


def _default(value: bool | None, default: bool) -> bool:
    return default if value is None else value
