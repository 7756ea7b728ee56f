"""The OpenAPI endpoints: ``GET /openapi.json`` (the whole server),
``GET /v2/models/<m>[/versions/<v>]/openapi.json`` (one model), both in the
restricted-API category ``metadata``; and ``/docs`` (:mod:`.swagger`).

A model's part of a document is built once per loaded config and kept until
the model reloads (a new config object) or finishes loading (its label and
warmup files are read from a loaded model only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from naiad.core.errors import NaiadError
from naiad.frontends.http.encode import dumps
from naiad.frontends.http.message import Request, Response, json_response
from naiad.frontends.http.openapi import document
from naiad.frontends.http.openapi.document import ModelPart
from naiad.frontends.http.openapi.swagger import SwaggerUi
from naiad.frontends.per_config import PerConfig

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane

SERVER_DOCUMENT = "/openapi.json"


class OpenApi:
    def __init__(self, dp: DataPlane, allow_docs: bool) -> None:
        self.dp = dp
        self.swagger = SwaggerUi() if allow_docs else None
        #: (model, version) -> its part and its document, while its config and readiness hold
        self._parts: PerConfig[tuple[str, str], tuple[ModelPart, bytes]] = PerConfig()
        self._server: tuple[list[ModelPart], bytes] | None = None

    async def model(self, req: Request, name: str, version: str) -> Response:
        return json_response((await self._part(name, version))[1])

    async def server(self, req: Request) -> Response:
        parts: list[ModelPart] = []
        for name in sorted({row.name for row in await self.dp.repository_index()}):
            try:
                parts.append((await self._part(name, ""))[0])
            except NaiadError:  # not loaded, or failed: not served now
                continue
        held = self._server
        if held is not None and len(held[0]) == len(parts):
            if all(a is b for a, b in zip(held[0], parts, strict=True)):
                return json_response(held[1])
        data = dumps(document.server_document(parts))
        self._server = (parts, data)
        return json_response(data)

    async def _part(self, name: str, version: str) -> tuple[ModelPart, bytes]:
        config = self.dp.model_config(name, version)  # NotFound for an unknown model: a 404
        try:
            ready = self.dp.model_ready(name, version)
        except NaiadError:
            ready = False
        key = (name, version)
        held = self._parts.get(key, config, ready)
        if held is not None:
            return held
        config, part = await document.model_part(self.dp, name, version)
        return self._parts.put(key, config, (part, dumps(document.model_document(part))), ready)
