"""The OpenAPI documents (``/openapi.json``, ``/v2/models/<m>/openapi.json``) and ``/docs``
against a real naiad server with small real models: the documents validate as OpenAPI 3.1
(and, as the /docs page hands them to Swagger UI 4, as 3.0), and every example request
they hold, sent as it is, is answered.

The page itself runs in a browser in ``tests/frontends/test_openapi_browser.py``.
"""

from __future__ import annotations

import copy
import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontends.http import openapi_models
from frontends.http.wire import request

pytestmark = pytest.mark.protocol

MODELS = ("ident", "shout", "warm_file", "warm_random", "words")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return openapi_models.build(tmp_path_factory.mktemp("openapi") / "models")


@pytest.fixture(scope="module")
def port(repo: Path) -> Iterator[int]:
    from naiad import Server

    server = Server(model_repository=repo, http_port=0)
    server.start()
    yield server.http_port  # type: ignore[misc]
    server.stop()


def call(
    port: int, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        data = None if body is None else json.dumps(body).encode()
        sent = {"Content-Type": "application/json"} if data is not None else {}
        return request(conn, method, path, data, {**sent, **(headers or {})})
    finally:
        conn.close()


def document(port: int, path: str) -> dict[str, Any]:
    status, headers, data = call(port, "GET", path)
    assert status == 200, data
    assert headers["content-type"] == "application/json"
    return json.loads(data)  # type: ignore[no-any-return]


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, operation) for every POST with an example request."""
    for path, item in doc["paths"].items():
        post = item.get("post")
        if post is not None:
            yield path, post


def example(op: dict[str, Any]) -> Any:
    return op["requestBody"]["content"]["application/json"]["example"]


def infer_schema(doc: dict[str, Any], model: str) -> dict[str, Any]:
    op = doc["paths"][f"/v2/models/{model}/infer"]["post"]
    return op["requestBody"]["content"]["application/json"]["schema"]  # type: ignore[no-any-return]


def input_schemas(doc: dict[str, Any], model: str) -> dict[str, dict[str, Any]]:
    items = infer_schema(doc, model)["properties"]["inputs"]["items"]["oneOf"]
    return {s["title"]: s for s in items}


def all_paths() -> list[str]:
    return [
        "/openapi.json",
        *(f"/v2/models/{m}/openapi.json" for m in MODELS),
        *(f"/v2/models/{m}/versions/1/openapi.json" for m in MODELS),
    ]


@pytest.mark.parametrize("path", all_paths())
def test_the_documents_are_valid_openapi_31_and_30(port: int, path: str) -> None:
    # in the venv; the "test" extra should name it (until then, skipped without it)
    validators = pytest.importorskip("openapi_spec_validator")
    doc = document(port, path)
    assert doc["openapi"] == "3.1.0"
    validators.OpenAPIV31SpecValidator(doc).validate()
    # /docs tells Swagger UI 4 (3.0 only) that they are 3.0: they must be that too
    older = copy.deepcopy(doc)
    older["openapi"] = "3.0.3"
    validators.OpenAPIV30SpecValidator(older).validate()


def test_the_server_document_has_every_model_and_the_openai_endpoints(port: int) -> None:
    doc = document(port, "/openapi.json")
    assert doc["x-naiad-models"] == sorted(MODELS)
    assert doc["servers"] == [{"url": ".", "description": "this naiad server"}]
    paths = doc["paths"]
    for model in ("ident", "shout", "warm_file", "warm_random"):
        assert f"/v2/models/{model}/infer" in paths
    # a decoupled model streams: generate_stream, not infer (which refuses it)
    assert "/v2/models/words/infer" not in paths
    assert "/v2/models/words/generate_stream" in paths
    # generate for models with text inputs only
    assert "/v2/models/shout/generate" in paths and "/v2/models/ident/generate" not in paths
    for api, route in (("chat", "chat/completions"), ("completions", "completions"),
                       ("embeddings", "embeddings")):  # fmt: skip
        schema = paths[f"/v1/{route}"]["post"]["requestBody"]["content"]["application/json"]
        assert schema["schema"]["properties"]["model"]["enum"] == ["shout"], api


def test_each_example_request_sent_as_it_is_is_answered(port: int) -> None:
    doc = document(port, "/openapi.json")
    sent = 0
    for path, op in operations(doc):
        status, headers, data = call(port, "POST", path, example(op))
        assert status == 200, (path, data)
        sent += 1
        if path.endswith("/generate_stream"):
            assert headers["content-type"].startswith("text/event-stream")
            events = [json.loads(line[6:]) for line in data.decode().split("\n") if line]
            assert [e["word"] for e in events] == ["alpha"]  # the example's one word
            continue
        answer = json.loads(data)
        if path.endswith("/infer"):
            names = {o["name"] for o in answer["outputs"]}
            props = op["responses"]["200"]["content"]["application/json"]["schema"]
            declared = {s["title"] for s in props["properties"]["outputs"]["items"]["oneOf"]}
            assert names == declared, path
        elif path.startswith("/v1/"):
            assert answer["model"] == "shout"
    assert sent == 4 + 1 + 1 + 3  # infer x4, generate, generate_stream, OpenAI x3


def test_a_model_document_answers_the_same_examples(port: int) -> None:
    for model in MODELS:
        for path, op in operations(document(port, f"/v2/models/{model}/versions/1/openapi.json")):
            assert "/versions/1/" in path
            status, _, data = call(port, "POST", path, example(op))
            assert status == 200, (path, data)


def test_inputs_have_their_datatype_shape_batch_and_content_type(port: int) -> None:
    doc = document(port, "/v2/models/ident/openapi.json")
    assert doc["servers"][0]["url"] == "../../.."  # the root, from the document's address
    assert doc["info"]["title"] == "ident"
    schema = input_schemas(doc, "ident")["INPUT0"]
    assert schema["x-naiad-datatype"] == "FP32"
    assert schema["x-naiad-shape"] == [-1, 16]  # the batch dimension first
    assert schema["x-naiad-content-type"] == "np"
    assert schema["properties"]["datatype"]["enum"] == ["FP32"]
    assert schema["properties"]["shape"]["minItems"] == 2
    assert "the first dimension is the batch" in schema["description"]
    assert "naiad.content_type.INPUT0" in schema["description"]
    # no batching: the shape is the config's dims
    warm = input_schemas(document(port, "/v2/models/warm_file/openapi.json"), "warm_file")
    assert warm["INPUT1"]["x-naiad-shape"] == [4]
    assert "x-naiad-content-type" not in warm["INPUT1"]


def test_an_output_with_a_label_file_lists_its_labels_and_the_example_classifies(
    port: int,
) -> None:
    doc = document(port, "/v2/models/ident/openapi.json")
    op = doc["paths"]["/v2/models/ident/infer"]["post"]
    answer = op["responses"]["200"]["content"]["application/json"]["schema"]
    (output,) = answer["properties"]["outputs"]["items"]["oneOf"]
    assert output["x-naiad-labels"] == openapi_models.LABELS
    assert example(op) == {
        "inputs": [{"name": "INPUT0", "shape": [1, 16], "datatype": "FP32",
                    "data": list(range(1, 17))}],  # the dashboard's example values
        "outputs": [{"name": "OUTPUT0", "parameters": {"classification": 3}}],
    }  # fmt: skip
    status, _, data = call(port, "POST", "/v2/models/ident/infer", example(op))
    assert status == 200
    top = json.loads(data)["outputs"][0]["data"]
    assert top == ["16.000000:15:class_15", "15.000000:14:class_14", "14.000000:13:class_13"]


def test_the_example_comes_from_the_warmup_sample(port: int) -> None:
    doc = document(port, "/v2/models/warm_file/openapi.json")
    op = doc["paths"]["/v2/models/warm_file/infer"]["post"]
    assert "warmup sample 'from_file'" in op["description"]
    inputs = {i["name"]: i for i in example(op)["inputs"]}
    assert inputs["INPUT0"]["data"] == openapi_models.WARM_INPUT0.tolist()  # its file
    assert inputs["INPUT1"] == {"name": "INPUT1", "shape": [4], "datatype": "INT32",
                                "data": [0, 0, 0, 0]}  # fmt: skip
    # random data: what the warmup made (seeded), a batch of one of its dims
    doc = document(port, "/v2/models/warm_random/openapi.json")
    (sent,) = example(doc["paths"]["/v2/models/warm_random/infer"]["post"])["inputs"]
    assert sent["shape"] == [1, 5]
    expected = np.round(np.random.default_rng(0).random([5]), 4).tolist()
    assert sent["data"] == expected


def test_the_openai_endpoints_are_in_the_documents_of_the_models_that_opt_in(
    port: int,
) -> None:
    shout = document(port, "/v2/models/shout/openapi.json")
    assert {"/v1/chat/completions", "/v1/completions", "/v1/embeddings"} <= set(shout["paths"])
    assert not any(
        p.startswith("/v1/") for p in document(port, "/v2/models/words/openapi.json")["paths"]
    )
    # a version's document is that version's v2 endpoints only (/v1 reaches the default)
    versioned = document(port, "/v2/models/shout/versions/1/openapi.json")
    assert not any(p.startswith("/v1/") for p in versioned["paths"])
    op = shout["paths"]["/v1/chat/completions"]["post"]
    status, _, data = call(port, "POST", "/v1/chat/completions", example(op))
    assert status == 200
    # the plain chat template ("user: Hello", then "assistant:"), upper-cased
    assert json.loads(data)["choices"][0]["message"]["content"] == "USER: HELLO\nASSISTANT:"


def test_unknown_models_and_versions_are_404(port: int) -> None:
    for path in ("/v2/models/nope/openapi.json", "/v2/models/ident/versions/7/openapi.json"):
        status, _, data = call(port, "GET", path)
        assert status == 404, path
        assert "unknown model" in json.loads(data)["error"]
    status, _, _ = call(port, "POST", "/openapi.json", {})
    assert status == 405


def test_the_metadata_restriction_holds_for_the_documents(repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    server = serve(repo, http=True, http_restricted_api=("metadata:api-key=secret",))
    port = server.http_port
    for path in ("/openapi.json", "/v2/models/ident/openapi.json"):
        status, _, data = call(port, "GET", path)
        assert status == 403
        assert json.loads(data)["error"] == "This API is restricted, expecting header 'api-key'"
        status, _, _ = call(port, "GET", path, headers={"api-key": "secret"})
        assert status == 200
    # the page's files hold no server data: not restricted
    assert call(port, "GET", "/docs/")[0] == 200


def test_a_reloaded_model_gets_a_new_document(tmp_path: Path, serve) -> None:  # type: ignore[no-untyped-def]
    repo = openapi_models.build(tmp_path / "models")
    server = serve(repo, http=True, model_control_mode="explicit", load_models=("ident",))
    port = server.http_port
    before = input_schemas(document(port, "/v2/models/ident/openapi.json"), "ident")["INPUT0"]
    assert before["x-naiad-content-type"] == "np"
    config = repo / "ident" / "config.pbtxt"
    config.write_text(config.read_text().replace('string_value: "np"', 'string_value: "json"'))
    assert call(port, "POST", "/v2/repository/models/ident/load", {})[0] == 200
    after = input_schemas(document(port, "/v2/models/ident/openapi.json"), "ident")["INPUT0"]
    assert after["x-naiad-content-type"] == "json"
    assert call(port, "POST", "/v2/repository/models/ident/unload", {})[0] == 200
    assert call(port, "GET", "/v2/models/ident/openapi.json")[0] in (400, 404, 503)
    assert "ident" not in document(port, "/openapi.json")["x-naiad-models"]


def test_docs_serves_swagger_ui_from_the_package(port: int) -> None:
    status, headers, _ = call(port, "GET", "/docs")
    assert (status, headers["location"]) == (301, "docs/")
    status, headers, page = call(port, "GET", "/docs/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    policy = headers["content-security-policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    text = page.decode()
    for name in ("swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js",
                 "naiad-docs.js", "naiad-docs.css"):  # fmt: skip
        assert f'"{name}"' in text
        status, _, data = call(port, "GET", f"/docs/{name}")
        assert status == 200 and data, name
    assert "http" not in text.replace("http-equiv", "")  # nothing from the internet
    assert call(port, "GET", "/docs/nothing.js")[0] == 404


def test_without_the_docs_extra_docs_says_how_to_install_it(
    repo: Path,
    serve,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setitem(sys.modules, "swagger_ui_bundle", None)  # import fails
    port = serve(repo, http=True).http_port
    status, headers, data = call(port, "GET", "/docs/")
    assert status == 501
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert "pip install 'naiad[docs]'" in data.decode()
    assert call(port, "GET", "/openapi.json")[0] == 200  # the documents need no extra


def test_allow_docs_false_leaves_the_documents(repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    port = serve(repo, http=True, allow_docs=False).http_port
    assert call(port, "GET", "/docs/")[0] == 404
    assert call(port, "GET", "/openapi.json")[0] == 200


def test_an_allowed_origin_reads_the_documents_and_sends_the_examples(repo: Path, serve) -> None:  # type: ignore[no-untyped-def]
    origin = "http://app.example:3000"
    port = serve(repo, http=True, http_cors_allow_origins=(origin,)).http_port
    status, headers, data = call(port, "GET", "/openapi.json", headers={"Origin": origin})
    assert status == 200 and headers["access-control-allow-origin"] == origin
    op = json.loads(data)["paths"]["/v2/models/ident/infer"]["post"]
    preflight = {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    status, headers, _ = call(port, "OPTIONS", "/v2/models/ident/infer", headers=preflight)
    assert status == 200
    assert headers["access-control-allow-origin"] == origin
    assert "POST" in headers["access-control-allow-methods"]
    assert "content-type" in headers["access-control-allow-headers"].lower()
    status, headers, _ = call(port, "POST", "/v2/models/ident/infer", example(op),
                              headers={"Origin": origin})  # fmt: skip
    assert status == 200 and headers["access-control-allow-origin"] == origin
    # another origin's page may read nothing (no CORS headers) and run nothing
    other = {"Origin": "http://elsewhere.example"}
    status, headers, _ = call(port, "GET", "/openapi.json", headers=other)
    assert "access-control-allow-origin" not in headers
    status, _, _ = call(port, "POST", "/v2/models/ident/infer", example(op), headers=other)
    assert status == 403


def test_the_example_script_sends_every_example(port: int) -> None:
    script = Path(__file__).resolve().parents[3] / "examples" / "openapi" / "try_examples.py"
    done = subprocess.run(
        [sys.executable, str(script), "--url", f"127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "POST /v2/models/ident/infer: 200" in done.stdout
    assert "POST /v1/embeddings: 200" in done.stdout
