"""The OpenVINO backend; importing it needs the ``openvino`` package (``naiad[openvino]``)."""

from naiad.backends.openvino.backend import OpenVinoBackend

__all__ = ["OpenVinoBackend"]
