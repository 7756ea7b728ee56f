"""naiad: a Triton-compatible inference server you install with pip."""

from naiad import _compiled

if _compiled.pure_python_wanted():
    _compiled.use_source()  # before anything imports the compiled modules

from naiad._version import __version__  # noqa: E402
from naiad.core.errors import NaiadError  # noqa: E402
from naiad.functions import Tensor, batch, model  # noqa: E402
from naiad.options import ServerOptions  # noqa: E402
from naiad.runner import Runner  # noqa: E402
from naiad.server import Server  # noqa: E402

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
