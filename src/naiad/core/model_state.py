"""A model version's lifecycle state, as Triton names it.

It lives here rather than beside the registry that holds it because the
layers below the engine (an ensemble waiting for its steps, the metrics
that count ready models) read it too.
"""

from __future__ import annotations

import enum


class ModelState(enum.Enum):
    UNKNOWN = "UNKNOWN"
    LOADING = "LOADING"
    READY = "READY"
    UNLOADING = "UNLOADING"
    UNAVAILABLE = "UNAVAILABLE"
