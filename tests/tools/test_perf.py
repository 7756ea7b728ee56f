"""``naiad perf`` against a naiad started here: HTTP, gRPC and in-process, its report and
CSV as perf_analyzer writes them, stateful and decoupled models, shared memory, and one
clear line for each mistake a user makes."""

from __future__ import annotations

import base64
import csv
import io
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scheduling.sequence_models import acc_state
from support import onnx_models
from support.onnx_models import write_config
from support.reference import PERF_ANALYZER, needs_perf_analyzer
from support.served import naiad_serve

from naiad.cli import main

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "model_repository"
#: Short windows that agree at once: these tests check the tool, not the machine.
QUICK = ["-p", "200", "-r", "3", "-s", "100"]

HEADER = ("Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
          "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
          "p50 latency,p90 latency,p95 latency,p99 latency")  # fmt: skip
VERBOSE = HEADER + ",Avg latency,request/response,response wait"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("perf") / "models"
    onnx_models.add_sub(root / "add_sub" / "1" / "model.onnx", shape=("batch", 4))
    write_config(root / "add_sub", "max_batch_size: 8\ndynamic_batching { }\n")
    onnx_models.identity(root / "words" / "1" / "model.onnx", "BYTES", ("batch", -1))
    write_config(root / "words", "max_batch_size: 8\n")
    acc_state(root)
    shutil.copytree(EXAMPLES / "repeat", root / "repeat")
    return root


@pytest.fixture(scope="module")
def served(repo: Path):
    with naiad_serve(repo, "--allow-client-shm=true") as server:
        yield server


def perf(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["perf", *args])
    out, err = capsys.readouterr()
    return code, out, err


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_http_sweep_reports_like_perf_analyzer(served, tmp_path, capsys):
    out_csv = tmp_path / "http.csv"
    code, out, err = perf(capsys, "-m", "add_sub", "-u", f"127.0.0.1:{served.http_port}",
                          "--concurrency-range", "1:3:2", *QUICK, "-f", str(out_csv))  # fmt: skip
    assert code == 0, err
    for expected in ("*** Measurement Settings ***", "Request concurrency: 1",
                     "Request concurrency: 3", "Avg HTTP time:", "Successful request count:",
                     "Inferences/Second vs. Client Average Batch Latency"):  # fmt: skip
        assert expected in out
    assert out_csv.read_text().splitlines()[0] == HEADER
    table = rows(out_csv)
    assert [r["Concurrency"] for r in table] == ["1", "3"]
    for row in table:
        assert float(row["Inferences/Second"]) > 0
        assert int(row["p99 latency"]) >= int(row["p50 latency"]) > 0
    # The server's side comes from its statistics: the requests it counted are ours.
    count = int(out.split("Successful request count: ")[1].split()[0])
    requests = int(out.split("Request count: ")[1].split()[0])
    assert count >= requests > 0


def test_grpc_and_the_verbose_csv(served, tmp_path, capsys):
    out_csv = tmp_path / "grpc.csv"
    code, out, err = perf(capsys, "-m", "add_sub", "-i", "grpc", "-u",
                          f"127.0.0.1:{served.grpc_port}", *QUICK, "-f", str(out_csv),
                          "--verbose-csv", "--percentile", "95")  # fmt: skip
    assert code == 0, err
    assert "Avg gRPC time:" in out and "Stabilizing using p95 latency" in out
    assert "Inferences/Second vs. Client p95 Batch Latency" in out
    assert out_csv.read_text().splitlines()[0] == VERBOSE
    (row,) = rows(out_csv)
    transfer, wait = int(row["request/response"]), int(row["response wait"])
    assert abs(transfer + wait - int(row["Avg latency"])) <= 1


