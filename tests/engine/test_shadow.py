"""Shadow traffic (engine/shadow.py) through tritonclient: the client always gets the served
version's answer, the exact share of requests also runs on the candidate, and the drift,
class agreement, failures and latency it shows reach the dashboard's API and the metrics."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

pytestmark = pytest.mark.protocol

MODEL_PY = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.scale = np.float32(1 + 0.5 * (int(args["model_version"]) - 1))  # 1, 1.5

    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "{input}").as_numpy()
            out = pb_utils.Tensor("OUTPUT0", x * self.scale)
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
"""

CONFIG = """
backend: "python"
version_policy: {{ all {{ }} }}
input [{{ name: "{input}" data_type: TYPE_FP32 dims: [3] }}]
output [{{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [3] }}]
{parameters}
"""


def parameters(**values: str) -> str:
    return "".join(
        f'parameters {{ key: "naiad.shadow_{k}" value: {{ string_value: "{v}" }} }}\n'
        for k, v in values.items()
    )


def write_model(repo: Path, name: str, extra: str = "", input_name: str = "INPUT0") -> None:
    for version in (1, 2):
        (repo / name / str(version)).mkdir(parents=True, exist_ok=True)
        (repo / name / str(version) / "model.py").write_text(
            MODEL_PY.replace("{input}", input_name)
        )
    (repo / name / "config.pbtxt").write_text(CONFIG.format(input=input_name, parameters=extra))


def shadows(server: Any) -> dict[str, dict[str, Any]]:
    url = f"http://127.0.0.1:{server.http_port}/dashboard/api/shadows"
    with urllib.request.urlopen(url) as response:
        return {s["model"]: s for s in json.loads(response.read())["shadows"]}


def settled(server: Any, model: str, requests: int) -> dict[str, Any]:
    """The model's shadow once it has seen ``requests`` (shadows finish after the answer)."""
    deadline = time.monotonic() + 30
    while (seen := shadows(server)[model])["requests"] < requests:
        assert time.monotonic() < deadline, seen
        time.sleep(0.02)
    return seen


def metrics(server: Any) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics") as response:
        lines = response.read().decode().splitlines()
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in lines
        if line.startswith("naiad_shadow_")
    }


def infer(client: httpclient.InferenceServerClient, model: str, x: np.ndarray, **kw: Any) -> Any:
    tensor = httpclient.InferInput("INPUT0", [3], "FP32")
    tensor.set_data_from_numpy(x)
    return client.infer(model, [tensor], **kw)


def test_the_candidate_sees_its_share_and_the_client_only_the_served_answer(
    tmp_path: Path, serve: Any
) -> None:
    write_model(tmp_path, "scored", parameters(version="2", fraction="0.5"))
    server = serve(tmp_path, http=True, metrics_port=0)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    for i in range(1, 11):
        x = np.array([1, 2, 3], np.float32) * i
        result = infer(client, "scored", x, model_version="1")
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), x)  # version 1's answer
        settled(server, "scored", i // 2)  # a quiet server: each shadow ends before the next
    seen = settled(server, "scored", 5)
    assert seen["skipped"] == 0
    assert seen["shadow"] == "scored:2" and seen["fraction"] == 0.5
    assert (seen["requests"], seen["failures"]) == (5, 0)  # exactly every second request
    # Requests 2, 4, ... 10 went to both: version 2 answers 1.5 x, so the largest
    # difference is half of request 10's largest value, and always half relatively.
    assert seen["max_abs_diff"] == pytest.approx(15.0)
    assert seen["max_rel_diff"] == pytest.approx(0.5)
    assert seen["agreement"] == 1.0  # the same class (largest score) every time
    assert seen["served_us"] > 0 and seen["shadow_us"] > 0
    # Asked for version 2 itself, or for the served version's stats: no shadow involved.
    infer(client, "scored", np.ones(3, np.float32), model_version="2")
    stats = client.get_inference_statistics("scored")["model_stats"]
    assert {s["version"]: int(s["inference_count"]) for s in stats} == {"1": 10, "2": 6}
    labels = 'model="scored",shadow="scored:2"'
    values = metrics(server)
    assert values[f"naiad_shadow_request_count{{{labels}}}"] == 5
    assert values[f"naiad_shadow_failure_count{{{labels}}}"] == 0
    assert values[f"naiad_shadow_max_abs_diff{{{labels}}}"] == pytest.approx(15.0)
    assert values[f"naiad_shadow_agreement_ratio{{{labels}}}"] == 1.0
    client.close()


def test_a_candidate_that_fails_is_counted_and_the_client_never_sees_it(
    tmp_path: Path, serve: Any
) -> None:
    write_model(tmp_path, "scored", parameters(model="other", version="1"))
    write_model(tmp_path, "other", input_name="FEATURES")  # does not take INPUT0
    server = serve(tmp_path, http=True)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    for i in range(4):
        x = np.array([3, 1, 2], np.float32)
        np.testing.assert_array_equal(infer(client, "scored", x).as_numpy("OUTPUT0"), x * 1.5)
        settled(server, "scored", i + 1)
    seen = settled(server, "scored", 4)
    assert (seen["shadow"], seen["requests"], seen["failures"]) == ("other:1", 4, 4)
    assert seen["agreement"] is None and seen["served_us"] is None
    client.close()


SLOW_PY = """
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(0.2)  # a slow candidate
        return [pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(
            "OUTPUT0", pb_utils.get_input_tensor_by_name(r, "INPUT0").as_numpy())]) for r in requests]
"""


def test_a_busy_candidate_gets_one_request_at_a_time_and_the_rest_are_skipped(
    tmp_path: Path, serve: Any
) -> None:
    write_model(tmp_path, "scored", parameters(model="slow"))
    (tmp_path / "slow" / "1").mkdir(parents=True)
    (tmp_path / "slow" / "1" / "model.py").write_text(SLOW_PY)
    (tmp_path / "slow" / "config.pbtxt").write_text(CONFIG.format(input="INPUT0", parameters=""))
    server = serve(tmp_path, http=True)
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    start = time.monotonic()
    for _ in range(10):
        infer(client, "scored", np.ones(3, np.float32))
    assert time.monotonic() - start < 1.5  # ten answers never waited for a 0.2 s shadow each
    deadline = time.monotonic() + 30
    while (seen := shadows(server)["scored"])["requests"] + seen["skipped"] < 10:
        assert time.monotonic() < deadline, seen
        time.sleep(0.02)
    assert seen["requests"] >= 1 and seen["skipped"] >= 1, seen
    assert seen["failures"] == 0 and seen["max_abs_diff"] == pytest.approx(0.5)
    client.close()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"version": "2", "fraction": "2"}, "must be a number above 0 and at most 1, not '2'"),
        ({"version": "3"}, "must name a version its version policy loads ([1, 2]), not '3'"),
        ({"fraction": "0.5"}, "naiad.shadow_fraction needs naiad.shadow_version or "),
        ({"version": "two"}, "naiad.shadow_version must be a version number, not 'two'"),
    ],
)
def test_a_bad_shadow_fails_the_load_and_says_why(
    tmp_path: Path, serve: Any, values: dict[str, str], message: str
) -> None:
    write_model(tmp_path, "scored", parameters(**values))
    server = serve(tmp_path, http=True, model_control_mode="explicit")
    client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}")
    with pytest.raises(InferenceServerException) as info:
        client.load_model("scored")
    assert message in info.value.message() and "model 'scored'" in info.value.message()
    assert client.is_server_live()
    client.close()
