"""The report's charts, drawn with matplotlib (Agg) and inlined as PNG data URIs,
so the HTML file is viewable anywhere with no network and no side files.

With many configurations one chart of every curve is a tangle: the best few
are drawn in colour and labelled, the rest in grey, which still shows where
the field lies.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

from naiad.tools.analyze.errors import AnalyzeError
from naiad.tools.analyze.objective import Constraints, pareto_front
from naiad.tools.analyze.results import Trial

#: Configurations drawn in colour (the best by score); the rest are grey.
COLOURED = 8


def check_available() -> None:
    """Fail before measuring, not after, when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise AnalyzeError(
            "naiad analyze draws its report with matplotlib: pip install 'naiad[tools]'"
        ) from None


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def _data_uri(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=100)
    _pyplot().close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def latency_throughput(
    ranked: Sequence[Trial], constraints: Constraints, chosen: Trial | None
) -> str:
    """Throughput against p99 latency, one curve (over concurrency) per configuration,
    with the Pareto front and the latency budget."""
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(9, 5.5))
    measured = [t for t in ranked if t.points]
    for trial in reversed(measured[COLOURED:]):
        points = sorted(trial.points, key=lambda p: p.concurrency)
        axes.plot([p.p99_us / 1000 for p in points], [p.throughput for p in points],
                  color="0.8", linewidth=1, marker=".", zorder=1)  # fmt: skip
    for trial in measured[:COLOURED]:
        points = sorted(trial.points, key=lambda p: p.concurrency)
        width = 2.5 if trial is chosen else 1.2
        label = f"#{trial.number} {trial.candidate.describe()}"
        axes.plot([p.p99_us / 1000 for p in points], [p.throughput for p in points],
                  marker="o", linewidth=width, label=label, zorder=3)  # fmt: skip
        last = points[-1]
        axes.annotate(f"c={last.concurrency}", (last.p99_us / 1000, last.throughput),
                      textcoords="offset points", xytext=(4, 2), fontsize=7)  # fmt: skip
    front = pareto_front(measured)
    if front:
        axes.plot([p.p99_us / 1000 for _, p in front], [p.throughput for _, p in front],
                  color="black", linestyle="--", linewidth=1, label="Pareto front",
                  zorder=4)  # fmt: skip
    if constraints.latency_budget_us is not None:
        axes.axvline(constraints.latency_budget_us / 1000, color="red", linestyle=":",
                     label="latency budget")  # fmt: skip
    if constraints.min_throughput is not None:
        axes.axhline(constraints.min_throughput, color="orange", linestyle=":",
                     label="minimum throughput")  # fmt: skip
    axes.set_xlabel("p99 latency (ms)")
    axes.set_ylabel("throughput (infer/s)")
    axes.set_title("throughput against p99 latency over the concurrency sweep")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=7, loc="best")
    return _data_uri(figure)


def best_throughput(ranked: Sequence[Trial], constraints: Constraints, top: int = 15) -> str:
    """The best throughput within the constraints of the top configurations, as bars."""
    from naiad.tools.analyze.objective import best_point

    rows = []
    for trial in ranked:
        point = best_point(trial, constraints)
        if point is not None:
            rows.append((f"#{trial.number} {trial.candidate.describe()}", point.throughput))
    rows = rows[:top]
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(9, 0.6 + 0.32 * max(len(rows), 1)))
    labels = [label for label, _ in reversed(rows)]
    axes.barh(labels, [value for _, value in reversed(rows)], color="tab:blue")
    axes.set_xlabel("best throughput within the constraints (infer/s)")
    axes.tick_params(axis="y", labelsize=7)
    if not rows:
        axes.text(0.5, 0.5, "no configuration met the constraints", ha="center",
                  transform=axes.transAxes)  # fmt: skip
    return _data_uri(figure)
