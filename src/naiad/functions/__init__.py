"""Python functions and classes served as models, with no config to write
(``@naiad.model``, ``naiad serve app.py``, ``naiad export``; docs/python-models.md)."""

from naiad.functions.decorators import batch, model
from naiad.functions.spec import FunctionModel, SpecError, Tensor

__all__ = ["FunctionModel", "SpecError", "Tensor", "batch", "model"]
