"""The Grafana dashboard parses and only charts metrics naiad reports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from naiad.engine.model_metrics import ModelMetrics
from naiad.metrics import SystemMetrics

pytestmark = pytest.mark.unit

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "naiad-dashboard.json"


def test_dashboard_queries_name_known_metrics():
    dashboard = json.loads(DASHBOARD.read_text())
    known = ModelMetrics.names | SystemMetrics.names
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert exprs
    for expr in exprs:
        for name in re.findall(r"\b(nv_[a-z_]+)", expr):
            base = re.sub(r"_(bucket|sum|count)$", "", name)
            assert name in known or base in known, name
