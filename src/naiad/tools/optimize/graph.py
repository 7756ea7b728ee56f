"""ONNX Runtime's graph optimisations, saved as a model file.

ONNX Runtime rewrites a graph every time it opens it (constant folding, node
fusions, layout changes); saving the result moves that work from every load
to once, and shows what the rewrite does to the answers.  ``extended`` is the
default because ``all`` adds layout transformations tuned to this machine's
CPU, which ONNX Runtime documents as not portable to another machine.
"""

from __future__ import annotations

from pathlib import Path

from naiad.tools.optimize.errors import OptimizeError

LEVELS = ("basic", "extended", "all")


def optimize_graph(source: Path, target: Path, level: str) -> None:
    """Write ``source`` as ONNX Runtime rewrites it at ``level`` to ``target``."""
    import onnxruntime as ort

    names = {
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    options = ort.SessionOptions()
    options.graph_optimization_level = names[level]
    options.optimized_model_filepath = str(target)
    options.log_severity_level = 3  # the session's warnings are about this machine, not the file
    try:
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own unexported exception types
        raise OptimizeError(f"{source}: onnxruntime cannot load it: {first_line(exc)}") from None
    if not target.is_file():
        raise OptimizeError(f"onnxruntime wrote no optimised model for {source}")


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message: framework errors run long."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
