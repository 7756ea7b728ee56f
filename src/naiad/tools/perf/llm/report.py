"""The LLM report: GenAI-Perf's table for each level, a summary of the sweep, the CSV.

GenAI-Perf prints one table per run (statistic by statistic: avg, min, max
and percentiles of each per-request figure, then the two throughputs) and
writes one CSV per run.  A naiad perf sweep measures several levels in one
run, so the CSV has a row per level (as perf's own ``-f`` does), each
figure's statistics in columns named "<figure> <statistic>", with GenAI-Perf's
figure names and units.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from naiad.tools.perf.llm.figures import STATISTICS, LevelResult
from naiad.tools.perf.llm.settings import LlmSettings
from naiad.tools.perf.settings import PerfSettings

#: The statistics the table shows (GenAI-Perf's avg, min, max, p99, p90, p75; and p50).
SHOWN = ("avg", "min", "max", "p99", "p90", "p75", "p50")


def settings_text(perf: PerfSettings, llm: LlmSettings, where: str, prompts: int) -> str:
    if llm.prompt:
        given = "--prompt"
    elif llm.input_file:
        given = f"{prompts} from {llm.input_file}"
    else:
        given = f"{prompts} synthetic, {llm.prompt_tokens} words each"
    if llm.request_count:
        until = f"{llm.request_count} requests at each level (--request-count)"
    else:
        on = f"p{perf.percentile} latency" if perf.percentile else "average latency"
        window = (f"{perf.measurement_request_count} requests"
                  if perf.measurement_mode == "count_windows"
                  else f"{perf.measurement_interval_ms} msec")  # fmt: skip
        until = (f"windows of {window} until 3 agree within {perf.stability_percentage:g}% "
                 f"on request throughput and {on}")  # fmt: skip
    lines = [
        "*** LLM Measurement Settings ***",
        f"  Model: {perf.model}",
        f"  Endpoint: {llm.endpoint_type} ({where})",
        f"  Prompts: {given}",
        f"  Max tokens: {llm.max_tokens or 'not sent'}",
        f"  Measuring: {until}",
    ]
    if llm.warmup_request_count:
        lines.append(f"  Warm-up: {llm.warmup_request_count} requests at each level")
    return "\n".join(lines) + "\n"


def level_text(result: LevelResult, perf: PerfSettings) -> str:
    head = (f"Request concurrency: {result.value:g}" if result.kind == "concurrency"
            else f"Request rate: {result.value:g} requests per second")  # fmt: skip
    rows = [["Statistic", *SHOWN]]
    for name, stats in result.figures():
        if stats is not None:
            rows.append([name, *(_number(stats.get(s)) for s in SHOWN)])
    rows.append(["Output Token Throughput (tokens/sec)", _number(result.output_token_throughput),
                 *["N/A"] * (len(SHOWN) - 1)])  # fmt: skip
    rows.append(["Request Throughput (per sec)", _number(result.request_throughput),
                 *["N/A"] * (len(SHOWN) - 1)])  # fmt: skip
    how = (f"the last 3 of {result.windows} windows" if result.windows
           else "from the first one's start to the last token")  # fmt: skip
    lines = [head, f"  Requests: {result.requests} in {result.seconds:.2f} sec ({how}); "
             f"client CPU {result.client_cpu_percent:.0f}% of a core"]  # fmt: skip
    lines += ["  " + line for line in _table(rows)]
    if result.empty:
        lines.append(f"  {result.empty} request(s) had no output: counted in the request "
                     "throughput only")  # fmt: skip
    if not result.stable:
        lines.append(
            f"  Unstable: no 3 windows in a row agreed within {perf.stability_percentage:g}% "
            f"in {result.windows} windows; these are the last three (raise "
            "--measurement-interval, or use --request-count)"
        )
    return "\n".join(lines) + "\n"


def summary_table(results: Sequence[LevelResult]) -> str:
    """The sweep at a glance: one row per level."""
    rows = [["level", "requests/s", "tokens/s", "TTFT avg ms", "TTFT p99 ms", "ITL avg ms",
             "ITL p99 ms", "latency avg ms", "latency p99 ms", "tokens/request"]]  # fmt: skip
    for r in results:
        level = f"c={r.value:g}" if r.kind == "concurrency" else f"{r.value:g}/s"
        cells = [level + ("" if r.stable else " *"), _number(r.request_throughput),
                 _number(r.output_token_throughput)]  # fmt: skip
        for stats in (r.ttft_ms, r.itl_ms, r.latency_ms):
            cells += [_number(stats.avg), _number(stats.p99)] if stats else ["N/A", "N/A"]
        cells.append(_number(r.output_tokens.avg) if r.output_tokens else "N/A")
        rows.append(cells)
    lines = _table(rows)
    if any(not r.stable for r in results):
        lines.append("* unstable measurement")
    return "\n".join(lines)


def csv_text(results: Sequence[LevelResult]) -> str:
    first = "Concurrency" if all(r.kind == "concurrency" for r in results) else "Request Rate"
    names = [name for name, _ in results[0].figures()] if results else []
    header = [first, "Request Throughput (per sec)", "Output Token Throughput (tokens/sec)",
              "Request Count", *(f"{n} {s}" for n in names for s in STATISTICS)]  # fmt: skip
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for r in results:
        row = [f"{r.value:g}", f"{r.request_throughput:.4f}", f"{r.output_token_throughput:.4f}",
               str(r.requests)]  # fmt: skip
        for _, stats in r.figures():
            row += [f"{stats.get(s):.4f}" if stats else "" for s in STATISTICS]
        writer.writerow(row)
    return out.getvalue()


def _number(value: float) -> str:
    return f"{value:,.2f}"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [row[0].rjust(widths[0])]
        cells += [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        lines.append("  ".join(cells))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines
