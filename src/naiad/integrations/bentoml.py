"""A naiad runner inside a BentoML service (``pip install 'naiad[bentoml]'``).

For BentoML 1.4's ``@bentoml.service`` classes: derive from
:class:`RunnerService` and give the class a ``runner``.  Each worker starts
the runner when it starts (so readiness waits for the models), closes it
when it stops, reports the runner's health as the service's, and appends
naiad's metrics to BentoML's ``/metrics``::

    import bentoml, naiad, numpy as np
    from naiad.integrations.bentoml import RunnerService, http_errors

    @bentoml.service
    class AddSub(RunnerService):
        runner = naiad.Runner("models", model_repository="model_repository")

        @bentoml.api
        @http_errors  # a wrong input answers 400 with naiad's message, not a bare 500
        async def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
            result = await self.runner.add_sub.async_run(a.astype("float32"), b.astype("float32"))
            return result["OUTPUT0"]

Unlike ``bentoml.triton.Runner``, this works in ``bentoml serve`` during
development too, any version of a model can be called, and metrics stay.
A runner made at class level is shared by the service's instances in one
worker process; every worker has its own (with ``server_type="grpc"`` or
``"http"``, its own child server: point ``url=`` at one server to share it).
"""

from __future__ import annotations

try:
    import bentoml
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        f"naiad.integrations.bentoml needs BentoML ({exc}): pip install 'naiad[bentoml]'"
    ) from None

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from starlette.responses import JSONResponse

from naiad.core.errors import NaiadError
from naiad.frontends.http.errors import status_of
from naiad.runner import Runner

F = TypeVar("F", bound=Callable[..., Any])
log = logging.getLogger("naiad.integrations.bentoml")


class RunnerService:
    """Lifecycle, health and metrics hooks for a BentoML service that has a ``runner``."""

    runner: Runner

    @bentoml.on_startup
    async def start_naiad_runner(self) -> None:
        await self.runner.astart()

    @bentoml.on_shutdown
    async def close_naiad_runner(self) -> None:
        await self.runner.aclose()

    async def __is_alive__(self) -> bool:
        return await _answers(self.runner.aio.is_server_live())

    async def __is_ready__(self) -> bool:
        return await _answers(self.runner.aio.is_server_ready())

    async def __metrics__(self, content: str) -> str:
        try:
            return content + await self.runner.aio.metrics()
        except NaiadError:  # --allow-metrics=false, or a server gone: BentoML's own still count
            return content


async def _answers(check: object) -> bool:
    try:
        return bool(await check)  # type: ignore[misc]
    except NaiadError:
        return False


def http_errors(api: F) -> F:
    """Answer a NaiadError of this API with its HTTP status and naiad's message, as
    ``{"error": message}`` (BentoML answers any other exception with a bare 500); goes
    under ``@bentoml.api``.

    The error is answered, not raised: BentoML logs every exception an API raises with
    its traceback, and a 404 for an unloaded model or a 400 for a wrong shape is the
    client's mistake, not the server's.  Those get one debug line; a server error one
    error line.
    """

    if inspect.iscoroutinefunction(api):

        @functools.wraps(api)
        async def answer_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await api(*args, **kwargs)
            except NaiadError as exc:
                return _answer(api, exc)

        return answer_async  # type: ignore[return-value]

    @functools.wraps(api)
    def answer(*args: Any, **kwargs: Any) -> Any:
        try:
            return api(*args, **kwargs)
        except NaiadError as exc:
            return _answer(api, exc)

    return answer  # type: ignore[return-value]


def _answer(api: Callable[..., Any], exc: NaiadError) -> JSONResponse:
    status = status_of(exc)
    if status >= 500:
        log.error("%s: %s", api.__name__, exc.message)
    else:
        log.debug("%s: %s (%d)", api.__name__, exc.message, status)
    return JSONResponse({"error": exc.message}, status_code=status)
