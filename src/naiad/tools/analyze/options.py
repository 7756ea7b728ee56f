"""What one ``naiad analyze`` run does, declared with the flag that sets each part.

Each field of :class:`Options` carries its flag(s) (:mod:`naiad.tools.flags`):
``naiad analyze``'s arguments, its ``--help`` (defaults included) and the
options a command line means all come from here.  Imported at start-up (the
``naiad`` command builds every tool's parser), so it stays light.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from naiad.tools.analyze.objective import Constraints
from naiad.tools.arguments import counts, naturals, positive_float, positive_int, switches
from naiad.tools.flags import Arg, flag
from naiad.tools.perf.settings import PerfSettings, parse_shape

#: Defaults of the searched values (each knob also gets the model's own value).
DEFAULT_MAX_BATCH_SIZES = (4, 16, 64)
DEFAULT_DELAYS_US = (0, 100, 1000)

WHAT = "what to analyse"
GOAL = "what is best"
KNOBS = "the knobs (comma-separated values; each also gets the model's own value)"
HOW = "how each configuration is measured"


@dataclass(frozen=True)
class Asked:
    """The values the command line asked for; None: the defaults for this model."""

    instances: tuple[int, ...] | None = None
    dynamic_batching: tuple[bool, ...] | None = None
    max_batch_sizes: tuple[int, ...] | None = None
    delays_us: tuple[int, ...] | None = None
    intra_op_threads: tuple[int, ...] | None = None
    inter_op_threads: tuple[int, ...] | None = None


def _csv(values: tuple[int, ...]) -> str:
    return ",".join(str(v) for v in values)


def _constraints(budget_ms: float | None, given: Mapping[str, Any]) -> Constraints:
    budget_us = budget_ms * 1000 if budget_ms is not None else None
    return Constraints(latency_budget_us=budget_us, min_throughput=given["min_throughput"])


def _asked(instances: tuple[int, ...] | None, given: Mapping[str, Any]) -> Asked:
    return Asked(
        instances=instances,
        dynamic_batching=given["dynamic_batching"],
        max_batch_sizes=given["max_batch_sizes"],
        delays_us=given["delays_us"],
        intra_op_threads=given["intra_op_threads"],
        inter_op_threads=given["inter_op_threads"],
    )


def _path(own: str, _: Mapping[str, Any]) -> Path:
    return Path(own)


@dataclass
class Options:
    model: str = flag("-m", "--model-name", required=True, metavar="MODEL", group=WHAT,
                      help="the model to analyse")  # fmt: skip
    repository: Path | None = flag(
        "--model-repository", metavar="R", default=None, group=WHAT, read=_path,
        help="the model repository (a local folder) naiad analyze serves the model from",
    )  # fmt: skip
    url: str | None = flag(
        "--url", metavar="HOST:PORT", default=None, group=WHAT,
        help="use this running naiad (HTTP, --model-control-mode explicit) instead of "
        "starting one; its config is read from the server unless --model-repository is "
        "also given",
    )  # fmt: skip
    server_pid: int | None = flag(
        "--server-pid", type=positive_int, metavar="PID", default=None, group=WHAT,
        help="with --url: the server's process id, for its CPU and memory columns",
    )  # fmt: skip
    protocol: str = flag("-i", "--protocol", choices=("http", "grpc"), default="http", group=WHAT,
                         help="the protocol of the measured requests (default {default})")  # fmt: skip
    constraints: Constraints = flag(
        "--latency-budget-ms", "--latency-budget", type=positive_float, metavar="MS",
        group=GOAL, default_factory=Constraints, read=_constraints,
        help="the p99 latency, in ms, a configuration must keep to (Model Analyzer's "
        "--latency-budget); the report lists the configurations it excludes",
        more=(Arg(("--min-throughput",), type=positive_float, metavar="N",
                  help="the throughput (infer/s) a configuration must reach"),),
    )  # fmt: skip
    search: str = flag(
        "--search", choices=("quick", "brute"), default="quick", group=GOAL,
        help="quick: climb one knob at a time, at most a third of the grid's trials "
        "(default); brute: every configuration",
    )  # fmt: skip
    asked: Asked = flag(
        "--instances", type=counts, metavar="N,N", group=KNOBS, default_factory=Asked,
        read=_asked, help="instance counts (default 1, 2, 4, ... up to the cores)",
        more=(
            Arg(("--dynamic-batching",), type=switches, metavar="on,off",
                help="dynamic batching on, off or both (default both, batching models)"),
            Arg(("--max-batch-sizes",), type=counts, metavar="N,N",
                help="max_batch_size values with dynamic batching (default "
                f"{_csv(DEFAULT_MAX_BATCH_SIZES)})"),
            Arg(("--delays-us",), type=naturals, metavar="US,US",
                help=f"max_queue_delay_microseconds values (default {_csv(DEFAULT_DELAYS_US)})"),
            Arg(("--intra-op-threads",), type=naturals, metavar="N,N",
                help="ONNX Runtime intra_op_thread_count values, 0 for its default "
                "(default 0, 1 and the cores)"),
            Arg(("--inter-op-threads",), type=naturals, metavar="N,N",
                help="ONNX Runtime inter_op_thread_count values (default 0: only parallel "
                "execution mode uses them)"),
        ),
    )  # fmt: skip
    concurrency: tuple[int, ...] = flag(
        "--concurrency", type=counts, default=(1, 8, 32), metavar="N,N", group=HOW,
        help="the concurrency sweep of every configuration (default {default})",
    )  # fmt: skip
    measurement_interval_ms: int = flag("--measurement-interval", "-p", type=positive_int,
                                        default=1000, metavar="MS", group=HOW,
                                        help="a measurement window in ms (default {default})")  # fmt: skip
    max_trials: int = flag(
        "--max-trials", type=positive_int, default=5, metavar="N", group=HOW,
        help="windows per concurrency before giving up on stability (default {default}; "
        "perf_analyzer's -r)",
    )  # fmt: skip
    stability_percentage: float = flag(
        "--stability-percentage", "-s", type=positive_float, default=10.0, metavar="P",
        group=HOW, help="windows agree within P%% (default {default})",
    )  # fmt: skip
    #: Sweeps per configuration (their spread is the noise of its throughput).
    repeats: int = flag(
        "--repeats", type=positive_int, default=2, metavar="N", group=HOW,
        help="sweeps per configuration (default {default}): their spread is the noise "
        "within which a simpler configuration is preferred",
    )  # fmt: skip
    batch_size: int = flag("-b", "--batch-size", type=positive_int, default=1, metavar="N",
                           group=HOW, help="items per request (default {default})")  # fmt: skip
    shapes: dict[str, list[int]] = flag(
        "--shape", repeat=True, metavar="NAME:D1,D2", group=HOW, default_factory=dict,
        read=lambda own, _: dict(parse_shape(s) for s in own),
        help="an input's shape where the model leaves dimensions open (as perf_analyzer's "
        "--shape)",
    )  # fmt: skip
    startup_timeout_s: float = flag(
        "--startup-timeout", type=positive_float, default=120.0, metavar="S", group=HOW,
        help="seconds the started server may take to listen (default {default})",
    )  # fmt: skip
    out_dir: Path = flag(
        "-o", "--output", default=Path("reports"), metavar="DIR", read=_path,
        help="where results.csv, report.html and best_repository/ go (default {default})",
    )  # fmt: skip

    @property
    def sweep(self) -> PerfSettings:
        """The sweep of each trial (model and url are filled in when the server is known)."""
        return PerfSettings(
            model=self.model,
            protocol=self.protocol,
            concurrency=list(self.concurrency),
            measurement_interval_ms=self.measurement_interval_ms,
            max_trials=self.max_trials,
            stability_percentage=self.stability_percentage,
            batch_size=self.batch_size,
            shapes=self.shapes,
        )
