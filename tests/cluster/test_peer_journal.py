"""What a restarted worker replays: the changes that still matter, in order."""

from __future__ import annotations

import pytest

from naiad.cluster.journal import Journal
from naiad.engine.changes import (
    LoadModel,
    RegisterCudaRegion,
    RegisterSystemRegion,
    UnloadModel,
    UnregisterRegions,
    UpdateLogSettings,
    UpdateTraceSettings,
)

pytestmark = pytest.mark.unit


def test_the_last_change_of_each_model_counts_in_the_order_it_came():
    journal = Journal()
    journal.record(LoadModel("a"))
    journal.record(LoadModel("b", '{"max_batch_size": 2}'))
    journal.record(UnloadModel("a"))
    journal.record(LoadModel("b", None, {"1/model.onnx": b"x"}))
    assert journal.changes() == [UnloadModel("a"), LoadModel("b", None, {"1/model.onnx": b"x"})]


def test_unregistered_regions_are_forgotten():
    journal = Journal()
    for name in ("r1", "r2", "r3"):
        journal.record(RegisterSystemRegion(name, "/k", 0, 8))
    journal.record(RegisterCudaRegion("g", b"h" * 64, 0, 8))
    journal.record(UnregisterRegions("system", "r2"))
    assert [c.name for c in journal.changes()] == ["r1", "r3", "g"]  # type: ignore[union-attr]
    journal.record(UnregisterRegions("system"))  # every system region
    assert [c.name for c in journal.changes()] == ["g"]  # type: ignore[union-attr]


def test_settings_updates_add_up_the_later_value_winning():
    journal = Journal()
    journal.record(UpdateTraceSettings("", {"trace_rate": "10", "trace_level": ["TIMESTAMPS"]}))
    journal.record(UpdateLogSettings({"log_verbose_level": 1}))
    journal.record(UpdateTraceSettings("m", {"trace_rate": "2"}))
    journal.record(UpdateTraceSettings("", {"trace_rate": "5"}))
    assert journal.changes() == [
        UpdateLogSettings({"log_verbose_level": 1}),
        UpdateTraceSettings("m", {"trace_rate": "2"}),
        UpdateTraceSettings("", {"trace_rate": "5", "trace_level": ["TIMESTAMPS"]}),
    ]
