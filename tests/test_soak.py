"""The soak of ``benchmarks/soak.py`` as CI runs it: 20 clients (HTTP and gRPC) for 60 s
against ``naiad serve``, 5% of their requests malformed.  No valid request may get a
wrong answer or be lost, every malformed one gets a client error, the health check
answers throughout, and the server's memory stays flat."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]


def test_soak_twenty_clients_for_a_minute_with_garbage_mixed_in(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "soak.py"), "--duration", "60",
         "--clients", "20", "--bad", "0.05", "--log", str(tmp_path / "server.log")],
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    report = done.stdout + done.stderr
    assert done.returncode == 0, report + (tmp_path / "server.log").read_text()[-4000:]
    assert "PASS" in done.stdout
