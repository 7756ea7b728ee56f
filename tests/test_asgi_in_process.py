"""``naiad.asgi`` in the test's own event loop, called through httpx's ASGI transport:
the owned server on the caller's loop, a lent server on its own loop thread, a mount
prefix, and what an app that was never started answers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import numpy as np
import pytest

import naiad.asgi
from naiad import Server

pytestmark = pytest.mark.protocol

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "model_repository"
ADD_SUB = {
    "inputs": [
        {"name": "INPUT0", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 4]},
        {"name": "INPUT1", "datatype": "FP32", "shape": [4], "data": [0.5] * 4},
    ]
}


def _models(repo: Path, *names: str) -> Path:
    for name in names:
        shutil.copytree(EXAMPLES / name, repo / name)
    return repo


def _client(app: naiad.asgi.NaiadApp, root_path: str = "") -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, root_path=root_path)
    return httpx.AsyncClient(transport=transport, base_url="http://naiad")


def _outputs(answer: httpx.Response) -> dict[str, list[float]]:
    assert answer.status_code == 200, answer.text
    return {o["name"]: o["data"] for o in answer.json()["outputs"]}


async def test_the_owned_server_runs_on_the_callers_loop_under_a_prefix(repo: Path) -> None:
    app = naiad.asgi.create_app(_models(repo, "add_sub"))
    async with app.lifespan(), _client(app, "/triton") as client:
        assert (await client.get("/triton/v2/health/ready")).status_code == 200
        outputs = _outputs(await client.post("/triton/v2/models/add_sub/infer", json=ADD_SUB))
        assert outputs == {"OUTPUT0": [1.5, 2.5, 3.5, 4.5], "OUTPUT1": [0.5, 1.5, 2.5, 3.5]}
        metadata = (await client.get("/triton/v2/models/add_sub")).json()
        assert metadata["name"] == "add_sub"
        metrics = await client.get("/triton/metrics")
        assert 'nv_inference_count{model="add_sub",version="1"} 1' in metrics.text
        assert (await client.post("/triton/metrics")).status_code == 405
        # the dashboard below the mount point: a relative redirect, its page, its views
        moved = await client.get("/triton/dashboard")
        assert (moved.status_code, moved.headers["location"]) == (301, "dashboard/")
        page = await client.get("/triton/dashboard/")
        assert page.status_code == 200 and 'src="app.js"' in page.text
        live = (await client.get("/triton/dashboard/api/live")).json()
        assert [(m["name"], m["success"]) for m in live["models"]] == [("add_sub", 1)]
    assert not app.server.dataplane.model_ready("add_sub")  # stopped with the lifespan


async def test_an_app_whose_lifespan_never_ran_says_so(repo: Path) -> None:
    app = naiad.asgi.create_app(_models(repo, "add_sub"))
    async with _client(app) as client:
        answer = await client.get("/v2/health/ready")
    assert answer.status_code == 503
    assert "FastAPI(lifespan=naiad_app.lifespan)" in answer.json()["error"]


async def test_a_lent_server_keeps_its_own_loop_thread(repo: Path, serve) -> None:
    server: Server = serve(_models(repo, "add_sub", "repeat"))
    app = naiad.asgi.create_app(server=server)
    async with app.lifespan(), _client(app) as client:  # the lifespan leaves it running
        outputs = _outputs(await client.post("/v2/models/add_sub/infer", json=ADD_SUB))
        np.testing.assert_allclose(outputs["OUTPUT0"], [1.5, 2.5, 3.5, 4.5])
        events = []
        body = {"IN": [3, 4], "DELAY": [1, 1]}
        async with client.stream("POST", "/v2/models/repeat/generate_stream", json=body) as sse:
            assert sse.status_code == 200
            async for line in sse.aiter_lines():
                if line.startswith("data: "):
                    events.append(json.loads(line[6:]))
        assert [(e["OUT"], e["IDX"]) for e in events] == [(3, 0), (4, 1)]
        missing = await client.post("/v2/models/nothing/generate_stream", json={"IN": [1]})
        assert missing.status_code == 404 and "nothing" in missing.json()["error"]
    assert server.model_ready("add_sub")
    assert server.infer(
        "add_sub", {"INPUT0": np.ones(4, np.float32), "INPUT1": np.ones(4, np.float32)}
    )["OUTPUT0"].tolist() == [2, 2, 2, 2]


async def test_a_body_over_the_limit_is_refused(repo: Path) -> None:
    app = naiad.asgi.create_app(_models(repo, "add_sub"), http_max_input_size=64)
    async with app.lifespan(), _client(app) as client:
        answer = await client.post("/v2/models/add_sub/infer", json=ADD_SUB)
        assert answer.status_code == 400
        assert "exceeds the maximum allowed value of 64 bytes" in answer.json()["error"]
        assert (await client.get("/v2/health/live")).status_code == 200


def test_create_app_takes_a_repository_or_a_server(repo: Path) -> None:
    with pytest.raises(TypeError, match="needs a model_repository"):
        naiad.asgi.create_app()
    with pytest.raises(TypeError, match="not both"):
        naiad.asgi.create_app(repo, server=Server(repo))


async def test_the_owned_server_opens_grpc_beside_it_when_asked(repo: Path) -> None:
    import tritonclient.grpc.aio as grpcclient

    app = naiad.asgi.create_app(_models(repo, "add_sub"), grpc_port=0, metrics_path=None)
    async with app.lifespan(), _client(app) as client:
        assert app.server.grpc_port
        grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{app.server.grpc_port}")
        try:
            assert await grpc.is_model_ready("add_sub")
        finally:
            await grpc.close()
        assert (await client.get("/metrics")).status_code == 404  # no such route now
    assert app.server.grpc_port is None
