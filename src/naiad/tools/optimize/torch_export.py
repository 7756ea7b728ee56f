"""PyTorch to ONNX: export with a dynamic batch axis, then check it against torch.

The legacy (TorchScript-based) exporter is used because it needs only torch:
the newer ``dynamo`` exporter needs onnxscript, which a naiad install does
not bring.  The export is traced on a batch of two, so that no size-1 batch
dimension can be folded into the graph as a constant, and checked on other
batch sizes against torch's own answers, so a wrong export is caught here
and not by a client.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import sys
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from naiad.tools.optimize.errors import OptimizeError, missing_package
from naiad.tools.optimize.graph import first_line
from naiad.tools.optimize.inputs import InputSpec, Sample, random_samples
from naiad.tools.optimize.measure import Drift

#: The batch size the graph is traced with (not 1: see the module's docstring).
TRACE_BATCH = 2


def import_torch() -> Any:
    try:
        import torch
    except ImportError:
        raise missing_package("torch", "torch") from None
    return torch


def load_module(spec: str) -> Any:
    """A TorchScript file, or ``path.py:factory`` whose factory returns an ``nn.Module``."""
    torch = import_torch()
    path_text, sep, attribute = spec.rpartition(":")
    if sep and path_text.endswith(".py"):
        module = _from_factory(Path(path_text), attribute)
    else:
        path = Path(spec)
        if not path.is_file():
            raise OptimizeError(f"--torch {spec}: file does not exist")
        try:
            with _quiet():  # torch >= 2.10 warns that TorchScript is deprecated
                module = torch.jit.load(str(path), map_location="cpu")
        except Exception as exc:
            raise OptimizeError(
                f"--torch {spec} is not a TorchScript file ({first_line(exc)}); "
                "for an eager model give module.py:factory"
            ) from None
    if not isinstance(module, torch.nn.Module):
        raise OptimizeError(f"--torch {spec} gave a {type(module).__name__}, not a torch.nn.Module")
    return module.eval()


def _from_factory(path: Path, attribute: str) -> Any:
    if not path.is_file():
        raise OptimizeError(f"--torch {path}:{attribute}: file {path} does not exist")
    if not attribute.isidentifier():
        raise OptimizeError(f"--torch {path}:{attribute}: expected path.py:callable")
    name = f"naiad_optimize_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise OptimizeError(f"--torch {path}: cannot import it")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)  # the file may import its neighbours
    try:
        spec.loader.exec_module(module)
        factory = getattr(module, attribute, None)
        if not callable(factory):
            raise OptimizeError(f"--torch {path}: has no callable '{attribute}'")
        return factory()
    except OptimizeError:
        raise
    except Exception as exc:
        raise OptimizeError(f"--torch {path}:{attribute} failed: {first_line(exc)}") from None
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)


def export(
    module: Any, specs: Sequence[InputSpec], shapes: dict[str, tuple[int, ...]], target: Path,
    *, opset: int, output_names: Sequence[str],
) -> list[str]:  # fmt: skip
    """Export ``module`` to ``target``; returns the output names it was given."""
    torch = import_torch()
    (sample,) = random_samples(specs, shapes, count=1, batch_size=TRACE_BATCH, seed=1)
    names = list(output_names) or [f"OUTPUT{i}" for i in range(len(_call(module, sample)))]
    axes = {n: {0: "batch"} for n in [s.name for s in specs] + names}
    kwargs: dict[str, Any] = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        kwargs["dynamo"] = False
    try:
        with _quiet(), torch.no_grad():
            torch.onnx.export(
                module, tuple(torch.from_numpy(sample[s.name]) for s in specs), str(target),
                input_names=[s.name for s in specs], output_names=names,
                dynamic_axes=axes, opset_version=opset, **kwargs,
            )  # fmt: skip
    except Exception as exc:
        raise OptimizeError(f"torch.onnx.export failed: {first_line(exc)}") from None
    return names


def verify(
    module: Any, target: Path, specs: Sequence[InputSpec], shapes: dict[str, tuple[int, ...]],
    names: Sequence[str], *, samples: int, batch_size: int,
) -> Drift:  # fmt: skip
    """The exported file's answers against torch's, on fresh random inputs of
    ``batch_size`` and of one more than the traced batch."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    drift = Drift()
    checks = random_samples(specs, shapes, count=samples, batch_size=batch_size, seed=2)
    checks += random_samples(specs, shapes, count=1, batch_size=TRACE_BATCH + 1, seed=3)
    for sample in checks:
        expected = _call(module, sample)
        try:
            got = session.run(list(names), sample)
        except Exception as exc:
            raise OptimizeError(
                f"the exported model fails in onnxruntime: {first_line(exc)}"
            ) from None
        for name, want, have in zip(names, expected, got, strict=True):
            have = np.asarray(have)
            if want.shape != have.shape:
                raise OptimizeError(
                    f"output '{name}': torch gives shape {list(want.shape)}, "
                    f"the ONNX file {list(have.shape)}"
                )
            drift.add(name, want, have)
    return drift


def _call(module: Any, sample: Sample) -> list[np.ndarray]:
    """The module's outputs on ``sample`` as numpy arrays (a tensor, tuple or list)."""
    torch = import_torch()
    with torch.inference_mode():
        try:
            result = module(*(torch.from_numpy(v) for v in sample.values()))
        except Exception as exc:
            raise OptimizeError(
                f"the torch model fails on the sample inputs: {first_line(exc)}"
            ) from None
    outputs = result if isinstance(result, (tuple, list)) else (result,)
    if not all(isinstance(o, torch.Tensor) for o in outputs):
        raise OptimizeError("the torch model must return a tensor, or a tuple or list of tensors")
    return [o.detach().cpu().numpy() for o in outputs]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The legacy exporter warns that it is legacy, and about tracing details that
    :func:`verify` checks for real; the user sees the verdict instead."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
