"""scikit-learn estimators and pipelines saved with joblib (the ``sklearn`` extra)."""

from naiad.backends.sklearn.backend import SklearnBackend

__all__ = ["SklearnBackend"]
