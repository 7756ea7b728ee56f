"""The headline benchmark: the same model.py files on naiad and on Triton, quiet and contended.

Not a test (pytest does not collect it).  Needs the reference tools
(``scripts/setup-reference.sh``).  Both servers run with default settings
(``naiad serve``: ``execution-mode=auto``, which runs these three models in
the server's process; Triton: one stub process per instance) on one
repository of three Python models served unmodified: add_sub
(``examples/``), identity and a dynamically batched matmul
(``benchmarks/models/``).  Each round starts each server once per protocol
and condition, naiad and Triton in alternating order, and perf_analyzer
measures every (model, concurrency) cell::

    python benchmarks/headline.py --mode quiet --rounds 2 --interval 2000
    python benchmarks/headline.py --mode contended --busy 2   # + the same cells quiet
    python benchmarks/headline.py --mode quota --cpus 1.0     # + the same cells without it

``contended`` runs N busy-looping processes while a cell is measured (other
tenants on the node); ``quota`` starts the server's process tree in a cgroup
with a CFS quota (a Kubernetes CPU limit).  Both modes measure the quiet cells
in the same rounds, so "kept" (contended / quiet throughput) compares like
with like.  Read ratios against the noise column (max/min over rounds).
``--stubs`` also measures naiad with ``execution-mode=process`` (one stub per
instance, naiad's default before ``auto``) in the same rounds: the before and
after of that change from one run.  ``--pure`` likewise measures naiad with
``NAIAD_PURE_PYTHON=1``: its request path run from source, not compiled
(``naiad._compiled``).  ``--before SRC`` measures the naiad of another
checkout's ``src`` too (a ``git worktree`` of the commit before a change,
its extensions built by ``python setup.py build_ext --inplace`` there), and
with ``--stubs`` that naiad with ``execution-mode=process`` as well.
``--workers N`` measures naiad with ``--workers N`` as well: N processes on
the same ports, each with a share of the cores when they are contended.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from common import (
    ROOT,
    free_port,
    perf,
    perf_analyzer_missing,
    round_order,
    start_naiad,
    start_triton,
    stop,
    wait_ready,
)
from contention import BusyLoad, CpuQuota, QuotaUnavailable

MODELS = {
    "add_sub": (ROOT / "examples/model_repository/add_sub_python", []),
    "identity": (ROOT / "benchmarks/models/identity_python", []),
    "matmul": (ROOT / "benchmarks/models/matmul_python", []),
}
SERVERS = ("naiad", "triton")
#: ``--stubs``: naiad with every Python model in stub processes, as before ``auto``.
STUBS = "naiad-stubs"
#: ``--pure``: naiad with its request path run from source, as before it was compiled.
PURE = "naiad-pure"
#: ``--before SRC``: the naiad of another checkout.
BEFORE = "naiad-before"
#: ``--before SRC --stubs``: that naiad with every Python model in stub processes.
BEFORE_STUBS = "naiad-before-stubs"
#: ``--workers N``: naiad with N worker processes.
WORKERS = "naiad-x"

#: (condition, server, model, protocol, c) -> one perf_analyzer result per round
Results = dict[tuple[str, str, str, str, int], list[dict[str, float]]]


def repository(root: Path, models: list[str]) -> Path:
    repo = root / "repo"
    for name in models:
        shutil.copytree(MODELS[name][0], repo / MODELS[name][0].name)
    return repo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=["quiet", "contended", "quota"], default="quiet")
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--cpus", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--interval", type=int, default=2000, help="perf_analyzer -p (ms)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--protocols", nargs="+", default=["http", "grpc"])
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--json", type=Path, help="also write every run here")
    parser.add_argument(
        "--stubs", action="store_true", help="also naiad with execution-mode=process"
    )
    parser.add_argument("--pure", action="store_true", help="also naiad with NAIAD_PURE_PYTHON=1")
    parser.add_argument("--before", type=Path, help="also the naiad of this src folder")
    parser.add_argument("--workers", type=int, help="also naiad with --workers N")
    args = parser.parse_args()
    if perf_analyzer_missing():
        return 2
    conditions = ["quiet"] if args.mode == "quiet" else ["quiet", args.mode]
    args.servers = [*SERVERS, *[STUBS] * args.stubs, *[PURE] * args.pure]
    args.servers += [BEFORE] if args.before else []
    args.servers += [BEFORE_STUBS] if args.before and args.stubs else []
    args.servers += [f"{WORKERS}{args.workers}"] if args.workers else []
    results: Results = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            repo = repository(root, args.models)
            for rnd in range(args.rounds):
                for protocol in args.protocols:
                    for server in round_order(args.servers, rnd):
                        for condition in round_order(conditions, rnd):
                            measure(server, condition, protocol, repo, root, args, results)
                print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    except QuotaUnavailable as exc:
        print(f"--mode quota is not possible on this machine: {exc}")
        return 2
    if args.json:
        rows = [[*key, runs] for key, runs in results.items()]
        args.json.write_text(json.dumps(rows, indent=1))
    print(report(results, conditions, args))
    return 0


def measure(
    server: str,
    condition: str,
    protocol: str,
    repo: Path,
    root: Path,
    args: argparse.Namespace,
    results: Results,
) -> None:
    """Start ``server`` for ``protocol`` under ``condition``; measure every model and c."""
    with contextlib.ExitStack() as stack:
        prefix: list[str] = []
        if condition == "quota":
            prefix = stack.enter_context(CpuQuota(args.cpus)).prefix()
        port = free_port()
        log = root / f"{server}-{protocol}-{condition}.log"
        if server == "triton":
            proc = start_triton(repo, port, log, protocol, prefix)
        elif server == STUBS:
            proc = start_naiad(
                repo, port, log, protocol, prefix, backend_config="python,execution-mode=process"
            )
        elif server == PURE:
            proc = start_naiad(
                repo, port, log, protocol, prefix, environment={"NAIAD_PURE_PYTHON": "1"}
            )
        elif server in (BEFORE, BEFORE_STUBS):
            where = {"PYTHONPATH": str(args.before.resolve())}
            stubs = {"backend_config": "python,execution-mode=process"}
            proc = start_naiad(
                repo, port, log, protocol, prefix, environment=where,
                **(stubs if server == BEFORE_STUBS else {}),
            )  # fmt: skip
        elif server.startswith(WORKERS):
            proc = start_naiad(repo, port, log, protocol, prefix, workers=args.workers)
        else:
            proc = start_naiad(repo, port, log, protocol, prefix)
        try:
            wait_ready(port, proc, protocol=protocol)
            extra = ["-i", "grpc"] if protocol == "grpc" else []
            for model in args.models:
                name, shape = MODELS[model][0].name, MODELS[model][1]
                for c in args.concurrency:
                    with busy(args.busy if condition == "contended" else 0):
                        run = perf(name, f"127.0.0.1:{port}", c, args.interval, *extra, *shape)
                    results.setdefault((condition, server, model, protocol, c), []).append(run)
        finally:
            stop([proc])


@contextlib.contextmanager
def busy(count: int) -> Iterator[None]:
    if count == 0:
        yield
        return
    with BusyLoad(count):
        yield


def report(results: Results, conditions: list[str], args: argparse.Namespace) -> str:
    out: list[str] = []
    cells = [(m, p, c) for m in args.models for p in args.protocols for c in args.concurrency]
    extras = [s for s in args.servers if s not in SERVERS]  # --stubs, --pure, --before, --workers
    for condition in conditions:
        out += [
            f"\n{condition}" + (f" ({describe(condition, args)})" if condition != "quiet" else ""),
            "",
            "| model | proto | c | naiad infer/s | Triton infer/s | naiad/Triton throughput"
            " | naiad/Triton p99 | noise naiad / Triton |"
            + "".join(f" {s}/Triton throughput | {s}/Triton p99 | noise {s} |" for s in extras),
            "|---|---|---|---|---|---|---|---|" + "---|---|---|" * len(extras),
        ]
        for model, protocol, c in cells:
            naiad = results[(condition, "naiad", model, protocol, c)]
            triton = results[(condition, "triton", model, protocol, c)]
            row = (
                f"| {model} | {protocol} | {c} | {med(naiad):.0f} | {med(triton):.0f} "
                f"| {med(naiad) / med(triton):.2f}x "
                f"| {med(naiad, 'p99') / med(triton, 'p99'):.2f}x "
                f"| {spread(naiad):.2f} / {spread(triton):.2f} |"
            )
            for extra in extras:
                old = results[(condition, extra, model, protocol, c)]
                row += (
                    f" {med(old) / med(triton):.2f}x | {med(old, 'p99') / med(triton, 'p99'):.2f}x"
                    f" | {spread(old):.2f} |"
                )
            out.append(row)
    if len(conditions) > 1:
        condition = conditions[1]
        out += [
            f"\nthroughput kept under {condition} ({condition} / quiet)",
            "",
            "| model | proto | c | " + " | ".join(f"{s} kept" for s in args.servers) + " |",
            "|---|---|---|" + "---|" * len(args.servers),
        ]
        for model, protocol, c in cells:
            kept = [
                med(results[(condition, s, model, protocol, c)])
                / med(results[("quiet", s, model, protocol, c)])
                for s in args.servers
            ]
            out.append(
                f"| {model} | {protocol} | {c} | " + " | ".join(f"{k:.2f}" for k in kept) + " |"
            )
    return "\n".join(out)


def describe(condition: str, args: argparse.Namespace) -> str:
    if condition == "contended":
        return f"{args.busy} busy-looping processes on {os.cpu_count()} cores"
    return f"server process tree in a cgroup with a {args.cpus:g}-CPU CFS quota"


def med(runs: list[dict[str, float]], key: str = "throughput") -> float:
    return statistics.median(r[key] for r in runs)


def spread(runs: list[dict[str, float]]) -> float:
    """The noise: the best round's throughput over the worst's."""
    values = [r["throughput"] for r in runs]
    return max(values) / min(values)


if __name__ == "__main__":
    sys.exit(main())
