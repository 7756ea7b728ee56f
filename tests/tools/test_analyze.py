"""``naiad analyze`` end to end: a real ONNX model built here, searched through the
CLI against the naiad server it starts, its best repository served by naiad and
asked with tritonclient; Ctrl-C halfway still writes what finished.

Grids are tiny and windows short (300 ms, at most 3 per concurrency, 50%
stability) so the file runs in well under a minute and a half on two cores;
the search's quality is checked in test_analyze_units.py.
"""

from __future__ import annotations

import csv
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import tritonclient.http as httpclient
from support.interrupts import as_at_a_terminal
from support.onnx_models import matmul, write_config
from support.served import naiad_serve

from naiad.cli import main

pytestmark = pytest.mark.e2e

SIZE = 32
SHORT = ["-p", "300", "--max-trials", "3", "-s", "50", "--concurrency", "1,4"]
CONFIG = f"""name: "mm"
backend: "onnxruntime"
max_batch_size: 8
input [{{ name: "INPUT0" data_type: TYPE_FP32 dims: [{SIZE}] }}]
output [{{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [{SIZE}] }}]
instance_group [{{ kind: KIND_CPU count: 1 }}]
"""


@pytest.fixture
def mm_repo(repo: Path) -> Path:
    matmul(repo / "mm" / "1" / "model.onnx", size=SIZE)
    write_config(repo / "mm", CONFIG)
    return repo


def rows(out: Path) -> list[dict[str, str]]:
    with (out / "results.csv").open(newline="") as file:
        return list(csv.DictReader(file))


