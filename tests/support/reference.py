"""The reference tools, where ``scripts/setup-reference.sh`` installs them: the real Triton
server and perf_analyzer.  Tests that need one are marked with :data:`needs_triton` or
:data:`needs_perf_analyzer` and skip, naming the script, on a machine without them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: ``$NAIAD_REFERENCE_HOME``, as the script reads it.
HOME = Path(os.environ.get("NAIAD_REFERENCE_HOME") or Path.home() / ".cache" / "naiad-reference")
TRITONSERVER = HOME / "bin" / "tritonserver"
PERF_ANALYZER = HOME / "bin" / "perf_analyzer"

_HOW = "scripts/setup-reference.sh installs it"
needs_triton = pytest.mark.skipif(
    not TRITONSERVER.exists(), reason=f"the reference Triton is not installed ({_HOW})"
)
needs_perf_analyzer = pytest.mark.skipif(
    not PERF_ANALYZER.exists(), reason=f"perf_analyzer is not installed ({_HOW})"
)
