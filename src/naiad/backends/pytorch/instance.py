"""One TorchScript model instance: a batch in, ``forward()`` once, responses out.

torch releases the GIL inside its operators, so instances on worker
threads run in parallel.  A small model's call takes ~20 microseconds, less
than the hand-off to a worker thread (~60 measured on a 2-core machine), so a
CPU instance lets the scheduler run it inline, which it does only while the
executions' average stays under its threshold.  A CUDA instance never runs
inline: its time waiting for the device is no CPU time on the worker
thread, so the average would hide it while the event loop stood still.
A short batch computes with one intra-op thread (:mod:`.threads`).
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from naiad.backends.base import LoadContext, ModelInstance
from naiad.backends.batching import BatchPlan
from naiad.backends.pytorch.binding import (
    Forward,
    InputBinding,
    Selector,
    bind_inputs,
    bind_outputs,
)
from naiad.backends.pytorch.convert import from_strings, from_tensor, to_strings, to_tensor
from naiad.backends.pytorch.parameters import TorchOptions
from naiad.backends.pytorch.threads import IntraOpThreads, compute_with, team_size
from naiad.config.model_config_pb2 import DataType
from naiad.core import datatypes
from naiad.core.errors import Internal, InvalidArgument, NaiadError
from naiad.core.types import InferenceRequest, InferenceResponse, OutputTensor

if TYPE_CHECKING:
    from naiad.config import ModelConfig

_STRING = DataType.TYPE_STRING


def read_forward(module: Any) -> Forward:
    """``forward()``'s arguments and result type, from the TorchScript schema."""
    schema = module.forward.schema
    arguments = list(schema.arguments)
    if arguments and arguments[0].type.kind() == "ClassType":
        arguments = arguments[1:]  # self
    returns = schema.returns[0].type if schema.returns else None
    elements: tuple[str, ...] = ()
    if returns is not None and returns.kind() == "TupleType":
        elements = tuple(str(t) for t in returns.elements())
    return Forward(
        tuple((a.name, str(a.type)) for a in arguments),
        str(returns) if returns is not None else "None",
        elements,
    )


@dataclass(frozen=True)
class ModuleBinding:
    """Where the config's tensors go in and come out of one module's ``forward()``."""

    forward: Forward
    inputs: InputBinding
    #: (name, place in the result, datatype) of each output.
    outputs: list[tuple[str, Selector, datatypes.DataType]]


def bind_module(config: ModelConfig, module: Any) -> ModuleBinding:
    """Bind the config's tensors to ``module``'s ``forward()``; INVALID_ARG where they do not.

    An instance binds the module it loaded; ``naiad check`` binds the file
    loaded on the CPU (``PyTorchBackend.check_version``), so both refuse a
    model with the same message.
    """
    forward = read_forward(module)
    sequence = config.sequence_batching
    inputs = [(i.name, i.data_type == _STRING) for i in config.input]
    inputs += [(c.name, False) for c in sequence.control_input]
    inputs += [(s.input_name, s.data_type == _STRING) for s in sequence.state]
    inputs += [(name, False) for name in BatchPlan(config).target_names]
    bound_inputs = bind_inputs(config.name, forward, inputs)
    outputs = [(o.name, o.data_type) for o in config.output]
    outputs += [(s.output_name, s.data_type) for s in sequence.state]
    selectors = bind_outputs(config.name, forward, [(n, t == _STRING) for n, t in outputs])
    return ModuleBinding(
        forward,
        bound_inputs,
        [
            (name, selector, datatypes.from_config(dt))
            for (name, dt), selector in zip(outputs, selectors, strict=True)
        ],
    )


