"""Measure a model's throughput and latency, as perf_analyzer does, with its flags.

naiad perf sends requests to a server that speaks Triton's protocols (naiad,
Triton, any KServe v2 server) over HTTP or gRPC, or to a model repository
served in-process (--embedded), at each concurrency (or request rate) of a
sweep, until three measurement windows agree; then prints perf_analyzer's
report, writes its CSV (-f) and, with --plot, a throughput/latency chart.

  naiad perf -m add_sub
  naiad perf -m add_sub -i grpc -u localhost:8001 --concurrency-range 1:32:2 -f out.csv
  naiad perf -m add_sub --embedded --model-repository models --plot latency.png
  naiad perf -m tiny_lm --endpoint-type chat --max-tokens 64 --concurrency-range 1:8:2
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when it runs: `naiad serve` starts no slower for this tool
    from naiad.tools.perf.measure import StepResult
    from naiad.tools.perf.settings import PerfSettings

HELP = "measure a model's throughput and latency (perf_analyzer's flags), or an LLM's tokens"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from naiad.tools.flags import add_flags
    from naiad.tools.perf.llm.settings import LlmSettings
    from naiad.tools.perf.settings import PerfSettings

    add_flags(parser, PerfSettings)
    add_flags(parser, LlmSettings)


def run(args: argparse.Namespace) -> int:
    from naiad.tools.interrupt import INTERRUPTED
    from naiad.tools.perf.settings import PerfError

    try:
        if getattr(args, "endpoint_type", None):
            from naiad.tools.perf.llm.command import run as run_llm

            return run_llm(args)
        return _run(args)
    except PerfError as exc:
        print(f"naiad perf: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # before the sweep started: nothing measured yet
        print("naiad perf: interrupted", file=sys.stderr)
        return INTERRUPTED


def settings_from_args(args: argparse.Namespace) -> PerfSettings:
    """The settings the flags declared on :class:`PerfSettings` set; then what no one
    flag can check alone."""
    from naiad.tools.flags import settings_from
    from naiad.tools.perf.llm.settings import LlmSettings, check
    from naiad.tools.perf.settings import PerfError, PerfSettings

    settings = PerfSettings(**settings_from(args, PerfSettings))
    if hasattr(args, "endpoint_type"):  # an LLM flag needs --endpoint-type
        llm_given = settings_from(args, LlmSettings)
        check({}, llm_given, LlmSettings(**llm_given))
    if settings.protocol == "embedded" and not settings.model_repository:
        raise PerfError("--embedded needs --model-repository")
    if settings.streaming and settings.protocol != "grpc":
        raise PerfError("--streaming needs -i grpc")
    return settings


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from naiad.tools.interrupt import INTERRUPTED, run_cancellable
    from naiad.tools.perf import report
    from naiad.tools.perf.api import client_processes, run_sweep
    from naiad.tools.perf.progress import ProgressLine
    from naiad.tools.perf.settings import PerfError

    settings = settings_from_args(args)
    if settings.plot:
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
    if settings.csv:
        try:
            Path(settings.csv).write_text(report.csv_text(results, settings))
        except OSError as exc:
            raise PerfError(f"-f {settings.csv}: cannot be written ({exc.strerror})") from None
    if settings.plot:
        from naiad.tools.perf.plot import plot

        plot(results, Path(settings.plot), f"{settings.model} ({settings.protocol})")
    return INTERRUPTED if interrupted else 0
