"""``naiad perf --endpoint-type``: GenAI-Perf's LLM figures, measured on a naiad started
here serving a small decoupled Python model that streams one word per response.

The figures are checked against each other and against what the model does, never
against the clock: every request streams exactly ``--max-tokens`` words, each sent
after a sleep, so a request cannot end before ``max_tokens`` sleeps, its first token
cannot come after its last, and tokens/s is requests/s times ``--max-tokens``."""

from __future__ import annotations

import csv
import http.client
import io
import math
from pathlib import Path
from textwrap import dedent

import pytest
from support.served import Served, naiad_serve

from naiad.cli import main

pytestmark = pytest.mark.e2e

SLEEP_MS = 10
MAX_TOKENS = 5

CONFIG = """\
name: "tiny_lm"
backend: "python"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [
  { name: "text_input" data_type: TYPE_STRING dims: [ 1 ] },
  { name: "max_tokens" data_type: TYPE_INT32 dims: [ 1 ] optional: true }
]
output [ { name: "text_output" data_type: TYPE_STRING dims: [ 1 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
parameters { key: "openai.api" value { string_value: "chat,completions" } }
parameters { key: "openai.input.max_tokens" value { string_value: "max_tokens" } }
"""

MODEL = dedent(f'''\
    """Streams max_tokens words (the input, else the request parameter max_tokens or
    limit, else 8), each after {SLEEP_MS} ms, then the final flag; a prompt starting
    "fail" is refused."""

    import json
    import threading
    import time

    import numpy as np
    import triton_python_backend_utils as pb_utils

    WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]


    class TritonPythonModel:
        def initialize(self, args):
            self.threads = []

        def execute(self, requests):
            for request in requests:
                prompt = pb_utils.get_input_tensor_by_name(request, "text_input")
                text = prompt.as_numpy().reshape(-1)[0]
                count = pb_utils.get_input_tensor_by_name(request, "max_tokens")
                if count is not None:
                    n = int(count.as_numpy().reshape(-1)[0])
                else:
                    parameters = json.loads(request.parameters() or "{{}}")
                    n = int(parameters.get("max_tokens", parameters.get("limit", 8)))
                sender = request.get_response_sender()
                if text.startswith(b"fail"):
                    error = pb_utils.TritonError("asked to fail")
                    sender.send(pb_utils.InferenceResponse(output_tensors=[], error=error),
                                flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                    continue
                thread = threading.Thread(target=self.stream, args=(sender, n), daemon=True)
                thread.start()
                self.threads.append(thread)
            return None

        def stream(self, sender, n):
            for i in range(n):
                time.sleep({SLEEP_MS / 1000})
                word = np.array([WORDS[i % len(WORDS)].encode()], dtype=np.object_)
                out = pb_utils.Tensor("text_output", word)
                sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

        def finalize(self):
            for thread in self.threads:
                thread.join(timeout=10)
''')


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("perf-llm") / "models"
    (root / "tiny_lm" / "1").mkdir(parents=True)
    (root / "tiny_lm" / "config.pbtxt").write_text(CONFIG)
    (root / "tiny_lm" / "1" / "model.py").write_text(MODEL)
    with naiad_serve(root) as server:
        yield server


def perf(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["perf", "-m", "tiny_lm", *args])
    out, err = capsys.readouterr()
    return code, out, err


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def figure(row: dict[str, str], name: str, statistic: str) -> float:
    return float(row[f"{name} {statistic}"])


def assert_consistent(row: dict[str, str], max_tokens: int = MAX_TOKENS) -> None:
    ttft, itl, latency = (
        "Time To First Token (ms)",
        "Inter Token Latency (ms)",
        "Request Latency (ms)",
    )
    osl = "Output Sequence Length (tokens)"
    # Every request streamed exactly max_tokens words, one a response.
    assert figure(row, osl, "min") == figure(row, osl, "max") == max_tokens
    # The first token comes before the last; none before the request went out.
    assert 0 < figure(row, ttft, "min") <= figure(row, latency, "min")
    assert figure(row, ttft, "avg") <= figure(row, latency, "avg")
    assert figure(row, ttft, "max") <= figure(row, latency, "max")
    # The model sleeps before each word: no request ends sooner than max_tokens sleeps.
    assert figure(row, latency, "min") >= max_tokens * SLEEP_MS
    # Per request, latency = TTFT + ITL * (tokens - 1): so too on average, tokens being equal.
    expected = figure(row, ttft, "avg") + figure(row, itl, "avg") * (max_tokens - 1)
    assert math.isclose(figure(row, latency, "avg"), expected, rel_tol=1e-3)
    # The gaps between words are the model's sleeps (a lower bound with room to spare).
    assert figure(row, itl, "avg") >= SLEEP_MS / 2
    assert figure(row, itl, "p50") <= figure(row, itl, "max")
    # Both throughputs count over the same seconds: tokens/s = requests/s * tokens.
    requests, tokens = (float(row["Request Throughput (per sec)"]),
                        float(row["Output Token Throughput (tokens/sec)"]))  # fmt: skip
    assert requests > 0
    assert math.isclose(tokens, requests * max_tokens, rel_tol=1e-3)


