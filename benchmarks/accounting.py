"""Per-request accounting: where naiad and Triton spend, serving the same add_sub model.py.

Not a test (pytest does not collect it).  For each protocol and concurrency it
starts naiad (``naiad serve``: add_sub runs in its process; ``--stubs`` adds naiad
with ``execution-mode=process``, one stub as Triton) and Triton on one repository,
warms them up, and over one perf_analyzer run reads from /proc the CPU time and
the context switches (every thread) of the server process and of its stubs
(naiad's stub processes, Triton's ``triton_python_backend_stub``), divided by
the requests the server's statistics say it answered.  A second, shorter run
under ``strace -c -f`` counts syscalls by kind (strace slows everything, so
only its counts are used).  ``--sched`` adds a third, in which the kernel
scheduler's trace of a second or two (``schedtrace``) shows where a request
waits: each role's run time and sleeps per request, and the CPUs' idle
time::

    python benchmarks/accounting.py --concurrency 1 32 --protocols http grpc
    python benchmarks/accounting.py --stubs --sched --concurrency 1 --protocols http
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import (
    ROOT,
    free_port,
    inference_count,
    perf,
    perf_analyzer_missing,
    start_naiad,
    start_triton,
    stop,
    wait_ready,
)
from procstat import Strace, Usage, children, usage
from schedtrace import ROLES as TRACED
from schedtrace import Runs, available, recording, runs

MODEL = ROOT / "examples/model_repository/add_sub_python"
NAME = MODEL.name
SERVERS = ("naiad", "triton")
#: ``--stubs``: naiad with execution-mode=process (add_sub's default runs it in the server).
STUBS = "naiad-stubs"
ROLES = ("server", "stub")
#: Seconds of scheduler trace (``--sched``) in which requests are counted: some
#: thousands of requests, a few MB.
SCHED_SECONDS = 1.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--interval", type=int, default=2000, help="perf_analyzer -p (ms)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--protocols", nargs="+", default=["http", "grpc"])
    parser.add_argument("--top", type=int, default=6, help="syscall kinds shown per process")
    parser.add_argument(
        "--stubs", action="store_true", help="also naiad with execution-mode=process"
    )
    parser.add_argument(
        "--sched", action="store_true", help="also where requests wait (perf sched)"
    )
    args = parser.parse_args()
    if perf_analyzer_missing():
        return 2
    if args.sched and (why := available()) is not None:
        print(f"--sched: {why}")
        return 2
    rows, calls, waits = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "repo").mkdir()
        (root / "repo" / NAME).symlink_to(MODEL)
        for protocol in args.protocols:
            for c in args.concurrency:
                for server in [*SERVERS, STUBS] if args.stubs else SERVERS:
                    usage_of, syscalls, threads, waited = account(server, protocol, c, root, args)
                    rows.append((protocol, c, server, usage_of, threads))
                    calls.append((protocol, c, server, syscalls))
                    if waited is not None:
                        waits.append((protocol, c, server, waited))
    print(table(rows))
    print(syscall_lines(calls, args.top))
    if waits:
        print(wait_table(waits))
    return 0


def account(
    server: str, protocol: str, c: int, root: Path, args: argparse.Namespace
) -> tuple[dict[str, Usage], dict[str, dict[str, float]], dict[str, list[int]], Runs | None]:
    """Per-request usage of the server and its stubs, syscalls per request by kind, and
    (``--sched``) the scheduler's run time and sleeps per request."""
    port = free_port()
    log = root / f"{server}-{protocol}-{c}.log"
    if server == "triton":
        proc = start_triton(root / "repo", port, log, protocol)
    elif server == STUBS:
        settings = {"backend_config": "python,execution-mode=process"}
        proc = start_naiad(root / "repo", port, log, protocol, **settings)
    else:
        proc = start_naiad(root / "repo", port, log, protocol)
    extra = ["-i", "grpc"] if protocol == "grpc" else []
    url = f"127.0.0.1:{port}"
    try:
        wait_ready(port, proc, protocol=protocol)
        perf(NAME, url, c, 500, *extra)  # warm-up: caches, lazy imports, thread pools
        pids = {"server": [proc.pid], "stub": children(proc.pid)}
        before = {role: usage(p) for role, p in pids.items()}
        count = inference_count(port, protocol, NAME)
        perf(NAME, url, c, args.interval, *extra)
        requests = inference_count(port, protocol, NAME) - count
        after = {role: usage(p) for role, p in pids.items()}
        per_request = {role: per(after[role] - before[role], requests) for role in ROLES}
        threads = {role: after[role].threads for role in ROLES}
        syscalls: dict[str, dict[str, float]] = {}
        for role in ROLES:
            if not pids[role]:  # a model in naiad's own process has no stub
                syscalls[role] = {}
                continue
            with Strace(pids[role], root / f"strace-{role}.txt") as traced:
                count = inference_count(port, protocol, NAME)
                perf(NAME, url, c, max(500, args.interval // 2), *extra)
                requests = inference_count(port, protocol, NAME) - count
            syscalls[role] = {k: v / requests for k, v in traced.calls.items()}
        waited = None
        if args.sched:
            out = root / f"sched-{server}-{protocol}-{c}.data"
            rate = sched(url, c, extra, lambda: inference_count(port, protocol, NAME), out)
            sched_runs = runs(out, proc.pid, pids["stub"])
            # At c=1 the client sleeps once a request, which checks this count.
            waited = sched_runs.per(rate * sched_runs.span_us / 1_000_000)
        return per_request, syscalls, threads, waited
    finally:
        stop([proc])


def sched(url: str, c: int, extra: list[str], answered: Callable[[], int], out: Path) -> float:
    """Trace the scheduler into ``out`` in the middle of a perf_analyzer run; the rate of
    requests answered (per second) in the :data:`SCHED_SECONDS` it counts them."""
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(perf, NAME, url, c, 3000, *extra)
        time.sleep(2)  # past perf_analyzer's start
        with recording(out):
            time.sleep(0.5)  # perf's own start
            before, start = answered(), time.monotonic()
            time.sleep(SCHED_SECONDS)
            count, elapsed = answered() - before, time.monotonic() - start
        running.result()
    return count / elapsed


def per(spent: Usage, requests: int) -> Usage:
    return Usage(
        spent.cpu_us / requests,
        spent.voluntary / requests,
        spent.involuntary / requests,  # type: ignore[arg-type]
    )


def table(rows: list) -> str:
    out = [
        "| proto | c | server | server CPU us/req | stub CPU us/req | server cs/req"
        " (vol+invol) | stub cs/req (vol+invol) | threads server / stubs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for protocol, c, server, u, threads in rows:
        s, t = u["server"], u["stub"]
        out.append(
            f"| {protocol} | {c} | {server} | {s.cpu_us:.0f} | {t.cpu_us:.0f} "
            f"| {s.voluntary:.2f}+{s.involuntary:.2f} | {t.voluntary:.2f}+{t.involuntary:.2f} "
            f"| {threads['server'][0]} / {','.join(map(str, threads['stub'])) or '-'} |"
        )
    return "\n".join(out)


def wait_table(rows: list) -> str:
    out = [
        "",
        f"where a request waits (perf sched, {SCHED_SECONDS} s counted, per request: run µs"
        " on a CPU, idle µs of every CPU, sleeps):",
        "",
        "| proto | c | server | cycle | "
        + " | ".join(f"{r} run" for r in TRACED)
        + " | idle | server sleeps | stub sleeps | client sleeps |",
        "|---|---|---|---|" + "---|" * len(TRACED) + "---|---|---|---|",
    ]
    for protocol, c, server, w in rows:
        ran = " | ".join(f"{w.run_us[r]:.0f}" for r in TRACED)
        sleeps = " | ".join(f"{w.sleeps[r]:.2f}" for r in ("server", "stub", "client"))
        out.append(
            f"| {protocol} | {c} | {server} | {w.span_us:.0f} | {ran} "
            f"| {w.idle_us:.0f} | {sleeps} |"
        )
    return "\n".join(out)


def syscall_lines(calls: list, top: int) -> str:
    out = ["", "syscalls per request (strace -c -f, counts only), most frequent first:"]
    for protocol, c, server, by_role in calls:
        for role in ROLES:
            kinds = sorted(by_role[role].items(), key=lambda kv: -kv[1])
            if not by_role[role]:
                continue
            total = sum(by_role[role].values())
            shown = ", ".join(f"{name} {n:.2f}" for name, n in kinds[:top])
            out.append(f"- {protocol} c={c} {server} {role}: {total:.1f}/req ({shown})")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
