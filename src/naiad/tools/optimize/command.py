"""Make a faster copy of a model and prove it answers like the original, and faster.

ONNX models (in a repository, or a file with --onnx) are rewritten by ONNX
Runtime's graph optimiser (--level) and/or quantised to INT8 (--quantize
dynamic, or static with --calibration-data).  The copy is served beside the
original by an in-process naiad server: the report gives both versions'
p50/p99 latency and throughput, measured in --rounds rounds that take turns
request by request, the speed-up with its 95% confidence interval, and how
far the copy's outputs drift (max abs difference per output, top-1
agreement for class scores).  The copy is written only when it drifts no
more than --max-drift AND is faster beyond noise (the interval lies above
1x); otherwise nothing is written and the exit code is 1, unless --force.

A repository model's copy goes to --output-dir (default ./optimized), as a
model of a new repository; --into-repository adds it to --model-repository
as the model's next version instead, which the server then serves.

PyTorch models (--torch model.pt or module.py:factory) are exported to ONNX
with a dynamic batch axis and checked against torch's own outputs.

exit codes: 0 written; 1 refused (drift, or not faster beyond noise); 2 a
usage or model problem; 130 interrupted (Ctrl-C; nothing written).

examples:
  naiad optimize mlp --model-repository models                  # -> optimized/mlp/1/
  naiad optimize mlp --model-repository models --quantize dynamic --max-drift 0.05
  naiad optimize mlp --model-repository models --into-repository  # -> models/mlp/<next>/
  naiad optimize mlp --model-repository models --output-model mlp_opt --level all
  naiad optimize --onnx model.onnx --output model.opt.onnx --shape INPUT0:3,224,224
  naiad optimize --torch net.py:build --shape INPUT0:64 --output net.onnx
  naiad optimize --torch net.pt --shape x:3,32,32 --model-repository models --output-model net
"""

from __future__ import annotations

import argparse
import sys

from naiad.tools.arguments import positive_int

