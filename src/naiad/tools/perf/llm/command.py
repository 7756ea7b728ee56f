"""``naiad perf --endpoint-type ...``: the run, from the flags to the report and the CSV.

naiad perf -m tiny_lm --endpoint-type chat --max-tokens 64 --concurrency-range 1:8:2
naiad perf -m tiny_lm --endpoint-type generate --request-count 50 -f llm.csv
naiad perf -m tiny_lm --endpoint-type grpc-stream -u localhost:8001 --request-rate-range 2:8:2
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from naiad.tools.flags import settings_from
from naiad.tools.perf.llm.figures import LevelResult
from naiad.tools.perf.llm.settings import LlmSettings, check
from naiad.tools.perf.settings import PerfError, PerfSettings


def settings_from_args(args: argparse.Namespace) -> tuple[PerfSettings, LlmSettings]:
    """perf's settings (those an LLM measurement uses) and the LLM ones."""
    llm_given = settings_from(args, LlmSettings)
    llm = LlmSettings(**llm_given)
    perf_given = settings_from(args, PerfSettings)
    check(perf_given, llm_given, llm)
    if not llm.http:  # -u's default port and the --ssl-grpc-* files are gRPC's
        perf_given = settings_from(argparse.Namespace(**{**vars(args), "protocol": "grpc"}),
                                   PerfSettings)  # fmt: skip
    return PerfSettings(**perf_given), llm


def run(args: argparse.Namespace) -> int:
    from naiad.tools.interrupt import INTERRUPTED, run_cancellable
    from naiad.tools.perf.llm import report
    from naiad.tools.perf.llm.api import make_transport, run_sweep
    from naiad.tools.perf.progress import ProgressLine

    perf, llm = settings_from_args(args)
    transport = make_transport(perf, llm)
    print(report.settings_text(perf, llm, transport.where, len(transport.prompts)), flush=True)
    line = ProgressLine()
    results: list[LevelResult] = []

    def show(result: LevelResult) -> None:
        results.append(result)
        line.clear()
        print(report.level_text(result, perf), flush=True)
        if result.client_cpu_percent > 90:
            print("  Warning: the client used a whole core: it, not the server, may be the "
                  "limit (fewer requests in flight per run)\n", flush=True)  # fmt: skip

    interrupted = False
    try:
        run_cancellable(run_sweep(perf, llm, line.show, show, transport))
    except KeyboardInterrupt:
        interrupted = True
    finally:
        line.clear()
    if interrupted:
        print(f"naiad perf: interrupted: reporting the {len(results)} finished levels "
              "(the level under way is dropped)", file=sys.stderr, flush=True)  # fmt: skip
        if not results:
            return INTERRUPTED
    print(report.summary_table(results))
    if perf.csv:
        try:
            Path(perf.csv).write_text(report.csv_text(results))
        except OSError as exc:
            raise PerfError(f"-f {perf.csv}: cannot be written ({exc.strerror})") from None
    return INTERRUPTED if interrupted else 0
