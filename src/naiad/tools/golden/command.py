"""Run the golden cases kept beside each model of a repository, as CI would.

Each <model>/tests/<case>.json holds requests in perf_analyzer's input-data
format ("data") and the outputs they must get ("validation_data", compared
with the case's atol/rtol; integers and strings exactly), or the error they
must get ("error": {"status": "INVALID_ARG", "message": "..."}).  A
decoupled model's expected item lists its responses; perf_analyzer's streams
of requests go to sequence models as sequences.  The repository is served in
this process with no network; --protocol http, grpc or all also sends every
case through the HTTP and gRPC frontends on free loopback ports with
tritonclient.  docs/testing.md describes the format.

Prints one line per case (PASS, or FAIL with what differs and where) and a
summary.  Exit status: 0 every case passed, 1 a case failed or a model failed
to load, 2 a usage error (no such repository or model, no cases, a missing
extra, a server that cannot start).

examples:
  naiad test models                                  # every case of every model
  naiad test models --model add_sub --protocol all   # in-process, HTTP and gRPC
  naiad test models --junit-xml naiad-test.xml       # also a report for CI
  naiad test models --record                         # write the outputs of cases without any
"""

from __future__ import annotations

import argparse

HELP = "run the golden requests kept in <model>/tests/*.json and check the answers"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("repository", metavar="REPO", help="the model repository (local folder)")
    parser.add_argument("--model", "-m", action="append", metavar="M",
                        help="only this model's cases (repeatable; default: every model)")  # fmt: skip
    parser.add_argument("--protocol", "-i", default="embedded",
                        choices=("embedded", "http", "grpc", "all"),
                        help="how the requests travel: in-process (default), over HTTP or "
                        "gRPC with tritonclient (pip install 'naiad[client]'), or all three")  # fmt: skip
    parser.add_argument("--junit-xml", metavar="FILE", help="also write a JUnit XML report")
    parser.add_argument("--record", action="store_true",
                        help="write the answers as validation_data into cases that have "
                        "inputs only (others are checked as usual)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=120.0, metavar="S",
                        help="seconds a request may take before its case fails (default 120)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from naiad.tools.golden.suite import UsageError, run_suite

    try:
        return run_suite(args)
    except UsageError as exc:
        print(f"naiad test: error: {exc}")
        return 2
