"""examples/llm: built by its build.py, served by ``naiad serve``, and every answer compared
with the saved models run here by ``transformers`` itself: the streamed text with
``generate``'s greedy text, the embeddings with a mean pool computed here.  The last
group asks the same through OpenAI's own client (``/v1``, where the models opt in by
the ``openai.*`` parameters of their config.pbtxt)."""

from __future__ import annotations

import json
import random
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from examples_helpers import EXAMPLES, Served, load_module, naiad_serve, run_script

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

pytestmark = [pytest.mark.e2e, pytest.mark.frameworks]

EXAMPLE = EXAMPLES / "llm"
PROMPTS = ["hello", "The quick brown fox", "café crème, 5 €", "", "Once upon a time there was"]
TEXTS = ["hello world", "a little cat in the garden", "naïve café", ""]


@pytest.fixture(scope="module", autouse=True)
def offline() -> Iterator[None]:
    """Nothing may be downloaded: the build and both servers' models read local files."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.setenv("TRANSFORMERS_OFFLINE", "1")
        yield


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("llm") / "repository"
    run_script(EXAMPLE / "build.py", str(out))
    return out


@pytest.fixture(scope="module")
def server(repository: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with naiad_serve(repository, tmp_path_factory.mktemp("logs") / "serve.log") as served:
        yield served


@dataclass(frozen=True)
class Greedy:
    text: str
    tokens: int  # generated, the end-of-sequence token included
    prompt_tokens: int
    finish_reason: str


class Reference:
    """The saved models, loaded by transformers in this process."""

    def __init__(self, repository: Path) -> None:
        auto = transformers.AutoTokenizer
        self.tokenizer = auto.from_pretrained(repository / "tiny_lm" / "tokenizer")
        self.lm = transformers.AutoModelForCausalLM.from_pretrained(repository / "tiny_lm" / "1")
        self.encoder = transformers.AutoModel.from_pretrained(
            repository / "tiny_embed" / "1", add_pooling_layer=False
        )

    def prompt_ids(self, text: str) -> list[int]:
        """As model.py reads a prompt: its tokens, after a <|bos|> unless it starts with one."""
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        bos = self.tokenizer.bos_token_id
        return ids if ids[:1] == [bos] else [bos, *ids]

    def greedy(self, prompt: str, max_tokens: int) -> Greedy:
        tok = self.tokenizer
        ids = torch.tensor([self.prompt_ids(prompt)])
        with torch.inference_mode():
            out = self.lm.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=max_tokens,
                do_sample=False,
                eos_token_id=tok.eos_token_id,
                pad_token_id=tok.pad_token_id,
            )
        new = out[0, ids.shape[1] :].tolist()
        stop = tok.eos_token_id in new
        new = new[: new.index(tok.eos_token_id) + 1] if stop else new
        text = tok.decode(new, skip_special_tokens=True)
        return Greedy(text, len(new), ids.shape[1], "stop" if stop else "length")

    def chat_prompt(self, messages: list[dict[str, str]]) -> str:
        return str(
            self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        )

    def embed(self, text: str) -> np.ndarray:
        """One text alone (no padding): the mean of its hidden states, to length 1."""
        ids = [self.tokenizer.bos_token_id, *self.tokenizer.encode(text, add_special_tokens=False)]
        with torch.inference_mode():
            hidden = self.encoder(input_ids=torch.tensor([ids])).last_hidden_state[0]
        mean = hidden.mean(dim=0).numpy()
        return mean / np.linalg.norm(mean)


@pytest.fixture(scope="module")
def reference(repository: Path) -> Reference:
    return Reference(repository)


def stream(server: Served, body: dict[str, Any]) -> list[dict[str, Any]]:
    """POST /v2/models/tiny_lm/generate_stream; every SSE event's JSON."""
    request = urllib.request.Request(
        f"http://{server.http}/v2/models/tiny_lm/generate_stream", json.dumps(body).encode()
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        lines = answer.read().decode().splitlines()
    return [json.loads(line[len("data:") :]) for line in lines if line.startswith("data:")]


# -- v2: generate_stream and infer -------------------------------------------------------


@pytest.mark.parametrize("prompt", PROMPTS)
def test_generate_stream_sends_the_greedy_text_one_token_at_a_time(
    server: Served, reference: Reference, prompt: str
) -> None:
    events = stream(server, {"text_input": prompt, "max_tokens": 12})
    expected = reference.greedy(prompt, 12)
    assert "error" not in events[-1], events[-1]
    assert len(events) == expected.tokens
    assert "".join(e["text_output"] for e in events) == expected.text
    assert [e.get("finish_reason") for e in events] == [None] * (len(events) - 1) + [
        expected.finish_reason
    ]
    assert {e["prompt_tokens"] for e in events} == {expected.prompt_tokens}
    assert {e["completion_tokens"] for e in events} == {1}


def test_max_tokens_defaults_to_16(server: Served, reference: Reference) -> None:
    events = stream(server, {"text_input": "hello"})
    assert "".join(e["text_output"] for e in events) == reference.greedy("hello", 16).text


def test_a_seed_makes_sampling_repeatable(server: Served) -> None:
    def sample(seed: int) -> str:
        body = {"text_input": "hello", "max_tokens": 10, "temperature": 1.0, "seed": seed}
        return "".join(e["text_output"] for e in stream(server, body))

    assert sample(7) == sample(7)
    assert len({sample(seed) for seed in range(4)}) > 1


def test_requests_arriving_together_are_generated_as_one_batch(
    server: Served, reference: Reference
) -> None:
    """Each gets its own greedy text whatever it was batched with; and the statistics show
    fewer executions than requests at least once (the batcher waits 2 ms for company:
    tried a few times, since a busy machine may start the client threads further apart)."""
    expected = [reference.greedy(p, 12).text for p in PROMPTS]
    for _ in range(5):
        before = _stats(server)
        assert _all_at_once(server, PROMPTS, 12) == expected
        after = _stats(server)
        assert after["inference_count"] - before["inference_count"] == len(PROMPTS)
        if after["execution_count"] - before["execution_count"] < len(PROMPTS):
            return
    pytest.fail("five rounds of concurrent requests, never two in one execution")


def _all_at_once(server: Served, prompts: list[str], max_tokens: int) -> list[str | None]:
    """Each prompt's streamed text, the requests sent by threads released together."""
    texts: list[str | None] = [None] * len(prompts)
    start = threading.Barrier(len(prompts))

    def ask(i: int) -> None:
        start.wait()
        events = stream(server, {"text_input": prompts[i], "max_tokens": max_tokens})
        texts[i] = "".join(e["text_output"] for e in events)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(prompts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return texts


def _stats(server: Served) -> dict[str, int]:
    url = f"http://{server.http}/v2/models/tiny_lm/stats"
    with urllib.request.urlopen(url, timeout=30) as answer:
        stats = json.load(answer)["model_stats"][0]
    return {key: int(stats[key]) for key in ("inference_count", "execution_count")}


def test_a_client_that_goes_away_stops_the_generation(server: Served) -> None:
    """2000 tokens asked, the connection closed after 3: model.py sees is_cancelled() and
    logs how far it got (a few tokens more than 3, where the server noticed)."""
    before = len(_CANCELLED.findall(server.log.read_text()))
    body = json.dumps({"text_input": "hello", "max_tokens": 2000}).encode()
    host, port = server.http.split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            b"POST /v2/models/tiny_lm/generate_stream HTTP/1.1\r\nHost: x\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        received = b""
        while received.count(b"data:") < 3:
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
    assert 3 <= _cancelled_after(server, before) < 2000


_CANCELLED = re.compile(r"tiny_lm: a request stopped after (\d+) of its 2000 tokens: cancelled")


def _cancelled_after(server: Served, seen: int) -> int:
    """How many tokens the next request model.py logs as cancelled had (the log lines
    after the first ``seen``), once the log has it."""
    deadline = time.monotonic() + 60
    while len(found := _CANCELLED.findall(server.log.read_text())) <= seen:
        assert time.monotonic() < deadline, server.log.read_text()[-2000:]
        time.sleep(0.05)
    return int(found[seen])


def test_a_bad_max_tokens_is_an_invalid_argument(server: Served) -> None:
    """The model's INVALID_ARG error comes before any token: HTTP 400, with its message
    (as the stream's one event)."""
    with pytest.raises(urllib.error.HTTPError) as raised:
        stream(server, {"text_input": "hello", "max_tokens": 0})
    assert raised.value.code == 400
    assert "max_tokens must be at least 1, not 0" in raised.value.read().decode()


def test_the_embeddings_are_unit_vectors_of_the_mean_hidden_state(
    server: Served, reference: Reference
) -> None:
    """One request of four texts ([4, 1]) and four requests of one in flight at once (the
    dynamic batcher's case): the same vectors as each text run alone here."""
    import tritonclient.http as httpclient

    expected = np.stack([reference.embed(t) for t in TEXTS])
    client = httpclient.InferenceServerClient(server.http, concurrency=len(TEXTS))

    def infer(texts: list[str]) -> Any:
        data = httpclient.InferInput("text_input", [len(texts), 1], "BYTES")
        data.set_data_from_numpy(np.array([[t.encode()] for t in texts], dtype=np.object_))
        return client.async_infer("tiny_embed", [data])

    try:
        together = infer(TEXTS).get_result().as_numpy("embedding")
        apart = [infer([t]).get_result().as_numpy("embedding") for t in TEXTS]
    finally:
        client.close()
    assert together.shape == (len(TEXTS), 64)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(together, expected, atol=1e-5)
    np.testing.assert_allclose(np.concatenate(apart), expected, atol=1e-5)


def test_streamed_text_keeps_characters_of_several_bytes_whole(repository: Path) -> None:
    """model.py's Detokenizer over random token runs (byte tokens split é and € apart):
    the deltas joined are the whole decoded text, and a delta never ends in half a
    character unless the text does."""
    module = load_module(repository / "tiny_lm" / "1" / "model.py", "tiny_lm_model")
    tokenizer = transformers.AutoTokenizer.from_pretrained(repository / "tiny_lm" / "tokenizer")
    rng = random.Random(0)
    for _ in range(200):
        ids = [rng.randrange(len(tokenizer)) for _ in range(rng.randrange(1, 30))]
        text = module.Detokenizer(tokenizer)
        deltas = [text.add(t, last=i == len(ids) - 1) for i, t in enumerate(ids)]
        whole = tokenizer.decode(ids, skip_special_tokens=True)
        assert "".join(deltas) == whole
        assert all(not d.endswith("\ufffd") for d in deltas[:-1])


# -- /v1 through OpenAI's client ------------------------------------------------------------

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Say hello to the café."},
]


@pytest.fixture(scope="module")
def client(server: Served) -> Iterator[Any]:
    openai = pytest.importorskip("openai")
    with openai.OpenAI(
        base_url=f"http://{server.http}/v1", api_key="none", max_retries=0, timeout=60
    ) as opened:
        yield opened


def test_v1_models_lists_both(client: Any) -> None:
    assert {"tiny_lm", "tiny_embed"} <= {model.id for model in client.models.list()}


def test_v1_chat_completion_is_the_greedy_text_of_the_rendered_chat(
    client: Any, reference: Reference
) -> None:
    expected = reference.greedy(reference.chat_prompt(MESSAGES), 10)
    answer = client.chat.completions.create(model="tiny_lm", messages=MESSAGES, max_tokens=10)
    choice = answer.choices[0]
    assert choice.message.role == "assistant"
    assert choice.message.content == expected.text
    assert choice.finish_reason == expected.finish_reason
    assert answer.usage.completion_tokens == expected.tokens
    assert answer.usage.prompt_tokens == expected.prompt_tokens


def test_v1_chat_completion_streams_the_same_text(client: Any, reference: Reference) -> None:
    expected = reference.greedy(reference.chat_prompt(MESSAGES), 10)
    chunks = list(
        client.chat.completions.create(
            model="tiny_lm", messages=MESSAGES, max_tokens=10, stream=True
        )
    )
    deltas = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert "".join(deltas) == expected.text
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == expected.finish_reason


def test_v1_a_stream_closed_early_stops_the_generation(client: Any, server: Served) -> None:
    before = len(_CANCELLED.findall(server.log.read_text()))
    chunks = client.chat.completions.create(
        model="tiny_lm", messages=MESSAGES, max_tokens=2000, stream=True
    )
    for count, _ in enumerate(chunks, 1):
        if count == 3:
            break
    chunks.close()
    assert 1 <= _cancelled_after(server, before) < 2000


def test_v1_completion_is_the_greedy_text_of_the_prompt(client: Any, reference: Reference) -> None:
    expected = reference.greedy("Once upon a time", 8)
    answer = client.completions.create(model="tiny_lm", prompt="Once upon a time", max_tokens=8)
    assert answer.choices[0].text == expected.text
    assert answer.choices[0].finish_reason == expected.finish_reason
    assert answer.usage.completion_tokens == expected.tokens


def test_v1_embeddings_are_the_vectors_computed_here(client: Any, reference: Reference) -> None:
    texts = [t for t in TEXTS if t]  # OpenAI refuses empty strings
    answer = client.embeddings.create(model="tiny_embed", input=texts)
    got = np.array([item.embedding for item in sorted(answer.data, key=lambda d: d.index)])
    np.testing.assert_allclose(got, np.stack([reference.embed(t) for t in texts]), atol=1e-5)
