"""The flags of ``naiad perf``'s LLM measurements, named as GenAI-Perf names them.

``--endpoint-type`` turns them on; the load and the windows keep perf's own
flags (``-m``, ``-u``, ``--concurrency-range``, ``--request-rate-range``,
``-p``, ``-s``, ``-r``, ``-f``, ``-H``, TLS), and a perf flag that means
nothing for a stream of tokens (``-b``, ``--shape``, ``--shared-memory``...)
is refused rather than ignored.  Imported at start-up: dataclasses only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from naiad.tools.flags import flag, flag_name
from naiad.tools.perf.settings import PerfError, PerfSettings

GROUP = "LLM measurements (GenAI-Perf's figures; --endpoint-type turns them on)"
ENDPOINT_TYPES = ("chat", "completions", "generate", "grpc-stream")
#: Where each endpoint type posts, on the server's HTTP port ({model}: -m's, quoted).
PATHS = {
    "chat": "/v1/chat/completions",
    "completions": "/v1/completions",
    "generate": "/v2/models/{model}/generate_stream",
}

#: perf's settings an LLM measurement uses; any other perf flag given is refused.
USED = frozenset({
    "model", "version", "url", "concurrency", "request_rates", "request_distribution",
    "measurement_interval_ms", "measurement_mode", "measurement_request_count",
    "stability_percentage", "max_trials", "percentile", "headers", "ssl", "csv",
})  # fmt: skip


def _extra(own: list[str], _: Mapping[str, Any]) -> dict[str, Any]:
    """GenAI-Perf's ``--extra-inputs NAME:VALUE``: a JSON value where it parses as one
    (``ignore_eos:true``, ``min_tokens:64``), else the text."""
    found: dict[str, Any] = {}
    for text in own:
        name, sep, value = text.partition(":")
        if not sep or not name.strip():
            raise PerfError(f"--extra-inputs {text}: expected NAME:VALUE")
        try:
            found[name.strip()] = json.loads(value)
        except ValueError:
            found[name.strip()] = value
    return found


def _at_least(least: int, name: str) -> Any:
    def read(own: int, _: Mapping[str, Any]) -> int:
        if own < least:
            raise PerfError(f"{name} {own}: expected a number >= {least}")
        return own

    return read


@dataclass
class LlmSettings:
    endpoint_type: str = flag(
        "--endpoint-type", choices=ENDPOINT_TYPES, default="", group=GROUP,
        help="measure streamed generation: OpenAI chat or completions (/v1), Triton's "
        "generate_stream (HTTP) or ModelStreamInfer (gRPC, -u's default :8001)",
    )  # fmt: skip
    endpoint: str = flag("--endpoint", metavar="PATH", default="", group=GROUP,
                         help="the HTTP path, if not the endpoint type's")  # fmt: skip
    prompt: str = flag("--prompt", metavar="TEXT", default="", group=GROUP,
                       help="every request's prompt (default: synthetic prompts)")  # fmt: skip
    input_file: str = flag(
        "--input-file", metavar="FILE", default="", group=GROUP,
        help="prompts, one a line: GenAI-Perf's JSONL ({\"text\": ...}) or plain text",
    )  # fmt: skip
    prompt_tokens: int = flag(
        "--prompt-tokens", "--synthetic-input-tokens-mean", type=int, metavar="N", default=550,
        group=GROUP,
        help="synthetic prompts of this many words, each one token in common tokenizers "
        "(default {default})", read=_at_least(1, "--prompt-tokens"),
    )  # fmt: skip
    num_prompts: int = flag(
        "--num-prompts", "--num-dataset-entries", type=int, metavar="N", default=100, group=GROUP,
        help="distinct synthetic prompts, sent in turn (default {default})",
        read=_at_least(1, "--num-prompts"),
    )  # fmt: skip
    random_seed: int = flag("--random-seed", type=int, metavar="N", default=0, group=GROUP,
                            help="the synthetic prompts' seed (default {default})")  # fmt: skip
    max_tokens: int = flag(
        "--max-tokens", "--output-tokens-mean", type=int, metavar="N", default=128, group=GROUP,
        help="max_tokens of each request (default {default}; 0: not sent, the server "
        "decides)", read=_at_least(0, "--max-tokens"),
    )  # fmt: skip
    request_count: int = flag(
        "--request-count", type=int, metavar="N", default=0, group=GROUP,
        help="measure this many requests at each level instead of windows until stable",
        read=_at_least(0, "--request-count"),
    )  # fmt: skip
    warmup_request_count: int = flag(
        "--warmup-request-count", type=int, metavar="N", default=0, group=GROUP,
        help="requests completed and dropped before each level's measurement",
        read=_at_least(0, "--warmup-request-count"),
    )  # fmt: skip
    extra_inputs: dict[str, Any] = flag(
        "--extra-inputs", repeat=True, metavar="NAME:VALUE", default_factory=dict, group=GROUP,
        help="more fields of each request (JSON values: ignore_eos:true)", read=_extra,
    )  # fmt: skip
    text_input_name: str = flag(
        "--text-input-name", metavar="NAME", default="text_input", group=GROUP,
        help="the prompt's input (generate, grpc-stream)",
    )  # fmt: skip
    max_tokens_name: str = flag(
        "--max-tokens-name", metavar="NAME", default="max_tokens", group=GROUP,
        help="max_tokens' input (generate, grpc-stream; over gRPC a request parameter when "
        "the model has no such input)",
    )  # fmt: skip

    @property
    def http(self) -> bool:
        return self.endpoint_type != "grpc-stream"

    def path(self, model: str) -> str:
        from urllib.parse import quote

        if self.endpoint:
            return "/" + self.endpoint.lstrip("/")
        return PATHS[self.endpoint_type].format(model=quote(model, safe=""))


def check(perf_given: Mapping[str, Any], llm_given: Mapping[str, Any], llm: LlmSettings) -> None:
    """Flags that do not go together: an LLM flag without ``--endpoint-type``, a perf flag
    that an LLM measurement has no use for (``perf_given``/``llm_given``: the flags set)."""
    if not llm.endpoint_type:
        for name in llm_given:
            raise PerfError(f"{flag_name(LlmSettings, name)} needs --endpoint-type")
        return
    for name, value in perf_given.items():
        if name not in USED:
            given = "--embedded" if value == "embedded" else flag_name(PerfSettings, name)
            raise PerfError(f"{given} does not apply to --endpoint-type")
    if llm.prompt and llm.input_file:
        raise PerfError("--prompt and --input-file: give one")
    if llm.endpoint and not llm.http:
        raise PerfError("--endpoint is an HTTP path: not for --endpoint-type grpc-stream")