def test_embedded_request_rates_and_the_plot(repo, tmp_path, capsys):
    png = tmp_path / "latency.png"
    code, out, err = perf(capsys, "-m", "add_sub", "--embedded", "--model-repository", str(repo),
                          "--request-rate-range", "100:200:100", *QUICK, "--plot", str(png),
                          "-f", str(tmp_path / "rate.csv"))  # fmt: skip
    assert code == 0, err
    assert "Server: in-process (embedded)" in out
    assert "Request Rate: 100 inference requests per seconds" in out
    table = rows(tmp_path / "rate.csv")
    assert [r["Request Rate"] for r in table] == ["100", "200"]
    # A schedule of arrivals: the rate reached is the rate asked.
    assert [round(float(r["Inferences/Second"]) / 100) for r in table] == [1, 2]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_sequences_strings_and_shared_memory(served, capsys):
    url = f"127.0.0.1:{served.http_port}"
    # A stateful model: whole sequences with START and END (the batcher refuses anything else).
    code, out, err = perf(capsys, "-m", "acc_state", "-u", url, "--sequence-length", "4",
                          "--concurrency-range", "2", *QUICK)  # fmt: skip
    assert code == 0, err
    code, out, err = perf(capsys, "-m", "words", "-u", url, "--shape", "INPUT0:3",
                          "--string-length", "8", *QUICK)  # fmt: skip
    assert code == 0, err
    for protocol, port in (("http", served.http_port), ("grpc", served.grpc_port)):
        code, out, err = perf(capsys, "-m", "add_sub", "-i", protocol, "-u", f"127.0.0.1:{port}",
                              "--shared-memory", "system", *QUICK)  # fmt: skip
        assert code == 0, err
    # Every region it registered is gone again.
    status = (
        subprocess.run(
            ["curl", "-s", f"http://{url}/v2/systemsharedmemory/status"], capture_output=True
        ).stdout
        if shutil.which("curl")
        else b"[]"
    )
    assert json.loads(status) == []


def test_a_decoupled_model_over_grpc_streams(served, capsys):
    code, out, err = perf(capsys, "-m", "repeat", "-i", "grpc", "-u",
                          f"127.0.0.1:{served.grpc_port}", "--streaming", "--shape", "IN:3",
                          *QUICK)  # fmt: skip
    assert code == 0, err
    assert "Request concurrency: 1" in out


def test_input_data_files_in_perf_analyzers_format(served, tmp_path, capsys):
    data = tmp_path / "data.json"
    a = np.arange(4, dtype=np.float32)
    data.write_text(json.dumps({"data": [
        {"INPUT0": [1, 2, 3, 4], "INPUT1": {"content": [1, 1, 1, 1], "shape": [4]}},
        {"INPUT0": {"b64": base64.b64encode(a.tobytes()).decode()}, "INPUT1": [0, 0, 0, 0]},
    ]}))  # fmt: skip
    code, out, err = perf(capsys, "-m", "add_sub", "-u", f"127.0.0.1:{served.http_port}",
                          "--input-data", str(data), *QUICK)  # fmt: skip
    assert code == 0, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "nosuch"], "model 'nosuch': Request for unknown model"),
        (["-m", "words"], "input 'INPUT0' has a variable shape [-1]: give one with "
                          "--shape INPUT0:1"),
        (["-m", "add_sub", "-b", "9"], "-b 9: more than model 'add_sub''s max_batch_size 8"),
        (["-m", "add_sub", "--concurrency-range", "0:4"], "--concurrency-range 0:4: expected"),
        (["-m", "add_sub", "--shape", "NOPE:1"], "--shape NOPE: model 'add_sub' has no input"),
        (["-m", "add_sub", "--input-data", "{bad}"], "--input-data {bad}: no such file"),
        (["-m", "add_sub", "--streaming"], "--streaming needs -i grpc"),
    ],
)  # fmt: skip
def test_each_mistake_is_one_line(served, capsys, args, message):
    code, out, err = perf(capsys, *args, "-u", f"127.0.0.1:{served.http_port}", *QUICK)
    assert code == 1
    assert err.strip() == f"naiad perf: {err.strip().removeprefix('naiad perf: ')}"
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_data_file_that_does_not_fit_and_a_server_that_is_not_there(served, tmp_path, capsys):
    data = tmp_path / "short.json"
    data.write_text(json.dumps({"data": [{"INPUT0": [1, 2, 3], "INPUT1": [1, 2, 3, 4]}]}))
    code, _, err = perf(capsys, "-m", "add_sub", "-u", f"127.0.0.1:{served.http_port}",
                        "--input-data", str(data), *QUICK)  # fmt: skip
    assert code == 1
    assert "data[0].INPUT0: 3 values do not fill shape [4]" in err
    data.write_text(json.dumps({"data": [{"INPUT0": [1, 2, 3, 4]}]}))
    code, _, err = perf(capsys, "-m", "add_sub", "-u", f"127.0.0.1:{served.http_port}",
                        "--input-data", str(data), *QUICK)  # fmt: skip
    assert "data[0] has no input 'INPUT1'" in err
    code, _, err = perf(capsys, "-m", "add_sub", "-u", "127.0.0.1:9", *QUICK)
    assert code == 1 and "no server answers at 127.0.0.1:9 over HTTP" in err
    code, _, err = perf(capsys, "-m", "add_sub", "-i", "grpc", "-u", "127.0.0.1:9", *QUICK)
    assert code == 1 and "no server answers at 127.0.0.1:9 over gRPC" in err


