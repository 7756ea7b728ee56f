"""The headline benchmark (``benchmarks/headline.py``) as CI runs it: one short round of
the same model.py files on naiad and on the reference Triton, over HTTP and gRPC.

CI does not judge the timings (the tests around it share the cores, and timing
assertions do not belong in tests); it checks that the benchmark still runs
end to end and measures every cell on both servers, and prints the ratios at
the end of the run (``pytest_terminal_summary`` in conftest), so each CI log
carries a rough figure next to the ones ``benchmarks/README.md`` quotes.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support.reference import needs_perf_analyzer, needs_triton

pytestmark = [pytest.mark.e2e, needs_triton, needs_perf_analyzer]

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("add_sub", "matmul")  # a plain model.py and a dynamically batched one
PROTOCOLS = ("http", "grpc")
CONCURRENCY = (1, 8)


@pytest.mark.timeout(600)
def test_headline_measures_every_cell_on_both_servers(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    runs = tmp_path / "runs.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "headline.py"), "--mode", "quiet",
         "--rounds", "1", "--interval", "1000", "--models", *MODELS,
         "--protocols", *PROTOCOLS, "--concurrency", *map(str, CONCURRENCY),
         "--json", str(runs)],
        capture_output=True, text=True, timeout=540,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    measured = {tuple(row[:5]): row[5] for row in json.loads(runs.read_text())}
    for cell in itertools.product(["quiet"], ["naiad", "triton"], MODELS, PROTOCOLS, CONCURRENCY):
        assert cell in measured, (cell, output)
        (run,) = measured[cell]
        assert run["throughput"] > 0 and run["p99"] > 0, (cell, run)
    table = done.stdout[done.stdout.index("| model |") :].strip()
    assert table.count("\n") == 1 + len(MODELS) * len(PROTOCOLS) * len(CONCURRENCY), output
    record_property(
        "benchmark",
        "benchmarks/headline.py, one round, measured while other tests ran "
        "(a rough figure, not one to quote):\n" + table,
    )
