"""A mean and its 95% confidence interval, for the tools that repeat a measurement.

Repeated measurements of the same thing on a shared machine disagree; how
much they disagree is the noise a difference must beat before a tool may
call one result better than another.  With a handful of repeats the normal
distribution understates that noise, so the half-width uses Student's t.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: Two-sided 95% quantiles of Student's t by degrees of freedom (1-30); 1.96 beyond.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


def t95(degrees_of_freedom: int) -> float:
    if degrees_of_freedom < 1:
        raise ValueError("a confidence interval needs at least two values")
    return _T95[degrees_of_freedom - 1] if degrees_of_freedom <= len(_T95) else 1.96


def mean_interval(values: Sequence[float]) -> tuple[float, float]:
    """(mean, half-width of its 95% confidence interval); the half-width is 0 for fewer
    than two values, which carry no estimate of the noise."""
    n = len(values)
    if n == 0:
        return 0.0, 0.0
    mean = sum(values) / n
    if n < 2:
        return mean, 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, t95(n - 1) * sd / math.sqrt(n)
