"""Prometheus text exposition, written the way Triton's prometheus-cpp writes it.

We write the text ourselves instead of using ``prometheus_client``: that
library appends ``_total`` to counter names and keeps a process-global
registry, while Triton's names have no suffix and every naiad server owns
its own registry.  The format is small enough that owning it is cheaper
than working around it: ``# HELP``, ``# TYPE``, then one line per sample,
labels sorted by name, integer values without a decimal point.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

Labels = tuple[tuple[str, str], ...]


@dataclass
class Sample:
    """One sample line: ``<family><suffix>{labels} value``."""

    suffix: str
    labels: Labels
    value: float


@dataclass
class FamilySnapshot:
    """A family's samples at scrape time (kind: counter, gauge, histogram, summary)."""

    name: str
    help: str
    kind: str
    samples: list[Sample] = field(default_factory=list)


def format_value(value: float) -> str:
    """prometheus-cpp's number format: ``6`` not ``6.0``, ``Nan``, ``+Inf``, ``-Inf``.

    Whole numbers print without exponent up to 2**63 so that perf_analyzer's
    ``\\d+\\.?\\d*`` regex reads byte counts.
    """
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "Nan"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 2**63:
        return str(int(value))
    return repr(value)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_labels(labels: Sequence[tuple[str, str]]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels)
    return "{" + inner + "}"


def render(families: Iterable[FamilySnapshot]) -> str:
    """The whole exposition body for ``families`` (in the order given).

    Families without samples are left out, as prometheus-cpp does.
    """
    lines: list[str] = []
    for family in families:
        if not family.samples:
            continue
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} {family.kind}")
        for sample in family.samples:
            lines.append(
                f"{family.name}{sample.suffix}{format_labels(sample.labels)} "
                f"{format_value(sample.value)}"
            )
    return "\n".join(lines) + "\n" if lines else ""


def sorted_labels(labels: dict[str, str] | Iterable[tuple[str, str]]) -> Labels:
    """Labels in the order prometheus-cpp prints them (by name, byte order)."""
    items = labels.items() if isinstance(labels, dict) else labels
    return tuple(sorted(items))
