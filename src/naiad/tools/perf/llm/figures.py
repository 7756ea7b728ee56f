"""The figures of one level, from its generations, defined as GenAI-Perf defines them.

Per request (a request whose stream carried no output counts in the request
throughput and nowhere else, as GenAI-Perf skips it):

- time to first token: first response with output - request sent;
- request latency: last response with output - request sent;
- inter-token latency: (request latency - time to first token) / (output
  tokens - 1), for requests of two tokens or more;
- output sequence length: the request's output tokens;
- input sequence length: the server's count of the prompt's tokens, where it
  gives one;
- output token throughput per request: output tokens / request latency.

Per level: request throughput = requests / seconds and output token
throughput = output tokens / seconds, over the measurement's seconds (the
stable windows' length, or with ``--request-count`` the first request's
start to the last response, GenAI-Perf's "benchmark duration").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from naiad.tools.perf.llm.streams import Generation

#: The statistics of each figure, in the order the CSV gives them (GenAI-Perf's).
STATISTICS = ("avg", "min", "max", "p99", "p95", "p90", "p75", "p50", "p25", "std")


@dataclass
class Stats:
    avg: float
    min: float
    max: float
    p99: float
    p95: float
    p90: float
    p75: float
    p50: float
    p25: float
    std: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Stats | None:
        if not values:
            return None
        array = np.asarray(values, dtype=np.float64)
        p99, p95, p90, p75, p50, p25 = (float(v) for v in
                                        np.percentile(array, [99, 95, 90, 75, 50, 25]))  # fmt: skip
        return cls(float(array.mean()), float(array.min()), float(array.max()),
                   p99, p95, p90, p75, p50, p25, float(array.std()))  # fmt: skip

    def get(self, name: str) -> float:
        return float(getattr(self, name))


@dataclass
class LevelResult:
    """One level of the sweep; times in milliseconds."""

    kind: str  # concurrency | rate
    value: float
    requests: int
    seconds: float
    request_throughput: float  # requests/s
    output_token_throughput: float  # tokens/s
    ttft_ms: Stats | None
    itl_ms: Stats | None
    latency_ms: Stats | None
    output_tokens: Stats | None
    input_tokens: Stats | None
    token_throughput_per_request: Stats | None
    #: Requests whose stream carried no output (left out of every figure but the rates).
    empty: int
    stable: bool
    #: Windows measured (the figures are the last three's); 0: ``--request-count``.
    windows: int
    client_cpu_percent: float

    def figures(self) -> list[tuple[str, Stats | None]]:
        """The per-request figures as the report and the CSV name them."""
        return [
            ("Time To First Token (ms)", self.ttft_ms),
            ("Inter Token Latency (ms)", self.itl_ms),
            ("Request Latency (ms)", self.latency_ms),
            ("Output Sequence Length (tokens)", self.output_tokens),
            ("Input Sequence Length (tokens)", self.input_tokens),
            ("Output Token Throughput Per Request (tokens/sec)", self.token_throughput_per_request),
        ]


def level_result(
    kind: str,
    value: float,
    generations: Sequence[Generation],
    seconds: float,
    *,
    stable: bool = True,
    windows: int = 0,
    cpu_s: float = 0.0,
) -> LevelResult:
    answered = [g for g in generations if g.first_ns]
    ttft = [(g.first_ns - g.start_ns) / 1e6 for g in answered]
    latency = [(g.last_ns - g.start_ns) / 1e6 for g in answered]
    itl = [(g.last_ns - g.first_ns) / 1e6 / (g.tokens - 1) for g in answered if g.tokens > 1]
    per_request = [g.tokens / (g.last_ns - g.start_ns) * 1e9 for g in answered
                   if g.last_ns > g.start_ns]  # fmt: skip
    prompts = [g.prompt_tokens for g in answered if g.prompt_tokens]
    tokens = sum(g.tokens for g in answered)
    return LevelResult(
        kind=kind,
        value=value,
        requests=len(generations),
        seconds=seconds,
        request_throughput=len(generations) / seconds if seconds > 0 else 0.0,
        output_token_throughput=tokens / seconds if seconds > 0 else 0.0,
        ttft_ms=Stats.of(ttft),
        itl_ms=Stats.of(itl),
        latency_ms=Stats.of(latency),
        output_tokens=Stats.of([float(g.tokens) for g in answered]),
        input_tokens=Stats.of([float(p) for p in prompts]),
        token_throughput_per_request=Stats.of(per_request),
        empty=len(generations) - len(answered),
        stable=stable,
        windows=windows,
        client_cpu_percent=100 * cpu_s / seconds if seconds > 0 else 0.0,
    )


def span_s(generations: Sequence[Generation]) -> float:
    """GenAI-Perf's benchmark duration: the first request's start to the last response."""
    if not generations:
        return 0.0
    start = min(g.start_ns for g in generations)
    end = max(g.last_ns if g.first_ns else g.end_ns for g in generations)
    return (end - start) / 1e9
