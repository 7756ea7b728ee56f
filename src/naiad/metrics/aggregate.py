"""Several servers' ``/metrics`` as one: what ``--workers`` serves on the metrics port.

Each worker counts its own requests, so the server's figures are the sums of
the workers': counters, histogram buckets and sums, pending-request gauges.
The host's own measures (``nv_cpu_*``, ``nv_gpu_*``, ``nv_energy_*``) are the
same machine seen from every worker: those take the largest reading, not a
sum N times too big.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.parser import text_string_to_metric_families

#: Families that measure the host, not the process: one reading, not a sum.
_HOST_PREFIXES = ("nv_cpu_", "nv_gpu_", "nv_energy_")


def sum_expositions(texts: Iterable[str]) -> str:
    """One exposition (text format 0.0.4) of the workers' ``texts``, summed."""
    families: dict[str, tuple[str, str]] = {}  # name -> (type, help), in first-seen order
    values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for text in texts:
        written = _sample_names(text)
        typed = {line.split(" ")[2] for line in text.splitlines() if line.startswith("# TYPE ")}
        for family in text_string_to_metric_families(text):
            name = family.name if family.name in typed else f"{family.name}_total"
            families.setdefault(name, (family.type, family.documentation))
            merge = max if name.startswith(_HOST_PREFIXES) else _add
            samples = values.setdefault(name, {})
            for sample in family.samples:
                key = (_as_written(sample.name, written), tuple(sorted(sample.labels.items())))
                seen = samples.get(key)
                samples[key] = sample.value if seen is None else merge(seen, sample.value)
    lines = []
    for name, (kind, documentation) in families.items():
        lines.append(f"# HELP {name} {_escape_help(documentation)}")
        lines.append(f"# TYPE {name} {kind}")
        for (sample_name, labels), value in values[name].items():
            rendered = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels)
            where = f"{{{rendered}}}" if labels else ""
            lines.append(f"{sample_name}{where} {_number(value)}")
    return "\n".join(lines) + "\n" if lines else ""


def _sample_names(text: str) -> set[str]:
    return {
        line.split("{", 1)[0].split(" ", 1)[0]
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


def _as_written(name: str, written: set[str]) -> str:
    """The parser names counter samples ``<family>_total``; Triton's counters have no
    such suffix, and the sum keeps the names the workers wrote."""
    if name not in written and name.endswith("_total") and name[: -len("_total")] in written:
        return name[: -len("_total")]
    return name


def _add(a: float, b: float) -> float:
    return a + b


def _number(value: float) -> str:
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[repr(value)]
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")
