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
little in-process, as they run on their own threads anyway).  A model with
several instances keeps its stubs too: there they compute in parallel, on
as many cores, which a pure-Python model in the server could not.  Anything else,
or a source we cannot read, gets its stubs, as in Triton.  The rule reads
code, it does not run it: it is a judgement of risk, not a sandbox.
"""

from __future__ import annotations

import io
import tokenize
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
#: What a model may import but not call in the server: settings every model and the
#: server share there, each in its own process in a stub.
PROCESS_WIDE = {
    "logging": frozenset({"basicConfig", "disable", "root", "config", "captureWarnings"}),
    "numpy": frozenset({"seterr", "set_printoptions", "setbufsize"}),
    "numpy.random": frozenset({"seed", "set_state"}),
    "random": frozenset({"seed", "setstate"}),
}
#: Parts of the pure modules that load native code.
_NATIVE = ("numpy.ctypeslib",)
_ASSIGNMENTS = frozenset({"=", "+=", "|=", ":="})
_ENVIRON_READS = frozenset({"get", "copy", "items", "keys", "values"})

#: Builtins that run code the rule cannot read, or end the process.
_OPAQUE_CALLS = frozenset({"exec", "eval", "compile", "__import__", "exit", "quit", "breakpoint"})

#: Calls after which a model waits for the server (BLS, model control).
_SERVER_CALLS = frozenset({"exec", "async_exec", "load_model", "unload_model", "is_model_ready"})


@dataclass(frozen=True)
class Placement:
    """``mode`` is ``"thread"`` (the server's process) or ``"process"``; ``reason`` says why."""

    mode: str
    reason: str


def place(
    model_file: Path, decoupled: bool, own_environment: bool, instances: int = 1
) -> Placement:
    """Where ``execution-mode=auto`` runs the model whose source is ``model_file``."""
    if own_environment:
        return _stub("it runs in its own Python environment (EXECUTION_ENV_PATH)")
    if decoupled:
        return _stub("it is decoupled: its responses leave from its own threads")
    if instances > 1:
        return _stub(
            f"it has {instances} instances, which compute in parallel in stubs and would "
            "share one interpreter lock in the server's process"
        )
    helpers = _helper_modules(model_file)
    if helpers:
        return _stub(
            f"its folder holds other Python modules ({helpers[0]}), which would share the "
            "server's module namespace with other models"
        )
    try:
        source = model_file.read_bytes()
        # compile() checks the syntax without ``ast``: on 3.11 the ast module's objects are
        # not thread-safe, and models load on several threads.
        compile(source, str(model_file), "exec", dont_inherit=True)
        found = _risk(_statements(source))
    except (OSError, SyntaxError, ValueError, tokenize.TokenError):
        return _stub("its source could not be read")
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


def _statements(source: bytes) -> list[list[str]]:
    """The source's statements, each a list of its significant tokens' text."""
    statements: list[list[str]] = [[]]
    for token in tokenize.tokenize(io.BytesIO(source).readline):
        if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or token.string == ";":
            if statements[-1]:
                statements.append([])
        elif token.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING):
            statements[-1].append(token.string)
    return [s for s in statements if s]


def _risk(statements: list[list[str]]) -> str:
    """The first thing in the statements that needs a process of its own ("" if none)."""
    aliases: dict[str, str] = {}  # local name -> the module or attribute it stands for
    for words in statements:
        imported = _import_statement(words)
        found = _import_risk(imported, aliases) if imported else _use_risk(words, aliases)
        if found:
            return found
    return ""


def _import_statement(words: list[str]) -> list[str]:
    """The import in ``words`` (``import a``, ``try: import a``), from its keyword on."""
    for k, word in enumerate(words):
        if word in ("import", "from") and (k == 0 or words[k - 1] == ":"):
            return words[k:]
    return []


def _import_risk(words: list[str], aliases: dict[str, str]) -> str:
    if words[0] == "import":
        for item in _split(words[1:]):
            name, local = item[0], item[-1] if "as" in item else item[0].split(".")[0]
            found = _module_risk(name)
            if found:
                return found
            aliases[local] = name if "as" in item else local
        return ""
    if words[0] != "from" or "import" not in words:
        return ""
    module = "".join(words[1 : words.index("import")])
    if module.startswith("."):
        return "it imports from its own package"
    names = _split([w for w in words[words.index("import") + 1 :] if w not in "()"])
    if module in READ_ONLY_ATTRIBUTES:
        for item in names:
            if item[0] not in READ_ONLY_ATTRIBUTES[module]:
                return f"it uses {module}.{item[0]}"
            aliases[item[-1]] = f"{module}.{item[0]}"
        return ""
    return _module_risk(module)


def _split(words: list[str]) -> list[list[str]]:
    """``a.b as c, d`` -> [["a.b", "as", "c"], ["d"]]."""
    items: list[list[str]] = [[]]
    for word in words:
        if word == ",":
            items.append([])
        elif word == "." or (items[-1] and items[-1][-1].endswith(".")):
            items[-1][-1] += word
        else:
            items[-1].append(word)
    return [i for i in items if i]


def _module_risk(name: str) -> str:
    if name.startswith(_NATIVE):
        return f"it imports {name}"
    if name in READ_ONLY_ATTRIBUTES or name.split(".")[0] in PURE_MODULES:
        return ""
    return f"it imports {name}"


def _use_risk(words: list[str], aliases: dict[str, str]) -> str:
    if words[:3] == ["async", "def", "execute"]:
        return "its execute is a coroutine"
    if "def" in words[:2] and "is_ready" in words[1:3]:
        return "it defines is_ready(), which the server asks of stub instances"
    for i, word in enumerate(words):
        after = words[i + 1] if i + 1 < len(words) else ""
        before = words[i - 1] if i else ""
        if word in _OPAQUE_CALLS and after == "(" and before != ".":
            return f"it calls {word}()"
        if word in _SERVER_CALLS and after == "(":
            return f"it calls {word}(), which waits for the server"
        if word in aliases and before != ".":
            found = _attribute_risk(words, i, aliases[word])
            if found:
                return found
    return ""


def _attribute_risk(words: list[str], i: int, name: str) -> str:
    """Check the chain ``name.attr.attr...`` that starts at ``words[i]``."""
    if name in READ_ONLY_ATTRIBUTES and (i + 1 == len(words) or words[i + 1] != "."):
        return f"it passes {name} itself around"  # getattr(os, "_exit") reads as nothing else
    while i + 2 < len(words) and words[i + 1] == ".":
        attr = words[i + 2]
        if name in READ_ONLY_ATTRIBUTES and attr not in READ_ONLY_ATTRIBUTES[name]:
            return f"it uses {name}.{attr}"
        if f"{name}.{attr}".startswith(_NATIVE):
            return f"it uses {name}.{attr}"
        if attr in PROCESS_WIDE.get(name, ()):
            return f"it calls {name}.{attr}, which the server's process shares"
        if name == "os.environ" and attr not in _ENVIRON_READS:
            return f"it changes os.environ ({attr})"
        name, i = f"{name}.{attr}", i + 2
    if name == "os.environ" and i + 1 < len(words) and words[i + 1] == "[":
        depth, j = 0, i + 1
        while j < len(words):
            depth += {"[": 1, "]": -1}.get(words[j], 0)
            if depth == 0:
                break
            j += 1
        if words[0] == "del" or (j + 1 < len(words) and words[j + 1] in _ASSIGNMENTS):
            return "it changes os.environ"
    return ""
