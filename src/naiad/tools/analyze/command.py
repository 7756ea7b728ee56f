"""Search a model's configurations for the highest throughput within a latency budget.

As Triton's Model Analyzer does: each configuration (instance count,
max_batch_size, dynamic batching and its queue delay, ONNX Runtime's
intra_op/inter_op thread counts) is loaded into a naiad server with the
load API's config override and measured by naiad perf's engine over a
concurrency sweep, with the server's CPU time and memory.  The best is the
configuration with the highest throughput whose p99 latency stays within
--latency-budget-ms (and throughput above --min-throughput), at any
concurrency of the sweep.  Each configuration is swept --repeats times: a
configuration whose throughput is within the noise (95% confidence
intervals) of the highest is as good, and the simplest of those wins
(fewer instances, no or smaller batching, shorter delay, default threads).

--search brute measures the whole grid; quick (the default) climbs from the
model's own configuration one knob at a time and takes at most a third of
the grid's trials.  By default naiad analyze starts its own naiad server
(explicit model control, the model alone); --url uses one already running
in explicit mode.

Writes to -o DIR: results.csv (a row per configuration and concurrency),
report.html (charts inline: opens offline) and best_repository/MODEL/, the
chosen config.pbtxt beside links to the model's files, ready for
naiad serve.  Ctrl-C stops the search and still writes what finished.

exit codes: 0 a configuration was chosen; 1 none met the constraints (the
CSV and report are written); 2 a usage or server problem; 130 interrupted.

examples:
  naiad analyze -m image_classifier --model-repository models --latency-budget-ms 10 -o reports
  naiad analyze -m mlp --model-repository models --search brute --concurrency 1,4,16
  naiad analyze -m mlp --model-repository models --instances 1,2 --max-batch-sizes 8,32 \\
      --delays-us 0,500 --intra-op-threads 1 --measurement-interval 500
  naiad analyze -m mlp --url 127.0.0.1:8000 --server-pid 4242 -o reports
"""

from __future__ import annotations

import argparse
import sys

from naiad.tools.arguments import positive_int

HELP = "search a model's configurations for the best throughput within a latency budget"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_argument_group("what to analyse")
    what.add_argument("-m", "--model-name", dest="model", required=True, metavar="MODEL",
                      help="the model to analyse")  # fmt: skip
    what.add_argument("--model-repository", metavar="R",
                      help="the model repository (a local folder) naiad analyze serves the "
                      "model from")  # fmt: skip
    what.add_argument("--url", metavar="HOST:PORT",
                      help="use this running naiad (HTTP, --model-control-mode explicit) "
                      "instead of starting one; its config is read from the server unless "
                      "--model-repository is also given")  # fmt: skip
    what.add_argument("--server-pid", type=positive_int, metavar="PID",
                      help="with --url: the server's process id, for its CPU and memory columns")  # fmt: skip
    what.add_argument("-i", "--protocol", choices=("http", "grpc"), default="http",
                      help="the protocol of the measured requests (default http)")  # fmt: skip

    goal = parser.add_argument_group("what is best")
    goal.add_argument("--latency-budget-ms", "--latency-budget", type=_positive_float,
                      metavar="MS", help="the p99 latency, in ms, a configuration must keep "
                      "to (Model Analyzer's --latency-budget); the report lists the "
                      "configurations it excludes")  # fmt: skip
    goal.add_argument("--min-throughput", type=_positive_float, metavar="N",
                      help="the throughput (infer/s) a configuration must reach")  # fmt: skip
    goal.add_argument("--search", choices=("quick", "brute"), default="quick",
                      help="quick: climb one knob at a time, at most a third of the grid's "
                      "trials (default); brute: every configuration")  # fmt: skip

    knobs = parser.add_argument_group(
        "the knobs (comma-separated values; each also gets the model's own value)"
    )
    knobs.add_argument("--instances", type=_counts, metavar="N,N",
                       help="instance counts (default 1, 2, 4, ... up to the cores)")  # fmt: skip
    knobs.add_argument("--dynamic-batching", type=_switches, metavar="on,off",
                       help="dynamic batching on, off or both (default both, batching models)")  # fmt: skip
    knobs.add_argument("--max-batch-sizes", type=_counts, metavar="N,N",
                       help="max_batch_size values with dynamic batching (default 4,16,64)")  # fmt: skip
    knobs.add_argument("--delays-us", type=_delays, metavar="US,US",
                       help="max_queue_delay_microseconds values (default 0,100,1000)")  # fmt: skip
    knobs.add_argument("--intra-op-threads", type=_delays, metavar="N,N",
                       help="ONNX Runtime intra_op_thread_count values, 0 for its default "
                       "(default 0, 1 and the cores)")  # fmt: skip
    knobs.add_argument("--inter-op-threads", type=_delays, metavar="N,N",
                       help="ONNX Runtime inter_op_thread_count values (default 0: only "
                       "parallel execution mode uses them)")  # fmt: skip

    how = parser.add_argument_group("how each configuration is measured")
    how.add_argument("--concurrency", type=_counts, default=(1, 8, 32), metavar="N,N",
                     help="the concurrency sweep of every configuration (default 1,8,32)")  # fmt: skip
    how.add_argument("--measurement-interval", "-p", type=positive_int, default=1000, metavar="MS",
                     help="a measurement window in ms (default 1000)")  # fmt: skip
    how.add_argument("--max-trials", type=positive_int, default=5, metavar="N",
                     help="windows per concurrency before giving up on stability (default 5; "
                     "perf_analyzer's -r)")  # fmt: skip
    how.add_argument(
        "--stability-percentage",
        "-s",
        type=_positive_float,
        default=10.0,
        metavar="P",
        help="windows agree within P%% (default 10)",
    )
    how.add_argument("--repeats", type=positive_int, default=2, metavar="N",
                     help="sweeps per configuration (default 2): their spread is the noise "
                     "within which a simpler configuration is preferred")  # fmt: skip
    how.add_argument("-b", "--batch-size", type=positive_int, default=1, metavar="N",
                     help="items per request (default 1)")  # fmt: skip
    how.add_argument("--shape", action="append", default=[], metavar="NAME:D1,D2",
                     help="an input's shape where the model leaves dimensions open "
                     "(as perf_analyzer's --shape)")  # fmt: skip
    how.add_argument("--startup-timeout", type=_positive_float, default=120.0, metavar="S",
                     help="seconds the started server may take to listen (default 120)")  # fmt: skip

    parser.add_argument("-o", "--output", default="reports", metavar="DIR",
                        help="where results.csv, report.html and best_repository/ go "
                        "(default reports)")  # fmt: skip


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _numbers(text: str, low: int) -> tuple[int, ...]:
    try:
        values = tuple(sorted({int(v) for v in text.split(",") if v.strip()}))
    except ValueError:
        values = ()
    if not values or values[0] < low:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers >= {low}, got {text!r}"
        )
    return values


