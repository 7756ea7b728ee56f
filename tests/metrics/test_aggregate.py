"""The ``--workers`` metrics port: the workers' expositions summed, host readings once."""

from __future__ import annotations

import pytest

from naiad.metrics.aggregate import sum_expositions

pytestmark = pytest.mark.unit

WORKER = """# HELP nv_inference_request_success Number of successful inference requests
# TYPE nv_inference_request_success counter
nv_inference_request_success{{model="add_sub",version="1"}} {n}
nv_inference_request_success{{model="a \\"quoted\\" name",version="1"}} 1
# HELP nv_inference_queue_duration_us Cumulative inference queuing duration in microseconds
# TYPE nv_inference_queue_duration_us counter
nv_inference_queue_duration_us{{model="add_sub",version="1"}} 2.5
# HELP nv_cpu_utilization CPU utilization rate [0.0 - 1.0]
# TYPE nv_cpu_utilization gauge
nv_cpu_utilization {cpu}
# HELP h latency
# TYPE h histogram
h_bucket{{le="100"}} {n}
h_bucket{{le="+Inf"}} {n}
h_sum 10.25
h_count {n}
"""


def test_samples_add_up_and_host_readings_do_not() -> None:
    text = sum_expositions([WORKER.format(n=3, cpu=0.5), WORKER.format(n=4, cpu=0.75)])
    assert text == WORKER.format(n=7, cpu=0.75).replace(" 1\n", " 2\n").replace(
        " 2.5\n", " 5\n"
    ).replace("h_sum 10.25", "h_sum 20.5")


def test_a_family_one_worker_lacks_still_appears() -> None:
    only = "# HELP x y\n# TYPE x gauge\nx 1\n"
    assert sum_expositions([only, ""]) == only
    assert sum_expositions([]) == ""
