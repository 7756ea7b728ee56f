"""Models served from objects in this process (``naiad.Server(models=[...])``), by token.

Their generated ``model.py`` runs in the server's process and finds the
object here instead of importing the user's file again, which could run a
script's own ``Server(...)`` a second time.
"""

from __future__ import annotations

from typing import Any

#: token -> the FunctionModel, as long as a server may load it
MODELS: dict[str, Any] = {}
