"""Search a model's configurations for the highest throughput within a latency budget.

As Triton's Model Analyzer does: each configuration (instance count,
max_batch_size, dynamic batching and its queue delay, ONNX Runtime's
intra_op/inter_op thread counts) is loaded into a naiad server with the
load API's config override and measured by naiad perf's engine over a
concurrency sweep, with the server's CPU time and memory.  The best is the
configuration with the highest throughput whose p99 latency stays within
--latency-budget-ms (and throughput above --min-throughput), at any
concurrency of the sweep.  Each configuration is swept --repeats times: a
configuration whose throughput is within the noise (95% confidence
intervals) of the highest is as good, and the simplest of those wins
(fewer instances, no or smaller batching, shorter delay, default threads).

--search brute measures the whole grid; quick (the default) climbs from the
model's own configuration one knob at a time and takes at most a third of
the grid's trials.  By default naiad analyze starts its own naiad server
(explicit model control, the model alone); --url uses one already running
in explicit mode.

Writes to -o DIR: results.csv (a row per configuration and concurrency),
report.html (charts inline: opens offline) and best_repository/MODEL/, the
chosen config.pbtxt beside links to the model's files, ready for
naiad serve.  Ctrl-C stops the search and still writes what finished.

exit codes: 0 a configuration was chosen; 1 none met the constraints (the
CSV and report are written); 2 a usage or server problem; 130 interrupted.

examples:
  naiad analyze -m image_classifier --model-repository models --latency-budget-ms 10 -o reports
  naiad analyze -m mlp --model-repository models --search brute --concurrency 1,4,16
  naiad analyze -m mlp --model-repository models --instances 1,2 --max-batch-sizes 8,32 \\
      --delays-us 0,500 --intra-op-threads 1 --measurement-interval 500
  naiad analyze -m mlp --url 127.0.0.1:8000 --server-pid 4242 -o reports
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from naiad.tools.analyze.options import Options

HELP = "search a model's configurations for the best throughput within a latency budget"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from naiad.tools.analyze.options import Options
    from naiad.tools.flags import add_flags

    add_flags(parser, Options)


def options_from_args(args: argparse.Namespace) -> Options:
    from naiad.tools.analyze.options import Options
    from naiad.tools.flags import settings_from

    return Options(**settings_from(args, Options))


def run(args: argparse.Namespace) -> int:

    from naiad.tools.analyze.analysis import run as analyze
    from naiad.tools.analyze.errors import AnalyzeError
    from naiad.tools.interrupt import INTERRUPTED
    from naiad.tools.perf.settings import PerfError

    try:
        return analyze(options_from_args(args), lambda line: print(line, flush=True))
    except (AnalyzeError, PerfError) as exc:
        print(f"naiad analyze: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    except OSError as exc:
        print(f"naiad analyze: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("naiad analyze: interrupted before any trial finished", file=sys.stderr)
        return INTERRUPTED
