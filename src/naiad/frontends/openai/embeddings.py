"""``/v1/embeddings``: each input string is one v2 request, so the model's dynamic batcher
batches a request's strings together with other clients' ones."""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING, Any

from naiad.frontends.http.encode import dumps
from naiad.frontends.http.message import Response, json_response
from naiad.frontends.openai.errors import BadField

if TYPE_CHECKING:
    import numpy as np

    from naiad.engine.dataplane import DataPlane
    from naiad.frontends.openai.binding import Binding
    from naiad.frontends.openai.requests import EmbeddingRequest


async def answer(dp: DataPlane, binding: Binding, request: EmbeddingRequest) -> Response:
    results = await asyncio.gather(*(_one(dp, binding, text) for text in request.inputs))
    data: list[dict[str, Any]] = []
    prompt_tokens = 0
    for index, (vector, tokens) in enumerate(results):
        if request.dimensions is not None and request.dimensions != vector.size:
            raise BadField("dimensions", f"The model '{request.model}' gives {vector.size} "
                           f"dimensions; it cannot give {request.dimensions}.")  # fmt: skip
        embedding: Any
        if request.base64:  # what OpenAI's Python client asks for by default
            embedding = base64.b64encode(vector.astype("<f4").tobytes()).decode()
        else:
            embedding = vector.tolist()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
        prompt_tokens += tokens
    doc = {
        "object": "list",
        "data": data,
        "model": request.model,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    }
    return json_response(dumps(doc))


async def _one(dp: DataPlane, binding: Binding, text: str) -> tuple[np.ndarray, int]:
    response = await dp.infer(binding.request(text, None, ""))
    return binding.embedding(response), binding.read(response).prompt_tokens or 0