class PyTorchInstance(ModelInstance):
    def __init__(self, ctx: LoadContext, module: Any, options: TorchOptions, device: Any) -> None:
        config = ctx.config
        self.module = module
        self.options = options
        #: Where inputs go (None: the CPU, where they already are).
        self.device = device
        self.plan = BatchPlan(config)
        bound = bind_module(config, module)
        self.inputs = bound.inputs
        #: (name, place in the result, datatype) of each output.
        self.outputs = bound.outputs
        self.argument_count = len(bound.forward.arguments)
        self.on_cuda = device is not None and device.type == "cuda"
        self.inline_ok = not self.on_cuda
        self.intra_op = IntraOpThreads(team_size())

    def execute(self, requests: list[InferenceRequest]) -> list[InferenceResponse]:
        t0 = time.monotonic_ns()
        feed = self.plan.gather(requests)
        arguments = self._arguments(feed)
        elements = sum(array.size for array in feed.values())
        threads = self.intra_op.threads_for(elements)
        compute_with(threads)
        t1 = time.monotonic_ns()
        try:
            with self._execution_mode():
                result = self.module.forward(*arguments)
        except NaiadError:
            raise
        except Exception as exc:
            raise Internal(f"PyTorch execute failure: {exc}") from None
        finally:
            if self.options.cache_cleaning and self.on_cuda:
                torch.cuda.empty_cache()
        t2 = time.monotonic_ns()
        self.intra_op.record(elements, threads, t2 - t1)
        arrays = {name: self._output(result, name, sel, dt) for name, sel, dt in self.outputs}
        self.plan.check_shapes(arrays)
        responses = []
        for produced in self.plan.split(arrays, requests):
            responses.append(
                InferenceResponse(
                    outputs=[
                        OutputTensor(name, dt, produced[name].shape, produced[name])
                        for name, _, dt in self.outputs
                    ]
                )
            )
        t3 = time.monotonic_ns()
        self.compute_ns = (t1 - t0, t2 - t1, t3 - t2)
        return responses

    def _arguments(self, feed: dict[str, np.ndarray]) -> list[Any]:
        """forward()'s positional arguments: tensors, string lists, or one dict."""
        strings = self.inputs.strings
        if self.inputs.as_dict:
            return [{name: to_tensor(array, self.device) for name, array in feed.items()}]
        arguments: list[Any] = [None] * self.argument_count
        for name, position in self.inputs.positions.items():
            array = feed.get(name)
            if array is None:
                raise InvalidArgument(
                    f"input '{name}' is optional in the configuration, but forward() needs it"
                )
            if name in strings:
                arguments[position] = to_strings(name, array)
            else:
                arguments[position] = to_tensor(array, self.device)
        return arguments

    def _execution_mode(self) -> ExitStack:
        """Triton's guards around forward(): inference mode or no-grad, optimizer, JIT."""
        stack = ExitStack()
        options = self.options
        stack.enter_context(torch.inference_mode() if options.inference_mode else torch.no_grad())
        if not options.optimized_execution:
            stack.enter_context(torch.jit.optimized_execution(False))
        if options.jit_settings:
            # Process-wide in torch; Triton sets them before each execution too.
            if options.cudnn is not None:
                torch.backends.cudnn.enabled = options.cudnn
            if options.jit_profiling is not None:
                torch._C._jit_set_profiling_mode(options.jit_profiling)
            if options.jit_executor is not None:
                torch._C._jit_set_profiling_executor(options.jit_executor)
            if options.tensor_fuser is not None:
                torch._C._jit_set_texpr_fuser_enabled(options.tensor_fuser)
        return stack

    @staticmethod
    def _output(result: Any, name: str, selector: Selector, dt: datatypes.DataType) -> np.ndarray:
        value = result
        if selector is not None:
            try:
                value = result[selector]
            except (IndexError, KeyError, TypeError):
                found = (
                    f"keys {', '.join(map(str, result))}"
                    if isinstance(result, dict)
                    else f"{len(result)} values"
                    if isinstance(result, (list, tuple))
                    else f"a {type(result).__name__}"
                )
                raise Internal(
                    f"output '{name}' is {selector!r} of forward()'s result, which has {found}"
                ) from None
        if dt.is_bytes:
            return from_strings(name, value)
        return from_tensor(name, value, dt)

    def close(self) -> None:
        self.module = None
        if self.on_cuda:
            torch.cuda.empty_cache()
