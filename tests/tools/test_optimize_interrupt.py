"""``naiad optimize`` stopped by Ctrl-C while it measures: the rounds that finished
are reported, nothing is written, no traceback, exit 130."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support import onnx_models
from support.interrupts import as_at_a_terminal
from support.onnx_models import write_config

pytestmark = pytest.mark.e2e


def test_ctrl_c_while_measuring_reports_the_finished_rounds(repo: Path, tmp_path: Path) -> None:
    onnx_models.add_sub(repo / "add_sub" / "1" / "model.onnx", shape=("batch", 4))
    write_config(repo / "add_sub", "max_batch_size: 8\n")
    before = sorted(str(p) for p in repo.rglob("*"))
    command = [sys.executable, "-m", "naiad", "optimize", "add_sub", "--model-repository",
               str(repo), "--rounds", "1000", "--requests", "200000"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=as_at_a_terminal)  # fmt: skip
    err: list[str] = []
    first_round = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err.append(line)
            if "round 1/1000:" in line:
                first_round.set()
        first_round.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert first_round.wait(120), "".join(err)
        assert proc.poll() is None, "".join(err)
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
        assert proc.stdout is not None
        out = proc.stdout.read()  # until it exits: stderr is the reader thread's
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()
    printed = "".join(err)
    assert proc.returncode == 130, out + printed
    assert "Traceback" not in printed, printed
    assert printed.strip().splitlines()[-1] == "naiad optimize: interrupted: nothing written"
    assert "interrupted after" in out and "of 1000 rounds" in out, out
    assert sorted(str(p) for p in repo.rglob("*")) == before
    assert not (tmp_path / "optimized").exists()
