"""The request path compiled to C by mypyc, and whether this install has it.

A request's time on naiad's one event loop is mostly Python: HTTP/2 framing,
HTTP/1.1 heads, request templates, the request and response objects,
validation, scheduling, statistics, responses.  Compiled with mypyc (the
compiler mypy's own releases use), the same typed source runs as C
extensions: under load (concurrency 8 and 32)
gRPC serves 1.05-1.4x the requests per second, HTTP 1.07-1.13x, and what
naiad adds to an in-process model's run fell from 31 to 13 µs
(``benchmarks/README.md``).
``setup.py`` compiles the modules named here, and the stub process's
plumbing (``triton_python_backend_utils._compiled``: its own group, which a
stub in another interpreter loads by path), each from its unchanged
``.py``, which stays beside it: without a C compiler, or with
``NAIAD_PURE_PYTHON=1`` at install, naiad runs the same modules as Python.  ``NAIAD_PURE_PYTHON=1`` when naiad is imported
runs them from their source in a compiled install too: profilers and
debuggers then see their lines, and a benchmark can set both side by side.

Kept to modules whose classes nothing outside them subclasses or stands in
for (a compiled class cannot be subclassed from Python unless it says so
with ``mypyc_attr(allow_interpreted_subclasses=True)``, as the ``pb_utils``
classes models use do, and an argument or attribute annotated with it must
be one).  Compiled code trusts its annotations, so in these modules:

- an annotation says what the value is at run time (an attribute that
  starts as a shared placeholder of another type is ``Any``);
- each ``except`` clause of a function binds its own name (mypyc gives a
  name the type of its first clause);
- an attribute that a call may have changed is read through a call, not
  after a narrowing ``if`` (mypyc keeps the narrowed type);
- what numpy computes is a numpy scalar, not an ``int``: ``.tolist()`` or
  ``int()`` before it goes where an ``int`` is annotated;
- a subclass's ``__init__`` passes its base's parameters on by name: mypyc
  hands ``*args``/``**kwargs`` to a compiled ``__init__`` wrongly;
- a compiled class is made by calling its ``__init__``, pickling and
  ``copy`` included, so one whose objects may be pickled defines
  ``__reduce__`` (``core/types.py``);
- a class attribute such as ``__slots__`` is not read through the class
  (mypy refuses it there): a module constant holds what both need;
- ``cls.__new__(cls)`` runs ``__init__``: an object built without the
  checks a user's call gets takes a keyword of ``__init__`` that skips them
  (``pb_utils.Tensor(..., _trusted=True)``);
- a parameter users pass is annotated with what the function accepts and
  converts (``Any``, then ``int()``), not with what it keeps: a compiled
  function refuses a numpy integer where ``int`` is annotated.

The whole test suite runs against the compiled modules (CI installs them
so), and ``tests/conftest.py`` refuses to run on ones older than their
source.  This file imports nothing of naiad, nor the stub's package until
a function runs: ``setup.py`` reads ``MODULES`` before naiad is installed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os

MODULES = (
    "naiad.core.stats",
    "naiad.core.types",
    "naiad.core.templates",
    "naiad.core.validation",
    "naiad.backends.batching",
    # The server's end of a stub process (the stub's own: see listed()).
    "naiad.backends.python.connection",
    "naiad.backends.python.convert",
    # A model in the server's process: its batch as pb_utils objects, and its answers.
    "naiad.backends.python.objects",
    "naiad.engine.completion",
    # Every scheduler with its base class: a compiled class has compiled subclasses.
    "naiad.scheduling.base",
    "naiad.scheduling.default",
    "naiad.scheduling.dynamic",
    "naiad.scheduling.ensemble",
    "naiad.scheduling.queues",
    "naiad.scheduling.sequence",
    "naiad.frontends.eager",
    "naiad.frontends.grpc.codec",
    "naiad.frontends.grpc.infer",
    "naiad.frontends.grpc.templates",
    "naiad.frontends.grpc.http2.call",
    "naiad.frontends.grpc.http2.connection",
    "naiad.frontends.grpc.http2.wire",
    "naiad.frontends.http.encode",
    "naiad.frontends.http.infer",
    "naiad.frontends.http.protocol",
    "naiad.frontends.http.templates",
)


def listed() -> tuple[str, ...]:
    """Every module the build compiles: these, and the stub's own
    (``triton_python_backend_utils._compiled``, which shares its finder with us)."""
    from triton_python_backend_utils import _compiled as stub

    return MODULES + stub.MODULES


def _origin(module: str) -> str:
    spec = importlib.util.find_spec(module)
    return (spec.origin or "") if spec is not None else ""


def compiled() -> list[str]:
    """The modules of :func:`listed` that import as compiled extensions here."""
    from triton_python_backend_utils._compiled import EXTENSIONS

    return [m for m in listed() if _origin(m).endswith(EXTENSIONS)]


def stale() -> list[str]:
    """Compiled modules whose source changed after they were compiled.

    Python imports an extension before a ``.py`` of the same name, so in an
    editable install (``pip install -e .``) an edited module keeps running
    its old compiled self until the install is run again.  Other installs
    copy both from a wheel, whose times say nothing: none is stale there.
    """
    if not _editable():
        return []
    from triton_python_backend_utils._compiled import EXTENSIONS, source_beside

    out = []
    for module in listed():
        origin = _origin(module)
        if not origin.endswith(EXTENSIONS):
            continue
        source = source_beside(origin, module)
        if os.path.exists(source) and os.path.getmtime(source) > os.path.getmtime(origin):
            out.append(module)
    return out


def _editable() -> bool:
    """Whether naiad is an editable install (pip says so in ``direct_url.json``, PEP 610)."""
    try:
        text = importlib.metadata.distribution("naiad").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return False
    return bool(text and json.loads(text).get("dir_info", {}).get("editable", False))


def describe() -> str:
    """How this install runs the request path, for the start-up log line."""
    done, total = len(compiled()), len(listed())
    if not done:
        return "request path in pure Python"
    if done < total:
        return f"request path compiled in part ({done} of {total} modules)"
    return "request path compiled"


def pure_python_wanted() -> bool:
    """``NAIAD_PURE_PYTHON`` set (and not 0): read at install by setup.py, at import here
    (the stub's package reads it for itself: it imports nothing of naiad)."""
    return os.environ.get("NAIAD_PURE_PYTHON", "") not in ("", "0")


def use_source() -> None:
    """Import the listed modules from their ``.py`` from now on (naiad's ``__init__``
    calls it, before any of them is imported, when :func:`pure_python_wanted`; the
    stub's modules then already import so, see ``triton_python_backend_utils._compiled``)."""
    from triton_python_backend_utils._compiled import use_source as source_first

    source_first(MODULES)
