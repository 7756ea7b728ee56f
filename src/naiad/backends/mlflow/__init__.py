"""MLflow python_function models, served from their signature (the ``mlflow`` extra)."""

from naiad.backends.mlflow.backend import MlflowBackend

__all__ = ["MlflowBackend"]
