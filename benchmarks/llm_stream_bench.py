"""What streaming a token through naiad costs: examples/llm's ``tiny_lm`` generating
greedily, in this process and through ``naiad serve``.

Not a test.  Builds the example into a temporary folder, then measures, one stream
at a time:

- ``in-process``: the generation loop of ``tiny_lm/1/model.py`` run here with
  transformers (one thread, KV cache, greedy, the model's own Detokenizer): the
  time to the first token (the prompt's forward pass) and per token after it;
- ``v2 generate_stream``: naiad over HTTP, SSE read as it arrives: time to first
  token (TTFT, which includes the 2 ms ``max_queue_delay_microseconds`` the model's
  dynamic batcher waits for company) and inter-token latency (ITL, between
  consecutive token events);
- ``v1 chat (SSE)`` and ``v1 chat (openai client)``: the same over
  ``/v1/chat/completions`` with ``stream: true``, read raw and through OpenAI's
  client, when the server answers it.  /v1 sends no chunk for a token that adds
  no text (the random model makes many: half characters), so a chunk's gap is
  spread over the tokens it completes, known from the same greedy text run here;
  its TTFT is the time to the first chunk with text.

The overhead per token is each ITL less the in-process median per token: what
naiad (model.py's sends and is_cancelled() calls to the server, the server, HTTP
and the client's reading) adds to the model's own work.

    python benchmarks/llm_stream_bench.py            # --runs 20 --max-tokens 64
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import inspect
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from common import ROOT, free_port, start_naiad, stop, wait_ready

PROMPT = "hello"
MESSAGES = [{"role": "user", "content": PROMPT}]


def load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Local:
    """``tiny_lm`` loaded here, run as model.py runs one request: one thread, KV cache,
    greedy, the model's own Detokenizer."""

    def __init__(self, repo: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(1)  # as model.py
        self.torch = torch
        self.model_py = load(repo / "tiny_lm" / "1" / "model.py", "tiny_lm_model")
        self.tokenizer = AutoTokenizer.from_pretrained(repo / "tiny_lm" / "tokenizer")
        self.model = AutoModelForCausalLM.from_pretrained(repo / "tiny_lm" / "1").eval()
        forward = inspect.signature(self.model.forward).parameters
        self.cache_name = "cache" if "cache" in forward else "past_key_values"

    def prompt(self, text: str) -> list[int]:
        """As model.py reads a prompt: a <|bos|> first unless the text starts with one."""
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        bos = self.tokenizer.bos_token_id
        return ids if ids[:1] == [bos] else [bos, *ids]

    def generate(self, prompt: list[int], max_tokens: int) -> tuple[list[float], list[str]]:
        """The start time and each token's time after it; each token's text delta."""
        torch = self.torch
        text = self.model_py.Detokenizer(self.tokenizer)
        ids = torch.tensor([prompt])
        mask = torch.ones_like(ids)
        positions = torch.arange(len(prompt))[None]
        cache = None
        times, deltas = [time.perf_counter()], []
        with torch.inference_mode():
            for step in range(max_tokens):
                out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                                 use_cache=True, **{self.cache_name: cache})  # fmt: skip
                cache = out[self.cache_name]
                token = int(out.logits[0, -1].argmax())
                deltas.append(text.add(token, step + 1 == max_tokens))
                times.append(time.perf_counter())
                if token == self.tokenizer.eos_token_id:
                    break
                ids = torch.tensor([[token]])
                mask = torch.cat([mask, torch.ones_like(ids)], dim=1)
                positions = positions[:, -1:] + 1
        return times, deltas


def coverage(deltas: list[str]) -> list[int]:
    """How many tokens each non-empty delta completes: /v1 sends no chunk for a token
    that adds no text (half a character, a special token), so its chunk comes with the
    next token that does."""
    counts, pending = [], 0
    for delta in deltas:
        pending += 1
        if delta:
            counts.append(pending)
            pending = 0
    return counts


def sse_token_times(
    conn: http.client.HTTPConnection, path: str, body: dict[str, Any], is_token: Callable
) -> list[float]:
    """Send ``body`` to ``path``; the send time, then the arrival of each token event."""
    times = [time.perf_counter()]
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    answer = conn.getresponse()
    assert answer.status == 200, answer.read()
    for line in iter(answer.readline, b""):
        if line.startswith(b"data: {") and is_token(json.loads(line[6:])):
            times.append(time.perf_counter())
    return times


def v1_token(chunk: dict[str, Any]) -> bool:
    """A chunk with text: not the first (the role) nor the finish or usage ones."""
    choices = chunk.get("choices") or [{}]
    return bool(choices[0].get("delta", {}).get("content"))


