"""What an optimisation did, as a few lines for people and a JSON file for scripts.

The JSON keeps units in its key names (``p50_us``) as Triton's statistics do,
so a script comparing runs needs no documentation to read it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from naiad.tools.console import duration
from naiad.tools.optimize.measure import Comparison, Drift, Latency


@dataclass
class Report:
    """Everything one ``naiad optimize`` run decided and measured."""

    model: str
    source: str
    steps: list[str]
    max_drift: float
    size_before: int = 0
    size_after: int = 0
    comparison: Comparison | None = None
    #: The drift of an export (no latency: the original is not an ONNX model).
    drift: Drift | None = None
    accepted: bool = False
    written: list[str] = field(default_factory=list)

    @property
    def interrupted(self) -> bool:
        return self.comparison is not None and self.comparison.timing.interrupted

    def refusal(self) -> str:
        """Why the copy is not good enough ('' when it is): its drift, its speed."""
        reasons = []
        drift = self.measured_drift().worst
        if drift > self.max_drift:
            reasons.append(f"output drift {drift:.3g} exceeds --max-drift {self.max_drift:g}")
        if self.comparison is not None:
            verdict = self.comparison.timing.verdict()
            if not verdict.faster:
                reasons.append(f"the copy is not faster beyond noise: {verdict.describe()}")
        return "; ".join(reasons)

    def measured_drift(self) -> Drift:
        if self.comparison is not None:
            return self.comparison.drift
        return self.drift or Drift()

    def to_dict(self) -> dict[str, Any]:
        drift = self.measured_drift()
        data: dict[str, Any] = {
            "model": self.model,
            "source": self.source,
            "steps": self.steps,
            "size_bytes": {"before": self.size_before, "after": self.size_after},
            "drift": {
                "max_abs_diff": drift.max_abs_diff,
                "top1_agreement": drift.top1_agreement,
                "max_abs_output": drift.max_abs_value,
                "max": drift.worst,
                "limit": self.max_drift,
            },
            "accepted": self.accepted,
            "written": self.written,
        }
        if self.comparison is not None:
            timing = self.comparison.timing
            verdict = timing.verdict()
            data["samples"] = self.comparison.samples
            data["latency"] = {
                "before": _latency(self.comparison.before),
                "after": _latency(self.comparison.after),
            }
            data["speed"] = {
                "speedup": round(verdict.speedup, 4),
                "interval_95": [round(verdict.low, 4), round(verdict.high, 4)],
                "verdict": verdict.word,
                "rounds": verdict.rounds,
                "requests_per_round": timing.requests_per_round,
                "round_speedups": [round(r.speedup, 4) for r in timing.rounds],
            }
        data["refused"] = self.refusal()  # kept when --force overrode it
        return data

    def write_json(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    def lines(self) -> list[str]:
        out = [f"{self.model}: {', '.join(self.steps)}"]
        rows: list[tuple[str, str, str]] = []
        if self.size_before:
            rows.append(("model size", _size(self.size_before), _size(self.size_after)))
        c = self.comparison
        if c is not None:
            rows += [
                ("p50 latency", duration(c.before.p50_us), duration(c.after.p50_us)),
                ("p99 latency", duration(c.before.p99_us), duration(c.after.p99_us)),
                ("throughput", _throughput(c.before), _throughput(c.after)),
            ]
        if rows:
            out.append(f"  {'':<14}{'before':>16}{'after':>16}")
            out += [f"  {label:<14}{before:>16}{after:>16}" for label, before, after in rows]
        if c is not None:
            timing = c.timing
            done = len(timing.rounds)
            out.append(f"  ({done} rounds of {timing.requests_per_round} requests per version, "
                       "taking turns, one at a time, in-process)")  # fmt: skip
            if timing.interrupted:
                out.append(f"  interrupted after {done} of {timing.planned} rounds")
            speed = timing.verdict()
            out.append(f"  {speed.describe()}: {speed.word}")
        drift = self.measured_drift()
        for name, diff in drift.max_abs_diff.items():
            line = f"  drift {name}: max abs diff {diff:.3g}"
            if name in drift.max_abs_value:
                line += f" (outputs up to {drift.max_abs_value[name]:.3g})"
            if name in drift.top1_agreement:
                line += f", top-1 agreement {drift.top1_agreement[name]:.1%}"
            out.append(line)
        within = "within" if drift.worst <= self.max_drift else "OVER"
        out.append(f"  drift {drift.worst:.3g} is {within} --max-drift {self.max_drift:g}")
        out += [f"  wrote {path}" for path in self.written]
        return out


def _latency(latency: Latency) -> dict[str, float | int]:
    return {
        "requests": latency.requests,
        "p50_us": round(latency.p50_us, 3),
        "p99_us": round(latency.p99_us, 3),
        "throughput_infer_per_sec": round(latency.throughput, 3),
        "throughput_spread": round(latency.spread, 4),
    }


def _throughput(latency: Latency) -> str:
    """Inferences per second with the rounds' relative spread (±, one standard deviation)."""
    return f"{latency.throughput:.0f}/s ±{latency.spread:.0%}"


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"