def _counts(text: str) -> tuple[int, ...]:
    return _numbers(text, 1)


def _delays(text: str) -> tuple[int, ...]:
    return _numbers(text, 0)


def _switches(text: str) -> tuple[bool, ...]:
    words = {w.strip().lower() for w in text.split(",") if w.strip()}
    if not words or not words <= {"on", "off"}:
        raise argparse.ArgumentTypeError(f"expected on, off or on,off, got {text!r}")
    return tuple(sorted(w == "on" for w in words))


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from naiad.tools.analyze.analysis import Options
    from naiad.tools.analyze.analysis import run as analyze
    from naiad.tools.analyze.errors import AnalyzeError
    from naiad.tools.analyze.model import Asked
    from naiad.tools.analyze.objective import Constraints
    from naiad.tools.interrupt import INTERRUPTED
    from naiad.tools.perf.settings import PerfError, PerfSettings, parse_shape

    try:
        budget = args.latency_budget_ms
        options = Options(
            model=args.model,
            out_dir=Path(args.output),
            repository=Path(args.model_repository) if args.model_repository else None,
            url=args.url,
            server_pid=args.server_pid,
            protocol=args.protocol,
            search=args.search,
            constraints=Constraints(
                latency_budget_us=budget * 1000 if budget is not None else None,
                min_throughput=args.min_throughput,
            ),
            asked=Asked(
                instances=args.instances,
                dynamic_batching=args.dynamic_batching,
                max_batch_sizes=args.max_batch_sizes,
                delays_us=args.delays_us,
                intra_op_threads=args.intra_op_threads,
                inter_op_threads=args.inter_op_threads,
            ),
            sweep=PerfSettings(
                model=args.model,
                protocol=args.protocol,
                concurrency=list(args.concurrency),
                measurement_interval_ms=args.measurement_interval,
                max_trials=args.max_trials,
                stability_percentage=args.stability_percentage,
                batch_size=args.batch_size,
                shapes=dict(parse_shape(s) for s in args.shape),
            ),
            startup_timeout_s=args.startup_timeout,
            repeats=args.repeats,
        )
        return analyze(options, lambda line: print(line, flush=True))
    except (AnalyzeError, PerfError) as exc:
        print(f"naiad analyze: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    except OSError as exc:
        print(f"naiad analyze: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("naiad analyze: interrupted before any trial finished", file=sys.stderr)
        return INTERRUPTED
