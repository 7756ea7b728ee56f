"""What a trial measured, and ``results.csv``: one row per configuration and concurrency.

Latencies keep their unit in the column name (``p99_us``), as perf_analyzer's
CSV and Triton's statistics do, so a script needs no documentation to read it.
The CSV reads back (:func:`read_csv`), which lets a search be replayed
against a landscape measured once.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from naiad.tools.analyze.space import Candidate


@dataclass(frozen=True)
class Point:
    """One concurrency of one configuration's sweep."""

    concurrency: int
    throughput: float  # inferences per second
    p50_us: float
    p90_us: float
    p99_us: float
    #: The server process's CPU time over the step, in percent of one core (None: unknown).
    server_cpu_percent: float | None = None
    #: The server's resident memory after the step (None: unknown).
    rss_mb: float | None = None
    stable: bool = True
    #: How many sweeps measured this point; its figures are their means.
    repeats: int = 1
    #: Half-width of the throughput's 95% confidence interval over the repeats (0: one).
    throughput_ci: float = 0.0


@dataclass
class Trial:
    """One configuration, loaded and measured over the concurrency sweep."""

    number: int
    candidate: Candidate
    points: list[Point] = field(default_factory=list)
    #: Why the configuration could not be measured ("" when it was).
    error: str = ""


COLUMNS = (
    "trial", "config", "instances", "max_batch_size", "dynamic_batching",
    "max_queue_delay_us", "intra_op_threads", "inter_op_threads", "concurrency",
    "throughput_infer_per_sec", "p50_us", "p90_us", "p99_us", "server_cpu_percent",
    "rss_mb", "stable", "meets_constraints", "error", "repeats", "throughput_ci95",
)  # fmt: skip


def write_csv(path: Path, trials: Iterable[Trial], meets: dict[tuple[int, int], bool]) -> int:
    """Write every point of ``trials`` (a failed trial as one row with its error); the
    number of rows.  ``meets`` maps (trial number, concurrency) to the constraints' verdict."""
    rows = 0
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(COLUMNS)
        for trial in trials:
            c = trial.candidate
            head = [
                trial.number, c.describe(), c.instances, c.max_batch_size,
                "on" if c.dynamic_batching else "off", c.max_queue_delay_us,
                c.intra_op_threads, c.inter_op_threads,
            ]  # fmt: skip
            if trial.error:
                writer.writerow([*head, "", "", "", "", "", "", "", "", "", trial.error, "", ""])
                rows += 1
            for p in trial.points:
                writer.writerow([
                    *head, p.concurrency, f"{p.throughput:.2f}", f"{p.p50_us:.1f}",
                    f"{p.p90_us:.1f}", f"{p.p99_us:.1f}", _optional(p.server_cpu_percent),
                    _optional(p.rss_mb), int(p.stable),
                    int(meets.get((trial.number, p.concurrency), False)), "", p.repeats,
                    f"{p.throughput_ci:.2f}",
                ])  # fmt: skip
                rows += 1
    return rows


def read_csv(path: Path) -> list[Trial]:
    """The trials of a ``results.csv``, in order."""
    trials: dict[int, Trial] = {}
    with path.open(newline="", encoding="utf-8") as file:
        for row in csv.DictReader(file):
            number = int(row["trial"])
            if number not in trials:
                candidate = Candidate(
                    instances=int(row["instances"]),
                    dynamic_batching=row["dynamic_batching"] == "on",
                    max_batch_size=int(row["max_batch_size"]),
                    max_queue_delay_us=int(row["max_queue_delay_us"]),
                    intra_op_threads=int(row["intra_op_threads"]),
                    inter_op_threads=int(row["inter_op_threads"]),
                )
                trials[number] = Trial(number, candidate, error=row["error"])
            if row["concurrency"]:
                trials[number].points.append(
                    Point(
                        concurrency=int(row["concurrency"]),
                        throughput=float(row["throughput_infer_per_sec"]),
                        p50_us=float(row["p50_us"]),
                        p90_us=float(row["p90_us"]),
                        p99_us=float(row["p99_us"]),
                        server_cpu_percent=_number(row["server_cpu_percent"]),
                        rss_mb=_number(row["rss_mb"]),
                        stable=row["stable"] == "1",
                        repeats=int(row.get("repeats") or 1),
                        throughput_ci=float(row.get("throughput_ci95") or 0),
                    )
                )
    return list(trials.values())


def _optional(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _number(text: str) -> float | None:
    return float(text) if text else None
