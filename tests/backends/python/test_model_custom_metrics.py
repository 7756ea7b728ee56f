"""Custom metrics from Python models (pb_utils.MetricFamily) on the server's /metrics."""

from __future__ import annotations

import urllib.request

import numpy as np
import pytest
from pybackend_helpers import A, B
from pybackend_models import add_sub

pytestmark = pytest.mark.protocol

MODES = ["process", "thread"]

METRICS_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        labels = {"model": args["model_name"]}
        self.counter = pb_utils.MetricFamily(
            "my_counter", "requests seen", pb_utils.MetricFamily.COUNTER
        ).Metric(labels=labels)
        self.gauge = pb_utils.MetricFamily(
            "my_gauge", "last input sum", pb_utils.MetricFamily.GAUGE
        ).Metric(labels=labels)
        self.histogram = pb_utils.MetricFamily(
            "my_histogram", "input sums", pb_utils.MetricFamily.HISTOGRAM
        ).Metric(labels=labels, buckets=[1.0, 10.0])
        self.errors = []
        for bad in (
            lambda: pb_utils.MetricFamily("bad_kind", "", 7),
            lambda: pb_utils.MetricFamily("h2", "", pb_utils.MetricFamily.HISTOGRAM).Metric(),
            lambda: self.counter.increment(-1),
            lambda: pb_utils.MetricFamily("nv_inference_count", "", 0),
            lambda: pb_utils.MetricFamily("my_counter", "other text", 0),
            lambda: self.histogram.value(),
        ):
            try:
                bad()
            except pb_utils.TritonModelException:
                self.errors.append(1)
            else:
                self.errors.append(0)

    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "INPUT0").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "INPUT1").as_numpy()
            total = float(a.sum())
            self.counter.increment(1)
            self.gauge.set(total)
            self.histogram.observe(total)
            seen = self.counter.value()
            out0 = np.full(4, seen, dtype=np.float32)
            out1 = np.array([sum(self.errors), len(self.errors), 0, 0], dtype=np.float32)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("OUTPUT0", out0), pb_utils.Tensor("OUTPUT1", out1)
            ]))
        return responses
"""


def scrape(server) -> list[str]:
    url = f"http://127.0.0.1:{server.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode().splitlines()


@pytest.mark.parametrize("mode", MODES)
def test_custom_metrics_reach_the_endpoint(repo, serve, mode):
    add_sub(repo, "m", mode=mode, source=METRICS_MODEL)
    server = serve(repo, metrics_port=0, model_control_mode="explicit", load_models=("m",))
    for i in range(3):
        out = server.infer("m", {"INPUT0": A + i, "INPUT1": B})
        # value() is the server's value, read back after this request's increment
        np.testing.assert_array_equal(out["OUTPUT0"], np.full(4, i + 1, dtype=np.float32))
    # every misuse in initialize raised TritonModelException in the model
    np.testing.assert_array_equal(out["OUTPUT1"], np.array([6, 6, 0, 0], dtype=np.float32))
    lines = scrape(server)
    assert "# TYPE my_counter counter" in lines
    assert "# HELP my_counter requests seen" in lines
    assert 'my_counter{model="m"} 3' in lines
    assert "# TYPE my_gauge gauge" in lines
    assert 'my_gauge{model="m"} 14' in lines  # sum(A + 2) = 6 + 8
    assert "# TYPE my_histogram histogram" in lines
    assert 'my_histogram_bucket{model="m",le="1"} 0' in lines
    assert 'my_histogram_bucket{model="m",le="10"} 2' in lines  # 6, 10
    assert 'my_histogram_bucket{model="m",le="+Inf"} 3' in lines
    assert 'my_histogram_sum{model="m"} 30' in lines
    assert 'my_histogram_count{model="m"} 3' in lines
    assert not any(line.startswith("nv_my_") for line in lines)

    server._call(server.dataplane.unload_model("m"))
    lines = scrape(server)
    assert not any(line.startswith(("my_counter", "my_gauge", "my_histogram")) for line in lines)
    assert "# TYPE my_counter counter" not in lines


def test_family_stays_while_another_model_uses_it(repo, serve):
    add_sub(repo, "m", source=METRICS_MODEL)
    add_sub(repo, "n", mode="thread", source=METRICS_MODEL)
    server = serve(repo, metrics_port=0, model_control_mode="explicit", load_models=("m", "n"))
    server.infer("m", {"INPUT0": A, "INPUT1": B})
    server.infer("n", {"INPUT0": A, "INPUT1": B})
    lines = scrape(server)
    assert 'my_counter{model="m"} 1' in lines
    assert 'my_counter{model="n"} 1' in lines
    server._call(server.dataplane.unload_model("m"))
    lines = scrape(server)
    assert "# TYPE my_counter counter" in lines
    assert 'my_counter{model="n"} 1' in lines
    server._call(server.dataplane.unload_model("n"))
    assert "# TYPE my_counter counter" not in scrape(server)
