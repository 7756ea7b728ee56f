"""BentoML's client leaves its temporary folders to the garbage collector, which warns
when it removes them.  They are collected here, at the end of each module, with those
warnings ignored, not later in some other test that ``filterwarnings = error`` fails."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="module")
def collect_framework_garbage() -> Iterator[None]:
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
