"""One model of a runner: ``runner.add_sub.run(a, b)``, ``await ...async_run(a, b)``, streams.

Inputs are checked against the model's signature (fetched once, then kept)
before anything is sent; ``options(...)`` makes a copy that sends request
options (outputs, ids, sequences, priorities, parameters) with every call.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Protocol

from naiad.core.errors import Unsupported
from naiad.runner.client import Call, RequestOptions
from naiad.runner.result import InferResult
from naiad.runner.signature import Signature


class Host(Protocol):
    """What a model asks of its runner.  The runner (:class:`naiad.runner.runner.Runner`)
    makes its models, so naming it here would tie the two files in a cycle; mypy
    checks it against this where it makes one."""

    name: str

    def _signature(self, name: str, version: str) -> Signature: ...
    async def _asignature(self, name: str, version: str) -> Signature: ...
    def _infer(self, call: Call) -> InferResult: ...
    async def _ainfer(self, call: Call) -> InferResult: ...
    def _stream(self, call: Call) -> Iterator[InferResult]: ...
    def _astream(self, call: Call) -> AsyncIterator[InferResult]: ...
    def get_model_metadata(self, model_name: str, model_version: str = "") -> dict[str, Any]: ...
    def get_model_config(self, model_name: str, model_version: str = "") -> dict[str, Any]: ...
    def is_model_ready(self, model_name: str, model_version: str = "") -> bool: ...


class RunnerModel:
    """A model (one version, or the one the version policy serves) of a :class:`Runner`."""

    __slots__ = ("_runner", "name", "version", "_options")

    def __init__(
        self,
        runner: Host,
        name: str,
        version: str = "",
        options: RequestOptions | None = None,
    ) -> None:
        self._runner = runner
        self.name = name
        self.version = version
        self._options = options or RequestOptions()

    def __getattr__(self, attr: str) -> RunnerModel:
        # runner.add_sub.v2: version 2
        if attr.startswith("v") and attr[1:].isdigit():
            return RunnerModel(self._runner, self.name, attr[1:], self._options)
        raise AttributeError(
            f"'{self.name}' has no attribute '{attr}' (a version is written .v<number>)"
        )

    def options(
        self,
        *,
        outputs: list[str] | dict[str, int] | None = None,
        request_id: str | None = None,
        sequence_id: int | str | None = None,
        sequence_start: bool | None = None,
        sequence_end: bool | None = None,
        priority: int | None = None,
        timeout: int | None = None,
        parameters: dict[str, bool | int | float | str] | None = None,
    ) -> RunnerModel:
        """A copy that sends these request options (tritonclient's names) with every call.

        ``outputs`` names the outputs to return; a dict maps a name to a class
        count for Triton's classification extension (``{"PROBABILITIES": 3}``:
        the top three as ``b"score:index:label"``).  ``timeout`` is the
        server-side timeout in microseconds.
        """
        changes: dict[str, Any] = {
            key: value
            for key, value in {
                "request_id": _as(str, request_id),
                "sequence_id": _as(_sequence_id, sequence_id),
                "sequence_start": _as(bool, sequence_start),
                "sequence_end": _as(bool, sequence_end),
                "priority": _as(operator.index, priority),
                "timeout": _as(operator.index, timeout),
                "parameters": parameters,
            }.items()
            if value is not None
        }
        if outputs is not None:
            changes["outputs"] = (
                dict(outputs) if isinstance(outputs, dict) else dict.fromkeys(outputs, 0)
            )
        return RunnerModel(
            self._runner, self.name, self.version, dataclasses.replace(self._options, **changes)
        )

    # -- calls -----------------------------------------------------------------------

    def _call(
        self, signature: Signature, args: tuple[Any, ...], kwargs: dict[str, Any], stream: bool
    ) -> Call:
        if signature.decoupled and not stream:
            raise Unsupported(
                f"model '{self.name}' is decoupled (it may answer with several responses): "
                f"iterate over runner.{self.name}.stream(...) or async for over .astream(...)"
            )
        return Call(signature, self.version, signature.bind(args, kwargs), self._options)

    def run(self, *args: Any, **inputs: Any) -> InferResult:
        """Infer: inputs in the config's order, or by name; returns the outputs."""
        signature = self._runner._signature(self.name, self.version)
        return self._runner._infer(self._call(signature, args, inputs, stream=False))

    async def async_run(self, *args: Any, **inputs: Any) -> InferResult:
        """:meth:`run` for asyncio code (any event loop); it never blocks the loop."""
        signature = await self._runner._asignature(self.name, self.version)
        return await self._runner._ainfer(self._call(signature, args, inputs, stream=False))

    def stream(self, *args: Any, **inputs: Any) -> Iterator[InferResult]:
        """Every response of a decoupled model, as they come (one for other models)."""
        signature = self._runner._signature(self.name, self.version)
        return self._runner._stream(self._call(signature, args, inputs, stream=True))

    async def astream(self, *args: Any, **inputs: Any) -> AsyncIterator[InferResult]:
        """:meth:`stream` for ``async for``."""
        signature = await self._runner._asignature(self.name, self.version)
        async for result in self._runner._astream(self._call(signature, args, inputs, stream=True)):
            yield result

    # -- about the model --------------------------------------------------------------

    @property
    def signature(self) -> Signature:
        """Inputs and outputs with datatypes and shapes (-1: any size)."""
        return self._runner._signature(self.name, self.version)

    def metadata(self) -> dict[str, Any]:
        return self._runner.get_model_metadata(self.name, self.version)

    def config(self) -> dict[str, Any]:
        return self._runner.get_model_config(self.name, self.version)

    def is_ready(self) -> bool:
        return self._runner.is_model_ready(self.name, self.version)

    def __repr__(self) -> str:
        version = f" version {self.version}" if self.version else ""
        return f"<naiad model '{self.name}'{version} of runner '{self._runner.name}'>"


def _as(kind: Callable[[Any], Any], value: Any) -> Any:
    """``value`` as the request holds it (numpy's integers and booleans as Python's, as
    tritonclient takes them); None when not given.  Anything else is refused here,
    where the caller set it."""
    return None if value is None else kind(value)


def _sequence_id(value: int | str) -> int | str:
    return value if isinstance(value, str) else operator.index(value)
