"""The pieces of ``naiad optimize`` that need no server: flags, sample files, drift
arithmetic, the version written and the config it may need."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from naiad.config import parse_config_text
from naiad.core import datatypes
from naiad.tools.optimize.errors import OptimizeError
from naiad.tools.optimize.inputs import (
    InputSpec,
    item_shape,
    load_samples,
    parse_datatypes,
    parse_shapes,
    random_samples,
)
from naiad.tools.optimize.measure import Latency, output_difference, top1
from naiad.tools.optimize.source import RepositoryModel
from naiad.tools.optimize.speed import FASTER, SLOWER, WITHIN, Round, Timing, spread, verdict
from naiad.tools.optimize.write import next_version, write_version

pytestmark = pytest.mark.unit

IMAGE = InputSpec("IMAGE", datatypes.FP32, (3, -1, -1), batched=True)
IDS = InputSpec("IDS", datatypes.INT64, (4,), batched=False)


def test_shapes_parse_as_perf_analyzer_writes_them() -> None:
    assert parse_shapes(["IMAGE:3,224,224", "a:b:2"]) == {"IMAGE": (3, 224, 224), "a:b": (2,)}
    for bad in ("IMAGE", "IMAGE:", ":3", "IMAGE:3,x", "IMAGE:0"):
        with pytest.raises(OptimizeError, match="expected NAME:d1,d2"):
            parse_shapes([bad])
    assert parse_datatypes(["x:int64", "y:TYPE_FP16"]) == {
        "x": datatypes.INT64,
        "y": datatypes.FP16,
    }
    with pytest.raises(OptimizeError, match="--datatype 'x:FLOAT'"):
        parse_datatypes(["x:FLOAT"])


def test_open_dimensions_take_the_given_shape_or_one() -> None:
    assert item_shape(IMAGE, {}) == (3, 1, 1)
    assert item_shape(IMAGE, {"IMAGE": (3, 8, 9)}) == (3, 8, 9)
    with pytest.raises(OptimizeError, match=r"does not fit the input's dims \[3,-1,-1\]"):
        item_shape(IMAGE, {"IMAGE": (4, 8, 9)})


def test_random_samples_follow_batching_and_datatypes() -> None:
    (sample,) = random_samples([IMAGE, IDS], {"IMAGE": (3, 2, 2)}, count=1, batch_size=5)
    assert sample["IMAGE"].shape == (5, 3, 2, 2) and sample["IMAGE"].dtype == np.float32
    assert sample["IDS"].shape == (4,) and sample["IDS"].dtype == np.int64
    again = random_samples([IMAGE, IDS], {"IMAGE": (3, 2, 2)}, count=1, batch_size=5)
    np.testing.assert_array_equal(again[0]["IMAGE"], sample["IMAGE"])  # seeded


def test_a_perf_analyzer_file_reads_in_every_spelling(tmp_path: Path) -> None:
    raw = np.arange(12, dtype=np.float32)
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"data": [
        {"IMAGE": {"content": raw.tolist(), "shape": [3, 2, 2]}, "IDS": [1, 2, 3, 4]},
        {"IMAGE": {"b64": base64.b64encode(raw.tobytes()).decode(), "shape": [3, 2, 2]},
         "IDS": {"content": [[1, 2], [3, 4]]}},
        {"IMAGE": raw.tolist(), "IDS": [5, 6, 7, 8]},
    ]}))  # fmt: skip
    samples = load_samples(path, [IMAGE, IDS], {"IMAGE": (3, 2, 2)})
    assert [s["IMAGE"].shape for s in samples] == [(1, 3, 2, 2)] * 3  # one batch item each
    for s in samples:
        np.testing.assert_array_equal(s["IMAGE"].ravel(), raw)
    assert samples[1]["IDS"].tolist() == [1, 2, 3, 4] and samples[2]["IDS"].dtype == np.int64

    with pytest.raises(OptimizeError, match=r"12 values do not fill shape \[3, 1, 1\]"):
        load_samples(path, [IMAGE, IDS], {})
    path.write_text(json.dumps({"data": [{"IMAGE": raw.tolist()}]}))
    with pytest.raises(OptimizeError, match=r"data\[0\] has no input 'IDS'"):
        load_samples(path, [IMAGE, IDS], {"IMAGE": (3, 2, 2)})
    path.write_text("{")
    with pytest.raises(OptimizeError, match="not a JSON input-data file"):
        load_samples(path, [IMAGE], {})


def test_an_npz_file_holds_samples_along_its_first_axis(tmp_path: Path) -> None:
    path = tmp_path / "data.npz"
    np.savez(path, IMAGE=np.zeros((6, 3, 2, 2)), IDS=np.ones((6, 4), np.int32))
    samples = load_samples(path, [IMAGE, IDS], {})
    assert len(samples) == 6
    assert samples[0]["IMAGE"].shape == (1, 3, 2, 2) and samples[0]["IMAGE"].dtype == np.float32
    assert samples[0]["IDS"].shape == (4,) and samples[0]["IDS"].dtype == np.int64
    with pytest.raises(OptimizeError, match="has no array 'OTHER'"):
        load_samples(path, [InputSpec("OTHER", datatypes.FP32, (1,), True)], {})


def test_drift_and_top1() -> None:
    a = np.array([[0.1, 0.9], [0.8, 0.2]], np.float32)
    b = np.array([[0.2, 0.7], [0.4, 0.6]], np.float32)
    assert output_difference(a, b) == pytest.approx(0.4)
    assert output_difference(a, a * np.nan) == np.inf  # NaN is as far as it gets
    assert top1(a, b) == (2, 1)
    assert top1(np.ones((2, 1), np.float32), np.ones((2, 1), np.float32)) is None
    assert top1(np.ones((2, 3), np.int32), np.ones((2, 3), np.int32)) is None
    s = np.array([b"a", b"b"], dtype=np.object_)
    assert output_difference(s, s) == 0.0 and output_difference(s, s[::-1]) == 1.0


def test_latency_percentiles_and_throughput() -> None:
    latency = Latency.of([1000] * 98 + [5000, 9000], batch_items=200)
    assert latency.p50_us == 1.0 and latency.p99_us > latency.p50_us
    assert latency.throughput == pytest.approx(200 / (112e-6))


def test_a_new_version_and_the_specific_policy_that_must_name_it(tmp_path: Path) -> None:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "3").mkdir()
    text = 'name: "m"\nversion_policy { specific { versions: [1, 3] } }\n'
    (tmp_path / "m" / "config.pbtxt").write_text(text)
    candidate = tmp_path / "c.onnx"
    candidate.write_bytes(b"onnx")
    model = RepositoryModel("m", tmp_path, parse_config_text(text), True, 3, "model.onnx")
    assert next_version(model) == 4
    assert write_version(model, 4, candidate) == tmp_path / "m" / "4" / "model.onnx"
    written = parse_config_text((tmp_path / "m" / "config.pbtxt").read_text())
    assert list(written.version_policy.specific.versions) == [1, 3, 4]
    with pytest.raises(OptimizeError, match="already has a version 4"):
        write_version(model, 4, candidate)


def test_without_torch_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from naiad.tools.optimize.torch_export import load_module

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    with pytest.raises(OptimizeError) as caught:
        load_module("model.pt")
    assert (
        str(caught.value) == "torch is not installed; install it with: pip install 'naiad[torch]'"
    )


def test_quantisation_runs_between_a_basic_and_the_asked_level() -> None:
    from naiad.tools.optimize.onnx_flow import _plan

    assert _plan(None, None) == [("extended", None)]
    assert _plan("all", None) == [("all", None)]
    assert _plan(None, "dynamic") == [("", "dynamic")]
    assert _plan("basic", "static") == [("basic", None), ("", "static")]
    assert _plan("all", "dynamic") == [("basic", None), ("", "dynamic"), ("all", None)]


def test_the_speed_verdict_needs_the_whole_interval_above_one() -> None:
    faster = verdict([1.30, 1.32, 1.28, 1.31, 1.29])
    assert faster.word == FASTER and faster.faster
    assert 1.28 < faster.low < faster.speedup < faster.high < 1.32
    slower = verdict([0.26, 0.25, 0.27, 0.26, 0.25])  # dynamic INT8 on a small convnet
    assert slower.word == SLOWER and not slower.faster and slower.high < 1
    # 47.3 vs 45.3: a 4% gain, but the rounds disagree by more than that.
    noisy = verdict([1.20, 0.90, 1.10, 0.95, 1.05])
    assert noisy.word == WITHIN and noisy.low < 1 < noisy.high
    # One round is no noise estimate: never "faster", however large.
    assert verdict([3.0]).word == WITHIN and "no noise estimate" in verdict([3.0]).describe()
    assert verdict([]).word == WITHIN
    # Fewer rounds widen the interval (Student's t): the same gain, less certainty.
    assert verdict([1.05, 1.10]).low < verdict([1.05, 1.10] * 4).low


def test_a_round_is_the_ratio_of_medians_so_one_stall_does_not_decide_it() -> None:
    stalled = Round(before_ns=(100, 100, 100, 100, 100), after_ns=(80, 80, 80, 80, 50_000),
                    items=5)  # fmt: skip
    assert stalled.speedup == pytest.approx(1.25)
    timing = Timing(planned=3, requests_per_round=5, rounds=[stalled, stalled])
    assert timing.items() == 10 and timing.verdict().speedup == pytest.approx(1.25)
    # Throughput is what the client saw, stall included: 5 items in 50.32 us.
    assert timing.throughputs("after")[0] == pytest.approx(5 / 50.32e-6)
    assert spread([10.0, 10.0]) == 0.0 and spread([9.0, 11.0]) == pytest.approx(0.1414, 1e-3)


def test_each_default_is_written_once_and_help_states_it():
    import argparse

    from naiad.tools.optimize import command

    parser = argparse.ArgumentParser(prog="naiad optimize")
    command.add_arguments(parser)
    args = parser.parse_args(["--torch", "net.pt"])
    assert (args.opset, args.samples, args.rounds, args.max_drift) == (17, 16, 5, 1e-3)
    text = " ".join(parser.format_help().split())
    for said in ("(default 17)", "(default optimized;", "(default 8)", "(default 16)",
                 "(default 200)", "(default 5, at least 2)", "(default 0.001;"):  # fmt: skip
        assert said in text
