"""``--metrics-config`` settings: which latency metric kinds a server reports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from naiad.metrics.distributions import DEFAULT_QUANTILES

_BOOL = {
    "true": True,
    "1": True,
    "yes": True,
    "on": True,
    "false": False,
    "0": False,
    "no": False,
    "off": False,
}


@dataclass(frozen=True)
class MetricsConfig:
    """Triton's metrics config keys, with Triton's defaults."""

    counter_latencies: bool = True
    histogram_latencies: bool = False
    summary_latencies: bool = False
    summary_quantiles: tuple[tuple[float, float], ...] = DEFAULT_QUANTILES

    @property
    def per_request(self) -> bool:
        """Whether each request must be observed (histograms or summaries on)."""
        return self.histogram_latencies or self.summary_latencies

    @classmethod
    def parse(cls, settings: Mapping[str, str]) -> MetricsConfig:
        """Build from ``key=value`` pairs; raises ValueError naming a bad key or value."""
        values: dict[str, object] = {}
        for key, text in settings.items():
            if key in ("counter_latencies", "histogram_latencies", "summary_latencies"):
                flag = _BOOL.get(str(text).strip().lower())
                if flag is None:
                    raise ValueError(f"--metrics-config {key} expects true or false, got '{text}'")
                values[key] = flag
            elif key == "summary_quantiles":
                values[key] = parse_quantiles(str(text))
            else:
                raise ValueError(f"unknown --metrics-config setting '{key}'")
        return cls(**values)  # type: ignore[arg-type]


def parse_quantiles(text: str) -> tuple[tuple[float, float], ...]:
    """``0.5:0.05,0.9:0.01`` -> ((0.5, 0.05), (0.9, 0.01))."""
    out: list[tuple[float, float]] = []
    for item in text.split(","):
        q, sep, err = item.strip().partition(":")
        try:
            quantile, error = float(q), float(err) if sep else 0.0
        except ValueError:
            raise ValueError(f"invalid summary quantile '{item}' (expected q:error)") from None
        if not 0.0 <= quantile <= 1.0 or not 0.0 <= error <= 1.0:
            raise ValueError(f"summary quantile out of range: '{item}'")
        out.append((quantile, error))
    if not out:
        raise ValueError("summary_quantiles is empty")
    return tuple(out)
