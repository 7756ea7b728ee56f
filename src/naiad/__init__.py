"""naiad: a Triton-compatible inference server you install with pip."""

from naiad._version import __version__
from naiad.core.errors import NaiadError
from naiad.functions import Tensor, batch, model
from naiad.options import ServerOptions
from naiad.runner import Runner
from naiad.server import Server

__all__ = [
    "NaiadError",
    "Runner",
    "Server",
    "ServerOptions",
    "Tensor",
    "__version__",
    "batch",
    "model",
]
