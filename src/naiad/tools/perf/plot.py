"""``--plot``: throughput against p50/p90/p99 latency over the sweep, with matplotlib."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from naiad.tools.perf.measure import StepResult
from naiad.tools.perf.settings import PerfError


def check_available() -> None:
    """Fail before measuring, not after, when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PerfError("--plot needs matplotlib: pip install 'naiad[tools]'") from None


def plot(results: Sequence[StepResult], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    throughput = [r.throughput for r in results]
    for name, values in (("p50", [r.p50_us for r in results]),
                         ("p90", [r.p90_us for r in results]),
                         ("p99", [r.p99_us for r in results])):  # fmt: skip
        axes.plot(throughput, values, marker="o", label=name)
    for r in results:
        label = f"c={r.value:g}" if r.kind == "concurrency" else f"{r.value:g}/s"
        axes.annotate(label, (r.throughput, r.p50_us), textcoords="offset points",
                      xytext=(4, -10), fontsize=8)  # fmt: skip
    axes.set_xlabel("throughput (infer/s)")
    axes.set_ylabel("latency (usec)")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=110)
    except OSError as exc:
        raise PerfError(f"--plot {path}: cannot be written ({exc.strerror})") from None
    finally:
        pyplot.close(figure)
