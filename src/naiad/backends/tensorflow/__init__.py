"""The TensorFlow SavedModel backend (Triton's ``tensorflow`` / ``tensorflow_savedmodel``)."""

from naiad.backends.tensorflow.backend import TensorFlowBackend

__all__ = ["TensorFlowBackend"]
