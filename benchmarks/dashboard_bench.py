"""What an open dashboard costs the inference path: perf_analyzer over HTTP against
three naiad servers, interleaved, medians of ``--rounds``:

- ``off``: ``--allow-dashboard false``;
- ``poll``: the dashboard on, its live view asked once a second by a thread here,
  as the Server page asks it (the server's side of an open tab, alone);
- ``tab``: the dashboard on and one real headless Chromium tab showing its
  Server page (live charts polling every second).

The spread of each server's own rounds is printed beside the medians: that is
the noise the ratios are to be read against.  The tab's rendering shares the
machine's cores with the server and perf_analyzer; ``poll`` tells its cost
apart from the server's.

    python benchmarks/dashboard_bench.py [--rounds 5] [--interval 3000] [--concurrency 1 8 32]
"""

from __future__ import annotations

import argparse
import http.client
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from common import (
    ROOT,
    free_port,
    median,
    perf_analyzer_missing,
    round_order,
    start_naiad,
    stop,
    wait_ready,
)
from common import perf as perf_analyzer
from http_bench import build_repositories

sys.path.insert(0, str(ROOT / "tests"))

from support.browser import chromium  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--interval", type=int, default=3000, help="measurement window, ms")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    args = parser.parse_args()
    if perf_analyzer_missing():
        return 2
    names = ("off", "poll", "tab")
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="naiad-bench-") as tmp:
        repo, _ = build_repositories(Path(tmp))
        servers: dict[str, tuple[subprocess.Popen, int]] = {}
        done = threading.Event()
        poller: threading.Thread | None = None
        try:
            for name in names:
                port = free_port()
                log = Path(tmp) / f"{name}.log"
                dashboard = "false" if name == "off" else "true"
                servers[name] = (start_naiad(repo, port, log, allow_dashboard=dashboard), port)
            for proc, port in servers.values():
                wait_ready(port, proc)
            poller = threading.Thread(target=poll_live, args=(servers["poll"][1], done))
            poller.start()
            with chromium() as browser:
                browser.get(f"http://127.0.0.1:{servers['tab'][1]}/dashboard/#/")
                wait_for_live_chart(browser)
                for rnd in range(args.rounds):
                    for c in args.concurrency:
                        for name in round_order(names, rnd):
                            r = perf_analyzer(
                                "identity_fp32", f"127.0.0.1:{servers[name][1]}", c, args.interval
                            )
                            results.setdefault((name, c), []).append(r)
                            print(f"round {rnd + 1} dashboard {name:3} c={c:<3} "
                                  f"{r['throughput']:9.1f} infer/s  p50 {r['p50']:7.0f} us  "
                                  f"p99 {r['p99']:7.0f} us", flush=True)  # fmt: skip
                # the tab was polling all along: its chart is full (it keeps two minutes)
                chart = browser.find_element("id", "chart-throughput")
                print(
                    f"\nthe tab's throughput chart held {chart.get_attribute('data-points')} points"
                )
        finally:
            done.set()
            if poller is not None:
                poller.join()
            stop(proc for proc, _ in servers.values())
    report(results, args)
    return 0


def poll_live(port: int, done: threading.Event) -> None:
    """The Server page's requests: the live view, once a second, on one connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        while not done.wait(1.0):
            conn.request("GET", "/dashboard/api/live")
            reply = conn.getresponse()
            assert reply.status == 200, reply.read()
            reply.read()
    finally:
        conn.close()


def wait_for_live_chart(browser: object) -> None:
    """Until the Server page shows a live throughput (two polls: the tab is really polling)."""
    from selenium.webdriver.support.ui import WebDriverWait

    def shown(driver: object) -> bool:
        text = driver.find_element("id", "throughput-now").text  # type: ignore[attr-defined]
        return any(ch.isdigit() for ch in text)

    WebDriverWait(browser, 30).until(shown)


def report(
    results: dict[tuple[str, int], list[dict[str, float]]], args: argparse.Namespace
) -> None:
    print(
        f"\nMedians of {args.rounds} rounds; spread = (max - min) / median of that server's rounds."
    )
    print()
    print("| c | off infer/s (spread) | poll infer/s (spread) | tab infer/s (spread) "
          "| poll / off | tab / off | p99 us off / poll / tab |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for c in args.concurrency:
        runs = {name: results[(name, c)] for name in ("off", "poll", "tab")}
        cells = [f"{median(r, 'throughput'):.0f} ({spread(r):.1%})" for r in runs.values()]
        base = median(runs["off"], "throughput")
        ratios = [f"{median(runs[n], 'throughput') / base:.3f}" for n in ("poll", "tab")]
        p99 = " / ".join(f"{median(r, 'p99'):.0f}" for r in runs.values())
        print(f"| {c} | {' | '.join(cells)} | {' | '.join(ratios)} | {p99} |")


def spread(runs: list[dict[str, float]]) -> float:
    values = [r["throughput"] for r in runs]
    return (max(values) - min(values)) / median(runs, "throughput")


if __name__ == "__main__":
    sys.exit(main())
