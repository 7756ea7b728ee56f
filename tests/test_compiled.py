"""The request path compiled by mypyc (``naiad._compiled``, ``setup.py``).

What the build compiles is checked where it is built: ``test_install.py``
installs naiad as users do and asserts every module came out compiled.
Here: the list names real modules, and a compiled module older than its
source is noticed (an editable install after an edit), since Python would
import the old extension before the new ``.py``.
"""

from __future__ import annotations

import importlib.machinery
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from naiad import _compiled
from triton_python_backend_utils import _compiled as _stub_compiled

pytestmark = pytest.mark.unit


def test_every_listed_module_has_its_source_in_the_package() -> None:
    src = Path(_compiled.__file__).resolve().parents[1]
    for module in _compiled.listed():
        assert (src / (module.replace(".", "/") + ".py")).is_file(), module


def test_a_compiled_module_older_than_its_source_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "fakepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = package / "hot.py"
    source.write_text("X = 1\n")
    extension = package / ("hot" + importlib.machinery.EXTENSION_SUFFIXES[0])
    extension.write_bytes(b"")  # never imported: find_spec only names it
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(_compiled, "listed", lambda: ("fakepkg.hot",))
    monkeypatch.setattr(_compiled, "_editable", lambda: True)
    # as compiled installs run (not with NAIAD_PURE_PYTHON=1's finder in front)
    finders = [f for f in sys.meta_path if not isinstance(f, _stub_compiled.SourceFirst)]
    monkeypatch.setattr(sys, "meta_path", finders)
    os.utime(source, (1_000_000, 1_000_000))
    os.utime(extension, (2_000_000, 2_000_000))
    assert _compiled.compiled() == ["fakepkg.hot"]
    assert _compiled.stale() == []
    assert _compiled.describe() == "request path compiled"
    os.utime(source, (3_000_000, 3_000_000))  # edited after the build
    assert _compiled.stale() == ["fakepkg.hot"]
    monkeypatch.setattr(_compiled, "_editable", lambda: False)  # a wheel's times say nothing
    assert _compiled.stale() == []
    sys.modules.pop("fakepkg", None)


def test_pure_python_is_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_compiled, "listed", lambda: ("json.decoder",))  # a .py module
    assert importlib.util.find_spec("json.decoder") is not None
    assert _compiled.compiled() == []
    assert _compiled.describe() == "request path in pure Python"


def test_naiad_pure_python_at_import_runs_the_sources() -> None:
    script = (
        "import naiad.frontends.grpc.http2.connection as c\n"
        "from naiad import _compiled\n"
        "print(c.__file__.endswith('.py'), _compiled.describe(), _compiled.stale())\n"
    )
    env = dict(os.environ, NAIAD_PURE_PYTHON="1")
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split("\n")[0] == "True request path in pure Python []", out.stderr


def test_an_install_built_with_extensions_imports_every_module_compiled() -> None:
    """The build had extensions (its wheel is not pure) exactly when none failed and
    none was skipped; then every listed module imports compiled, editable or not."""
    wheel = importlib.metadata.distribution("naiad").read_text("WHEEL") or ""
    if "Root-Is-Purelib: true" in wheel or _compiled.pure_python_wanted():
        pytest.skip("installed or run as pure Python (NAIAD_PURE_PYTHON=1, or no compiler)")
    assert _compiled.compiled() == list(_compiled.listed()), _compiled.describe()
