"""Finding the models of ``app.py`` or ``package.module[:object]``, as ``naiad serve`` and
``naiad export`` name them."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from naiad.functions.decorators import model, models_in
from naiad.functions.spec import FunctionModel, SpecError


@dataclass
class App:
    models: list[FunctionModel]
    #: the module's file and its name in ``sys.modules``
    source: Path
    module: str


def load(target: str) -> App:
    """Import ``target`` and collect its models (a plain function named after ``:`` is
    declared from its annotations)."""
    where, _, name = target.partition(":")
    module = _import(where, target)
    if name:
        found = getattr(module, name, None)
        if found is None:
            raise SpecError(f"{target}: '{where}' has no '{name}'")
        models = [found if isinstance(found, FunctionModel) else model(found)]
    else:
        models = models_in(vars(module))
        if not models:
            raise SpecError(f"{target}: declares no model (decorate a function with @naiad.model)")
    names = [m.name for m in models]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SpecError(f"{target}: two models named {', '.join(twice)}")
    return App(models, Path(module.__file__ or where).resolve(), module.__name__)


def _import(where: str, target: str) -> ModuleType:
    path = Path(where)
    if where.endswith(".py") or path.is_file():
        if not path.is_file():
            raise SpecError(f"{target}: no such file")
        path = path.resolve()
        sys.path.insert(0, str(path.parent))  # its imports of the files beside it
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(where)
    except ImportError as exc:
        raise SpecError(f"{target}: cannot import '{where}': {exc}") from None
