"""``report.html``: what was searched, what won and why, in one self-contained file.

Plain HTML with a little inline CSS and the charts as data URIs: it opens
offline, attaches to a ticket, and survives being mailed.  Everything shown
comes from the same trials as ``results.csv``.
"""

from __future__ import annotations

import html
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from naiad.tools.analyze import charts
from naiad.tools.analyze.objective import (
    Choice,
    Constraints,
    best_point,
    pareto_front,
    ranked,
)
from naiad.tools.analyze.results import Point, Trial

#: Rows of the table of top configurations.
TOP = 10

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1000px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th { background: #f3f3f3; } td.text { text-align: left; }
tr.chosen { background: #e6f4ea; font-weight: bold; }
pre { background: #f7f7f7; padding: 1em; border: 1px solid #ddd; overflow-x: auto; }
.note { color: #a15c00; }
"""


@dataclass
class Analysis:
    """Everything one ``naiad analyze`` run decided and measured."""

    model: str
    search: str
    constraints: Constraints
    trials: list[Trial]
    planned: int
    grid_size: int
    settings: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    chosen: Trial | None = None
    #: How the chosen trial was picked (None: not decided yet).
    choice: Choice | None = None
    chosen_config: str = ""
    best_repository: Path | None = None
    started: float = field(default_factory=time.time)
    seconds: float = 0.0

    def baseline(self) -> Trial | None:
        """The model's own configuration (always the first trial)."""
        return self.trials[0] if self.trials else None


def write_report(path: Path, analysis: Analysis) -> None:
    path.write_text(render(analysis), encoding="utf-8")


def render(analysis: Analysis) -> str:
    a = analysis
    order = ranked(a.trials, a.constraints)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>naiad analyze: {_e(a.model)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>naiad analyze: {_e(a.model)}</h1>",
        _summary(a),
        _chosen(a),
    ]
    if any(t.points for t in a.trials):
        parts += [
            "<h2>Throughput against p99 latency</h2>",
            "<p>One curve per configuration over the concurrency sweep; the best "
            f"{charts.COLOURED} in colour (the chosen one thicker), the dashed line the "
            "Pareto front (no other point has both more throughput and less latency).</p>",
            f'<img alt="throughput against p99 latency" '
            f'src="{charts.latency_throughput(order, a.constraints, a.chosen)}">',
            "<h2>Best throughput within the constraints</h2>",
            f'<img alt="best throughput per configuration" '
            f'src="{charts.best_throughput(order, a.constraints)}">',
        ]
    parts += [_top_table(a, order), _pareto_table(a), _failed(a), "</body></html>"]
    return "\n".join(p for p in parts if p)


def _summary(a: Analysis) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(a.started))
    rows = [
        ("search", f"{a.search}: {len(a.trials)} of {a.planned} planned trials "
                   f"(the grid holds {a.grid_size} configurations)"),
        ("constraints", a.constraints.describe()),
        *a.settings.items(),
        ("started", f"{when}, took {a.seconds:.0f} s"),
    ]  # fmt: skip
    out = ["<table>"] + [f'<tr><th>{_e(k)}</th><td class="text">{_e(v)}</td></tr>' for k, v in rows]
    out.append("</table>")
    if a.interrupted:
        out.append(
            f'<p class="note">Interrupted: the report holds the {len(a.trials)} trials that '
            "finished; the one under way when it stopped is not in it.</p>"
        )
    return "\n".join(out)


def _chosen(a: Analysis) -> str:
    out = ["<h2>Chosen configuration</h2>"]
    chosen = a.chosen
    point = best_point(chosen, a.constraints) if chosen is not None else None
    if chosen is None or point is None:
        out.append(
            '<p class="note">No configuration met the constraints '
            f"({_e(a.constraints.describe())}); nothing was written to best_repository.</p>"
        )
        out.append(_excluded(a))
        return "\n".join(p for p in out if p)
    out.append(
        f"<p><b>#{chosen.number} {_e(chosen.candidate.describe())}</b>: "
        f"{_throughput(point)} infer/s at concurrency {point.concurrency}, "
        f"p50 {_ms(point.p50_us)}, p99 {_ms(point.p99_us)}.</p>"
    )
    if a.choice is not None:
        out.append(f"<p>Why: {_e(a.choice.reason(a.constraints))}.</p>")
    base = a.baseline()
    base_point = best_point(base, a.constraints) if base is not None else None
    if base is not None and base is not chosen:
        if base_point is not None and base_point.throughput > 0:
            gain = point.throughput / base_point.throughput
            out.append(
                f"<p>The model's own configuration (#{base.number} "
                f"{_e(base.candidate.describe())}) serves {base_point.throughput:.1f} infer/s "
                f"within the constraints: the chosen one is {gain:.2f}x that.</p>"
            )
        else:
            out.append("<p>The model's own configuration does not meet the constraints.</p>")
    elif base is chosen:
        out.append("<p>The model's own configuration is the best one found.</p>")
    out.append(_excluded(a))
    if a.best_repository is not None:
        out.append(
            f"<p>Written to <code>{_e(str(a.best_repository))}</code>; serve it with "
            f"<code>naiad serve --model-repository {_e(str(a.best_repository.parent))}</code>."
            "</p>"
        )
    out.append(f"<pre>{_e(a.chosen_config)}</pre>")
    return "\n".join(p for p in out if p)


def _excluded(a: Analysis) -> str:
    """The configurations the constraints ruled out, with how close each came."""
    if a.choice is None or not a.choice.excluded:
        return ""
    items = "".join(
        f"<li>#{t.number} {_e(t.candidate.describe())}: lowest p99 "
        f"{_ms(min(p.p99_us for p in t.points))}, at most "
        f"{max(p.throughput for p in t.points):.1f} infer/s</li>"
        for t in a.choice.excluded
    )
    return (f"<p>Excluded by the constraints ({_e(a.constraints.describe())}), at every "
            f"concurrency:</p><ul>{items}</ul>")  # fmt: skip


def _throughput(point: Point) -> str:
    """The throughput with its 95% confidence half-width when the sweep was repeated."""
    if point.repeats > 1:
        return f"{point.throughput:.1f} ± {point.throughput_ci:.1f}"
    return f"{point.throughput:.1f}"


def _top_table(a: Analysis, order: Sequence[Trial]) -> str:
    head = ("rank", "trial", "configuration", "concurrency", "throughput (infer/s)",
            "p50", "p90", "p99", "server CPU %", "RSS MB")  # fmt: skip
    out = [f"<h2>Top configurations</h2><p>By their best point within the constraints "
           f"({_e(a.constraints.describe())}); a configuration that meets them nowhere is "
           "listed at its lowest-latency point.</p><table><tr>",
           "".join(f"<th>{h}</th>" for h in head), "</tr>"]  # fmt: skip
    for rank, trial in enumerate([t for t in order if t.points][:TOP], 1):
        point = best_point(trial, a.constraints)
        fits = point is not None
        if point is None:
            point = min(trial.points, key=lambda p: p.p99_us)
        css = ' class="chosen"' if trial is a.chosen else ""
        cells = [
            str(rank),
            f"#{trial.number}",
            trial.candidate.describe(),
            str(point.concurrency),
            _throughput(point) + ("" if fits else " (misses)"),
        ]
        cells += _point_cells(point)  # fmt: skip
        out.append(f"<tr{css}>" + _cells(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _pareto_table(a: Analysis) -> str:
    front = pareto_front(a.trials)
    if not front:
        return ""
    out = ["<h2>Pareto front</h2><p>Every point with no other point both faster and "
           "quicker, by rising throughput.</p><table><tr>",
           "".join(f"<th>{h}</th>" for h in ("trial", "configuration", "concurrency",
                   "throughput (infer/s)", "p50", "p90", "p99", "server CPU %", "RSS MB")),
           "</tr>"]  # fmt: skip
    for trial, point in front:
        cells = [f"#{trial.number}", trial.candidate.describe(), str(point.concurrency),
                 f"{point.throughput:.1f}", *_point_cells(point)]  # fmt: skip
        out.append("<tr>" + _cells(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _failed(a: Analysis) -> str:
    failed = [t for t in a.trials if t.error]
    if not failed:
        return ""
    items = "".join(
        f"<li>#{t.number} {_e(t.candidate.describe())}: {_e(t.error)}</li>" for t in failed
    )
    return f"<h2>Configurations that failed</h2><ul>{items}</ul>"


def _point_cells(point: Point) -> list[str]:
    cpu = "" if point.server_cpu_percent is None else f"{point.server_cpu_percent:.0f}"
    rss = "" if point.rss_mb is None else f"{point.rss_mb:.0f}"
    return [_ms(point.p50_us), _ms(point.p90_us), _ms(point.p99_us), cpu, rss]


def _cells(values: Sequence[str]) -> str:
    """Table cells; a configuration's label (``instances=2 ...``) reads left-aligned."""
    return "".join(
        f'<td class="text">{_e(v)}</td>' if "=" in v else f"<td>{_e(v)}</td>" for v in values
    )


def _ms(us: float) -> str:
    return f"{us / 1000:.2f} ms"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
