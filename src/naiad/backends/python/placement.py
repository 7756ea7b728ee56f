"""Where a Python model runs by default: in the server's process, or in stub processes.

A stub costs every request two process wake-ups and the framing around them:
about 90 µs of the 230 µs a request of the add_sub example takes at
concurrency 1 on a 2-core VM (``benchmarks/README.md``).  A model run in the
server's process, on its loop when it is fast, pays none of it.  What a stub
buys is isolation, and users rely on it where a model can take the server
down or reshape it: native libraries that may crash or leak (torch, cv2,
ctypes, anything we do not know), calls that end or rewire the process
(``os._exit``, ``sys.exit``, signals, ``sys.path``), helper modules that
would share the server's ``sys.modules`` with other models' helpers, its own
interpreter (``EXECUTION_ENV_PATH``).

So ``execution-mode=auto`` (the default) runs a model in the server's process
only when reading its source shows none of these: it imports only numpy,
``triton_python_backend_utils`` and standard modules that compute without
touching the process, and it is a model that can run on the loop (not
decoupled, no ``async def execute``, no BLS or model-control call; those gain
little in-process, as they run on their own threads anyway).  Anything else,
or a source we cannot read, gets its stubs, as in Triton.  The rule reads
code, it does not run it: it is a judgement of risk, not a sandbox.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

#: Modules a model may import and still run in the server's process: numpy, the
#: backend's own, and standard modules that compute without touching the process.
PURE_MODULES = frozenset(
    {
        "__future__",
        "abc",
        "array",
        "base64",
        "binascii",
        "bisect",
        "collections",
        "copy",
        "dataclasses",
        "datetime",
        "decimal",
        "enum",
        "fractions",
        "functools",
        "hashlib",
        "heapq",
        "itertools",
        "json",
        "logging",
        "math",
        "numbers",
        "numpy",
        "operator",
        "random",
        "re",
        "statistics",
        "string",
        "struct",
        "textwrap",
        "time",
        "triton_python_backend_utils",
        "typing",
        "unicodedata",
        "uuid",
        "zlib",
    }
)

#: Modules allowed for some of their attributes: reading paths and settings is
#: harmless, ``os._exit``, ``os.kill``, ``sys.exit`` or ``sys.path`` are not.
READ_ONLY_ATTRIBUTES = {
    "os": frozenset(
        {"path", "environ", "getenv", "sep", "linesep", "pathsep", "fspath", "cpu_count", "getpid"}
    ),
    "os.path": frozenset(
        {"join", "dirname", "basename", "exists", "isfile", "isdir", "abspath", "splitext", "split"}
    ),
    "sys": frozenset(
        {"version", "version_info", "platform", "byteorder", "maxsize", "stdout", "stderr"}
    ),
}
_ENVIRON_READS = frozenset({"get", "copy", "items", "keys", "values"})

#: Builtins that run code the rule cannot read, or end the process.
_OPAQUE_CALLS = frozenset({"exec", "eval", "compile", "__import__", "exit", "quit", "breakpoint"})

#: Method calls after which a model waits for the server (BLS, model control).
_SERVER_CALLS = frozenset({"exec", "async_exec", "load_model", "unload_model", "is_model_ready"})


@dataclass(frozen=True)
class Placement:
    """``mode`` is ``"thread"`` (the server's process) or ``"process"``; ``reason`` says why."""

    mode: str
    reason: str


def place(model_file: Path, decoupled: bool, own_environment: bool) -> Placement:
    """Where ``execution-mode=auto`` runs the model whose source is ``model_file``."""
    if own_environment:
        return _stub("it runs in its own Python environment (EXECUTION_ENV_PATH)")
    if decoupled:
        return _stub("it is decoupled: its responses leave from its own threads")
    helpers = _helper_modules(model_file)
    if helpers:
        return _stub(
            f"its folder holds other Python modules ({helpers[0]}), which would share the "
            "server's module namespace with other models"
        )
    try:
        tree = ast.parse(model_file.read_bytes(), str(model_file))
    except (OSError, SyntaxError, ValueError):
        return _stub("its source could not be read")
    found = _Reader().risk(tree)
    if found:
        return _stub(found)
    return Placement(
        "thread", "it imports only numpy and standard modules that compute, and runs on the loop"
    )


def _stub(reason: str) -> Placement:
    return Placement("process", reason)


def _helper_modules(model_file: Path) -> list[str]:
    """Python files or packages beside the model file or in the model's folder."""
    version_dir = model_file.parent
    found = []
    for folder in (version_dir, version_dir.parent):
        for path in sorted(folder.iterdir()):
            if path == model_file or path.name.startswith((".", "__pycache__")):
                continue
            if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").exists()):
                found.append(path.name)
    return found


class _Reader(ast.NodeVisitor):
    """Finds the first thing in a model's source that needs a process of its own."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # local name -> module it stands for
        self.found = ""

    def risk(self, tree: ast.AST) -> str:
        self.visit(tree)
        return self.found

    def _flag(self, reason: str) -> None:
        if not self.found:
            self.found = reason

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module(alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                self.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._flag("it imports from its own package")
            return
        module = node.module or ""
        if module in READ_ONLY_ATTRIBUTES:
            for alias in node.names:
                if alias.name not in READ_ONLY_ATTRIBUTES[module]:
                    self._flag(f"it uses {module}.{alias.name}")
                else:
                    self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
            return
        self._module(module)

    def _module(self, name: str) -> None:
        top = name.split(".")[0]
        if name in READ_ONLY_ATTRIBUTES or top in PURE_MODULES:
            return
        self._flag(f"it imports {name}")

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        if node.name == "execute":
            self._flag("its execute is a coroutine")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _SERVER_CALLS:
            self._flag(f"it calls {node.attr}(), which waits for the server")
        base = self._dotted(node.value)
        module = self.aliases.get(base.split(".")[0]) if base else None
        if module is not None:
            full = module + base[len(base.split(".")[0]) :]
            if full in READ_ONLY_ATTRIBUTES and node.attr not in READ_ONLY_ATTRIBUTES[full]:
                self._flag(f"it uses {full}.{node.attr}")
            elif full == "os.environ" and node.attr not in _ENVIRON_READS:
                self._flag(f"it changes os.environ ({node.attr})")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if not isinstance(node.ctx, ast.Load) and self._resolved(node.value) == "os.environ":
            self._flag("it changes os.environ")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id in _OPAQUE_CALLS:
            self._flag(f"it calls {node.func.id}()")
        self.generic_visit(node)

    def _resolved(self, node: ast.AST) -> str:
        dotted = self._dotted(node)
        head = dotted.split(".")[0]
        return self.aliases[head] + dotted[len(head) :] if head in self.aliases else dotted

    def _dotted(self, node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            inner = self._dotted(node.value)
            return f"{inner}.{node.attr}" if inner else ""
        return ""
