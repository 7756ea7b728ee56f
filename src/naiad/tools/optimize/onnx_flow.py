"""Optimise an ONNX model: rewrite it, compare it with the original, write it if
it answers alike and is faster.

Nothing reaches the user's repository, ``--output-dir`` or ``--output`` before
the comparison has passed; the rewritten file waits in a scratch folder until
then.  A repository model's copy goes to a folder of its own unless the user
asks for the repository: a documented command must never change what a
server serves from an example repository.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from naiad.tools.console import progress
from naiad.tools.optimize import write
from naiad.tools.optimize.errors import OptimizeError
from naiad.tools.optimize.graph import first_line, optimize_graph
from naiad.tools.optimize.inputs import (
    InputSpec,
    Sample,
    check_names,
    load_samples,
    parse_shapes,
    random_samples,
)
from naiad.tools.optimize.measure import compare
from naiad.tools.optimize.quantize import quantize
from naiad.tools.optimize.report import Report
from naiad.tools.optimize.source import RepositoryModel, check_onnx_file, find_model
from naiad.tools.optimize.staging import stage, stage_repository_model

DEFAULT_LEVEL = "extended"


def say(text: str) -> None:
    progress("naiad optimize", text)


def run(args: argparse.Namespace) -> Report:
    """The whole ``naiad optimize MODEL`` / ``--onnx FILE`` run; raises on refusal."""
    shapes = parse_shapes(args.shape)
    model: RepositoryModel | None = None
    repository = Path(args.model_repository) if args.model_repository else None
    if args.model:
        if repository is None:
            raise OptimizeError("MODEL needs --model-repository (or give --onnx FILE)")
        if args.output:
            raise OptimizeError("--output is for --onnx and --torch; a model's copy goes to "
                                "--output-dir")  # fmt: skip
        model = find_model(repository, args.model, args.version)
        source = model.file
        name = model.name
    else:
        source = Path(args.onnx)
        check_onnx_file(source)
        name = "model"
    targets = _check_targets(args, model, repository, source)
    plan = _plan(args.level, args.quantize)
    steps = [f"{q} INT8 quantisation" if q else f"graph optimisation ({lv})" for lv, q in plan]
    if args.calibration_data and args.quantize != "static":
        raise OptimizeError("--calibration-data is for --quantize static")
    if args.quantize == "static" and not args.calibration_data:
        raise OptimizeError("--quantize static needs --calibration-data FILE")
    where = f"{name} version {model.version}" if model else str(source)
    report = Report(where, str(source), steps, args.max_drift, size_before=source.stat().st_size)

    with tempfile.TemporaryDirectory(prefix="naiad-optimize-") as scratch:
        work = Path(scratch)
        candidate = source
        for i, (level, quantization) in enumerate(plan):
            step = work / f"step{i}.onnx"
            say(f"{steps[i]}: started")
            if quantization:
                calibration = None
                if args.calibration_data:
                    specs = _onnx_specs(candidate, model)
                    check_names("--shape", shapes, specs)
                    calibration = load_samples(Path(args.calibration_data), specs, shapes)
                quantize(candidate, step, quantization, calibration)
            else:
                optimize_graph(candidate, step, level)
            say(f"{steps[i]}: done")
            candidate = step
        report.size_after = candidate.stat().st_size

        def samples(specs: list[InputSpec]) -> list[Sample]:
            check_names("--shape", shapes, specs)
            if args.input_data:
                return load_samples(Path(args.input_data), specs, shapes)
            return random_samples(
                specs, shapes, count=args.samples, batch_size=args.batch_size, seed=args.seed
            )

        if model is not None:
            staged = stage_repository_model(work / "repository", model, candidate)
        else:
            staged = stage(work / "repository", name, None, None, source, candidate, "model.onnx")
        report.comparison = compare(
            staged, name, samples, requests=args.requests, rounds=args.rounds, say=say
        )
        if report.interrupted:
            return report
        report.accepted = args.force or not report.refusal()
        if report.accepted:
            report.written = [str(_write(args, model, repository, candidate, t)) for t in targets]
    return report


def _plan(level: str | None, quantization: str | None) -> list[tuple[str, str | None]]:
    """The steps, in order: (level, None) rewrites the graph, ("", mode) quantises.

    The quantiser knows only standard ONNX operators, not the fused ones that the
    extended and all levels introduce, so with both flags the graph is first
    rewritten at the basic level (ONNX Runtime's recommended pre-processing),
    quantised, and only then rewritten at the level asked for.
    """
    if not quantization:
        return [(level or DEFAULT_LEVEL, None)]
    if not level:
        return [("", quantization)]
    after = [] if level == "basic" else [(level, None)]
    return [("basic", None), ("", quantization), *after]


def _check_targets(
    args: argparse.Namespace, model: RepositoryModel | None, repository: Path | None, source: Path
) -> list[str]:
    """Where the result goes, checked before any work so a typo costs nothing."""
    targets: list[str] = []
    if args.output_model:
        if repository is None:
            raise OptimizeError("--output-model needs --model-repository")
        if not repository.is_dir():
            raise OptimizeError(f"model repository {repository} does not exist")
        write.check_new_model(repository, args.output_model)
        targets.append("model")
    if args.output:
        output = Path(args.output)
        if output.resolve() == source.resolve():
            raise OptimizeError(f"--output {output} is the input model; name another file")
        if not output.parent.is_dir():
            raise OptimizeError(f"--output {output}: folder {output.parent} does not exist")
        targets.append("file")
    if args.output_version is not None and not args.into_repository:
        raise OptimizeError("--output-version is for --into-repository")
    if args.into_repository:
        if model is None:
            raise OptimizeError("--into-repository is for MODEL of --model-repository")
        if args.output_model:
            raise OptimizeError("give --into-repository or --output-model, not both")
        write.check_new_version(model, args.output_version or write.next_version(model))
        targets.append("version")
    elif model is not None and not args.output_model:
        folder = Path(args.output_dir) / model.name
        if folder.parent.exists() and not folder.parent.is_dir():
            raise OptimizeError(f"--output-dir {folder.parent} is not a folder")
        if folder.exists():
            raise OptimizeError(f"{folder} already exists: remove it, or give another --output-dir")
        targets.append("folder")
    if not targets:
        raise OptimizeError(
            "--onnx needs --output FILE (or --model-repository R --output-model NAME)"
        )
    return targets


def _write(
    args: argparse.Namespace, model: RepositoryModel | None, repository: Path | None,
    candidate: Path, target: str,
) -> Path:  # fmt: skip
    if target == "file":
        shutil.copyfile(candidate, args.output)
        return Path(args.output)
    if target == "folder":
        assert model is not None
        Path(args.output_dir).mkdir(parents=True, exist_ok=True)
        return write.write_model(
            Path(args.output_dir), model.name, candidate, model.filename,
            model.config if model.has_config else None, model.directory,
        )  # fmt: skip
    if target == "version":
        assert model is not None
        return write.write_version(
            model, args.output_version or write.next_version(model), candidate
        )
    assert repository is not None
    if model is None:
        return write.write_model(repository, args.output_model, candidate, "model.onnx", None)
    return write.write_model(
        repository, args.output_model, candidate, model.filename,
        model.config if model.has_config else None, model.directory,
    )  # fmt: skip


def _onnx_specs(path: Path, model: RepositoryModel | None) -> list[InputSpec]:
    """The inputs as the ONNX file declares them, for calibration (which runs the file
    directly, not through naiad): batched as the config says, else when every input's
    first dimension is open, as auto-complete decides."""
    import onnxruntime as ort

    from naiad.backends.onnx_signature import session_signature
    from naiad.core import datatypes

    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise OptimizeError(f"{path}: onnxruntime cannot load it: {first_line(exc)}") from None
    inputs = session_signature(session).inputs
    if model is not None and model.config.max_batch_size > 0:
        batched = True
    else:
        batched = bool(inputs) and all(t.shape[:1] == (-1,) for t in inputs)
    specs = []
    for t in inputs:
        try:
            datatype = datatypes.from_config(t.data_type)
        except Exception:
            raise OptimizeError(
                f"input '{t.name}' has type {t.type_label}, which naiad cannot feed"
            ) from None
        specs.append(InputSpec(t.name, datatype, t.shape[1:] if batched else t.shape, batched))
    return specs