HELP = "make a faster copy of an ONNX model (or export a PyTorch one), checked against the original"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_argument_group("what to optimise")
    what.add_argument("model", nargs="?", metavar="MODEL", help="a model of --model-repository")
    what.add_argument("--model-repository", metavar="R", help="the model repository (local folder)")
    what.add_argument(
        "--version",
        type=int,
        metavar="V",
        help="the model version to start from (default: highest)",
    )
    what.add_argument("--onnx", metavar="FILE", help="an ONNX file instead of a repository model")
    what.add_argument("--torch", metavar="FILE|PY:FACTORY",
                      help="export a TorchScript file, or path.py:callable returning an "
                      "nn.Module, to ONNX")  # fmt: skip

    how = parser.add_argument_group("how")
    how.add_argument("--level", choices=("basic", "extended", "all"),
                     help="ONNX Runtime graph optimisation level (default: extended; "
                     "none with --quantize unless given; 'all' is tuned to this CPU)")  # fmt: skip
    how.add_argument("--quantize", choices=("dynamic", "static"), help="INT8 quantisation")
    how.add_argument("--calibration-data", metavar="FILE",
                     help="inputs for --quantize static: perf_analyzer JSON input data or .npz")  # fmt: skip
    how.add_argument(
        "--opset",
        type=int,
        metavar="N",
        default=17,
        help="ONNX opset of a --torch export (default %(default)s)",
    )
    how.add_argument("--datatype", action="append", default=[], metavar="NAME:TYPE",
                     help="a --torch input's datatype (default FP32)")  # fmt: skip
    how.add_argument("--output-names", metavar="A,B",
                     help="names of a --torch export's outputs (default OUTPUT0, OUTPUT1, ...)")  # fmt: skip

    where = parser.add_argument_group("where the result goes")
    where.add_argument("--output-dir", metavar="DIR", default="optimized",
                       help="a repository model's copy goes to DIR/MODEL/1/, with its config "
                       "(default %(default)s; the source repository is left alone)")  # fmt: skip
    where.add_argument("--into-repository", action="store_true",
                       help="instead, add the copy to --model-repository as the model's next "
                       "version (which a server then serves)")  # fmt: skip
    where.add_argument(
        "--output", metavar="FILE", help="write the ONNX file here (--onnx, --torch)"
    )
    where.add_argument("--output-model", metavar="NAME",
                       help="write a new model NAME (version 1) into --model-repository")  # fmt: skip
    where.add_argument("--output-version", type=int, metavar="N",
                       help="with --into-repository: the new version's number (default: the "
                       "next free one)")  # fmt: skip
    where.add_argument("--max-batch-size", metavar="N", type=int, default=8,
                       help="max_batch_size of the config written for --torch (default %(default)s)")  # fmt: skip
    where.add_argument("--report", metavar="FILE", help="also write the report as JSON")

    check = parser.add_argument_group("checking")
    check.add_argument("--shape", action="append", default=[], metavar="NAME:D1,D2",
                       help="the shape of an input's batch item where the model leaves "
                       "dimensions open (as perf_analyzer's --shape; open dims default to 1)")  # fmt: skip
    check.add_argument("--input-data", metavar="FILE",
                       help="sample inputs: perf_analyzer JSON input data or .npz (default random)")  # fmt: skip
    check.add_argument("--samples", metavar="N", type=positive_int, default=16,
                       help="random sample requests for the drift check (default %(default)s)")  # fmt: skip
    check.add_argument("--batch-size", metavar="N", type=positive_int, default=1,
                       help="batch size of random samples (default %(default)s)")  # fmt: skip
    check.add_argument("--requests", metavar="N", type=positive_int, default=200,
                       help="timed requests per version, over all rounds (default %(default)s)")  # fmt: skip
    check.add_argument("--rounds", metavar="N", type=_rounds, default=5,
                       help="measurement rounds; each gives one paired speed-up, their "
                       "spread the noise (default %(default)s, at least 2)")  # fmt: skip
    check.add_argument(
        "--seed", metavar="N", type=int, default=0, help="seed of the random samples"
    )
    check.add_argument("--max-drift", metavar="X", type=float, default=1e-3,
                       help="largest max-abs output difference accepted (default %(default)s; "
                       "quantisation needs more)")  # fmt: skip
    check.add_argument("--force", action="store_true",
                       help="write the result whatever its drift and speed")  # fmt: skip


def _rounds(text: str) -> int:
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError("at least 2 rounds: one gives no noise estimate")
    return value


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from naiad.tools.optimize.errors import OptimizeError, Refused

    try:
        sources = [bool(args.model), bool(args.onnx), bool(args.torch)]
        if sum(sources) != 1:
            raise OptimizeError(
                "give one of MODEL (with --model-repository), --onnx FILE or --torch FILE"
            )
        if args.report and not Path(args.report).parent.is_dir():
            raise OptimizeError(f"--report {args.report}: folder does not exist")
        if args.requests < args.rounds:
            raise OptimizeError(f"--requests {args.requests} is fewer than --rounds {args.rounds}")
        if args.torch:
            from naiad.tools.optimize import torch_flow as flow
        else:
            from naiad.tools.optimize import onnx_flow as flow  # type: ignore[no-redef]
        report = flow.run(args)
        print("\n".join(report.lines()))
        if report.interrupted:
            return _interrupted()
        refusal = report.refusal()
        if not report.accepted and refusal:
            raise Refused(f"refused: {refusal}; nothing written (pass --force to write it anyway)")
        if args.report:
            report.write_json(Path(args.report))
    except OptimizeError as exc:
        print(f"naiad optimize: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(f"naiad optimize: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted()
    return 0


def _interrupted() -> int:
    """Ctrl-C, during a measurement or a step before it: nothing was written."""
    from naiad.tools.interrupt import INTERRUPTED

    print("naiad optimize: interrupted: nothing written", file=sys.stderr)
    return INTERRUPTED
