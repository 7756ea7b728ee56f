"""Hugging Face transformers pipelines saved to a folder (the ``huggingface`` extra)."""

from naiad.backends.huggingface.backend import HuggingFaceBackend

__all__ = ["HuggingFaceBackend"]
