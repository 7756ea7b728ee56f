"""One streamed generation, timed token by token, and what every transport provides.

A transport (OpenAI chat or completions and Triton's generate_stream over
HTTP, ModelStreamInfer over gRPC) opens the server, encodes every prompt's
request once, and gives each request in flight a :class:`Stream` of its own
(a connection, or a gRPC stream), which sends one request at a time and
returns its :class:`Generation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass
class Generation:
    """One request's stream; times are ``perf_counter_ns``."""

    start_ns: int
    #: The first response that carried output (0: none did).
    first_ns: int
    #: The last response that carried output.
    last_ns: int
    #: The stream's end ([DONE], the final response): when the next request may go.
    end_ns: int
    #: Output tokens: the server's count where it gives one (OpenAI's usage), else the
    #: responses that carried output.
    tokens: int
    #: Input tokens as the server counted them (OpenAI's usage); 0: not reported.
    prompt_tokens: int = 0


class Stream(Protocol):
    async def generate(self, prompt: int) -> Generation:
        """Send prompt ``prompt`` (an index, wrapped around the prompts) and read its stream
        to the end; :class:`~naiad.tools.perf.targets.RequestFailed` for an error."""
        ...

    async def close(self) -> None: ...


class Transport(Protocol):
    #: Where the requests go, for the report ("HTTP localhost:8000/v1/chat/completions").
    where: str
    #: The prompts, sent in turn.
    prompts: list[str]

    async def open(self) -> None:
        """Reach the server and check the model as the endpoint allows (a PerfError that
        says what is wrong), and encode every prompt's request."""
        ...

    async def connect(self) -> Stream: ...

    async def close(self) -> None: ...