@needs_perf_analyzer
def test_the_csv_columns_are_perf_analyzers(served, tmp_path, capsys):
    for extra in ([], ["--verbose-csv"]):
        theirs, ours = tmp_path / "theirs.csv", tmp_path / "ours.csv"
        subprocess.run([str(PERF_ANALYZER), "-m", "add_sub", "-u",
                        f"127.0.0.1:{served.http_port}", "-p", "200", "-s", "1000", "-r", "10",
                        "-f", str(theirs), *extra],
                       check=True, capture_output=True)  # fmt: skip
        code, _, err = perf(capsys, "-m", "add_sub", "-u", f"127.0.0.1:{served.http_port}",
                            *QUICK, "-f", str(ours), *extra)  # fmt: skip
        assert code == 0, err
        assert ours.read_text().splitlines()[0] == theirs.read_text().splitlines()[0]


def test_collect_metrics_reads_the_metrics_port(served, tmp_path, capsys):
    out_csv = tmp_path / "metrics.csv"
    code, _, err = perf(capsys, "-m", "add_sub", "-u", f"127.0.0.1:{served.http_port}", *QUICK,
                        "--collect-metrics", "--metrics-interval", "50", "--metrics-url",
                        f"127.0.0.1:{served.metrics_port}/metrics", "--verbose-csv",
                        "-f", str(out_csv))  # fmt: skip
    assert code == 0, err
    assert (
        out_csv.read_text()
        .splitlines()[0]
        .endswith("Avg GPU Utilization,Avg GPU Power Usage,Max GPU Memory Usage,Total GPU Memory")
    )


def test_the_load_spread_over_client_processes(served, tmp_path, capsys):
    code, out, err = perf(capsys, "-m", "add_sub", "-u", f"127.0.0.1:{served.http_port}",
                          "--concurrency-range", "4", "--client-processes", "2", *QUICK)  # fmt: skip
    assert code == 0, err
    assert "Client processes: 2" in out and "over 2 process(es)" in out
    requests = int(out.split("Request count: ")[1].split()[0])
    assert requests > 0


def test_tls_over_https_and_grpc(repo, certs, capsys):
    with naiad_serve(repo, f"--http-ssl-cert={certs / 'server.crt'}",
                     f"--http-ssl-key={certs / 'server.key'}", "--grpc-use-ssl=true",
                     f"--grpc-server-cert={certs / 'server.crt'}",
                     f"--grpc-server-key={certs / 'server.key'}") as tls:  # fmt: skip
        code, out, err = perf(capsys, "-m", "add_sub", "-u", f"https://127.0.0.1:{tls.http_port}",
                              "--ssl-https-ca-certificates-file", str(certs / "ca.crt"), *QUICK)  # fmt: skip
        assert code == 0, err
        code, out, err = perf(capsys, "-m", "add_sub", "-i", "grpc", "-u",
                              f"127.0.0.1:{tls.grpc_port}", "--ssl-grpc-use-ssl",
                              "--ssl-grpc-root-certifications-file", str(certs / "ca.crt"),
                              *QUICK)  # fmt: skip
        assert code == 0, err