def test_generate_stream_at_two_concurrencies_for_a_request_count(served: Served, tmp_path,
                                                                   capsys):  # fmt: skip
    out_csv = tmp_path / "generate.csv"
    code, out, err = perf(capsys, "-u", f"127.0.0.1:{served.http_port}", "--endpoint-type",
                          "generate", "--max-tokens", str(MAX_TOKENS), "--concurrency-range",
                          "1:2", "--request-count", "6", "--prompt-tokens", "16",
                          "-f", str(out_csv))  # fmt: skip
    assert code == 0, err
    for expected in ("*** LLM Measurement Settings ***",
                     f"HTTP 127.0.0.1:{served.http_port}/v2/models/tiny_lm/generate_stream",
                     "Request concurrency: 1", "Request concurrency: 2",
                     "Time To First Token (ms)", "Inter Token Latency (ms)",
                     "Request Latency (ms)", "Output Sequence Length (tokens)",
                     "Output Token Throughput (tokens/sec)", "Request Throughput (per sec)",
                     "TTFT avg ms"):  # fmt: skip
        assert expected in out
    # The prompt's tokens: only a server that counts them (OpenAI's usage) says.
    assert "Input Sequence Length" not in out
    table = rows(out_csv)
    assert [r["Concurrency"] for r in table] == ["1", "2"]
    for row in table:
        assert row["Request Count"] == "6"
        assert row["Input Sequence Length (tokens) avg"] == ""
        assert_consistent(row)


def test_grpc_stream_at_a_request_rate_in_stable_windows(served: Served, tmp_path, capsys):
    out_csv = tmp_path / "grpc.csv"
    code, out, err = perf(capsys, "-u", f"127.0.0.1:{served.grpc_port}", "--endpoint-type",
                          "grpc-stream", "--max-tokens", str(MAX_TOKENS),
                          "--request-rate-range", "20", "-p", "400", "-r", "3", "-s", "100",
                          "--warmup-request-count", "2", "--prompt", "hello there",
                          "-f", str(out_csv))  # fmt: skip
    assert code == 0, err
    assert f"gRPC 127.0.0.1:{served.grpc_port} ModelStreamInfer" in out
    assert "Request rate: 20 requests per second" in out and "Warm-up: 2 requests" in out
    (row,) = rows(out_csv)
    assert row["Request Rate"] == "20"
    assert int(row["Request Count"]) > 0
    assert_consistent(row)


def test_max_tokens_as_a_parameter_over_grpc_or_as_an_extra_input(served: Served, tmp_path,
                                                                    capsys):  # fmt: skip
    url = f"127.0.0.1:{served.grpc_port}"
    # A --max-tokens-name the model has no input for goes as a request parameter.
    out_csv = tmp_path / "parameter.csv"
    code, _, err = perf(capsys, "-u", url, "--endpoint-type", "grpc-stream", "--max-tokens", "3",
                        "--max-tokens-name", "limit", "--request-count", "3",
                        "-f", str(out_csv))  # fmt: skip
    assert code == 0, err
    assert_consistent(rows(out_csv)[0], max_tokens=3)
    # --max-tokens 0 sends none; an --extra-inputs that names an input goes in it.
    code, _, err = perf(capsys, "-u", url, "--endpoint-type", "grpc-stream", "--max-tokens", "0",
                        "--extra-inputs", "max_tokens:4", "--request-count", "3",
                        "-f", str(out_csv))  # fmt: skip
    assert code == 0, err
    assert_consistent(rows(out_csv)[0], max_tokens=4)


def _serves_openai(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/v1/models")
        return connection.getresponse().status == 200
    finally:
        connection.close()


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_openai_streams(served: Served, tmp_path, capsys, endpoint):
    if not _serves_openai(served.http_port):
        pytest.skip("this naiad serves no OpenAI-compatible API (/v1) yet")
    out_csv = tmp_path / f"{endpoint}.csv"
    code, out, err = perf(capsys, "-u", f"127.0.0.1:{served.http_port}", "--endpoint-type",
                          endpoint, "--max-tokens", str(MAX_TOKENS), "--concurrency-range", "2",
                          "--request-count", "4", "-f", str(out_csv))  # fmt: skip
    assert code == 0, err
    path = "/v1/chat/completions" if endpoint == "chat" else "/v1/completions"
    assert f"HTTP 127.0.0.1:{served.http_port}{path}" in out
    (row,) = rows(out_csv)
    assert_consistent(row)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-tokens", "4"], "--max-tokens needs --endpoint-type"),
        (["--endpoint-type", "generate", "-b", "2"], "-b does not apply to --endpoint-type"),
        (["--endpoint-type", "generate", "--embedded"],
         "--embedded does not apply to --endpoint-type"),
        (["--endpoint-type", "generate", "--prompt-tokens", "0"],
         "--prompt-tokens 0: expected a number >= 1"),
        (["--endpoint-type", "generate", "--prompt", "fail now", "--request-count", "2"],
         "the server answered a request with an error: asked to fail"),
        (["--endpoint-type", "grpc-stream", "--prompt", "fail now", "--request-count", "2"],
         "the server answered a request with an error: asked to fail"),
        (["--endpoint-type", "grpc-stream", "--text-input-name", "nope"],
         "--text-input-name nope: model 'tiny_lm' has no such BYTES input"),
        (["--endpoint-type", "generate", "-m", "nosuch"], "model 'nosuch': "),
    ],
)  # fmt: skip
def test_each_mistake_is_one_line(served: Served, capsys, args, message):
    port = served.grpc_port if "grpc-stream" in args else served.http_port
    code, _, err = perf(capsys, "-u", f"127.0.0.1:{port}", *args)
    assert code == 1
    # One line says what is wrong (after the progress lines of a measurement under way).
    (said,) = [line for line in err.splitlines() if line.startswith("naiad perf:")]
    assert message in said and "Traceback" not in err


def test_a_server_that_is_not_there(capsys):
    code, _, err = perf(capsys, "-u", "127.0.0.1:9", "--endpoint-type", "chat")
    assert code == 1 and "no server answers at 127.0.0.1:9 over HTTP" in err
