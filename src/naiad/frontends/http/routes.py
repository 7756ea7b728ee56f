"""URL matching exactly as Triton's HTTP server does it (rest.md §1.1).

Only the path is matched (the query string is ignored); captured segments are
percent-decoded so that names the Python client quotes come back intact.
The result is an endpoint name plus its arguments; which methods an endpoint
allows and what it does live in ``handlers``.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

Match = tuple[str, tuple[str, ...]]

_MODEL = re.compile(
    r"/v2/models/([^/]+)(?:/versions/([0-9]+))?"
    r"(?:/(infer|generate|generate_stream|ready|config|stats|trace/setting|openapi\.json))?"
)
_HEALTH = re.compile(r"/v2(?:/health/(live|ready))?")
_SHM = re.compile(
    r"/v2/(systemsharedmemory|cudasharedmemory)(?:/region/([^/]+))?/(status|register|unregister)"
)
_REPO = re.compile(r"/v2/repository(?:/([^/]+))?/(index|models/([^/]+)/(load|unload))")

_MODEL_ENDPOINTS = {
    None: "model_metadata",
    "infer": "infer",
    "generate": "generate",
    "generate_stream": "generate_stream",
    "ready": "model_ready",
    "config": "model_config",
    "stats": "model_stats",
    "trace/setting": "model_trace",
    "openapi.json": "model_openapi",  # naiad: docs/openapi.md
}

_cache: dict[str, Match | None] = {}
_CACHE_LIMIT = 4096


def _seg(text: str | None) -> str:
    if not text:
        return ""
    return unquote(text) if "%" in text else text


def match(path: str) -> Match | None:
    """``(endpoint, args)`` for a request path, or None for Triton's 404."""
    found = _cache.get(path, False)
    if found is not False:
        return found  # type: ignore[return-value]
    result = _match(path)
    if len(_cache) < _CACHE_LIMIT:
        _cache[path] = result
    return result


def _match(path: str) -> Match | None:
    if path == "/v2/models/stats":
        return "stats", ("", "")
    if path == "/v2/logging":
        return "logging", ()
    m = _MODEL.fullmatch(path)
    if m is not None:
        name, version, suffix = m.groups()
        if suffix == "trace/setting" and version is not None:
            return None  # trace settings have no version support
        return _MODEL_ENDPOINTS[suffix], (_seg(name), version or "")
    if path == "/v2":
        return "server_metadata", ()
    m = _HEALTH.fullmatch(path)
    if m is not None:
        return "health_" + m.group(1), ()
    m = _SHM.fullmatch(path)
    if m is not None:
        area, region, action = m.groups()
        kind = "system" if area == "systemsharedmemory" else "cuda"
        return "shm_" + action, (kind, _seg(region))
    m = _REPO.fullmatch(path)
    if m is not None:
        repo, _, model, action = m.groups()
        if model is None:
            return "repository_index", (_seg(repo),)
        return "repository_" + action, (_seg(repo), _seg(model))
    if path == "/v2/trace/setting":
        return "trace", ()
    return None
