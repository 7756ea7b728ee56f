"""Fixtures shared by every test folder, and the check that every test has one tier.

Tiers (markers registered in pyproject.toml; README's "Tests" section):
``unit`` (no ports, no sockets, no child processes), ``protocol`` (a started
server, one feature at a time) and ``e2e`` (the whole system).  Each test module sets
``pytestmark = pytest.mark.<tier>``.  In the fast loop's install (``.[unit]``, no
framework) a test module that imports what only ``.[test]`` brings is skipped.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from collections.abc import Generator, Iterator
from functools import cache
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path

import pytest

TIERS = ("unit", "protocol", "e2e")


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects: every collected test is checked
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse to run when a test has no tier marker, or more than one."""
    wrong: dict[str, set[str]] = {}
    for item in items:
        tiers = {mark.name for mark in item.iter_markers() if mark.name in TIERS}
        if len(tiers) != 1:
            wrong.setdefault(item.nodeid.split("::")[0], set()).add(
                ", ".join(sorted(tiers)) or "none"
            )
    if wrong:
        lines = [f"  {path}: {' / '.join(sorted(found))}" for path, found in sorted(wrong.items())]
        raise pytest.UsageError(
            "every test needs exactly one tier marker (pytestmark = pytest.mark.unit, "
            "protocol or e2e at the top of the module); these files have none or several:\n"
            + "\n".join(lines)
        )


def pytest_sessionstart(session: pytest.Session) -> None:
    """Refuse to test compiled modules older than their source (an editable install
    keeps running a module's old compiled self after its ``.py`` changes)."""
    from naiad import _compiled

    stale = _compiled.stale()
    if stale:
        raise pytest.UsageError(
            "these modules are compiled from an older source: "
            + ", ".join(stale)
            + ". Compile them again (python -m pip install -e '.[test]'), or run their "
            "sources (NAIAD_PURE_PYTHON=1 python -m pytest)"
        )


@cache
def _test_extra_missing() -> tuple[str, ...]:
    """The packages of naiad's ``test`` extra this environment lacks: none where CI
    installs ``.[test]``, the frameworks and integrations where ``.[unit]`` (the fast
    loop) is installed."""
    from packaging.requirements import Requirement

    try:
        declared = requires("naiad") or []
    except PackageNotFoundError:  # run from a checkout without an install: nothing to judge by
        return ()
    missing = []
    for text in declared:
        req = Requirement(text)
        if req.name == "naiad" or req.marker is None:
            continue
        if not req.marker.evaluate({"extra": "test"}) or req.marker.evaluate({"extra": ""}):
            continue
        try:
            version(req.name)
        except PackageNotFoundError:
            missing.append(req.name)
    return tuple(missing)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """In an install without the whole ``test`` extra (``pip install -e ".[unit]"``), a
    test module whose own import of a framework or test tool fails is skipped, naming
    the package, rather than stopping ``pytest -m unit`` with a collection error.  Only
    imports written under tests/ count: naiad's own code importing a missing package
    stays an error (the fast loop is where that shows), and with the whole extra
    installed (CI) every missing module stays an error."""
    report = yield
    if not (report.failed and isinstance(collector, pytest.Module) and _test_extra_missing()):
        return report
    text = str(report.longrepr)
    found = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", text)
    frames = re.findall(r"^(\S+\.py):\d+: in ", text, re.MULTILINE)
    if found is None or not frames:
        return report
    importer = collector.config.invocation_params.dir / frames[-1]
    if not importer.resolve().is_relative_to(collector.config.rootpath / "tests"):
        return report
    reason = f'needs {found.group(1)}, which the test extra brings (pip install -e ".[test]")'
    return pytest.CollectReport(report.nodeid, "skipped", (str(collector.path), None, reason), [])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print what a passed test recorded as ``benchmark`` (``record_property``): figures
    that CI shows but does not judge (tests/test_headline.py).  The property travels
    with the test's report, so it reaches this summary from an xdist worker too."""
    for report in terminalreporter.stats.get("passed", []):
        for name, value in getattr(report, "user_properties", ()):
            if name == "benchmark":
                terminalreporter.write_sep("-", report.nodeid)
                terminalreporter.write_line(str(value))


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): two workers per core this process may use, at
    most 8.  The suite mostly waits (child servers starting, sockets, model loads), so a
    second worker per core keeps the cores busy; each worker imports the frameworks once
    (over 1 GB), hence the cap."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(2 * (cores or 1), 8)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An empty model repository folder for one test."""
    path = tmp_path / "models"
    path.mkdir()
    return path


@pytest.fixture
def serve() -> Iterator[object]:
    """Start ``naiad.Server``s on free loopback ports; they stop after the test.

    ``serve(repo, http=True, grpc=True, **settings)`` returns the started server.
    """
    from naiad import Server

    started: list[Server] = []

    def start(repository: Path, *, http: bool = False, grpc: bool = False, **settings: object):
        server = Server(
            model_repository=repository,
            http_port=0 if http else None,
            grpc_port=0 if grpc else None,
            **settings,
        )
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a server certificate for localhost and a client certificate (openssl)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("certs")

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "1", "-subj", "/CN=naiad-test-ca")  # fmt: skip
    (d / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for who in ("server", "client"):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{who}.key", "-out",
            f"{who}.csr", "-subj", "/CN=localhost")  # fmt: skip
        run("x509", "-req", "-in", f"{who}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{who}.crt", "-days", "1", "-extfile", "san.ext")  # fmt: skip
    return d
