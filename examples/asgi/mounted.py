"""Triton's REST protocol mounted under ``/triton`` in a FastAPI app of your own.

    pip install . fastapi uvicorn        # from the checkout's root
    uvicorn mounted:app --app-dir examples/asgi --port 8080

    curl localhost:8080/hello
    curl localhost:8080/triton/v2/models/add_sub
    curl -X POST localhost:8080/triton/v2/models/add_sub/infer -d \\
      '{"inputs": [{"name": "INPUT0", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 4]},
                   {"name": "INPUT1", "datatype": "FP32", "shape": [4], "data": [1, 1, 1, 1]}]}'

and ``tritonclient.http.InferenceServerClient("localhost:8080/triton")``
works unchanged.  A mounted app gets no lifespan events from its parent, so
the parent's lifespan starts and stops naiad's server (loading the models
before the first request, stopping the Python models' processes at exit).
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI

import naiad.asgi

REPOSITORY = os.environ.get(
    "NAIAD_MODEL_REPOSITORY", str(Path(__file__).resolve().parents[1] / "model_repository")
)

triton = naiad.asgi.create_app(model_repository=REPOSITORY)
app = FastAPI(title="my service", lifespan=triton.lifespan)
app.mount("/triton", triton)


@app.get("/hello")
async def hello() -> dict[str, object]:
    """A route of the app itself, beside the mounted protocol."""
    return {"hello": "world", "models_ready": triton.server.is_ready()}
