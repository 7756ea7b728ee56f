"""Triton's FIL backend: XGBoost, LightGBM, Treelite and scikit-learn tree models."""

from naiad.backends.fil.backend import FilBackend

__all__ = ["FilBackend"]
