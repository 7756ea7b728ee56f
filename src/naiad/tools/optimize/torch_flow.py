"""``naiad optimize --torch``: export, verify, then write the file and maybe a model.

As with ONNX optimisation, nothing is written before the check has passed.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from naiad.core import datatypes
from naiad.tools.console import progress
from naiad.tools.optimize import torch_export, write
from naiad.tools.optimize.errors import OptimizeError
from naiad.tools.optimize.generated_config import config_for
from naiad.tools.optimize.inputs import InputSpec, check_names, parse_datatypes, parse_shapes
from naiad.tools.optimize.report import Report


def run(args: argparse.Namespace) -> Report:
    if args.quantize or args.level or args.model or args.onnx:
        raise OptimizeError("--torch exports only; run naiad optimize on the exported file next")
    shapes = parse_shapes(args.shape)
    if not shapes:
        raise OptimizeError(
            "--torch needs --shape NAME:d1,d2 for each input, in forward()'s order "
            "(the shape of one batch item, without the batch dimension)"
        )
    types = parse_datatypes(args.datatype)
    specs = [
        InputSpec(name, types.get(name, datatypes.FP32), dims, True)
        for name, dims in shapes.items()
    ]
    check_names("--datatype", types, specs)
    if any(s.datatype.is_bytes for s in specs):
        raise OptimizeError("--torch: torch models take no BYTES inputs")
    repository = Path(args.model_repository) if args.model_repository else None
    if args.output_model:
        if repository is None or not repository.is_dir():
            raise OptimizeError("--output-model needs an existing --model-repository")
        write.check_new_model(repository, args.output_model)
    elif not args.output:
        raise OptimizeError(
            "--torch needs --output FILE.onnx (or --model-repository R --output-model NAME)"
        )
    if args.output and not Path(args.output).parent.is_dir():
        raise OptimizeError(
            f"--output {args.output}: folder {Path(args.output).parent} does not exist"
        )
    output_names = [n for n in (args.output_names or "").split(",") if n]
    opset = args.opset
    module = torch_export.load_module(args.torch)
    report = Report(args.torch, args.torch, [f"ONNX export (opset {opset})"], args.max_drift)
    with tempfile.TemporaryDirectory(prefix="naiad-export-") as scratch:
        exported = Path(scratch) / "model.onnx"
        progress("naiad optimize", f"ONNX export (opset {opset}): started")
        names = torch_export.export(
            module, specs, shapes, exported, opset=opset, output_names=output_names
        )
        progress("naiad optimize", "ONNX export: done; checking it against torch")
        report.drift = torch_export.verify(
            module, exported, specs, shapes, names, samples=args.samples, batch_size=args.batch_size
        )
        report.size_after = exported.stat().st_size
        report.accepted = report.drift.worst <= args.max_drift or args.force
        if not report.accepted:
            return report
        if args.output:
            shutil.copyfile(exported, args.output)
            report.written.append(args.output)
        if args.output_model:
            assert repository is not None
            config = config_for(exported, args.output_model, args.max_batch_size)
            target = write.write_model(
                repository, args.output_model, exported, "model.onnx", config
            )
            report.written += [str(target), str(target.parent.parent / "config.pbtxt")]
    return report
