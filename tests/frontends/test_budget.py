"""The server's request budget: what fits, what is refused, what comes back."""

from __future__ import annotations

import pytest

from naiad.frontends.budget import RequestBudget

pytestmark = pytest.mark.unit


def test_bytes_past_the_limit_are_refused_and_nothing_is_taken() -> None:
    budget = RequestBudget(100)
    assert budget.take(60)
    assert budget.fits(40) and not budget.fits(41)
    assert not budget.take(41)
    assert budget.held == 60
    budget.give(60)
    assert budget.held == 0 and budget.take(100)


def test_zero_is_no_limit_and_a_negative_limit_an_error() -> None:
    budget = RequestBudget(0)
    assert budget.take(1 << 40) and budget.fits(1 << 40)
    with pytest.raises(ValueError, match="--max-request-buffer-size"):
        RequestBudget(-1)
