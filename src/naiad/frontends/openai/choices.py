"""One choice of a completion: a v2 request streamed, its responses read as text.

Each response of the model is one step (a decoupled model that sends one
response per token gives one step per token).  Stop strings are found here,
whatever the model does with them, across step boundaries: text that could
be the start of a stop string is held back until it is known not to be, and
when one is found the text ends before it and the model's request is
cancelled, so a streaming model stops generating.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from naiad.core.types import InferenceRequest
    from naiad.engine.dataplane import DataPlane
    from naiad.frontends.openai.binding import Binding
    from naiad.frontends.openai.requests import Sampling


@dataclass
class Token:
    """One step's text where it starts in the choice's text, and what it counts for."""

    text: str
    start: int
    logprob: float | None
    count: int


@dataclass
class Delta:
    """What a choice adds in one step: text, the steps it completes, and at the end
    the reason it finished."""

    text: str = ""
    tokens: list[Token] = field(default_factory=list)
    finish_reason: str | None = None


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    def doc(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }


class Group:
    """A request's choices, cancelled together when the client goes away (the HTTP
    connection sets ``cancelled`` as it does on one core request)."""

    def __init__(self) -> None:
        self.requests: list[InferenceRequest] = []
        self._cancelled = False

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @cancelled.setter
    def cancelled(self, value: bool) -> None:
        self._cancelled = value
        for request in self.requests:
            request.cancelled = value


class StopText:
    """Releases text as it comes, except what might begin a stop string."""

    def __init__(self, stops: list[str]) -> None:
        self.stops = stops
        self.held = ""
        self.stopped = False

    def feed(self, text: str) -> str:
        if not self.stops:
            return text
        text = self.held + text
        cut = min((i for i in (text.find(s) for s in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.held = ""
            self.stopped = True
            return text[:cut]
        keep = 0
        for stop in self.stops:
            for n in range(min(len(stop) - 1, len(text)), keep, -1):
                if text.endswith(stop[:n]):
                    keep = n
                    break
        self.held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        held, self.held = self.held, ""
        return held


async def run(
    dp: DataPlane, binding: Binding, prompt: str, sampling: Sampling, request_id: str,
    usage: Usage, group: Group,
) -> AsyncIterator[Delta]:  # fmt: skip
    """The choice's deltas, the last one with its finish reason; ``usage``, the choice's
    own, gets its counts."""
    request = binding.request(prompt, sampling, request_id)
    group.requests.append(request)
    stop = StopText(sampling.stop)
    written = 0  # characters of the generated text so far, held back ones included
    released = 0
    pending: list[Token] = []
    reason: str | None = None
    stream = dp.infer_stream(request)
    try:
        async for response in stream:
            if response.error is not None:
                raise response.error
            reading = binding.read(response)
            if reading.prompt_tokens is not None:
                usage.prompt_tokens = max(usage.prompt_tokens, reading.prompt_tokens)
            if reading.finish_reason is not None:
                reason = reading.finish_reason
            if reading.text:
                count = reading.completion_tokens
                logprob = reading.logprobs[0] if reading.logprobs else None
                pending.append(Token(reading.text, written, logprob, 1 if count is None else count))
                written += len(reading.text)
            elif reading.completion_tokens:
                usage.completion_tokens += reading.completion_tokens
            text = stop.feed(reading.text)
            released += len(text)
            done, pending = _split(pending, released, stop)
            usage.completion_tokens += sum(t.count for t in done)
            if stop.stopped:
                yield Delta(text, done, "stop")
                return
            if text or done:
                yield Delta(text, done)
        text = stop.flush()
        released += len(text)
        usage.completion_tokens += sum(t.count for t in pending)
        limit = sampling.max_tokens
        if reason is None:
            reason = "length" if limit is not None and usage.completion_tokens >= limit else "stop"
        yield Delta(text, pending, reason)
    finally:
        await stream.aclose()  # type: ignore[attr-defined]  # cancels the model's request


def _split(pending: list[Token], released: int, stop: StopText) -> tuple[list[Token], list[Token]]:
    """The steps whose text has started to be released, and those still held back;
    after a stop, the steps that began past it are dropped."""
    done = [t for t in pending if t.start < released]
    rest = [] if stop.stopped else pending[len(done) :]
    return done, rest
