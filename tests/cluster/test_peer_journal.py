"""What a restarted worker replays: the changes that still matter, in order."""

from __future__ import annotations

import pytest

from naiad.cluster.journal import Journal

pytestmark = pytest.mark.unit


def test_the_last_change_of_each_model_counts_in_the_order_it_came():
    journal = Journal()
    journal.record(("load_model", ("a", None, None)))
    journal.record(("load_model", ("b", '{"max_batch_size": 2}', None)))
    journal.record(("unload_model", ("a", False)))
    journal.record(("load_model", ("b", None, {"1/model.onnx": b"x"})))
    assert journal.changes() == [
        ("unload_model", ("a", False)),
        ("load_model", ("b", None, {"1/model.onnx": b"x"})),
    ]


def test_unregistered_regions_are_forgotten():
    journal = Journal()
    fields = {"key": "/k", "offset": 0, "byte_size": 8}
    for name in ("r1", "r2", "r3"):
        journal.record(("shm_register", ("system", name, fields)))
    journal.record(("shm_register", ("cuda", "g", {"raw_handle": b"h", "device_id": 0})))
    journal.record(("shm_unregister", ("system", "r2")))
    assert [c[1][1] for c in journal.changes()] == ["r1", "r3", "g"]
    journal.record(("shm_unregister", ("system", "")))  # every system region
    assert [c[1][1] for c in journal.changes()] == ["g"]


def test_settings_updates_add_up_the_later_value_winning():
    journal = Journal()
    journal.record(("trace_setting", ("", {"trace_rate": "10", "trace_level": ["TIMESTAMPS"]})))
    journal.record(("log_setting", ({"log_verbose_level": 1},)))
    journal.record(("trace_setting", ("m", {"trace_rate": "2"})))
    journal.record(("trace_setting", ("", {"trace_rate": "5"})))
    assert journal.changes() == [
        ("log_setting", ({"log_verbose_level": 1},)),
        ("trace_setting", ("m", {"trace_rate": "2"})),
        ("trace_setting", ("", {"trace_rate": "5", "trace_level": ["TIMESTAMPS"]})),
    ]


def test_anything_else_is_not_a_change():
    with pytest.raises(ValueError, match="not a state change: infer"):
        Journal().record(("infer", ()))
