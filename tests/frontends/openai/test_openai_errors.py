"""Bad requests get OpenAI's error shape with ``param`` naming the field, and nothing else
breaks; a full queue is a 429; a client that goes away mid-stream stops the model."""

from __future__ import annotations

import http.client
import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.protocol


def _post(
    port: int, path: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn.request("POST", path, body=data, headers=headers or {})
    answer = conn.getresponse()
    status, text = answer.status, answer.read()
    conn.close()
    return status, json.loads(text)


def _error(port: int, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    status, doc = _post(port, path, body)
    assert set(doc) == {"error"} and set(doc["error"]) == {"message", "type", "param", "code"}
    return status, doc["error"]


CHAT = "/v1/chat/completions"
USER = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        ({"messages": USER}, "model", "Missing required parameter: 'model'"),
        ({"model": "words"}, "messages", "Missing required parameter: 'messages'"),
        ({"model": "words", "messages": []}, "messages", "empty array"),
        ({"model": "words", "messages": "hi"}, "messages", "expected an array, but got a string"),
        ({"model": 3, "messages": USER}, "model", "expected a string, but got an integer"),
        ({"model": "words", "messages": [{"role": "robot", "content": "x"}]}, "messages[0].role",
         "Invalid value: 'robot'"),
        ({"model": "words", "messages": [{"role": "user"}]}, "messages[0].content", "Missing"),
        ({"model": "words", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
         "messages[0].content[0].type", "'text' content parts only"),
        ({"model": "words", "messages": USER, "temperature": "hot"}, "temperature",
         "expected a decimal, but got a string"),
        ({"model": "words", "messages": USER, "temperature": 3}, "temperature", "maximum value"),
        ({"model": "words", "messages": USER, "max_tokens": 0}, "max_tokens", "minimum value"),
        ({"model": "words", "messages": USER, "n": 1.5}, "n", "expected an integer"),
        ({"model": "words", "messages": USER, "stop": ["a", "b", "c", "d", "e"]}, "stop",
         "maximum length 4"),
        ({"model": "words", "messages": USER, "stream": "yes"}, "stream", "expected a boolean"),
        ({"model": "words", "messages": USER, "stream_options": {"include_usage": True}},
         "stream_options", "only allowed when 'stream' is true"),
        ({"model": "words", "messages": USER, "top_logprobs": 2}, "top_logprobs", "'logprobs'"),
    ],
)  # fmt: skip
def test_bad_chat_fields(port: int, body: dict[str, Any], param: str, words: str) -> None:
    status, error = _error(port, CHAT, body)
    assert status == 400, error
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert words in error["message"]


def test_bad_bodies_and_other_endpoints(port: int) -> None:
    status, error = _error(port, CHAT, b"{not json")
    assert status == 400 and "failed to parse" in error["message"]
    status, error = _error(port, CHAT, b"[1]")
    assert status == 400 and "JSON object" in error["message"]
    status, error = _error(port, "/v1/completions", {"model": "words", "prompt": [1, 2]})
    assert (status, error["param"]) == (400, "prompt")
    status, error = _error(port, "/v1/embeddings", {"model": "embedder", "input": [""]})
    assert (status, error["param"]) == (400, "input")
    status, error = _error(port, "/v1/embeddings", {"model": "embedder", "input": "a",
                                                   "encoding_format": "hex"})  # fmt: skip
    assert (status, error["param"]) == (400, "encoding_format")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", CHAT)
    answer = conn.getresponse()
    assert answer.status == 405 and "not allowed" in json.loads(answer.read())["error"]["message"]
    conn.request("GET", "/v1/nothing")
    answer = conn.getresponse()
    assert answer.status == 404 and json.loads(answer.read())["error"]["type"]
    conn.close()


def test_models_that_cannot_answer(port: int) -> None:
    status, error = _error(port, CHAT, {"model": "nope", "messages": USER})
    assert (status, error["code"]) == (404, "model_not_found")
    assert "'nope' does not exist" in error["message"]
    # a model that did not opt in, and one that offers other APIs
    status, error = _error(port, "/v1/completions", {"model": "plain", "prompt": "x"})
    assert (status, error["code"]) == (404, "model_not_found")
    assert "offers: none" in error["message"]
    status, error = _error(port, "/v1/embeddings", {"model": "words", "input": "x"})
    assert status == 404 and "offers: chat, completions" in error["message"]
    # a mapping that names an input the model lacks: the server's fault, said plainly
    status, error = _error(port, "/v1/completions", {"model": "broken", "prompt": "x"})
    assert (status, error["type"]) == (500, "server_error")
    assert "'no_such_input', which is not an input" in error["message"]
    # and the server is unaffected
    status, doc = _post(port, "/v1/completions", {"model": "words", "prompt": "a b"})
    assert (status, doc["choices"][0]["text"]) == (200, "b a ")


def test_a_full_queue_is_429(port: int) -> None:
    status, error = _error(port, "/v1/completions", {"model": "narrow", "prompt": "x", "n": 4})
    assert (status, error["type"], error["code"]) == (
        429,
        "rate_limit_error",
        "rate_limit_exceeded",
    )
    assert "Exceeds maximum queue size" in error["message"]
    status, doc = _post(port, "/v1/completions", {"model": "narrow", "prompt": "x"})
    assert (status, doc["choices"][0]["text"]) == (200, "X [batch 1]")


def test_disconnect_mid_stream_stops_the_model(port: int, log_file: Path) -> None:
    words = " ".join(f"w{i}" for i in range(40))
    body = {"model": "words", "prompt": words, "max_tokens": 40, "stream": True,
            "delay": 0.05, "log": str(log_file)}  # fmt: skip
    sock = socket.create_connection(("127.0.0.1", port))
    data = json.dumps(body).encode()
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(data), data))  # fmt: skip
    seen = b""
    while seen.count(b"data: ") < 3:
        seen += sock.recv(65536)
    sock.close()
    deadline = time.monotonic() + 10
    count = -1
    while time.monotonic() < deadline:  # until the model has stopped writing
        time.sleep(0.5)
        now = len(log_file.read_text().split())
        if now == count:
            break
        count = now
    assert 3 <= count < 40, count  # it stopped early: request.is_cancelled() was true
    status, doc = _post(port, "/v1/completions", {"model": "words", "prompt": "a b"})
    assert (status, doc["choices"][0]["text"]) == (200, "b a ")


def test_errors_after_the_stream_started_are_events(port: int) -> None:
    """A model that fails once it has streamed: an error event, then [DONE]; before any
    event, an ordinary error answer."""
    body = {"model": "words", "prompt": "x boom", "stream": True}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/v1/completions", body=json.dumps(body).encode())
    answer = conn.getresponse()
    status, text = answer.status, answer.read().decode()
    conn.close()
    assert status == 200
    events = [json.loads(e[6:]) if e != "data: [DONE]" else e for e in text.split("\n\n") if e]
    assert events[0]["choices"][0]["text"] == "boom "
    assert events[1]["error"] == {"message": "the model blew up", "type": "server_error",
                                  "param": None, "code": None}  # fmt: skip
    assert events[2:] == ["data: [DONE]"]
    body["stream"] = False
    status, error = _error(port, "/v1/completions", body)
    assert (status, error["message"]) == (500, "the model blew up")
