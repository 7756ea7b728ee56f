"""``/v1/chat/completions`` and ``/v1/completions``: their choices run concurrently, answered
whole or as OpenAI's server-sent events.

Both endpoints differ only in their JSON: a chat choice has a ``message`` (a
``delta`` when streamed) where a completion choice has ``text``, and their
log probabilities are shaped differently.  Every choice is its own v2
request, so the model's batcher sees them together.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from naiad.core.errors import NaiadError
from naiad.frontends.http.encode import dumps
from naiad.frontends.http.message import SSE_HEADERS, Response, json_response
from naiad.frontends.openai import choices
from naiad.frontends.openai.choices import Delta, Group, Token, Usage
from naiad.frontends.openai.errors import BadField, status_and_body
from naiad.frontends.openai.requests import Sampling

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane
    from naiad.frontends.http.message import Request
    from naiad.frontends.openai.binding import Binding

_DONE = b"data: [DONE]\n\n"


@dataclass
class Job:
    """One request's choices: the prompt of each (one per prompt and ``n``)."""

    chat: bool
    model: str
    binding: Binding
    prompts: list[str]
    sampling: Sampling
    echo: bool = False

    def __post_init__(self) -> None:
        self.id = ("chatcmpl-" if self.chat else "cmpl-") + uuid.uuid4().hex
        self.created = int(time.time())
        self.object = "chat.completion" if self.chat else "text_completion"
        if self.sampling.logprobs and "logprobs" not in self.binding.outputs:
            raise BadField("logprobs", f"The model '{self.model}' does not give log "
                           "probabilities (its config maps no 'openai.output.logprobs').")  # fmt: skip

    def choice_prompts(self) -> list[str]:
        n = self.sampling.n
        return [p for p in self.prompts for _ in range(n)]

    def choice_sampling(self, index: int) -> Sampling:
        """Choice ``index``'s fields: with a ``seed``, the choices of one prompt get
        seed, seed + 1, ..., so that they differ and a rerun repeats them."""
        seed = self.sampling.fields.get("seed")
        j = index % self.sampling.n
        if seed is None or not j:
            return self.sampling
        return dataclasses.replace(self.sampling, fields={**self.sampling.fields, "seed": seed + j})

    def usage(self, usages: list[Usage]) -> Usage:
        """Completion tokens of every choice; prompt tokens once per prompt."""
        total = Usage()
        n = self.sampling.n
        for i in range(0, len(usages), n):
            group = usages[i : i + n]
            total.prompt_tokens += max(u.prompt_tokens for u in group)
            total.completion_tokens += sum(u.completion_tokens for u in group)
        return total

    def head(self) -> dict[str, Any]:
        return {"id": self.id, "object": self.object, "created": self.created,
                "model": self.model, "system_fingerprint": None}  # fmt: skip

    def logprobs(self, tokens: list[Token], offset: int) -> dict[str, Any] | None:
        if not self.sampling.logprobs:
            return None
        if self.chat:
            return {"content": [
                {"token": t.text, "logprob": t.logprob, "bytes": list(t.text.encode()),
                 "top_logprobs": []} for t in tokens
            ]}  # fmt: skip
        return {
            "tokens": [t.text for t in tokens],
            "token_logprobs": [t.logprob for t in tokens],
            "top_logprobs": None,
            "text_offset": [offset + t.start for t in tokens],
        }


async def answer(dp: DataPlane, req: Request, job: Job) -> Response | None:
    group = Group()
    req.core = group  # a disconnect cancels every choice
    if job.sampling.stream:
        await _stream(dp, req, job, group)
        return None
    return await _whole(dp, job, group)


async def _whole(dp: DataPlane, job: Job, group: Group) -> Response:
    prompts = job.choice_prompts()
    usages = [Usage() for _ in prompts]
    results = await asyncio.gather(
        *(_collect(dp, job, p, i, usages[i], group) for i, p in enumerate(prompts))
    )
    doc = job.head()
    doc["choices"] = results
    doc["usage"] = job.usage(usages).doc()
    return json_response(dumps(doc))


