"""``naiad perf`` in a subprocess, as a user runs it with its output piped: progress
shows window by window, and Ctrl-C (SIGINT to the whole process group, as a
terminal sends it) stops it cleanly with the steps that finished, over HTTP,
gRPC and in-process, while the server it measured carries on."""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import tritonclient.http as httpclient
from support import onnx_models
from support.interrupts import as_at_a_terminal
from support.onnx_models import write_config
from support.served import naiad_serve

pytestmark = pytest.mark.e2e

#: Short windows and a long sweep: the signal always lands mid-sweep.
QUICK = ["-p", "200", "-r", "3", "-s", "100", "--concurrency-range", "1:64:1"]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("perf-interrupt") / "models"
    onnx_models.add_sub(root / "add_sub" / "1" / "model.onnx", shape=("batch", 4))
    write_config(root / "add_sub", "max_batch_size: 8\ndynamic_batching { }\n")
    return root


@pytest.fixture(scope="module")
def served(repo: Path):
    with naiad_serve(repo) as server:
        yield server


class Piped:
    """A ``naiad perf`` with stdout and stderr each read line by line as they come."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "naiad", "perf", *args], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True,
            preexec_fn=as_at_a_terminal,
        )  # fmt: skip
        self.out: list[str] = []
        self.err: list[str] = []
        self.first_window = threading.Event()
        self.first_step = threading.Event()
        #: Whether a step's report came before any window's progress line.
        self.step_before_window = False
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: io.TextIOWrapper, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)
            if "window 1:" in line:
                self.first_window.set()
            if line.startswith("Request concurrency: "):
                self.step_before_window |= not self.first_window.is_set()
                self.first_step.set()
        self.first_window.set()
        self.first_step.set()

    def ctrl_c(self) -> int:
        """SIGINT to the process group, as a terminal's Ctrl-C; the exit code."""
        try:
            assert self.proc.poll() is None, self.text()
            os.killpg(self.proc.pid, signal.SIGINT)
            code = self.proc.wait(120)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        for reader in self._readers:
            reader.join(10)
        for stream in (self.proc.stdout, self.proc.stderr):
            assert stream is not None
            stream.close()
        return code

    def text(self) -> str:
        return "".join(self.out) + "".join(self.err)


@pytest.mark.parametrize("protocol", ["http", "grpc", "embedded"])
def test_ctrl_c_reports_the_finished_steps(
    protocol: str, repo: Path, served, tmp_path: Path
) -> None:
    out_csv = tmp_path / "partial.csv"
    if protocol == "embedded":
        where = ["--embedded", "--model-repository", str(repo)]
    else:  # two client processes over HTTP: the children must not die of the SIGINT
        port = served.http_port if protocol == "http" else served.grpc_port
        where = ["-i", protocol, "-u", f"127.0.0.1:{port}"]
        where += ["--client-processes", "2"] if protocol == "http" else []
    run = Piped(["-m", "add_sub", *where, *QUICK, "-f", str(out_csv)])
    # Progress reaches a pipe as each window ends, not only at the end of a step.
    assert run.first_step.wait(120), run.text()
    assert not run.step_before_window, run.text()
    code = run.ctrl_c()
    err = "".join(run.err)
    assert code == 130, run.text()
    assert "Traceback" not in err, err
    assert "naiad perf: interrupted: reporting the" in err
    printed = "".join(run.out)
    finished = printed.count("Request concurrency: ")
    assert finished >= 1 and f"reporting the {finished} finished steps" in err
    assert "Inferences/Second vs. Client Average Batch Latency" in printed
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert [r["Concurrency"] for r in rows] == [str(c) for c in range(1, finished + 1)]
    if protocol != "embedded":  # the measured server is unaffected
        client = httpclient.InferenceServerClient(f"127.0.0.1:{served.http_port}")
        try:
            assert client.is_server_live() and client.is_model_ready("add_sub")
        finally:
            client.close()