def openai_token_times(client: Any, max_tokens: int) -> list[float]:
    times = [time.perf_counter()]
    for chunk in client.chat.completions.create(
        model="tiny_lm", messages=MESSAGES, max_tokens=max_tokens, stream=True
    ):
        if chunk.choices and chunk.choices[0].delta.content:
            times.append(time.perf_counter())
    return times


def measure(
    stream: Callable[[], list[float]], runs: int, tokens: list[int]
) -> tuple[list[float], list[float]]:
    """TTFTs and per-token ITLs (seconds) over ``runs`` streams after two.  ``tokens``
    says how many tokens each event completes (1 each for generate_stream): a gap
    covering k tokens counts k times, as gap / k."""
    ttfts: list[float] = []
    itls: list[float] = []
    for run in range(runs + 2):
        times = stream()
        assert len(times) - 1 == len(tokens), f"{len(times) - 1} events, {len(tokens)} expected"
        if run >= 2:
            ttfts.append(times[1] - times[0])
            for gap, k in zip(np.diff(times[1:]), tokens[1:], strict=True):
                itls.extend([gap / k] * k)
    return ttfts, itls


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1e3


def row(name: str, ttfts: list[float], itls: list[float], base: float) -> str:
    overhead = [t - base for t in itls]
    return (f"| {name} | {pct(ttfts, 50):.2f} / {pct(ttfts, 99):.2f} | "
            f"{pct(itls, 50):.3f} / {pct(itls, 99):.3f} | "
            f"{pct(overhead, 50):.3f} / {pct(overhead, 99):.3f} |")  # fmt: skip


def streams(port: int, max_tokens: int) -> Iterator[tuple[str, Callable[[], list[float]], bool]]:
    """The ways to ask the server, with what each sends; /v1 only where it answers."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    v2 = {"text_input": PROMPT, "max_tokens": max_tokens}
    path = "/v2/models/tiny_lm/generate_stream"
    yield "v2 generate_stream", lambda: sse_token_times(conn, path, v2, lambda e: True), False
    chat = {"model": "tiny_lm", "messages": MESSAGES, "max_tokens": max_tokens, "stream": True}
    conn.request("POST", "/v1/chat/completions", json.dumps({**chat, "max_tokens": 1}),
                 {"Content-Type": "application/json"})  # fmt: skip
    answer = conn.getresponse()
    answer.read()
    if answer.status != 200:
        print(f"/v1/chat/completions answers {answer.status}: no /v1 rows")
        return
    yield (
        "v1 chat (SSE)",
        lambda: sse_token_times(conn, "/v1/chat/completions", chat, v1_token),
        True,
    )
    try:
        import openai
    except ImportError:
        print("no openai package: no openai client row")
        return
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0)
    yield "v1 chat (openai client)", lambda: openai_token_times(client, max_tokens), True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="streams per row, after two")
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"  # the example downloads nothing; make sure of it
    with tempfile.TemporaryDirectory(prefix="naiad-bench-") as tmp:
        build = load(ROOT / "examples" / "llm" / "build.py", "llm_build")
        repo = build.main(Path(tmp) / "repository")
        local = Local(repo)
        prompt = local.prompt(PROMPT)
        runs = [local.generate(prompt, args.max_tokens)[0] for _ in range(args.runs + 2)][2:]
        ttfts = [times[1] - times[0] for times in runs]
        per_token = [float(t) for times in runs for t in np.diff(times[1:])]
        base = float(np.percentile(per_token, 50))
        v2_deltas = local.generate(prompt, args.max_tokens)[1]
        chat = local.tokenizer.apply_chat_template(
            MESSAGES, tokenize=False, add_generation_prompt=True
        )
        chat_deltas = local.generate(local.prompt(chat), args.max_tokens)[1]
        lines = [
            "| path | tokens (events) | TTFT p50 / p99 ms | ITL p50 / p99 ms | overhead p50 / p99 ms |",
            "|---|---|---|---|---|",
            row(f"in-process | {len(v2_deltas)}", ttfts, per_token, base),
        ]
        port = free_port()
        server = start_naiad(repo, port, Path(tmp) / "serve.log")
        try:
            wait_ready(port, server)
            for name, stream, v1 in streams(port, args.max_tokens):
                deltas = chat_deltas if v1 else v2_deltas
                tokens = coverage(deltas) if v1 else [1] * len(deltas)
                first, itls = measure(stream, args.runs, tokens)
                lines.append(row(f"{name} | {len(deltas)} ({len(tokens)})", first, itls, base))
        finally:
            stop([server])
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
