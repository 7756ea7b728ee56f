"""The ``/v1`` routes: method and restricted-API checks, then the endpoint, every error in
OpenAI's shape.

It sits behind the HTTP frontend's dispatch (``frontends/http/app.py``), so
the port's TLS, body limits, cross-origin rules and the ASGI app apply as
they do to the v2 API; its endpoints fall in the restricted-API categories
``metadata`` (the model list) and ``inference`` (the rest).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from naiad.core.errors import Internal, NaiadError
from naiad.frontends.http.encode import dumps
from naiad.frontends.http.message import Response, json_response
from naiad.frontends.http.restricted import Rule, permits, refusal_message
from naiad.frontends.openai import chat_template, completions, embeddings, requests
from naiad.frontends.openai.binding import Bindings, offers
from naiad.frontends.openai.completions import Job
from naiad.frontends.openai.errors import UnknownModel, error_response, http_error

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane
    from naiad.frontends.http.message import Request

log = logging.getLogger("naiad.openai")

Endpoint = Callable[["Request", str], Coroutine[Any, Any, Response | None]]
_MODELS = "/v1/models/"


class OpenAIApi:
    def __init__(self, dp: DataPlane, restricted: dict[str, Rule]) -> None:
        self.dp = dp
        self.restricted = restricted
        self.bindings = Bindings(dp)
        # path -> (method, restricted-API category, endpoint)
        self.routes: dict[str, tuple[str, str, Endpoint]] = {
            "/v1/models": ("GET", "metadata", self.models),
            "/v1/chat/completions": ("POST", "inference", self.chat),
            "/v1/completions": ("POST", "inference", self.completions),
            "/v1/embeddings": ("POST", "inference", self.embeddings),
        }

    def handle(self, req: Request) -> Response | Coroutine[Any, Any, Response | None]:
        arg = ""
        route = self.routes.get(req.path.rstrip("/"))
        if route is None and req.path.startswith(_MODELS) and len(req.path) > len(_MODELS):
            route, arg = self.routes["/v1/models"], unquote(req.path[len(_MODELS) :])
        if route is None:
            return http_error(404, f"Unknown request URL: {req.method} {req.path}.")
        method, category, endpoint = route
        if req.method != method:
            return http_error(405, f"Method {req.method} is not allowed for {req.path}.")
        rule = self.restricted.get(category)
        if not permits(rule, req.headers):
            assert rule is not None
            return http_error(403, refusal_message(rule))
        return self._run(endpoint, req, arg)

    async def _run(self, endpoint: Endpoint, req: Request, arg: str) -> Response | None:
        try:
            return await endpoint(req, arg)
        except NaiadError as exc:
            return error_response(exc)
        except Exception as exc:  # a bug must still answer the client
            log.exception("error handling %s %s", req.method, req.path)
            return error_response(Internal(f"{type(exc).__name__}: {exc}"))

    # -- endpoints -------------------------------------------------------------------

    async def models(self, req: Request, model: str) -> Response:
        """The models that opted in; with residency, unloaded ones too (their config is
        read, not loaded)."""
        if model:
            await self.dp.resident(model)
            if not self._offers(model):
                raise UnknownModel(f"The model '{model}' does not exist.")
            return json_response(dumps(self._model(model)))
        names = sorted({row.name for row in await self.dp.repository_index()})
        for name in names:
            await self.dp.resident(name)
        data = [self._model(name) for name in names if self._offers(name)]
        return json_response(dumps({"object": "list", "data": data}))

    async def chat(self, req: Request, _: str) -> Response | None:
        request = requests.chat(requests.body(req.body, req.headers))
        await self.dp.resident(request.model)
        binding = self.bindings.get(request.model, "chat")
        template = binding.cache.get("template")
        if template is None:
            template = await chat_template.load(self.dp, request.model, binding.chat_template)
            binding.cache["template"] = template
        prompt = template.render(request.messages, request.tools)
        job = Job(True, request.model, binding, [prompt], request.sampling)
        return await completions.answer(self.dp, req, job)

    async def completions(self, req: Request, _: str) -> Response | None:
        request = requests.completion(requests.body(req.body, req.headers))
        await self.dp.resident(request.model)
        binding = self.bindings.get(request.model, "completions")
        job = Job(False, request.model, binding, request.prompts, request.sampling, request.echo)
        return await completions.answer(self.dp, req, job)

    async def embeddings(self, req: Request, _: str) -> Response:
        request = requests.embedding(requests.body(req.body, req.headers))
        await self.dp.resident(request.model)
        binding = self.bindings.get(request.model, "embeddings")
        return await embeddings.answer(self.dp, binding, request)

    def _offers(self, name: str) -> bool:
        try:
            return bool(offers(self.dp.model_config(name)))
        except NaiadError:  # not loaded, or failed: not served now
            return False

    def _model(self, name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": int(self.dp.start_time),
                "owned_by": "naiad"}  # fmt: skip
