"""What one ``naiad perf`` run measures, read from perf_analyzer's flags.

A plain dataclass so that it crosses to the load processes as it is, and so
that ``naiad analyze`` can build one without a command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class PerfError(Exception):
    """A problem the user can fix, said in one line (exit code 1, no traceback)."""


@dataclass
class PerfSettings:
    model: str
    version: str = ""
    url: str = ""  # "" -> localhost:8000 (HTTP) or localhost:8001 (gRPC)
    protocol: str = "http"  # http | grpc | embedded
    model_repository: tuple[str, ...] = ()  # --embedded
    batch_size: int = 1
    concurrency: list[int] = field(default_factory=list)
    request_rates: list[float] = field(default_factory=list)
    request_intervals_us: list[float] = field(default_factory=list)
    request_distribution: str = "constant"  # constant | poisson
    shapes: dict[str, list[int]] = field(default_factory=dict)
    input_data: str = "random"  # zero | random | a JSON file
    string_length: int = 128
    string_data: str = ""
    measurement_interval_ms: int = 5000
    measurement_mode: str = "time_windows"  # time_windows | count_windows
    measurement_request_count: int = 50
    stability_percentage: float = 10.0
    max_trials: int = 10
    percentile: int = 0  # 0: stabilise on the average latency
    sequence_length: int = 20
    sequence_id_range: tuple[int, int] = (1, 2**31 - 1)
    streaming: bool = False
    shared_memory: str = "none"  # none | system
    output_shared_memory_size: int = 102400
    headers: dict[str, str] = field(default_factory=dict)
    ssl: dict[str, str] = field(default_factory=dict)
    verbose_csv: bool = False
    collect_metrics: bool = False
    metrics_url: str = "localhost:8002/metrics"
    metrics_interval_ms: int = 1000
    client_processes: int = 0  # 0: as many as the load needs (see load processes)
    timeout_s: float = 30.0

    @property
    def address(self) -> str:
        if self.url:
            return self.url.removeprefix("http://").removeprefix("https://")
        return "localhost:8001" if self.protocol == "grpc" else "localhost:8000"

    def steps(self) -> list[tuple[str, float]]:
        """The sweep: ("concurrency", n), ("rate", r) or ("intervals", 0) steps in order."""
        if self.request_intervals_us:
            return [("intervals", 0.0)]
        if self.request_rates:
            return [("rate", r) for r in self.request_rates]
        return [("concurrency", float(c)) for c in self.concurrency or [1]]


def parse_range(text: str, flag: str, kind: type = int) -> list:
    """perf_analyzer's ``start[:end[:step]]``; every value from start to end inclusive."""
    try:
        parts = [kind(p) for p in text.split(":")]
    except ValueError:
        raise PerfError(f"{flag} {text}: expected start[:end[:step]] numbers") from None
    if not 1 <= len(parts) <= 3 or parts[0] <= 0:
        raise PerfError(f"{flag} {text}: expected start[:end[:step]] with start > 0")
    start = parts[0]
    end = parts[1] if len(parts) > 1 else start
    step = parts[2] if len(parts) > 2 else 1
    if end < start or step <= 0:
        raise PerfError(f"{flag} {text}: end must be >= start and step > 0")
    values = []
    value = start
    while value <= end + 1e-9:
        values.append(value)
        value += step
    return values


def parse_shape(text: str) -> tuple[str, list[int]]:
    """``NAME:d1,d2,...`` (perf_analyzer's --shape)."""
    name, sep, dims = text.rpartition(":")
    try:
        shape = [int(d) for d in dims.split(",")] if dims else []
    except ValueError:
        shape = [-1]
    if not sep or not name or any(d < 0 for d in shape):
        raise PerfError(f"--shape {text}: expected NAME:d1,d2,... with dimensions >= 0")
    return name, shape


def parse_header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition(":")
    if not sep or not name.strip():
        raise PerfError(f"-H {text}: expected NAME:VALUE")
    return name.strip(), value.strip()
