"""Several naiad servers' ``/metrics`` as one: what ``--workers`` serves on the metrics port.

Each worker counts its own requests, so the server's figures are the sums of
the workers': counters, histogram buckets and sums, pending-request gauges.
The host's own measures (``nv_cpu_*``, ``nv_gpu_*``, ``nv_energy_*``) are the
same machine seen from every worker: those take the largest reading, not a
sum N times too big.

Every worker is naiad writing its text with :mod:`.exposition`, one sample a
line (``name{labels} value``) under its family's ``# HELP``/``# TYPE`` lines and
labels always in the same order, so a sample's text before its value is its
identity across workers: nothing needs parsing beyond that.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Families that measure the host, not the process: one reading, not a sum.
_HOST_PREFIXES = ("nv_cpu_", "nv_gpu_", "nv_energy_")


def sum_expositions(texts: Iterable[str]) -> str:
    """One exposition of the workers' ``texts``: samples summed, families in first-seen order."""
    heads: dict[str, list[str]] = {}  # family -> its comment lines
    samples: dict[str, dict[str, float]] = {}  # family -> {sample identity: value}
    for text in texts:
        family = ""
        for line in text.splitlines():
            if line.startswith("# "):
                family = line.split(" ", 3)[2]
                head = heads.setdefault(family, [])
                if line not in head:
                    head.append(line)
                samples.setdefault(family, {})
            elif line.strip():
                identity, _, text_value = line.rpartition(" ")
                value = float(text_value)
                family_samples = samples.setdefault(family, {})
                heads.setdefault(family, [])
                seen = family_samples.get(identity)
                if seen is None:
                    family_samples[identity] = value
                elif family.startswith(_HOST_PREFIXES):
                    family_samples[identity] = max(seen, value)
                else:
                    family_samples[identity] = seen + value
    lines: list[str] = []
    for family, head in heads.items():
        lines += head
        lines += [f"{identity} {_number(v)}" for identity, v in samples[family].items()]
    return "\n".join(lines) + "\n" if lines else ""


def _number(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
