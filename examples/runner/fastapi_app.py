"""A FastAPI app over a naiad runner, with the Gradio demo at ``/ui``.

    pip install '.[fastapi,gradio]'
    uvicorn fastapi_app:app --app-dir examples/runner --port 8080

The runner lives in the app's lifespan: the models load before the first
request and unload at shutdown, in this process (no separate server).

    curl -X POST localhost:8080/add_sub -H 'content-type: application/json' \\
         -d '{"a": [1, 2, 3, 4], "b": [1, 1, 1, 1]}'
    curl -X POST localhost:8080/classify -H 'content-type: application/json' \\
         -d "{\\"image\\": $(python -c 'import json;print(json.load(open("examples/runner/digits.json"))["3"])')}"
    curl localhost:8080/count?upto=3        # a decoupled model, streamed as lines of JSON
    curl localhost:8080/health/ready ; curl localhost:8080/metrics
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

import naiad
from naiad.integrations import fastapi as naiad_fastapi

REPOSITORY = Path(__file__).resolve().parents[1] / "model_repository"

runner = naiad.Runner("fastapi-demo", model_repository=REPOSITORY)
app = FastAPI(title="naiad + FastAPI", lifespan=naiad_fastapi.lifespan(runner))
app.include_router(naiad_fastapi.router(runner))
naiad_fastapi.add_error_handler(app)  # a bad input answers 400 with naiad's message


class Pair(BaseModel):
    a: list[float]
    b: list[float]


class Digit(BaseModel):
    image: list[list[float]]  # 8x8, ink 0-16 as in digits.json
    top_k: int = 3


@app.post("/add_sub")
async def add_sub(pair: Pair) -> dict[str, list[float]]:
    result = await runner.add_sub.async_run(pair.a, pair.b)
    return {"sum": result["OUTPUT0"].tolist(), "difference": result["OUTPUT1"].tolist()}


@app.post("/classify")
async def classify(digit: Digit) -> dict[str, float]:
    image = np.asarray(digit.image, np.float32)[None] / 16
    top = runner.image_classifier.options(outputs={"PROBABILITIES": digit.top_k})
    result = await top.async_run(image)
    return naiad.runner.classifications(result["PROBABILITIES"])[0]


@app.get("/count")
async def count(upto: int = 3) -> StreamingResponse:
    async def lines() -> AsyncIterator[str]:
        async for answer in runner.repeat.astream(np.arange(1, upto + 1, dtype=np.int32)):
            yield json.dumps({"value": int(answer["OUT"][0])}) + "\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")


try:  # the article's pattern: a Gradio UI next to the API, over the same runner
    import gradio as gr
    from gradio_app import build_demo
except ImportError:
    pass
else:
    app = gr.mount_gradio_app(app, build_demo(runner), path="/ui")
