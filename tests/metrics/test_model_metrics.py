"""Per-model nv_* metrics: exact names, labels and values after known traffic."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from metrics.helpers import add_fake, add_simple, samples, scrape, simple_inputs

from naiad.core.errors import NaiadError

pytestmark = pytest.mark.protocol

LABELS = 'model="simple",version="1"'


def test_counts_move_by_the_right_amounts(repo, serve):
    add_simple(repo)
    server = serve(repo, metrics_port=0)
    before = samples(scrape(server))
    assert before[f"nv_inference_request_success{{{LABELS}}}"] == 0
    assert before[f"nv_inference_count{{{LABELS}}}"] == 0
    for rows in (1, 3, 8):
        server.infer("simple", simple_inputs(rows))
    after = samples(scrape(server))
    assert after[f"nv_inference_request_success{{{LABELS}}}"] == 3
    assert after[f"nv_inference_count{{{LABELS}}}"] == 12  # batch rows
    assert after[f"nv_inference_exec_count{{{LABELS}}}"] == 3
    assert after[f"nv_inference_pending_request_count{{{LABELS}}}"] == 0
    for reason in ("BACKEND", "CANCELED", "OTHER", "REJECTED"):
        key = f'nv_inference_request_failure{{model="simple",reason="{reason}",version="1"}}'
        assert after[key] == 0
    stats = server.statistics("simple")["model_stats"][0]["inference_stats"]
    # The latency counters are the statistics extension's, in microseconds.
    assert after[f"nv_inference_request_duration_us{{{LABELS}}}"] == stats["success"]["ns"] // 1000
    assert after[f"nv_inference_queue_duration_us{{{LABELS}}}"] == stats["queue"]["ns"] // 1000
    for phase in ("input", "infer", "output"):
        key = f"nv_inference_compute_{phase}_duration_us{{{LABELS}}}"
        assert after[key] == stats[f"compute_{phase}"]["ns"] // 1000


def test_exact_help_type_lines_and_no_total_suffix(repo, serve):
    add_simple(repo)
    server = serve(repo, metrics_port=0)
    server.infer("simple", simple_inputs())
    text = scrape(server)
    assert not [line for line in text.splitlines() if line.split("{")[0].endswith("_total")]
    for line in (
        "# HELP nv_inference_request_success Number of successful inference requests, "
        "all batch sizes",
        "# TYPE nv_inference_request_success counter",
        "# HELP nv_inference_request_failure Number of failed inference requests, all batch sizes",
        "# HELP nv_inference_count Number of inferences performed (does not include cached "
        "requests)",
        "# HELP nv_inference_exec_count Number of model executions performed (does not include "
        "cached requests)",
        "# HELP nv_inference_pending_request_count Instantaneous number of pending requests "
        "awaiting execution per-model.",
        "# TYPE nv_inference_pending_request_count gauge",
        "# TYPE nv_inference_request_duration_us counter",
        f"nv_inference_request_success{{{LABELS}}} 1",
        'nv_inference_request_failure{model="simple",reason="BACKEND",version="1"} 0',
    ):
        assert line in text.splitlines(), line
    # Histograms and summaries are off by default.
    assert "nv_inference_first_response_histogram_ms" not in text
    assert "summary_us" not in text


def test_metric_tags_become_underscore_labels(repo, serve):
    add_simple(repo, extra='metric_tags { key: "team" value: "vision" }\n')
    server = serve(repo, metrics_port=0)
    server.infer("simple", simple_inputs())
    values = samples(scrape(server))
    assert values['nv_inference_request_success{_team="vision",model="simple",version="1"}'] == 1


def test_failures_are_counted_by_reason(repo, start_fake):
    add_fake(repo)
    server = start_fake(repo)
    data = {"IN": np.ones(2, np.float32)}
    server.infer("fake", data)
    with pytest.raises(NaiadError, match="the model failed"):
        server.infer("fake", data, parameters={"fail": True})
    values = samples(scrape(server))
    labels = 'model="fake",reason="{}",version="1"'
    assert values["nv_inference_request_failure{" + labels.format("BACKEND") + "}"] == 1
    assert values["nv_inference_request_failure{" + labels.format("OTHER") + "}"] == 0
    assert values['nv_inference_request_success{model="fake",version="1"}'] == 1
    # A failed execution is no inference.
    assert values['nv_inference_exec_count{model="fake",version="1"}'] == 1
    # The compute phases the backend reported, per request, in µs.
    assert values['nv_inference_compute_infer_duration_us{model="fake",version="1"}'] == 5


def test_pending_requests_gauge(repo, start_fake, fake_backend):
    add_fake(repo)
    server = start_fake(repo)
    fake_backend.release.clear()
    data = {"IN": np.ones(2, np.float32)}

    async def three_requests() -> tuple[str, list[asyncio.Task]]:
        tasks = [asyncio.ensure_future(server.infer_async("fake", data)) for _ in range(3)]
        await asyncio.sleep(0)  # each task admits and enqueues its request
        return server.dataplane.metrics.render(), tasks

    text, tasks = server._call(three_requests())
    # One executes (the only instance), two wait in the queue.
    assert samples(text)['nv_inference_pending_request_count{model="fake",version="1"}'] == 2
    fake_backend.release.set()

    async def finish() -> None:
        await asyncio.gather(*tasks)

    server._call(finish())
    values = samples(scrape(server))
    assert values['nv_inference_pending_request_count{model="fake",version="1"}'] == 0
    assert values['nv_inference_request_success{model="fake",version="1"}'] == 3


def test_series_appear_at_load_and_vanish_at_unload(repo, serve):
    add_simple(repo)
    add_simple(repo, "other")
    server = serve(repo, metrics_port=0, model_control_mode="explicit", load_models=("*",))
    assert f"nv_inference_count{{{LABELS}}}" in samples(scrape(server))
    server._call(server.dataplane.unload_model("simple"))
    text = scrape(server)
    assert 'model="simple"' not in text
    assert 'model="other"' in text


def test_histogram_and_summaries_when_configured(repo, serve):
    buckets = (
        "model_metrics { metric_control [{ "
        'metric_identifier { family: "nv_inference_first_response_histogram_ms" } '
        "histogram_options { buckets: [1e6, 2e6] } }] }\n"
    )
    add_simple(repo)
    add_simple(repo, "custom", extra=buckets)
    server = serve(
        repo,
        metrics_port=0,
        metrics_config={
            "histogram_latencies": "true",
            "summary_latencies": "true",
            "summary_quantiles": "0.5:0.05,0.9:0.01",
            "counter_latencies": "false",
        },
    )
    for _ in range(4):
        server.infer("simple", simple_inputs())
    server.infer("custom", simple_inputs())
    text = scrape(server)
    values = samples(text)
    assert "# TYPE nv_inference_first_response_histogram_ms histogram" in text
    hist = "nv_inference_first_response_histogram_ms"
    assert values[f"{hist}_count{{{LABELS}}}"] == 4
    assert values[f'{hist}_bucket{{{LABELS},le="+Inf"}}'] == 4
    for le in ("100", "500", "2000", "5000"):  # Triton's default buckets
        assert f'{hist}_bucket{{{LABELS},le="{le}"}}' in values
    custom = 'model="custom",version="1"'
    assert values[f'{hist}_bucket{{{custom},le="1000000"}}'] == 1
    assert values[f'{hist}_bucket{{{custom},le="2000000"}}'] == 1
    assert f'{hist}_bucket{{{custom},le="100"}}' not in values
    assert "# TYPE nv_inference_request_summary_us summary" in text
    assert values[f"nv_inference_request_summary_us_count{{{LABELS}}}"] == 4
    assert f'nv_inference_queue_summary_us{{{LABELS},quantile="0.9"}}' in values
    assert f'nv_inference_queue_summary_us{{{LABELS},quantile="0.95"}}' not in values
    assert "nv_inference_request_duration_us" not in text  # counter_latencies=false


def test_two_servers_in_one_process_keep_separate_series(tmp_path, serve):
    repos = []
    for name in ("a", "b"):
        repo = tmp_path / name
        add_simple(repo)
        repos.append(repo)
    one = serve(repos[0], metrics_port=0)
    two = serve(repos[1], metrics_port=0)
    one.infer("simple", simple_inputs())
    one.infer("simple", simple_inputs())
    one.dataplane.metrics.family("only_here", "Custom", "gauge").metric().set(1)
    assert samples(scrape(one))[f"nv_inference_request_success{{{LABELS}}}"] == 2
    other = scrape(two)
    assert samples(other)[f"nv_inference_request_success{{{LABELS}}}"] == 0
    assert "only_here" not in other


def test_allow_metrics_false_reports_nothing(repo, serve):
    add_simple(repo)
    server = serve(repo, allow_metrics=False)
    server.infer("simple", simple_inputs())
    assert server.metrics_port is None
    assert "nv_inference" not in server.dataplane.metrics.render()
