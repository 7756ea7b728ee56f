"""The tools' one HTTP client against a naiad server: the calls naiad perf and naiad
analyze make, and each failure as one exception carrying the server's own message."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from support import onnx_models
from support.onnx_models import write_config

from naiad.tools.analyze.errors import AnalyzeError
from naiad.tools.analyze.server import LoadFailed, Server
from naiad.tools.client import HttpClient, ServerError, Unreachable, split_url

pytestmark = pytest.mark.protocol

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model_repository"


@pytest.fixture
def server(repo: Path, serve):
    onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx", shape=("batch", 4))
    write_config(repo / "add_sub", "max_batch_size: 8\n")
    shutil.copytree(EXAMPLES / "repeat", repo / "repeat")
    return serve(repo, http=True, model_control_mode="explicit", metrics_port=0)


def client(server, **how) -> HttpClient:
    return HttpClient(f"127.0.0.1:{server.http_port}", **how)


def test_load_then_config_then_an_unknown_models_load_is_the_servers_message(server):
    http = client(server)

    async def calls():
        await http.call("POST", "/v2/repository/models/add_sub/load", {})
        config = await http.json("GET", "/v2/models/add_sub/config")
        with pytest.raises(ServerError) as refused:
            await http.call("POST", "/v2/repository/models/nope/load", {})
        # The same call, its raw answer: the exception carries the body's error as it is.
        status, body = await http.request("POST", "/v2/repository/models/nope/load", {})
        return config, refused.value, status, body

    config, refused, status, body = asyncio.run(calls())
    assert config["name"] == "add_sub" and config["max_batch_size"] == 8
    assert refused.status == status >= 400
    assert refused.message == json.loads(body)["error"]
    assert refused.message.startswith("failed to load 'nope'")


def test_a_config_override_the_server_refuses(server):
    http = client(server)
    override = {"parameters": {"config": '{"max_batch_size": "many"}'}}
    with pytest.raises(ServerError) as refused:
        asyncio.run(http.call("POST", "/v2/repository/models/add_sub/load", override))
    assert refused.value.status >= 400
    # The server's message, not the JSON around it.
    assert refused.value.message.startswith("failed to load 'add_sub'")
    assert "max_batch_size" in refused.value.message


def test_naiad_analyzes_control_calls_go_through_it(server):
    analyzed = Server(f"127.0.0.1:{server.http_port}", None, "")
    assert analyzed.live()
    analyzed.load("add_sub", '{"max_batch_size": 4}')
    assert analyzed.served_config("add_sub")["max_batch_size"] == 4
    with pytest.raises(LoadFailed, match="nope"):
        analyzed.load("nope")


def test_metrics_on_the_metrics_port(server):
    address, path, tls = split_url(f"http://127.0.0.1:{server.metrics_port}/metrics")
    assert (path, tls) == ("/metrics", False)
    text = asyncio.run(HttpClient(address).call("GET", path)).decode()
    assert "# TYPE nv_cpu_memory_used_bytes gauge" in text


def test_a_chunked_answer_is_read_whole(server):
    """generate_stream answers in chunks (server-sent events), one per response."""
    http = client(server)

    async def calls():
        await http.call("POST", "/v2/repository/models/repeat/load", {})
        return await http.call("POST", "/v2/models/repeat/generate_stream", {"IN": [7, 8, 9]})

    events = [e for e in asyncio.run(calls()).decode().split("\n\n") if e.strip()]
    assert len(events) >= 3 and all(e.startswith("data: ") for e in events)
    assert '"OUT":9,' in events[2].replace(" ", "")


def test_no_server_is_unreachable_and_a_gone_server_too(server, repo):
    with pytest.raises(Unreachable):
        asyncio.run(HttpClient("127.0.0.1:1", timeout_s=5).call("GET", "/v2/health/live"))
    gone = Server(f"127.0.0.1:{server.http_port}", None, "")
    server.stop()
    assert not gone.live()
    with pytest.raises(AnalyzeError, match="cannot reach naiad at 127.0.0.1"):
        gone.load("add_sub")
