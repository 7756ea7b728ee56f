"""``--allow-openai`` and the restricted-API categories on ``/v1``, and the API under
``naiad.asgi`` called by OpenAI's async client through httpx's ASGI transport."""

from __future__ import annotations

import asyncio
import http.client
import json
from pathlib import Path

import httpx
import openai
import pytest

import naiad.asgi
from frontends.openai.models import build
from naiad import Server

pytestmark = pytest.mark.protocol


def _get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path, headers=headers or {})
    answer = conn.getresponse()
    result = answer.status, json.loads(answer.read())
    conn.close()
    return result


def test_allow_openai_false_serves_no_v1(tmp_path: Path) -> None:
    server = Server(tmp_path, http_port=0, grpc_port=0, allow_metrics=False, allow_openai=False)
    server.start()
    try:
        status, doc = _get(server.http_port, "/v1/models")
        assert status == 404 and doc == {"error": "Not Found"}  # the port's own 404
        conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
        conn.request("GET", "/v2/health/ready")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        server.stop()


def test_restricted_categories_apply(tmp_path: Path) -> None:
    server = Server(tmp_path, http_port=0, grpc_port=0, allow_metrics=False,
                    http_restricted_api=["inference:api-key=s3cret"])  # fmt: skip
    server.start()
    try:
        port = server.http_port
        assert _get(port, "/v1/models")[0] == 200  # metadata is open
        url = f"http://127.0.0.1:{port}/v1"
        with openai.OpenAI(base_url=url, api_key="x", max_retries=0) as client:
            with pytest.raises(openai.PermissionDeniedError) as caught:
                client.completions.create(model="any", prompt="x")
            assert "expecting header 'api-key'" in caught.value.message
        headers = {"api-key": "s3cret"}
        with openai.OpenAI(base_url=url, api_key="x", max_retries=0, default_headers=headers) as ok:
            with pytest.raises(openai.NotFoundError):  # past the check: no such model
                ok.completions.create(model="any", prompt="x")
    finally:
        server.stop()


def test_the_asgi_app_serves_v1(tmp_path: Path) -> None:
    app = naiad.asgi.create_app(build(tmp_path / "models"))

    async def main() -> tuple[str, str]:
        async with app.lifespan():
            transport = httpx.ASGITransport(app=app)
            http_client = httpx.AsyncClient(transport=transport, base_url="http://naiad")
            client = openai.AsyncOpenAI(base_url="http://naiad/v1", api_key="x",
                                        http_client=http_client, max_retries=0)  # fmt: skip
            async with client:
                whole = await client.completions.create(model="words", prompt="a b c")
                stream = await client.chat.completions.create(
                    model="words", messages=[{"role": "user", "content": "d e"}], stream=True
                )
                streamed = "".join([c.choices[0].delta.content or "" async for c in stream])
                return whole.choices[0].text, streamed

    assert asyncio.run(main()) == ("c b a ", "e d ")


def test_models_not_loaded_are_listed_and_loaded_on_demand(tmp_path: Path) -> None:
    """With residency, /v1/models lists what the repository holds, and a chat request
    loads its model, reading its template file from the model's folder."""
    repo = build(tmp_path / "models")
    config = repo / "words" / "config.pbtxt"
    inline = '"{% for m in messages %}{{ m.content }} {% endfor %}"'
    config.write_text(config.read_text().replace(inline, '"template.jinja"'))
    (repo / "words" / "template.jinja").write_text("{{ messages[-1].content }} from file")
    server = Server(repo, http_port=0, grpc_port=0, allow_metrics=False,
                    model_memory_budget=4 << 30)  # fmt: skip
    server.start()
    try:
        url = f"http://127.0.0.1:{server.http_port}/v1"
        assert not server.dataplane.registry.models.get("words")  # type: ignore[attr-defined]
        with openai.OpenAI(base_url=url, api_key="x", max_retries=0) as client:
            assert "words" in {m.id for m in client.models.list()}
            answer = client.chat.completions.create(
                model="words", messages=[{"role": "user", "content": "hi"}]
            )
        assert answer.choices[0].message.content == "file from hi "
    finally:
        server.stop()
