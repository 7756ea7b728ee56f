"""What a shadow costs the client: perf_analyzer over HTTP against two naiad servers,
interleaved, medians of ``--rounds``: ``off`` serves the example ``add_sub`` (ONNX) as two
versions; ``shadow`` serves the same with every request to version 1 also run on
version 2 (``naiad.shadow_version`` 2, ``naiad.shadow_fraction`` 1).  Both are asked for
version 1 only.  The shadow runs after the client has its answer, so the client's
latency should move only by the CPU the shadow takes from the same cores.

    python benchmarks/shadow_bench.py [--rounds 3] [--interval 3000] [--concurrency 1 8]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from common import (
    ROOT,
    free_port,
    median,
    perf,
    perf_analyzer_missing,
    round_order,
    start_naiad,
    stop,
    wait_ready,
)

SHADOW = 'parameters { key: "naiad.shadow_version" value: { string_value: "2" } }\n'


def repository(root: Path, shadow: bool) -> Path:
    repo = root / ("shadow" if shadow else "off")
    model = repo / "add_sub"
    shutil.copytree(ROOT / "examples" / "model_repository" / "add_sub", model)
    shutil.copytree(model / "1", model / "2")
    config = (model / "config.pbtxt").read_text() + "version_policy: { all { } }\n"
    (model / "config.pbtxt").write_text(config + (SHADOW if shadow else ""))
    return repo


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--interval", type=int, default=3000, help="measurement window, ms")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    args = parser.parse_args()
    if perf_analyzer_missing():
        return 2
    names = ("off", "shadow")
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="naiad-bench-") as tmp:
        servers = {}
        try:
            for name in names:
                port = free_port()
                repo = repository(Path(tmp), name == "shadow")
                servers[name] = (start_naiad(repo, port, Path(tmp) / f"{name}.log"), port)
            for proc, port in servers.values():
                wait_ready(port, proc)
            for rnd in range(args.rounds):
                for c in args.concurrency:
                    for name in round_order(names, rnd):
                        url = f"127.0.0.1:{servers[name][1]}"
                        r = perf("add_sub", url, c, args.interval, "-x", "1")
                        results.setdefault((name, c), []).append(r)
                        print(f"round {rnd + 1} {name:6} c={c:<3} {r['throughput']:9.1f} infer/s"
                              f"  p50 {r['p50']:7.0f} us  p99 {r['p99']:7.0f} us", flush=True)  # fmt: skip
        finally:
            stop(proc for proc, _ in servers.values())
    print("\n| c | off infer/s | shadow infer/s | off p50 / p99 us | shadow p50 / p99 us |")
    print("|---|---|---|---|---|")
    for c in args.concurrency:
        off, on = results[("off", c)], results[("shadow", c)]
        print(f"| {c} | {median(off, 'throughput'):.0f} | {median(on, 'throughput'):.0f} | "
              f"{median(off, 'p50'):.0f} / {median(off, 'p99'):.0f} | "
              f"{median(on, 'p50'):.0f} / {median(on, 'p99'):.0f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
