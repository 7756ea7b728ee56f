"""Streamed generation over HTTP: OpenAI's chat and completions, Triton's generate_stream.

Each request is a JSON body, encoded once per prompt; each stream is a
keep-alive :class:`~naiad.tools.perf.llm.sse.SseConnection` (dialled again
when the server closed it between requests).  What an event means:

- OpenAI (``--endpoint-type chat|completions``): a chunk whose
  ``choices[0].delta.content`` (chat) or ``choices[0].text`` (completions)
  is not empty carries output; the role-only first chunk, the finish chunk
  and the usage chunk do not.  The output tokens are ``usage.completion_tokens``
  (asked for with ``stream_options.include_usage``), else the chunks that
  carried output.  ``data: [DONE]`` ends the stream.
- Triton's generate_stream: every event is one response of the decoupled
  model, and one token.

An event with an ``error`` fails the request with the server's message.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import quote

from naiad.tools.client import HttpClient, ServerError, Unreachable, within
from naiad.tools.perf.llm.settings import LlmSettings
from naiad.tools.perf.llm.sse import SseConnection
from naiad.tools.perf.llm.streams import Generation
from naiad.tools.perf.settings import PerfError, PerfSettings
from naiad.tools.perf.targets import RequestFailed
from naiad.tools.perf.targets.http import ssl_context


class Reader:
    """The events of one response: which carried output, and when."""

    def __init__(self, endpoint_type: str) -> None:
        self.field = {"chat": "delta", "completions": "text"}.get(endpoint_type)
        self.first_ns = 0
        self.last_ns = 0
        self.chunks = 0
        self.usage: dict[str, Any] = {}
        self.error = ""

    def on_event(self, data: bytes, now: int) -> None:
        if data == b"[DONE]" or self.error:
            return
        try:
            doc = json.loads(data)
        except ValueError:
            self.error = f"the server sent an event that is not JSON: {data[:80]!r}"
            return
        if not isinstance(doc, dict):
            return
        if doc.get("error") is not None:
            error = doc["error"]
            self.error = str(error.get("message", error) if isinstance(error, dict) else error)
            return
        if self.field is not None:
            if isinstance(doc.get("usage"), dict):
                self.usage = doc["usage"]
            if not self._has_output(doc):
                return
        self.chunks += 1
        self.last_ns = now
        if not self.first_ns:
            self.first_ns = now

    def _has_output(self, doc: dict[str, Any]) -> bool:
        choices = doc.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return False
        if self.field == "delta":
            delta = choices[0].get("delta")
            return isinstance(delta, dict) and bool(delta.get("content"))
        return bool(choices[0].get("text"))

    def generation(self, start_ns: int, end_ns: int) -> Generation:
        tokens = self.usage.get("completion_tokens")
        prompt = self.usage.get("prompt_tokens")
        return Generation(
            start_ns=start_ns,
            first_ns=self.first_ns,
            last_ns=self.last_ns,
            end_ns=end_ns,
            tokens=tokens if isinstance(tokens, int) and tokens > 0 else self.chunks,
            prompt_tokens=prompt if isinstance(prompt, int) and prompt > 0 else 0,
        )


class HttpStream:
    def __init__(self, transport: HttpTransport) -> None:
        self.transport = transport
        self.connection: SseConnection | None = None

    async def generate(self, prompt: int) -> Generation:
        if self.connection is None or self.connection.lost is not None:
            self.connection = await self.transport.dial()
        requests = self.transport.requests
        reader = Reader(self.transport.llm.endpoint_type)
        start = time.perf_counter_ns()
        status, body = await self.connection.post(requests[prompt % len(requests)],
                                                  reader.on_event)  # fmt: skip
        end = time.perf_counter_ns()
        if status != 200:
            raise RequestFailed(message(body, status))
        if reader.error:
            raise RequestFailed(reader.error)
        return reader.generation(start, end)

    async def close(self) -> None:
        if self.connection is not None:
            self.connection.close()


class HttpTransport:
    def __init__(self, perf: PerfSettings, llm: LlmSettings, prompts: list[str]) -> None:
        self.perf = perf
        self.llm = llm
        self.prompts = prompts
        self.client = HttpClient(perf.address, headers=perf.headers, tls=ssl_context(perf),
                                 timeout_s=perf.timeout_s)  # fmt: skip
        self.path = llm.path(perf.model)
        if llm.endpoint_type == "generate" and perf.version and not llm.endpoint:
            model = quote(perf.model, safe="")
            self.path = (
                f"/v2/models/{model}/versions/{quote(perf.version, safe='')}/generate_stream"
            )
        self.where = f"HTTP {self.client.address}{self.path}"
        self.requests: list[bytes] = []

    async def open(self) -> None:
        try:
            if self.llm.endpoint_type == "generate":
                await self.client.call("GET", f"/v2/models/{quote(self.perf.model, safe='')}")
            else:
                await self._listed()
        except Unreachable as exc:
            raise PerfError(
                f"no server answers at {self.client.address} over HTTP ({exc})"
            ) from None
        except ServerError as exc:
            raise PerfError(f"model '{self.perf.model}': {exc.message}") from None
        self.requests = [self._encode(p) for p in self.prompts]

    async def _listed(self) -> None:
        """When the server lists its OpenAI models (``/v1/models``), the model is one."""
        status, body = await self.client.request("GET", "/v1/models")
        if status != 200:
            return  # a server with the endpoint and no list: the first request will tell
        try:
            names = [m.get("id") for m in json.loads(body).get("data", [])]
        except (ValueError, AttributeError):
            return
        if self.perf.model not in names:
            listed = ", ".join(str(n) for n in names) or "none"
            raise PerfError(f"model '{self.perf.model}' is not among the server's /v1/models "
                            f"({listed})")  # fmt: skip

    def _encode(self, prompt: str) -> bytes:
        llm = self.llm
        body: dict[str, Any]
        if llm.endpoint_type == "generate":
            body = {llm.text_input_name: prompt}
            if llm.max_tokens:
                body[llm.max_tokens_name] = llm.max_tokens
        else:
            body = {"model": self.perf.model}
            if llm.endpoint_type == "chat":
                body["messages"] = [{"role": "user", "content": prompt}]
            else:
                body["prompt"] = prompt
            if llm.max_tokens:
                body["max_tokens"] = llm.max_tokens
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(llm.extra_inputs)
        data = json.dumps(body).encode()
        head = (f"POST {self.path} HTTP/1.1\r\nHost: {self.client.host}\r\n{self.client.headers}"
                "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
                f"Content-Length: {len(data)}\r\n\r\n")  # fmt: skip
        return head.encode() + data

    async def dial(self) -> SseConnection:
        loop = asyncio.get_running_loop()
        try:
            _, connection = await within(
                loop.create_connection(SseConnection, self.client.host, self.client.port,
                                       ssl=self.client.tls),
                self.perf.timeout_s,
            )  # fmt: skip
        except (OSError, asyncio.TimeoutError) as exc:
            raise ConnectionError(f"cannot connect to {self.client.address}: {exc}") from None
        return connection

    async def connect(self) -> HttpStream:
        return HttpStream(self)

    async def close(self) -> None:
        pass


def message(body: bytes, status: int) -> str:
    """An error body's message: OpenAI's ``error.message``, Triton's ``error``, the text;
    from an event stream's first event too (Triton's generate_stream fails so)."""
    text = body.decode(errors="replace").strip()
    if text.startswith("data:"):
        text = text.split("\n", 1)[0].removeprefix("data:").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        return text or f"HTTP {status}"
    error = doc.get("error") if isinstance(doc, dict) else None
    if isinstance(error, dict) and "message" in error:
        return str(error["message"])
    return str(error) if error is not None else text
