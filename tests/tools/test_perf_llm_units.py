"""naiad perf's LLM measurements, piece by piece: server-sent events cut anywhere, what
each OpenAI or generate_stream event counts for, the figures from known timings, and
the flags that go together or not."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import pytest

from naiad.tools.perf import command
from naiad.tools.perf.llm.command import settings_from_args
from naiad.tools.perf.llm.figures import level_result, span_s
from naiad.tools.perf.llm.http import Reader, message
from naiad.tools.perf.llm.prompts import WORDS, prompts
from naiad.tools.perf.llm.settings import LlmSettings
from naiad.tools.perf.llm.sse import SseConnection
from naiad.tools.perf.llm.streams import Generation
from naiad.tools.perf.settings import PerfError

pytestmark = pytest.mark.unit

MS = 1_000_000


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = False

    def write(self, data: Any) -> None:
        self.written += bytes(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


async def exchange(response: bytes, cut: int) -> tuple[int, bytes, list[bytes]]:
    """Post to a connection that receives ``response`` in pieces of ``cut`` bytes."""
    connection = SseConnection()
    connection.connection_made(FakeTransport())
    events: list[bytes] = []
    post = connection.post(b"POST / HTTP/1.1\r\n\r\n", lambda data, _: events.append(data))
    answer = asyncio.ensure_future(post)
    await asyncio.sleep(0)
    for at in range(0, len(response), cut):
        connection.data_received(response[at : at + cut])
    status, body = await answer
    return status, body, events


def chunked(body: bytes, size: int) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    framed = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts)
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + framed + b"0\r\n\r\n")  # fmt: skip


BODY = (b'data: {"a": 1}\n\n: a comment\n\ndata: {"b":\ndata: 2}\r\n\r\n'
        b"event: x\ndata: [DONE]\n\n")  # fmt: skip


@pytest.mark.parametrize("cut", [1, 3, 7, 1000])
@pytest.mark.parametrize("size", [1, 5, 1000])
async def test_events_of_a_chunked_stream_cut_anywhere(cut: int, size: int) -> None:
    status, body, events = await exchange(chunked(BODY, size), cut)
    assert (status, body) == (200, b"")
    assert events == [b'{"a": 1}', b'{"b":\n2}', b"[DONE]"]


async def test_a_sized_body_a_last_event_without_a_blank_line_and_an_error_status() -> None:
    text = b'data: {"a": 1}\n\ndata: {"b": 2}'
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(text)
    assert (await exchange(head + text, 4))[2] == [b'{"a": 1}', b'{"b": 2}']
    error = b'{"error": {"message": "no such model"}}'
    status, body, events = await exchange(
        b"HTTP/1.1 404 Not Found\r\nContent-Length: %d\r\n\r\n" % len(error) + error, 5
    )
    assert (status, events) == (404, [])
    assert message(body, status) == "no such model"
    assert message(b'data: {"error":"asked to fail"}\n\n', 400) == "asked to fail"
    assert message(b"", 502) == "HTTP 502"


def chunk(**fields: Any) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion.chunk", **fields}).encode()


def test_what_an_openai_chat_stream_counts() -> None:
    reader = Reader("chat")
    events = [
        chunk(choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}}]),
        chunk(choices=[{"index": 0, "delta": {"content": "Hel"}}]),
        chunk(choices=[{"index": 0, "delta": {"content": "lo"}}], usage=None),
        chunk(choices=[{"index": 0, "delta": {}, "finish_reason": "length"}]),
        chunk(choices=[], usage={"prompt_tokens": 12, "completion_tokens": 3}),
        b"[DONE]",
    ]
    for n, data in enumerate(events):
        reader.on_event(data, (n + 1) * MS)
    got = reader.generation(0, 9 * MS)
    # The first and last chunks with content; usage's count of tokens and of the prompt.
    assert (got.first_ns, got.last_ns, got.end_ns) == (2 * MS, 3 * MS, 9 * MS)
    assert (got.tokens, got.prompt_tokens) == (3, 12)
    # No usage (or a count of 0): the chunks with content; the prompt: not known.
    reader = Reader("completions")
    for n, text in enumerate(["", "a", "b", ""]):
        reader.on_event(chunk(choices=[{"index": 0, "text": text}]), (n + 1) * MS)
    reader.on_event(chunk(choices=[], usage={"prompt_tokens": 0, "completion_tokens": 0}), 0)
    got = reader.generation(0, 5 * MS)
    assert (got.first_ns, got.last_ns, got.tokens, got.prompt_tokens) == (2 * MS, 3 * MS, 2, 0)


def test_every_generate_stream_event_is_a_token_and_an_error_fails_the_request() -> None:
    reader = Reader("generate")
    for n in range(4):
        reader.on_event(b'{"model_name": "m", "text_output": "w"}', (n + 1) * MS)
    assert reader.generation(0, 4 * MS).tokens == 4
    reader.on_event(b'{"error": "out of memory"}', 5 * MS)
    reader.on_event(b'{"text_output": "late"}', 6 * MS)
    assert reader.error == "out of memory"
    reader = Reader("chat")
    reader.on_event(b"not json", 0)
    assert "not JSON" in reader.error


def test_the_figures_of_known_generations() -> None:
    # Two requests of 5 tokens, one of a single token, one with no output at all.
    generations = [
        Generation(start_ns=0, first_ns=20 * MS, last_ns=60 * MS, end_ns=61 * MS, tokens=5),
        Generation(start_ns=10 * MS, first_ns=40 * MS, last_ns=120 * MS, end_ns=121 * MS,
                   tokens=5, prompt_tokens=7),
        Generation(start_ns=50 * MS, first_ns=70 * MS, last_ns=70 * MS, end_ns=71 * MS, tokens=1),
        Generation(start_ns=60 * MS, first_ns=0, last_ns=0, end_ns=80 * MS, tokens=0),
    ]  # fmt: skip
    assert span_s(generations) == pytest.approx(0.120)
    result = level_result("concurrency", 2, generations, 2.0, cpu_s=0.5)
    assert result.requests == 4 and result.empty == 1
    assert result.request_throughput == 2.0  # 4 requests in 2 s, the empty one included
    assert result.output_token_throughput == 5.5  # 11 tokens in 2 s
    assert result.ttft_ms is not None and result.ttft_ms.avg == pytest.approx(70 / 3)
    assert (result.ttft_ms.min, result.ttft_ms.max) == pytest.approx((20, 30))
    assert result.latency_ms is not None and result.latency_ms.max == pytest.approx(110)
    # (latency - TTFT) / (tokens - 1), for requests of two tokens or more.
    assert result.itl_ms is not None
    assert (result.itl_ms.min, result.itl_ms.max) == pytest.approx((10, 20))
    assert result.output_tokens is not None and result.output_tokens.avg == pytest.approx(11 / 3)
    assert result.input_tokens is not None and result.input_tokens.avg == 7
    assert result.client_cpu_percent == 25
    assert level_result("rate", 1, generations[3:], 1.0).ttft_ms is None


def test_synthetic_prompts_are_distinct_and_of_the_words_asked() -> None:
    texts = prompts(LlmSettings(endpoint_type="chat", prompt_tokens=12, num_prompts=5))
    assert len(set(texts)) == 5
    assert all(len(t.split()) == 12 and set(t.split()) <= set(WORDS) for t in texts)
    assert prompts(LlmSettings(endpoint_type="chat", prompt="hi")) == ["hi"]


def test_input_files_in_genai_perfs_jsonl_or_plain_lines(tmp_path) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_text('{"text": "first prompt"}\n\nsecond prompt\n')
    assert prompts(LlmSettings(input_file=str(path))) == ["first prompt", "second prompt"]
    path.write_text('{"prompt": "no text"}\n')
    with pytest.raises(PerfError, match='prompts.jsonl:1: no "text" string'):
        prompts(LlmSettings(input_file=str(path)))


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="naiad perf")
    command.add_arguments(parser)
    return parser.parse_args(["-m", "lm", *argv])


def test_the_flags_of_an_llm_measurement() -> None:
    perf, llm = settings_from_args(parsed(
        "--endpoint-type", "chat", "--synthetic-input-tokens-mean", "200",
        "--output-tokens-mean", "64", "--num-dataset-entries", "9", "--request-count", "30",
        "--warmup-request-count", "2", "--extra-inputs", "ignore_eos:true",
        "--extra-inputs", "stop:END", "--concurrency-range", "1:4:3", "-u", "h:9000",
    ))  # fmt: skip
    assert llm == LlmSettings(endpoint_type="chat", prompt_tokens=200, max_tokens=64,
                              num_prompts=9, request_count=30, warmup_request_count=2,
                              extra_inputs={"ignore_eos": True, "stop": "END"})  # fmt: skip
    assert (perf.address, perf.concurrency, llm.path(perf.model)) == (
        "h:9000",
        [1, 4],
        "/v1/chat/completions",
    )
    assert LlmSettings(endpoint_type="generate").path("a/b") == "/v2/models/a%2Fb/generate_stream"
    assert LlmSettings(endpoint_type="chat", endpoint="v1/x").path("m") == "/v1/x"
    # gRPC: -u's default port and the --ssl-grpc-* files are gRPC's.
    args = parsed("--endpoint-type", "grpc-stream", "--ssl-grpc-use-ssl",
                  "--ssl-grpc-root-certifications-file", "ca.pem")  # fmt: skip
    perf, _ = settings_from_args(args)
    assert perf.address == "localhost:8001"
    assert perf.ssl == {"root": "ca.pem", "key": "", "cert": ""}


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--request-count", "3"], "--request-count needs --endpoint-type"),
        (["--endpoint-type", "chat", "--shape", "X:1"], "--shape does not apply"),
        (["--endpoint-type", "chat", "-i", "grpc"], "-i does not apply"),
        (["--endpoint-type", "chat", "--prompt", "a", "--input-file", "f"], "give one"),
        (["--endpoint-type", "grpc-stream", "--endpoint", "/x"], "--endpoint is an HTTP path"),
        (["--endpoint-type", "chat", "--extra-inputs", "novalue"], "expected NAME:VALUE"),
    ],
)  # fmt: skip
def test_flags_that_do_not_go_together(argv: list[str], said: str) -> None:
    args = parsed(*argv)
    with pytest.raises(PerfError, match=said):
        if args.endpoint_type:
            settings_from_args(args)
        else:
            command.settings_from_args(args)
