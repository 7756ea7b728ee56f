"""What one ``naiad perf`` run measures, declared with perf_analyzer's flags.

A plain dataclass so that it crosses to the load processes as it is, and so
that ``naiad analyze`` can build one without a command line.  Each field
carries the flag(s) that set it (:mod:`naiad.tools.flags`): ``naiad perf``'s
arguments and the settings a command line means both come from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from naiad.tools.flags import Arg, flag


class PerfError(Exception):
    """A problem the user can fix, said in one line (exit code 1, no traceback)."""


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


# -- how flags' values become settings ------------------------------------------------


def _protocol(own: str | None, given: Mapping[str, Any]) -> str:
    return "embedded" if given["embedded"] else str(own).lower()


def _range(flag: str, kind: type = int) -> Any:
    return lambda own, _: parse_range(own, flag, kind)


def _intervals(own: str, _: Mapping[str, Any]) -> list[float]:
    try:
        intervals = [float(v) for v in Path(own).read_text().split()]
    except (OSError, ValueError) as exc:
        raise PerfError(f"--request-intervals {own}: {exc}") from None
    if not intervals or any(i <= 0 for i in intervals):
        raise PerfError(f"--request-intervals {own}: expected positive numbers of microseconds")
    return intervals


def _id_range(own: str, _: Mapping[str, Any]) -> tuple[int, int]:
    ids = parse_range(own, "--sequence-id-range")
    return ids[0], ids[-1] if len(ids) > 1 else 2**31 - 1


def _ssl(_: Any, given: Mapping[str, Any]) -> dict[str, str]:
    """gRPC's TLS files with ``-i grpc --ssl-grpc-use-ssl``, else HTTPS's when given."""
    grpc = not given["embedded"] and (given["protocol"] or "").lower() == "grpc"
    if grpc and given["ssl_grpc_use_ssl"]:
        return {"root": given["ssl_grpc_root_certifications_file"] or "",
                "key": given["ssl_grpc_private_key_file"] or "",
                "cert": given["ssl_grpc_certificate_chain_file"] or ""}  # fmt: skip
    if given["ssl_https_ca_certificates_file"] or given["ssl_https_client_certificate_file"]:
        peer = given["ssl_https_verify_peer"]
        return {"ca": given["ssl_https_ca_certificates_file"] or "",
                "cert": given["ssl_https_client_certificate_file"] or "",
                "key": given["ssl_https_private_key_file"] or "",
                "verify_peer": str(1 if peer is None else peer)}  # fmt: skip
    return {}


@dataclass
class PerfSettings:
    model: str = flag("-m", required=True, help="the model to measure")
    version: str = flag("-x", default="", help="the model version (default: the server's)")
    #: "" -> localhost:8000 (HTTP) or localhost:8001 (gRPC)
    url: str = flag("-u", default="", help="server address (localhost:8000 HTTP, :8001 gRPC)")
    protocol: str = flag(  # http | grpc | embedded
        "-i", default="http", choices=("http", "grpc", "HTTP", "gRPC", "GRPC"), help="protocol",
        more=(Arg(("--embedded",), switch=True,
                  help="serve --model-repository in this process and measure it with no "
                  "network (perf_analyzer's C API mode)"),),
        read=_protocol,
    )  # fmt: skip
    model_repository: tuple[str, ...] = flag(
        "--model-repository", repeat=True, default=(), help="for --embedded",
        read=lambda own, _: tuple(own),
    )  # fmt: skip
    batch_size: int = flag("-b", type=int, default=1, help="batch size of each request")
    concurrency: list[int] = flag("--concurrency-range", metavar="START:END:STEP",
                                  default_factory=list, read=_range("--concurrency-range"))  # fmt: skip
    request_rates: list[float] = flag(
        "--request-rate-range", metavar="START:END:STEP", default_factory=list,
        read=_range("--request-rate-range", float),
    )  # fmt: skip
    request_intervals_us: list[float] = flag(
        "--request-intervals", metavar="FILE", default_factory=list, read=_intervals,
        help="a file of intervals between requests, in microseconds, one per line",
    )  # fmt: skip
    request_distribution: str = flag("--request-distribution", default="constant",
                                     choices=("constant", "poisson"))  # fmt: skip
    shapes: dict[str, list[int]] = flag(
        "--shape", repeat=True, metavar="NAME:D1,D2,...", default_factory=dict,
        read=lambda own, _: dict(parse_shape(s) for s in own),
    )  # fmt: skip
    input_data: str = flag("--input-data", default="random",
                           help="zero, random or a JSON file (perf_analyzer's)")  # fmt: skip
    string_length: int = flag("--string-length", type=int, default=128)
    string_data: str = flag("--string-data", default="")
    measurement_interval_ms: int = flag("-p", "--measurement-interval", type=int, default=5000,
                                        metavar="MS")  # fmt: skip
    measurement_mode: str = flag("--measurement-mode", default="time_windows",
                                 choices=("time_windows", "count_windows"))  # fmt: skip
    measurement_request_count: int = flag("--measurement-request-count", type=int, default=50)
    stability_percentage: float = flag("-s", "--stability-percentage", type=float, default=10.0)
    #: At least 3: perf_analyzer compares the last three windows.
    max_trials: int = flag("-r", "--max-trials", type=int, default=10,
                           read=lambda own, _: max(own, 3))  # fmt: skip
    #: 0: stabilise on the average latency
    percentile: int = flag("--percentile", type=int, default=0,
                           help="stabilise on this latency percentile")  # fmt: skip
    sequence_length: int = flag("--sequence-length", type=int, default=20)
    sequence_id_range: tuple[int, int] = flag("--sequence-id-range", metavar="START[:END]",
                                              default=(1, 2**31 - 1), read=_id_range)  # fmt: skip
    streaming: bool = flag("--streaming", switch=True, default=False,
                           help="gRPC streams (decoupled models)")  # fmt: skip
    shared_memory: str = flag("--shared-memory", default="none", choices=("none", "system"))
    output_shared_memory_size: int = flag("--output-shared-memory-size", type=int, default=102400)
    headers: dict[str, str] = flag(
        "-H", repeat=True, metavar="NAME:VALUE", default_factory=dict,
        read=lambda own, _: dict(parse_header(h) for h in own),
    )  # fmt: skip
    ssl: dict[str, str] = flag(
        "--ssl-https-verify-peer", type=int, dest="ssl_https_verify_peer",
        more=(Arg(("--ssl-https-ca-certificates-file",)),
              Arg(("--ssl-https-client-certificate-file",)),
              Arg(("--ssl-https-private-key-file",)),
              Arg(("--ssl-grpc-use-ssl",), switch=True),
              Arg(("--ssl-grpc-root-certifications-file",)),
              Arg(("--ssl-grpc-private-key-file",)),
              Arg(("--ssl-grpc-certificate-chain-file",))),
        default_factory=dict, read=_ssl,
    )  # fmt: skip
    csv: str = flag("-f", metavar="FILE", default="", help="write perf_analyzer's CSV")
    verbose_csv: bool = flag("--verbose-csv", switch=True, default=False)
    collect_metrics: bool = flag("--collect-metrics", switch=True, default=False)
    metrics_url: str = flag("--metrics-url", default="localhost:8002/metrics")
    metrics_interval_ms: int = flag("--metrics-interval", type=int, default=1000, metavar="MS")
    plot: str = flag("--plot", metavar="PNG", default="",
                     help="throughput vs p50/p90/p99 latency (needs: pip install "
                     "'naiad[tools]')")  # fmt: skip
    #: 0: as many as the load needs (see load processes)
    client_processes: int = flag(
        "--client-processes", type=int, default=0,
        help="processes sending the load (default: as many as the concurrency needs)",
    )  # fmt: skip
    #: How long the tool waits for one control call (not flagged: perf_analyzer has none).
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
