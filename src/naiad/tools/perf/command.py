"""Measure a model's throughput and latency, as perf_analyzer does, with its flags.

naiad perf sends requests to a server that speaks Triton's protocols (naiad,
Triton, any KServe v2 server) over HTTP or gRPC, or to a model repository
served in-process (--embedded), at each concurrency (or request rate) of a
sweep, until three measurement windows agree; then prints perf_analyzer's
report, writes its CSV (-f) and, with --plot, a throughput/latency chart.

  naiad perf -m add_sub
  naiad perf -m add_sub -i grpc -u localhost:8001 --concurrency-range 1:32:2 -f out.csv
  naiad perf -m add_sub --embedded --model-repository models --plot latency.png
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when it runs: `naiad serve` starts no slower for this tool
    from naiad.tools.perf.measure import StepResult
    from naiad.tools.perf.settings import PerfSettings

HELP = "measure a model's throughput and latency (perf_analyzer's flags)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("-m", dest="model", required=True, help="the model to measure")
    add("-x", dest="version", default="", help="the model version (default: the server's)")
    add("-u", dest="url", default="", help="server address (localhost:8000 HTTP, :8001 gRPC)")
    add("-i", dest="protocol", default="http", choices=("http", "grpc", "HTTP", "gRPC", "GRPC"),
        help="protocol")  # fmt: skip
    add("--embedded", action="store_true",
        help="serve --model-repository in this process and measure it with no network "
             "(perf_analyzer's C API mode)")  # fmt: skip
    add("--model-repository", action="append", default=[], help="for --embedded")
    add("-b", dest="batch_size", type=int, default=1, help="batch size of each request")
    add("--concurrency-range", default="", metavar="START:END:STEP")
    add("--request-rate-range", default="", metavar="START:END:STEP")
    add("--request-intervals", default="", metavar="FILE",
        help="a file of intervals between requests, in microseconds, one per line")  # fmt: skip
    add("--request-distribution", default="constant", choices=("constant", "poisson"))
    add("--shape", action="append", default=[], metavar="NAME:D1,D2,...")
    add("--input-data", default="random", help="zero, random or a JSON file (perf_analyzer's)")
    add("--string-length", type=int, default=128)
    add("--string-data", default="")
    add("-p", "--measurement-interval", dest="measurement_interval", type=int, default=5000,
        metavar="MS")  # fmt: skip
    add("--measurement-mode", default="time_windows", choices=("time_windows", "count_windows"))
    add("--measurement-request-count", type=int, default=50)
    add("-s", "--stability-percentage", dest="stability_percentage", type=float, default=10.0)
    add("-r", "--max-trials", dest="max_trials", type=int, default=10)
    add("--percentile", type=int, default=0, help="stabilise on this latency percentile")
    add("--sequence-length", type=int, default=20)
    add("--sequence-id-range", default="1", metavar="START[:END]")
    add("--streaming", action="store_true", help="gRPC streams (decoupled models)")
    add("--shared-memory", default="none", choices=("none", "system"))
    add("--output-shared-memory-size", type=int, default=102400)
    add("-H", dest="headers", action="append", default=[], metavar="NAME:VALUE")
    add("--ssl-https-verify-peer", type=int, default=1)
    add("--ssl-https-ca-certificates-file", default="")
    add("--ssl-https-client-certificate-file", default="")
    add("--ssl-https-private-key-file", default="")
    add("--ssl-grpc-use-ssl", action="store_true")
    add("--ssl-grpc-root-certifications-file", default="")
    add("--ssl-grpc-private-key-file", default="")
    add("--ssl-grpc-certificate-chain-file", default="")
    add("-f", dest="csv", default="", metavar="FILE", help="write perf_analyzer's CSV")
    add("--verbose-csv", action="store_true")
    add("--collect-metrics", action="store_true")
    add("--metrics-url", default="localhost:8002/metrics")
    add("--metrics-interval", type=int, default=1000, metavar="MS")
    add("--plot", default="", metavar="PNG",
        help="throughput vs p50/p90/p99 latency (needs: pip install 'naiad[tools]')")  # fmt: skip
    add("--client-processes", type=int, default=0,
        help="processes sending the load (default: as many as the concurrency needs)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from naiad.tools.interrupt import INTERRUPTED
    from naiad.tools.perf.settings import PerfError

    try:
        return _run(args)
    except PerfError as exc:
        print(f"naiad perf: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # before the sweep started: nothing measured yet
        print("naiad perf: interrupted", file=sys.stderr)
        return INTERRUPTED


def settings_from_args(args: argparse.Namespace) -> PerfSettings:
    from pathlib import Path

    from naiad.tools.perf.settings import (
        PerfError,
        PerfSettings,
        parse_header,
        parse_range,
        parse_shape,
    )

    protocol = "embedded" if args.embedded else args.protocol.lower()
    if args.embedded and not args.model_repository:
        raise PerfError("--embedded needs --model-repository")
    if args.streaming and protocol != "grpc":
        raise PerfError("--streaming needs -i grpc")
    ids = parse_range(args.sequence_id_range, "--sequence-id-range")
    intervals: list[float] = []
    if args.request_intervals:
        try:
            lines = Path(args.request_intervals).read_text().split()
            intervals = [float(v) for v in lines]
        except (OSError, ValueError) as exc:
            raise PerfError(f"--request-intervals {args.request_intervals}: {exc}") from None
        if not intervals or any(i <= 0 for i in intervals):
            raise PerfError(f"--request-intervals {args.request_intervals}: expected "
                            "positive numbers of microseconds")  # fmt: skip
    ssl = {}
    if protocol == "grpc" and args.ssl_grpc_use_ssl:
        ssl = {"root": args.ssl_grpc_root_certifications_file,
               "key": args.ssl_grpc_private_key_file,
               "cert": args.ssl_grpc_certificate_chain_file}  # fmt: skip
    elif args.ssl_https_ca_certificates_file or args.ssl_https_client_certificate_file:
        ssl = {"ca": args.ssl_https_ca_certificates_file,
               "cert": args.ssl_https_client_certificate_file,
               "key": args.ssl_https_private_key_file,
               "verify_peer": str(args.ssl_https_verify_peer)}  # fmt: skip
    return PerfSettings(
        model=args.model,
        version=args.version,
        url=args.url,
        protocol=protocol,
        model_repository=tuple(args.model_repository),
        batch_size=args.batch_size,
        concurrency=parse_range(args.concurrency_range, "--concurrency-range")
        if args.concurrency_range else [],
        request_rates=parse_range(args.request_rate_range, "--request-rate-range", float)
        if args.request_rate_range else [],
        request_intervals_us=intervals,
        request_distribution=args.request_distribution,
        shapes=dict(parse_shape(s) for s in args.shape),
        input_data=args.input_data,
        string_length=args.string_length,
        string_data=args.string_data,
        measurement_interval_ms=args.measurement_interval,
        measurement_mode=args.measurement_mode,
        measurement_request_count=args.measurement_request_count,
        stability_percentage=args.stability_percentage,
        max_trials=max(args.max_trials, 3),
        percentile=args.percentile,
        sequence_length=args.sequence_length,
        sequence_id_range=(ids[0], ids[-1] if len(ids) > 1 else 2**31 - 1),
        streaming=args.streaming,
        shared_memory=args.shared_memory,
        output_shared_memory_size=args.output_shared_memory_size,
        headers=dict(parse_header(h) for h in args.headers),
        ssl=ssl,
        verbose_csv=args.verbose_csv,
        collect_metrics=args.collect_metrics,
        metrics_url=args.metrics_url,
        metrics_interval_ms=args.metrics_interval,
        client_processes=args.client_processes,
    )  # fmt: skip


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from naiad.tools.interrupt import INTERRUPTED, run_cancellable
    from naiad.tools.perf import report
    from naiad.tools.perf.api import client_processes, run_sweep
    from naiad.tools.perf.progress import ProgressLine
    from naiad.tools.perf.settings import PerfError

    settings = settings_from_args(args)
    if args.plot:
        from naiad.tools.perf.plot import check_available

        check_available()
    print(report.settings_text(settings, client_processes(settings)), flush=True)
    line = ProgressLine()

    results: list[StepResult] = []

    def show(result: StepResult) -> None:
        results.append(result)
        line.clear()
        print(report.step_text(result, settings), flush=True)
        busy = result.client_cpu_percent > 90 * result.processes
        if busy and settings.protocol != "embedded":  # in-process, the server is the client
            print("  Warning: the client used a whole core per process: it, not the server, "
                  "may be the limit (add --client-processes)\n", flush=True)  # fmt: skip

    interrupted = False
    try:
        run_cancellable(run_sweep(settings, line.show, show))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        line.clear()
    if interrupted:
        print(f"naiad perf: interrupted: reporting the {len(results)} finished steps "
              "(the step under way is dropped)", file=sys.stderr, flush=True)  # fmt: skip
        if not results:
            return INTERRUPTED
    print(report.closing_text(results, settings))
    print()
    print(report.summary_table(results))
    if args.csv:
        try:
            Path(args.csv).write_text(report.csv_text(results, settings))
        except OSError as exc:
            raise PerfError(f"-f {args.csv}: cannot be written ({exc.strerror})") from None
    if args.plot:
        from naiad.tools.perf.plot import plot

        plot(results, Path(args.plot), f"{settings.model} ({settings.protocol})")
    return INTERRUPTED if interrupted else 0
