"""How a traffic split picks a version (engine/traffic.py): smooth weighted round robin,
sticky keys that every worker maps alike, and versions that are not ready left out."""

from __future__ import annotations

import pytest

from naiad.engine.traffic import TrafficSplit

pytestmark = pytest.mark.unit


def test_smooth_round_robin_interleaves_the_turns() -> None:
    split = TrafficSplit({1: 5, 2: 1, 3: 1})
    turns = [split.choose({1, 2, 3}, {}) for _ in range(7)]
    assert turns == [1, 1, 2, 1, 3, 1, 1]  # nginx's order for 5:1:1, never 2 in a row of 2s
    assert [split.choose({1, 2, 3}, {}) for _ in range(7)] == turns


def test_a_version_that_is_not_ready_is_left_out_until_it_is() -> None:
    split = TrafficSplit({1: 1, 2: 1})
    assert [split.choose({2}, {}) for _ in range(3)] == [2, 2, 2]
    assert split.choose(set(), {}) is None  # the caller falls back to the latest version
    assert sorted(split.choose({1, 2}, {}) for _ in range(4)) == [1, 1, 2, 2]


def test_a_sticky_key_goes_to_the_same_version_on_every_worker() -> None:
    one, other = TrafficSplit({1: 1, 2: 3}, "user"), TrafficSplit({1: 1, 2: 3}, "user")
    for user in (f"u{i}" for i in range(50)):
        first = one.choose({1, 2}, {"user": user})
        assert first == other.choose({1, 2}, {"user": user}) == one.choose({1, 2}, {"user": user})
    chosen = [one.choose({1, 2}, {"user": f"u{i}"}) for i in range(400)]
    assert 40 < chosen.count(1) < 160  # about a quarter of the users on version 1
    assert one.choose({1, 2}, {}) in (1, 2)  # without the key, the request takes its turn
