"""Triton's Python backend: ``model.py`` models in stub processes (or threads)."""

from naiad.backends.python.backend import PythonBackend

__all__ = ["PythonBackend"]
