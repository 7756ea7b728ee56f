"""The OpenAI API through OpenAI's own Python client: sync, async, streaming, every endpoint."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator

import numpy as np
import openai
import pytest

pytestmark = pytest.mark.protocol

PROMPT = "one two three four five"
#: what ``words`` streams for PROMPT: its words reversed, one per response
WORDS = ["five ", "four ", "three ", "two ", "one "]


@pytest.fixture(scope="module")
def client(base_url: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0) as client:
        yield client


def test_models_lists_the_models_that_opted_in(client: openai.OpenAI) -> None:
    ids = {m.id for m in client.models.list()}
    assert {"words", "upper", "embedder", "pipeline", "narrow"} <= ids
    assert not ids & {"plain", "exclaim"}  # no openai.api parameter
    assert client.models.retrieve("words").owned_by == "naiad"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("plain")


def test_chat_completion(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model="words", messages=[{"role": "user", "content": PROMPT}]
    )
    choice = answer.choices[0]
    assert answer.object == "chat.completion" and answer.model == "words"
    assert answer.id.startswith("chatcmpl-")
    assert choice.message.role == "assistant"
    assert choice.message.content == "".join(WORDS)
    assert choice.finish_reason == "stop"
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (5, 5)
    assert answer.usage.total_tokens == 10


def test_chat_template_renders_every_message(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model="words",
        messages=[
            {"role": "system", "content": "sys"},
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
        ],
    )
    # the template joins the contents: "sys ab ", reversed word by word
    assert answer.choices[0].message.content == "ab sys "


def test_chat_stream_with_usage_and_max_tokens(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="words",
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            max_tokens=3,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    deltas = [
        c.choices[0].delta.content for c in chunks[1:] if c.choices and c.choices[0].delta.content
    ]
    assert deltas == WORDS[:3]  # one chunk per response of the decoupled model
    finals = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finals == ["length"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 3
    assert all(c.usage is None for c in chunks[:-1])


def test_completions_with_n_are_batched_together(client: openai.OpenAI) -> None:
    answer = client.completions.create(model="upper", prompt=["a b", "c"], n=2)
    texts = [(c.index, c.text) for c in answer.choices]
    # four v2 requests, one batch of the dynamic batcher (preferred size 4)
    assert texts == [
        (0, "A B [batch 4]"),
        (1, "A B [batch 4]"),
        (2, "C [batch 4]"),
        (3, "C [batch 4]"),
    ]
    assert answer.object == "text_completion"
    assert all(c.finish_reason == "stop" for c in answer.choices)


def test_choices_of_one_prompt_get_successive_seeds(client: openai.OpenAI) -> None:
    answer = client.completions.create(model="upper", prompt="a", n=3, seed=7, max_tokens=4)
    assert [c.text for c in answer.choices] == [f"A [batch 3] seed={s}" for s in (7, 8, 9)]


def test_completion_stream_echo(client: openai.OpenAI) -> None:
    chunks = list(client.completions.create(model="words", prompt="x y", stream=True, echo=True))
    text = "".join(c.choices[0].text for c in chunks)
    assert text == "x yy x "


def test_stop_strings_end_the_text_across_responses(client: openai.OpenAI) -> None:
    answer = client.completions.create(model="words", prompt=PROMPT, stop=["ee t"])
    assert answer.choices[0].text == "five four thr"
    assert answer.choices[0].finish_reason == "stop"
    chunks = list(client.completions.create(model="words", prompt=PROMPT, stop="r t", stream=True))
    assert "".join(c.choices[0].text for c in chunks) == "five fou"
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_logprobs_from_the_models_output(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model="words", messages=[{"role": "user", "content": "a b c"}], logprobs=True
    )
    content = answer.choices[0].logprobs.content  # type: ignore[union-attr]
    assert [(t.token, t.logprob) for t in content] == [("c ", -0.25), ("b ", -0.5), ("a ", -0.75)]
    completion = client.completions.create(model="words", prompt="a b", logprobs=0)
    logprobs = completion.choices[0].logprobs
    assert logprobs is not None
    assert logprobs.tokens == ["b ", "a "] and logprobs.token_logprobs == [-0.25, -0.5]
    assert logprobs.text_offset == [0, 2]
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(model="upper", prompt="a", logprobs=1)
    assert caught.value.body["param"] == "logprobs"  # type: ignore[index]


def _vector(text: str) -> list[float]:
    return [len(text), sum(c in "aeiou" for c in text), text.count(" "), ord(text[0])]


def test_embeddings_float_and_base64(client: openai.OpenAI) -> None:
    texts = ["hello world", "naiad", "x"]
    answer = client.embeddings.create(model="embedder", input=texts)  # base64 on the wire
    assert [d.index for d in answer.data] == [0, 1, 2]
    assert [d.embedding for d in answer.data] == [_vector(t) for t in texts]
    raw = client.embeddings.with_raw_response.create(
        model="embedder", input="abc", encoding_format="float"
    )
    assert raw.http_response.json()["data"][0]["embedding"] == _vector("abc")
    raw = client.embeddings.with_raw_response.create(
        model="embedder", input="abc", encoding_format="base64"
    )
    packed = raw.http_response.json()["data"][0]["embedding"]
    assert np.frombuffer(base64.b64decode(packed), "<f4").tolist() == _vector("abc")
    with pytest.raises(openai.BadRequestError) as caught:
        client.embeddings.create(model="embedder", input="abc", dimensions=8)
    assert caught.value.body["param"] == "dimensions"  # type: ignore[index]


def test_an_ensemble_serves_completions(client: openai.OpenAI) -> None:
    answer = client.completions.create(model="pipeline", prompt="hey")
    assert answer.choices[0].text == "HEY [batch 1]!"


def test_an_ensemble_with_a_decoupled_step_streams(client: openai.OpenAI) -> None:
    chunks = list(
        client.chat.completions.create(
            model="streaming_pipeline", messages=[{"role": "user", "content": "a b"}], stream=True
        )
    )
    deltas = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    # the default template gives "user: a b\nassistant:", the prefix step puts "start "
    # before it, the decoupled step streams its words reversed
    assert deltas == ["assistant: ", "b ", "a ", "user: ", "start "]
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_a_bls_pipeline_streams(client: openai.OpenAI) -> None:
    chunks = list(client.completions.create(model="relay", prompt="a b c", stream=True))
    assert [c.choices[0].text for c in chunks if c.choices[0].text] == ["C ", "B ", "A "]


def test_async_client_concurrent_requests(base_url: str) -> None:
    async def main() -> list[str]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)
        async with client:

            async def streamed(prompt: str) -> str:
                stream = await client.chat.completions.create(
                    model="words", messages=[{"role": "user", "content": prompt}], stream=True
                )
                return "".join([c.choices[0].delta.content or "" async for c in stream])

            async def whole(prompt: str) -> str:
                answer = await client.completions.create(model="words", prompt=prompt)
                return answer.choices[0].text

            return await asyncio.gather(streamed("a b"), whole("c d"), streamed("e f g"))

    assert asyncio.run(main()) == ["b a ", "d c ", "g f e "]
