"""perf_analyzer's report: the text per step, the closing lines, its CSV columns.

The CSV keeps perf_analyzer's header and column order exactly (and its
``--verbose-csv`` additions), so scripts that plot perf_analyzer's files read
naiad perf's unchanged.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from naiad.tools.perf.measure import StepResult
from naiad.tools.perf.settings import PerfSettings

BASE_COLUMNS = [
    "Client Send", "Network+Server Send/Recv", "Server Queue", "Server Compute Input",
    "Server Compute Infer", "Server Compute Output", "Client Recv", "p50 latency",
    "p90 latency", "p95 latency", "p99 latency",
]  # fmt: skip
VERBOSE_COLUMNS = ["Avg latency", "request/response", "response wait"]
METRICS_COLUMNS = ["Avg GPU Utilization", "Avg GPU Power Usage", "Max GPU Memory Usage",
                   "Total GPU Memory"]  # fmt: skip


def settings_text(settings: PerfSettings, processes: int) -> str:
    stabilising = f"p{settings.percentile} latency" if settings.percentile else "average latency"
    if settings.measurement_mode == "count_windows":
        window = f"  Minimum number of samples in each window: {settings.measurement_request_count}"
    else:
        window = f"  Measurement window: {settings.measurement_interval_ms} msec"
    where = "in-process (embedded)" if settings.protocol == "embedded" else (
        f"{settings.protocol.upper()} {settings.address}")  # fmt: skip
    return "\n".join([
        "*** Measurement Settings ***",
        f"  Batch size: {settings.batch_size}",
        f"  Server: {where}",
        f'  Using "{settings.measurement_mode}" mode for stabilization',
        window,
        f"  Stabilizing using {stabilising}",
        f"  Client processes: {processes}",
        "",
    ])  # fmt: skip


def step_text(result: StepResult, settings: PerfSettings) -> str:
    s = result.server
    queue = s.per_request_us("queue_ns")
    cin, cinf, cout = (s.per_request_us(n) for n in
                       ("compute_input_ns", "compute_infer_ns", "compute_output_ns"))  # fmt: skip
    total = s.per_request_us("success_ns")
    overhead = max(total - queue - cin - cinf - cout, 0.0)
    transfer = result.client_send_us + result.client_recv_us
    protocol = "gRPC" if settings.protocol == "grpc" else "HTTP"
    head = (f"Request concurrency: {result.value:g}" if result.kind == "concurrency"
            else f"Request Rate: {result.value:g} inference requests per seconds")  # fmt: skip
    lines = [
        head,
        "  Client: ",
        f"    Request count: {result.requests}",
        f"    Throughput: {result.throughput:.1f} infer/sec",
        f"    Avg latency: {result.avg_us:.0f} usec (standard deviation {result.std_us:.0f} usec)",
        f"    p50 latency: {result.p50_us:.0f} usec",
        f"    p90 latency: {result.p90_us:.0f} usec",
        f"    p95 latency: {result.p95_us:.0f} usec",
        f"    p99 latency: {result.p99_us:.0f} usec",
    ]
    if settings.protocol != "embedded":
        lines.append(f"    Avg {protocol} time: {result.avg_us:.0f} usec (send/recv {transfer:.0f} "
                     f"usec + response wait {result.avg_us - transfer:.0f} usec)")  # fmt: skip
    lines.append(f"    Client CPU: {result.client_cpu_percent:.0f}% of a core"
                 f" over {result.processes} process(es)")  # fmt: skip
    lines += [
        "  Server: ",
        f"    Inference count: {s.inference_count}",
        f"    Execution count: {s.execution_count}",
        f"    Successful request count: {s.success_count}",
        f"    Avg request latency: {total:.0f} usec (overhead {overhead:.0f} usec + queue "
        f"{queue:.0f} usec + compute input {cin:.0f} usec + compute infer {cinf:.0f} usec + "
        f"compute output {cout:.0f} usec)",
    ]
    if not result.stable:
        lines.append("  Unstable: no 3 windows in a row agreed within "
                     f"{settings.stability_percentage:g}% in {result.windows} windows; these "
                     "are the last three (raise --measurement-interval)")  # fmt: skip
    return "\n".join(lines) + "\n"


def closing_text(results: Sequence[StepResult], settings: PerfSettings) -> str:
    which = f"p{settings.percentile}" if settings.percentile else "Average"
    lines = [f"Inferences/Second vs. Client {which} Batch Latency"]
    for r in results:
        latency = _latency(r, settings)
        name = "Concurrency" if r.kind == "concurrency" else "Request Rate"
        lines.append(f"{name}: {r.value:g}, throughput: {r.throughput:g} infer/sec, "
                     f"latency {latency:.0f} usec")  # fmt: skip
    return "\n".join(lines)


def summary_table(results: Sequence[StepResult]) -> str:
    """A table to read at a glance (not perf_analyzer's; it follows the closing lines)."""
    head = ["level", "infer/s", "p50 us", "p90 us", "p99 us", "avg us", "server queue us",
            "server compute us", "client CPU %"]  # fmt: skip
    rows = [head]
    for r in results:
        s = r.server
        compute = sum(s.per_request_us(n) for n in
                      ("compute_input_ns", "compute_infer_ns", "compute_output_ns"))  # fmt: skip
        level = f"c={r.value:g}" if r.kind == "concurrency" else f"{r.value:g}/s"
        rows.append([level + ("" if r.stable else " *"), f"{r.throughput:.1f}",
                     f"{r.p50_us:.0f}", f"{r.p90_us:.0f}", f"{r.p99_us:.0f}", f"{r.avg_us:.0f}",
                     f"{s.per_request_us('queue_ns'):.0f}", f"{compute:.0f}",
                     f"{r.client_cpu_percent:.0f}"])  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    if any(not r.stable for r in results):
        lines.append("* unstable measurement")
    return "\n".join(lines)


def csv_text(results: Sequence[StepResult], settings: PerfSettings) -> str:
    first = "Concurrency" if all(r.kind == "concurrency" for r in results) else "Request Rate"
    header = [first, "Inferences/Second", *BASE_COLUMNS]
    if settings.verbose_csv:
        header += VERBOSE_COLUMNS
        if settings.collect_metrics:
            header += METRICS_COLUMNS
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for r in results:
        s = r.server
        row = [
            f"{r.value:g}",
            f"{r.throughput:g}",
            round(r.client_send_us),
            round(r.network_us),
            round(s.per_request_us("queue_ns")),
            round(s.per_request_us("compute_input_ns")),
            round(s.per_request_us("compute_infer_ns")),
            round(s.per_request_us("compute_output_ns")),
            round(r.client_recv_us),
            round(r.p50_us),
            round(r.p90_us),
            round(r.p95_us),
            round(r.p99_us),
        ]
        if settings.verbose_csv:
            transfer = r.client_send_us + r.client_recv_us
            row += [round(r.avg_us), round(transfer), round(r.avg_us - transfer)]
            if settings.collect_metrics:
                m = r.metrics
                row += [_cell(m.get("gpu_utilization")), _cell(m.get("gpu_power_usage")),
                        _cell(m.get("gpu_memory_used")), _cell(m.get("gpu_memory_total"))]  # fmt: skip
        writer.writerow(row)
    return out.getvalue()


def _cell(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _latency(result: StepResult, settings: PerfSettings) -> float:
    percentiles = {50: result.p50_us, 90: result.p90_us, 95: result.p95_us, 99: result.p99_us}
    return percentiles.get(settings.percentile, result.avg_us)