def test_a_brute_search_writes_csv_report_and_a_repository_that_serves(
    mm_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "reports"
    grid = ["--instances", "1,2", "--max-batch-sizes", "8", "--delays-us", "0",
            "--intra-op-threads", "0"]  # fmt: skip
    code = main(["analyze", "-m", "mm", "--model-repository", str(mm_repo), "-o", str(out),
                 "--search", "brute", "--latency-budget", "1000", *grid, *SHORT])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    # instances 1,2 x dynamic batching off, on (max batch 8, no delay)
    assert re.findall(r"^trial (\d)/4: ", printed, re.M) == ["1", "2", "3", "4"]

    found = rows(out)
    assert len(found) == 4 * 2
    assert {r["concurrency"] for r in found} == {"1", "4"}
    assert {r["config"] for r in found} >= {"instances=1 batch=8 dyn=off",
                                            "instances=2 batch=8 dyn=on delay=0us"}  # fmt: skip
    for row in found:
        assert row["error"] == ""
        assert float(row["throughput_infer_per_sec"]) > 0
        assert 0 < float(row["p50_us"]) <= float(row["p90_us"]) <= float(row["p99_us"])
        assert float(row["server_cpu_percent"]) > 0 and float(row["rss_mb"]) > 20
        assert row["meets_constraints"] == "1"
        assert row["repeats"] == "2" and float(row["throughput_ci95"]) >= 0
    assert re.search(r"^  why: (highest throughput|within the noise of the highest)", printed,
                     re.M), printed  # fmt: skip

    page = (out / "report.html").read_text()
    assert len(re.findall(r'src="data:image/png;base64,[A-Za-z0-9+/=]{1000,}"', page)) == 2
    assert "Chosen configuration" in page and "Pareto front" in page and "<p>Why: " in page
    assert "2 sweep(s) per configuration" in page

    folder = out / "best_repository" / "mm"
    assert (folder / "1" / "model.onnx").is_file()
    written = (folder / "config.pbtxt").read_text()
    assert written.startswith("# chosen by naiad analyze (brute search, p99 <= 1000 ms)")
    weights = np.random.default_rng(0).standard_normal((SIZE, SIZE)).astype(np.float32)
    with naiad_serve(out / "best_repository") as served:
        client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")
        try:
            batch = np.random.default_rng(1).random((3, SIZE), dtype=np.float32)
            inputs = [httpclient.InferInput("INPUT0", [3, SIZE], "FP32")]
            inputs[0].set_data_from_numpy(batch)
            got = client.infer("mm", inputs).as_numpy("OUTPUT0")
            np.testing.assert_allclose(got, batch @ weights, rtol=1e-4, atol=1e-4)
            config = client.get_model_config("mm")
        finally:
            client.close()
    best = next(r for r in found if r["trial"] == re.search(r"best: #(\d+)", printed).group(1))
    assert config["instance_group"][0]["count"] == int(best["instances"])
    assert ("dynamic_batching" in config) == (best["dynamic_batching"] == "on")


def test_quick_takes_at_most_a_third_of_the_grid(mm_repo: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    out = tmp_path / "quick"
    grid = ["--instances", "1,2", "--max-batch-sizes", "4,8", "--delays-us", "0,200",
            "--intra-op-threads", "0,1"]  # fmt: skip
    # 2 instances x 2 intra x (off + on x 2 sizes x 2 delays) = 20 configurations
    code = main(["analyze", "-m", "mm", "--model-repository", str(mm_repo), "-o", str(out),
                 *grid, *SHORT, "--concurrency", "4"])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "quick search: 6 trials of a grid of 20 configurations" in printed
    trials = {r["trial"] for r in rows(out)}
    assert 1 <= len(trials) <= 20 // 3
    assert (out / "best_repository" / "mm" / "config.pbtxt").is_file()


@pytest.mark.parametrize("after_s", [0.0, 0.7], ids=["between-trials", "mid-sweep"])
def test_ctrl_c_keeps_the_finished_trials(mm_repo: Path, tmp_path: Path, after_s: float) -> None:
    """SIGINT as trial 2 loads, and (most likely) while its sweep runs on the event loop,
    where Python's own handler would raise inside a transport callback."""
    out = tmp_path / "stopped"
    command = [sys.executable, "-m", "naiad", "analyze", "-m", "mm", "--model-repository",
               str(mm_repo), "-o", str(out), "--search", "brute", *SHORT]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            preexec_fn=as_at_a_terminal)  # fmt: skip
    lines: list[str] = []
    first = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("trial 1/"):
                first.set()
        first.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert first.wait(120), "".join(lines)
        time.sleep(after_s)
        assert proc.poll() is None, "".join(lines)
        proc.send_signal(signal.SIGINT)
        proc.wait(60)  # stdout is the reader thread's alone (communicate would take lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    assert proc.stderr is not None and proc.stdout is not None
    err = proc.stderr.read()
    proc.stderr.close()
    proc.stdout.close()
    printed = "".join(lines)
    assert proc.returncode == 130, printed + err
    assert "Traceback" not in err, err
    assert "interrupted: writing the" in printed
    finished = {r["trial"] for r in rows(out)}
    assert "1" in finished
    assert "Interrupted" in (out / "report.html").read_text()
    assert len(finished) == int(re.search(r"writing the (\d+) finished", printed).group(1))


def test_a_model_that_does_not_load_is_one_line(repo: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    (repo / "broken" / "1").mkdir(parents=True)
    (repo / "broken" / "1" / "model.onnx").write_bytes(b"not onnx")
    write_config(repo / "broken", 'backend: "onnxruntime"\nmax_batch_size: 4\n')
    code = main(["analyze", "-m", "broken", "--model-repository", str(repo),
                 "-o", str(tmp_path / "out"), *SHORT])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("naiad analyze: error: model 'broken' does not load:") and "\n" not in err


def test_a_server_that_does_not_start_is_one_line(mm_repo: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    code = main(["analyze", "-m", "mm", "--model-repository", str(mm_repo), "-o",
                 str(tmp_path / "out"), "--startup-timeout", "0.001"])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == "naiad analyze: error: the naiad server did not start within 0.001 s"


def test_a_latency_budget_nothing_meets_excludes_everything_and_says_so(
    mm_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tight"
    code = main(["analyze", "-m", "mm", "--model-repository", str(mm_repo), "-o", str(out),
                 "--latency-budget", "0.001", "--instances", "1", "--dynamic-batching", "off",
                 "--intra-op-threads", "0", "--repeats", "1", *SHORT])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1, captured.out + captured.err
    assert "excluded by the constraints (p99 <= 0.001 ms): #1" in captured.out
    assert "no configuration met the constraints (p99 <= 0.001 ms)" in captured.err
    page = (out / "report.html").read_text()
    assert "Excluded by the constraints (p99 &lt;= 0.001 ms), at every concurrency:" in page
    assert {r["meets_constraints"] for r in rows(out)} == {"0"}
    assert {r["repeats"] for r in rows(out)} == {"1"}
