"""Triton's ``pytorch`` backend: TorchScript models (``model.pt``) run with torch."""

from naiad.backends.pytorch.backend import PyTorchBackend

__all__ = ["PyTorchBackend"]