async def _collect(
    dp: DataPlane, job: Job, prompt: str, index: int, usage: Usage, group: Group
) -> dict[str, Any]:
    texts: list[str] = []
    tokens: list[Token] = []
    reason = None
    sampling = job.choice_sampling(index)
    async for delta in choices.run(dp, job.binding, prompt, sampling, job.id, usage, group):
        texts.append(delta.text)
        tokens.extend(delta.tokens)
        reason = delta.finish_reason or reason
    text = "".join(texts)
    echo = prompt if job.echo else ""
    choice: dict[str, Any] = {"index": index}
    if job.chat:
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = echo + text
    choice["logprobs"] = job.logprobs(tokens, len(echo))
    choice["finish_reason"] = reason
    return choice


async def _stream(dp: DataPlane, req: Request, job: Job, group: Group) -> None:
    """Writes the event stream itself.  An error before the first event is an ordinary
    error answer; one after it is an ``error`` event, then ``[DONE]``."""
    conn = req.conn
    prompts = job.choice_prompts()
    usages = [Usage() for _ in prompts]
    events: asyncio.Queue[tuple[int, Delta | BaseException | None]] = asyncio.Queue()

    async def feed(index: int) -> None:
        sampling = job.choice_sampling(index)
        run = choices.run(dp, job.binding, prompts[index], sampling, job.id, usages[index], group)
        try:
            async for delta in run:
                events.put_nowait((index, delta))
        except Exception as exc:  # noqa: BLE001 (handed to the writer, which answers it)
            events.put_nowait((index, exc))
        else:
            events.put_nowait((index, None))

    tasks = [asyncio.ensure_future(feed(i)) for i in range(len(prompts))]
    started = False
    running = len(tasks)
    try:
        while running:
            index, event = await events.get()
            if event is None:
                running -= 1
                continue
            if isinstance(event, BaseException):
                error = event if isinstance(event, NaiadError) else _internal(event)
                if not started:
                    raise error
                conn.write_chunk(b"data: " + status_and_body(error)[1] + b"\n\n")
                break
            if not started:
                started = True
                conn.start_stream(200, SSE_HEADERS)
                for i in range(len(prompts)):
                    first = _first_chunk(job, i, prompts[i])
                    if first is not None:
                        conn.write_chunk(_event(first))
            conn.write_chunk(_event(_chunk(job, index, event)))
            await conn.drain()
            if conn.closed:
                return
        if job.sampling.include_usage:
            last = job.head()
            last["object"] = job.object + ".chunk" if job.chat else job.object
            last["choices"] = []
            last["usage"] = job.usage(usages).doc()
            conn.write_chunk(_event(last))
        conn.write_chunk(_DONE)
        conn.end_stream()
    finally:
        for task in tasks:
            task.cancel()  # a choice still running: its request is cancelled
        await asyncio.gather(*tasks, return_exceptions=True)


def _first_chunk(job: Job, index: int, prompt: str) -> dict[str, Any] | None:
    """Chat streams open each choice with the assistant's role; an echoed completion
    with its prompt."""
    if job.chat:
        return _chunk(job, index, Delta(), role=True)
    if job.echo:
        return _chunk(job, index, Delta(prompt))
    return None


def _chunk(job: Job, index: int, delta: Delta, role: bool = False) -> dict[str, Any]:
    doc = job.head()
    choice: dict[str, Any] = {"index": index}
    if job.chat:
        doc["object"] = "chat.completion.chunk"
        body: dict[str, Any] = {}
        if role:
            body = {"role": "assistant", "content": ""}
        elif delta.text or delta.finish_reason is None:
            body["content"] = delta.text
        choice["delta"] = body
    else:
        choice["text"] = delta.text
    choice["logprobs"] = job.logprobs(delta.tokens, 0) if delta.tokens else None
    choice["finish_reason"] = delta.finish_reason
    doc["choices"] = [choice]
    if job.sampling.include_usage:
        doc["usage"] = None
    return doc


def _event(doc: dict[str, Any]) -> bytes:
    return b"data: " + dumps(doc) + b"\n\n"


def _internal(exc: BaseException) -> NaiadError:
    from naiad.core.errors import Internal

    return Internal(f"{type(exc).__name__}: {exc}")
